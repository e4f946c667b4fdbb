//! Keeping the process's thread awake for a moment while an answer is due. A thread that
//! blocks in `epoll_wait` while it waits (for a client's next request, for a ledger statement's
//! answer) lets the VM halt its CPU, and waking a halted CPU costs tens of microseconds on every
//! hand-off (bench/README.md measures it). Whoever expects an answer soon marks [`process`]'s
//! activity with how long it may take; until then [`keep_awake`], where a session runs it, polls
//! the reactor without blocking and yields the CPU to anything else runnable on it; after that
//! the thread sleeps in the kernel as before. An idle process costs nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long after a client's last byte the thread stays awake: its next request in a tight
/// loop comes within that.
pub const AFTER_CLIENT_BYTE: Duration = Duration::from_micros(300);

/// How long after a ledger statement is sent the thread stays awake for its answer: a local
/// Postgres answers a durable commit in 0.2–0.7 ms on this project's VMs (`bench/vms.md`), a
/// read in about 0.1 ms; an answer later than this is waited for asleep.
pub const FOR_LEDGER_ANSWER: Duration = Duration::from_millis(1);

/// Until when the thread stays awake, and a wake-up for the task that waits for a mark.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    /// Nanoseconds after `started` until which an answer is due; 0 before any mark.
    until: AtomicU64,
    marked: Notify,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            until: AtomicU64::new(0),
            marked: Notify::new(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Something is due within `window` from now: stay awake until then (a later mark that
    /// ends sooner does not shorten an earlier one).
    pub fn due_within(&self, window: Duration) {
        let window = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        self.until
            .fetch_max(self.now().saturating_add(window), Ordering::Relaxed);
        self.marked.notify_one();
    }

    /// Whether something marked is still due.
    pub fn due(&self) -> bool {
        self.now() < self.until.load(Ordering::Relaxed)
    }
}

/// The process's activity: stdio marks it for each byte, the ledger for each statement sent.
pub fn process() -> &'static Arc<Activity> {
    static PROCESS: LazyLock<Arc<Activity>> = LazyLock::new(Activity::new);
    &PROCESS
}

/// A ledger statement was sent: its answer is due within [`FOR_LEDGER_ANSWER`]. A no-op in
/// effect where no [`keep_awake`] runs (the HTTP transport's worker threads).
pub fn ledger_answer_due() {
    process().due_within(FOR_LEDGER_ANSWER);
}

/// Polls the reactor while something marked on `activity` is due; sleeps until the next mark
/// otherwise. Runs until aborted (the session's end); on a current-thread runtime, as a task
/// of the thread to keep awake.
pub async fn keep_awake(activity: Arc<Activity>) {
    loop {
        if activity.due() {
            // Others runnable on this CPU (the client, a Postgres backend) go first.
            std::thread::yield_now();
            tokio::task::yield_now().await;
        } else {
            activity.marked.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_lasts_its_window_and_a_shorter_one_does_not_cut_it() {
        let activity = Activity::new();
        assert!(!activity.due(), "nothing marked yet");

        activity.due_within(Duration::from_millis(200));
        activity.due_within(Duration::from_micros(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(activity.due(), "the longer window still runs");

        std::thread::sleep(Duration::from_millis(250));
        assert!(!activity.due(), "the window lapses");
    }

    /// This thread's user plus system CPU time, in clock ticks (`/proc/thread-self/stat`
    /// fields 14 and 15, counted after the command name's closing parenthesis).
    fn thread_cpu_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        let after_name = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
        match (tick(11), tick(12)) {
            (Some(user), Some(system)) => user + system,
            _ => panic!("unreadable /proc/thread-self/stat: {stat}"),
        }
    }

    /// CPU ticks this thread spends while the runtime sleeps `for_ms` (keep_awake beside it).
    async fn ticks_over(for_ms: u64) -> u64 {
        let before = thread_cpu_ticks();
        tokio::time::sleep(Duration::from_millis(for_ms)).await;
        thread_cpu_ticks() - before
    }

    #[tokio::test(flavor = "current_thread")]
    async fn keep_awake_spends_cpu_only_while_something_is_due() {
        let activity = Activity::new();
        let awake = tokio::spawn(keep_awake(Arc::clone(&activity)));
        let before_any_mark = ticks_over(300).await;

        activity.due_within(Duration::from_millis(300));
        let while_due = ticks_over(300).await;

        tokio::time::sleep(Duration::from_millis(50)).await;
        let after_the_window = ticks_over(300).await;
        awake.abort();

        // A clock tick is 10 ms: a thread kept awake for 300 ms spends about 30 of them.
        assert!(
            before_any_mark <= 3,
            "asleep before any mark: {before_any_mark} ticks"
        );
        assert!(
            while_due >= 10,
            "kept awake while due: only {while_due} ticks"
        );
        assert!(
            after_the_window <= 3,
            "asleep after the window: {after_the_window} ticks"
        );
    }
}
