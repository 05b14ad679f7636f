//! The per-request queue between the output task and a request's `OutputStream`.
//!
//! A general channel costs more than this shape needs: tokio's mpsc allocates a new block
//! every 32 items, so a long request allocates all along. A mailbox is one lock around a
//! ring buffer that keeps its allocation, and it wakes the consumer only when it waits.
//!
//! Outputs that carry nothing but tokens (the common case) queue as bare token runs, and
//! a run that arrives while the previous one is still queued is appended to it, as vLLM's
//! `RequestOutputCollector` merges the outputs of a consumer that lags: under load the
//! consumer is woken once for all that arrived, and takes one output for them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::shared::StreamItem;
use super::stream::WeightVersionSpan;
use crate::protocol::FinishReason;

/// What a mailbox holds.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// Outputs with only tokens (and maybe a finish reason), merged while queued. The
    /// stream turns a run into an `EngineCoreOutput` of its request.
    Tokens {
        token_ids: Vec<u32>,
        finish_reason: Option<FinishReason>,
    },
    /// Anything else, delivered as it is (boxed: rare, and large beside a token run,
    /// so that the ring buffer's slots stay small).
    Item(Box<StreamItem>),
}

#[derive(Default)]
struct State {
    items: VecDeque<Delivery>,
    waker: Option<Waker>,
    /// The sending side is gone: once `items` is drained the stream ends.
    closed: bool,
    /// Output tokens queued so far.
    tokens: usize,
    /// Where each weight version's tokens start (`RequestState.weight_version_starts`).
    weight_version_starts: Vec<(String, usize)>,
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

    /// The next delivery, `None` once the sender is gone and everything was taken.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
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

    /// The weight versions that produced the tokens queued so far, as vLLM's
    /// `_weight_version_spans`: `None` when tokens came without any version.
    pub fn weight_version_spans(&self) -> Option<Vec<WeightVersionSpan>> {
        let state = self.lock();
        let starts = &state.weight_version_starts;
        if starts.is_empty() && state.tokens > 0 {
            return None;
        }
        let ends = starts
            .iter()
            .skip(1)
            .map(|(_, start)| *start)
            .chain([state.tokens]);
        Some(
            starts
                .iter()
                .zip(ends)
                .map(|((version, start), end)| WeightVersionSpan {
                    version: version.clone(),
                    start: *start,
                    end,
                })
                .collect(),
        )
    }
}

/// The sending side; dropping it ends the stream after the queued items.
pub(crate) struct Sender(Arc<Mailbox>);

impl Sender {
    /// Queues an item and wakes the consumer if it waits.
    pub fn send(&self, item: StreamItem) {
        if let Some(waker) = self.queue(item, None) {
            waker.wake();
        }
    }

    /// Queues an item; returns the consumer's waker if it waits, for the caller to wake
    /// once it has queued everything it has (outside its locks, all at once).
    /// `weight_version` is the version of the engine message the item came in.
    #[must_use = "a waiting consumer sleeps until its waker is woken"]
    pub fn queue(&self, item: StreamItem, weight_version: Option<&str>) -> Option<Waker> {
        let tokens = item.as_ref().map_or(0, |o| o.new_token_ids.len());
        self.deliver(tokens, weight_version, |items| {
            items.push_back(Delivery::Item(Box::new(item)))
        })
    }

    /// Queues the tokens of an output that carries nothing else, appending them to the
    /// last queued run if it is unfinished; returns the waker as [`Sender::queue`] does.
    #[must_use = "a waiting consumer sleeps until its waker is woken"]
    pub fn queue_tokens(
        &self,
        token_ids: &[u32],
        finish_reason: Option<FinishReason>,
        weight_version: Option<&str>,
    ) -> Option<Waker> {
        self.deliver(token_ids.len(), weight_version, |items| {
            match items.back_mut() {
                Some(Delivery::Tokens {
                    token_ids: queued,
                    finish_reason: queued_finish @ None,
                }) => {
                    queued.extend_from_slice(token_ids);
                    *queued_finish = finish_reason;
                }
                _ => items.push_back(Delivery::Tokens {
                    token_ids: token_ids.to_vec(),
                    finish_reason,
                }),
            }
        })
    }

    /// Queues under one lock; tokens from a new weight version start a span there
    /// (vLLM's `track_weight_version`).
    fn deliver(
        &self,
        tokens: usize,
        weight_version: Option<&str>,
        queue: impl FnOnce(&mut VecDeque<Delivery>),
    ) -> Option<Waker> {
        let mut state = self.0.lock();
        if let Some(version) = weight_version.filter(|_| tokens > 0)
            && state
                .weight_version_starts
                .last()
                .is_none_or(|(v, _)| v != version)
        {
            let start = state.tokens;
            state
                .weight_version_starts
                .push((version.to_owned(), start));
        }
        queue(&mut state.items);
        state.tokens += tokens;
        state.waker.take()
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

    fn tokens(delivery: &Delivery) -> (&[u32], Option<FinishReason>) {
        match delivery {
            Delivery::Tokens {
                token_ids,
                finish_reason,
            } => (token_ids, *finish_reason),
            Delivery::Item(item) => panic!("expected a token run, got {item:?}"),
        }
    }

    #[tokio::test]
    async fn items_arrive_in_order_then_the_stream_ends() {
        let (tx, mailbox) = Mailbox::new();
        let reader = tokio::spawn(async move {
            let mut ids = Vec::new();
            let mut stream = poll_fn(|cx| mailbox.poll_next(cx));
            while let Some(delivery) = stream.next().await {
                match delivery {
                    Delivery::Item(item) => ids.push(item.unwrap().request_id),
                    Delivery::Tokens { .. } => panic!("no token runs were sent"),
                }
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

    #[test]
    fn queued_token_runs_merge_until_one_finishes() {
        let (tx, mailbox) = Mailbox::new();
        for (tokens, finish) in [
            (&[1][..], None),
            (&[2, 3], None),
            (&[4], Some(FinishReason::Length)),
            // Nothing merges into a finished run.
            (&[5], None),
        ] {
            assert!(
                tx.queue_tokens(tokens, finish, None).is_none(),
                "nobody waits"
            );
        }
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(Some(first)) = mailbox.poll_next(&mut cx) else {
            panic!("nothing queued")
        };
        assert_eq!(
            tokens(&first),
            (&[1, 2, 3, 4][..], Some(FinishReason::Length))
        );
        let Poll::Ready(Some(second)) = mailbox.poll_next(&mut cx) else {
            panic!("the last run is lost")
        };
        assert_eq!(tokens(&second), (&[5][..], None));
        assert!(mailbox.poll_next(&mut cx).is_pending());
    }

    #[test]
    fn other_items_keep_their_place_between_token_runs() {
        let (tx, mailbox) = Mailbox::new();
        let _ = tx.queue_tokens(&[1], None, None);
        tx.send(Ok(EngineCoreOutput {
            request_id: "with logprobs".into(),
            ..Default::default()
        }));
        // Not merged into the run before the item: order is kept.
        let _ = tx.queue_tokens(&[2], None, None);
        drop(tx);
        let mut cx = Context::from_waker(Waker::noop());
        let mut seen = Vec::new();
        while let Poll::Ready(Some(delivery)) = mailbox.poll_next(&mut cx) {
            seen.push(match delivery {
                Delivery::Tokens { token_ids, .. } => format!("{token_ids:?}"),
                Delivery::Item(item) => item.unwrap().request_id,
            });
        }
        assert_eq!(seen, ["[1]", "with logprobs", "[2]"]);
    }
}
