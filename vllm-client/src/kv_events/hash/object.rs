//! The Python object vLLM hashes for a block, as a small tree both serializers walk.
//!
//! `hash_block_tokens` hashes `(parent_block_hash, tuple(block_token_ids), extra_keys)`:
//! bytes, a tuple of ints, and `None` or a tuple of tagged tuples such as
//! `("lora", name, path)` and `("cache_salt", salt)`. NONE_HASH is the hash of the seed
//! string itself.

/// A Python value of the shapes vLLM's block hashing serializes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Object<'a> {
    /// `None`.
    None,
    /// `bytes`.
    Bytes(&'a [u8]),
    /// `str`.
    Str(&'a str),
    /// `int`.
    Int(i64),
    /// A tuple of token ids (a tuple of `int`s).
    Tokens(&'a [u32]),
    /// A tuple.
    Tuple(&'a [Object<'a>]),
}
