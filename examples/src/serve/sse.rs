//! Server-sent events over axum: a stream of frames as the response body.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::Stream;

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
