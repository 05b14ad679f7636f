//! The per-request output stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use super::mailbox::Mailbox;
use super::shared::{Shared, StreamItem};

/// The outputs of one request, as the engine produces them.
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
}

impl Stream for OutputStream {
    type Item = StreamItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamItem>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.mailbox.poll_next(cx) {
            Poll::Ready(Some(item)) => {
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
