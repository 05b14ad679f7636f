//! Parallel sampling (`n > 1`), as vLLM 0.33.0's `AsyncLLM.add_request` fans a request
//! out with `ParentRequest` (`vllm/v1/engine/parallel_sampling.py`).
//!
//! The engine knows nothing of `n`: the frontend sends `n` child requests with
//! `n = 1`, each its own engine request, and joins their outputs. vLLM's rules, which
//! [`child_requests`] and [`ParallelStream`] reproduce:
//!
//! - child `i` has the request id `f"{i}_{parent_request_id}"` and keeps the parent's
//!   `external_req_id`;
//! - its sampling parameters are the parent's with `n = 1`, and with `seed + i` when the
//!   parent has a seed (without one, every child shares the same parameters);
//! - every child is routed on its own, so the children spread over data-parallel
//!   engines (the least loaded first), unless the request pins a rank;
//! - aborting the parent aborts every unfinished child;
//! - with `output_kind = FINAL_ONLY` nothing is reported until every child finished,
//!   then the `n` final outputs come in index order; otherwise each child's outputs
//!   come as they arrive, tagged with the child's index.
//!
//! A request with `n = 1` is sent unchanged, as vLLM sends it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use super::shared::{Shared, StreamItem};
use super::{ClientError, OutputStream};
use crate::protocol::{EngineCoreOutput, EngineCoreRequest, RequestOutputKind};

/// vLLM's child request id: `f"{index}_{parent_request_id}"`.
pub fn child_request_id(index: usize, parent_request_id: &str) -> String {
    format!("{index}_{parent_request_id}")
}

/// The engine requests vLLM sends for `request` (`ParentRequest.get_child_info`): the
/// request itself when `n ≤ 1` (or it has no sampling parameters), else `n` children
/// with their ids, `n = 1`, and `seed + index` when a seed is set. A parent without an
/// `external_req_id` gives its children its own id as theirs (vLLM's
/// `assign_request_id` always sets one before fanning out).
///
/// Fails when `seed + n - 1` does not fit an `i64` (the engine's seed type).
pub fn child_requests(request: EngineCoreRequest) -> Result<Vec<EngineCoreRequest>, ClientError> {
    let n = request.sampling_params.as_ref().map_or(1, |p| p.n);
    if n <= 1 {
        return Ok(vec![request]);
    }
    let n = usize::try_from(n)
        .map_err(|_| ClientError::InvalidRequest(format!("n = {n} is too large")))?;
    let seed = request.sampling_params.as_ref().and_then(|p| p.seed);
    if let Some(seed) = seed
        && seed.checked_add(n as i64 - 1).is_none()
    {
        return Err(ClientError::InvalidRequest(format!(
            "seed {seed} + n - 1 overflows the engine's 64-bit seed; use a seed below {}",
            i64::MAX - (n as i64 - 1)
        )));
    }
    let mut parent = request;
    if parent.external_req_id.is_none() {
        parent.external_req_id = Some(parent.request_id.clone());
    }
    let children = (0..n)
        .map(|index| {
            let mut child = parent.clone();
            child.request_id = child_request_id(index, &parent.request_id);
            if let Some(params) = &mut child.sampling_params {
                params.n = 1;
                params.seed = seed.map(|s| s + index as i64);
            }
            child
        })
        .collect();
    Ok(children)
}

/// The outputs of a request with `n` samples ([`EngineCoreClient::generate_n`]): items
/// are `(index, output)`, `index` being the child's place in `0..n`, as vLLM's
/// `CompletionOutput.index`.
///
/// Each child's outputs come in order, and children interleave as their outputs
/// arrive (polled in turn, so that no child starves the others). With
/// `output_kind = FINAL_ONLY` each child's outputs are merged
/// ([`EngineCoreOutput::merge`]) and the stream yields nothing until every child
/// finished, then the `n` final outputs in index order, as vLLM's `ParentRequest`
/// aggregates them. An error of one child is yielded with its index as it happens
/// (its child's stream then ends); the others go on.
///
/// The stream ends once every child finished. Dropping it before aborts the unfinished
/// children; [`EngineCoreClient::abort`] with the parent's request id aborts them too.
///
/// [`EngineCoreClient::generate_n`]: super::EngineCoreClient::generate_n
/// [`EngineCoreClient::abort`]: super::EngineCoreClient::abort
pub struct ParallelStream {
    request_id: String,
    children: Vec<Option<OutputStream>>,
    child_ids: Vec<String>,
    /// `FINAL_ONLY`: the merged outputs so far, by index.
    aggregated: Option<Vec<Option<EngineCoreOutput>>>,
    /// `FINAL_ONLY`: the aggregated outputs, once every child finished.
    ready: VecDeque<(usize, StreamItem)>,
    /// Where the next poll starts, for fairness.
    next: usize,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ParallelStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelStream")
            .field("request_id", &self.request_id)
            .field("n", &self.children.len())
            .field("unfinished", &self.unfinished())
            .finish()
    }
}

impl ParallelStream {
    pub(super) fn new(
        request_id: String,
        output_kind: RequestOutputKind,
        children: Vec<OutputStream>,
        shared: Arc<Shared>,
    ) -> Self {
        let n = children.len();
        Self {
            request_id,
            child_ids: children.iter().map(|c| c.request_id().to_owned()).collect(),
            children: children.into_iter().map(Some).collect(),
            aggregated: (output_kind == RequestOutputKind::FinalOnly).then(|| vec![None; n]),
            ready: VecDeque::new(),
            next: 0,
            shared,
        }
    }

    /// The parent's request id (the id [`EngineCoreClient::abort`] takes to abort every
    /// child).
    ///
    /// [`EngineCoreClient::abort`]: super::EngineCoreClient::abort
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// Number of samples (`n`).
    pub fn n(&self) -> usize {
        self.children.len()
    }

    /// The engine request ids of the children, by index.
    pub fn child_request_ids(&self) -> &[String] {
        &self.child_ids
    }

    /// Number of children that have not finished.
    pub fn unfinished(&self) -> usize {
        self.children.iter().filter(|c| c.is_some()).count()
    }

    /// Aborts child `index` alone (a stop string found by the frontend in one sample
    /// ends only that sample, as in vLLM): its stream ends with an output whose finish
    /// reason is `Abort`. Unknown or finished children are ignored.
    pub fn abort_child(&mut self, index: usize) {
        if let Some(Some(child)) = self.children.get(index) {
            self.shared.abort(&[child.request_id()]);
        }
    }

    /// Takes an item of child `index`; returns what the stream yields for it.
    fn take(&mut self, index: usize, item: Option<StreamItem>) -> Option<(usize, StreamItem)> {
        let item = match item {
            Some(item) => item,
            None => {
                // The stream ended without a final output (the client shut down).
                self.children[index] = None;
                return None;
            }
        };
        let finished = item.as_ref().map_or(true, EngineCoreOutput::finished);
        if finished {
            self.children[index] = None;
        }
        let Some(aggregated) = &mut self.aggregated else {
            return Some((index, item));
        };
        let output = match item {
            Ok(output) => output,
            Err(error) => {
                // The error stands for this child: nothing of it is aggregated.
                aggregated[index] = None;
                return Some((index, Err(error)));
            }
        };
        match &mut aggregated[index] {
            None => aggregated[index] = Some(output),
            Some(so_far) => {
                if let Err(e) = so_far.merge(output) {
                    self.children[index] = None;
                    aggregated[index] = None;
                    return Some((index, Err(ClientError::Protocol(e.to_string().into()))));
                }
            }
        }
        if self.children.iter().all(Option::is_none) {
            let outputs = std::mem::take(aggregated);
            self.ready.extend(
                outputs
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, o)| Some((i, Ok(o?)))),
            );
            return self.ready.pop_front();
        }
        None
    }
}

impl Stream for ParallelStream {
    type Item = (usize, StreamItem);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(item) = this.ready.pop_front() {
            return Poll::Ready(Some(item));
        }
        let n = this.children.len();
        loop {
            let mut progressed = false;
            for offset in 0..n {
                let index = (this.next + offset) % n;
                let Some(child) = &mut this.children[index] else {
                    continue;
                };
                if let Poll::Ready(item) = Pin::new(child).poll_next(cx) {
                    progressed = true;
                    if let Some(out) = this.take(index, item) {
                        this.next = (index + 1) % n;
                        return Poll::Ready(Some(out));
                    }
                }
            }
            if this.children.iter().all(Option::is_none) {
                return Poll::Ready(this.ready.pop_front());
            }
            if !progressed {
                return Poll::Pending;
            }
        }
    }
}

impl Drop for ParallelStream {
    fn drop(&mut self) {
        // The children's streams abort themselves when dropped unfinished.
        self.shared.lock().parents.remove(&self.request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SamplingParams;

    fn request(n: i64, seed: Option<i64>) -> EngineCoreRequest {
        EngineCoreRequest::new(
            "cmpl-7-0-abcd1234",
            vec![1, 2, 3],
            SamplingParams {
                n,
                seed,
                ..SamplingParams::default()
            },
        )
    }

    #[test]
    fn one_sample_is_sent_unchanged() {
        let r = request(1, Some(5));
        assert_eq!(child_requests(r.clone()).unwrap(), vec![r]);
    }

    #[test]
    fn children_follow_parent_request_rules() {
        let children = child_requests(request(3, Some(10))).unwrap();
        let ids: Vec<&str> = children.iter().map(|c| c.request_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "0_cmpl-7-0-abcd1234",
                "1_cmpl-7-0-abcd1234",
                "2_cmpl-7-0-abcd1234"
            ]
        );
        for (i, child) in children.iter().enumerate() {
            let params = child.sampling_params.as_ref().unwrap();
            assert_eq!((params.n, params.seed), (1, Some(10 + i as i64)));
            assert_eq!(child.external_req_id.as_deref(), Some("cmpl-7-0-abcd1234"));
            assert_eq!(child.prompt_token_ids, Some(vec![1, 2, 3]));
        }
        let unseeded = child_requests(request(2, None)).unwrap();
        assert!(
            unseeded
                .iter()
                .all(|c| c.sampling_params.as_ref().unwrap().seed.is_none())
        );
    }

    #[test]
    fn a_seed_that_would_overflow_is_refused() {
        let error = child_requests(request(4, Some(i64::MAX - 1))).unwrap_err();
        assert!(matches!(error, ClientError::InvalidRequest(m) if m.contains("use a seed below")));
    }
}
