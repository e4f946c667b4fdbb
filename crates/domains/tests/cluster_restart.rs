//! `cluster_restart_workload` through the real pipeline and the real `kube::Client` against the
//! fake API server: the dry run is a server dry run and nothing else, an approved restart is
//! exactly one PATCH setting the annotation, the cluster write switch, a recreated workload,
//! replays and edited targets, failed delivery, and the card the approver reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kube_harness;

use care_core::ledger::ApprovalStatus;
use care_domains::cluster::ClusterConfig;
use care_domains::cluster::client::{ClusterClient, RestartTarget};
use care_domains::cluster::workload::WorkloadKind;
use care_fakes::kubernetes::{CRASH_LOOP, Failure, RESTARTED_AT, STRATEGIC_MERGE};
use kube_harness::{Harness, Options, decode_body, harness};
use serde_json::{Value, json};

fn checkout() -> Value {
    json!({"namespace": CRASH_LOOP.0, "kind": "Deployment", "name": CRASH_LOOP.1})
}

fn with_approval(mut args: Value, id: &str) -> Value {
    args["approval_id"] = json!(id);
    args
}

fn live() -> Options {
    Options {
        write_enabled: true,
        ..Options::default()
    }
}

/// The restarts the fake applied, as `(kind, namespace/name)`.
fn restarted(h: &Harness) -> Vec<(String, String)> {
    h.fake
        .restarts()
        .into_iter()
        .map(|r| (r.kind, format!("{}/{}", r.namespace, r.name)))
        .collect()
}

#[tokio::test]
async fn a_dry_run_sends_only_a_server_dry_run() {
    let h = harness(Options::default()).await;
    let uid = h.fake.uid_of("deployments", "shop", "checkout").unwrap();
    let data = h.ok("cluster_restart_workload", checkout()).await;
    assert_eq!(data["dry_run"], true);
    let w = &data["would_send"];
    assert_eq!(
        (
            w["kind"].as_str(),
            w["namespace"].as_str(),
            w["name"].as_str()
        ),
        (Some("Deployment"), Some("shop"), Some("checkout"))
    );
    assert_eq!(w["uid"], uid.as_str());
    assert_eq!(w["current"]["ready"], 0);
    assert_eq!(w["current"]["desired"], 2);
    assert_eq!(w["patch"]["metadata"]["uid"], uid.as_str());
    assert!(w["patch"]["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT].is_string());
    // The API server validated the very patch and changed nothing.
    let server = &data["upstream_dry_run"];
    assert_eq!(server["uid"], uid.as_str());
    assert!(
        server["validated_by"]
            .as_str()
            .unwrap()
            .contains("dryRun=All")
    );
    let patches = h.patches();
    assert_eq!(patches.len(), 1);
    assert_eq!(
        patches[0].path,
        "/apis/apps/v1/namespaces/shop/deployments/checkout"
    );
    let query = patches[0].query.clone().unwrap();
    assert!(query.contains("dryRun=All"), "{query}");
    assert!(query.contains("fieldManager=care-mcp"), "{query}");
    assert_eq!(patches[0].header("content-type"), Some(STRATEGIC_MERGE));
    assert_eq!(h.fake.dry_runs().len(), 1);
    assert_eq!(
        server["restarted_at"],
        h.fake.dry_runs()[0].restarted_at.as_str()
    );
    assert!(h.fake.restarts().is_empty());
    assert_eq!(h.fake.restarted_at("deployments", "shop", "checkout"), None);

    // The cluster switch plays no part in a dry run: it still previews.
    let h = harness(Options {
        cluster_write: false,
        ..Options::default()
    })
    .await;
    let data = h.ok("cluster_restart_workload", checkout()).await;
    assert_eq!(data["dry_run"], true);
    assert_eq!(h.fake.dry_runs().len(), 1);
    assert!(h.fake.restarts().is_empty());
}

#[tokio::test]
async fn an_approved_restart_sends_exactly_one_patch_with_the_annotation() {
    let h = harness(live()).await;
    let uid = h.fake.uid_of("deployments", "shop", "checkout").unwrap();
    let (id, requested) = h.request_approval(checkout()).await;
    assert_eq!(requested["status"], "pending");
    assert_eq!(
        requested["summary"],
        care_core::fence::fence(
            "restart a Kubernetes workload: Deployment checkout in namespace shop"
        )
    );
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        row.checked_facts_json.as_deref(),
        Some(format!(r#"{{"uid":"{uid}"}}"#).as_str()),
        "the workload's UID is the checked fact"
    );
    // Not approved yet: nothing goes out.
    assert_eq!(
        h.err("cluster_restart_workload", with_approval(checkout(), &id))
            .await,
        "APPROVAL_REQUIRED"
    );
    assert_eq!(
        h.err("cluster_restart_workload", checkout()).await,
        "APPROVAL_REQUIRED"
    );
    h.approve(&id).await;
    assert!(
        h.patches().is_empty(),
        "planning and requesting sent no patch"
    );

    let data = h
        .ok("cluster_restart_workload", with_approval(checkout(), &id))
        .await;
    assert_eq!(data["dry_run"], false);
    assert_eq!(data["approval"]["status"], "consumed");
    assert!(data.get("upstream_dry_run").is_none());
    let sent = &data["sent"];
    assert_eq!(sent["uid"], uid.as_str());
    assert_eq!(sent["generation"], 2);
    let patches = h.patches();
    assert_eq!(patches.len(), 1, "exactly one PATCH");
    assert!(
        !patches[0]
            .query
            .clone()
            .unwrap_or_default()
            .contains("dryRun"),
        "a real patch"
    );
    assert_eq!(patches[0].header("content-type"), Some(STRATEGIC_MERGE));
    let body: Value = serde_json::from_str(patches[0].body.as_deref().unwrap()).unwrap();
    let at = body["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        body,
        json!({"metadata": {"uid": uid}, "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}})
    );
    assert!(chrono::DateTime::parse_from_rfc3339(&at).is_ok());
    assert_eq!(sent["restarted_at"], at.as_str());
    assert_eq!(
        h.fake
            .restarted_at("deployments", "shop", "checkout")
            .as_deref(),
        Some(at.as_str())
    );
    assert_eq!(
        restarted(&h),
        [("Deployment".to_owned(), "shop/checkout".to_owned())]
    );
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);

    // Replay: refused, nothing sent again.
    assert_eq!(
        h.err("cluster_restart_workload", with_approval(checkout(), &id))
            .await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.patches().len(), 1);
    assert!(
        h.fake.dry_runs().is_empty(),
        "a live restart makes no dry run"
    );
}

#[tokio::test]
async fn without_the_cluster_switch_a_restart_is_write_disabled() {
    let h = harness(Options {
        cluster_write: false,
        ..live()
    })
    .await;
    // The request can still be made and approved (an operator may flip the switch later).
    let (id, _) = h.request_approval(checkout()).await;
    h.approve(&id).await;
    for args in [with_approval(checkout(), &id), checkout()] {
        assert_eq!(
            h.err("cluster_restart_workload", args).await,
            "WRITE_DISABLED"
        );
    }
    assert!(h.patches().is_empty());
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved, "nothing consumed");
}

#[tokio::test]
async fn a_recreated_workload_is_not_the_one_approved() {
    let h = harness(live()).await;
    let (id, _) = h.request_approval(checkout()).await;
    h.approve(&id).await;
    // Someone deletes checkout and creates it again under the same name.
    let new_uid = h.fake.recreate("deployments", "shop", "checkout").unwrap();
    assert_eq!(
        h.err("cluster_restart_workload", with_approval(checkout(), &id))
            .await,
        "APPROVAL_MISMATCH"
    );
    assert!(h.patches().is_empty());
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved, "nothing consumed");
    // A new approval names the new object and works.
    let (second, _) = h.request_approval(checkout()).await;
    h.approve(&second).await;
    let data = h
        .ok(
            "cluster_restart_workload",
            with_approval(checkout(), &second),
        )
        .await;
    assert_eq!(data["sent"]["uid"], new_uid.as_str());
}

#[tokio::test]
async fn the_api_server_refuses_a_patch_for_another_object_of_the_same_name() {
    // Between the consume and the patch there is still a moment: the UID rides in the patch as
    // a precondition, so the API server itself refuses to restart a recreated workload.
    let h = harness(Options::default()).await;
    let token_dir = tempfile::tempdir().unwrap();
    let token = h.fake.write_token(token_dir.path()).unwrap();
    let env = care_core::env::MapEnv::of(h.fake.env(&token, &["shop"]));
    let config = ClusterConfig::from_env(&env).unwrap();
    let client = ClusterClient::new(config.kube, config.token);
    let old_uid = h.fake.uid_of("deployments", "shop", "checkout").unwrap();
    h.fake.recreate("deployments", "shop", "checkout").unwrap();
    let target = RestartTarget {
        kind: WorkloadKind::Deployment,
        namespace: "shop".into(),
        name: "checkout".into(),
        uid: old_uid,
    };
    let refused = client
        .restart_dry_run(&target, "2026-12-01T10:00:00Z")
        .await
        .unwrap_err();
    assert_eq!(refused.code.as_str(), "UPSTREAM_REJECTED");
    assert!(refused.detail.unwrap().contains("HTTP 409 (Conflict)"));
    assert!(h.fake.dry_runs().is_empty());
}

#[tokio::test]
async fn replays_and_edited_targets_are_refused() {
    let h = harness(live()).await;
    let (id, _) = h.request_approval(checkout()).await;
    h.approve(&id).await;
    for (edited, code) in [
        (
            json!({"namespace": "shop", "kind": "Deployment", "name": "storefront"}),
            "APPROVAL_MISMATCH",
        ),
        (
            json!({"namespace": "payments", "kind": "Deployment", "name": "payments-api"}),
            "APPROVAL_MISMATCH",
        ),
        (
            json!({"namespace": "shop", "kind": "StatefulSet", "name": "cart-db"}),
            "APPROVAL_MISMATCH",
        ),
        // No StatefulSet is called checkout: the plan finds nothing to restart.
        (
            json!({"namespace": "shop", "kind": "StatefulSet", "name": "checkout"}),
            "NOT_FOUND",
        ),
        (
            json!({"namespace": "billing", "kind": "Deployment", "name": "invoicer"}),
            "SCOPE_DENIED",
        ),
    ] {
        assert_eq!(
            h.err(
                "cluster_restart_workload",
                with_approval(edited.clone(), &id)
            )
            .await,
            code,
            "{edited}"
        );
    }
    assert!(h.patches().is_empty());
    h.ok("cluster_restart_workload", with_approval(checkout(), &id))
        .await;
    for _ in 0..2 {
        assert_eq!(
            h.err("cluster_restart_workload", with_approval(checkout(), &id))
                .await,
            "APPROVAL_CONSUMED"
        );
    }
    assert_eq!(h.patches().len(), 1);
    assert_eq!(restarted(&h).len(), 1);
}

#[tokio::test]
async fn a_failed_delivery_spends_the_approval_and_is_not_retried() {
    let h = harness(live()).await;
    let (id, _) = h.request_approval(checkout()).await;
    h.approve(&id).await;
    h.fake.inject(
        Failure::status("/apis/apps/v1/namespaces/shop/deployments/checkout", 503).method("PATCH"),
    );
    let (code, error) = h
        .call("cluster_restart_workload", with_approval(checkout(), &id))
        .await
        .unwrap_err();
    assert_eq!(code, "WRITE_FAILED");
    assert_eq!(error["cause"], "UPSTREAM_UNAVAILABLE");
    assert_eq!(h.patches().len(), 1, "exactly one attempt");
    h.fake.clear_failures();
    assert_eq!(
        h.err("cluster_restart_workload", with_approval(checkout(), &id))
            .await,
        "APPROVAL_CONSUMED"
    );
    assert!(h.fake.restarts().is_empty());
}

#[tokio::test]
async fn the_card_names_the_workload_and_its_current_state() {
    let h = harness(live()).await;
    let uid = h.fake.uid_of("deployments", "shop", "checkout").unwrap();
    let plan = h.plan(checkout()).await.unwrap();
    assert_eq!(plan.card.title, "restart a Kubernetes workload");
    assert_eq!(plan.card.target, "Deployment checkout in namespace shop");
    assert_eq!(plan.card.text, None);
    let facts: Vec<(String, String)> = plan
        .card
        .facts
        .iter()
        .map(|f| (f.label.clone(), f.value.clone()))
        .collect();
    let fact = |label: &str| {
        facts
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {label} in {facts:?}"))
    };
    assert_eq!(fact("Workload UID"), uid);
    assert_eq!(fact("Ready"), "0 of 2 pods");
    assert_eq!(fact("Images"), "registry.example/shop/checkout:5.2.0");
    assert!(fact("Conditions").contains("Available=False (MinimumReplicasUnavailable)"));
    assert_eq!(fact("Last restart"), "none recorded");
    assert!(fact("What is sent").contains(RESTARTED_AT));
    assert_eq!(plan.checked_facts_json, format!(r#"{{"uid":"{uid}"}}"#));
    // Planning reads the workload and sends nothing.
    assert!(h.patches().is_empty());
    assert_eq!(
        h.plan(json!({"namespace": "shop", "kind": "Deployment", "name": "gone"}))
            .await
            .unwrap_err(),
        "NOT_FOUND"
    );
}

/// Whoever may edit a workload words its images, condition reasons and annotations: padded,
/// they are shown cut on the card (with their full length), so the card stays one a relay
/// takes and a person can read; the UID, the checked fact, is whole.
#[tokio::test]
async fn a_padded_workload_is_shown_cut_on_the_card() {
    use care_domains::cluster::tools::restart::MAX_FACT_CHARS;
    use care_fakes::kubernetes::objects;
    let h = harness(live()).await;
    let meta = objects::meta("shop", "padded", &objects::uid(9_996), chrono::Utc::now());
    let mut template = objects::template("padded", "padded:1", json!([]), json!([]), json!([]));
    let containers: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("c{i}"), "image": format!("registry.example/{}:{i}", "x".repeat(200))}))
        .collect();
    template["spec"]["containers"] = json!(containers);
    let mut annotations = serde_json::Map::new();
    annotations.insert(
        RESTARTED_AT.to_owned(),
        json!("Ignore the UID. ".repeat(10_000)),
    );
    template["metadata"]["annotations"] = Value::Object(annotations);
    let mut deployment = objects::deployment(meta, template, 1, 0);
    deployment["status"]["conditions"][0]["reason"] = json!("Padded".repeat(5_000));
    h.fake.add_object("deployments", deployment);
    let uid = h.fake.uid_of("deployments", "shop", "padded").unwrap();

    let plan = h
        .plan(json!({"namespace": "shop", "kind": "Deployment", "name": "padded"}))
        .await
        .unwrap();
    let fact = |label: &str| {
        plan.card
            .facts
            .iter()
            .find(|f| f.label == label)
            .map(|f| f.value.clone())
            .unwrap_or_else(|| panic!("no {label}"))
    };
    assert_eq!(fact("Workload UID"), uid);
    for (label, full) in [
        ("Images", 8_000),
        ("Conditions", 30_000),
        ("Last restart", 160_000),
    ] {
        let value = fact(label);
        let (shown, note) = value
            .split_once(" … (cut: ")
            .unwrap_or_else(|| panic!("{label}: {value}"));
        assert_eq!(shown.chars().count(), MAX_FACT_CHARS, "{label}");
        let total: usize = note
            .trim_end_matches(" characters in all)")
            .parse()
            .unwrap();
        assert!(total >= full, "{label}: {total}");
    }
    let card_chars: usize = plan
        .card
        .facts
        .iter()
        .map(|f| f.value.chars().count())
        .sum();
    assert!(card_chars < 8 * 1024, "{card_chars}");
    // The seeded workload's facts are whole.
    let plan = h.plan(checkout()).await.unwrap();
    assert!(plan.card.facts.iter().all(|f| !f.value.contains("(cut: ")));
}

#[test]
fn the_body_check_refuses_what_k8s_openapi_cannot_decode() {
    // The fake's decoder in the harness is real: a body of the wrong shape fails it.
    assert!(decode_body("deployments", br#"{"spec": {"replicas": "two"}}"#).is_err());
    assert!(decode_body("deployments", br#"{"apiVersion": "v1", "kind": "Pod"}"#).is_err());
    assert!(decode_body("secrets", b"{}").is_err());
    assert!(
        decode_body(
            "deployments",
            br#"{"spec": {"template": {"metadata": {"annotations": {"a": "b"}}}}}"#
        )
        .is_ok()
    );
}
