//! `care-mcp serve --http`: the probes, loopback-or-TLS, Host/Origin checks (DNS rebinding),
//! bearer tokens (401 with one fixed body and an audit row for a missing, unknown or revoked
//! one), a client's role selecting exactly that role's toolset, the idle expiry of sessions,
//! and an orderly stop on SIGTERM. Real processes, real HTTP, the real `clients` CLI.
// Test clients, not upstream clients: the domain kit's HttpClient rule does not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use care_core::catalog::{Role, tools_of};
use common::http::{
    HttpServer, Raw, RawSession, add_client, call_body, clients, post_unread, post_unread_body,
};
use common::{Sandbox, implemented, run_once};
use serde_json::{Value, json};

fn expected_names(role: Role) -> BTreeSet<String> {
    tools_of(role)
        .map(|e| e.name.to_owned())
        .filter(|n| implemented().contains(n))
        .collect()
}

fn rt() -> tokio::runtime::Runtime {
    common::http::install_crypto();
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn probes_answer_and_readyz_follows_the_ledger() {
    let sandbox = Sandbox::new();
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let http = reqwest::Client::new();
        let health = http
            .get(format!("{}/healthz", server.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        let ready = http
            .get(format!("{}/readyz", server.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200);
    });
    drop(server);

    // A Postgres nobody listens on: alive, not ready.
    let mut cmd = sandbox.command();
    cmd.env("DATABASE_URL", "postgres://postgres@127.0.0.1:9/care")
        .env("CARE_AUDIT_SALT", "sk-demo-salt-0123456789");
    let server = HttpServer::start_with(&mut cmd, &["lead"], &[]);
    rt().block_on(async {
        let http = reqwest::Client::new();
        let health = http
            .get(format!("{}/healthz", server.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        let ready = http
            .get(format!("{}/readyz", server.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 503);
    });
}

#[test]
fn a_non_loopback_address_needs_tls_or_a_declared_proxy() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["serve", "--http", "0.0.0.0:0", "--role", "lead"]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{}", finished.stderr);
    assert!(
        finished.stderr.contains("--tls-cert"),
        "{}",
        finished.stderr
    );
    assert!(finished.stdout_lines.is_empty());

    let server = HttpServer::start_on(
        &mut sandbox.command(),
        "0.0.0.0:0",
        &["lead"],
        &["--behind-tls-proxy"],
    );
    assert!(server.addr.ip().is_unspecified());
    assert!(server.stop().success());
}

/// "serving on http" is the operator's (and a readiness script's) cue: from then on a SIGTERM
/// must be caught, or a stop right after the start exits without flushing anything.
#[test]
fn the_stop_signal_is_caught_once_serving_is_announced() {
    let sandbox = Sandbox::new();
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    assert!(common::catches_sigterm(server.pid()));
    let status = server.stop();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn host_and_origin_are_checked_against_dns_rebinding() {
    let sandbox = Sandbox::new();
    let token = add_client(&sandbox, "agent-a", "lead", None);
    let server = HttpServer::start(
        &sandbox,
        &["lead"],
        &[
            "--allowed-host",
            "care.internal",
            "--allowed-origin",
            "https://console.example:443",
        ],
    );
    rt().block_on(async {
        let raw = Raw::new(&server);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        // A rebound name is refused whatever the token, a configured name passes; a browser
        // page elsewhere is refused, the configured console and a loopback page are served.
        for (header, value, status) in [
            ("Host", "evil.example", 403),
            ("Host", "care.internal:8080", 200),
            ("Origin", "http://evil.example", 403),
            ("Origin", "https://console.example", 200),
            ("Origin", "http://localhost:5173", 200),
        ] {
            let answer = raw.post(Some(&token), &[(header, value)], &init).await;
            assert_eq!(answer.status, status, "{header}: {value}: {answer:?}");
        }
    });
}

#[test]
fn missing_unknown_and_revoked_tokens_get_one_fixed_401_and_an_audit_row() {
    let sandbox = Sandbox::new();
    let token = add_client(&sandbox, "agent-a", "lead", None);
    let other = add_client(&sandbox, "agent-b", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let call = call_body(1, "kpi_report", json!({}));
        // The right key id with a wrong secret, a well-formed token nobody holds, garbage.
        let wrong_secret = format!("{}{}", &token[..token.len() - 64], "0".repeat(64));
        let nobody = format!("care_{}_{}", "1".repeat(16), "2".repeat(64));
        let mut bodies = BTreeSet::new();
        for bad in [
            None,
            Some("sk-demo-garbage"),
            Some(&nobody[..]),
            Some(&wrong_secret[..]),
        ] {
            let answer = raw.post(bad, &[], &call).await;
            assert_eq!(answer.status, 401, "{bad:?}: {answer:?}");
            assert_eq!(answer.headers["www-authenticate"], "Bearer");
            bodies.insert(answer.body);
        }
        // A batch is refused too, but only once the token is known: without one it is one
        // more 401 (it used to be a 400 before the token was looked at).
        let batch = json!([call.clone()]);
        let answer = raw.post(None, &[], &batch).await;
        assert_eq!(answer.status, 401, "{answer:?}");
        bodies.insert(answer.body);
        assert_eq!(raw.post(Some(&other), &[], &batch).await.status, 400);
        // On a connection of its own: the server answers 413 without reading the rest of the
        // body and closes that connection, so a pooled client could pick the closing connection
        // for its next request (hyper's IncompleteMessage, seen in CI), and a client still
        // writing the body gets a broken pipe instead of the answer (also seen in CI).
        let huge = call_body(9, "kpi_report", json!({"note": "x".repeat(5 << 20)}));
        assert_eq!(post_unread_body(&server, &other, &huge).await, 413);
        server.wait_for_audit(|a| {
            a["client"] == "unauthenticated"
                && a["error_code"] == "UNAUTHENTICATED"
                && a["tool"] == "kpi_report"
                && a["decision"] == "deny"
                && a["denied_by"] == "client_auth"
                && a["session"] == "h-none"
        });

        // Live, then revoked: the next request is refused; the other client goes on.
        let session = raw.session(&token).await;
        let ok = session.call(2, "kpi_report", json!({})).await;
        assert_eq!(ok.status, 200);
        assert_eq!(
            ok.message()["result"]["structuredContent"]["ok"],
            true,
            "{ok:?}"
        );
        clients(&sandbox, &["revoke", "agent-a"]);
        let refused = session.call(3, "kpi_report", json!({})).await;
        assert_eq!(refused.status, 401, "{refused:?}");
        bodies.insert(refused.body);
        let fresh = raw.post(Some(&token), &[], &call).await;
        assert_eq!(fresh.status, 401);
        let still = raw
            .session(&other)
            .await
            .call(4, "kpi_report", json!({}))
            .await;
        assert_eq!(still.message()["result"]["structuredContent"]["ok"], true);
        assert_eq!(
            bodies.len(),
            1,
            "one fixed body for every refusal: {bodies:?}"
        );
        assert_eq!(bodies.first().unwrap(), "{\"error\":\"unauthorized\"}");
        server.wait_for_audit(|a| {
            a["client"] == "agent-a" && a["error_code"] == "CLIENT_REVOKED" && a["role"] == "lead"
        });
    });
    // Every call that reached a tool names its client; denials are in the ledger too.
    let list = run_once(sandbox.command().args(["clients", "list"]), None);
    assert!(list.stdout().contains("agent-a"), "{}", list.stdout());
}

/// A caller without a token cannot make the server wait for (or hold) a large body: a request
/// that announces 3 MiB (under the 4 MiB limit of authenticated calls) and sends 1 KiB, or one
/// that announces nothing (chunked) and sends 64 KiB, gets its 401 at once. Read body-first,
/// the server would wait for the rest.
#[test]
fn an_unauthenticated_body_is_not_waited_for() {
    let sandbox = Sandbox::new();
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, " ".repeat(64 << 10));
    for (framing, sent) in [
        (format!("Content-Length: {}", 3 << 20), " ".repeat(1024)),
        ("Transfer-Encoding: chunked".to_owned(), chunk),
    ] {
        let headers = format!(
            "Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{framing}\r\n"
        );
        let answer = rt()
            .block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    post_unread(&server, &headers, sent),
                )
                .await
            })
            .unwrap_or_else(|_| panic!("{framing}: no answer while the body was unsent"));
        assert_eq!(answer.status, 401, "{framing}: {}", answer.body);
        assert_eq!(answer.body, "{\"error\":\"unauthorized\"}", "{framing}");
    }
    server.wait_for_audit(|a| a["error_code"] == "UNAUTHENTICATED" && a["tool"] == "-");
}

#[test]
fn a_clients_role_selects_exactly_that_roles_toolset() {
    let sandbox = Sandbox::new();
    let lead = add_client(&sandbox, "lead-agent", "lead", None);
    let reviews = add_client(&sandbox, "reviews-agent", "reviews", None);
    let ops = add_client(&sandbox, "ops-agent", "ops", None);
    let server = HttpServer::start(&sandbox, &["lead", "reviews"], &[]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let lead = raw.session(&lead).await;
        let reviews = raw.session(&reviews).await;
        let lead_tools: BTreeSet<String> = lead.tool_names().await.into_iter().collect();
        let reviews_tools: BTreeSet<String> = reviews.tool_names().await.into_iter().collect();
        assert_eq!(lead_tools, expected_names(Role::Lead));
        assert_eq!(reviews_tools, expected_names(Role::Reviews));

        // Another role's tool answers exactly like a name that exists nowhere.
        let foreign = lead.call(5, "asc_review_reply", json!({})).await.message();
        let nowhere = lead.call(5, "no_such_tool", json!({})).await.message();
        assert!(foreign.get("error").is_some(), "{foreign}");
        assert_eq!(foreign, nowhere);
        assert_eq!(foreign["error"]["message"], "Unknown tool");

        // A valid client whose role this process does not serve.
        let refused = raw
            .post(Some(&ops), &[], &call_body(1, "kpi_report", json!({})))
            .await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_eq!(refused.body, "{\"error\":\"forbidden\"}");

        // The audit names the client on every row.
        let ok = reviews.call(6, "kpi_report", json!({})).await.message();
        assert_eq!(ok["result"]["structuredContent"]["ok"], true, "{ok}");
    });
    server.wait_for_audit(|a| {
        a["client"] == "reviews-agent" && a["role"] == "reviews" && a["tool"] == "kpi_report"
    });
    server.wait_for_audit(|a| {
        a["client"] == "lead-agent"
            && a["tool"] == "asc_review_reply"
            && a["error_code"] == "UNKNOWN_TOOL"
    });
    server.wait_for_audit(|a| a["client"] == "ops-agent" && a["error_code"] == "ROLE_NOT_SERVED");
}

#[test]
fn an_idle_session_expires_after_the_configured_time() {
    let sandbox = Sandbox::new();
    let token = add_client(&sandbox, "agent-a", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead"], &["--session-idle-secs", "2"]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let kept = raw.session(&token).await;
        let idle = raw.session(&token).await;
        // Requests keep a session alive past the idle time...
        for id in 0..4 {
            tokio::time::sleep(Duration::from_millis(900)).await;
            let answer = kept.call(id, "kpi_report", json!({})).await;
            assert_eq!(answer.status, 200, "{answer:?}");
        }
        // ...and a session left alone is gone.
        let gone = idle.call(9, "kpi_report", json!({})).await;
        assert_eq!(gone.status, 404, "{gone:?}");
    });
}

#[test]
fn clients_cli_lists_rotates_and_refuses_duplicates() {
    let sandbox = Sandbox::new();
    let first = add_client(&sandbox, "agent-a", "reviews", Some(30));
    let dup = run_once(
        sandbox
            .command()
            .args(["clients", "add", "agent-a", "--role", "lead"]),
        None,
    );
    assert_eq!(dup.code(), Some(2), "{}", dup.stderr);
    assert!(dup.stdout_lines.is_empty());
    let bad = run_once(
        sandbox
            .command()
            .args(["clients", "add", "Agent A", "--role", "lead"]),
        None,
    );
    assert_eq!(bad.code(), Some(2));

    let rotated = clients(&sandbox, &["rotate", "agent-a"]).trim().to_owned();
    assert!(rotated.starts_with("care_") && rotated != first);
    let list = clients(&sandbox, &["list"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("agent-a"))
        .expect(&list);
    assert!(row.contains("reviews") && row.contains(" 30 "), "{row}");
    assert!(!list.contains(&first[5..20]), "no token or key in the list");

    let server = HttpServer::start(&sandbox, &["reviews"], &[]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let call = call_body(1, "kpi_report", json!({}));
        assert_eq!(raw.post(Some(&first), &[], &call).await.status, 401);
        let session = raw.session(&rotated).await;
        let ok = session.call(2, "kpi_report", json!({})).await.message();
        assert_eq!(ok["result"]["structuredContent"]["ok"], true, "{ok}");
    });
    // The database holds no token and no secret.
    let db = std::fs::read(sandbox.db_path()).unwrap();
    let text = String::from_utf8_lossy(&db);
    assert!(!text.contains(&rotated[22..]), "the secret is not stored");
}

#[test]
fn sigterm_stops_the_http_server_in_order() {
    let sandbox = Sandbox::new();
    let token = add_client(&sandbox, "agent-a", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let session = Raw::new(&server).session(&token).await;
        let ok = session
            .call(1, "kpi_record", json!({"metric": "m.x", "value": 1}))
            .await;
        assert_eq!(ok.status, 200);
    });
    let status = server.stop();
    assert!(status.success(), "{status:?}");
    let rows: Value = {
        let out = run_once(sandbox.command().args(["clients", "list"]), None);
        json!(out.stdout())
    };
    assert!(rows.as_str().unwrap().contains("agent-a"));
}

#[test]
fn tls_serves_https_with_the_given_certificate() {
    let sandbox = Sandbox::new();
    let (cert, key) = (
        sandbox.path().join("cert.pem"),
        sandbox.path().join("key.pem"),
    );
    // A throwaway self-signed P-256 certificate for 127.0.0.1.
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args([
            "-subj",
            "/CN=care-test",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-days",
            "1",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let token = add_client(&sandbox, "agent-a", "lead", None);
    let args = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let server = HttpServer::start(&sandbox, &["lead"], &args);
    rt().block_on(async {
        let pem = std::fs::read(&cert).unwrap();
        let https = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
            .build()
            .unwrap();
        let base = format!("https://{}", server.addr);
        let health = https.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200);
        let raw = Raw {
            http: https,
            url: format!("{base}/mcp"),
        };
        let session = raw.session(&token).await;
        let ok = session.call(1, "kpi_report", json!({})).await.message();
        assert_eq!(ok["result"]["structuredContent"]["ok"], true, "{ok}");
        // Plain HTTP to the TLS port gets no answer.
        let plain = reqwest::Client::new()
            .get(format!("http://{}/healthz", server.addr))
            .send()
            .await;
        assert!(plain.is_err() || plain.unwrap().status() != 200);
    });
}

#[test]
fn a_session_belongs_to_the_client_that_opened_it() {
    let sandbox = Sandbox::new();
    let owner = add_client(&sandbox, "owner-agent", "lead", None);
    let other = add_client(&sandbox, "other-agent", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let mine = raw.session(&owner).await;
        // Another valid client holding the id can neither use the session...
        let borrowed = RawSession {
            raw: raw.clone(),
            token: other.clone(),
            id: mine.id.clone(),
        };
        let used = borrowed.call(2, "kpi_report", json!({})).await;
        assert_eq!(used.status, 404, "{used:?}");
        assert_eq!(used.body, "Not Found: Session not found");
        // ...nor end it.
        let ended = raw
            .http
            .delete(&raw.url)
            .bearer_auth(&other)
            .header("Mcp-Session-Id", &mine.id)
            .send()
            .await
            .unwrap();
        assert_eq!(ended.status().as_u16(), 404);
        // Nor after the opener's own requests in it were refused (found by fuzz `http_request`:
        // the guard used to forget the owner on any DELETE or 404): a DELETE under a foreign
        // Host (rmcp's 403) and an unknown method leave the session alive and its opener's.
        let refused = raw
            .http
            .delete(&raw.url)
            .bearer_auth(&owner)
            .header("Host", "evil.example")
            .header("Mcp-Session-Id", &mine.id)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 403);
        mine.post(&json!({"jsonrpc": "2.0", "id": 4, "method": "no/such/method"}))
            .await;
        let used = borrowed.call(5, "kpi_report", json!({})).await;
        assert_eq!(used.status, 404, "{used:?}");
        // Its opener goes on.
        let ok = mine.call(3, "kpi_report", json!({})).await;
        assert_eq!(ok.status, 200, "{ok:?}");
        assert_eq!(ok.message()["result"]["structuredContent"]["ok"], true);
    });
    server.wait_for_audit(|a| {
        a["client"] == "other-agent"
            && a["error_code"] == "SESSION_OF_ANOTHER_CLIENT"
            && a["denied_by"] == "session_owner"
            && a["rules"] == "client_auth,role_gate"
            // A salted digest of the session id, never the id (a bearer of the session).
            && a["session"]
                .as_str()
                .is_some_and(|s| s.len() == 18 && s.starts_with("h-") && s != "h-none")
    });
}
