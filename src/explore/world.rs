//! One state of the explorer's small world, and the moves a scheduler may take from it.
//! The database is a real SQLite database (restored from its image before each move); the
//! workers' own memory, the clock and what has happened so far live here.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::clock::hms;
use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{ClaimOutcome, FinalizeOutcome, Lease, MessageRef, OutboxStatus};
use crate::engine::provider::{Provider, StatusCheck};
use crate::engine::store::Store;
use crate::engine::student::{Exercise, OpRun};

use super::check::Check;
use super::clock::TimeModel;
use super::error::ExploreError;
use super::options::{Faults, Mode, LEASE_MS};
use super::oracle::holds_live_lease;
pub(super) use super::seen::done_with;
pub use super::seen::Seen;

/// How far a clock jump moves: just past a whole lease.
pub const JUMP_MS: i64 = LEASE_MS + 100;

/// What a worker holds in memory between its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Local {
    Idle,
    /// Claimed; the provider is next.
    Holding(Lease),
    /// The provider answered; the finalize is next.
    Checked(Lease, StatusCheck),
    /// Leasing off: the loaded snapshot still to process.
    Loaded(VecDeque<MessageRef>),
    /// Leasing off: the provider answered about `MessageRef`; marking it is next.
    Marking(VecDeque<MessageRef>, MessageRef, StatusCheck),
    /// A student's operation between two of its statements (`explore --sql`).
    Running(OpRun),
}

impl Local {
    /// What a fingerprint takes of this local state, its lease's deadline as `rel` gives it
    /// (time left, or expired): the one encoding both the plain and the renamed
    /// fingerprint use.
    pub(super) fn feed(&self, rel: impl Fn(i64) -> i64, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        match self {
            Local::Idle => h.write_u8(0),
            Local::Holding(l) => (1u8, l.id, l.version, rel(l.until_ms)).hash(h),
            Local::Checked(l, c) => {
                (2u8, l.id, l.version, rel(l.until_ms), &c.transaction_id).hash(h)
            }
            Local::Loaded(q) => (3u8, q).hash(h),
            Local::Marking(q, m, c) => (4u8, q, m, c).hash(h),
            Local::Running(run) => (5u8, run).hash(h),
        }
    }
}

/// One worker process. A crash restarts it under the same name with nothing in memory; a
/// stall freezes it, and its supervisor starts a replacement under the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub replacement: bool,
    pub stalled: bool,
    /// The other of a stalled worker and its replacement: each names the other's index.
    pub twin: Option<usize>,
    pub local: Local,
}

impl Actor {
    /// `Worker-A`; `the new Worker-A` for a replacement, `the stalled Worker-A` for the
    /// worker it stands in for.
    pub fn shown(&self) -> String {
        match (self.replacement, self.twin) {
            (true, _) => format!("the new {}", self.name),
            (false, Some(_)) => format!("the stalled {}", self.name),
            (false, None) => self.name.clone(),
        }
    }

    /// The message its next step acts on, when it is known before the step: the one it
    /// holds, or the first claimable one for a claim.
    fn acts_on(&self, before: &Seen) -> Option<String> {
        match &self.local {
            Local::Holding(l) | Local::Checked(l, _) => Some(l.key.clone()),
            Local::Marking(_, m, _) => Some(m.key.clone()),
            Local::Loaded(q) => q.front().map(|m| m.key.clone()),
            Local::Running(run) => match running_about(run) {
                Some((lease, _)) => Some(lease.key.clone()),
                None => before
                    .rows
                    .iter()
                    .find(|r| Some(r.id) == run.bound.id)
                    .or_else(|| {
                        before
                            .rows
                            .iter()
                            .find(|r| r.status != OutboxStatus::Processed)
                    })
                    .map(|r| r.key.clone()),
            },
            Local::Idle => before
                .rows
                .iter()
                .find(|r| r.status != OutboxStatus::Processed)
                .map(|r| r.key.clone()),
        }
    }

    /// The message it has in hand, if any.
    /// The lease this worker holds in memory, live or not.
    pub(super) fn holds_lease(&self) -> Option<&Lease> {
        match &self.local {
            Local::Holding(l) | Local::Checked(l, _) => Some(l),
            Local::Running(run) => run.lease.as_ref(),
            Local::Idle | Local::Loaded(_) | Local::Marking(..) => None,
        }
    }

    fn holds(&self) -> Option<String> {
        match &self.local {
            Local::Idle | Local::Loaded(_) => None,
            Local::Holding(l) | Local::Checked(l, _) => {
                Some(format!("{} (lease v{})", l.key, l.version))
            }
            Local::Marking(_, m, _) => Some(m.key.clone()),
            Local::Running(run) => {
                running_about(run).map(|(l, _)| format!("{} (lease v{})", l.key, l.version))
            }
        }
    }
}

/// The moves a state's bounds held back: a move of the clock or a heartbeat (steps: what
/// lies beyond them is not known), or a crash or a stall (faults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub steps: bool,
    pub faults: bool,
}

/// A scheduler's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The worker's next step of its own cycle.
    Step(usize),
    Crash(usize),
    /// A worker holding a lease, the provider still to call, extends it (a heartbeat),
    /// when heartbeats are on.
    Beat(usize),
    Jump,
    /// A `--sql` search's clock move, by this many milliseconds: to just before, at or
    /// just after the nearest instant at which a comparison may change (`clock.rs`).
    Tick(i64),
    Stall(usize),
    Wake(usize),
}

/// Everything but the database that makes a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    pub now: i64,
    pub actors: Vec<Actor>,
    /// Committed finalizes (or marks) per message id, 1-based index.
    pub finalized: Vec<u32>,
    /// Per message id (1-based), the worker whose claim of it was accepted last: the
    /// explorer's own record of who owns a message, kept whatever a student's statements
    /// write in the row (`explore --sql`).
    pub holder: Vec<Option<usize>>,
    /// Checks this schedule has broken so far.
    pub broken: Vec<Check>,
    /// The student's statements the workers run (`explore --sql`), or None for the
    /// engine's own store.
    pub sql: Option<Arc<Exercise>>,
    /// How a `--sql` search moves its clock and keeps its times.
    pub time: Option<Arc<TimeModel>>,
    /// Per message id (1-based), how many times its lease has run out.
    pub expiries: Vec<u8>,
    /// The most times one message's lease may run out in a schedule (`--max-expiries`).
    pub max_expiries: u8,
    /// Per message id (1-based), the last accepted finalize: the worker and its lease
    /// version, so an explanation can name the step that wrote the row.
    pub finisher: Vec<Option<(usize, i64)>>,
    /// Crashes and stalls so far in this schedule, and the most a `--sql` schedule may
    /// have (`--max-faults`; unbounded for the engine's own outbox).
    pub crashes_and_stalls: u8,
    pub max_crashes_and_stalls: u8,
    /// Heartbeats so far in this schedule, and the most a `--sql` schedule may have.
    pub beats: u8,
    pub max_beats: u8,
    /// Keep each time's exact distance from the clock, not where it stands among the
    /// instants an answer may change (`--exact-clock`: the test that the two agree).
    pub exact_clock: bool,
}

/// A move carried out: what it did, told for a student, and the checks it broke.
pub struct Done {
    pub text: String,
    pub broke: Vec<Check>,
    /// The state it left.
    pub seen: Seen,
    /// The message the move acted on, if one.
    pub key: Option<String>,
}

impl World {
    pub fn new(now: i64, workers: usize, messages: u64) -> World {
        World {
            now,
            actors: (0..workers)
                .map(|i| Actor {
                    name: crate::engine::worker_id::WorkerId::first(i).to_string(),
                    replacement: false,
                    stalled: false,
                    twin: None,
                    local: Local::Idle,
                })
                .collect(),
            finalized: vec![0; messages as usize + 1],
            holder: vec![None; messages as usize + 1],
            broken: Vec::new(),
            sql: None,
            time: None,
            expiries: vec![0; messages as usize + 1],
            max_expiries: u8::MAX,
            finisher: vec![None; messages as usize + 1],
            exact_clock: false,
            crashes_and_stalls: 0,
            max_crashes_and_stalls: u8::MAX,
            beats: 0,
            max_beats: u8::MAX,
        }
    }

    /// The moves worth taking here: every running worker's next step, and the faults that
    /// `faults` allows and that would change something; and whether a move of the clock
    /// was held back, as it would let a lease run out once more than `--max-expiries`.
    pub fn moves(&self, faults: &Faults, beats: bool, seen: &Seen) -> (Vec<Move>, Held) {
        let mut out = Vec::new();
        let mut held = Held::default();
        for (i, a) in self.actors.iter().enumerate() {
            if a.stalled {
                out.push(Move::Wake(i));
                continue;
            }
            out.push(Move::Step(i));
            if beats && matches!(a.local, Local::Holding(_)) {
                match self.beats < self.max_beats {
                    true => out.push(Move::Beat(i)),
                    false => held.steps = true,
                }
            }
            let spare = self.crashes_and_stalls < self.max_crashes_and_stalls;
            if faults.crash && a.local != Local::Idle {
                match spare {
                    true => out.push(Move::Crash(i)),
                    false => held.faults = true,
                }
            }
            // Once per worker: a stalled worker and its replacement stall no more.
            if faults.pause && a.twin.is_none() && a.local != Local::Idle {
                match spare {
                    true => out.push(Move::Stall(i)),
                    false => held.faults = true,
                }
            }
        }

        match &self.time {
            Some(model) if faults.jump => {
                // Each lease's end, as the rows hold it and as the workers believe it.
                let leases = self
                    .actors
                    .iter()
                    .filter_map(|a| a.holds_lease().map(|l| l.until_ms));
                let times = seen.times(model, self.exact_clock).chain(leases);
                for delta in model.ticks(self.now, times) {
                    let over = self.expiring(seen, delta).any(|id| {
                        self.expiries
                            .get(id)
                            .is_some_and(|n| *n >= self.max_expiries)
                    });
                    if over {
                        held.steps = true;
                    } else {
                        out.push(Move::Tick(delta));
                    }
                }
            }
            Some(_) => {}
            None if faults.jump && seen.live_lease(self.now) => out.push(Move::Jump),
            None => {}
        }
        (out, held)
    }

    /// Whether `m` may write to the database (a claim, a finalize, a mark); every other
    /// move changes only the workers' memory, the clock or the provider.
    pub fn writes(&self, m: Move, mode: Mode) -> bool {
        if let (Some(_), Move::Step(i)) = (&self.sql, m) {
            // A student's statement may write; only the provider call surely does not.
            return !matches!(self.actors[i].local, Local::Holding(_));
        }
        match m {
            Move::Step(i) => match &self.actors[i].local {
                Local::Idle => mode.leasing(),
                Local::Checked(..) | Local::Marking(..) | Local::Running(_) => true,
                Local::Holding(_) | Local::Loaded(_) => false,
            },
            Move::Beat(_) => true,
            Move::Crash(_) | Move::Jump | Move::Tick(_) | Move::Stall(_) | Move::Wake(_) => false,
        }
    }

    /// Carry out `m` on the database and the provider, which hold this state.
    pub fn apply(
        &mut self,
        m: Move,
        mode: Mode,
        before: &Seen,
        store: &mut Store,
        provider: &Provider,
    ) -> Result<Done, ExploreError> {
        let mut broke = Vec::new();
        let wrote = self.writes(m, mode);
        let key = match m {
            Move::Step(i) => self.actors[i].acts_on(before),
            _ => None,
        };
        let text = match m {
            Move::Step(i) => self.step(i, mode, before, store, provider, &mut broke)?,
            Move::Beat(i) => match self.sql.clone() {
                Some(ex) if self.time.is_some() => {
                    self.beats = self.beats.saturating_add(1);
                    self.student_beat(i, &ex, (before, store), &mut broke)?
                }
                Some(ex) => self.student_beat(i, &ex, (before, store), &mut broke)?,
                None => self.beat(i, store)?,
            },
            Move::Tick(delta) => self.tick(delta, before),
            Move::Crash(_) | Move::Jump | Move::Stall(_) | Move::Wake(_) => self.fault(m),
        };
        // A fault or the clock touches neither the database nor the provider: what they
        // hold is what they held before.
        let seen = match m {
            Move::Crash(_) | Move::Jump | Move::Tick(_) | Move::Stall(_) | Move::Wake(_) => {
                before.clone()
            }
            // A step that calls the provider changes the provider alone.
            Move::Step(_) if !wrote => Seen {
                calls: provider.calls(),
                ..before.clone()
            },
            Move::Step(_) | Move::Beat(_) => Seen::read(store, provider, self.sql.is_some())?,
        };
        if let (Move::Step(i) | Move::Beat(i), true) = (m, wrote) {
            if seen.cells != before.cells || seen.rows != before.rows {
                self.others_wrote(i);
            }
        }
        self.judge(&seen, &mut broke);
        for c in &broke {
            if !self.broken.contains(c) {
                self.broken.push(*c);
            }
        }
        Ok(Done {
            text,
            broke,
            seen,
            key,
        })
    }

    /// A fault or the clock: it changes what the workers hold and the time, never the
    /// database or the provider.
    fn fault(&mut self, m: Move) -> String {
        match m {
            Move::Crash(i) => {
                self.crashes_and_stalls = self.crashes_and_stalls.saturating_add(1);
                let a = &mut self.actors[i];
                let held = a
                    .holds()
                    .map(|h| format!(" holding {h}"))
                    .unwrap_or_default();
                a.local = Local::Idle;
                format!(
                    "{} crashes{held}; its supervisor restarts it with nothing in hand",
                    a.shown()
                )
            }
            Move::Jump => {
                self.now += JUMP_MS;
                format!(
                    "the clock jumps {:.1} s to {}",
                    JUMP_MS as f64 / 1000.0,
                    hms(self.now)
                )
            }
            Move::Stall(i) => {
                self.crashes_and_stalls = self.crashes_and_stalls.saturating_add(1);
                let new = self.actors.len();
                let a = &mut self.actors[i];
                a.stalled = true;
                a.twin = Some(new);
                // Stalled between two statements of a claim, it holds no lease yet.
                let held = a
                    .holds()
                    .map(|h| format!(" holding {h}"))
                    .unwrap_or_default();
                let name = a.name.clone();
                self.actors.push(Actor {
                    name: name.clone(),
                    replacement: true,
                    stalled: false,
                    twin: Some(i),
                    local: Local::Idle,
                });
                format!("{name} stalls{held}; its supervisor starts a new {name}")
            }
            Move::Wake(i) => {
                let a = &mut self.actors[i];
                a.stalled = false;
                let held = a
                    .holds()
                    .map(|h| format!(", still holding {h}"))
                    .unwrap_or_default();
                format!("the stalled {} wakes{held}", a.name)
            }
            Move::Step(_) | Move::Beat(_) | Move::Tick(_) => {
                unreachable!("a worker's step or the clock's is not a fault")
            }
        }
    }

    /// A worker's next step of its own cycle: claim or load, call the provider, finalize
    /// or mark; each database step is one transaction of the engine's own store.
    fn step(
        &mut self,
        i: usize,
        mode: Mode,
        before: &Seen,
        store: &mut Store,
        provider: &Provider,
        broke: &mut Vec<Check>,
    ) -> Result<String, ExploreError> {
        if let Some(ex) = self.sql.clone() {
            if let Some(text) = self.student_step(i, &ex, (before, store), broke)? {
                return Ok(text);
            }
        }
        let who = self.actors[i].shown();
        let name = self.actors[i].name.clone();
        let local = std::mem::replace(&mut self.actors[i].local, Local::Idle);
        let (next, text) = match local {
            Local::Idle if mode.leasing() => self.claim(&who, &name, before, store, broke)?,
            Local::Idle => self.load(&who, store)?,
            // Only a student's operation leaves a worker between statements.
            Local::Running(run) => (Local::Running(run), format!("{who} waits")),
            Local::Holding(lease) => {
                let check = provider.check_status(&lease.key);
                let text = called(&who, &lease.key, &check, provider);
                (Local::Checked(lease, check), text)
            }
            Local::Checked(lease, check) => {
                let s = (store, before);
                let text = self.finalize(&who, mode, &lease, &check, s, broke)?;
                (Local::Idle, text)
            }
            Local::Loaded(mut queue) => match queue.pop_front() {
                Some(msg) => {
                    let check = provider.check_status(&msg.key);
                    let text = called(&who, &msg.key, &check, provider);
                    (Local::Marking(queue, msg, check), text)
                }
                None => (Local::Idle, format!("{who} has nothing left")),
            },
            Local::Marking(queue, msg, check) => {
                store.mark_processed_by(&name, &msg, &check, self.now)?;
                self.finalized[msg.id as usize] += 1;
                let text = format!("{who} marks {} Processed, owning nothing", msg.key);
                let next = match queue.is_empty() {
                    true => Local::Idle,
                    false => Local::Loaded(queue),
                };
                (next, text)
            }
        };
        self.actors[i].local = next;
        Ok(text)
    }

    /// A heartbeat: the lease extended from now, or, when it is no longer this worker's,
    /// dropped (the worker gives the message up, as the engine's workers do).
    fn beat(&mut self, i: usize, store: &mut Store) -> Result<String, ExploreError> {
        let now = self.now;
        let who = self.actors[i].shown();
        let a = &mut self.actors[i];
        // As the engine's workers: a lease is extended while the provider is still to call.
        let Local::Holding(lease) = &mut a.local else {
            return Ok(format!("{who} holds nothing to extend"));
        };
        let until = store.heartbeat(lease, now, LEASE_MS)?.value;
        let text = match until {
            Some(until) => {
                lease.until_ms = until;
                format!(
                    "{who} extends its lease on {} (v{}) to {}",
                    lease.key,
                    lease.version,
                    hms(until)
                )
            }
            None => format!(
                "{who} finds its lease on {} (v{}) lost and gives the message up",
                lease.key, lease.version
            ),
        };
        if until.is_none() {
            a.local = Local::Idle;
        }
        Ok(text)
    }

    /// A claim; taking a message under another's live lease breaks lease exclusivity.
    fn claim(
        &self,
        who: &str,
        name: &str,
        before: &Seen,
        store: &mut Store,
        broke: &mut Vec<Check>,
    ) -> Result<(Local, String), ExploreError> {
        let now = self.now;
        let outcome = store.claim_next(name, now, LEASE_MS)?;
        let ClaimOutcome::Claimed(lease) = outcome.value else {
            return Ok((Local::Idle, format!("{who} finds nothing to claim")));
        };
        let prior = before.rows.iter().find(|r| r.id == lease.id);
        // Judged by the explorer's own oracle, not the engine's rule it judges.
        if prior.is_some_and(|r| holds_live_lease(r, now)) {
            broke.push(Check::LeaseExclusivity);
        }
        let text = format!(
            "{who} claims {} (lease v{}, until {})",
            lease.key,
            lease.version,
            hms(lease.until_ms)
        );
        Ok((Local::Holding(lease), text))
    }

    /// Leasing off: every Pending message, owned by nobody.
    fn load(&self, who: &str, store: &mut Store) -> Result<(Local, String), ExploreError> {
        let loaded: VecDeque<_> = store.load_pending(self.now)?.into();
        if loaded.is_empty() {
            return Ok((Local::Idle, format!("{who} loads nothing")));
        }
        let keys: Vec<&str> = loaded.iter().map(|m| m.key.as_str()).collect();
        let text = format!("{who} loads {} (no lease)", keys.join(", "));
        Ok((Local::Loaded(loaded), text))
    }

    /// A finalize; one that commits while its lease is not the row's newest breaks
    /// "finalize by a non-owner".
    fn finalize(
        &mut self,
        who: &str,
        mode: Mode,
        lease: &Lease,
        check: &StatusCheck,
        (store, before): (&mut Store, &Seen),
        broke: &mut Vec<Check>,
    ) -> Result<String, ExploreError> {
        let outcome = store.finalize(lease, check, self.now)?.value;
        let (key, v) = (&lease.key, lease.version);
        if outcome == FinalizeOutcome::Rejected {
            return Ok(format!(
                "{who} finalizes {key} under lease v{v}: rejected, the lease is no longer its"
            ));
        }
        self.finalized[lease.id as usize] += 1;
        let row = before.rows.iter().find(|r| r.id == lease.id);
        let owner_now = row.is_some_and(|r| {
            r.status == OutboxStatus::Processing
                && r.locked_by.as_deref() == Some(lease.owner.as_str())
                && r.lease_version == lease.version
        });
        if owner_now {
            return Ok(format!("{who} finalizes {key} under lease v{v}: accepted"));
        }
        broke.push(Check::NonOwnerFinalize);
        let row_version = row.map_or(0, |r| r.lease_version);
        let why = match mode {
            Mode::OwnerGuard => ", because the guard checks only the owner's name",
            _ => "",
        };
        Ok(format!(
            "{who} finalizes {key} under lease v{v}: accepted, though the row was at lease \
             v{row_version}{why}"
        ))
    }
}

/// `Worker-A calls the provider for PAY-001: Paid (side effects for PAY-001: 1)`.
fn called(who: &str, key: &str, check: &StatusCheck, provider: &Provider) -> String {
    let effects = provider.calls().get(key).map_or(0, |c| c.side_effects);
    format!(
        "{who} calls the provider for {key}: {} (side effects for {key} so far: {effects})",
        check.status.as_str()
    )
}

/// The provider's answer a finalize in progress carries (for a worker's memory shown).
pub(super) fn running_about(run: &OpRun) -> Option<(&Lease, Option<&StatusCheck>)> {
    run.lease.as_ref().map(|l| (l, run.answer.as_ref()))
}
