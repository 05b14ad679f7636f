//! Server-sent events: the `data: …\n\n` frames vLLM streams, ending in `data: [DONE]`.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Serialize;
use serde_json::Value;

/// A `data:` frame holding `value` as JSON, with `extra` fields appended to its top
/// level (fields vLLM writes that the shared chunk types do not have).
///
/// The JSON is written straight after the `data: ` prefix into one buffer sized for a
/// typical chunk, so a frame costs one allocation.
pub fn frame<T: Serialize>(value: &T, extra: &[(&str, Value)]) -> String {
    let mut out = Vec::with_capacity(FRAME_CAPACITY);
    out.extend_from_slice(b"data: ");
    let written = if extra.is_empty() {
        serde_json::to_writer(&mut out, value)
    } else {
        serde_json::to_value(value).and_then(|mut tree| {
            if let Value::Object(map) = &mut tree {
                for (key, v) in extra {
                    map.insert((*key).to_owned(), v.clone());
                }
            }
            serde_json::to_writer(&mut out, &tree)
        })
    };
    if written.is_err() {
        // Only a failing `Serialize` impl gets here; the frame carries what the
        // previous serializer wrote: nothing.
        out.truncate(b"data: ".len());
    }
    out.extend_from_slice(b"\n\n");
    // serde_json writes UTF-8 and the prefix and suffix are ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// Room for a mid-stream chunk with a few tokens of text, without regrowth.
const FRAME_CAPACITY: usize = 512;

/// The frame that ends every stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// An SSE response whose body is `frames`. When the client goes away, the body (and
/// whatever the stream owns, such as an engine request) is dropped.
pub fn response(frames: impl Stream<Item = String> + Send + 'static) -> Response {
    use futures::StreamExt;
    let body = Body::from_stream(frames.map(Ok::<_, Infallible>));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A sender of frames inside [`frames`].
pub struct FrameSender(futures::channel::mpsc::UnboundedSender<String>);

impl FrameSender {
    /// Queues a frame (ignored once the client is gone).
    pub fn send(&self, frame: String) {
        let _ = self.0.unbounded_send(frame);
    }
}

/// A stream of frames produced by `body`, which runs only while the stream is polled
/// and is dropped with it.
pub fn frames<F, Fut>(body: F) -> impl Stream<Item = String> + Send + 'static
where
    F: FnOnce(FrameSender) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    use futures::StreamExt;
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let producer = body(FrameSender(tx));
    // The producer is polled together with the receiver: no task is spawned, so the
    // generation lives exactly as long as the response body.
    let producer = futures::stream::once(producer).filter_map(|()| async { None::<String> });
    futures::stream::select(producer, rx)
}
