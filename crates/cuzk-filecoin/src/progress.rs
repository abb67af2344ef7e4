//! A ticker that logs that long work (parameter generation, PCE recording) is still running.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Logs "still <what>" every `every` until dropped.
#[derive(Debug)]
pub(crate) struct Ticker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(what: String, every: Duration) -> Ticker {
        let (stop, stopped) = mpsc::channel::<()>();
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("cuzk-progress".into())
            .spawn(move || loop {
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {
                        tracing::info!(elapsed_s = start.elapsed().as_secs(), "still {what}")
                    }
                    // Stopped, or the owner is gone.
                    _ => return,
                }
            })
            // Without the thread there are no progress lines; the work itself goes on.
            .ok();
        Ticker {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            // The thread only logs; a panic there must not mask the work's outcome.
            let _ = t.join();
        }
    }
}
