//! Numpy arrays and torch tensors on the wire, and the logprobs built from them.

use bytes::Bytes;

use crate::wire::{Decode, DecodeError, EXT_RAW_VIEW, Encode, Reader, Writer};

/// Arrays below this many bytes travel inline (`VLLM_MSGPACK_ZERO_COPY_THRESHOLD`).
pub const INLINE_THRESHOLD: usize = 256;

/// An n-dimensional array as vLLM's `MsgpackEncoder` writes it: `[dtype, shape, data]`,
/// where `data` is ext type 3 (raw bytes) for arrays under 256 bytes, and otherwise the
/// index of an extra frame of the same ZMQ message. Decoding resolves the index, so
/// `data` always holds the bytes.
///
/// With serde it is a struct `{dtype, shape, data}`, `data` as bytes (a JSON array of
/// numbers); out-of-band frames are a msgpack matter only.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct NdArray {
    /// The numpy dtype string (`"<i4"`, `"<f4"`) or torch dtype name (`"float32"`).
    pub dtype: String,
    /// The shape.
    pub shape: Vec<usize>,
    /// The raw, C-contiguous element bytes.
    #[serde(with = "crate::wire::frame_bytes")]
    pub data: Bytes,
}

impl NdArray {
    /// A little-endian `int32` array (`"<i4"`).
    pub fn from_i32(shape: Vec<usize>, values: &[i32]) -> Self {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Self {
            dtype: "<i4".into(),
            shape,
            data: data.into(),
        }
    }

    /// A little-endian `float32` array (`"<f4"`).
    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Self {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Self {
            dtype: "<f4".into(),
            shape,
            data: data.into(),
        }
    }

    /// Number of elements the shape describes, or `None` on overflow.
    pub fn len(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Whether the shape describes no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Element `i` read as a 4-byte little-endian value of the array's dtype.
    fn word(&self, i: usize) -> Option<[u8; 4]> {
        let start = i.checked_mul(4)?;
        let bytes = self.data.get(start..start.checked_add(4)?)?;
        bytes.try_into().ok()
    }

    /// Element `i` of an `int32` array.
    pub fn i32_at(&self, i: usize) -> Option<i32> {
        self.word(i).map(i32::from_le_bytes)
    }

    /// Element `i` of a `float32` array.
    pub fn f32_at(&self, i: usize) -> Option<f32> {
        self.word(i).map(f32::from_le_bytes)
    }

    /// This array with `other`'s rows appended (concatenation along the first axis),
    /// or `None` when dtypes or the other dimensions differ.
    pub fn concat_rows(&self, other: &NdArray) -> Option<NdArray> {
        if self.dtype != other.dtype
            || self.shape.is_empty()
            || self.shape.len() != other.shape.len()
            || self.shape[1..] != other.shape[1..]
        {
            return None;
        }
        let mut shape = self.shape.clone();
        shape[0] = shape[0].checked_add(other.shape[0])?;
        let mut data = Vec::with_capacity(self.data.len() + other.data.len());
        data.extend_from_slice(&self.data);
        data.extend_from_slice(&other.data);
        Some(NdArray {
            dtype: self.dtype.clone(),
            shape,
            data: data.into(),
        })
    }

    /// Checks dtype and size: `element` bytes per element, matching the shape.
    fn validate(
        &self,
        what: &'static str,
        dtypes: &[&str],
        element: usize,
    ) -> Result<(), DecodeError> {
        if !dtypes.contains(&self.dtype.as_str()) {
            return Err(DecodeError::Invalid {
                what,
                detail: format!("unexpected dtype {:?}", self.dtype),
            });
        }
        match self.len().and_then(|n| n.checked_mul(element)) {
            Some(n) if n == self.data.len() => Ok(()),
            _ => Err(DecodeError::Invalid {
                what,
                detail: format!(
                    "shape {:?} does not match {} data bytes",
                    self.shape,
                    self.data.len()
                ),
            }),
        }
    }
}

impl Encode for NdArray {
    fn encode(&self, w: &mut Writer) {
        w.array_len(3);
        w.str(&self.dtype);
        self.shape.encode(w);
        if self.shape.is_empty() || self.data.len() < INLINE_THRESHOLD {
            w.ext(EXT_RAW_VIEW, &self.data);
        } else {
            let index = w.push_frame(self.data.clone());
            w.uint(index as u64);
        }
    }
}

impl Decode for NdArray {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array()?;
        if n != 3 {
            return Err(DecodeError::Invalid {
                what: "array",
                detail: format!("expected [dtype, shape, data], found {n} elements"),
            });
        }
        let dtype = String::decode(r)?;
        let shape = Vec::<usize>::decode(r)?;
        let data = if r.is_ext()? {
            let at = r.position();
            match r.ext()? {
                (EXT_RAW_VIEW, data) => Bytes::copy_from_slice(data),
                (ty, _) => {
                    return Err(DecodeError::Invalid {
                        what: "array",
                        detail: format!("extension type {ty} at byte {at}"),
                    });
                }
            }
        } else {
            let index = r.int()?;
            r.frame(index)?
        };
        r.leave();
        Ok(NdArray { dtype, shape, data })
    }
}

wire_array! {
    /// Sampled-token log probabilities of one engine step (`vllm.v1.outputs.LogprobsLists`):
    /// for each new token a row of `k + 1` token ids and logprobs (the sampled token
    /// first, then the top-k), and the sampled token's rank.
    pub struct LogprobsLists {
        /// `[rows, k + 1]` int32 token ids.
        pub logprob_token_ids: NdArray = NdArray::default(),
        /// `[rows, k + 1]` float32 log probabilities.
        pub logprobs: NdArray = NdArray::default(),
        /// `[rows]` int32 ranks of the sampled tokens.
        pub sampled_token_ranks: NdArray = NdArray::default(),
        /// Row offsets per request, for batched slicing (speculative decoding).
        pub cu_num_generated_tokens: Option<Vec<i64>> = None,
    }
}

impl LogprobsLists {
    /// Builds the lists from per-token rows of `(token id, logprob)` pairs (sampled
    /// token first) and ranks. All rows must have the same length.
    pub fn from_rows(rows: &[Vec<(i32, f32)>], ranks: &[i32]) -> Self {
        let cols = rows.first().map_or(0, Vec::len);
        let ids: Vec<i32> = rows.iter().flatten().map(|p| p.0).collect();
        let lps: Vec<f32> = rows.iter().flatten().map(|p| p.1).collect();
        Self {
            logprob_token_ids: NdArray::from_i32(vec![rows.len(), cols], &ids),
            logprobs: NdArray::from_f32(vec![rows.len(), cols], &lps),
            sampled_token_ranks: NdArray::from_i32(vec![ranks.len()], ranks),
            cu_num_generated_tokens: None,
        }
    }

    /// Checks that dtypes and shapes agree, so that the accessors can be trusted.
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.logprob_token_ids
            .validate("logprob_token_ids", &["<i4", "int32"], 4)?;
        self.logprobs.validate("logprobs", &["<f4", "float32"], 4)?;
        self.sampled_token_ranks
            .validate("sampled_token_ranks", &["<i4", "int32"], 4)?;
        if self.logprob_token_ids.shape != self.logprobs.shape
            || self.logprob_token_ids.shape.len() != 2
            || self.sampled_token_ranks.shape.first() != self.logprob_token_ids.shape.first()
        {
            return Err(DecodeError::Invalid {
                what: "LogprobsLists",
                detail: "inconsistent shapes".into(),
            });
        }
        Ok(())
    }

    /// Appends the rows of a later step of the same request (as vLLM's
    /// `RequestOutput.add` extends a lagging consumer's logprobs). Fails, leaving
    /// `self` unchanged, when the two do not have the same columns and dtypes.
    pub fn append(&mut self, later: &LogprobsLists) -> Result<(), DecodeError> {
        let concat = |a: &NdArray, b: &NdArray| {
            a.concat_rows(b).ok_or_else(|| DecodeError::Invalid {
                what: "LogprobsLists",
                detail: format!(
                    "cannot append rows of shape {:?} ({}) to shape {:?} ({})",
                    b.shape, b.dtype, a.shape, a.dtype
                ),
            })
        };
        let ids = concat(&self.logprob_token_ids, &later.logprob_token_ids)?;
        let logprobs = concat(&self.logprobs, &later.logprobs)?;
        let ranks = concat(&self.sampled_token_ranks, &later.sampled_token_ranks)?;
        self.logprob_token_ids = ids;
        self.logprobs = logprobs;
        self.sampled_token_ranks = ranks;
        self.cu_num_generated_tokens = None;
        Ok(())
    }

    /// Number of token positions (rows).
    pub fn rows(&self) -> usize {
        self.logprob_token_ids.shape.first().copied().unwrap_or(0)
    }

    /// Entries per row: the sampled token plus the top-k.
    pub fn cols(&self) -> usize {
        self.logprob_token_ids.shape.get(1).copied().unwrap_or(0)
    }

    /// Entry `col` of row `row` as `(token id, logprob)`; column 0 is the sampled token.
    pub fn entry(&self, row: usize, col: usize) -> Option<(i32, f32)> {
        if col >= self.cols() {
            return None;
        }
        let i = row.checked_mul(self.cols())?.checked_add(col)?;
        Some((self.logprob_token_ids.i32_at(i)?, self.logprobs.f32_at(i)?))
    }

    /// The rank of the sampled token at `row`.
    pub fn rank(&self, row: usize) -> Option<i32> {
        self.sampled_token_ranks.i32_at(row)
    }
}

wire_array! {
    /// Log probabilities as torch tensors (`vllm.v1.outputs.LogprobsTensors`, a
    /// `NamedTuple`: every field on the wire). The engine sends a request's **prompt**
    /// logprobs this way, once, when its prefill completes: `[prompt_len - 1, k + 1]`
    /// rows, row `i` scoring prompt token `i + 1` (the token itself first, then the
    /// top-k), dtypes `int32` / `float32`. Large tensors travel as extra frames, like
    /// every array.
    pub struct LogprobsTensors {
        /// `[rows, k + 1]` int32 token ids.
        pub logprob_token_ids: NdArray = NdArray::default(),
        /// `[rows, k + 1]` float32 log probabilities.
        pub logprobs: NdArray = NdArray::default(),
        /// `[rows]` int32 ranks of the scored tokens.
        pub selected_token_ranks: NdArray = NdArray::default(),
        /// Row offsets per request (speculative decoding; `None` for prompt logprobs).
        pub cu_num_generated_tokens: Option<Vec<i64>> = None,
        /// The same offsets as a tensor (`None` for prompt logprobs).
        pub cu_num_generated_tokens_tensor: Option<NdArray> = None,
    }
}

impl LogprobsTensors {
    /// The same rows as [`LogprobsLists`], whose accessors read them (the arrays are
    /// shared, not copied).
    pub fn to_lists(&self) -> LogprobsLists {
        LogprobsLists {
            logprob_token_ids: self.logprob_token_ids.clone(),
            logprobs: self.logprobs.clone(),
            sampled_token_ranks: self.selected_token_ranks.clone(),
            cu_num_generated_tokens: self.cu_num_generated_tokens.clone(),
        }
    }

    /// Builds torch-style tensors (dtype names `int32` / `float32`, as torch tensors
    /// travel) from rows of `(token id, logprob)` pairs and ranks, as the engine builds
    /// prompt logprobs. All rows must have the same length.
    pub fn from_rows(rows: &[Vec<(i32, f32)>], ranks: &[i32]) -> Self {
        let lists = LogprobsLists::from_rows(rows, ranks);
        let torch = |mut a: NdArray, dtype: &str| {
            a.dtype = dtype.into();
            a
        };
        Self {
            logprob_token_ids: torch(lists.logprob_token_ids, "int32"),
            logprobs: torch(lists.logprobs, "float32"),
            selected_token_ranks: torch(lists.sampled_token_ranks, "int32"),
            cu_num_generated_tokens: None,
            cu_num_generated_tokens_tensor: None,
        }
    }

    /// Checks that dtypes and shapes agree ([`LogprobsLists::validate`]).
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.to_lists().validate()
    }
}
