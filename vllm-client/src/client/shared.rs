//! State shared by the client handle, its streams and its I/O tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::ClientError;
use super::engines::Fleet;
use crate::protocol::{EngineCoreOutput, FinishReason, RequestType};
use crate::wire::Value;

/// What a request's stream receives.
pub(crate) type StreamItem = Result<EngineCoreOutput, ClientError>;

/// An in-flight request.
pub(crate) struct RequestEntry {
    pub engine: usize,
    pub tx: super::mailbox::Sender,
    /// What the statistics need, when an observer wants them.
    pub stats: Option<Box<super::stats::RequestStats>>,
}

/// An in-flight utility call: one result per engine called, answered when all are in
/// (or at the first failure).
pub(crate) struct UtilityEntry {
    pub method: String,
    /// The engines called (indices), in the order their results are returned.
    pub engines: Vec<usize>,
    /// The results so far, at the position of their engine in `engines`.
    pub results: Vec<Option<Value>>,
    /// Answers still expected; the entry goes when the last one is in.
    pub pending: usize,
    pub tx: Option<oneshot::Sender<Result<Vec<Value>, ClientError>>>,
}

/// Work for the input task.
pub(crate) enum Command {
    /// Send `frames` (payload + extra frames) with `kind` to engine `engine`.
    Send {
        engine: usize,
        kind: RequestType,
        frames: Vec<Bytes>,
    },
    /// Abort a request; the input task batches aborts per engine.
    Abort { engine: usize, request_id: String },
}

pub(crate) struct State {
    pub requests: HashMap<String, RequestEntry>,
    /// The statistics observer (`ClientConfig::with_stats`).
    pub observer: Option<Arc<dyn super::stats::StatsObserver>>,
    /// Requests with `n > 1` in flight: the parent id and its children's ids.
    pub parents: HashMap<String, Vec<String>>,
    pub utilities: HashMap<u64, UtilityEntry>,
    pub fleet: Fleet,
    /// Set once, when an engine dies or the client shuts down.
    pub dead: Option<ClientError>,
}

impl State {
    /// Updates the statistics of `request_id` (if it is tracked).
    pub fn record(
        &mut self,
        request_id: &str,
        update: impl FnOnce(&mut super::stats::RequestStats),
    ) {
        if let Some(stats) = self
            .requests
            .get_mut(request_id)
            .and_then(|entry| entry.stats.as_deref_mut())
        {
            update(stats);
        }
    }

    /// Hands an output of `request_id` to `send` if anyone is listening (aborted and
    /// unknown requests have no entry); a request's last output removes its entry.
    pub fn deliver(
        &mut self,
        request_id: &str,
        finished: bool,
        send: impl FnOnce(&super::mailbox::Sender),
    ) {
        if finished {
            if let Some(entry) = self.requests.remove(request_id) {
                let load = &mut self.fleet.loads[entry.engine];
                load.inflight = load.inflight.saturating_sub(1);
                send(&entry.tx);
            }
        } else if let Some(entry) = self.requests.get(request_id) {
            send(&entry.tx);
        }
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    pub commands: mpsc::UnboundedSender<Command>,
    /// ZMQ identities of the engines, by index.
    pub identities: Vec<Bytes>,
}

impl Shared {
    pub fn new(
        fleet: Fleet,
        commands: mpsc::UnboundedSender<Command>,
        identities: Vec<Bytes>,
        observer: Option<Arc<dyn super::stats::StatsObserver>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                requests: HashMap::new(),
                observer,
                parents: HashMap::new(),
                utilities: HashMap::new(),
                fleet,
                dead: None,
            }),
            commands,
            identities,
        })
    }

    /// Locks the state; a poisoned lock (a panic elsewhere) is recovered, as the state
    /// stays consistent between statements.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails everything in flight with `error` and refuses all later work.
    pub fn kill(&self, error: ClientError) {
        let mut state = self.lock();
        if state.dead.is_some() {
            return;
        }
        match error {
            ClientError::Shutdown => tracing::debug!("engine client shut down"),
            _ => tracing::error!(%error, "engine client is dead"),
        }
        state.dead = Some(error.clone());
        for (_, entry) in state.requests.drain() {
            entry.tx.send(Err(error.clone()));
        }
        for (_, mut entry) in state.utilities.drain() {
            if let Some(tx) = entry.tx.take() {
                let _ = tx.send(Err(error.clone()));
            }
        }
    }

    /// Aborts requests: their streams receive a final output with
    /// [`FinishReason::Abort`]. A parent id (`n > 1`) stands for its children; unknown
    /// and finished ids are ignored.
    pub fn abort(&self, request_ids: &[&str]) {
        let mut aborted = Vec::new();
        {
            let mut state = self.lock();
            let mut ids: Vec<String> = Vec::with_capacity(request_ids.len());
            for id in request_ids {
                match state.parents.get(*id) {
                    Some(children) => ids.extend(children.iter().cloned()),
                    None => ids.push((*id).to_owned()),
                }
            }
            for id in ids {
                if let Some(entry) = state.requests.remove(&id) {
                    let load = &mut state.fleet.loads[entry.engine];
                    load.inflight = load.inflight.saturating_sub(1);
                    entry.tx.send(Ok(EngineCoreOutput {
                        request_id: id.clone(),
                        finish_reason: Some(FinishReason::Abort),
                        ..Default::default()
                    }));
                    aborted.push((entry.engine, id));
                }
            }
        }
        for (engine, request_id) in aborted {
            let _ = self.commands.send(Command::Abort { engine, request_id });
        }
    }

    /// Removes a request that its consumer no longer wants and aborts it on its engine.
    pub fn abandon(&self, request_id: &str) {
        let engine = {
            let mut state = self.lock();
            let Some(entry) = state.requests.remove(request_id) else {
                return;
            };
            let load = &mut state.fleet.loads[entry.engine];
            load.inflight = load.inflight.saturating_sub(1);
            if state.dead.is_some() {
                return;
            }
            entry.engine
        };
        let _ = self.commands.send(Command::Abort {
            engine,
            request_id: request_id.to_owned(),
        });
    }
}
