//! Postgres connections lent one statement at a time without a ping on their return.
//!
//! sqlx's pool tests every connection as it comes back (`return_to_pool` sends a `Sync` and
//! waits for `ReadyForQuery`): one more round trip per statement, which Postgres serves
//! with a wake-up of its backend. Under `strace` the ledger benchmark sent 4.75 messages per
//! consumed approval for its 2.2 statements. [`Leases`] keeps the connections it took from
//! sqlx's pool and lends them out itself: a statement that ran to its end (an answer or a
//! database error, after which the connection is in step) gives its connection straight back;
//! one whose future was dropped midway, or that failed on the wire, hands it to sqlx, whose
//! return path tests it and closes it if broken. A connection idle for a while is pinged
//! before it is lent again, so one killed by an outage is replaced instead of failing a call;
//! so is every idle connection after any statement failed on the wire or with a `FATAL`
//! error (a server shutting down says `FATAL` on each connection before closing it: such a
//! connection answers once, in step, and is dead after).
//! Transactions stay on sqlx's pool (`PostgresLedger::begin_write`), which is sized above
//! the leases so they never wait for a connection held here.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{
    PgConnection, PgDatabaseError, PgQueryResult, PgRow, PgSeverity, PgStatement, PgTypeInfo,
};
use sqlx::{Describe, Either, Execute, Executor, PgPool, Postgres, SqlStr};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Connections lent one statement at a time, taken from `pool` as needed.
#[derive(Debug)]
pub(crate) struct Leases {
    pool: PgPool,
    /// Connections not lent out, the most recently returned last.
    idle: Mutex<Vec<Idle>>,
    /// One permit per connection that may be lent at once.
    permits: Semaphore,
    acquire_timeout: Duration,
    ping_after: Duration,
}

#[derive(Debug)]
struct Idle {
    conn: PoolConnection<Postgres>,
    since: Instant,
    /// Another connection failed since this one came back: it may be dead too.
    suspect: bool,
}

/// One lent connection; it goes back to the idle list only if [`Lease::finished`] says the
/// statement ran to its end.
struct Lease<'a> {
    conn: Option<PoolConnection<Postgres>>,
    home: &'a Leases,
    in_step: bool,
    _permit: SemaphorePermit<'a>,
}

impl Leases {
    /// At most `lent` connections from `pool` at once (the pool must allow more, for its
    /// transactions); a connection idle for `ping_after` is pinged before its next statement.
    pub(crate) fn new(
        pool: PgPool,
        lent: usize,
        acquire_timeout: Duration,
        ping_after: Duration,
    ) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(lent),
            acquire_timeout,
            ping_after,
        }
    }

    /// The pool the connections come from (migrations, transactions).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Returns every idle connection to sqlx and closes its pool; nothing is lent afterwards.
    pub(crate) async fn close(&self) {
        self.permits.close();
        let idle = std::mem::take(&mut *self.idle());
        drop(idle);
        self.pool.close().await;
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Idle>> {
        // The list is only pushed and popped under the lock: a panic cannot leave it torn.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn lease(&self) -> Result<Lease<'_>, sqlx::Error> {
        let permit = tokio::time::timeout(self.acquire_timeout, self.permits.acquire())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        loop {
            let next = self.idle().pop();
            let Some(Idle {
                mut conn,
                since,
                suspect,
            }) = next
            else {
                let conn = tokio::time::timeout(self.acquire_timeout, self.pool.acquire())
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)??;
                return Ok(self.lend(conn, permit));
            };
            let fresh = !suspect && since.elapsed() < self.ping_after;
            if fresh || sqlx::Connection::ping(&mut *conn).await.is_ok() {
                return Ok(self.lend(conn, permit));
            }
            // Dead after an idle spell: sqlx's return path closes it; try the next.
        }
    }

    fn lend<'a>(
        &'a self,
        conn: PoolConnection<Postgres>,
        permit: SemaphorePermit<'a>,
    ) -> Lease<'a> {
        // The statement goes out now and its answer is due within a round trip (or a
        // durable commit): the caller's thread waits for it awake.
        care_core::awake::ledger_answer_due();
        Lease {
            conn: Some(conn),
            home: self,
            in_step: false,
            _permit: permit,
        }
    }
}

impl Lease<'_> {
    fn conn(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        self.conn.as_deref_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// Records how the statement ended.
    fn finished<T>(&mut self, outcome: &Result<T, sqlx::Error>) {
        self.in_step = in_step(outcome);
    }
}

/// An answer, or an `ERROR` Postgres sent (the connection then reads on to `ReadyForQuery`
/// before its next statement), leaves the connection in step. A `FATAL` or `PANIC` error is
/// the server's last word on that connection (a shutdown, a terminated backend), and any
/// other failure (the wire, a decode) may leave it out of step.
fn in_step<T>(outcome: &Result<T, sqlx::Error>) -> bool {
    match outcome {
        Ok(_) => true,
        Err(sqlx::Error::Database(e)) => e
            .try_downcast_ref::<PgDatabaseError>()
            .is_some_and(|pg| matches!(pg.severity(), PgSeverity::Error)),
        Err(_) => false,
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if !self.in_step {
            // A failure on one connection (an outage, a restart) usually killed the others.
            for idle in self.home.idle().iter_mut() {
                idle.suspect = true;
            }
        } else if !self.home.permits.is_closed() {
            self.home.idle().push(Idle {
                conn,
                since: Instant::now(),
                suspect: false,
            });
        }
        // Otherwise `conn` drops here: sqlx tests it on its way back and closes it if broken.
    }
}

impl<'p> Executor<'p> for &'p Leases {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        // The results are read to the end before any is yielded, so the connection is back
        // in the idle list before the caller sees them (every caller reads them all anyway).
        let all = async move {
            let mut lease = match self.lease().await {
                Ok(lease) => lease,
                Err(e) => return vec![Err(e)],
            };
            let results: Vec<_> = match lease.conn() {
                Ok(conn) => conn.fetch_many(query).collect().await,
                Err(e) => vec![Err(e)],
            };
            lease.in_step = results.iter().all(in_step);
            results
        };
        Box::pin(futures::stream::once(all).flat_map(futures::stream::iter))
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let row = lease.conn()?.fetch_optional(query).await;
            lease.finished(&row);
            row
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'p: 'e,
    {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let statement = lease.conn()?.prepare_with(sql, parameters).await;
            lease.finished(&statement);
            statement
        })
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>>
    where
        'p: 'e,
    {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let described = lease.conn()?.describe(sql).await;
            lease.finished(&described);
            described
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use std::str::FromStr;
    use std::time::Duration;

    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    use super::Leases;
    use crate::test_support::fresh_postgres_db;

    const PING_AFTER: Duration = Duration::from_millis(100);

    /// One connection lent at a time, over a pool of two.
    fn one_lent(url: &str) -> Leases {
        let options = PgConnectOptions::from_str(url).expect("test URL");
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_lazy_with(options);
        Leases::new(pool, 1, Duration::from_secs(2), PING_AFTER)
    }

    fn idle(leases: &Leases) -> usize {
        leases.idle().len()
    }

    async fn backend_pid(leases: &Leases) -> i32 {
        sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(leases)
            .await
            .expect("pid")
    }

    #[tokio::test]
    async fn a_finished_statement_gives_its_connection_straight_back() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = one_lent(&url);
        let first = backend_pid(&leases).await;
        // Back in the idle list the moment the answer is in: no round trip after it (sqlx's
        // pool returns a connection only after its ping's answer).
        assert_eq!(idle(&leases), 1);
        assert_eq!(backend_pid(&leases).await, first);
        let rows: Vec<i32> = sqlx::query_scalar("SELECT generate_series(1, 3)")
            .fetch_all(&leases)
            .await
            .expect("rows");
        assert_eq!(rows, [1, 2, 3]);
        assert_eq!(idle(&leases), 1);
        leases.close().await;
    }

    #[tokio::test]
    async fn a_database_error_leaves_the_connection_in_step() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = one_lent(&url);
        let first = backend_pid(&leases).await;
        let failed = sqlx::query_scalar::<_, i32>("SELECT 1 / 0")
            .fetch_one(&leases)
            .await;
        assert!(
            matches!(failed, Err(sqlx::Error::Database(_))),
            "{failed:?}"
        );
        assert_eq!(idle(&leases), 1);
        let seven: i32 = sqlx::query_scalar("SELECT 7")
            .fetch_one(&leases)
            .await
            .expect("the next answer");
        assert_eq!(seven, 7);
        assert_eq!(backend_pid(&leases).await, first);
        leases.close().await;
    }

    #[tokio::test]
    async fn a_statement_dropped_midway_never_hands_its_answer_to_the_next() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = one_lent(&url);
        backend_pid(&leases).await;
        let cancelled = tokio::time::timeout(
            Duration::from_millis(50),
            sqlx::query_scalar::<_, i32>("SELECT 41 FROM pg_sleep(0.3)").fetch_one(&leases),
        )
        .await;
        assert!(cancelled.is_err(), "the statement should still be running");
        // Not lent again as it is: its late answer (41) is still on the wire.
        assert_eq!(idle(&leases), 0);
        let answer: i32 = sqlx::query_scalar("SELECT 42")
            .fetch_one(&leases)
            .await
            .expect("the next answer");
        assert_eq!(answer, 42);
        leases.close().await;
    }

    #[tokio::test]
    async fn a_connection_killed_while_idle_is_replaced() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = one_lent(&url);
        let victim = backend_pid(&leases).await;
        let admin = one_lent(&url);
        let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(victim)
            .fetch_one(&admin)
            .await
            .expect("terminate");
        assert!(killed);
        tokio::time::sleep(PING_AFTER + Duration::from_millis(50)).await;
        let replacement = backend_pid(&leases).await;
        assert_ne!(replacement, victim);
        admin.close().await;
        leases.close().await;
    }

    /// `lent` connections over a pool of `lent + 1`, pinged only after a long idle spell, so
    /// a test sees what happens without the idle ping.
    fn lent_without_idle_ping(url: &str, lent: usize) -> Leases {
        let options = PgConnectOptions::from_str(url).expect("test URL");
        let pool = PgPoolOptions::new()
            .max_connections(lent as u32 + 1)
            .connect_lazy_with(options);
        Leases::new(pool, lent, Duration::from_secs(2), Duration::from_secs(600))
    }

    async fn terminate(admin: &Leases, pids: &[i32]) {
        for pid in pids {
            let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .fetch_one(admin)
                .await
                .expect("terminate");
            assert!(killed);
        }
        // The backends' FATAL notices and end of stream are on the wire before the next use.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// As a Postgres shutdown does: the server says FATAL on the connection, then closes it.
    /// The statement that reads the FATAL fails; the connection must not be lent again.
    #[tokio::test]
    async fn a_connection_that_heard_fatal_is_not_lent_again() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = lent_without_idle_ping(&url, 1);
        let admin = one_lent(&url);
        let victim = backend_pid(&leases).await;
        terminate(&admin, &[victim]).await;
        let first = sqlx::query_scalar::<_, i32>("SELECT 1")
            .fetch_one(&leases)
            .await;
        assert!(first.is_err(), "the dead connection answered: {first:?}");
        let next = backend_pid(&leases).await;
        assert_ne!(next, victim);
        admin.close().await;
        leases.close().await;
    }

    /// An outage kills every connection at once: after one fails, the others still idle are
    /// pinged before they are lent, however recently they came back.
    #[tokio::test]
    async fn one_failure_makes_every_idle_connection_pinged() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = lent_without_idle_ping(&url, 2);
        let admin = one_lent(&url);
        let pid_after_a_pause = "SELECT pg_backend_pid() FROM pg_sleep(0.05)";
        let (a, b) = tokio::join!(
            sqlx::query_scalar::<_, i32>(pid_after_a_pause).fetch_one(&leases),
            sqlx::query_scalar::<_, i32>(pid_after_a_pause).fetch_one(&leases),
        );
        let victims = [a.expect("first pid"), b.expect("second pid")];
        assert_ne!(victims[0], victims[1]);
        assert_eq!(idle(&leases), 2);
        terminate(&admin, &victims).await;
        let first = sqlx::query_scalar::<_, i32>("SELECT 1")
            .fetch_one(&leases)
            .await;
        assert!(first.is_err(), "a dead connection answered: {first:?}");
        let next = backend_pid(&leases).await;
        assert!(!victims.contains(&next), "lent a dead connection");
        admin.close().await;
        leases.close().await;
    }

    #[tokio::test]
    async fn a_closed_set_lends_nothing_and_closes_its_pool() {
        let (url, _db) = fresh_postgres_db().await;
        let leases = one_lent(&url);
        backend_pid(&leases).await;
        tokio::time::timeout(Duration::from_secs(5), leases.close())
            .await
            .expect("close returns although a connection sat idle");
        assert!(leases.pool().is_closed());
        let refused = sqlx::query("SELECT 1").execute(&leases).await;
        assert!(
            matches!(refused, Err(sqlx::Error::PoolClosed)),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn waits_for_a_lent_connection_up_to_the_timeout() {
        let (url, _db) = fresh_postgres_db().await;
        let options = PgConnectOptions::from_str(&url).expect("test URL");
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_lazy_with(options);
        let leases = Leases::new(pool, 1, Duration::from_millis(100), PING_AFTER);
        // Connected before the race: the 100 ms also bound a new connection's setup, which a
        // loaded machine can exceed, and then the slow statement would be the one timed out.
        sqlx::query("SELECT 1")
            .execute(&leases)
            .await
            .expect("the first connection");
        let slow = sqlx::query("SELECT pg_sleep(0.5)").execute(&leases);
        let waiting = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            sqlx::query("SELECT 1").execute(&leases).await
        };
        let (slow, waited) = tokio::join!(slow, waiting);
        slow.expect("the slow statement");
        assert!(
            matches!(waited, Err(sqlx::Error::PoolTimedOut)),
            "{waited:?}"
        );
        leases.close().await;
    }
}
