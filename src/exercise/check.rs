//! Each built-in exercise's check: a short, fixed schedule of workers (each with its own
//! connection) run statement by statement on a scratch SQLite outbox, and the rule the
//! exercise teaches asked of what it did. A starter fails its check; its solution passes.
//! It runs one schedule (`explore --sql` runs them all) and speaks the explorer's units:
//! messages by payment key, times on the scenario clock, the lessons' lease.

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::clock::{hms, SCENARIO_START_MS};
use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{Lease, OutboxError, StoreShared};
use crate::engine::provider::Provider;
use crate::engine::store::Store;
use crate::engine::student::{Exercise, OpResult, OpRun, Shown, Step, StudentError, StudentStore};

/// The scenario clock's time a check starts at: every scenario's start (09:00:00.000).
const T0: i64 = SCENARIO_START_MS;
/// The lease every claim of a check asks for: the lessons' and the explorer's.
const LEASE: i64 = 3_000;
/// The one message a check seeds.
const KEY: &str = "PAY-001";

/// What a check saw: each statement as it ran, and the rule broken, if one was.
#[derive(Debug, Default)]
pub struct Verdict {
    pub lines: Vec<String>,
    pub broken: Option<String>,
}

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Student(#[from] StudentError),
    #[error("the scratch database: {0}")]
    Scratch(#[from] OutboxError),
    #[error("cannot make a scratch folder: {0}")]
    Folder(#[from] std::io::Error),
}

impl CheckError {
    /// True when the student's statements are at fault (bad input, exit 2).
    pub fn is_students(&self) -> bool {
        matches!(self, CheckError::Student(e) if e.is_students())
    }
}

/// A scratch outbox and the workers' connections to it.
struct World {
    _dir: tempfile::TempDir,
    path: PathBuf,
    shared: Arc<StoreShared>,
    exercise: Arc<Exercise>,
    provider: Provider,
    verdict: Verdict,
}

impl World {
    fn new(exercise: &Exercise, messages: u64) -> Result<World, CheckError> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("exercise.db");
        let shared = Arc::new(StoreShared::default());
        let (mut store, _) = Store::create(&path, shared.clone())?;
        let provider = Provider::new();
        store.seed(&provider, messages, T0)?;
        Ok(World {
            _dir: dir,
            path,
            shared,
            exercise: Arc::new(exercise.clone()),
            provider,
            verdict: Verdict::default(),
        })
    }

    /// A worker's own connection.
    fn connect(&self) -> Result<StudentStore, CheckError> {
        let store = Store::open(&self.path, self.shared.clone())?;
        Ok(StudentStore::new(store, self.exercise.clone()))
    }

    /// One step of `run` by `who`, its statements written down.
    fn step(
        &mut self,
        who: &mut StudentStore,
        run: &mut OpRun,
    ) -> Result<Option<OpResult>, CheckError> {
        let (step, shown) = who.step(run)?;
        self.show(&run.bound.worker, run.kind.name(), &shown);
        Ok(match step {
            Step::Continue => None,
            Step::Done(result) => {
                self.verdict.lines.push(format!("  → {}", said(&result)));
                Some(result)
            }
        })
    }

    /// `run` to its end.
    fn run(&mut self, who: &mut StudentStore, mut run: OpRun) -> Result<OpResult, CheckError> {
        loop {
            if let Some(result) = self.step(who, &mut run)? {
                return Ok(result);
            }
        }
    }

    fn show(&mut self, worker: &str, op: &str, shown: &Shown) {
        for s in &shown.statements {
            let sql: String = s.sql.split_whitespace().collect::<Vec<_>>().join(" ");
            let sql = crate::text::bounded(&sql, 70);
            self.verdict.lines.push(format!(
                "{worker} {op}, line {}: {sql} → {}",
                s.line, s.effect
            ));
        }
        if shown.rolled_back {
            self.verdict.lines.push("  (rolled back)".into());
        }
    }

    fn note(&mut self, line: String) {
        self.verdict.lines.push(line);
    }

    fn broken(mut self, rule: impl Into<String>) -> Verdict {
        self.verdict.broken = Some(rule.into());
        self.verdict
    }

    fn passed(self) -> Verdict {
        self.verdict
    }
}

/// A result as a line says it.
fn said(r: &OpResult) -> String {
    match r {
        OpResult::Claimed(l) => format!(
            "claims {} (lease v{}, until {})",
            l.key,
            l.version,
            hms(l.until_ms)
        ),
        OpResult::NoRow => "no row claimed".into(),
        OpResult::Accepted => "finalize accepted".into(),
        OpResult::Rejected => "finalize rejected".into(),
        OpResult::Extended(until) => format!("lease extended to {}", hms(*until)),
        OpResult::Lost => "lease lost".into(),
    }
}

fn lease_of(r: OpResult) -> Option<Lease> {
    match r {
        OpResult::Claimed(lease) => Some(lease),
        _ => None,
    }
}

/// Run the check of the built-in exercise `name` on `exercise`; None for an unknown name.
pub fn check(name: &str, exercise: &Exercise) -> Option<Result<Verdict, CheckError>> {
    Some(match name {
        "one-owner" => one_owner(exercise),
        "stale-finalize" => stale_finalize(exercise),
        "takeover" => takeover(exercise),
        "heartbeat" => heartbeat(exercise),
        _ => return None,
    })
}

/// Two workers claim at once, their steps taken in turn: one message, one owner.
pub fn one_owner(exercise: &Exercise) -> Result<Verdict, CheckError> {
    let mut w = World::new(exercise, 1)?;
    w.note(format!(
        "One message, {KEY}; at {} Worker-A and Worker-B claim at once, a step each in turn.",
        hms(T0)
    ));
    let mut stores = [w.connect()?, w.connect()?];
    let mut runs = [
        OpRun::claim("Worker-A", T0, LEASE),
        OpRun::claim("Worker-B", T0, LEASE),
    ];
    let mut results: [Option<OpResult>; 2] = [None, None];
    while results.iter().any(Option::is_none) {
        for i in 0..2 {
            if results[i].is_none() {
                results[i] = w.step(&mut stores[i], &mut runs[i])?;
            }
        }
    }
    let claimed: Vec<Lease> = results.into_iter().flatten().filter_map(lease_of).collect();
    Ok(match claimed.as_slice() {
        [a, b] if a.id == b.id => w.broken(format!(
            "one owner per message: Worker-A and Worker-B both claimed {}",
            a.key
        )),
        [] => w.broken(format!(
            "a claimable message is claimed: neither worker claimed {KEY}"
        )),
        _ => w.passed(),
    })
}

/// Worker-A stalls past its lease, a new Worker-A takes the message over, the old one
/// finalizes: only the newest lease may finalize.
pub fn stale_finalize(exercise: &Exercise) -> Result<Verdict, CheckError> {
    let mut w = World::new(exercise, 1)?;
    w.note(format!(
        "Worker-A claims {KEY} at {} and stalls; its lease runs out; at {} a new Worker-A (same name) claims.",
        hms(T0),
        hms(T0 + LEASE + 1)
    ));
    let (mut old, mut new) = (w.connect()?, w.connect()?);
    let Some(stale) = lease_of(w.run(&mut old, OpRun::claim("Worker-A", T0, LEASE))?) else {
        return Ok(w.broken(format!(
            "a claimable message is claimed: the first claim did not claim {KEY}"
        )));
    };
    let later = T0 + LEASE + 1;
    let Some(fresh) = lease_of(w.run(&mut new, OpRun::claim("Worker-A", later, LEASE))?) else {
        return Ok(w.broken(format!(
            "an expired lease may be taken over: the new Worker-A did not claim {KEY}"
        )));
    };
    w.note(format!(
        "At {} the stalled Worker-A wakes and finalizes with its old lease.",
        hms(later + 1)
    ));
    let answer = w.provider.check_status(&stale.key);
    if w.run(&mut old, OpRun::finalize(&stale, &answer, later + 1))? == OpResult::Accepted {
        return Ok(w.broken(format!(
            "only the newest lease finalizes: the stale lease (v{}) was accepted while lease v{} holds {}",
            stale.version, fresh.version, fresh.key
        )));
    }
    if w.run(&mut new, OpRun::finalize(&fresh, &answer, later + 2))? != OpResult::Accepted {
        return Ok(w.broken(format!(
            "the holder finalizes: the finalize of lease v{} on {} was rejected",
            fresh.version, fresh.key
        )));
    }
    Ok(w.passed())
}

/// A worker crashes holding the message: nobody takes it while the lease holds, another
/// worker does once it has run out.
pub fn takeover(exercise: &Exercise) -> Result<Verdict, CheckError> {
    let mut w = World::new(exercise, 1)?;
    w.note(format!(
        "Worker-A claims {KEY} at {} and crashes; Worker-B claims at the lease's end, {}, then at {}.",
        hms(T0),
        hms(T0 + LEASE),
        hms(T0 + LEASE + 1)
    ));
    let (mut a, mut b) = (w.connect()?, w.connect()?);
    if lease_of(w.run(&mut a, OpRun::claim("Worker-A", T0, LEASE))?).is_none() {
        return Ok(w.broken(format!(
            "a claimable message is claimed: Worker-A did not claim {KEY}"
        )));
    }
    if lease_of(w.run(&mut b, OpRun::claim("Worker-B", T0 + LEASE, LEASE))?).is_some() {
        return Ok(w.broken(format!(
            "a lease holds up to and including its end: Worker-B took {KEY} at the end of Worker-A's lease, while it held"
        )));
    }
    if lease_of(w.run(&mut b, OpRun::claim("Worker-B", T0 + LEASE + 1, LEASE))?).is_none() {
        return Ok(w.broken(format!(
            "an expired lease may be taken over: {KEY} stays Processing under Worker-A's expired lease"
        )));
    }
    Ok(w.passed())
}

/// A heartbeat extends the holder's live lease, never shortens it, and does nothing once
/// the lease was taken over.
pub fn heartbeat(exercise: &Exercise) -> Result<Verdict, CheckError> {
    let mut w = World::new(exercise, 1)?;
    let (mut a, mut b) = (w.connect()?, w.connect()?);
    let Some(lease) = lease_of(w.run(&mut a, OpRun::claim("Worker-A", T0, LEASE))?) else {
        return Ok(w.broken(format!(
            "a claimable message is claimed: Worker-A did not claim {KEY}"
        )));
    };
    // Extended at 09:00:00.200, the lease runs to 09:00:03.200.
    let (beat, end) = (T0 + 200, T0 + 200 + LEASE);
    w.note(format!(
        "At {} Worker-A extends its lease, then asks for a shorter one.",
        hms(beat)
    ));
    if w.run(&mut a, OpRun::heartbeat(&lease, beat, LEASE))? != OpResult::Extended(end) {
        return Ok(w.broken(format!(
            "a heartbeat extends the holder's live lease: it did not run to {}",
            hms(end)
        )));
    }
    match w.run(&mut a, OpRun::heartbeat(&lease, beat + 100, 10))? {
        OpResult::Extended(until) if until >= end => {}
        _ => {
            return Ok(w.broken(format!(
                "a heartbeat never shortens a lease: the lease on {KEY} now ends before {}",
                hms(end)
            )))
        }
    }
    w.note(format!(
        "Worker-A stalls past {}; at {} Worker-B takes {KEY} over; Worker-A heartbeats.",
        hms(end),
        hms(end + 1)
    ));
    if lease_of(w.run(&mut b, OpRun::claim("Worker-B", end + 1, LEASE))?).is_none() {
        return Ok(w.broken(format!(
            "an expired lease may be taken over: Worker-B did not claim {KEY}"
        )));
    }
    if w.run(&mut a, OpRun::heartbeat(&lease, end + 2, LEASE))? != OpResult::Lost {
        return Ok(w.broken(format!(
            "a heartbeat extends only a lease still held: Worker-A's heartbeat extended the lease Worker-B holds on {KEY}"
        )));
    }
    Ok(w.passed())
}
