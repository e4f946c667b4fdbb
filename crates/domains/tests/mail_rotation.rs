//! Rotation of the mail password mid-session, against the fake and the real Dovecot (whose
//! passwd-file passdb the test changes, as an admin would; `scripts/mail-peers`): the account's
//! password changes on the server and in the password file, and the next call logs in anew with
//! the new one (the IMAP session of the old one is not reused) and an approved send authenticates
//! with it; the outbound scan refuses the new password and still the old. A password file that
//! cannot be re-read keeps the old password while the server accepts it; once the server refuses
//! it, calls fail closed until the file is fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mail_common;

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use mail_common::{Harness, Kind, Options, harness, peers};
use serde_json::{Value, json};

/// The session idle bound the harness is given: waiting past it forces a fresh login.
const IDLE: Duration = Duration::from_secs(1);

/// Tests of this binary share Dovecot's passwd file.
static PASSWD: Mutex<()> = Mutex::new(());

fn password(step: &str) -> String {
    format!(
        "sk-demo-mail-rotated-{step}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// The server now takes `password` for the support account (and no earlier one).
fn set_server_password(h: &Harness, password: &str) {
    match h.peer.kind {
        Kind::Fake => h.peer.fake.as_ref().unwrap().set_password(password),
        Kind::Dovecot => {
            let _guard = PASSWD
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let path = std::env::var("CARE_TEST_MAIL_PASSWD_FILE").expect(
                "CARE_TEST_MAIL_PASSWD_FILE is not set: run the tests with scripts/test (scripts/mail-peers)",
            );
            let old = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<String> = old
                .lines()
                .filter(|l| !l.starts_with(&format!("{}:", h.support)))
                .map(str::to_owned)
                .collect();
            lines.push(format!("{}:{{PLAIN}}{password}::::::", h.support));
            let tmp = format!("{path}.{}", h.tag);
            std::fs::write(&tmp, lines.join("\n") + "\n").unwrap();
            // Dovecot reloads the file when its size or mtime (in seconds) changes.
            let before = std::fs::metadata(&path).unwrap().modified().unwrap();
            let stamp = SystemTime::now().max(before + Duration::from_secs(1));
            std::fs::File::options()
                .write(true)
                .open(&tmp)
                .unwrap()
                .set_modified(stamp)
                .unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            // And it looks at the file at most once a second: let that second pass.
            std::thread::sleep(Duration::from_millis(1100));
        }
    }
}

fn logins(h: &Harness) -> Option<usize> {
    h.peer.fake.as_ref().map(care_fakes::mail::FakeMail::logins)
}

fn new_message(body: &str) -> Value {
    json!({"to": "partner@example.com", "subject": "Weekly report", "body": body})
}

async fn send_approved(h: &Harness, body: &str) -> Result<Value, (String, Value)> {
    let args = new_message(body);
    let id = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    let mut approved = args;
    approved["approval_id"] = json!(id);
    h.call("mail_send", approved).await
}

async fn assert_blocked(h: &Harness, secret: &str) {
    let body = format!("The account password is {secret} for now.");
    assert_eq!(
        h.err("mail_send", new_message(&body)).await,
        "OUTBOUND_BLOCKED",
        "{}",
        h.label()
    );
}

#[tokio::test]
async fn a_rotated_password_logs_in_anew_and_a_revoked_one_fails_closed() {
    for peer in peers() {
        let first = password("one");
        let h = harness(
            peer,
            Options {
                write_enabled: true,
                password: Some(first.clone()),
                extra_env: vec![
                    ("CARE_MAIL_CONNECT_TIMEOUT_SECS", "10".into()),
                    ("CARE_MAIL_COMMAND_TIMEOUT_SECS", "10".into()),
                    ("CARE_MAIL_IDLE_SECS", IDLE.as_secs().to_string()),
                ],
                ..Options::default()
            },
        )
        .await;
        let label = h.label();
        set_server_password(&h, &first);
        h.ok("mail_list", json!({})).await;
        let logged_in = logins(&h);

        // The password changes on the server and in the file: a new login, at once.
        let second = password("two");
        set_server_password(&h, &second);
        mail_common_rotate(&h, &second);
        h.ok("mail_list", json!({})).await;
        if let Some(before) = logged_in {
            assert_eq!(
                logins(&h),
                Some(before + 1),
                "{label}: the old session is not reused"
            );
        }
        let sent = send_approved(&h, "All good this week.").await;
        assert!(sent.is_ok(), "{label}: {sent:?}");
        assert_blocked(&h, &second).await;
        assert_blocked(&h, &first).await;

        // The file goes away: the password in use is kept while the server takes it.
        std::fs::remove_file(&h.password_file).unwrap();
        tokio::time::sleep(IDLE + Duration::from_millis(200)).await;
        h.ok("mail_list", json!({})).await;

        // The server revokes it: the login is refused, and the password is dropped.
        let third = password("three");
        set_server_password(&h, &third);
        tokio::time::sleep(IDLE + Duration::from_millis(200)).await;
        assert_eq!(
            h.err("mail_list", json!({})).await,
            "UPSTREAM_REJECTED",
            "{label}"
        );
        let failed = logins(&h);
        assert_eq!(
            h.err("mail_list", json!({})).await,
            "UPSTREAM_REJECTED",
            "{label}"
        );
        let (code, error) = send_approved(&h, "Another report.").await.unwrap_err();
        assert_eq!(code, "WRITE_FAILED", "{label}");
        assert_eq!(error["cause"], "UPSTREAM_REJECTED", "{label}");
        assert_eq!(logins(&h), failed, "{label}: nothing logged in meanwhile");

        // The file is back with the new password.
        mail_common_rotate(&h, &third);
        h.ok("mail_list", json!({})).await;
    }
}

/// A plain overwrite of the password file (mode 0600).
fn mail_common_rotate(h: &Harness, password: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(&h.password_file, format!("{password}\n")).unwrap();
    std::fs::set_permissions(&h.password_file, std::fs::Permissions::from_mode(0o600)).unwrap();
}
