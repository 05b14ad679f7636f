//! gRPC deadlines (`grpc-timeout`), enforced by the server for every RPC.
//!
//! tonic's own server answers a call still running at its deadline with `CANCELLED`
//! "Timeout expired", and only until the response headers are sent: a server stream
//! then runs past its deadline for as long as the client keeps it open. The gRPC spec
//! (and grpcio, the client timer in front of vllm-rs, and vLLM's Python gRPC server)
//! ends such a call with `DEADLINE_EXCEEDED` "Deadline Exceeded". So the services are
//! served without tonic's timeout layer (`super::serve` runs its own HTTP/2 accept
//! loop) and this module enforces the deadline instead:
//! - until the handler answers (a unary `Generate`, the start of `GenerateStream`), a
//!   call past its deadline is answered `DEADLINE_EXCEEDED` (trailers only) and the
//!   handler is dropped;
//! - once a streamed answer runs, its body ends at the deadline with
//!   `DEADLINE_EXCEEDED` trailers, and the rest of the stream is dropped.
//!
//! Dropping the handler or the stream drops the request's engine stream, which aborts
//! the engine request, as when a client goes away.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{HeaderMap, Request, Response};
use tokio::time::{Instant, Sleep};
use tonic::Code;
use tower::ServiceExt;

/// Writes the status of a call past its deadline into `headers` (trailers, or the
/// headers of a trailers-only answer).
///
/// By hand rather than through `tonic::Status`: tonic percent-encodes the space of the
/// message (`Deadline%20Exceeded`), which the spec allows but does not require, and
/// grpcio was seen handing that text to the application undecoded (under load, its own
/// deadline timer racing the trailers). The space is a legal unencoded byte, so the
/// text is sent as the client's own timer says it.
fn write_exceeded(headers: &mut HeaderMap) {
    headers.insert(
        "grpc-status",
        HeaderValue::from(Code::DeadlineExceeded as i32),
    );
    headers.insert(
        "grpc-message",
        HeaderValue::from_static("Deadline Exceeded"),
    );
}

/// The trailers-only answer of a call past its deadline before its handler answered.
fn exceeded_response() -> Response<DeadlineBody> {
    let mut response = Response::new(DeadlineBody::unlimited(Body::empty()));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    write_exceeded(headers);
    response
}

/// The duration a `grpc-timeout` header gives (`<1 to 8 digits><H|M|S|m|u|n>`); `None`
/// without one or with one that does not parse (the call then has no deadline, as in
/// tonic).
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// Calls `router` for `request` under the request's deadline (see the module docs).
pub async fn call(
    router: axum::Router,
    request: Request<Incoming>,
) -> Result<Response<DeadlineBody>, Infallible> {
    let deadline = timeout(request.headers()).map(|t| Instant::now() + t);
    let answer = router.oneshot(request.map(Body::new));
    let response = match deadline {
        None => answer.await?,
        Some(at) => match tokio::time::timeout_at(at, answer).await {
            Ok(response) => response?,
            Err(_) => return Ok(exceeded_response()),
        },
    };
    Ok(response.map(|body| DeadlineBody {
        inner: body,
        deadline: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
        done: false,
    }))
}

/// A response body that ends with `DEADLINE_EXCEEDED` trailers at its deadline.
pub struct DeadlineBody {
    inner: Body,
    /// `None`: no deadline, or the answer already ended.
    deadline: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl DeadlineBody {
    fn unlimited(inner: Body) -> Self {
        Self {
            inner,
            deadline: None,
            done: false,
        }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(sleep) = this.deadline.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            // Past the deadline: the rest of the answer (and its engine request) goes.
            this.done = true;
            this.deadline = None;
            this.inner = Body::empty();
            let mut trailers = HeaderMap::new();
            write_exceeded(&mut trailers);
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if frame.is_trailers() {
                    // The answer ended on its own.
                    this.deadline = None;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.deadline = None;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("grpc-timeout", value.parse().unwrap());
        h
    }

    #[test]
    fn grpc_timeouts_parse_as_the_spec_writes_them() {
        assert_eq!(timeout(&headers("1H")), Some(Duration::from_secs(3600)));
        assert_eq!(timeout(&headers("2M")), Some(Duration::from_secs(120)));
        assert_eq!(timeout(&headers("3S")), Some(Duration::from_secs(3)));
        assert_eq!(timeout(&headers("250m")), Some(Duration::from_millis(250)));
        assert_eq!(timeout(&headers("7u")), Some(Duration::from_micros(7)));
        assert_eq!(
            timeout(&headers("99999999n")),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in ["", "S", "123456789S", "12x", "-1S", "1.5S"] {
            let mut h = HeaderMap::new();
            if !bad.is_empty() {
                h.insert("grpc-timeout", bad.parse().unwrap());
            }
            assert_eq!(timeout(&h), None, "{bad:?}");
        }
    }
}
