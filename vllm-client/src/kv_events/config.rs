//! Where an engine publishes its KV events: vLLM's `KVEventsConfig` and the per-rank ports.
//!
//! An engine started with `--kv-events-config '{"enable_kv_cache_events": true,
//! "publisher": "zmq", "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558",
//! "topic": "kv"}'` publishes on a PUB socket at `endpoint` and answers replay requests
//! on a ROUTER at `replay_endpoint`. With data parallelism each rank offsets both ports
//! by its rank (`ZmqEventPublisher.offset_endpoint_port`). The engine reports its
//! resolved configuration in its ready response (`EngineCoreReadyResponse.
//! kv_events_config`; see [`EngineInfo::kv_events_config`](crate::EngineInfo::kv_events_config)).

use crate::wire::{DecodeError, Value};

wire_map! {
    /// vLLM's `KVEventsConfig` (`vllm/config/kv_events.py`), as the engine reports it.
    pub struct KVEventsConfig (all) {
        /// Whether the engine publishes KV-cache events.
        pub enable_kv_cache_events: bool = false,
        /// `"zmq"` or `"null"`.
        pub publisher: Option<String> = None,
        /// The PUB endpoint (`tcp://*:5557` binds; a host address makes the engine connect).
        pub endpoint: String = "tcp://*:5557".to_owned(),
        /// The ROUTER endpoint answering replay requests.
        pub replay_endpoint: Option<String> = None,
        /// Batches the engine keeps for replay.
        pub buffer_steps: i64 = 10_000,
        /// The PUB socket's high-water mark.
        pub hwm: i64 = 100_000,
        /// Batches queued before publishing.
        pub max_queue_size: i64 = 100_000,
        /// The topic (first frame) of every published message.
        pub topic: String = String::new(),
    }
}

impl KVEventsConfig {
    /// Reads the configuration an engine reported (the `kv_events_config` value of its
    /// ready response).
    pub fn from_value(value: &Value) -> Result<Self, DecodeError> {
        crate::wire::from_slice(&crate::wire::to_vec(value))
    }

    /// This configuration as data-parallel rank `rank` applies it: both endpoints offset
    /// by [`offset_endpoint_port`].
    pub fn for_rank(&self, rank: u32) -> Result<Self, EndpointError> {
        Ok(Self {
            endpoint: offset_endpoint_port(&self.endpoint, rank)?,
            replay_endpoint: self
                .replay_endpoint
                .as_deref()
                .map(|e| offset_endpoint_port(e, rank))
                .transpose()?,
            ..self.clone()
        })
    }
}

/// An endpoint vLLM's publisher cannot offset for a data-parallel rank.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Neither `tcp` nor `inproc` (vLLM raises `Invalid endpoint: must contain 'inproc'
    /// or 'tcp'` for ranks above 0).
    #[error(
        "invalid endpoint {0:?}: must contain 'inproc' or 'tcp' to be offset per data-parallel rank"
    )]
    Transport(String),
    /// A tcp endpoint whose text after the last `:` is not a port number.
    #[error("invalid endpoint {0:?}: the text after the last ':' is not a port number")]
    Port(String),
}

/// The endpoint data-parallel rank `rank` uses, exactly as vLLM's
/// `ZmqEventPublisher.offset_endpoint_port` computes it: rank 0 and empty endpoints
/// unchanged, `inproc` gets a `_dp{rank}` suffix, a tcp port is increased by the rank
/// (port 0, "any port", stays 0).
pub fn offset_endpoint_port(endpoint: &str, rank: u32) -> Result<String, EndpointError> {
    if endpoint.is_empty() || rank == 0 {
        return Ok(endpoint.to_owned());
    }
    if endpoint.contains("inproc") {
        return Ok(format!("{endpoint}_dp{rank}"));
    }
    if !endpoint.contains("tcp") {
        return Err(EndpointError::Transport(endpoint.to_owned()));
    }
    let Some((base, port)) = endpoint.rsplit_once(':') else {
        return Ok(endpoint.to_owned());
    };
    // Python's int() accepts surrounding whitespace and a sign; ports never carry them.
    let port: i64 = port
        .trim()
        .parse()
        .map_err(|_| EndpointError::Port(endpoint.to_owned()))?;
    if port == 0 {
        return Ok(endpoint.to_owned());
    }
    Ok(format!("{base}:{}", port + i64::from(rank)))
}

/// Whether vLLM's publisher binds `endpoint` (`ZmqEventPublisher._is_bind_endpoint`):
/// wildcard hosts (`*`, `::`), `ipc` and `inproc` endpoints. It connects to any other
/// endpoint, which its subscriber must then bind.
pub fn publisher_binds(endpoint: &str) -> bool {
    endpoint.contains('*')
        || endpoint.contains("::")
        || endpoint.starts_with("ipc://")
        || endpoint.starts_with("inproc://")
}

/// The endpoint a subscriber on another machine connects to for an engine that binds
/// `endpoint`: a wildcard host (`*`, `0.0.0.0`, `[::]`) is replaced by `host`; any other
/// endpoint is returned unchanged.
pub fn connect_endpoint(endpoint: &str, host: &str) -> String {
    let Some(rest) = endpoint.strip_prefix("tcp://") else {
        return endpoint.to_owned();
    };
    match rest.rsplit_once(':') {
        Some(("*" | "0.0.0.0" | "[::]" | "::", port)) => format!("tcp://{host}:{port}"),
        _ => endpoint.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_become_the_engine_host() {
        assert_eq!(
            connect_endpoint("tcp://*:5557", "10.0.0.2"),
            "tcp://10.0.0.2:5557"
        );
        assert_eq!(connect_endpoint("tcp://[::]:5557", "h"), "tcp://h:5557");
        assert_eq!(
            connect_endpoint("tcp://127.0.0.1:5557", "h"),
            "tcp://127.0.0.1:5557"
        );
        assert_eq!(connect_endpoint("ipc:///tmp/x", "h"), "ipc:///tmp/x");
    }

    #[test]
    fn the_publisher_binds_wildcards_and_local_transports_only() {
        assert!(publisher_binds("tcp://*:5557"));
        assert!(publisher_binds("tcp://[::]:5557"));
        assert!(publisher_binds("ipc:///tmp/kv"));
        assert!(!publisher_binds("tcp://10.0.0.2:5557"));
        // vLLM connects to 0.0.0.0 rather than binding it.
        assert!(!publisher_binds("tcp://0.0.0.0:5557"));
        // A subscription made from the engine's report binds what the engine dials.
        let mut config = KVEventsConfig {
            endpoint: "tcp://10.0.0.9:5557".into(),
            replay_endpoint: Some("tcp://*:5558".into()),
            ..KVEventsConfig::default()
        };
        let sub = super::super::SubscriberConfig::from_engine_config(&config, "10.0.0.2");
        assert!(sub.bind);
        assert_eq!(sub.endpoint, "tcp://10.0.0.9:5557");
        assert_eq!(sub.replay_endpoint.as_deref(), Some("tcp://10.0.0.2:5558"));
        config.endpoint = "tcp://*:5557".into();
        let sub = super::super::SubscriberConfig::from_engine_config(&config, "10.0.0.2");
        assert!(!sub.bind);
        assert_eq!(sub.endpoint, "tcp://10.0.0.2:5557");
    }

    #[test]
    fn a_bad_port_is_an_error_not_a_panic() {
        assert!(matches!(
            offset_endpoint_port("tcp://h:x", 1),
            Err(EndpointError::Port(_))
        ));
        assert_eq!(offset_endpoint_port("tcp", 1).unwrap(), "tcp");
    }

    #[test]
    fn the_reported_config_reads_from_the_ready_response_value() {
        let config = KVEventsConfig {
            enable_kv_cache_events: true,
            publisher: Some("zmq".into()),
            replay_endpoint: Some("tcp://*:5560".into()),
            topic: "kv".into(),
            ..KVEventsConfig::default()
        };
        let value: Value = crate::wire::from_slice(&crate::wire::to_vec(&config)).unwrap();
        assert_eq!(KVEventsConfig::from_value(&value).unwrap(), config);
        let rank2 = config.for_rank(2).unwrap();
        assert_eq!(rank2.endpoint, "tcp://*:5559");
        assert_eq!(rank2.replay_endpoint.as_deref(), Some("tcp://*:5562"));
    }
}
