//! Runs a lesson on the engine (no terminal code). The clock stays paused and every worker
//! acts only when a step tells it to, so a lesson is deterministic: re-seeding and replaying
//! steps 1..k gives the same rows, ledgers and provider calls every time. That is how the
//! dashboard steps back.

use std::collections::BTreeSet;

use crate::engine::events::EventKind;
use crate::engine::ledger::Ledger;
use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::engine::worker::NextAction;
use crate::engine::{Engine, EngineConfig};

use super::error::{FigureError, RunError};
use super::format::{Expect, Figure, Lesson, Setup};
use super::perform::Performer;

/// One expectation after its step ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub text: String,
    pub line: usize,
    pub passed: bool,
    /// What was found, when it differs from what was expected.
    pub detail: String,
    /// For a question's check: the choice (0-based) that held.
    pub answer: Option<usize>,
}

/// What one step did and which of its expectations held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    /// 1-based.
    pub number: usize,
    /// An action that could not be carried out (for example, a crashed worker told to act).
    pub error: Option<String>,
    pub checks: Vec<Check>,
    /// A question's answer: the one choice (0-based) whose expectation held.
    pub answer: Option<usize>,
}

impl StepReport {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.checks.iter().all(|c| c.passed)
    }

    /// `step 3 PASS` or `step 3 FAIL: PAY-001 owner Worker-B (line 40): found Worker-A`.
    pub fn line(&self, total: usize) -> String {
        let mut s = format!(
            "step {}/{total} {}",
            self.number,
            if self.passed() { "PASS" } else { "FAIL" }
        );
        let mut problems = Vec::new();
        if let Some(e) = &self.error {
            problems.push(e.clone());
        }
        for c in self.checks.iter().filter(|c| !c.passed) {
            problems.push(format!("{} (line {}): {}", c.text, c.line, c.detail));
        }
        if !problems.is_empty() {
            s.push_str(": ");
            s.push_str(&problems.join("; "));
        }
        s
    }

    /// `the question's answer 2: Worker-B is refused ...`, for a step that asked one.
    pub fn answer_line(&self) -> Option<String> {
        let c = self.checks.iter().find(|c| c.answer.is_some())?;
        Some(format!("the question's {}", c.text))
    }
}

/// The engine configuration a lesson's setup asks for.
pub fn engine_config(setup: &Setup) -> EngineConfig {
    EngineConfig {
        workers: setup.workers,
        messages: setup.messages,
        lease_ms: setup.lease_ms,
        process_ms: setup.process_ms,
        idle_ms: crate::setup::idle_ms(setup.process_ms),
        leasing: setup.leasing,
        reliability: setup.reliability.clone(),
        exercise: setup.exercise.clone(),
        ..EngineConfig::default()
    }
}

/// Where a lesson stands. The engine and the ledger belong to the caller (the dashboard
/// folds events into its own), so every method borrows them.
#[derive(Debug, Clone)]
pub struct LessonRunner {
    pub lesson: Lesson,
    /// Steps run so far; the next is `steps[done]`.
    pub done: usize,
    /// Workers frozen by a `pause` action: they hold what they hold and never act.
    pub frozen: BTreeSet<usize>,
    /// The report of every step run so far.
    pub reports: Vec<StepReport>,
}

impl LessonRunner {
    pub fn new(lesson: Lesson) -> LessonRunner {
        LessonRunner {
            lesson,
            done: 0,
            frozen: BTreeSet::new(),
            reports: Vec::new(),
        }
    }

    pub fn total(&self) -> usize {
        self.lesson.steps.len()
    }

    pub fn finished(&self) -> bool {
        self.done >= self.total()
    }

    /// Settings the engine configuration does not carry; call after every (re)start.
    pub fn prepare(&mut self, engine: &mut Engine) {
        let setup = &self.lesson.setup;
        let before = engine.run_settings();
        engine.provider.set_idempotent(setup.idempotent_provider);
        if engine.settings.leasing() != setup.leasing {
            engine.set_leasing(setup.leasing);
        }
        engine
            .settings
            .lease_ms
            .store(setup.lease_ms, std::sync::atomic::Ordering::SeqCst);
        engine
            .settings
            .process_ms
            .store(setup.process_ms, std::sync::atomic::Ordering::SeqCst);
        engine.settings.apply(&setup.reliability, setup.lease_ms);
        engine.provider.set_faults(setup.reliability.faults.clone());
        engine
            .settings
            .batch
            .store(setup.batch as i64, std::sync::atomic::Ordering::SeqCst);
        let owner_only = setup.finalize_guard == crate::engine::outbox::FinalizeGuard::OwnerOnly;
        engine
            .settings
            .owner_only_finalize
            .store(owner_only, std::sync::atomic::Ordering::SeqCst);
        if engine.run_settings() != before {
            // The seeding recorded the engine's first settings: the lesson's replace them.
            let _ = engine.record_settings();
        }
        self.done = 0;
        self.frozen.clear();
        self.reports.clear();
    }

    /// Back to the lesson's first state: a fresh outbox, fresh workers, the clock rewound.
    pub fn reseed(&mut self, engine: &mut Engine) -> Result<(), RunError> {
        engine.clock.pause();
        engine.config.workers = self.lesson.setup.workers;
        engine.reset(self.lesson.setup.messages, true)?;
        self.prepare(engine);
        Ok(())
    }

    /// Carry out the next step's actions. Every event they cause is on the engine's
    /// channel when this returns. Stops at the first action that cannot be carried out.
    pub fn apply_next(&mut self, engine: &mut Engine) -> Result<(), RunError> {
        let Some(step) = self.lesson.steps.get(self.done).cloned() else {
            return Err(RunError::NoMoreSteps);
        };
        self.done += 1;
        for (action, text) in step.actions.iter().zip(&step.actions_text) {
            Performer::new(&mut self.frozen)
                .perform(engine, action)
                .map_err(|cause| RunError::Action {
                    text: text.clone(),
                    cause,
                })?;
        }
        Ok(())
    }

    /// Record the report of the step just applied (its checks from [`Self::evaluate`]),
    /// with what stopped its actions, if anything did.
    pub fn record(&mut self, error: Option<RunError>, checks: Vec<Check>) -> &StepReport {
        self.reports.truncate(self.done.saturating_sub(1));
        let answer = checks.iter().find_map(|c| c.answer);
        self.reports.push(StepReport {
            number: self.done,
            error: error.map(|e| e.to_string()),
            checks,
            answer,
        });
        self.reports.last().expect("just pushed")
    }

    /// Evaluate the expectations of the step just applied.
    pub fn evaluate(&self, engine: &Engine, ledger: &Ledger) -> Vec<Check> {
        let Some(step) = self
            .done
            .checked_sub(1)
            .and_then(|i| self.lesson.steps.get(i))
        else {
            return Vec::new();
        };
        let mut checks: Vec<Check> = step
            .expects
            .iter()
            .map(|e| {
                let found = figure(engine, ledger, e);
                match found {
                    Ok(v) if v == e.value => Check {
                        text: e.text.clone(),
                        line: e.line,
                        passed: true,
                        detail: String::new(),
                        answer: None,
                    },
                    Ok(v) => Check {
                        text: e.text.clone(),
                        line: e.line,
                        passed: false,
                        detail: format!("found {v}"),
                        answer: None,
                    },
                    Err(err) => Check {
                        text: e.text.clone(),
                        line: e.line,
                        passed: false,
                        detail: err.to_string(),
                        answer: None,
                    },
                }
            })
            .collect();
        if let Some(q) = &step.quiz {
            checks.push(quiz_check(q, engine, ledger));
        }
        checks
    }
}

/// A question holds when exactly one choice's expectation does: that choice is the answer
/// the screen shows.
fn quiz_check(q: &crate::lesson::Quiz, engine: &Engine, ledger: &Ledger) -> Check {
    let holds: Vec<usize> = q
        .choices
        .iter()
        .enumerate()
        .filter(|(_, c)| figure(engine, ledger, &c.expect).is_ok_and(|v| v == c.expect.value))
        .map(|(i, _)| i)
        .collect();
    match holds.as_slice() {
        [one] => Check {
            text: format!("answer {}: {}", one + 1, q.choices[*one].text),
            line: q.line,
            passed: true,
            detail: String::new(),
            answer: Some(*one),
        },
        _ => Check {
            text: "the question has exactly one answer".into(),
            line: q.line,
            passed: false,
            detail: format!(
                "{} of its {} choices hold{}",
                holds.len(),
                q.choices.len(),
                match holds.as_slice() {
                    [] => String::new(),
                    h => format!(
                        " ({})",
                        h.iter()
                            .map(|i| (i + 1).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            ),
            answer: None,
        },
    }
}

/// The value of an expectation's figure right now, as text: what its check compares, and
/// what the dashboard shows for it.
pub fn figure(engine: &Engine, ledger: &Ledger, e: &Expect) -> Result<String, FigureError> {
    let store = engine.store();
    let row = |id: i64| -> Result<crate::engine::outbox::MessageRow, FigureError> {
        let rows = store.messages((id - 1).max(0) as u64, 1)?;
        rows.into_iter()
            .find(|r| r.id == id)
            .ok_or(FigureError::NoSuchMessage(id))
    };
    let calls = || engine.provider.calls();
    Ok(match &e.figure {
        Figure::Status(m) => row(m.id)?.status.to_string(),
        Figure::Owner(m) => row(m.id)?.locked_by.unwrap_or_else(|| "none".into()),
        Figure::Lease(m) => row(m.id)?.lease_version.to_string(),
        Figure::Payment(m) => row(m.id)?.payment_status.to_string(),
        Figure::Processed(m) => ledger.runs_of(m.id).to_string(),
        Figure::Attempts(m) => row(m.id)?.attempts.to_string(),
        Figure::Ledger(name) => ledger_figure(ledger, name).to_string(),
        Figure::Outbox(status) => {
            let c = store.outbox_counts()?;
            match status {
                OutboxStatus::Pending => c.pending,
                OutboxStatus::Processing => c.processing,
                OutboxStatus::Processed => c.processed,
                OutboxStatus::DeadLettered => c.dead_lettered,
            }
            .to_string()
        }
        Figure::Payments(status) => {
            let c = store.payment_counts()?;
            match status {
                PaymentStatus::Pending => c.pending,
                PaymentStatus::Paid => c.paid,
                PaymentStatus::Failed => c.failed,
            }
            .to_string()
        }
        Figure::ProviderCalls(None) => engine.provider.status_checks_total().to_string(),
        Figure::ProviderEffects(None) => engine.provider.side_effects_total().to_string(),
        Figure::ProviderCalls(Some(m)) => calls()
            .get(&m.key)
            .map_or(0, |c| c.status_checks)
            .to_string(),
        Figure::ProviderEffects(Some(m)) => calls()
            .get(&m.key)
            .map_or(0, |c| c.side_effects)
            .to_string(),
    })
}

fn ledger_figure(l: &Ledger, name: &str) -> u64 {
    match name {
        "claims" => l.claims_ok,
        "empty" => l.claims_empty,
        "blocked" => l.claims_blocked,
        "reclaims" => l.reclaims,
        "attempts" => l.processing_attempts,
        "unique" => l.unique_processed(),
        "duplicates" => l.processed_more_than_once(),
        "rejected" => l.rejected_finalizes,
        "violations" => l.ownership_violations,
        "overlaps" => l.overlaps,
        "crashes" => l.crashes,
        "heartbeats" => l.heartbeats,
        "leases lost" => l.leases_lost,
        "retries" => l.retries,
        "dead letters" => l.dead_letters,
        "claim transactions" => l.claim_transactions,
        "writes" => l.writes(),
        "results" => l.results_written(),
        _ => 0,
    }
}

/// A lesson with its own engine and ledger: what `--check` and the tests drive.
pub struct Session {
    pub runner: LessonRunner,
    pub ledger: Ledger,
    pub engine: Engine,
}

impl Session {
    pub fn start(lesson: Lesson) -> Result<Session, RunError> {
        Session::start_in(lesson, None)
    }

    /// As [`Session::start`], keeping the database at `db` when given.
    pub fn start_in(lesson: Lesson, db: Option<std::path::PathBuf>) -> Result<Session, RunError> {
        let config = EngineConfig {
            db: db.map(crate::engine::backend::Db::from),
            ..engine_config(&lesson.setup)
        };
        let engine = Engine::start(config, true)?;
        let mut s = Session {
            runner: LessonRunner::new(lesson),
            ledger: Ledger::new(),
            engine,
        };
        s.runner.prepare(&mut s.engine);
        s.drain();
        Ok(s)
    }

    fn drain(&mut self) {
        while let Ok(e) = self.engine.events().try_recv() {
            if matches!(e.kind, EventKind::Seeded { .. }) {
                self.ledger = Ledger::new();
            }
            self.ledger.apply(&e);
        }
    }

    /// Run the next step and evaluate it.
    pub fn forward(&mut self) -> StepReport {
        let error = self.runner.apply_next(&mut self.engine).err();
        self.drain();
        let checks = self.runner.evaluate(&self.engine, &self.ledger);
        self.runner.record(error, checks).clone()
    }

    /// One step back: re-seed and replay every step before the current one.
    pub fn back(&mut self) -> Result<(), RunError> {
        let target = self.runner.done.saturating_sub(1);
        self.goto(target)
    }

    /// Re-seed and replay the first `steps` steps.
    pub fn goto(&mut self, steps: usize) -> Result<(), RunError> {
        self.runner.reseed(&mut self.engine)?;
        self.drain();
        for _ in 0..steps.min(self.runner.total()) {
            self.forward();
        }
        Ok(())
    }

    /// Everything a step can change, as text: rows, payments, provider calls and the
    /// ledger's counters. Two equal fingerprints mean two equal states.
    pub fn fingerprint(&self) -> String {
        let store = self.engine.store();
        let rows = store
            .messages(0, store.message_count().unwrap_or(0))
            .unwrap_or_default();
        let l = &self.ledger;
        format!(
            "{rows:?}\n{:?}\n{:?}\nclock {}\nledger {} {} {} {} {} {} {} {} {} {} {} {} {}\n\
             workers {:?}",
            store.payments().unwrap_or_default(),
            self.engine
                .provider
                .calls()
                .iter()
                .map(|(k, c)| (k.clone(), c.status_checks, c.side_effects))
                .collect::<Vec<_>>(),
            self.engine.clock.now(),
            l.claims_ok,
            l.claims_empty,
            l.claims_blocked,
            l.reclaims,
            l.processing_attempts,
            l.unique_processed(),
            l.processed_more_than_once(),
            l.rejected_finalizes,
            l.ownership_violations,
            l.heartbeats,
            l.leases_lost,
            l.retries,
            l.dead_letters,
            self.engine
                .workers()
                .iter()
                .map(|w| {
                    let s = w.status();
                    let next = match s.next {
                        NextAction::Claim | NextAction::Load => "holds nothing".to_string(),
                        other => other.describe(),
                    };
                    (s.name, next)
                })
                .collect::<Vec<_>>(),
        )
    }
}

/// Run every step of a lesson and evaluate every expectation.
pub fn check_lesson(lesson: Lesson) -> Result<Vec<StepReport>, RunError> {
    check_lesson_in(lesson, None)
}

/// As [`check_lesson`], keeping the database at `db` when given.
pub fn check_lesson_in(
    lesson: Lesson,
    db: Option<std::path::PathBuf>,
) -> Result<Vec<StepReport>, RunError> {
    let mut s = Session::start_in(lesson, db)?;
    let mut reports = Vec::new();
    while !s.runner.finished() {
        reports.push(s.forward());
    }
    Ok(reports)
}
