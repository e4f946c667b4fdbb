//! The official MCP Python SDK (`mcp` on PyPI) as the client: it validates each result's
//! `structuredContent` against the tool's `outputSchema`, so code nobody here wrote checks
//! that the declared envelope schema is the one the server answers. The script is
//! `tests/clients/validate_outputs.py`; the interpreter is `CARE_TEST_PYTHON` (default
//! `python3`; `scripts/test` makes a virtualenv with the SDK). A missing SDK fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Sandbox, binary, run_once};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/validate_outputs.py"
);

#[test]
fn python_sdk_validates_every_result_against_the_output_schema() {
    let python = std::env::var("CARE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let sandbox = Sandbox::new();
    // The sandbox's environment (ledger, App Store Connect fake, Nostr settings); the script
    // hands its CARE_* variables to the server explicitly.
    let mut cmd = sandbox.command_for(Path::new(&python));
    cmd.arg(SCRIPT).arg(binary()).arg("reviews");
    let finished = run_once(&mut cmd, None);
    assert_ne!(
        finished.code(),
        Some(3),
        "the MCP Python SDK is not importable by {python:?}: run scripts/test (it installs \
         `mcp` into $CARGO_TARGET_DIR/py-venv), or `{python} -m pip install mcp==2.3.0`, or \
         set CARE_TEST_PYTHON\n{}",
        finished.stderr
    );
    let stdout = finished.stdout();
    assert_eq!(
        finished.code(),
        Some(0),
        "the Python client failed\nstdout:\n{stdout}\nstderr:\n{}",
        finished.stderr
    );
    // The script ran to its end: the failures were validated and the wrong envelopes refused.
    for line in [
        "reviews: 15 tools, each with an outputSchema",
        "approval_status: ok=False NOT_FOUND validated",
        "hand-made wrong envelopes refused",
    ] {
        assert!(stdout.contains(line), "{line:?} not in\n{stdout}");
    }
}
