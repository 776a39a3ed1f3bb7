//! The lesson file format (`format_version = 1`): what a lesson says once it is read, its
//! setup, its steps and what each step does, states and asks.

mod action;
mod figure;
mod limits;

pub use action::{Action, Condition};
pub use figure::{
    ledger_figure, Figure, LedgerFigure, LEDGER_FIGURES, PROCESSED, PROVIDER_CALLS, SIDE_EFFECTS,
};
pub use limits::{
    CHOICES, FORMAT_VERSION, MAX_ADD_PAYMENT, MAX_CLOCK_MS, MAX_EXPECTED, MAX_LESSON_MESSAGES,
    MAX_REPORTED_ERRORS, MAX_SQL_PATH, MAX_WORK_BEATS,
};

use crate::engine::outbox::FinalizeGuard;
use crate::setup::{Reliability, Timing};

/// How an outbox is set up before the first step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub workers: usize,
    pub messages: u64,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub leasing: bool,
    /// The provider honours the payment's idempotency key: a repeated call returns the
    /// first result and causes no new side effect.
    pub idempotent_provider: bool,
    /// Heartbeats, retries and the dead letter.
    pub reliability: Reliability,
    /// Messages a worker claims per transaction (1: one at a time).
    pub batch: usize,
    /// What a finalize checks: leaselab's fencing token, or (to show it fail) the owner's
    /// name only.
    pub finalize_guard: FinalizeGuard,
    /// The exercise whose statements the workers run (the lesson's `sql`), if any.
    pub exercise: Option<std::sync::Arc<crate::engine::student::Exercise>>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            workers: 2,
            messages: 6,
            lease_ms: Timing::DASHBOARD.lease_ms,
            // Steps skip processing time; free play in the dashboard uses it.
            process_ms: Timing::DASHBOARD.process_ms,
            leasing: true,
            idempotent_provider: false,
            reliability: Reliability::default(),
            batch: 1,
            finalize_guard: FinalizeGuard::FencingToken,
            exercise: None,
        }
    }
}

/// A message named by its payment key (`PAY-001`) or its outbox id (`1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSel {
    pub id: i64,
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// As written in the file.
    pub text: String,
    pub line: usize,
    pub figure: Figure,
    pub value: String,
}

/// One answer a learner may predict, and the expectation that holds when it is right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub text: String,
    pub expect: Expect,
}

/// A question asked before a step runs; the step's outcome picks the answer, since exactly
/// one choice's expectation holds once its actions are done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quiz {
    pub ask: String,
    pub choices: Vec<Choice>,
    /// The line of `ask`, for a report.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The actions as written in the file, for display.
    pub actions_text: Vec<String>,
    pub actions: Vec<Action>,
    pub say: String,
    pub expects: Vec<Expect>,
    /// Asked before the step runs: predict, then the step reveals.
    pub quiz: Option<Quiz>,
    /// A pane the dashboard opens once the step has run (`show = "sql"`).
    pub show: Option<Pane>,
}

/// A pane a step may ask the dashboard to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The SQL pane: each worker's last statements.
    Sql,
}

impl Pane {
    pub const ALL: [Pane; 1] = [Pane::Sql];

    /// As a lesson file writes it.
    pub fn word(self) -> &'static str {
        match self {
            Pane::Sql => "sql",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    pub name: String,
    /// The file it was read from (for a built-in, its path in the repository).
    pub path: String,
    pub title: String,
    pub summary: String,
    pub setup: Setup,
    pub steps: Vec<Step>,
}
