//! CPU-heavy request work — rendering a chat template, tokenizing a long prompt — run
//! off the async runtime's worker threads, with back-pressure.
//!
//! Why: tokio runs every connection's futures on one worker per core. A render that
//! takes 200 ms (a 300k-token prompt, or a request template that burns its fuel) inline
//! on a worker holds every stream scheduled there for 200 ms. [`Offload`] sends work
//! above a size threshold to tokio's blocking pool, at most `max_concurrent` at a
//! time: a flood of long prompts waits for a permit (asynchronously, holding no thread)
//! instead of starving the streams, and a request whose client went away while it
//! waited is dropped before its work starts (cancellation by drop). Small work runs
//! inline: handing a 20 µs render to another thread would cost more than it saves.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::error::ApiError;

/// Where CPU-heavy request work runs. Cheap to clone (the permits are shared).
#[derive(Debug, Clone)]
pub struct Offload {
    permits: Arc<Semaphore>,
    inline_below: usize,
}

/// The defaults of [`Offload`].
pub mod defaults {
    /// Work estimated below this many bytes of input runs inline on the caller's
    /// thread.
    pub const INLINE_BELOW_BYTES: usize = 16 * 1024;
}

impl Default for Offload {
    /// One blocking thread per core; work below 16 KiB inline.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        Self::new(cores, defaults::INLINE_BELOW_BYTES)
    }
}

impl Offload {
    /// At most `max_concurrent` offloaded tasks at a time (at least one); work whose
    /// estimated size is below `inline_below` bytes runs inline.
    pub fn new(max_concurrent: usize, inline_below: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            inline_below,
        }
    }

    /// Everything inline (no thread hand-off): for callers without a tokio runtime's
    /// blocking pool, or tests.
    pub fn inline() -> Self {
        Self::new(1, usize::MAX)
    }

    /// The work estimate of a JSON request body not parsed yet: its length, or
    /// unbounded (always offloaded) when it may carry a request chat template, whose
    /// render can burn its whole fuel budget however short it is.
    pub fn body_size(body: &[u8]) -> usize {
        if memchr::memmem::find(body, b"chat_template").is_some() {
            usize::MAX
        } else {
            body.len()
        }
    }

    /// Runs `work`, whose input is about `size` bytes: inline when small, else on
    /// the blocking pool once a permit is free. A panic in `work` becomes a 500.
    pub async fn run<T, F>(&self, size: usize, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        if size < self.inline_below {
            return Ok(work());
        }
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|e| ApiError::internal(format!("request processing failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_work_runs_off_the_worker_and_small_work_inline() {
        let offload = Offload::new(1, 100);
        let caller = std::thread::current().id();
        let small = offload.run(10, std::thread::current).await.unwrap();
        assert_eq!(small.id(), caller);
        let large = offload.run(1000, std::thread::current).await.unwrap();
        assert_ne!(large.id(), caller);
    }

    #[test]
    fn a_short_body_with_a_request_template_counts_as_large() {
        let template =
            br#"{"messages": [], "chat_template": "{% for i in range(9) %}{% endfor %}"}"#;
        assert_eq!(Offload::body_size(template), usize::MAX);
        let plain = br#"{"messages": [{"role": "user", "content": "Hi"}]}"#;
        assert_eq!(Offload::body_size(plain), plain.len());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_is_an_internal_error() {
        let offload = Offload::new(1, 0);
        let error = offload
            .run(1, || -> u32 { panic!("boom") })
            .await
            .unwrap_err();
        assert_eq!(error.status, 500);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_waiting_for_a_permit_is_cancelled_by_drop() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let offload = Offload::new(1, 0);
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let (started, running) = tokio::sync::oneshot::channel::<()>();
        let busy = tokio::spawn({
            let offload = offload.clone();
            async move {
                offload
                    .run(1, move || {
                        let _ = started.send(());
                        hold.recv().ok()
                    })
                    .await
            }
        });
        running.await.unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let waiting = offload.run(1, {
            let ran = ran.clone();
            move || ran.store(true, Ordering::SeqCst)
        });
        // The only permit is held: the second task waits, and is dropped while waiting.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), waiting)
                .await
                .is_err()
        );
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert!(!ran.load(Ordering::SeqCst));
    }
}
