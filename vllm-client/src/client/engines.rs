//! Per-engine load and data-parallel wave state, and the routing decision.
//!
//! Routing follows vLLM's `DPLBAsyncMPClient`: an explicit `data_parallel_rank` wins;
//! otherwise the engine with the lowest score, where the score is the larger of this
//! client's in-flight count and the engine's last reported waiting + running count,
//! plus a penalty for waiting requests on an engine whose KV cache is more than half
//! full. Ties go to the first engine in rotation order, so an idle fleet is filled
//! round-robin.
//!
//! Beyond vLLM: a request for a LoRA adapter prefers the engines that already hold it
//! (loaded by [`crate::EngineCoreClient::add_lora`] or by an earlier request for it), so
//! that adapters are not loaded, and evicted, on every engine in turn. The preference
//! yields to load: a holder is chosen only while its score is within
//! [`ADAPTER_AFFINITY_SLACK`] of the least loaded engine's.
//!
//! Beyond vLLM, opt-in: with prefix routing ([`super::prefix`]) a request goes to the
//! engine holding the longest cached prefix of its prompt, within a load slack of the
//! least loaded engine; the caller computes the per-engine match lengths before taking
//! the lock that guards this state.

use std::collections::HashSet;

use super::prefix::PrefixDecision;
use crate::protocol::{EngineCoreReadyResponse, SchedulerStats};

/// Load of one engine, as the client sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineLoad {
    /// Requests of this client on the engine, exact.
    pub inflight: usize,
    /// Last reported waiting requests (bumped locally between reports).
    pub waiting: i64,
    /// Last reported running requests.
    pub running: i64,
    /// Last reported KV cache usage.
    pub kv_cache_usage: f64,
}

impl EngineLoad {
    fn score(&self) -> f64 {
        let mut score = (self.inflight as f64).max((self.waiting + self.running) as f64);
        if self.waiting > 0 {
            score += self.waiting as f64 * 6.0 * (self.kv_cache_usage - 0.5).max(0.0);
        }
        score
    }

    pub(crate) fn update(&mut self, stats: &SchedulerStats) {
        self.waiting = stats.num_waiting_reqs;
        self.running = stats.num_running_reqs;
        self.kv_cache_usage = stats.kv_cache_usage;
    }
}

/// How much more loaded (in score units, about one request each) an engine holding a
/// request's LoRA adapter may be than the least loaded engine and still get the request.
pub const ADAPTER_AFFINITY_SLACK: f64 = 4.0;

/// Description of a registered engine.
#[derive(Debug, Clone)]
pub struct EngineInfo {
    /// Data-parallel rank.
    pub rank: u16,
    /// What the engine reported when it became ready.
    pub ready: EngineCoreReadyResponse,
}

impl EngineInfo {
    /// Where the engine publishes KV-cache events, if it does: its resolved
    /// `kv_events_config` (endpoints already offset for its data-parallel rank; a
    /// wildcard host means "this engine's host", see
    /// [`SubscriberConfig::from_engine_config`](crate::kv_events::SubscriberConfig::from_engine_config)).
    /// `None` when events are off or the reported value does not decode.
    pub fn kv_events_config(&self) -> Option<crate::kv_events::KVEventsConfig> {
        let value = self.ready.kv_events_config.as_ref()?;
        crate::kv_events::KVEventsConfig::from_value(value)
            .ok()
            .filter(|c| c.enable_kv_cache_events)
    }
}

/// What prefix routing knows about a request, for [`Fleet::choose`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrefixHint<'a> {
    /// Leading blocks of the prompt each engine holds (by index).
    pub matches: &'a [usize],
    /// How much more loaded than the least loaded engine a holder may be.
    pub slack: f64,
}

/// The fleet's routing state.
#[derive(Debug)]
pub(crate) struct Fleet {
    pub loads: Vec<EngineLoad>,
    pub start_rank: u16,
    /// Rotation start, so that clients sharing engines spread their first requests.
    pub rotation: usize,
    /// The data-parallel wave new requests belong to.
    pub current_wave: u64,
    /// Whether the engines are running a wave (false after `wave_complete`).
    pub engines_running: bool,
    /// Whether the engines speak the wave protocol at all (MoE data parallelism);
    /// START_DP_WAVE is only sent to engines that have shown they do.
    pub waves_seen: bool,
    /// The LoRA adapter ids each engine holds, as far as this client knows.
    pub adapters: Vec<HashSet<i64>>,
}

impl Fleet {
    pub fn new(engines: usize, start_rank: u16, rotation: usize) -> Self {
        Self {
            loads: vec![EngineLoad::default(); engines],
            start_rank,
            rotation,
            current_wave: 0,
            engines_running: true,
            waves_seen: false,
            adapters: vec![HashSet::new(); engines],
        }
    }

    /// Index of the engine with data-parallel rank `rank`.
    pub fn index_of_rank(&self, rank: i64) -> Option<usize> {
        let idx = rank.checked_sub(self.start_rank as i64)?;
        usize::try_from(idx).ok().filter(|&i| i < self.loads.len())
    }

    /// Picks the engine for a request (for LoRA adapter `adapter`, if any; with the
    /// leading blocks each engine holds of its prompt, under prefix routing) and counts
    /// the request against it.
    ///
    /// Prefix first: among the engines whose score is within `slack` of the least
    /// loaded engine's, the one holding the longest prefix (ties: the less loaded, then
    /// rotation order). Then adapter affinity, then the least loaded engine.
    pub fn choose(
        &mut self,
        adapter: Option<i64>,
        prefix: Option<PrefixHint<'_>>,
    ) -> (usize, Option<PrefixDecision>) {
        let n = self.loads.len();
        let rotation = (0..n).map(|i| (self.rotation + i) % n);
        let least = |candidates: &mut dyn Iterator<Item = usize>| {
            let mut best = None;
            let mut best_score = f64::INFINITY;
            for idx in candidates {
                let score = self.loads[idx].score();
                if score < best_score {
                    best_score = score;
                    best = Some(idx);
                }
            }
            best.map(|idx| (idx, best_score))
        };
        let (mut best, best_score) = least(&mut rotation.clone()).unwrap_or((0, 0.0));
        let decision = prefix.map(|hint| {
            let mut pick: Option<(usize, usize, f64)> = None;
            for idx in rotation.clone() {
                let matched = hint.matches.get(idx).copied().unwrap_or(0);
                let score = self.loads[idx].score();
                // False for a NaN slack: it admits nobody.
                let within = score <= best_score + hint.slack;
                if matched == 0 || !within {
                    continue;
                }
                let better =
                    pick.is_none_or(|(_, m, s)| matched > m || (matched == m && score < s));
                if better {
                    pick = Some((idx, matched, score));
                }
            }
            match pick {
                Some((idx, _, _)) => {
                    best = idx;
                    PrefixDecision::Routed
                }
                None if hint.matches.iter().any(|&m| m > 0) => PrefixDecision::LoadFallback,
                None => PrefixDecision::NoMatch,
            }
        });
        if let Some(id) = adapter
            && decision != Some(PrefixDecision::Routed)
        {
            let holders = &mut rotation.filter(|&idx| self.adapters[idx].contains(&id));
            if let Some((holder, score)) = least(holders)
                && score <= best_score + ADAPTER_AFFINITY_SLACK
            {
                best = holder;
            }
        }
        // Like vLLM: count the request as waiting until the next stats report.
        self.loads[best].waiting += 1;
        (best, decision)
    }

    /// Records that adapter `id` is on engine `engine`: a request for it went there, and
    /// vLLM's workers load a request's adapter when they run it.
    pub fn adapter_on(&mut self, engine: usize, id: i64) {
        if let Some(held) = self.adapters.get_mut(engine) {
            held.insert(id);
        }
    }

    /// Records an `add_lora` on every engine.
    pub fn adapter_loaded_everywhere(&mut self, id: i64) {
        for held in &mut self.adapters {
            held.insert(id);
        }
    }

    /// Records a `remove_lora` on every engine.
    pub fn adapter_removed(&mut self, id: i64) {
        for held in &mut self.adapters {
            held.remove(&id);
        }
    }

    /// Records `wave_complete`: the engines paused after finishing `wave`.
    pub fn wave_complete(&mut self, wave: u64) {
        self.waves_seen = true;
        self.current_wave = self.current_wave.max(wave + 1);
        self.engines_running = false;
    }

    /// Records `start_wave`: an engine got a request for a finished wave and started
    /// `wave`; returns whether the other engines must be woken.
    pub fn start_wave(&mut self, wave: u64) -> bool {
        self.waves_seen = true;
        if wave >= self.current_wave || !self.engines_running {
            self.current_wave = self.current_wave.max(wave);
            self.engines_running = true;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_fleet_fills_round_robin() {
        let mut fleet = Fleet::new(3, 0, 0);
        let picks: Vec<usize> = (0..6)
            .map(|_| {
                let i = fleet.choose(None, None).0;
                fleet.loads[i].inflight += 1;
                i
            })
            .collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn reported_load_steers_requests_away() {
        let mut fleet = Fleet::new(2, 0, 0);
        fleet.loads[0].update(&SchedulerStats {
            num_running_reqs: 10,
            num_waiting_reqs: 4,
            kv_cache_usage: 0.9,
            ..SchedulerStats::default()
        });
        assert_eq!(fleet.choose(None, None).0, 1);
    }

    #[test]
    fn adapters_stick_to_their_engines_until_the_load_diverges() {
        let mut fleet = Fleet::new(3, 0, 0);
        fleet.adapter_on(2, 7);
        // An idle fleet would take engine 0; the adapter's holder wins.
        assert_eq!(fleet.choose(Some(7), None).0, 2);
        fleet.loads[2].inflight = 1;
        // A new adapter goes to the least loaded engine, which then holds it.
        assert_eq!(fleet.choose(Some(8), None).0, 0);
        // Until the holder is more than the slack busier than the least loaded engine.
        fleet.loads[2].inflight = 1 + ADAPTER_AFFINITY_SLACK as usize;
        fleet.loads[0].inflight = 1;
        fleet.loads[0].waiting = 0;
        fleet.loads[1].waiting = 0;
        fleet.loads[2].waiting = 0;
        assert_eq!(fleet.choose(Some(7), None).0, 1);
        fleet.adapter_loaded_everywhere(7);
        fleet.adapter_removed(7);
        assert!(fleet.adapters.iter().all(|held| !held.contains(&7)));
    }

    fn hint(matches: &[usize], slack: f64) -> Option<PrefixHint<'_>> {
        Some(PrefixHint { matches, slack })
    }

    #[test]
    fn the_longest_prefix_wins_within_the_slack() {
        let mut fleet = Fleet::new(4, 0, 0);
        fleet.loads[2].inflight = 3;
        let (engine, decision) = fleet.choose(None, hint(&[0, 2, 5, 0], 4.0));
        assert_eq!((engine, decision), (2, Some(PrefixDecision::Routed)));
        // Past the slack, the next longest holder within it wins.
        fleet.loads[2].inflight = 6;
        fleet.loads[2].waiting = 0;
        assert_eq!(
            fleet.choose(None, hint(&[0, 2, 5, 0], 4.0)),
            (1, Some(PrefixDecision::Routed))
        );
        // Every holder past the slack: least loaded, as without prefix routing.
        fleet.loads[1].inflight = 6;
        fleet.loads[1].waiting = 0;
        assert_eq!(
            fleet.choose(None, hint(&[0, 2, 5, 0], 4.0)),
            (0, Some(PrefixDecision::LoadFallback))
        );
        // Equal matches: the less loaded holder; no match at all: least loaded.
        for load in &mut fleet.loads {
            *load = EngineLoad::default();
        }
        fleet.loads[1].inflight = 2;
        assert_eq!(fleet.choose(None, hint(&[0, 3, 0, 3], 4.0)).0, 3);
        assert_eq!(
            fleet.choose(None, hint(&[0, 0, 0, 0], 4.0)),
            (0, Some(PrefixDecision::NoMatch))
        );
        // A NaN slack admits no holder; an infinite one ignores load.
        fleet.loads[2].inflight = 100;
        assert_eq!(
            fleet.choose(None, hint(&[0, 0, 1, 0], f64::NAN)).1,
            Some(PrefixDecision::LoadFallback)
        );
        assert_eq!(fleet.choose(None, hint(&[0, 0, 1, 0], f64::INFINITY)).0, 2);
    }

    #[test]
    fn a_prefix_outranks_adapter_affinity_and_a_miss_falls_back_to_it() {
        let mut fleet = Fleet::new(3, 0, 0);
        fleet.adapter_on(2, 7);
        assert_eq!(fleet.choose(Some(7), hint(&[0, 4, 0], 4.0)).0, 1);
        assert_eq!(fleet.choose(Some(7), hint(&[0, 0, 0], 4.0)).0, 2);
    }

    #[test]
    fn ranks_map_to_indices() {
        let fleet = Fleet::new(2, 4, 0);
        assert_eq!(fleet.index_of_rank(5), Some(1));
        assert_eq!(fleet.index_of_rank(3), None);
        assert_eq!(fleet.index_of_rank(6), None);
    }

    #[test]
    fn waves_advance_like_the_coordinator() {
        let mut fleet = Fleet::new(2, 0, 0);
        fleet.wave_complete(0);
        assert_eq!((fleet.current_wave, fleet.engines_running), (1, false));
        assert!(fleet.start_wave(1));
        assert!(fleet.engines_running);
        assert!(!fleet.start_wave(0), "a stale wave wakes nobody");
    }
}
