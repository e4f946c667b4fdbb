//! Benchmark only (run by `bench/run`, see `bench/README.md`): the external write's ledger path
//! as the pipeline runs it (the intent audit row stored and committed while the row is read,
//! then the one conditional consume; the intent, the overlapped pair and the consume also timed
//! apart), sequential and with
//! concurrent workers over distinct approvals; the approval read and a listing of 20 rows under
//! the same concurrency; on Postgres, the machine's floor under the consume at the same
//! concurrency; and a race of many consumers in two processes on one approval, where exactly
//! one may win. Prints one JSON object on stdout.
//!
//! `ledger_bench --url URL [--approvals N] [--workers 1,8,32] [--reads N] [--race N]`
//! (`--url` a `postgres://` or `sqlite://` ledger URL; the database is seeded and left as is).

#![allow(clippy::print_stdout)]

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use care_core::audit::Auditor;
use care_core::ledger::{AuditRecord, ConsumeError, Ledger};
use chrono::Utc;
use serde_json::{Value, json};
use sqlx::postgres::PgPoolOptions;

const ACTION: &str = "mail_send";
const HASH: &str = "5e1d000000000000000000000000000000000000000000000000000000000001";
const ROLE: &str = "mail";
/// Rows per listing (`approval_list`'s page).
const LISTED: u32 = 20;
/// Child mode of the race: `--race-child URL ID N START_MS`.
const RACE_CHILD: &str = "--race-child";
/// The floor's statement: the consume's shape (one conditional update of one row, the row back).
const FLOOR_CONSUME: &str =
    "UPDATE bench_floor SET status = 'consumed' WHERE id = $1 AND status = 'approved' RETURNING id";

type Result<T> = std::result::Result<T, String>;
/// Durations of one step, collected across the workers of one thread.
type Times = Rc<RefCell<Vec<u64>>>;

/// The steps of the consume path timed apart: the intent row's commit, the intent and the read
/// both done (the read waits for a CPU behind the intent's backend on a small machine, so it can
/// end last), and the consume alone (from there to the consume's answer).
#[derive(Clone, Default)]
struct Steps {
    intent: Times,
    overlapped: Times,
    consume: Times,
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // One runtime thread, as in the server.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ledger_bench: runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let done = if args.first().map(String::as_str) == Some(RACE_CHILD) {
        runtime.block_on(race_child(&args[1..]))
    } else {
        runtime.block_on(run(&args))
    };
    match done {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ledger_bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

struct Options {
    url: String,
    approvals: usize,
    workers: Vec<usize>,
    reads: usize,
    race: usize,
}

fn options(args: &[String]) -> Result<Options> {
    let mut o = Options {
        url: String::new(),
        approvals: 4000,
        workers: vec![1, 8, 32],
        reads: 4000,
        race: 10_000,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--url" => o.url = value.clone(),
            "--approvals" => o.approvals = number()?,
            "--reads" => o.reads = number()?,
            "--race" => o.race = number()?,
            "--workers" => {
                o.workers = value
                    .split(',')
                    .map(|w| w.parse::<usize>().map_err(|e| format!("--workers: {e}")))
                    .collect::<Result<_>>()?;
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if o.url.is_empty() {
        return Err("--url is required".into());
    }
    Ok(o)
}

async fn open(url: &str) -> Result<Arc<dyn Ledger>> {
    let ledger = care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .map_err(|e| e.to_string())?;
    // Connected and migrated before any clock starts.
    ledger.ping().await.map_err(|e| e.to_string())?;
    Ok(ledger)
}

/// `n` approved approvals `<prefix>-1..n`, valid for an hour, in one statement.
async fn seed(ledger: &dyn Ledger, url: &str, prefix: &str, n: usize) -> Result<()> {
    let now = ledger
        .clock()
        .await
        .map_err(|e| e.to_string())?
        .timestamp_millis();
    let statement = format!(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {n}) \
         INSERT INTO approvals (id, action, arguments_json, payload_hash, hash_encoding, status, \
         requested_by_role, requested_by_client, created_at, expires_at, decided_at, \
         checked_facts_json) \
         SELECT '{prefix}-' || n, '{ACTION}', '{{}}', '{HASH}', 'jcs', 'approved', '{ROLE}', \
         'bench', {now}, {expires}, {now}, '{{}}' FROM g",
        expires = now + 3_600_000,
    );
    let added = care_ledger::test_support::execute(url, &statement).await?;
    if added != n as u64 {
        return Err(format!("seeded {added} approvals, expected {n}"));
    }
    // Statistics as autovacuum would have them within a minute: thousands of approved rows
    // appear in one statement here, and with the statistics of a table of a few rows the
    // planner takes the live-approvals index for an id lookup (a scan of every seeded row).
    if url.starts_with("postgres") {
        care_ledger::test_support::execute(url, "ANALYZE approvals").await?;
    }
    Ok(())
}

fn intent(id: &str) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        role: ROLE.to_owned(),
        client: "bench".to_owned(),
        tool: ACTION.to_owned(),
        outcome: "intent".to_owned(),
        approval_id: Some(id.to_owned()),
        args_digest: "d".repeat(64),
        capability: "external-write,upstream,approval-gated".to_owned(),
        session: "s-bench".to_owned(),
        decision: "allow".to_owned(),
        rules: [
            "role_gate",
            "input",
            "scope",
            "outbound_scan",
            "write_switch",
        ]
        .map(str::to_owned)
        .to_vec(),
        ..AuditRecord::default()
    }
}

/// The pipeline's ledger steps of one external write: the intent row stored (committed) while
/// the row is read, then the consume. Any refusal is an error here: every approval is consumed once.
async fn verify_and_consume(
    ledger: &dyn Ledger,
    auditor: &Auditor,
    id: &str,
    steps: &Steps,
) -> Result<()> {
    let t0 = Instant::now();
    let record = intent(id);
    // As the pipeline does: the intent's commit and the row's read overlap.
    let timed_intent = async {
        let done = auditor.record_now(&record).await;
        steps
            .intent
            .borrow_mut()
            .push(t0.elapsed().as_nanos() as u64);
        done
    };
    let (recorded, row) = tokio::join!(timed_intent, ledger.approval(id));
    steps
        .overlapped
        .borrow_mut()
        .push(t0.elapsed().as_nanos() as u64);
    recorded.map_err(|e| format!("intent: {e}"))?;
    let row = row
        .map_err(|e| format!("read: {e}"))?
        .ok_or("read: approval missing")?;
    if row.requested_by_role != ROLE {
        return Err("read: wrong role".into());
    }
    let t1 = Instant::now();
    ledger
        .consume(id, ACTION, HASH, "{}")
        .await
        .map_err(|e| format!("consume {id}: {e}"))?;
    steps
        .consume
        .borrow_mut()
        .push(t1.elapsed().as_nanos() as u64);
    Ok(())
}

fn summary(mut ns: Vec<u64>, wall: Duration) -> Value {
    ns.sort_unstable();
    let pct = |p: f64| {
        let k = ((p / 100.0) * (ns.len().saturating_sub(1)) as f64).round() as usize;
        ns.get(k).copied().unwrap_or(0)
    };
    json!({
        "n": ns.len(),
        "p50": pct(50.0),
        "p99": pct(99.0),
        "max": ns.last().copied().unwrap_or(0),
        "wall_ns": wall.as_nanos() as u64,
        "per_s": if wall.is_zero() { 0.0 } else { ns.len() as f64 / wall.as_secs_f64() },
    })
}

/// `total` operations over `workers` concurrent tasks; `op(i)` is the i-th operation.
async fn concurrently<F, Fut>(workers: usize, total: usize, op: F) -> Result<Value>
where
    F: Fn(usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Result<()>> + 'static,
{
    let started = Instant::now();
    let local = tokio::task::LocalSet::new();
    // As a stdio session does in the server: the thread stays awake while a statement's
    // answer is due (the ledger marks each one), instead of sleeping on a halted CPU. The
    // task ends with the set.
    local.spawn_local(care_core::awake::keep_awake(Arc::clone(
        care_core::awake::process(),
    )));
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let op = op.clone();
            local.spawn_local(async move {
                let mut times = Vec::new();
                let mut i = w;
                while i < total {
                    let t0 = Instant::now();
                    op(i).await?;
                    times.push(t0.elapsed().as_nanos() as u64);
                    i += workers;
                }
                Ok::<_, String>(times)
            })
        })
        .collect();
    let times = local
        .run_until(async move {
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.map_err(|e| e.to_string())??);
            }
            Ok::<_, String>(all)
        })
        .await?;
    Ok(summary(times, started.elapsed()))
}

async fn run(args: &[String]) -> Result<()> {
    let o = options(args)?;
    let ledger = open(&o.url).await?;
    let mut out = json!({ "backend": ledger.backend() });

    for &w in &o.workers {
        let prefix = format!("c{w}");
        seed(ledger.as_ref(), &o.url, &prefix, o.approvals).await?;
        let l = Arc::clone(&ledger);
        // One auditor per process, as the server has: concurrent intent rows share commits.
        let auditor = Auditor::new(Arc::clone(&ledger), b"sk-demo-bench-salt");
        let steps = Steps::default();
        let timed = steps.clone();
        let consume = concurrently(w, o.approvals, move |i| {
            let l = Arc::clone(&l);
            let auditor = auditor.clone();
            let id = format!("{prefix}-{}", i + 1);
            let timed = timed.clone();
            async move { verify_and_consume(l.as_ref(), &auditor, &id, &timed).await }
        })
        .await?;
        let intent = summary(steps.intent.take(), Duration::ZERO);
        let overlapped = summary(steps.overlapped.take(), Duration::ZERO);
        let consume_step = summary(steps.consume.take(), Duration::ZERO);
        // Reads of the rows just consumed, with the same concurrency.
        let l = Arc::clone(&ledger);
        let approvals = o.approvals;
        let prefix = format!("c{w}");
        let read = concurrently(w, o.reads, move |i| {
            let l = Arc::clone(&l);
            let id = format!("{prefix}-{}", i % approvals + 1);
            async move {
                l.approval(&id)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or("read: missing")?;
                Ok(())
            }
        })
        .await?;
        // Listings of the newest rows (all of them consumed, nothing lapsed: the read path),
        // with the same concurrency; a quarter as many as the reads.
        let l = Arc::clone(&ledger);
        let list = concurrently(w, (o.reads / 4).max(1), move |_| {
            let l = Arc::clone(&l);
            async move {
                let rows = l
                    .list_approvals(None, LISTED)
                    .await
                    .map_err(|e| e.to_string())?;
                if rows.len() != LISTED as usize {
                    return Err(format!("list: {} rows, expected {LISTED}", rows.len()));
                }
                Ok(())
            }
        })
        .await?;
        out[format!("workers_{w}")] = json!({
            "consume": consume,
            "intent": intent,
            "overlapped": overlapped,
            "consume_step": consume_step,
            "read": read,
            "list": list,
        });
        if o.url.starts_with("postgres") {
            out[format!("workers_{w}")]["floor"] = postgres_floor(&o.url, w, o.approvals).await?;
        }
    }

    if o.race > 0 {
        out["race"] = race(ledger.as_ref(), &o.url, o.race).await?;
    }
    ledger.close().await;
    println!("{out}");
    Ok(())
}

/// The machine's floor under the consume, measured in the same run: one durable conditional
/// `UPDATE … RETURNING` of a row by its key (what pgbench's single-row update measures), `n` of
/// them over `workers` plain sqlx connections, with no intent row, no read and no ledger code
/// (its thread kept awake for each answer, as the ledger's is).
/// The consume's figures are reported as ratios to it: a slower disk moves both.
async fn postgres_floor(url: &str, workers: usize, n: usize) -> Result<Value> {
    let text = |e: sqlx::Error| format!("floor: {e}");
    // Connected as the ledger connects (plaintext on loopback unless an sslmode is named).
    let options = care_ledger::postgres::connect_options(url).map_err(|e| format!("floor: {e}"))?;
    let pool = PgPoolOptions::new()
        .max_connections(workers as u32)
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .map_err(text)?;
    sqlx::query("DROP TABLE IF EXISTS bench_floor")
        .execute(&pool)
        .await
        .map_err(text)?;
    sqlx::query("CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, status TEXT NOT NULL)")
        .execute(&pool)
        .await
        .map_err(text)?;
    sqlx::query("INSERT INTO bench_floor SELECT g, 'approved' FROM generate_series(1, $1) g")
        .bind(n as i64)
        .execute(&pool)
        .await
        .map_err(text)?;
    // Every connection opened and its statement prepared before the clock starts.
    let warm = pool.clone();
    concurrently(workers, workers * 4, move |_| {
        let pool = warm.clone();
        async move {
            sqlx::query(FLOOR_CONSUME)
                .bind(0_i64)
                .fetch_optional(&pool)
                .await
                .map_err(text)?;
            Ok(())
        }
    })
    .await?;
    let timed = pool.clone();
    let floor = concurrently(workers, n, move |i| {
        let pool = timed.clone();
        async move {
            // Waited for awake like the ledger's statements, so the floor stays like for like.
            care_core::awake::ledger_answer_due();
            sqlx::query(FLOOR_CONSUME)
                .bind(i as i64 + 1)
                .fetch_optional(&pool)
                .await
                .map_err(text)?
                .ok_or("floor: a row was not won")?;
            Ok(())
        }
    })
    .await?;
    sqlx::query("DROP TABLE bench_floor")
        .execute(&pool)
        .await
        .map_err(text)?;
    pool.close().await;
    Ok(floor)
}

/// `n` consumers of one approval, half in each of two child processes, all released at once.
async fn race(ledger: &dyn Ledger, url: &str, n: usize) -> Result<Value> {
    let prefix = format!("race{}", uuid::Uuid::new_v4().simple());
    seed(ledger, url, &prefix, 1).await?;
    let id = format!("{prefix}-1");
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let start = Utc::now().timestamp_millis() + 1500;
    let halves = [n / 2, n - n / 2];
    let children: Vec<_> = halves
        .iter()
        .map(|k| {
            tokio::process::Command::new(&exe)
                .args([RACE_CHILD, url, &id, &k.to_string(), &start.to_string()])
                .output()
        })
        .collect();
    let (mut won, mut consumed, mut other) = (0u64, 0u64, 0u64);
    for child in children {
        let out = child.await.map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "race child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        won += v["won"].as_u64().unwrap_or(0);
        consumed += v["consumed"].as_u64().unwrap_or(0);
        other += v["other"].as_u64().unwrap_or(0);
    }
    let row = ledger
        .approval(&id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("race approval missing")?;
    Ok(json!({
        "consumers": n, "processes": 2, "won": won, "consumed": consumed, "other": other,
        "final_status": row.status.as_str(),
        "exactly_one_winner": won == 1 && consumed == n as u64 - 1 && other == 0,
    }))
}

async fn race_child(args: &[String]) -> Result<()> {
    let [url, id, n, start] = args else {
        return Err("race child: URL ID N START_MS".into());
    };
    let n: usize = n.parse().map_err(|e| format!("{e}"))?;
    let start: i64 = start.parse().map_err(|e| format!("{e}"))?;
    let ledger = open(url).await?;
    let wait = start - Utc::now().timestamp_millis();
    if let Ok(ms) = u64::try_from(wait) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let ledger = Arc::clone(&ledger);
            let id = id.clone();
            tokio::spawn(async move { ledger.consume(&id, ACTION, HASH, "{}").await })
        })
        .collect();
    let (mut won, mut consumed, mut other) = (0u64, 0u64, 0u64);
    for t in tasks {
        match t.await.map_err(|e| e.to_string())? {
            Ok(_) => won += 1,
            Err(ConsumeError::Consumed) => consumed += 1,
            Err(e) => {
                other += 1;
                eprintln!("race child: {e}");
            }
        }
    }
    ledger.close().await;
    println!(
        "{}",
        json!({ "won": won, "consumed": consumed, "other": other })
    );
    Ok(())
}
