//! The client's two I/O tasks: one writes to the engines, one reads their outputs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::Waker;

use bytes::Bytes;
use tokio::sync::mpsc;
use zeromq::{PullSocket, RouterRecvHalf, RouterSendHalf, SocketRecv, SocketSend, ZmqMessage};

use super::ClientError;
use super::batch::{OutputBatch, Staged};
use super::shared::{Command, Shared};
use super::stats;
use crate::protocol::{Abort, ENGINE_CORE_DEAD, RequestType, StartDpWave, UtilityOutput};
use crate::wire::{DecodeError, Reader};

/// Writes commands to the engines. Commands that queue up while a send is under way are
/// taken together, and consecutive aborts among them go out as one ABORT per engine.
/// Order is kept: aborts are flushed before any later command, so that an ABORT never
/// overtakes an ADD that followed it (a dropped request id may be reused at once).
pub(crate) async fn input_task(
    shared: Arc<Shared>,
    mut sender: RouterSendHalf,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut batch = Vec::new();
    let mut aborts: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    while let Some(first) = commands.recv().await {
        batch.push(first);
        while let Ok(more) = commands.try_recv() {
            batch.push(more);
        }
        for command in batch.drain(..) {
            match command {
                Command::Abort { engine, request_id } => {
                    aborts.entry(engine).or_default().push(request_id)
                }
                Command::Send {
                    engine,
                    kind,
                    frames,
                } => {
                    flush_aborts(&mut sender, &shared, &mut aborts).await;
                    if let Err(e) = send(&mut sender, &shared, engine, kind, frames).await {
                        shared.kill(e);
                    }
                }
            }
        }
        flush_aborts(&mut sender, &shared, &mut aborts).await;
    }
}

/// Sends the collected aborts, one ABORT message per engine.
async fn flush_aborts(
    sender: &mut RouterSendHalf,
    shared: &Shared,
    aborts: &mut BTreeMap<usize, Vec<String>>,
) {
    for (engine, ids) in std::mem::take(aborts) {
        tracing::debug!(engine, count = ids.len(), "aborting requests");
        let (payload, _) = crate::encode(&Abort(ids));
        let frames = vec![payload.into()];
        if let Err(e) = send(sender, shared, engine, RequestType::Abort, frames).await {
            shared.kill(e);
        }
    }
}

async fn send(
    sender: &mut RouterSendHalf,
    shared: &Shared,
    engine: usize,
    kind: RequestType,
    frames: Vec<Bytes>,
) -> Result<(), ClientError> {
    let mut parts = Vec::with_capacity(frames.len() + 2);
    parts.push(shared.identities[engine].clone());
    parts.push(Bytes::from_static(kind.as_frame()));
    parts.extend(frames);
    let message = ZmqMessage::try_from(parts).map_err(ClientError::transport)?;
    sender
        .send(message)
        .await
        .map_err(|e| ClientError::EngineDead(format!("cannot reach engine {engine}: {e}").into()))
}

/// Drains the input ROUTER's receive side: engines send nothing there after their ready
/// response, so anything else is logged and dropped rather than left buffered.
pub(crate) async fn input_watch_task(mut receiver: RouterRecvHalf) {
    while let Ok(message) = receiver.recv().await {
        tracing::warn!(
            frames = message.len(),
            "unexpected message on the input socket; ignored"
        );
    }
}

/// Reads engine outputs and hands each to its request's stream or utility call.
pub(crate) async fn output_task(shared: Arc<Shared>, mut output: PullSocket) {
    let mut batch = OutputBatch::default();
    let mut wakers = Vec::new();
    loop {
        let message = match output.recv().await {
            Ok(m) => m,
            Err(e) => {
                shared.kill(ClientError::EngineDead(
                    format!("output socket failed: {e}").into(),
                ));
                return;
            }
        };
        let frames = message.into_vec();
        if frames.len() == 1 && frames[0].as_ref() == ENGINE_CORE_DEAD {
            shared.kill(ClientError::EngineDead(
                "an engine sent ENGINE_CORE_DEAD".into(),
            ));
            return;
        }
        match batch.read(&mut Reader::with_frames(&frames[0], &frames[1..])) {
            Ok(()) => dispatch(&shared, &mut batch, &frames[0], &mut wakers),
            Err(e) => fail_malformed(&shared, &frames, e),
        }
    }
}

/// Delivers a message read into `batch` from `payload`.
///
/// The consumers that wait are woken after the whole message is queued and the state
/// unlocked (`wakers` is a reused buffer), so that waking, which may unpark another
/// worker thread with a system call, never happens under the lock that `generate` and
/// the streams also take.
fn dispatch(shared: &Shared, batch: &mut OutputBatch, payload: &[u8], wakers: &mut Vec<Waker>) {
    let outputs = &mut batch.rest;
    let engine = outputs.engine_index;
    let mut wake = None;
    let mut report = None;
    {
        let mut state = shared.lock();
        let state = &mut *state;
        let index = state.fleet.index_of_rank(engine);
        if let (Some(stats), Some(i)) = (&outputs.scheduler_stats, index) {
            state.fleet.loads[i].update(stats);
        }
        // Statistics, when an observer wants them: one clock reading per message.
        let mut iteration = state.observer.as_ref().map(|_| {
            (
                stats::IterationStats::default(),
                stats::wall_clock(),
                outputs.timestamp,
            )
        });
        let weight_version = outputs.weight_version.as_deref();
        let mut full = batch.full.drain(..);
        for staged in &batch.staged {
            match staged {
                Staged::Tokens {
                    request_id,
                    tokens,
                    finish_reason,
                } => {
                    let request_id = OutputBatch::request_id(payload, request_id.clone());
                    let tokens = &batch.tokens[tokens.clone()];
                    if let Some((it, now, ts)) = &mut iteration {
                        state.record(request_id, |s| {
                            s.update(it, tokens.len(), None, *finish_reason, *ts, *now)
                        });
                    }
                    state.deliver(request_id, finish_reason.is_some(), |tx| {
                        wakers.extend(tx.queue_tokens(tokens, *finish_reason, weight_version))
                    });
                }
                Staged::Full => {
                    let Some(output) = full.next() else { break };
                    let (id, finished) = (output.request_id.clone(), output.finished());
                    if let Some((it, now, ts)) = &mut iteration {
                        let tokens = output.new_token_ids.len();
                        state.record(&id, |s| {
                            s.update(it, tokens, Some(&output), output.finish_reason, *ts, *now)
                        });
                    }
                    state.deliver(&id, finished, |tx| {
                        wakers.extend(tx.queue(Ok(output), weight_version))
                    });
                }
            }
        }
        drop(full);
        if let Some(observer) = &state.observer {
            let iteration = iteration.map(|(it, ..)| it).filter(|it| !it.is_empty());
            if iteration.is_some() || outputs.scheduler_stats.is_some() {
                report = Some((observer.clone(), iteration, outputs.scheduler_stats.take()));
            }
        }
        if let Some(wave) = outputs.wave_complete {
            tracing::debug!(wave, engine, "data-parallel wave complete");
            state.fleet.wave_complete(wave);
        }
        if let Some(wave) = outputs.start_wave
            && state.fleet.start_wave(wave)
        {
            wake = Some((wave, engine));
        }
        if let Some(utility) = outputs.utility_output.take() {
            answer_utility(&mut state.utilities, index, utility);
        }
    }
    // The observer runs outside the lock that `generate` and the streams take.
    if let Some((observer, iteration, scheduler)) = report {
        if let Some(iteration) = &iteration {
            observer.iteration(engine, iteration);
        }
        if let Some(scheduler) = &scheduler {
            observer.scheduler(engine, scheduler);
        }
    }
    for waker in wakers.drain(..) {
        waker.wake();
    }
    if let Some((wave, exclude)) = wake {
        wake_engines(shared, wave, exclude);
    }
}

/// Sends START_DP_WAVE to every engine but `exclude_rank`.
pub(crate) fn wake_engines(shared: &Shared, wave: u64, exclude_rank: i64) {
    let start_rank = shared.lock().fleet.start_rank as i64;
    let payload: Bytes = crate::encode(&StartDpWave {
        wave,
        exclude_engine_index: exclude_rank,
    })
    .0
    .into();
    for engine in 0..shared.identities.len() {
        if engine as i64 + start_rank != exclude_rank {
            let _ = shared.commands.send(Command::Send {
                engine,
                kind: RequestType::StartDpWave,
                frames: vec![payload.clone()],
            });
        }
    }
}

fn answer_utility(
    utilities: &mut std::collections::HashMap<u64, super::shared::UtilityEntry>,
    engine: Option<usize>,
    output: UtilityOutput,
) {
    let Some(entry) = utilities.get_mut(&output.call_id) else {
        tracing::warn!(
            call_id = output.call_id,
            "result for an unknown utility call"
        );
        return;
    };
    if let Some(message) = output.failure_message {
        // The first failure answers the call, as an exception in vLLM's gather does.
        if let Some(tx) = entry.tx.take() {
            let _ = tx.send(Err(ClientError::Utility {
                method: entry.method.clone(),
                call_id: output.call_id,
                message,
            }));
        }
    } else {
        // The result goes to its engine's place; one from an engine that was not
        // called (or answered twice) takes the first free place, so the call still ends.
        let place = engine
            .and_then(|e| entry.engines.iter().position(|&called| called == e))
            .filter(|&i| entry.results[i].is_none())
            .or_else(|| entry.results.iter().position(Option::is_none));
        if let Some(i) = place {
            entry.results[i] = Some(output.result.map(|r| r.0).unwrap_or_default());
        }
    }
    entry.pending = entry.pending.saturating_sub(1);
    if entry.pending == 0 {
        if let Some(tx) = entry.tx.take() {
            let _ = tx.send(Ok(entry
                .results
                .iter_mut()
                .flat_map(Option::take)
                .collect()));
        }
        utilities.remove(&output.call_id);
    }
}

/// A message that does not decode fails only the requests it names: their ids are
/// recovered by a shallow walk of the outputs array.
fn fail_malformed(shared: &Shared, frames: &[Bytes], error: DecodeError) {
    tracing::warn!(%error, "malformed engine output");
    let ids = request_ids_in(&frames[0]);
    let mut state = shared.lock();
    for id in ids {
        if let Some(entry) = state.requests.remove(&id) {
            entry
                .tx
                .send(Err(ClientError::Protocol(error.to_string().into())));
            let load = &mut state.fleet.loads[entry.engine];
            load.inflight = load.inflight.saturating_sub(1);
        }
    }
}

/// The request ids of an `EngineCoreOutputs` payload, as far as they can be read.
fn request_ids_in(payload: &[u8]) -> Vec<String> {
    let mut ids = Vec::new();
    let mut r = Reader::new(payload);
    let walk = |r: &mut Reader<'_>, ids: &mut Vec<String>| -> Result<(), DecodeError> {
        if r.array()? < 2 {
            return Ok(());
        }
        r.skip()?; // engine_index
        let n = r.array()?;
        for _ in 0..n {
            let fields = r.array()?;
            if fields > 0 {
                ids.push(r.str()?.to_owned());
                for _ in 1..fields {
                    // A field that does not parse ends the walk; ids so far are kept.
                    r.skip()?;
                }
            }
        }
        Ok(())
    };
    let _ = walk(&mut r, &mut ids);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EngineCoreOutput, EngineCoreOutputs};

    #[test]
    fn request_ids_are_recovered_from_a_broken_message() {
        let outputs = EngineCoreOutputs {
            outputs: vec![
                EngineCoreOutput {
                    request_id: "a".into(),
                    ..Default::default()
                },
                EngineCoreOutput {
                    request_id: "b".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let (mut payload, _) = crate::encode(&outputs);
        assert_eq!(request_ids_in(&payload), vec!["a", "b"]);
        // Corrupt the field after the second id (0xc1 is never valid msgpack): the whole
        // message fails to decode, but both ids are still recovered.
        let at = payload.windows(2).position(|w| w == [0xa1, b'b']).unwrap() + 2;
        payload[at] = 0xc1;
        assert!(crate::decode::<EngineCoreOutputs>(&payload, &[]).is_err());
        assert_eq!(request_ids_in(&payload), vec!["a", "b"]);
        // Truncated inside the second output: what can be read is kept.
        payload.truncate(at);
        assert_eq!(request_ids_in(&payload), vec!["a"]);
    }
}
