//! The per-request queue between the output task and a request's `OutputStream`.
//!
//! A general channel costs more than this shape needs: tokio's mpsc allocates a new block
//! every 32 items, so a long request allocates all along. A mailbox is one lock around a
//! ring buffer that keeps its allocation, and it wakes the consumer only when it waits.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::shared::StreamItem;

#[derive(Default)]
struct State {
    items: VecDeque<StreamItem>,
    waker: Option<Waker>,
    /// The sending side is gone: once `items` is drained the stream ends.
    closed: bool,
}

/// The shared queue.
#[derive(Default)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
}

impl Mailbox {
    /// A new mailbox and its sending side.
    pub fn new() -> (Sender, Arc<Mailbox>) {
        let mailbox = Arc::new(Mailbox::default());
        (Sender(mailbox.clone()), mailbox)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next item, `None` once the sender is gone and everything was taken.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<StreamItem>> {
        let mut state = self.lock();
        if let Some(item) = state.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        match &state.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// The sending side; dropping it ends the stream after the queued items.
pub(crate) struct Sender(Arc<Mailbox>);

impl Sender {
    /// Queues an item and wakes the consumer if it waits.
    pub fn send(&self, item: StreamItem) {
        let waker = {
            let mut state = self.0.lock();
            state.items.push_back(item);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.0.lock();
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::EngineCoreOutput;
    use futures::StreamExt;
    use futures::stream::poll_fn;

    #[tokio::test]
    async fn items_arrive_in_order_then_the_stream_ends() {
        let (tx, mailbox) = Mailbox::new();
        let reader = tokio::spawn(async move {
            let mut ids = Vec::new();
            let mut stream = poll_fn(|cx| mailbox.poll_next(cx));
            while let Some(item) = stream.next().await {
                ids.push(item.unwrap().request_id);
            }
            ids
        });
        for i in 0..100 {
            tx.send(Ok(EngineCoreOutput {
                request_id: i.to_string(),
                ..Default::default()
            }));
            if i % 7 == 0 {
                tokio::task::yield_now().await;
            }
        }
        drop(tx);
        let ids = reader.await.unwrap();
        assert_eq!(ids, (0..100).map(|i| i.to_string()).collect::<Vec<_>>());
    }
}
