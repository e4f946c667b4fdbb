//! Concurrent single-row Postgres statements of one kind (approval reads, consumes) gathered
//! into one statement per round trip.
//!
//! A caller alone runs its statement at once, as if there were no batcher. Callers that arrive
//! while [`Batcher::max_running`] batches are on the wire wait in a queue, and the next batch
//! takes all of them (up to `max_batch`): one round trip, one plan execution and, for writes,
//! one commit for all, where each had paid its own. Under load that is most of the database's
//! and this process's work per call (bench/: the ledger benchmark at 8 and 32 workers).
//!
//! Batches run on tasks of their own: a caller that gives up (its future dropped) never takes
//! the other callers' answers with it, and a statement that began always reports its outcome
//! to whoever still waits. A panic in a batch answers its callers `Unavailable`.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use care_core::ledger::LedgerError;
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::oneshot;

/// Runs one batch and answers each request, in the order given.
pub(crate) type RunBatch<Req, Ans> =
    Box<dyn Fn(Vec<Req>) -> BoxFuture<'static, Result<Vec<Ans>, LedgerError>> + Send + Sync>;

type Answer<Ans> = Result<Ans, LedgerError>;

/// A queue of requests and the tasks that run them in batches.
pub(crate) struct Batcher<Req, Ans> {
    run: RunBatch<Req, Ans>,
    /// Batches on the wire at once; callers beyond them queue for the next batch.
    max_running: usize,
    /// Requests in one batch at most.
    max_batch: usize,
    state: Mutex<State<Req, Ans>>,
    /// The most requests one batch has held (tests see that batching happened).
    largest: AtomicUsize,
}

struct State<Req, Ans> {
    queue: VecDeque<(Req, oneshot::Sender<Answer<Ans>>)>,
    running: usize,
}

impl<Req, Ans> std::fmt::Debug for Batcher<Req, Ans> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("max_running", &self.max_running)
            .field("max_batch", &self.max_batch)
            .finish_non_exhaustive()
    }
}

impl<Req, Ans> Batcher<Req, Ans> {
    fn state(&self) -> MutexGuard<'_, State<Req, Ans>> {
        // Only pushes, drains and counts happen under the lock: a panic cannot tear it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<Req: Send + 'static, Ans: Send + 'static> Batcher<Req, Ans> {
    pub(crate) fn new(max_running: usize, max_batch: usize, run: RunBatch<Req, Ans>) -> Self {
        Batcher {
            run,
            max_running: max_running.max(1),
            max_batch: max_batch.max(1),
            state: Mutex::new(State {
                queue: VecDeque::new(),
                running: 0,
            }),
            largest: AtomicUsize::new(0),
        }
    }

    /// The most requests one batch has held so far.
    #[cfg(test)]
    pub(crate) fn largest_batch(&self) -> usize {
        self.largest.load(Ordering::Relaxed)
    }

    /// The answer to `request`, from the batch it went out in.
    pub(crate) async fn submit(self: &Arc<Self>, request: Req) -> Answer<Ans> {
        let (tx, rx) = oneshot::channel();
        let start_runner = {
            let mut state = self.state();
            state.queue.push_back((request, tx));
            let start = state.running < self.max_running;
            if start {
                state.running += 1;
            }
            start
        };
        if start_runner {
            tokio::spawn(Arc::clone(self).run_queue());
        }
        rx.await.unwrap_or_else(|_| {
            Err(LedgerError::Unavailable(
                "the batch holding this statement ended without an answer".to_owned(),
            ))
        })
    }

    /// Runs batches until the queue is empty.
    async fn run_queue(self: Arc<Self>) {
        let mut runner = Runner {
            batcher: Arc::clone(&self),
            finished: false,
        };
        loop {
            let batch: Vec<_> = {
                let mut state = self.state();
                let n = state.queue.len().min(self.max_batch);
                if n == 0 {
                    // Under the lock that saw the queue empty: a caller that queues after
                    // this starts a runner of its own.
                    state.running -= 1;
                    runner.finished = true;
                    return;
                }
                state.queue.drain(..n).collect()
            };
            let (requests, waiting): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let expected = requests.len();
            self.largest.fetch_max(expected, Ordering::Relaxed);
            let answers = AssertUnwindSafe((self.run)(requests)).catch_unwind().await;
            let answers = match answers {
                Ok(Ok(answers)) if answers.len() == expected => answers,
                Ok(Ok(_)) => {
                    tracing::error!("a batch answered another number of requests than it ran");
                    fail_all(waiting, "a batch's answers did not match its requests");
                    continue;
                }
                Ok(Err(e)) => {
                    for tx in waiting {
                        let _ = tx.send(Err(e.clone()));
                    }
                    continue;
                }
                Err(_) => {
                    tracing::error!("a batched ledger statement panicked");
                    fail_all(waiting, "a batched ledger statement panicked");
                    continue;
                }
            };
            for (tx, answer) in waiting.into_iter().zip(answers) {
                // A caller that gave up dropped its receiver; its answer has nowhere to go.
                let _ = tx.send(Ok(answer));
            }
        }
    }
}

/// Held by a running queue task: if the task is dropped before the queue is empty (its
/// runtime shut down), the count is given back, and when no task is left to run them the
/// waiting callers are answered instead of left waiting for ever.
struct Runner<Req, Ans> {
    batcher: Arc<Batcher<Req, Ans>>,
    /// Set when the task gave its count back itself, the queue empty.
    finished: bool,
}

impl<Req, Ans> Drop for Runner<Req, Ans> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let orphans: Vec<_> = {
            let mut state = self.batcher.state();
            state.running = state.running.saturating_sub(1);
            if state.running == 0 {
                state.queue.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        // Dropping the senders answers the callers `Unavailable` (see `submit`).
        drop(orphans);
    }
}

fn fail_all<Ans>(waiting: Vec<oneshot::Sender<Answer<Ans>>>, why: &str) {
    for tx in waiting {
        let _ = tx.send(Err(LedgerError::Unavailable(why.to_owned())));
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The sizes of the batches a test batcher ran, in order.
    type Sizes = Arc<Mutex<Vec<usize>>>;

    /// A batcher whose batches take `delay` and answer each request doubled.
    fn doubling(
        max_running: usize,
        max_batch: usize,
        delay: Duration,
    ) -> (Arc<Batcher<u32, u32>>, Sizes) {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&sizes);
        let run: RunBatch<u32, u32> = Box::new(move |requests: Vec<u32>| {
            seen.lock().unwrap().push(requests.len());
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(requests.iter().map(|r| r * 2).collect())
            })
        });
        (Arc::new(Batcher::new(max_running, max_batch, run)), sizes)
    }

    #[tokio::test]
    async fn a_caller_alone_goes_out_alone() {
        let (batcher, sizes) = doubling(1, 64, Duration::ZERO);
        for i in 0..3 {
            assert_eq!(batcher.submit(i).await.unwrap(), i * 2);
        }
        assert_eq!(*sizes.lock().unwrap(), [1, 1, 1]);
    }

    #[tokio::test]
    async fn callers_that_wait_go_out_together_each_with_its_own_answer() {
        let (batcher, sizes) = doubling(1, 64, Duration::from_millis(30));
        let b = Arc::clone(&batcher);
        let first = tokio::spawn(async move { b.submit(100).await });
        // The first is on the wire; the next ten queue behind it.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let answers = futures::future::join_all((0..10).map(|i| batcher.submit(i))).await;
        let answers: Vec<u32> = answers.into_iter().map(Result::unwrap).collect();
        assert_eq!(answers, (0..10).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(first.await.unwrap().unwrap(), 200);
        assert_eq!(*sizes.lock().unwrap(), [1, 10]);
    }

    #[tokio::test]
    async fn batches_are_capped_and_run_side_by_side_up_to_the_limit() {
        let (batcher, sizes) = doubling(2, 4, Duration::from_millis(20));
        let answers = futures::future::join_all((0..10).map(|i| batcher.submit(i))).await;
        let answers: Vec<u32> = answers.into_iter().map(Result::unwrap).collect();
        assert_eq!(answers, (0..10).map(|i| i * 2).collect::<Vec<_>>());
        // Two runners take four each, then one takes the rest.
        assert_eq!(*sizes.lock().unwrap(), [4, 4, 2]);
        assert_eq!(batcher.state().running, 0);
    }

    #[tokio::test]
    async fn a_failed_batch_fails_each_of_its_callers_and_the_next_batch_runs() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let run: RunBatch<u32, u32> = Box::new(move |requests: Vec<u32>| {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                if first {
                    Err(LedgerError::Unavailable("down".into()))
                } else {
                    Ok(requests)
                }
            })
        });
        let batcher = Arc::new(Batcher::new(1, 64, run));
        let (a, b) = tokio::join!(batcher.submit(1), batcher.submit(2));
        assert!(matches!(a, Err(LedgerError::Unavailable(_))), "{a:?}");
        assert!(matches!(b, Err(LedgerError::Unavailable(_))), "{b:?}");
        assert_eq!(batcher.submit(3).await.unwrap(), 3);
    }

    #[tokio::test]
    async fn a_panicking_batch_answers_unavailable_and_the_batcher_goes_on() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let run: RunBatch<u32, u32> = Box::new(move |requests: Vec<u32>| {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                assert!(!first, "the first batch panics");
                Ok(requests)
            })
        });
        let batcher = Arc::new(Batcher::new(1, 64, run));
        let failed = batcher.submit(1).await;
        assert!(
            matches!(failed, Err(LedgerError::Unavailable(_))),
            "{failed:?}"
        );
        assert_eq!(batcher.submit(2).await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_caller_that_gives_up_leaves_the_others_their_answers() {
        let (batcher, _) = doubling(1, 64, Duration::from_millis(30));
        let first = batcher.submit(1);
        let (gave_up, second) = tokio::join!(
            tokio::time::timeout(Duration::from_millis(5), batcher.submit(7)),
            async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                batcher.submit(8).await
            }
        );
        assert!(gave_up.is_err());
        assert_eq!(second.unwrap(), 16);
        assert_eq!(first.await.unwrap(), 2);
    }

    #[test]
    fn callers_left_waiting_when_the_runtime_stops_are_answered() {
        let (batcher, _) = doubling(1, 64, Duration::from_secs(3600));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // The first batch never ends; the second caller queues behind it.
        let queued = runtime.block_on(async {
            let b = Arc::clone(&batcher);
            tokio::spawn(async move { b.submit(1).await });
            tokio::task::yield_now().await;
            let b = Arc::clone(&batcher);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let other = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = tx.send(other.block_on(b.submit(2)));
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
            rx
        });
        drop(runtime);
        let answer = queued
            .recv_timeout(Duration::from_secs(5))
            .expect("the queued caller was answered");
        assert!(
            matches!(answer, Err(LedgerError::Unavailable(_))),
            "{answer:?}"
        );
        assert_eq!(batcher.state().running, 0);
    }
}
