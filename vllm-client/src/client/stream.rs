//! The per-request output stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use super::mailbox::{Delivery, Mailbox};
use super::shared::{Shared, StreamItem};
use crate::protocol::EngineCoreOutput;

/// The outputs of one request, as the engine produces them.
///
/// Outputs that carry only new tokens (and maybe a finish reason) and that arrive while
/// the consumer is busy are merged into one output (their token ids concatenated), as
/// vLLM's `RequestOutputCollector` merges a lagging consumer's outputs: a consumer that
/// keeps up sees every engine step, one that lags takes what queued up at once. Outputs
/// with anything else (logprobs, events, a stop reason, an error, …) are delivered
/// unchanged and in order.
///
/// The stream ends after the output whose `finish_reason` is set, or after an error.
/// Dropping it before then aborts the request on its engine (aborts of many dropped
/// streams are batched into one ABORT message per engine).
pub struct OutputStream {
    request_id: String,
    mailbox: Arc<Mailbox>,
    shared: Arc<Shared>,
    done: bool,
}

impl OutputStream {
    pub(crate) fn new(request_id: String, mailbox: Arc<Mailbox>, shared: Arc<Shared>) -> Self {
        Self {
            request_id,
            mailbox,
            shared,
            done: false,
        }
    }

    /// The engine request id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// Whether the request finished (its last output or an error was delivered).
    pub fn is_finished(&self) -> bool {
        self.done
    }

    /// Which weights produced the request's output tokens so far, from the
    /// `weight_version` of the engine messages that carried them (vLLM's
    /// `CompletionOutput.weight_versions`, which it reports when a request finishes).
    /// `None` when the engines reported no version.
    pub fn weight_version_spans(&self) -> Option<Vec<WeightVersionSpan>> {
        self.mailbox.weight_version_spans()
    }
}

/// Output tokens `start..end` of a request came from weights `version` (vLLM's
/// `WeightVersionSpan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightVersionSpan {
    /// The engines' weight version (`"default"` until one is set).
    pub version: String,
    /// The first output token of the span.
    pub start: usize,
    /// One past its last output token.
    pub end: usize,
}

impl Stream for OutputStream {
    type Item = StreamItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamItem>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.mailbox.poll_next(cx) {
            Poll::Ready(Some(delivery)) => {
                let item = match delivery {
                    Delivery::Item(item) => *item,
                    Delivery::Tokens {
                        token_ids,
                        finish_reason,
                    } => Ok(EngineCoreOutput {
                        request_id: self.request_id.clone(),
                        new_token_ids: token_ids,
                        finish_reason,
                        ..Default::default()
                    }),
                };
                if item.as_ref().map_or(true, |o| o.finished()) {
                    self.done = true;
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for OutputStream {
    fn drop(&mut self) {
        if !self.done {
            self.shared.abandon(&self.request_id);
        }
    }
}
