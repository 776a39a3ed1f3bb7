//! One frame's worth of plain data. `App::refresh` takes it from the engine, SQLite and
//! the folded events; the renderers read nothing else, so none of them can touch a live
//! atomic, a lock or a connection.

use crate::engine::checker::HistoryCheck;
use crate::engine::outbox::{MessageRow, OutboxCounts, PaymentCounts};
use crate::engine::worker::{WorkerState, WorkerStatus};
use crate::engine::Namesake;
use crate::lesson::StepReport;
use crate::scenario::checks::Check;

use super::log::LogLine;
use super::timeline::Lane;

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Which dashboard this is: its keys.
    pub mode: crate::ui::keys::Mode,
    /// Where a replay stands, in a replay.
    pub replay: Option<ReplayView>,
    pub now_ms: i64,
    pub speed: f64,
    pub paused: bool,
    /// A finalize checks the owner's name only: the weaker guard a lesson may show.
    pub owner_only_finalize: bool,
    /// Worker processes started held, before the first space; or the screen held (`space`
    /// in the watch).
    pub held: bool,
    /// The teacher holds the class the watch follows (`leaselab class hold`): its workers
    /// claim nothing until `leaselab class go`.
    pub class_held: bool,
    /// The watched database stopped answering at this time: what is shown is as it stood.
    pub stale_since: Option<i64>,
    /// Stale, and the dashboard tries new connections (a server restart), rather than
    /// stopped for good.
    pub reconnecting: bool,
    /// Stale for good, and why (a SQLite file deleted, a server that now refuses).
    pub stale_why: Option<String>,
    /// The workers' settings as far as they are known (the header).
    pub settings: SettingsView,
    /// The lease the countdown bars and the timeline are drawn to (the settings' lease, or
    /// the dashboard's default where it is not known).
    pub lease_ms: i64,
    /// The database file, unless it is a temporary one.
    pub db_file: Option<String>,
    /// `("scenario ", NAME)`, `("free play ", NAME)` when the dashboard does not tell
    /// the scenario's headless story, or `("lesson ", NAME)`.
    pub setting: (&'static str, String),
    pub workers: Vec<WorkerView>,
    /// The worker a single step would move, while paused.
    pub next_mover: Option<usize>,
    pub db: DbView,
    /// Pending and Processing are both empty.
    pub drained: bool,
    pub figures: LedgerFigures,
    /// The history checker's verdict, taken once each time the outbox drains.
    pub history: Option<HistoryCheck>,
    /// Its rules as the report's check list judges them, taken with `history`.
    pub checks: Vec<Check>,
    pub lesson: Option<LessonView>,
    pub log: LogView,
    pub lanes: Vec<Lane>,
    /// The overlay of one message's own history, while it is open.
    pub message_history: Option<MessageHistoryView>,
    /// A class's scoreboard (`B` in the watch), while it is shown.
    pub scoreboard: Option<ScoreboardView>,
    /// The command students type to join, in the watch until the first worker joins.
    pub join_command: Option<String>,
    /// The throughput strip, once the crew or the batch size has been changed.
    pub throughput: Option<ThroughputView>,
    /// The SQL pane's statements, while it is open.
    pub sql: Option<SqlView>,
}

/// Each worker's last statements, by slot, for the SQL pane.
#[derive(Debug, Clone, Default)]
pub struct SqlView {
    pub dialect: crate::engine::statements::Dialect,
    pub last: Vec<Option<super::sql::LastSql>>,
    /// The exercise file whose statements the workers run, if they run a student's.
    pub student: Option<String>,
}

/// A setting as the header shows it: its value, unknown (`-`: nothing recorded says), or
/// mixed (the workers that recorded theirs differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Setting<T> {
    Is(T),
    #[default]
    Unknown,
    Mixed,
}

impl<T: Copy> Setting<T> {
    pub fn known(self) -> Option<T> {
        match self {
            Setting::Is(v) => Some(v),
            _ => None,
        }
    }
}

/// The settings the workers run with, as the header shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SettingsView {
    pub lease_ms: Setting<i64>,
    pub process_ms: Setting<i64>,
    pub leasing: Setting<bool>,
    /// Working workers extend their leases (what `h` switches).
    pub heartbeats: Setting<bool>,
}

impl SettingsView {
    /// Settings known for certain.
    pub fn of(s: &crate::engine::outbox::RunSettings) -> SettingsView {
        SettingsView {
            lease_ms: Setting::Is(s.lease_ms),
            process_ms: Setting::Is(s.process_ms),
            leasing: Setting::Is(s.leasing),
            heartbeats: Setting::Is(s.heartbeats),
        }
    }
}

/// Messages per second and the workers behind them.
#[derive(Debug, Clone, Default)]
pub struct ThroughputView {
    /// Results written in the last whole second.
    pub rate: u64,
    /// The last minute, a count per second, oldest first.
    pub minute: Vec<u64>,
    pub workers: usize,
    /// Messages per claim transaction.
    pub batch: usize,
}

/// One message's history as the ledger folded it, in SQLite's commit order.
#[derive(Debug, Clone, Default)]
pub struct MessageHistoryView {
    pub id: i64,
    pub key: String,
    /// `(scenario time, actor, what happened)`, oldest first.
    pub lines: Vec<(i64, String, String)>,
    /// Results written, attempts (provider calls), claims, rejected finalizes.
    pub runs: u32,
    pub attempts: u32,
    pub claims: u32,
    pub rejected: u32,
}

/// One worker as this frame shows it.
#[derive(Debug, Clone)]
pub struct WorkerView {
    pub slot: usize,
    pub status: WorkerStatus,
    /// Results written under this worker's name, all incarnations.
    pub done: u64,
    /// Frozen (`z`, a lesson's freeze, a recorded freeze or SIGSTOP): it holds what it holds
    /// and does not act.
    pub frozen: bool,
    /// Crashed holding a lease that another worker has since claimed: who.
    pub taken_by: Option<String>,
    /// One of two workers of one name: the one that stalled, or the one started under its
    /// name.
    pub namesake: Option<Namesake>,
    /// A worker process that recorded its joining: which leaselab it runs, on which system.
    pub software: Option<crate::engine::software::Software>,
}

impl WorkerView {
    /// Its name, and `(stalled)` or `(new)` for one of two workers of one name. `short`
    /// drops the `Worker-` a narrow column has no room for (`A stalled`), when it must.
    pub fn label(&self, short: bool) -> String {
        let name = &self.status.name;
        match (self.namesake, short) {
            (None, _) => name.clone(),
            (Some(n), false) => format!("{name} ({})", n.word()),
            (Some(n), true) => {
                let letter = name.strip_prefix("Worker-").unwrap_or(name);
                format!("{letter} {}", n.word())
            }
        }
    }

    pub fn alive(&self) -> bool {
        !matches!(
            self.status.state,
            WorkerState::Crashed | WorkerState::Stopped | WorkerState::Left
        )
    }
}

/// What SQLite says this frame, read through the dashboard's own read-only connection.
#[derive(Debug, Clone, Default)]
pub struct DbView {
    /// Only the rows the table can show.
    pub rows: Vec<MessageRow>,
    /// How often the ledger saw each of `rows` processed.
    pub runs: Vec<u32>,
    pub total: u64,
    pub counts: OutboxCounts,
    pub error: Option<String>,
}

/// The ledger's figures and the provider's counters, as the ledger panel lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerFigures {
    pub claims_ok: u64,
    /// Empty claims while there was work left.
    pub claims_empty: u64,
    /// Empty claims on a drained outbox.
    pub idle_polls: u64,
    pub claims_blocked: u64,
    pub processing_attempts: u64,
    pub duplicates: u64,
    pub rejected_finalizes: u64,
    pub ownership_violations: u64,
    /// Two live leases on one message at once, as the history check counts them.
    pub overlaps: u64,
    pub reclaims: u64,
    pub results_written: u64,
    pub crashes: u64,
    pub restarts: u64,
    pub provider_checks: u64,
    pub provider_effects: u64,
    /// The provider answers a repeated check without a new side effect.
    pub provider_idempotent: bool,
    /// Failed attempts retried after a backoff, messages dead-lettered, and dead letters
    /// in the outbox now.
    pub retries: u64,
    pub dead_letters: u64,
    pub dead_now: u64,
    pub heartbeats: u64,
    pub leases_lost: u64,
    /// Claim transactions that took something, write transactions by workers, and
    /// messages processed at least once.
    pub transactions: u64,
    pub writes: u64,
    pub unique: u64,
    /// Payments by status, read in a lesson only (where one may name them).
    pub payments: PaymentCounts,
    /// Figures this dashboard cannot know, shown as `-` rather than a false 0.
    pub unknown: Unknown,
}

/// What a dashboard of worker processes cannot count: the events table holds no empty or
/// blocked claims, and a watcher learns of a crash or a restart only from a worker's
/// silence or a new name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unknown {
    /// Empty and blocked claims (and idle polls).
    pub claims: bool,
    /// Crashes and restarts.
    pub crashes: bool,
}

/// A lesson's progress, for the strip and the narration panel.
#[derive(Debug, Clone)]
pub struct LessonView {
    pub title: String,
    /// The scenario's story: the strip counts the next step, as it was told before.
    pub story: bool,
    pub done: usize,
    pub total: usize,
    pub finished: bool,
    /// Free play has changed the state away from what the script left.
    pub off_script: bool,
    /// What the last step said (or the summary before the first).
    pub say: String,
    /// The actions of the next step, if one remains.
    pub next_actions: Option<String>,
    pub report: Option<StepReport>,
    /// Ledger figures the lesson names, first named first: the Ledgers panel shows them
    /// before the others.
    pub named: Vec<&'static str>,
    /// The messages the step just run talks about, with their figures.
    pub spots: Vec<Spot>,
    /// The next step's question, while it waits for a prediction.
    pub question: Option<QuestionView>,
    /// The step just run asked a question: the prediction and the answer.
    pub reveal: Option<RevealView>,
}

/// A replay's position in its recording, for the position bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayView {
    /// Events folded so far (1..=total).
    pub position: usize,
    pub total: usize,
    /// The mark at this position, if any.
    pub mark: Option<String>,
    /// Every mark's position.
    pub marks: Vec<usize>,
}

/// The next step's question, asked before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionView {
    pub ask: String,
    pub choices: Vec<String>,
    /// The learner's prediction so far (0-based).
    pub prediction: Option<usize>,
}

/// How the question of the step just run was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevealView {
    /// What the learner predicted (None: no prediction).
    pub predicted: Option<usize>,
    /// The choice the engine shows to be true, if exactly one is.
    pub answer: Option<usize>,
    pub answer_text: String,
}

/// One message a lesson step talks about, with the figures it names that the table has
/// no column for, each as `(label, value)`: `("calls", "2")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spot {
    pub key: String,
    pub figures: Vec<(&'static str, String)>,
}

/// The event log lines the frame can show.
#[derive(Debug, Clone, Default)]
pub struct LogView {
    /// Lines ending where the reader looks, at most a page of them.
    pub lines: Vec<LogLine>,
    pub total: usize,
    /// Lines scrolled back from the newest.
    pub back: usize,
}

/// The verdict of the history checks the snapshot carries.
pub fn all_passed(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.passed)
}

/// The one-line verdict of a history check and its checks, as the strip and the log show it.
pub fn verdict_line(h: &HistoryCheck, checks: &[Check]) -> String {
    if all_passed(checks) {
        format!(
            "VERDICT ✓ ONE OWNER AT A TIME: {} processed, each once",
            h.processed
        )
    } else {
        // What was found, not the names of the rules it broke ("nothing duplicated").
        let n = h.problems();
        let noun = if n == 1 { "problem" } else { "problems" };
        format!("VERDICT ✗ {n} {noun}: {}", h.findings().join(" · "))
    }
}

/// A class's scoreboard, every round, as `leaselab class scoreboard` counts it.
#[derive(Debug, Clone, Default)]
pub struct ScoreboardView {
    pub scores: Vec<crate::engine::pg::Score>,
    /// Why it could not be read this time (the last one read is kept).
    pub error: Option<String>,
}
