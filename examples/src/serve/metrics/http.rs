//! The HTTP instrumentation families vLLM's server exports through
//! prometheus-fastapi-instrumentator (as vllm-rs 0.33.0 names and buckets them):
//! `http_requests_total{method, status, handler}` with statuses grouped (`2xx`, …),
//! `http_request_duration_seconds{method, handler}` and the unlabelled
//! `http_request_duration_highr_seconds`. vLLM leaves its probe endpoints out
//! ([`EXCLUDED_HANDLERS`]). A duration runs until the response head is ready (a
//! stream's body is not waited for).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::{Buckets, Labels};

/// The handlers vLLM's instrumentator does not count.
pub const EXCLUDED_HANDLERS: [&str; 6] = [
    "/metrics",
    "/health",
    "/load",
    "/ping",
    "/version",
    "/server_info",
];

const DURATION_BUCKETS: [f64; 3] = [0.1, 0.5, 1.0];
const HIGHR_BUCKETS: [f64; 21] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
    7.5, 10.0, 30.0, 60.0,
];

/// The HTTP families of one registry.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<Labels, Counter>,
    duration: Family<Labels, Histogram, Buckets>,
    highr: Histogram,
}

impl HttpMetrics {
    /// Registers the families in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Self {
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "http_requests",
            "Total number of HTTP requests by method, status, and handler.",
            requests.clone(),
        );
        let duration = Family::new_with_constructor(Buckets(DURATION_BUCKETS.into()));
        registry.register(
            "http_request_duration_seconds",
            "Duration of HTTP requests in seconds grouped by method and handler.",
            duration.clone(),
        );
        let highr = Histogram::new(HIGHR_BUCKETS);
        registry.register(
            "http_request_duration_highr_seconds",
            "High-resolution duration of HTTP requests in seconds.",
            highr.clone(),
        );
        Self {
            requests,
            duration,
            highr,
        }
    }

    /// Counts one answered request to route `handler`.
    pub fn observe(&self, method: &str, status: u16, handler: &str, seconds: f64) {
        if EXCLUDED_HANDLERS.contains(&handler) {
            return;
        }
        let status = format!("{}xx", status / 100);
        self.requests
            .get_or_create(&vec![
                ("method".into(), method.into()),
                ("status".into(), status),
                ("handler".into(), handler.into()),
            ])
            .inc();
        self.duration
            .get_or_create(&vec![
                ("method".into(), method.into()),
                ("handler".into(), handler.into()),
            ])
            .observe(seconds);
        self.highr.observe(seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_status_class_and_leaves_probes_out() {
        let mut registry = Registry::default();
        let http = HttpMetrics::register(&mut registry);
        http.observe("POST", 200, "/v1/completions", 0.02);
        http.observe("POST", 404, "/v1/completions", 0.001);
        http.observe("GET", 200, "/health", 0.001);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains(
            "http_requests_total{method=\"POST\",status=\"2xx\",handler=\"/v1/completions\"} 1"
        ));
        assert!(text.contains(
            "http_requests_total{method=\"POST\",status=\"4xx\",handler=\"/v1/completions\"} 1"
        ));
        assert!(!text.contains("/health"), "{text}");
        assert!(
            text.contains("http_request_duration_highr_seconds_count 2"),
            "{text}"
        );
    }
}
