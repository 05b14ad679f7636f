//! Prefix-cache block hashes, computed exactly as a vLLM engine computes them.
//!
//! A router that knows which blocks each engine holds (from its [`BlockStored`] and
//! [`BlockRemoved`] events) can send a prompt to the engine that has most of its prefix
//! cached, if it can hash the prompt's blocks the way the engine does. vLLM 0.33.0
//! (`vllm/v1/core/kv_cache_utils.py`) hashes full blocks only, each chained to its parent:
//!
//! ```text
//! hash(block i) = H((hash(block i-1) or NONE_HASH, tuple(block tokens), extra_keys))
//! NONE_HASH     = H(seed)
//! ```
//!
//! `H` is the `--prefix-caching-hash-algo` ([`HashAlgo`]): SHA-256 or XXH3-128 over the
//! key serialized with pickle (protocol 5) or canonical CBOR. The seed is the engine's
//! `PYTHONHASHSEED` when set; otherwise `"vllm-none-hash"` for SHA-256, and 32 random
//! bytes per process for xxhash, whose hashes then cannot be reproduced outside the
//! engine ([`NoneHashSeed`]). `extra_keys` is `None` or a tuple of, in order,
//! `("lora", lora_name, lora_path)` for a LoRA request and `("cache_salt", salt)` on the
//! first block of a salted request ([`HashExtras`]). With lookahead hashing (EAGLE
//! drafters, `num_hash_lookahead_tokens`), a block is hashed only once the next `L`
//! tokens exist and the extra keys become `(extra_keys, *next_tokens)`.
//!
//! Not implemented: multimodal keys (`("mm", identifier, offset)`, which need the
//! placeholder positions of each item) and prompt-embeds digests; requests with those
//! hash differently here than on the engine.
//!
//! KV events carry the low 64 bits of these hashes as integers by default
//! ([`BlockHash::external`]).
//!
//! [`BlockStored`]: super::BlockStored
//! [`BlockRemoved`]: super::BlockRemoved

mod cbor;
mod object;
mod pickle;

use std::fmt;
use std::str::FromStr;

use object::Object;

use super::ExternalBlockHash;

/// vLLM's `--prefix-caching-hash-algo` choices (`vllm/utils/hashing.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    /// `sha256`: SHA-256 of the pickled key (vLLM's default). Needs the `sha256` feature.
    Sha256,
    /// `sha256_cbor`: SHA-256 of the canonical CBOR key. Needs the `sha256` feature.
    Sha256Cbor,
    /// `xxhash`: XXH3-128 of the pickled key. Needs the `xxhash` feature.
    Xxhash,
    /// `xxhash_cbor`: XXH3-128 of the canonical CBOR key. Needs the `xxhash` feature.
    XxhashCbor,
}

impl HashAlgo {
    /// Every algorithm, in vLLM's order.
    pub const ALL: [HashAlgo; 4] = [
        HashAlgo::Sha256,
        HashAlgo::Sha256Cbor,
        HashAlgo::Xxhash,
        HashAlgo::XxhashCbor,
    ];

    /// The name vLLM's flag takes.
    pub fn as_str(self) -> &'static str {
        match self {
            HashAlgo::Sha256 => "sha256",
            HashAlgo::Sha256Cbor => "sha256_cbor",
            HashAlgo::Xxhash => "xxhash",
            HashAlgo::XxhashCbor => "xxhash_cbor",
        }
    }

    /// Whether vLLM considers it collision resistant (and so derives NONE_HASH from a
    /// fixed seed when `PYTHONHASHSEED` is unset).
    pub fn is_cryptographic(self) -> bool {
        matches!(self, HashAlgo::Sha256 | HashAlgo::Sha256Cbor)
    }

    /// The cargo feature that compiles it in.
    pub fn feature(self) -> &'static str {
        if self.is_cryptographic() {
            "sha256"
        } else {
            "xxhash"
        }
    }

    /// Whether this build can compute it.
    pub fn is_available(self) -> bool {
        match self {
            HashAlgo::Sha256 | HashAlgo::Sha256Cbor => cfg!(feature = "sha256"),
            HashAlgo::Xxhash | HashAlgo::XxhashCbor => cfg!(feature = "xxhash"),
        }
    }

    fn uses_cbor(self) -> bool {
        matches!(self, HashAlgo::Sha256Cbor | HashAlgo::XxhashCbor)
    }

    /// `H(key)`: the serialized key's digest.
    fn hash(self, key: &Object<'_>) -> BlockHash {
        let data = if self.uses_cbor() {
            cbor::dumps(key)
        } else {
            pickle::dumps(key)
        };
        BlockHash(self.digest(&data))
    }

    #[allow(unused_variables)] // Without hash features the data is never read.
    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            #[cfg(feature = "sha256")]
            HashAlgo::Sha256 | HashAlgo::Sha256Cbor => {
                use sha2::Digest;
                sha2::Sha256::digest(data).to_vec()
            }
            #[cfg(feature = "xxhash")]
            HashAlgo::Xxhash | HashAlgo::XxhashCbor => {
                xxhash_rust::xxh3::xxh3_128(data).to_be_bytes().to_vec()
            }
            // `BlockHasher::new` refuses algorithms that are not compiled in.
            #[allow(unreachable_patterns)]
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for HashAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HashAlgo {
    type Err = HashError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HashAlgo::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| HashError::UnknownAlgo(s.to_owned()))
    }
}

/// The seed NONE_HASH (the parent of every first block) is derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoneHashSeed {
    /// The engine runs with `PYTHONHASHSEED` set to this value (any string; vLLM uses
    /// the text itself, not Python's interpretation of it).
    PythonHashSeed(String),
    /// The engine runs without `PYTHONHASHSEED`: vLLM uses `"vllm-none-hash"` for the
    /// SHA-256 algorithms. For xxhash it uses a random seed and the hashes cannot be
    /// reproduced, so [`BlockHasher::new`] refuses this.
    Unset,
}

impl NoneHashSeed {
    /// vLLM's `DEFAULT_NONE_HASH_SEED`.
    pub const DEFAULT: &'static str = "vllm-none-hash";

    /// The seed as an engine started with `PYTHONHASHSEED=value` (or without it, for
    /// `None`) resolves it; reads nothing from this process's environment.
    pub fn from_env_value(value: Option<&str>) -> Self {
        match value {
            Some(v) => NoneHashSeed::PythonHashSeed(v.to_owned()),
            None => NoneHashSeed::Unset,
        }
    }
}

/// Why a [`BlockHasher`] cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// Not one of vLLM's algorithm names.
    #[error(
        "unknown prefix-caching hash algorithm {0:?}: vLLM offers sha256, sha256_cbor, xxhash, xxhash_cbor"
    )]
    UnknownAlgo(String),
    /// The algorithm's cargo feature is off.
    #[error("hash algorithm {algo} is not compiled in: enable vllm-client's `{feature}` feature")]
    NotCompiled {
        /// The algorithm asked for.
        algo: HashAlgo,
        /// The feature that provides it.
        feature: &'static str,
    },
    /// xxhash without `PYTHONHASHSEED`: the engine's NONE_HASH is random.
    #[error(
        "{0} block hashes are not reproducible without PYTHONHASHSEED: vLLM seeds NONE_HASH \
         randomly per process; start the engine with PYTHONHASHSEED set and pass the same \
         value as NoneHashSeed::PythonHashSeed"
    )]
    RandomSeed(HashAlgo),
    /// A block size of zero.
    #[error("block size must be at least 1 (vLLM's --block-size)")]
    BlockSize,
}

/// A block hash as the engine holds it: the digest bytes (32 for SHA-256, 16 for xxhash).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockHash(pub Vec<u8>);

impl BlockHash {
    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The integer KV events carry by default (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`):
    /// the low 64 bits.
    pub fn to_u64(&self) -> u64 {
        ExternalBlockHash::int_from_hash(&self.0)
    }

    /// The hash as KV events carry it: an integer when `int_hashes` (vLLM's default) or
    /// the bytes.
    pub fn external(&self, int_hashes: bool) -> ExternalBlockHash {
        if int_hashes {
            ExternalBlockHash::Int(self.to_u64())
        } else {
            ExternalBlockHash::Bytes(self.0.clone())
        }
    }
}

impl fmt::Debug for BlockHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockHash({self})")
    }
}

impl fmt::Display for BlockHash {
    /// Lowercase hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The request properties that enter a block's hash besides its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HashExtras {
    /// The request's LoRA adapter: `(lora_name, lora_path)` as in its `LoRARequest`.
    pub lora: Option<(String, String)>,
    /// The request's `cache_salt` (hashed into the first block only; empty means none).
    pub cache_salt: Option<String>,
}

impl HashExtras {
    /// No LoRA, no salt.
    pub fn none() -> Self {
        Self::default()
    }

    /// With the LoRA adapter `name` loaded from `path`.
    pub fn with_lora(mut self, name: impl Into<String>, path: impl Into<String>) -> Self {
        self.lora = Some((name.into(), path.into()));
        self
    }

    /// With a cache salt.
    pub fn with_cache_salt(mut self, salt: impl Into<String>) -> Self {
        self.cache_salt = Some(salt.into());
        self
    }
}

/// Computes a prompt's prefix-cache block hashes as a vLLM engine does.
///
/// ```
/// # #[cfg(feature = "sha256")] {
/// use vllm_client::kv_events::{BlockHasher, HashAlgo, HashExtras, NoneHashSeed};
///
/// // The engine: --prefix-caching-hash-algo sha256 --block-size 16, PYTHONHASHSEED=0.
/// let hasher = BlockHasher::new(
///     HashAlgo::Sha256,
///     16,
///     NoneHashSeed::PythonHashSeed("0".into()),
/// )
/// .unwrap();
/// let prompt: Vec<u32> = (0..40).collect();
/// let hashes = hasher.hash_blocks(&prompt, &HashExtras::none());
/// assert_eq!(hashes.len(), 2); // full blocks only
/// let _published = hashes[0].to_u64(); // what BlockStored.block_hashes carries
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BlockHasher {
    algo: HashAlgo,
    block_size: usize,
    lookahead: usize,
    none_hash: BlockHash,
}

impl BlockHasher {
    /// A hasher for engines running `algo` with `--block-size block_size` and the given
    /// NONE_HASH seed.
    pub fn new(algo: HashAlgo, block_size: usize, seed: NoneHashSeed) -> Result<Self, HashError> {
        if !algo.is_available() {
            return Err(HashError::NotCompiled {
                algo,
                feature: algo.feature(),
            });
        }
        if block_size == 0 {
            return Err(HashError::BlockSize);
        }
        let seed = match seed {
            NoneHashSeed::PythonHashSeed(s) => s,
            NoneHashSeed::Unset if algo.is_cryptographic() => NoneHashSeed::DEFAULT.to_owned(),
            NoneHashSeed::Unset => return Err(HashError::RandomSeed(algo)),
        };
        Ok(Self {
            algo,
            block_size,
            lookahead: 0,
            none_hash: algo.hash(&Object::Str(&seed)),
        })
    }

    /// With lookahead hashing over `tokens` tokens past each block (vLLM's
    /// `num_hash_lookahead_tokens`, set for EAGLE-style drafters).
    pub fn with_lookahead_tokens(mut self, tokens: usize) -> Self {
        self.lookahead = tokens;
        self
    }

    /// The algorithm.
    pub fn algo(&self) -> HashAlgo {
        self.algo
    }

    /// Tokens per block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// NONE_HASH: the parent hash of every first block.
    pub fn none_hash(&self) -> &BlockHash {
        &self.none_hash
    }

    /// The hashes of the full blocks of `tokens` (prompt, then any generated tokens), in
    /// order, as vLLM's `get_request_block_hasher` computes them.
    pub fn hash_blocks(&self, tokens: &[u32], extras: &HashExtras) -> Vec<BlockHash> {
        let mut hashes = Vec::new();
        self.extend_hashes(&mut hashes, tokens, extras);
        hashes
    }

    /// Appends the hashes of the blocks of `tokens` that `hashes` (the hashes of its
    /// first blocks, as this method or [`BlockHasher::hash_blocks`] returned them) does not
    /// have yet: incremental hashing as a sequence grows.
    pub fn extend_hashes(&self, hashes: &mut Vec<BlockHash>, tokens: &[u32], extras: &HashExtras) {
        let usable = tokens.len().saturating_sub(self.lookahead);
        let mut start = hashes.len() * self.block_size;
        while start + self.block_size <= usable {
            let end = start + self.block_size;
            let hash = self.hash_block(
                hashes.last(),
                &tokens[start..end],
                start == 0,
                &tokens[end..end + self.lookahead],
                extras,
            );
            hashes.push(hash);
            start = end;
        }
    }

    /// `hash_block_tokens(hash_fn, parent, block_tokens, extra_keys)`.
    fn hash_block(
        &self,
        parent: Option<&BlockHash>,
        block: &[u32],
        first: bool,
        lookahead: &[u32],
        extras: &HashExtras,
    ) -> BlockHash {
        let lora = extras
            .lora
            .as_ref()
            .map(|(name, path)| [Object::Str("lora"), Object::Str(name), Object::Str(path)]);
        let salt = extras
            .cache_salt
            .as_deref()
            .filter(|s| first && !s.is_empty())
            .map(|s| [Object::Str("cache_salt"), Object::Str(s)]);
        // generate_block_hash_extra_keys: lora keys + (mm keys) + cache salt keys.
        let mut keys = Vec::with_capacity(2);
        if let Some(lora) = &lora {
            keys.push(Object::Tuple(lora));
        }
        if let Some(salt) = &salt {
            keys.push(Object::Tuple(salt));
        }
        let base = if keys.is_empty() {
            Object::None
        } else {
            Object::Tuple(&keys)
        };
        let with_lookahead: Vec<Object<'_>>;
        let extra = if self.lookahead == 0 {
            base
        } else {
            // (extra_keys, *lookahead tokens)
            with_lookahead = std::iter::once(base)
                .chain(lookahead.iter().map(|&t| Object::Int(i64::from(t))))
                .collect();
            Object::Tuple(&with_lookahead)
        };
        let parent = parent.unwrap_or(&self.none_hash);
        let key = [Object::Bytes(&parent.0), Object::Tokens(block), extra];
        self.algo.hash(&Object::Tuple(&key))
    }
}
