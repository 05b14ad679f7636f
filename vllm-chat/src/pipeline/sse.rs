//! Server-sent event frames: the `data: …\n\n` text vLLM streams, ending in
//! `data: [DONE]`. Framework-free: a server writes the strings to its response body.

use futures::Stream;
use serde::Serialize;

/// A `data:` frame holding `value` as JSON.
///
/// The JSON is written straight after the `data: ` prefix into one buffer sized for a
/// typical chunk, so a frame costs one allocation.
pub fn frame<T: Serialize>(value: &T) -> String {
    let mut out = Vec::with_capacity(FRAME_CAPACITY);
    out.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut out, value).is_err() {
        // Only a failing `Serialize` impl gets here; the frame carries what the
        // previous serializer wrote: nothing.
        out.truncate(b"data: ".len());
    }
    out.extend_from_slice(b"\n\n");
    // serde_json writes UTF-8 and the prefix and suffix are ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// The frame of an error met mid-stream: vLLM sends the error body as a data event,
/// then `[DONE]`.
pub fn error_frame(error: &super::ApiError) -> String {
    format!("data: {}\n\n", error.to_json())
}

/// Room for a mid-stream chunk with a few tokens of text, without regrowth.
const FRAME_CAPACITY: usize = 512;

/// The frame that ends every stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// A stream of typed events that also knows their SSE frames: [`ChatStream`],
/// [`CompletionStream`] and [`GenerateStream`].
///
/// [`ChatStream`]: super::ChatStream
/// [`CompletionStream`]: super::CompletionStream
/// [`GenerateStream`]: super::GenerateStream
pub trait EventStream: Send + Sized + 'static {
    /// One event (a chunk, or an error met mid-stream).
    type Event: Send;

    /// The next event, `None` after the last.
    fn next_event(&mut self) -> impl Future<Output = Option<Self::Event>> + Send;

    /// `event` as an SSE frame (`data: {…}\n\n`), exactly as vLLM writes it.
    fn sse_frame(&self, event: &Self::Event) -> String;

    /// The whole stream as SSE frames, ending with `data: [DONE]`. Dropping it drops
    /// the stream, which aborts the engine request.
    fn into_sse(self) -> impl Stream<Item = String> + Send + 'static {
        futures::stream::unfold(Some(self), |state| async move {
            let mut stream = state?;
            match stream.next_event().await {
                Some(event) => {
                    let text = stream.sse_frame(&event);
                    Some((text, Some(stream)))
                }
                None => Some((DONE.to_owned(), None)),
            }
        })
    }
}
