//! Request routing a gateway can ask for.

use axum::http::HeaderMap;

use super::error::ApiError;

/// The header a router sets to pin a request to one data-parallel engine, as vLLM
/// reads it (`_get_data_parallel_rank`).
pub const DATA_PARALLEL_RANK_HEADER: &str = "x-data-parallel-rank";

/// The engine rank named by the `X-data-parallel-rank` header, if any.
pub fn data_parallel_rank(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get(DATA_PARALLEL_RANK_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                format!("Invalid {DATA_PARALLEL_RANK_HEADER} header: {value:?}"),
                None,
            )
        })
}
