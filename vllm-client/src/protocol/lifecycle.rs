//! The fixed sets behind the engine's lifecycle calls: how a pause treats the requests in
//! flight, how deep an engine sleeps, and which memory a wake-up restores.
//!
//! vLLM passes them as strings and integers (`PauseMode = Literal["abort", "wait",
//! "keep"]`, `level: int`, `tags: list[str]`); these enums give them names and encode to
//! exactly those values, with serde too (`"abort"`, `1`, `"kv_cache"`).

use std::fmt;

use crate::wire::Value;

/// How `pause_scheduler` / `pause_generation` / `sleep` treat the requests in flight
/// (vLLM's `PauseMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PauseMode {
    /// Abort every request (their streams end with `abort`), then pause. vLLM's default.
    #[default]
    Abort,
    /// Stop scheduling new requests and answer once the running ones have finished.
    Wait,
    /// Freeze the running requests where they are; they continue after the resume.
    Keep,
}

impl PauseMode {
    /// The string vLLM uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseMode::Abort => "abort",
            PauseMode::Wait => "wait",
            PauseMode::Keep => "keep",
        }
    }

    /// Parses vLLM's string (`"abort"`, `"wait"`, `"keep"`).
    pub fn parse(mode: &str) -> Option<Self> {
        match mode {
            "abort" => Some(PauseMode::Abort),
            "wait" => Some(PauseMode::Wait),
            "keep" => Some(PauseMode::Keep),
            _ => None,
        }
    }
}

impl fmt::Display for PauseMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<PauseMode> for Value {
    fn from(mode: PauseMode) -> Self {
        Value::from(mode.as_str())
    }
}

/// How deep `sleep` puts an engine (`EngineCore.sleep(level)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SleepLevel {
    /// Level 0: pause scheduling only; requests are still accepted but wait. No memory
    /// changes; `wake_up(["scheduling"])` ends it.
    Scheduling,
    /// Level 1: offload the weights to CPU memory and discard the KV cache. vLLM's
    /// default.
    #[default]
    OffloadWeights,
    /// Level 2: discard the weights and the KV cache (weights must be reloaded or
    /// transferred before the wake-up).
    DiscardAll,
}

impl SleepLevel {
    /// The integer vLLM uses.
    pub fn level(self) -> i64 {
        match self {
            SleepLevel::Scheduling => 0,
            SleepLevel::OffloadWeights => 1,
            SleepLevel::DiscardAll => 2,
        }
    }

    /// The level for vLLM's integer (`0`, `1`, `2`).
    pub fn from_level(level: i64) -> Option<Self> {
        match level {
            0 => Some(SleepLevel::Scheduling),
            1 => Some(SleepLevel::OffloadWeights),
            2 => Some(SleepLevel::DiscardAll),
            _ => None,
        }
    }
}

impl From<SleepLevel> for Value {
    fn from(level: SleepLevel) -> Self {
        Value::from(level.level())
    }
}

/// Memory a partial `wake_up` restores (vLLM's sleep-mode allocator tags, plus
/// `"scheduling"` for level-0 sleep).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WakeTag {
    /// `"weights"`: the model weights.
    Weights,
    /// `"kv_cache"`: the KV cache.
    KvCache,
    /// `"scheduling"`: scheduling, after a level-0 sleep.
    Scheduling,
    /// Another tag a custom worker understands.
    Other(String),
}

impl WakeTag {
    /// The string vLLM uses.
    pub fn as_str(&self) -> &str {
        match self {
            WakeTag::Weights => "weights",
            WakeTag::KvCache => "kv_cache",
            WakeTag::Scheduling => "scheduling",
            WakeTag::Other(tag) => tag,
        }
    }

    /// The tag for vLLM's string.
    pub fn parse(tag: &str) -> Self {
        match tag {
            "weights" => WakeTag::Weights,
            "kv_cache" => WakeTag::KvCache,
            "scheduling" => WakeTag::Scheduling,
            other => WakeTag::Other(other.to_owned()),
        }
    }
}

impl From<&WakeTag> for Value {
    fn from(tag: &WakeTag) -> Self {
        Value::from(tag.as_str())
    }
}

impl serde::Serialize for PauseMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for PauseMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mode = String::deserialize(d)?;
        Self::parse(&mode)
            .ok_or_else(|| crate::wire::invalid("PauseMode", format_args!("{mode:?}")))
    }
}

impl serde::Serialize for SleepLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.level())
    }
}

impl<'de> serde::Deserialize<'de> for SleepLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let level = i64::deserialize(d)?;
        Self::from_level(level)
            .ok_or_else(|| crate::wire::invalid("SleepLevel", format_args!("{level}")))
    }
}

impl serde::Serialize for WakeTag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for WakeTag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|tag| Self::parse(&tag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for mode in [PauseMode::Abort, PauseMode::Wait, PauseMode::Keep] {
            assert_eq!(PauseMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(PauseMode::parse("sideways"), None);
        for level in [
            SleepLevel::Scheduling,
            SleepLevel::OffloadWeights,
            SleepLevel::DiscardAll,
        ] {
            assert_eq!(SleepLevel::from_level(level.level()), Some(level));
        }
        assert_eq!(SleepLevel::from_level(3), None);
        for tag in ["weights", "kv_cache", "scheduling", "draft_weights"] {
            assert_eq!(WakeTag::parse(tag).as_str(), tag);
        }
    }
}
