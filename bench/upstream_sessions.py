"""Shared by bench/roles and scripts/hot-symbols: the sandbox's upstream fakes on loopback
(`care-mcp sandbox`, from a binary built with the `sandbox` feature) and, for each role, the
read calls that reach them; and (bench/run too) the check of a binary's file name. Python 3.11
stdlib only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

# The sandbox fakes' seeded data (crates/fakes/src/*/seed.rs).
APP_ID = "1600000001"
REVIEW = "rev-en-001"
HOSTILE_REVIEW = "rev-hostile-001"
TOPIC = 101
HOSTILE_TOPIC = 104
TICKET = "ticket-en-001@mail.example.com"
HOSTILE_TICKET = "ticket-hostile-001@mail.example.net"
NAMESPACE = "shop"

# Each role's calls, cycled in order: its read tools on every upstream it reaches, hostile
# content included, and one ledger read. Every answer must be `ok: true`.
ROLE_CALLS: dict[str, list[tuple[str, dict]]] = {
    "lead": [
        ("asc_reviews_list", {"app_id": APP_ID}),
        ("asc_review_get", {"review_id": HOSTILE_REVIEW}),
        ("discourse_topic_get", {"topic_id": HOSTILE_TOPIC}),
        ("discourse_search", {"query": "reminders"}),
        ("mail_read", {"message_id": HOSTILE_TICKET}),
        ("mail_list", {"limit": 10}),
        ("cluster_workloads", {"namespace": NAMESPACE}),
        ("cluster_events", {"namespace": NAMESPACE, "warnings_only": True}),
        ("kpi_report", {}),
        ("approval_list", {}),
    ],
    "reviews": [
        ("asc_reviews_list", {"app_id": APP_ID}),
        ("asc_review_get", {"review_id": REVIEW}),
        ("asc_review_get", {"review_id": HOSTILE_REVIEW}),
        ("asc_reviews_unanswered", {"app_id": APP_ID, "older_than_hours": 1}),
        ("discourse_search", {"query": "reminders"}),
        ("kpi_report", {}),
    ],
    "insight": [
        ("asc_reviews_list", {"app_id": APP_ID}),
        ("discourse_latest_topics", {}),
        ("discourse_search", {"query": "reminders"}),
        ("kpi_report", {}),
        ("csat_summary", {}),
        ("sla_status", {}),
    ],
    "community": [
        ("discourse_search", {"query": "reminders"}),
        ("discourse_topic_get", {"topic_id": TOPIC}),
        ("discourse_topic_get", {"topic_id": HOSTILE_TOPIC}),
        ("discourse_latest_topics", {}),
        ("sla_status", {"channel": "forum"}),
    ],
    "mail": [
        ("mail_list", {"limit": 10}),
        ("mail_read", {"message_id": TICKET}),
        ("mail_read", {"message_id": HOSTILE_TICKET}),
        ("mail_thread", {"message_id": TICKET}),
        ("sla_status", {"channel": "mail"}),
    ],
    "ops": [
        ("cluster_overview", {}),
        ("cluster_workloads", {"namespace": NAMESPACE}),
        ("cluster_pods", {"namespace": NAMESPACE}),
        ("cluster_events", {"namespace": NAMESPACE, "warnings_only": True}),
        ("kpi_report", {}),
    ],
}


def wrapper_named(*binaries: Path | None) -> str | None:
    """Why one of BINARIES (None: not given) cannot be measured or profiled under its name, or
    None. A care-mcp named `care-mcp-<x>` serves the role <x> and ignores its arguments (the
    image's wrapper links), so a copy kept as `care-mcp-new` or `care-mcp-sandbox` refuses every
    session and the sandbox with "unknown role", which looks like the tool running it (valgrind)
    at fault. Checked as started: a link by its target's name."""
    for binary in binaries:
        if binary is not None and binary.resolve().name.startswith("care-mcp-"):
            return (f"{binary.resolve()}: a care-mcp named care-mcp-<role> serves that role whatever "
                    "its arguments say; keep this copy as care-mcp, in a directory of its own")
    return None


def expect_ok(role: str, tool: str, answer: dict) -> None:
    """Every call of ROLE_CALLS must answer `ok: true` in its result envelope: an error answer
    runs other code than the one measured or profiled."""
    if answer.get("result", {}).get("structuredContent", {}).get("ok") is not True:
        raise RuntimeError(f"{role}: {tool} on the sandbox's fakes did not answer ok: {json.dumps(answer)[:300]}")


def start_sandbox(sandbox_bin: Path, state: Path, log: Path) -> tuple[subprocess.Popen, dict]:
    """`care-mcp sandbox --dir state` in the background, and its mcp.json once written."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(state)}
    proc = subprocess.Popen(
        [str(sandbox_bin), "sandbox", "--dir", str(state)],
        stdin=subprocess.DEVNULL,
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    config = state / "mcp.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the sandbox exited ({proc.returncode}): {log_tail(log)}")
        try:
            return proc, json.loads(config.read_text())["mcpServers"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    stop_sandbox(proc)
    raise RuntimeError(f"the sandbox wrote no {config} within 60 s: {log_tail(log)}")


def log_tail(log: Path) -> str:
    """The end of the sandbox's log, in the error itself: callers remove their temp dirs (and the
    log with them) on the way out. A binary named `care-mcp-<word>` takes <word> for its role,
    so a copy of the sandbox build named e.g. `care-mcp-sandbox` ends here with "unknown role"."""
    try:
        return log.read_text(errors="replace")[-1500:].strip() or "(its log is empty)"
    except OSError:
        return "(no log)"


def stop_sandbox(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # its Ctrl-C: stops the fakes and the relay
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # only this child, by its own handle
            proc.wait()
