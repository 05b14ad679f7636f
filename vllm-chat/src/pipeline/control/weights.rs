//! The weight-transfer endpoints of vLLM's RL server (`vllm/entrypoints/rl/online`):
//! `/init_weight_transfer_engine`, `/start_weight_update`, `/start_draft_weight_update`,
//! `/update_weights`, `/finish_weight_update`, `/shutdown_weight_transfer_engine`,
//! `/update_weight_version`, `/weight_info`, `/weight_checker`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value as Json, json};
use vllm_client::EngineCoreClient;

use super::{ControlAnswer, engine_error, json_to_value};
use crate::pipeline::ApiError;

/// The body of `POST /init_weight_transfer_engine`: the backend's `init_info` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct InitWeightTransferBody {
    /// Backend-specific initialisation info (must be an object).
    #[serde(default)]
    pub init_info: Option<Json>,
}

/// The body of `POST /update_weights`: one batch's `update_info` (an object, or a list
/// indexed by global worker rank).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UpdateWeightsBody {
    /// Backend-specific update info.
    #[serde(default)]
    pub update_info: Option<Json>,
}

/// The (optional) body of `POST /finish_weight_update`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct FinishWeightUpdateBody {
    /// The version the new weights get.
    #[serde(default)]
    pub weight_version: Option<String>,
}

/// The body of `POST /update_weight_version`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UpdateWeightVersionBody {
    /// The new version.
    pub new_version: String,
}

/// What `POST /weight_checker` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightCheckerAction {
    /// Answer the checksum of every weight.
    Checksum,
    /// Reset the weights (`collective_rpc("reset_weights")`).
    Reset,
    /// Compare the checksums with a baseline.
    Compare,
}

/// The body of `POST /weight_checker`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WeightCheckerBody {
    /// What to do.
    pub action: WeightCheckerAction,
    /// Parameter name to checksum (for `compare`).
    #[serde(default)]
    pub baseline: Option<BTreeMap<String, String>>,
}

fn message(text: &str) -> ControlAnswer {
    ControlAnswer::Json(json!({ "message": text }))
}

/// `POST /init_weight_transfer_engine`.
pub async fn init_weight_transfer_engine(
    client: &EngineCoreClient,
    body: &InitWeightTransferBody,
) -> Result<ControlAnswer, ApiError> {
    let Some(info @ Json::Object(_)) = &body.init_info else {
        return Err(ApiError::bad_request(
            "'init_info' must be a JSON object",
            Some("init_info"),
        ));
    };
    client
        .init_weight_transfer_engine(json_to_value(info))
        .await
        .map_err(|e| engine_error("init_weight_transfer_engine", &e))?;
    Ok(message("Weight transfer initialized"))
}

/// `POST /shutdown_weight_transfer_engine`.
pub async fn shutdown_weight_transfer_engine(
    client: &EngineCoreClient,
) -> Result<ControlAnswer, ApiError> {
    client
        .shutdown_weight_transfer_engine()
        .await
        .map_err(|e| engine_error("shutdown_weight_transfer_engine", &e))?;
    Ok(message("Weight transfer shut down"))
}

/// `POST /start_weight_update`.
pub async fn start_weight_update(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    client
        .start_weight_update()
        .await
        .map_err(|e| engine_error("start_weight_update", &e))?;
    Ok(message("Weight update started"))
}

/// `POST /start_draft_weight_update`.
pub async fn start_draft_weight_update(
    client: &EngineCoreClient,
) -> Result<ControlAnswer, ApiError> {
    client
        .start_draft_weight_update()
        .await
        .map_err(|e| engine_error("start_draft_weight_update", &e))?;
    Ok(message("Draft weight update started"))
}

/// `POST /update_weights`.
pub async fn update_weights(
    client: &EngineCoreClient,
    body: &UpdateWeightsBody,
) -> Result<ControlAnswer, ApiError> {
    let Some(info @ (Json::Object(_) | Json::Array(_))) = &body.update_info else {
        return Err(ApiError::bad_request(
            "'update_info' must be a JSON object or a list of objects",
            Some("update_info"),
        ));
    };
    client
        .update_weights(json_to_value(info))
        .await
        .map_err(|e| engine_error("update_weights", &e))?;
    Ok(message("Weights updated"))
}

/// `POST /finish_weight_update`.
pub async fn finish_weight_update(
    client: &EngineCoreClient,
    body: &FinishWeightUpdateBody,
) -> Result<ControlAnswer, ApiError> {
    client
        .finish_weight_update(body.weight_version.as_deref())
        .await
        .map_err(|e| engine_error("finish_weight_update", &e))?;
    Ok(message("Weight update finished"))
}

/// `POST /update_weight_version`.
pub async fn update_weight_version(
    client: &EngineCoreClient,
    body: &UpdateWeightVersionBody,
) -> Result<ControlAnswer, ApiError> {
    client
        .set_weight_version(&body.new_version)
        .await
        .map_err(|e| engine_error("update_weight_version", &e))?;
    Ok(ControlAnswer::Json(
        json!({"success": true, "new_version": body.new_version}),
    ))
}

/// `GET /weight_info`.
pub async fn weight_info(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    let version = weight_version(client).await?;
    Ok(ControlAnswer::Json(json!({"weight_version": version})))
}

/// The engines' weight version.
pub async fn weight_version(client: &EngineCoreClient) -> Result<String, ApiError> {
    client
        .get_weight_version()
        .await
        .map_err(|e| engine_error("get_weight_version", &e))
}

/// `POST /weight_checker`: checksums of every worker's weights, merged (a name on two
/// workers is an error, as in vLLM), or compared with a baseline, or a weight reset.
pub async fn weight_checker(
    client: &EngineCoreClient,
    body: &WeightCheckerBody,
) -> Result<ControlAnswer, ApiError> {
    if body.action == WeightCheckerAction::Reset {
        client
            .collective_rpc("reset_weights", None, Vec::new(), None)
            .await
            .map_err(|e| engine_error("reset_weights", &e))?;
        return Ok(ControlAnswer::Json(json!({"status": "reset"})));
    }
    let baseline = match (body.action, &body.baseline) {
        (WeightCheckerAction::Compare, None) => {
            return Err(ApiError::bad_request(
                "action='compare' requires a 'baseline' object",
                Some("baseline"),
            ));
        }
        (_, baseline) => baseline,
    };
    let mut checksums = BTreeMap::new();
    for worker in client
        .compute_weight_checksums()
        .await
        .map_err(|e| engine_error("compute_weight_checksums", &e))?
    {
        let duplicates: Vec<&String> = worker
            .keys()
            .filter(|k| checksums.contains_key(*k))
            .collect();
        if !duplicates.is_empty() {
            return Err(ApiError::internal(format!(
                "Duplicate weight checksum keys: {duplicates:?}"
            )));
        }
        checksums.extend(worker);
    }
    let Some(baseline) = baseline
        .as_ref()
        .filter(|_| body.action == WeightCheckerAction::Compare)
    else {
        return Ok(ControlAnswer::Json(json!({"checksums": checksums})));
    };
    let mismatches: Vec<&String> = checksums
        .keys()
        .chain(baseline.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| checksums.get(*k) != baseline.get(*k))
        .collect();
    Ok(ControlAnswer::Json(
        json!({"match": mismatches.is_empty(), "mismatches": mismatches}),
    ))
}
