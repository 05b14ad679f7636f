//! The operations layer around the routes, as vllm-rs 0.33 (and vLLM's Python server)
//! apply it: an API key on the generation paths (`--api-key`), `X-Request-Id` on every
//! response (`--enable-request-id-headers`), and CORS (`--allowed-origins`,
//! `--allowed-methods`, `--allowed-headers`, `--allow-credentials`).
//!
//! CORS is written here rather than taken from `tower-http`: its layer adds `Vary` to
//! every answer and merges it differently, where vLLM's servers vary by `Origin` only
//! when there is one (checked side by side by `examples/scripts/control_conformance.py`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The operations settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Operations {
    /// `--api-key` (env `VLLM_API_KEY`): requests to `/v1/…` and `/inference/…` must send
    /// `Authorization: Bearer KEY` with one of these keys.
    pub api_keys: Vec<String>,
    /// `--enable-request-id-headers`: answer with `X-Request-Id` (the request's, or a
    /// new one).
    pub request_id_headers: bool,
    /// CORS; `None` without `--allowed-origins` (no cross-origin access).
    pub cors: Option<Cors>,
}

/// CORS settings, as JSON lists on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    /// `--allowed-origins` (`*`: any).
    pub origins: Vec<String>,
    /// `--allowed-methods` (`*`: the standard set).
    pub methods: Vec<String>,
    /// `--allowed-headers` (`*`: mirror the request's).
    pub headers: Vec<String>,
    /// `--allow-credentials`.
    pub credentials: bool,
}

/// The methods `*` allows, as Starlette's `ALL_METHODS` lists them.
const ALL_METHODS: [Method; 7] = [
    Method::DELETE,
    Method::GET,
    Method::HEAD,
    Method::OPTIONS,
    Method::PATCH,
    Method::POST,
    Method::PUT,
];

/// How long browsers may cache a preflight answer (Starlette's default).
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

impl Operations {
    /// Wraps `router` in the layers these settings ask for: the request id outermost
    /// (every answer carries it), then CORS (preflights need no key, as in vLLM), then
    /// the key.
    pub fn apply(&self, mut router: Router) -> Router {
        if !self.api_keys.is_empty() {
            let keys: Arc<[String]> = self.api_keys.clone().into();
            router = router.layer(axum::middleware::from_fn(move |request, next| {
                authenticate(keys.clone(), request, next)
            }));
        }
        if let Some(settings) = &self.cors {
            let settings = Arc::new(settings.clone());
            router = router.layer(axum::middleware::from_fn(move |request, next| {
                cors(settings.clone(), request, next)
            }));
        }
        if self.request_id_headers {
            router = router.layer(axum::middleware::from_fn(request_id));
        }
        router
    }
}

impl Cors {
    fn allows_origin(&self, origin: &HeaderValue) -> bool {
        self.origins
            .iter()
            .any(|o| o == "*" || o.as_bytes() == origin.as_bytes())
    }

    /// `Access-Control-Allow-Methods` for a preflight.
    fn methods(&self) -> String {
        if self.methods.iter().any(|m| m == "*") {
            ALL_METHODS
                .iter()
                .map(Method::as_str)
                .collect::<Vec<_>>()
                .join(",")
        } else {
            self.methods
                .iter()
                .map(|m| m.to_ascii_uppercase())
                .collect::<Vec<_>>()
                .join(",")
        }
    }
}

/// CORS as vllm-rs (and Starlette's `CORSMiddleware`) answer it: nothing without an
/// `Origin`; a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered
/// here with the allowed methods and headers; other requests get the allowed origin.
/// Both vary by origin; a disallowed origin gets no `Access-Control-Allow-Origin`.
async fn cors(cors: Arc<Cors>, request: Request, next: Next) -> Response {
    let Some(origin) = request.headers().get(header::ORIGIN).cloned() else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::OK.into_response();
        let headers = response.headers_mut();
        if let Ok(methods) = HeaderValue::from_str(&cors.methods()) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
        }
        let requested = request
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .cloned();
        let allowed = if cors.headers.iter().any(|h| h == "*") {
            requested
        } else {
            HeaderValue::from_str(&cors.headers.join(",").to_ascii_lowercase()).ok()
        };
        if let Some(allowed) = allowed {
            headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed);
        }
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from(PREFLIGHT_MAX_AGE.as_secs()),
        );
        response
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    if cors.allows_origin(&origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if cors.credentials {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
    }
    headers.append(header::VARY, HeaderValue::from_static("origin"));
    response
}

/// Whether vLLM protects `path` with the API key: the OpenAI paths (`/v1/…`) and the
/// tokens-in paths (`/inference/…`); health, metrics, tokenization and the control
/// endpoints stay open.
fn protected(path: &str) -> bool {
    path.starts_with("/v1") || path.starts_with("/inference")
}

/// The key of an `Authorization: Bearer KEY` header (the scheme in any case).
fn bearer(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, key) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(key)
}

async fn authenticate(keys: Arc<[String]>, request: Request, next: Next) -> Response {
    if request.method() == Method::OPTIONS || !protected(request.uri().path()) {
        return next.run(request).await;
    }
    match bearer(&request) {
        Some(key) if keys.iter().any(|k| k == key) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({"error": "Unauthorized"})),
        )
            .into_response(),
    }
}

async fn request_id(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(&REQUEST_ID)
        .cloned()
        .unwrap_or_else(|| {
            HeaderValue::from_str(&vllm_chat::pipeline::ids::random_hex())
                .unwrap_or(HeaderValue::from_static("0"))
        });
    let mut response = next.run(request).await;
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openai_and_tokens_in_paths_are_protected() {
        assert!(protected("/v1/models"));
        assert!(protected("/inference/v1/generate"));
        assert!(!protected("/health"));
        assert!(!protected("/metrics"));
        assert!(!protected("/tokenize"));
    }
}
