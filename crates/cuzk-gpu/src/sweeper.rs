//! The idle-eviction thread: every so often, evicts parameters no proof has used for the
//! configured time (never preloaded ones, never ones a partition holds).

use crate::backend::Inner;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Weak;
use std::thread::JoinHandle;
use std::time::Duration;

/// The running thread; dropping it stops the thread and waits for it.
pub(crate) struct Sweeper {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Sweeper {
    /// Starts sweeping `inner`'s devices for parameters idle `idle` or longer.
    pub fn start(inner: Weak<Inner>, idle: Duration) -> std::io::Result<Sweeper> {
        let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("cuzk-gpu-evict".into())
            .spawn(move || loop {
                match stopped.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => match inner.upgrade() {
                        Some(inner) => inner.evict_idle(idle),
                        None => return,
                    },
                    // A message or a dropped sender: the backend is going away.
                    _ => return,
                }
            })?;
        Ok(Sweeper {
            stop: Some(stop),
            handle: Some(handle),
        })
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.handle.take() {
            // The thread only sweeps; if it panicked there is nothing to clean up.
            let _ = handle.join();
        }
    }
}
