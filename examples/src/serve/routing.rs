//! Request routing a gateway can ask for, read from HTTP headers.

use axum::http::HeaderMap;
use vllm_chat::pipeline::{ApiError, Routing};

/// The header a router sets to pin a request to one data-parallel engine, as vLLM
/// reads it (`_get_data_parallel_rank`).
pub const DATA_PARALLEL_RANK_HEADER: &str = "x-data-parallel-rank";

/// The routing the headers ask for (the `X-data-parallel-rank` header).
pub fn routing(headers: &HeaderMap) -> Result<Routing, ApiError> {
    let Some(value) = headers.get(DATA_PARALLEL_RANK_HEADER) else {
        return Ok(Routing::default());
    };
    let rank = value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                format!("Invalid {DATA_PARALLEL_RANK_HEADER} header: {value:?}"),
                None,
            )
        })?;
    Ok(Routing {
        data_parallel_rank: Some(rank),
    })
}
