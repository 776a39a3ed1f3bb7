//! The ledgers: a fold over engine events. Reports, tests and the dashboard all read the
//! same numbers from here. The claim ledger and the processing ledger are kept apart on
//! purpose: claims are cheap and may fail, processing is the work itself.

use std::collections::BTreeMap;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::events::{Event, EventKind};
use super::holdings::Holdings;
pub use super::lease_walk::HistoryStep;
use super::lease_walk::{lease_held, overlaps_in};
use super::worker_id::WorkerId;

#[derive(Debug, Clone, Default)]
pub struct MessageHistory {
    pub key: String,
    /// Results written for this message (committed finalizes and unguarded marks).
    pub runs: u32,
    /// Provider status checks made for it.
    pub attempts: u32,
    /// Those of its calls that did new work at the provider (an idempotent provider answers
    /// a repeat from its record, with none).
    pub side_effects: u32,
    pub claims: u32,
    pub rejected: u32,
    /// (commit stamp, step), in arrival order; sorted when evaluated.
    pub steps: Vec<(u64, HistoryStep)>,
    pub violations: u32,
    /// Its claims while another lease held and heartbeats of a lease no longer held, as
    /// the history check finds them.
    pub overlaps: u32,
}

impl MessageHistory {
    /// Most messages see a claim, a provider call and a finalize: room for exactly three
    /// steps at first (a growing Vec would reserve four), which matters at 100,000 histories.
    fn record(&mut self, step: (u64, HistoryStep)) {
        if self.steps.capacity() == 0 {
            self.steps.reserve_exact(3);
        }
        self.steps.push(step);
    }

    /// Who wrote its results, in commit order.
    pub fn processed_by(&self) -> Vec<Arc<str>> {
        let mut steps: Vec<&(u64, HistoryStep)> = self.steps.iter().collect();
        steps.sort_by_key(|(seq, _)| *seq);
        steps
            .into_iter()
            .filter_map(|(_, s)| match s {
                HistoryStep::Finalize { owner, .. } | HistoryStep::Mark { owner, .. } => {
                    Some(owner.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// Finalizes whose lease version was not the newest claim at their commit.
    fn count_violations(&mut self) -> u32 {
        self.steps.sort_by_key(|(seq, _)| *seq);
        let mut current: Option<i64> = None;
        let mut bad = 0;
        for (_, step) in &self.steps {
            match step {
                HistoryStep::Claim { version, .. } => current = Some(*version),
                HistoryStep::Finalize { version, .. } => {
                    if current != Some(*version) {
                        bad += 1;
                    }
                    current = None;
                }
                HistoryStep::Call { .. }
                | HistoryStep::Rejected { .. }
                | HistoryStep::Mark { .. }
                | HistoryStep::Heartbeat { .. }
                | HistoryStep::Redriven { .. } => {}
                HistoryStep::Released { .. } | HistoryStep::DeadLettered { .. } => current = None,
            }
        }
        self.violations = bad;
        bad
    }
}

#[derive(Debug, Clone, Default)]
pub struct Ledger {
    // Claim ledger.
    pub claims_ok: u64,
    pub claims_empty: u64,
    pub claims_blocked: u64,
    pub reclaims: u64,
    /// Claim transactions that took something: a batch claim of several messages is one.
    pub claim_transactions: u64,
    /// Each worker's last claim stamp: a batch's claims share one.
    last_claim_seq: HashMap<Arc<str>, u64>,
    /// Leasing off: bulk loads of every Pending row.
    pub loads: u64,
    pub loaded_rows: u64,
    // Processing ledger.
    pub processing_attempts: u64,
    pub finalized: u64,
    pub rejected_finalizes: u64,
    pub marked: u64,
    pub ownership_violations: u64,
    /// Two live leases on one message at once, as the history check counts them: a claim
    /// while another lease on it held, or a heartbeat of a lease its worker no longer held.
    pub overlaps: u64,
    /// Heartbeats that extended a lease, and those that found it lost.
    pub heartbeats: u64,
    pub leases_lost: u64,
    /// Failed attempts that went back to Pending after a backoff.
    pub retries: u64,
    /// Messages dead-lettered (a redriven one that fails again counts again).
    pub dead_letters: u64,
    pub redriven: u64,
    /// Messages dead-lettered now (not redriven since).
    pub dead: BTreeSet<i64>,
    // Workers.
    pub crashes: u64,
    pub panics: u64,
    pub restarts: u64,
    pub failures: u64,
    pub per_worker: BTreeMap<String, u64>,
    pub loaded_by_worker: BTreeMap<String, u64>,
    /// Each message's history, shared between copies of the ledger until one of them
    /// changes it: a replay keeps copies at many positions, each as large as the outbox.
    pub messages: BTreeMap<i64, Arc<MessageHistory>>,
    pub events_seen: u64,
    /// The lease each worker slot holds now.
    pub holdings: Holdings,
    unique: u64,
    duplicated: u64,
    /// One shared copy of each worker name: 100,000 histories need not hold 300,000 strings.
    names: HashMap<String, Arc<str>>,
    /// Seeding creates ids 1..=seeded_upto; payments added later are listed in `added`.
    pub seeded_upto: i64,
    pub added: BTreeSet<i64>,
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger::default()
    }

    pub fn apply(&mut self, ev: &Event) {
        self.events_seen += 1;
        self.holdings.apply(ev);
        let actor = self.name(&ev.actor);
        match &ev.kind {
            EventKind::Claimed { .. }
            | EventKind::ProviderCalled { .. }
            | EventKind::Finalized { .. }
            | EventKind::FinalizeRejected { .. }
            | EventKind::Heartbeat { .. } => self.apply_lease(ev, actor),
            EventKind::AttemptFailed { .. }
            | EventKind::DeadLettered { .. }
            | EventKind::Redriven { .. } => self.apply_failure(ev, actor),
            _ => self.apply_other(ev, actor),
        }
    }

    /// The worker a result counts for: its base name, without the incarnation.
    fn worker_of(actor: &str) -> String {
        WorkerId::parse(actor).map_or_else(|| actor.to_string(), |id| id.base().to_string())
    }

    /// Claims, provider calls, finalizes and heartbeats: a lease's life.
    fn apply_lease(&mut self, ev: &Event, actor: Arc<str>) {
        let worker = Self::worker_of(&ev.actor);
        match &ev.kind {
            EventKind::Claimed {
                id,
                key,
                until_ms,
                version,
                reclaim,
                ..
            } => {
                let step = HistoryStep::Claim {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                    until_ms: *until_ms,
                };
                if self.last_claim_seq.insert(actor.clone(), ev.seq) != Some(ev.seq) {
                    self.claim_transactions += 1;
                }
                self.claimed(ev.seq, *id, key, *reclaim, step);
            }
            EventKind::ProviderCalled {
                id,
                key,
                status,
                effect,
            } => self.called(ev, actor.clone(), (*id, key), *status, *effect),
            EventKind::Finalized {
                id,
                key,
                version,
                status,
            } => {
                self.finalized += 1;
                let step = HistoryStep::Finalize {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                    status: *status,
                };
                self.result_written(ev.seq, worker, *id, key, step);
                self.recount(*id);
            }
            EventKind::FinalizeRejected { id, key, version } => {
                self.rejected_finalizes += 1;
                let m = self.message(*id, key);
                m.rejected += 1;
                let step = HistoryStep::Rejected {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                };
                m.record((ev.seq, step));
            }
            EventKind::Heartbeat {
                id,
                key,
                version,
                until_ms,
            } => {
                self.heartbeats += 1;
                let step = HistoryStep::Heartbeat {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                    until_ms: *until_ms,
                };
                self.message(*id, key).record((ev.seq, step));
                self.recount(*id);
            }
            _ => {}
        }
    }

    /// Failed attempts, dead letters and redrives.
    fn apply_failure(&mut self, ev: &Event, actor: Arc<str>) {
        match &ev.kind {
            EventKind::AttemptFailed {
                id, key, version, ..
            } => {
                self.retries += 1;
                self.processing_attempts += 1;
                self.message(*id, key).attempts += 1;
                let step = HistoryStep::Released {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                };
                self.message(*id, key).record((ev.seq, step));
                self.recount(*id);
            }
            EventKind::DeadLettered {
                id, key, version, ..
            } => {
                self.dead_letters += 1;
                self.processing_attempts += 1;
                self.message(*id, key).attempts += 1;
                self.dead.insert(*id);
                let step = HistoryStep::DeadLettered {
                    owner: actor.clone(),
                    version: *version,
                    at_ms: ev.at_ms,
                };
                self.message(*id, key).record((ev.seq, step));
                self.recount(*id);
            }
            EventKind::Redriven { key, count } => {
                self.redriven += count;
                let ids: Vec<i64> = self
                    .dead
                    .iter()
                    .copied()
                    .filter(|id| {
                        key.as_ref()
                            .is_none_or(|k| self.messages.get(id).is_some_and(|m| &m.key == k))
                    })
                    .collect();
                for id in ids {
                    self.dead.remove(&id);
                    if let Some(m) = self.messages.get_mut(&id).map(Arc::make_mut) {
                        let step = HistoryStep::Redriven {
                            owner: actor.clone(),
                            at_ms: ev.at_ms,
                        };
                        m.record((ev.seq, step));
                    }
                }
            }
            _ => {}
        }
    }

    /// Everything else: empty and blocked claims, loads, marks, crashes, the outbox's size.
    fn apply_other(&mut self, ev: &Event, actor: Arc<str>) {
        let worker = Self::worker_of(&ev.actor);
        match &ev.kind {
            EventKind::ClaimEmpty => self.claims_empty += 1,
            EventKind::ClaimBlocked { .. } => self.claims_blocked += 1,
            EventKind::LeaseLost { .. } | EventKind::QueuedLeaseRanOut { .. } => {
                self.leases_lost += 1
            }
            // The provider was called (and failed) before the loss was found: an attempt.
            EventKind::AttemptLost { id, key, .. } => {
                self.leases_lost += 1;
                self.processing_attempts += 1;
                self.message(*id, key).attempts += 1;
            }
            EventKind::Loaded { count } => {
                self.loads += 1;
                self.loaded_rows += *count as u64;
                *self.loaded_by_worker.entry(worker).or_default() += *count as u64;
            }
            EventKind::Marked { id, key, status } => {
                self.marked += 1;
                let step = HistoryStep::Mark {
                    owner: actor.clone(),
                    at_ms: ev.at_ms,
                    status: *status,
                };
                self.result_written(ev.seq, worker, *id, key, step);
            }
            EventKind::Crashed { panic, .. } => {
                self.crashes += 1;
                if panic.is_some() {
                    self.panics += 1;
                }
            }
            EventKind::Restarted { .. } => self.restarts += 1,
            EventKind::Failed { .. } => self.failures += 1,
            EventKind::MessageAdded { id, key } => {
                self.added.insert(*id);
                self.message(*id, key);
            }
            EventKind::Seeded { messages } => self.seeded_upto = *messages as i64,
            _ => {}
        }
    }

    /// Whether a claim of message `id` committed at `seq` found its lease released before
    /// it (a failed attempt, a dead letter, a redrive): then it is a retry, not the takeover
    /// of an expired lease, whatever its version.
    pub fn follows_a_release(&self, id: i64, seq: u64) -> bool {
        self.messages.get(&id).is_some_and(|m| {
            m.steps
                .iter()
                .filter(|(s, _)| *s < seq)
                .max_by_key(|(s, _)| *s)
                .is_some_and(|(_, step)| {
                    matches!(
                        step,
                        HistoryStep::Released { .. }
                            | HistoryStep::DeadLettered { .. }
                            | HistoryStep::Redriven { .. }
                    )
                })
        })
    }

    /// The lease a claim of message `id` at `at_ms`, committed at `seq`, took while it still
    /// held (its owner and end; `i64::MAX` for a message already processed): the history
    /// check's overlap, judged on the steps committed before the claim.
    pub fn overlapped_by_claim(&self, id: i64, seq: u64, at_ms: i64) -> Option<(Arc<str>, i64)> {
        let m = self.messages.get(&id)?;
        let mut before: Vec<&(u64, HistoryStep)> =
            m.steps.iter().filter(|(s, _)| *s < seq).collect();
        before.sort_by_key(|(s, _)| *s);
        lease_held(before.into_iter().map(|(_, step)| step), at_ms)
    }

    /// A claim event as it should read, before the ledger takes it in: `reclaim` only when
    /// it took over an expired lease, not when it retried a message a failed attempt put
    /// back to Pending, nor when it took the message while another lease still held (then
    /// `overlapped` names that lease).
    pub fn settle_claim(&self, ev: &mut Event) {
        if let EventKind::Claimed {
            id,
            reclaim,
            overlapped,
            ..
        } = &mut ev.kind
        {
            if let Some((owner, until_ms)) = self.overlapped_by_claim(*id, ev.seq, ev.at_ms) {
                *overlapped = Some(super::events::Overlapped {
                    owner: owner.to_string(),
                    until_ms,
                });
                *reclaim = false;
            } else if *reclaim && self.follows_a_release(*id, ev.seq) {
                *reclaim = false;
            }
        }
    }

    /// A successful claim: its step in the message's history. A reclaim is a takeover of
    /// an expired lease: not a retry after a release, not a claim while a lease held.
    fn claimed(&mut self, seq: u64, id: i64, key: &str, reclaim: bool, step: HistoryStep) {
        self.claims_ok += 1;
        if reclaim
            && !self.follows_a_release(id, seq)
            && self.overlapped_by_claim(id, seq, step.at_ms()).is_none()
        {
            self.reclaims += 1;
        }
        let m = self.message(id, key);
        m.claims += 1;
        m.record((seq, step));
        self.recount(id);
    }

    /// A finalize or a mark: one more result for the message and for its worker.
    fn result_written(&mut self, seq: u64, worker: String, id: i64, key: &str, step: HistoryStep) {
        *self.per_worker.entry(worker).or_default() += 1;
        self.count_run(id, key);
        self.message(id, key).record((seq, step));
    }

    fn name(&mut self, actor: &str) -> Arc<str> {
        if let Some(n) = self.names.get(actor) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(actor);
        self.names.insert(actor.to_string(), n.clone());
        n
    }

    /// One more result written for this message; keeps the unique and duplicate counts.
    fn count_run(&mut self, id: i64, key: &str) {
        let m = self.message(id, key);
        m.runs += 1;
        match m.runs {
            1 => self.unique += 1,
            2 => self.duplicated += 1,
            _ => {}
        }
    }

    /// A provider call: one processing attempt, and a side effect when it did new work.
    fn called(
        &mut self,
        ev: &Event,
        owner: Arc<str>,
        (id, key): (i64, &str),
        status: crate::provider::ProviderStatus,
        effect: bool,
    ) {
        self.processing_attempts += 1;
        let m = self.message(id, key);
        m.attempts += 1;
        m.side_effects += u32::from(effect);
        let step = HistoryStep::Call {
            owner,
            at_ms: ev.at_ms,
            status,
        };
        m.record((ev.seq, step));
    }

    fn message(&mut self, id: i64, key: &str) -> &mut MessageHistory {
        let m = Arc::make_mut(self.messages.entry(id).or_default());
        if m.key.is_empty() {
            m.key = key.to_string();
        }
        m
    }

    /// The message's violations and overlaps counted again, its steps in commit order
    /// (an event may arrive after one committed later).
    fn recount(&mut self, id: i64) {
        if let Some(m) = self.messages.get_mut(&id).map(Arc::make_mut) {
            let before = m.violations as u64;
            let after = m.count_violations() as u64;
            self.ownership_violations = self.ownership_violations + after - before;
            let before = m.overlaps as u64;
            let after = overlaps_in(m.steps.iter().map(|(_, step)| step));
            m.overlaps = after as u32;
            self.overlaps = self.overlaps + after - before;
        }
    }

    /// Write transactions the workers committed, each a turn at SQLite's one writer: claims
    /// (a batch is one, an empty claim too), finalizes (rejected ones included), marks,
    /// heartbeats (lost ones included) and failed attempts.
    pub fn writes(&self) -> u64 {
        self.claim_transactions
            + self.claims_empty
            + self.claims_blocked
            + self.finalized
            + self.rejected_finalizes
            + self.marked
            + self.heartbeats
            + self.leases_lost
            + self.retries
            + self.dead_letters
    }

    /// Provider calls that did new work, as their events said.
    pub fn side_effects(&self) -> u64 {
        self.messages
            .values()
            .map(|m| u64::from(m.side_effects))
            .sum()
    }

    /// Results written, in total (finalized + marked).
    pub fn results_written(&self) -> u64 {
        self.finalized + self.marked
    }

    /// Messages with at least one result written.
    pub fn unique_processed(&self) -> u64 {
        self.unique
    }

    /// Each of `seeded` messages had its result written once: none lost, none twice. The
    /// one definition of "exactly once" for reports.
    pub fn exactly_once(&self, seeded: u64) -> bool {
        // A dead letter is not lost: the outbox still holds it for a redrive.
        self.unique + self.dead.len() as u64 == seeded && self.duplicated == 0
    }

    /// Messages whose result was written more than once: the duplicates.
    pub fn processed_more_than_once(&self) -> u64 {
        self.duplicated
    }

    /// How many messages were processed 0, 1, 2... times.
    pub fn runs_histogram(&self) -> BTreeMap<u32, u64> {
        let mut h = BTreeMap::new();
        for m in self.messages.values() {
            *h.entry(m.runs).or_default() += 1;
        }
        h
    }

    /// Was this message id ever created (seeded or added)?
    pub fn was_seeded(&self, id: i64) -> bool {
        (1..=self.seeded_upto).contains(&id) || self.added.contains(&id)
    }

    /// How many times one message was processed (the dashboard's Runs column).
    pub fn runs_of(&self, id: i64) -> u32 {
        self.messages.get(&id).map_or(0, |m| m.runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderStatus;

    fn ev(seq: u64, actor: &str, kind: EventKind) -> Event {
        Event {
            seq,
            at_ms: 0,
            slot: Some(0),
            actor: actor.into(),
            kind,
            sql: None,
        }
    }

    fn claimed(version: i64) -> EventKind {
        EventKind::Claimed {
            id: 1,
            key: "PAY-001".into(),
            until_ms: 500,
            version,
            reclaim: version > 1,
            way: crate::events::ClaimWay::Next,
            overlapped: None,
        }
    }

    fn finalized(version: i64) -> EventKind {
        EventKind::Finalized {
            id: 1,
            key: "PAY-001".into(),
            version,
            status: ProviderStatus::Paid,
        }
    }

    #[test]
    fn finalize_by_the_newest_owner_is_no_violation() {
        let mut l = Ledger::new();
        l.apply(&ev(1, "Worker-A", claimed(1)));
        l.apply(&ev(2, "Worker-B", claimed(2)));
        l.apply(&ev(3, "Worker-B", finalized(2)));
        assert_eq!(l.ownership_violations, 0);
        assert_eq!(l.unique_processed(), 1);
        assert_eq!(l.per_worker["Worker-B"], 1);
    }

    #[test]
    fn finalize_with_a_superseded_lease_is_a_violation_even_when_events_arrive_late() {
        let mut l = Ledger::new();
        l.apply(&ev(1, "Worker-A", claimed(1)));
        // A's finalize committed after B's reclaim, but B's claim event arrives last.
        l.apply(&ev(3, "Worker-A", finalized(1)));
        assert_eq!(l.ownership_violations, 0);
        l.apply(&ev(2, "Worker-B", claimed(2)));
        assert_eq!(l.ownership_violations, 1);
    }

    /// A claim of PAY-001 made at `at_ms`, its lease running to `until_ms`.
    fn claimed_at(version: i64, at_ms: i64, until_ms: i64) -> (EventKind, i64) {
        let kind = EventKind::Claimed {
            id: 1,
            key: "PAY-001".into(),
            until_ms,
            version,
            reclaim: version > 1,
            way: crate::events::ClaimWay::Next,
            overlapped: None,
        };
        (kind, at_ms)
    }

    fn at(seq: u64, actor: &str, (kind, at_ms): (EventKind, i64)) -> Event {
        Event {
            at_ms,
            ..ev(seq, actor, kind)
        }
    }

    #[test]
    fn a_claim_while_a_lease_held_is_an_overlap_not_a_reclaim_and_reads_so() {
        let mut l = Ledger::new();
        l.apply(&at(1, "Worker-A", claimed_at(1, 0, 3_000)));
        // Taken at 1_000, while Worker-A's lease runs to 3_000.
        let mut taken = at(2, "Worker-B", claimed_at(2, 1_000, 4_000));
        l.settle_claim(&mut taken);
        let EventKind::Claimed {
            reclaim,
            overlapped,
            ..
        } = &taken.kind
        else {
            unreachable!()
        };
        assert!(!reclaim);
        assert_eq!(
            overlapped.as_ref().map(|o| (o.owner.as_str(), o.until_ms)),
            Some(("Worker-A", 3_000))
        );
        assert!(taken
            .describe()
            .starts_with("took PAY-001 while Worker-A's lease held"));
        l.apply(&taken);
        // A takeover after Worker-B's lease ran out is a reclaim.
        let mut later = at(3, "Worker-C", claimed_at(3, 4_001, 7_001));
        l.settle_claim(&mut later);
        assert!(later.describe().starts_with("RECLAIMED PAY-001"));
        l.apply(&later);
        assert_eq!((l.reclaims, l.overlaps), (1, 1));
        // The figure is the history check's: the same count, however the events arrive.
        let c = crate::checker::check(&l, &[]);
        assert_eq!(
            c.overlapping_leases.count + c.heartbeats_without_lease.count,
            l.overlaps
        );
        let mut late = Ledger::new();
        late.apply(&at(2, "Worker-B", claimed_at(2, 1_000, 4_000)));
        late.apply(&at(1, "Worker-A", claimed_at(1, 0, 3_000)));
        assert_eq!(
            late.overlaps, 1,
            "the later claim overlaps, known once both are in"
        );
    }

    #[test]
    fn two_marks_of_one_message_are_one_duplicate() {
        let mut l = Ledger::new();
        for (seq, w) in [(1, "Worker-A"), (2, "Worker-B")] {
            l.apply(&ev(
                seq,
                w,
                EventKind::Marked {
                    id: 1,
                    key: "PAY-001".into(),
                    status: ProviderStatus::Paid,
                },
            ));
        }
        assert_eq!(l.processed_more_than_once(), 1);
        assert_eq!(l.runs_of(1), 2);
        assert_eq!(l.runs_histogram()[&2], 1);
    }
}
