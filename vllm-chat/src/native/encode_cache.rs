//! A bounded cache of encoded texts for the native renderers.
//!
//! A chat's history, system prompt and tool definitions come back with every turn, and
//! the Mistral and Harmony renderers encode them piece by piece (each message part on
//! its own, as vLLM does), so the same pieces are encoded again and again. Like the
//! template renderer's `SegmentEncoder`, pieces up to [`MAX_TEXT_BYTES`] are cached; the
//! cache is emptied when it holds [`MAX_ENTRIES`] pieces or [`MAX_BYTES`] bytes
//! (text plus ids), which keeps its memory bounded whatever the traffic. Encoding is
//! deterministic, so a hit gives the ids a miss would.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::RenderError;

/// The longest text that is cached.
pub(crate) const MAX_TEXT_BYTES: usize = 16 * 1024;
/// The most entries kept before the cache is emptied.
pub(crate) const MAX_ENTRIES: usize = 16 * 1024;
/// The most bytes (text and ids) kept before the cache is emptied.
pub(crate) const MAX_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<Box<str>, Box<[u32]>>,
    bytes: usize,
}

/// Encoded texts by text.
#[derive(Debug, Default)]
pub(crate) struct EncodeCache {
    inner: Mutex<Inner>,
}

impl EncodeCache {
    /// Appends the ids of `text` to `out`, from the cache or from `encode`.
    pub(crate) fn encode_into(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        encode: impl FnOnce(&str) -> Result<Vec<u32>, RenderError>,
    ) -> Result<(), RenderError> {
        if text.len() > MAX_TEXT_BYTES {
            out.extend(encode(text)?);
            return Ok(());
        }
        if let Ok(inner) = self.inner.lock()
            && let Some(ids) = inner.map.get(text)
        {
            out.extend_from_slice(ids);
            return Ok(());
        }
        let ids = encode(text)?;
        out.extend_from_slice(&ids);
        if let Ok(mut inner) = self.inner.lock() {
            let size = text.len() + 4 * ids.len();
            if inner.map.len() >= MAX_ENTRIES || inner.bytes + size > MAX_BYTES {
                inner.map.clear();
                inner.bytes = 0;
            }
            inner.bytes += size;
            inner.map.insert(text.into(), ids.into_boxed_slice());
        }
        Ok(())
    }
}

impl EncodeCache {
    /// Empties the cache.
    pub(crate) fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.map.clear();
            inner.bytes = 0;
        }
    }
}
