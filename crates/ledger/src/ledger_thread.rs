//! Stopping a ledger's background thread (the SQLite writer, the checkpointer): its channel's
//! sender dropped, so the thread finishes what it was given, then joined off the runtime.

use std::sync::mpsc::Sender;
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

/// A running thread: the sender of its input (dropping it tells the thread to finish) and its
/// handle; `None` before the thread starts and after it stopped.
pub(crate) type Running<T> = Mutex<Option<(Sender<T>, JoinHandle<()>)>>;

/// Tells the thread to finish and waits for it, without blocking a runtime worker.
pub(crate) async fn stop<T: Send + 'static>(running: &Running<T>) {
    let taken = running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some((sender, thread)) = taken {
        drop(sender);
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}
