//! The lesson file format (`format_version = 1`) and its parser. Every error names the
//! file and the line, so a teacher can fix a lesson without reading Rust.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::engine::outbox::{FinalizeGuard, OutboxStatus, PaymentStatus, RetryPolicy};
use crate::engine::provider::ProviderFaults;
use crate::engine::text::{self, quoted};
use crate::engine::worker::MAX_BATCH;
use crate::engine::worker_id::WorkerId;
use crate::engine::MAX_WORKERS;
use crate::setup::{Reliability, Timing};

/// The only format this build reads.
pub const FORMAT_VERSION: i64 = 1;

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
        }
    }
}

/// A message named by its payment key (`PAY-001`) or its outbox id (`1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSel {
    pub id: i64,
    pub key: String,
}

/// What a step makes happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The worker claims the oldest claimable message, or the one named.
    Claim {
        slot: usize,
        message: Option<MessageSel>,
    },
    /// The worker takes its next action (claim, provider call, finalize).
    Act {
        slot: usize,
    },
    /// The worker extends the lease it holds, once (heartbeats must be on).
    Beat {
        slot: usize,
    },
    Crash {
        slot: usize,
    },
    Restart {
        slot: usize,
    },
    /// The worker freezes (a long GC pause): it holds what it holds and does nothing.
    Pause {
        slot: usize,
    },
    /// The worker in `slot` freezes holding what it holds, and its supervisor starts a new
    /// worker under its very name, in slot `new`.
    Stall {
        slot: usize,
        new: usize,
    },
    Resume {
        slot: usize,
    },
    Advance {
        ms: i64,
    },
    /// The clock moves `ms` while every live worker works on what it holds: with
    /// heartbeats on, each beats at its interval (in slot order, so replays agree).
    Work {
        ms: i64,
    },
    Heartbeats(bool),
    /// Put a dead letter (or every one) back to Pending with fresh attempts.
    Redrive(Option<MessageSel>),
    /// The provider stops failing for a message (or for all): the fault was fixed.
    Heal(Option<MessageSel>),
    Leasing(bool),
    /// Grow or shrink the crew to this many workers (new ones start paused, like all).
    Workers(usize),
    /// Messages each worker claims per transaction from its next claim on.
    Batch(usize),
    /// Switch the provider's idempotency-key honouring on or off.
    Idempotency(bool),
    /// Add this many payments, each with its outbox row (`add-payment` alone adds one).
    AddPayment(u64),
    /// Every live, unpaused worker acts in turn until the condition holds.
    RunUntil(Condition),
}

impl Action {
    /// The action in a few words, for the event log.
    pub fn describe(&self) -> String {
        let w = |slot: &usize| WorkerId::first(*slot).to_string();
        let on_off = |on: &bool| if *on { "on" } else { "off" };
        let which = |m: &Option<MessageSel>| {
            m.as_ref()
                .map_or_else(|| "every message".to_string(), |m| m.key.clone())
        };
        match self {
            Action::Claim {
                slot,
                message: Some(m),
            } => format!("{} tries to claim message {}", w(slot), m.id),
            Action::Claim {
                slot,
                message: None,
            } => format!("{} claims", w(slot)),
            Action::Act { slot } => format!("{} takes its next action", w(slot)),
            Action::Beat { slot } => format!("{} extends its lease", w(slot)),
            Action::Crash { slot } => format!("{} crashes", w(slot)),
            Action::Restart { slot } => format!("{} restarts", w(slot)),
            Action::Pause { slot } => format!("{} pauses", w(slot)),
            Action::Stall { slot, .. } => format!("{} stalls", w(slot)),
            Action::Resume { slot } => format!("{} resumes", w(slot)),
            Action::Advance { ms } => format!("advance the clock by {ms} ms"),
            Action::Work { ms } => format!("work for {ms} ms"),
            Action::Heartbeats(on) => format!("heartbeats {}", on_off(on)),
            Action::Redrive(m) => format!("redrive {}", which(m)),
            Action::Heal(m) => format!("heal the provider for {}", which(m)),
            Action::Leasing(on) => format!("leasing {}", on_off(on)),
            Action::Workers(n) => format!("{n} workers"),
            Action::Batch(k) => format!("claim {k} at a time"),
            Action::Idempotency(on) => format!("provider idempotency {}", on_off(on)),
            Action::AddPayment(n) => format!("add {n} payment(s)"),
            Action::RunUntil(Condition::Drained) => "run until drained".to_string(),
        }
    }

    /// The one worker the action moves, if it moves one.
    pub fn worker(&self) -> Option<usize> {
        match self {
            Action::Claim { slot, .. }
            | Action::Act { slot }
            | Action::Beat { slot }
            | Action::Crash { slot }
            | Action::Restart { slot }
            | Action::Pause { slot }
            | Action::Stall { slot, .. }
            | Action::Resume { slot } => Some(*slot),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Nothing Pending or Processing and every live, unpaused worker holds nothing.
    Drained,
}

/// A figure a step can state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Figure {
    /// The outbox row's Status.
    Status(MessageSel),
    /// The outbox row's LockedBy (`none` for NULL).
    Owner(MessageSel),
    /// The outbox row's LeaseVersion (the fencing token).
    Lease(MessageSel),
    /// The payment row's PaymentStatus.
    Payment(MessageSel),
    /// Results written for the message (the processing ledger).
    Processed(MessageSel),
    /// The outbox row's Attempts.
    Attempts(MessageSel),
    /// A ledger counter by name (see [`LEDGER_FIGURES`]).
    Ledger(&'static str),
    /// Outbox rows with this status.
    Outbox(OutboxStatus),
    /// Payments with this status.
    Payments(PaymentStatus),
    /// Provider status-check calls, for one key or all.
    ProviderCalls(Option<MessageSel>),
    /// Provider side effects, for one key or all.
    ProviderEffects(Option<MessageSel>),
}

impl Figure {
    /// The message the figure is about, if it is about one.
    pub fn message(&self) -> Option<&MessageSel> {
        match self {
            Figure::Status(m)
            | Figure::Owner(m)
            | Figure::Lease(m)
            | Figure::Payment(m)
            | Figure::Processed(m)
            | Figure::Attempts(m)
            | Figure::ProviderCalls(Some(m))
            | Figure::ProviderEffects(Some(m)) => Some(m),
            _ => None,
        }
    }
}

/// One expectation: a figure and the value it must have.
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

/// Fewest and most choices a question may offer (keys 1-9 pick one).
pub const CHOICES: std::ops::RangeInclusive<usize> = 2..=9;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The actions as written in the file, for display.
    pub actions_text: Vec<String>,
    pub actions: Vec<Action>,
    pub say: String,
    pub expects: Vec<Expect>,
    /// Asked before the step runs: predict, then the step reveals.
    pub quiz: Option<Quiz>,
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

/// Ledger figures an `expect` may name, with what each counts.
pub const LEDGER_FIGURES: &[(&str, &str)] = &[
    ("claims", "successful claims"),
    ("empty", "claims that found nothing"),
    (
        "blocked",
        "claims refused because another worker's lease still ran",
    ),
    (
        "reclaims",
        "claims of a message whose earlier lease had expired",
    ),
    (
        "attempts",
        "processing attempts (provider status checks by workers)",
    ),
    ("unique", "messages processed at least once"),
    ("duplicates", "messages processed more than once"),
    ("rejected", "finalizes rejected because the lease was lost"),
    ("violations", "ownership violations"),
    ("crashes", "worker crashes"),
    ("heartbeats", "heartbeats that extended a lease"),
    (
        "lost",
        "leases found lost by a heartbeat (the message was dropped)",
    ),
    (
        "retries",
        "failed attempts sent back to Pending after a backoff",
    ),
    (
        "dead",
        "messages dead-lettered after their last attempt failed",
    ),
    (
        "transactions",
        "claim transactions that took something (a batch claim is one)",
    ),
    (
        "writes",
        "write transactions by workers: claims, finalizes, heartbeats, failed attempts",
    ),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLesson {
    format_version: Option<Spanned<i64>>,
    title: Option<String>,
    summary: Option<String>,
    #[serde(default)]
    setup: RawSetup,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSetup {
    workers: Option<Spanned<i64>>,
    messages: Option<Spanned<i64>>,
    lease_ms: Option<Spanned<i64>>,
    process_ms: Option<Spanned<i64>>,
    leasing: Option<bool>,
    idempotent_provider: Option<bool>,
    #[serde(alias = "heartbeat")]
    heartbeats: Option<bool>,
    heartbeat_ms: Option<Spanned<i64>>,
    max_attempts: Option<Spanned<i64>>,
    backoff_ms: Option<Spanned<i64>>,
    backoff_cap_ms: Option<Spanned<i64>>,
    /// Payment key -> how many of its first status checks fail.
    fail_first: Option<std::collections::BTreeMap<String, Spanned<i64>>>,
    fail_always: Option<Vec<Spanned<String>>>,
    batch: Option<Spanned<i64>>,
    finalize_guard: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(rename = "do", default)]
    actions: Vec<Spanned<String>>,
    say: Option<String>,
    #[serde(default)]
    expect: Vec<Spanned<String>>,
    ask: Option<Spanned<String>>,
    #[serde(default)]
    choices: Vec<Spanned<RawChoice>>,
}

/// `{ answer = "...", expect = "PAY-001 owner Worker-B" }`
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChoice {
    answer: String,
    expect: Spanned<String>,
}

/// Longest a `work` or `advance` step may move the clock: one day, in milliseconds.
pub const MAX_CLOCK_MS: i64 = 86_400_000;
/// Most heartbeat intervals one `work` step may cover: each is a round of heartbeats.
pub const MAX_WORK_BEATS: i64 = 1_000;
/// Most payments one `add-payment N` adds.
pub const MAX_ADD_PAYMENT: i64 = 1_000;
/// Most payments a lesson may have in all: its seeded ones and every one it adds.
pub const MAX_LESSON_MESSAGES: u64 = 10_000;
/// The largest figure an `expect` may state.
pub const MAX_EXPECTED: i64 = 1_000_000_000;

/// Where each line of a text starts, so a byte offset's line is a binary search, not a
/// scan from the top (a lesson names the line of every step and expectation).
struct LineIndex {
    starts: Vec<usize>,
    /// Line starts compared so far (the tests hold the parse to a bound on them).
    #[cfg(test)]
    probes: std::cell::Cell<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        LineIndex {
            starts,
            #[cfg(test)]
            probes: std::cell::Cell::new(0),
        }
    }

    /// The 1-based line holding byte `offset` (the last line for an offset past the end).
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|s| {
                #[cfg(test)]
                self.probes.set(self.probes.get() + 1);
                *s <= offset
            })
            .max(1)
    }
}

/// Read a lesson. `name` is how it is called; `path` names the file in errors.
pub fn parse(name: &str, path: &str, text: &str) -> Result<Lesson, String> {
    parse_with(&Parser::new(path, text), name)
}

fn parse_with(p: &Parser, name: &str) -> Result<Lesson, String> {
    let (path, text) = (p.path, p.text);
    let raw: RawLesson = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| p.line_of(s.start)).unwrap_or(1);
        format!("{path}:{line}: {}", toml_message(e.message()))
    })?;
    p.format_version(&raw.format_version)?;
    let title = raw
        .title
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| p.err(0..0, "title is missing"))?;
    let summary = raw.summary.unwrap_or_default();
    let setup = p.setup(&raw.setup)?;
    if raw.step.is_empty() {
        return Err(p.err(text.len()..text.len(), "the lesson has no [[step]]"));
    }
    let ctx = Ctx {
        p,
        workers: setup.workers,
        messages: p.lesson_messages(&raw.step, setup.messages)?,
        beat_ms: setup.reliability.heartbeat_for(setup.lease_ms).max(1),
        stalls: Default::default(),
        crew_change: Default::default(),
    };
    // Every mistake in the steps is reported in one run, each on its own line.
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    for s in raw.step {
        match ctx.step(s) {
            Ok(step) => steps.push(step),
            Err(e) => errors.extend(e),
        }
    }
    errors.extend(ctx.crew_and_stalls());
    if !errors.is_empty() {
        return Err(many_errors(errors));
    }
    Ok(Lesson {
        name: name.to_string(),
        path: path.to_string(),
        title,
        summary,
        setup,
        steps,
    })
}

/// The TOML reader's message on one line, each value it quotes (a key, a string of the
/// file) cut to a prefix: the file may hold a megabyte on one line.
fn toml_message(msg: &str) -> String {
    let words: Vec<String> = text::printable(msg.trim())
        .split(' ')
        .map(|w| text::bounded(w, text::MAX_QUOTED).into_owned())
        .collect();
    text::bounded(&words.join(" "), 4 * text::MAX_QUOTED).into_owned()
}

/// Most mistakes one run reports; the rest are counted.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// Mistakes, one per line, at most [`MAX_REPORTED_ERRORS`] of them.
fn many_errors(errors: Vec<String>) -> String {
    let mut lines: Vec<String> = errors.iter().take(MAX_REPORTED_ERRORS).cloned().collect();
    if errors.len() > MAX_REPORTED_ERRORS {
        lines.push(format!(
            "... and {} more mistakes",
            errors.len() - MAX_REPORTED_ERRORS
        ));
    }
    lines.join("\n")
}

struct Parser<'a> {
    path: &'a str,
    text: &'a str,
    lines: LineIndex,
}

impl<'a> Parser<'a> {
    fn new(path: &'a str, text: &'a str) -> Parser<'a> {
        Parser {
            path,
            text,
            lines: LineIndex::new(text),
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        self.lines.line_of(offset)
    }

    /// Messages a step may name: the seeded ones and every payment the lesson adds, at most
    /// [`MAX_LESSON_MESSAGES`]. A bad `add-payment` count is refused later, at its line.
    fn lesson_messages(&self, steps: &[Spanned<RawStep>], seeded: u64) -> Result<u64, String> {
        let mut total = seeded;
        for a in steps.iter().flat_map(|s| &s.get_ref().actions) {
            let mut words = a.get_ref().split_whitespace();
            if words.next() != Some("add-payment") {
                continue;
            }
            let n = match words.next().map(str::parse::<u64>) {
                None => 1,
                Some(Ok(n)) if (1..=MAX_ADD_PAYMENT as u64).contains(&n) => n,
                Some(_) => continue,
            };
            total += n;
            if total > MAX_LESSON_MESSAGES {
                return Err(self.err(
                    a.span(),
                    &format!(
                        "add-payment {n} brings the lesson to {total} payments, more than \
                         {MAX_LESSON_MESSAGES}"
                    ),
                ));
            }
        }
        Ok(total)
    }

    fn err(&self, span: Range<usize>, msg: &str) -> String {
        format!("{}:{}: {msg}", self.path, self.line_of(span.start))
    }

    /// `max_attempts`, `backoff_ms` and `backoff_cap_ms` over the defaults.
    fn retry(&self, s: &RawSetup) -> Result<RetryPolicy, String> {
        let d = RetryPolicy::default();
        let max = self.number(&s.max_attempts, "max_attempts", 1, 1_000)?;
        let base = self.number(&s.backoff_ms, "backoff_ms", 0, 3_600_000)?;
        let cap = self.number(&s.backoff_cap_ms, "backoff_cap_ms", 0, 3_600_000)?;
        let base = base.unwrap_or(d.base_ms);
        RetryPolicy::new(
            base,
            cap.unwrap_or(d.cap_ms.max(base)),
            max.unwrap_or(d.max_attempts),
        )
        .map_err(|e| {
            let span = s.backoff_cap_ms.as_ref().map_or(0..0, |v| v.span());
            self.err(span, &e)
        })
    }

    fn number(
        &self,
        v: &Option<Spanned<i64>>,
        what: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, String> {
        match v {
            None => Ok(None),
            Some(n) if (min..=max).contains(n.get_ref()) => Ok(Some(*n.get_ref())),
            Some(n) => Err(self.err(
                n.span(),
                &format!("{what} = {} is outside {min}-{max}", n.get_ref()),
            )),
        }
    }

    fn format_version(&self, v: &Option<Spanned<i64>>) -> Result<(), String> {
        match v {
            None => Err(self.err(0..0, "format_version is missing (write format_version = 1)")),
            Some(v) if *v.get_ref() != FORMAT_VERSION => Err(self.err(
                v.span(),
                &format!(
                    "format_version {} is not supported (this leaselab reads {FORMAT_VERSION})",
                    v.get_ref()
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// The `[setup]` table, each number in its range, defaults for what it leaves out.
    fn setup(&self, s: &RawSetup) -> Result<Setup, String> {
        let d = Setup::default();
        let mut setup = Setup {
            workers: self
                .number(&s.workers, "workers", 1, 26)?
                .unwrap_or(d.workers as i64) as usize,
            messages: self
                .number(&s.messages, "messages", 1, 1_000)?
                .unwrap_or(d.messages as i64) as u64,
            lease_ms: self
                .number(&s.lease_ms, "lease_ms", 1, 3_600_000)?
                .unwrap_or(d.lease_ms),
            process_ms: self
                .number(&s.process_ms, "process_ms", 0, 600_000)?
                .unwrap_or(d.process_ms),
            leasing: s.leasing.unwrap_or(d.leasing),
            idempotent_provider: s.idempotent_provider.unwrap_or(d.idempotent_provider),
            reliability: Reliability {
                heartbeats: s.heartbeats.unwrap_or(d.reliability.heartbeats),
                heartbeat_ms: self.number(&s.heartbeat_ms, "heartbeat_ms", 1, 3_600_000)?,
                retry: self.retry(s)?,
                faults: ProviderFaults::default(),
            },
            batch: self
                .number(&s.batch, "batch", 1, MAX_BATCH as i64)?
                .unwrap_or(d.batch as i64) as usize,
            finalize_guard: self.finalize_guard(&s.finalize_guard)?,
        };
        if let Err(e) = setup.reliability.check(setup.lease_ms) {
            let span = s.heartbeat_ms.as_ref().map_or(0..0, |v| v.span());
            return Err(self.err(span, &e));
        }
        setup.reliability.faults = self.faults(s, setup.messages)?;
        Ok(setup)
    }

    /// `finalize_guard = "fencing-token"` (leaselab's) or `"owner"` (the owner's name only).
    fn finalize_guard(&self, v: &Option<Spanned<String>>) -> Result<FinalizeGuard, String> {
        let Some(v) = v else {
            return Ok(FinalizeGuard::default());
        };
        [FinalizeGuard::FencingToken, FinalizeGuard::OwnerOnly]
            .into_iter()
            .find(|g| g.name() == v.get_ref())
            .ok_or_else(|| {
                self.err(
                    v.span(),
                    &format!(
                        "finalize_guard = '{}' is not a guard (fencing-token or owner)",
                        v.get_ref()
                    ),
                )
            })
    }

    /// The provider failures a lesson asks for, each naming a seeded payment.
    fn faults(&self, s: &RawSetup, messages: u64) -> Result<ProviderFaults, String> {
        let key_of = |word: &str, span: Range<usize>| -> Result<String, String> {
            let n = word
                .strip_prefix("PAY-")
                .and_then(|d| d.parse::<u64>().ok())
                .filter(|n| (1..=messages).contains(n))
                .ok_or_else(|| {
                    self.err(
                        span,
                        &format!(
                            "'{}' is not a seeded payment (PAY-001 to PAY-{messages:03})",
                            quoted(word)
                        ),
                    )
                })?;
            Ok(crate::engine::store::payment_key(n))
        };
        let mut faults = ProviderFaults::default();
        for (key, n) in s.fail_first.iter().flatten() {
            let n = self
                .number(&Some(n.clone()), "fail_first", 0, 1_000_000)?
                .unwrap_or(0);
            faults.fail_first.insert(key_of(key, 0..0)?, n as u64);
        }
        for key in s.fail_always.iter().flatten() {
            faults
                .fail_always
                .insert(key_of(key.get_ref(), key.span())?);
        }
        Ok(faults)
    }
}

struct Ctx<'a> {
    p: &'a Parser<'a>,
    workers: usize,
    messages: u64,
    /// The heartbeat interval a `work` step moves the clock by.
    beat_ms: i64,
    /// Each `stall` read so far, in file order: the stalled worker's slot, the slot of the
    /// new worker started under its name, and the line.
    stalls: std::cell::RefCell<Vec<(usize, usize, usize)>>,
    /// The line of the first `workers N`, if any.
    crew_change: std::cell::Cell<Option<usize>>,
}

impl Ctx<'_> {
    /// A step, or every mistake in it (its say, each action, each expectation).
    fn step(&self, raw_step: Spanned<RawStep>) -> Result<Step, Vec<String>> {
        let step_span = raw_step.span();
        let raw_step = raw_step.into_inner();
        let mut errors = Vec::new();
        let say = raw_step.say.filter(|s| !s.trim().is_empty());
        if say.is_none() {
            errors.push(self.p.err(step_span.clone(), "a step has no say"));
        }
        let mut actions = Vec::new();
        let mut actions_text = Vec::new();
        for a in &raw_step.actions {
            match self.action(a) {
                Ok(action) => actions.push(action),
                Err(e) => errors.push(e),
            }
            actions_text.push(a.get_ref().trim().to_string());
        }
        let mut expects = Vec::new();
        for e in &raw_step.expect {
            match self.expect(e) {
                Ok(x) => expects.push(x),
                Err(e) => errors.push(e),
            }
        }
        let quiz = match self.quiz(step_span, raw_step.ask, raw_step.choices) {
            Ok(q) => q,
            Err(mut e) => {
                errors.append(&mut e);
                None
            }
        };
        let Some(say) = say.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        Ok(Step {
            actions_text,
            actions,
            say: say.trim().to_string(),
            expects,
            quiz,
        })
    }

    /// A step's question: `ask` with 2-9 `choices`, each an answer and its expectation.
    fn quiz(
        &self,
        step_span: Range<usize>,
        ask: Option<Spanned<String>>,
        choices: Vec<Spanned<RawChoice>>,
    ) -> Result<Option<Quiz>, Vec<String>> {
        let Some(ask) = ask else {
            return match choices.first() {
                None => Ok(None),
                Some(c) => Err(vec![self.p.err(c.span(), "choices without an ask")]),
            };
        };
        let ask_span = ask.span();
        let ask = ask.into_inner().trim().to_string();
        let mut errors = Vec::new();
        if ask.is_empty() {
            errors.push(self.p.err(ask_span.clone(), "an empty ask"));
        }
        if !CHOICES.contains(&choices.len()) {
            let msg = format!(
                "an ask needs {}-{} choices, this one has {}",
                CHOICES.start(),
                CHOICES.end(),
                choices.len()
            );
            errors.push(self.p.err(step_span, &msg));
        }
        let mut out = Vec::new();
        for c in choices {
            let span = c.span();
            let c = c.into_inner();
            if c.answer.trim().is_empty() {
                errors.push(self.p.err(span, "a choice with an empty answer"));
                continue;
            }
            match self.expect(&c.expect) {
                Ok(expect) => out.push(Choice {
                    text: c.answer.trim().to_string(),
                    expect,
                }),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Some(Quiz {
            ask,
            choices: out,
            line: self.p.line_of(ask_span.start),
        }))
    }

    /// A worker an action names, from `words`: `Worker-A`, or after a stall of Worker-A,
    /// `Worker-A (stalled)` or `Worker-A (new)`. The slot, and how many words it took.
    fn worker_ref(&self, span: &Range<usize>, words: &[&str]) -> Result<(usize, usize), String> {
        let word = words.first().copied();
        let base = self.worker(span, word)?;
        let word = word.unwrap_or_default();
        let stall = self.stalls.borrow().iter().find(|s| s.0 == base).copied();
        let qualifier = words.get(1).copied().filter(|w| w.starts_with('('));
        let err = |msg: String| Err(self.p.err(span.clone(), &msg));
        match (qualifier, stall) {
            (None, None) => Ok((base, 1)),
            (None, Some((_, _, line))) => err(format!(
                "'{word}' is two workers since the stall at line {line}: write \
                 '{word} (stalled)' or '{word} (new)'"
            )),
            (Some("(stalled)"), Some((stalled, _, _))) => Ok((stalled, 2)),
            (Some("(new)"), Some((_, new, _))) => Ok((new, 2)),
            (Some(q), Some(_)) => err(format!(
                "unknown '{q}' after {word} (write (stalled) or (new))"
            )),
            (Some(q), None) => err(format!(
                "'{word} {q}': {word} has not stalled (a 'stall {word}' comes first)"
            )),
        }
    }

    /// `stall W`: a worker of the setup that has not stalled yet; the new worker takes the
    /// next slot after the setup's workers and the new workers of earlier stalls.
    fn stall(&self, span: &Range<usize>, words: &[&str]) -> Result<(Action, usize), String> {
        let (slot, used) = self.worker_ref(span, words)?;
        if used > 1 {
            let msg = format!(
                "'{}' cannot stall: a worker stalls once, and the one started in its name \
                 does not",
                words[..used].join(" ")
            );
            return Err(self.p.err(span.clone(), &msg));
        }
        let mut stalls = self.stalls.borrow_mut();
        let new = self.workers + stalls.len();
        stalls.push((slot, new, self.p.line_of(span.start)));
        Ok((Action::Stall { slot, new }, 1 + used))
    }

    /// A lesson that stalls a worker keeps its crew: `workers N` would stop or renumber
    /// the worker started in a stalled one's name.
    fn crew_and_stalls(&self) -> Vec<String> {
        match (self.crew_change.get(), self.stalls.borrow().first()) {
            (Some(line), Some((_, _, stall))) => vec![format!(
                "{}:{line}: workers N cannot change the crew of a lesson that stalls a worker \
                 (line {stall})",
                self.p.path
            )],
            _ => Vec::new(),
        }
    }

    fn worker(&self, span: &Range<usize>, word: Option<&str>) -> Result<usize, String> {
        let word = word.ok_or_else(|| self.p.err(span.clone(), "a worker is missing"))?;
        // `Worker-A#2` (a restart) is the same worker as `Worker-A`.
        let base = WorkerId::parse(word).map(WorkerId::base);
        (0..self.workers)
            .find(|slot| base == Some(WorkerId::first(*slot)))
            .ok_or_else(|| {
                let known: Vec<String> = (0..self.workers)
                    .map(|s| WorkerId::first(s).to_string())
                    .collect();
                self.p.err(
                    span.clone(),
                    &format!(
                        "unknown worker '{}' (this lesson has {})",
                        quoted(word),
                        known.join(", ")
                    ),
                )
            })
    }

    fn message(&self, span: &Range<usize>, word: &str) -> Result<MessageSel, String> {
        let digits = word.strip_prefix("PAY-").unwrap_or(word);
        let n: u64 = digits
            .parse()
            .ok()
            .filter(|_| digits.chars().all(|c| c.is_ascii_digit()))
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "'{}' is not a message (write PAY-001 or an outbox id)",
                        quoted(word)
                    ),
                )
            })?;
        if n == 0 || n > self.messages {
            return Err(self.p.err(
                span.clone(),
                &format!(
                    "unknown message '{}' (this lesson has PAY-001 to {})",
                    quoted(word),
                    crate::engine::store::payment_key(self.messages)
                ),
            ));
        }
        Ok(MessageSel {
            id: n as i64,
            key: crate::engine::store::payment_key(n),
        })
    }

    /// A status named in any case, one of `all`.
    fn status<S: Copy + std::fmt::Display>(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
        all: &[S],
    ) -> Result<S, String> {
        let word = word.unwrap_or("");
        all.iter()
            .copied()
            .find(|s| s.to_string().eq_ignore_ascii_case(word))
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "'{}' is not a status (one of {})",
                        quoted(word),
                        names(all).join(", ")
                    ),
                )
            })
    }

    /// A whole number from 0 to [`MAX_EXPECTED`].
    fn count(&self, span: &Range<usize>, word: Option<&str>, what: &str) -> Result<i64, String> {
        self.bounded(span, word, what, 0, MAX_EXPECTED)
    }

    /// A whole number from `min` to `max`, written in digits alone.
    fn bounded(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
        what: &str,
        min: i64,
        max: i64,
    ) -> Result<i64, String> {
        let word = word.ok_or_else(|| self.p.err(span.clone(), &format!("{what} is missing")))?;
        let n = word
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| word.parse::<i64>().ok())
            .flatten()
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "bad number '{}' for {what} (a whole number, {min}-{max})",
                        quoted(word)
                    ),
                )
            })?;
        if !(min..=max).contains(&n) {
            let msg = format!("{what} {n} is outside {min}-{max}");
            return Err(self.p.err(span.clone(), &msg));
        }
        Ok(n)
    }

    fn on_off(&self, span: &Range<usize>, verb: &str, word: Option<&str>) -> Result<bool, String> {
        match word {
            Some("on") => Ok(true),
            Some("off") => Ok(false),
            _ => Err(self.p.err(span.clone(), &format!("{verb} takes on or off"))),
        }
    }

    fn condition(&self, span: &Range<usize>, word: Option<&str>) -> Result<Condition, String> {
        match word {
            Some("drained") => Ok(Condition::Drained),
            Some(w) => Err(self.p.err(
                span.clone(),
                &format!(
                    "unknown condition '{}' for run-until (known: drained)",
                    quoted(w)
                ),
            )),
            None => Err(self
                .p
                .err(span.clone(), "run-until needs a condition: drained")),
        }
    }

    fn action(&self, a: &Spanned<String>) -> Result<Action, String> {
        let span = a.span();
        let words: Vec<&str> = a.get_ref().split_whitespace().collect();
        let verb = words.first().copied().unwrap_or("");
        let (action, used) = match verb {
            "claim" => {
                let (slot, used) = self.worker_ref(&span, &words[1..])?;
                let message = words
                    .get(1 + used)
                    .map(|w| self.message(&span, w))
                    .transpose()?;
                (Action::Claim { slot, message }, 2 + used)
            }
            "act" | "beat" | "crash" | "restart" | "pause" | "resume" => {
                let (slot, used) = self.worker_ref(&span, &words[1..])?;
                (worker_action(verb, slot), 1 + used)
            }
            "stall" => self.stall(&span, &words[1..])?,
            "advance" | "work" => (self.clock_action(&span, verb, words.get(1).copied())?, 2),
            "redrive" | "heal" => (self.message_action(&span, verb, words.get(1).copied())?, 2),
            "heartbeats" | "heartbeat" | "leasing" | "idempotency" => {
                let on = self.on_off(&span, verb, words.get(1).copied())?;
                let action = match verb {
                    "heartbeats" | "heartbeat" => Action::Heartbeats(on),
                    "leasing" => Action::Leasing(on),
                    _ => Action::Idempotency(on),
                };
                (action, 2)
            }
            "workers" | "batch" => (self.crew_action(&span, verb, words.get(1).copied())?, 2),
            "add-payment" => {
                let n = match words.get(1) {
                    Some(w) => self.bounded(&span, Some(w), "add-payment", 1, MAX_ADD_PAYMENT)?,
                    None => 1,
                };
                (Action::AddPayment(n as u64), 2)
            }
            "run-until" => {
                let c = self.condition(&span, words.get(1).copied())?;
                (Action::RunUntil(c), 2)
            }
            "" => return Err(self.p.err(span, "an empty action")),
            other => {
                return Err(self.p.err(
                    span,
                    &format!(
                        "unknown action '{}' (known: {})",
                        quoted(other),
                        super::reference::action_verbs().join(", ")
                    ),
                ))
            }
        };
        match words.get(used) {
            Some(w) => Err(self.p.err(
                span,
                &format!(
                    "unexpected '{}' in '{}'",
                    quoted(w),
                    quoted(a.get_ref().trim())
                ),
            )),
            None => Ok(action),
        }
    }

    /// `workers N` and `batch K`.
    fn crew_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        n: Option<&str>,
    ) -> Result<Action, String> {
        let (max, what) = match verb {
            "workers" => (MAX_WORKERS, "workers"),
            _ => (MAX_BATCH, "batch"),
        };
        let n = self.bounded(span, n, what, 1, max as i64)? as usize;
        Ok(if verb == "workers" {
            if self.crew_change.get().is_none() {
                self.crew_change.set(Some(self.p.line_of(span.start)));
            }
            Action::Workers(n)
        } else {
            Action::Batch(n)
        })
    }

    /// `advance MS` and `work MS` (an `ms` suffix is allowed).
    fn clock_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        word: Option<&str>,
    ) -> Result<Action, String> {
        let ms = self.bounded(
            span,
            word.map(|w| w.strip_suffix("ms").unwrap_or(w)),
            verb,
            0,
            MAX_CLOCK_MS,
        )?;
        if verb == "advance" {
            return Ok(Action::Advance { ms });
        }
        // Each interval is a round of heartbeats: a short interval makes a long step slow.
        let beats = (ms + self.beat_ms - 1) / self.beat_ms;
        if beats > MAX_WORK_BEATS {
            return Err(self.p.err(
                span.clone(),
                &format!(
                    "work {ms} is {beats} heartbeat intervals of {} ms, more than \
                     {MAX_WORK_BEATS} in one step",
                    self.beat_ms
                ),
            ));
        }
        Ok(Action::Work { ms })
    }

    /// `redrive PAY-002|all` and `heal PAY-002|all`.
    fn message_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        word: Option<&str>,
    ) -> Result<Action, String> {
        let which = match word {
            Some("all") => None,
            Some(w) => Some(self.message(span, w)?),
            None => {
                return Err(self
                    .p
                    .err(span.clone(), &format!("{verb} takes a message or all")))
            }
        };
        Ok(if verb == "redrive" {
            Action::Redrive(which)
        } else {
            Action::Heal(which)
        })
    }

    fn expect(&self, e: &Spanned<String>) -> Result<Expect, String> {
        let span = e.span();
        let text = e.get_ref().trim().to_string();
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        if words.len() > 4 {
            return bad(&format!(
                "unexpected '{}' in '{}'",
                quoted(words[4]),
                quoted(&text)
            ));
        }
        let (figure, value) = match words.first().copied() {
            Some("ledger") => {
                let name = words.get(1).copied().unwrap_or("");
                let Some((name, _)) = LEDGER_FIGURES.iter().find(|(n, _)| *n == name) else {
                    let known: Vec<&str> = LEDGER_FIGURES.iter().map(|(n, _)| *n).collect();
                    return bad(&format!(
                        "unknown ledger figure '{}' (known: {})",
                        quoted(name),
                        known.join(", ")
                    ));
                };
                let v = self.count(&span, words.get(2).copied(), name)?;
                (Figure::Ledger(name), v.to_string())
            }
            Some("outbox") => {
                let status = self.status(&span, words.get(1).copied(), OutboxStatus::ALL)?;
                let v = self.count(&span, words.get(2).copied(), status.as_str())?;
                (Figure::Outbox(status), v.to_string())
            }
            Some("payments") => {
                let status = self.status(&span, words.get(1).copied(), PaymentStatus::ALL)?;
                let v = self.count(&span, words.get(2).copied(), status.as_str())?;
                (Figure::Payments(status), v.to_string())
            }
            Some("provider") => {
                // `provider calls N` or `provider PAY-001 calls N`.
                let (key, rest) = match words.get(1).copied() {
                    Some(w @ ("calls" | "effects")) => (None, (w, words.get(2).copied())),
                    Some(k) => (
                        Some(self.message(&span, k)?),
                        (words.get(2).copied().unwrap_or(""), words.get(3).copied()),
                    ),
                    None => return bad("provider takes calls or effects"),
                };
                let v = self.count(&span, rest.1, rest.0)?;
                match rest.0 {
                    "calls" => (Figure::ProviderCalls(key), v.to_string()),
                    "effects" => (Figure::ProviderEffects(key), v.to_string()),
                    w => {
                        return bad(&format!(
                            "'{}' is not a provider figure (calls, effects)",
                            quoted(w)
                        ))
                    }
                }
            }
            Some(m) => self.message_figure(&span, m, &words, &text)?,
            None => return bad("an empty expectation"),
        };
        Ok(Expect {
            text,
            line: self.p.line_of(span.start),
            figure,
            value,
        })
    }

    /// `PAY-001 status Processed` and the other figures of one message.
    fn message_figure(
        &self,
        span: &Range<usize>,
        m: &str,
        words: &[&str],
        text: &str,
    ) -> Result<(Figure, String), String> {
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        let one_of =
            |word: Option<&str>, allowed: &[String], what: &str| -> Result<String, String> {
                match word {
                    Some(w) if allowed.iter().any(|a| a == w) => Ok(w.to_string()),
                    Some(w) => Err(self.p.err(
                        span.clone(),
                        &format!(
                            "'{}' is not a {what} (one of {})",
                            quoted(w),
                            allowed.join(", ")
                        ),
                    )),
                    None => Err(self.p.err(span.clone(), &format!("the {what} is missing"))),
                }
            };
        let msg = self.message(span, m)?;
        let value = words.get(2).copied();
        let figure = match words.get(1).copied() {
            Some("status") => (
                Figure::Status(msg),
                one_of(value, &names(OutboxStatus::ALL), "status")?,
            ),
            Some("payment") => (
                Figure::Payment(msg),
                one_of(value, &names(PaymentStatus::ALL), "payment status")?,
            ),
            Some("owner") => {
                let w = value.ok_or_else(|| self.p.err(span.clone(), "the owner is missing"))?;
                // A name as LockedBy holds it: two workers of one name are one owner here.
                if w != "none" {
                    self.worker(span, Some(w))?;
                }
                (Figure::Owner(msg), w.to_string())
            }
            Some("lease") => (
                Figure::Lease(msg),
                self.count(span, value, "lease")?.to_string(),
            ),
            Some("processed") => (
                Figure::Processed(msg),
                self.count(span, value, "processed")?.to_string(),
            ),
            Some("attempts") => (
                Figure::Attempts(msg),
                self.count(span, value, "attempts")?.to_string(),
            ),
            Some(w) => {
                return bad(&format!(
                    "unknown message figure '{}' (known: status, owner, lease, payment, processed, attempts)",
                    quoted(w)
                ))
            }
            None => {
                return bad(
                    "a message figure is missing (status, owner, lease, payment, processed, attempts)",
                )
            }
        };
        if words.len() > 3 {
            return bad(&format!(
                "unexpected '{}' in '{}'",
                quoted(words[3]),
                quoted(text)
            ));
        }
        Ok(figure)
    }
}

/// `act W`, `beat W`, `crash W`, `restart W`, `pause W`, `resume W`.
fn worker_action(verb: &str, slot: usize) -> Action {
    match verb {
        "act" => Action::Act { slot },
        "beat" => Action::Beat { slot },
        "crash" => Action::Crash { slot },
        "restart" => Action::Restart { slot },
        "pause" => Action::Pause { slot },
        _ => Action::Resume { slot },
    }
}

/// The spellings of a status type's values, as the schema stores them.
fn names<S: std::fmt::Display>(all: &[S]) -> Vec<String> {
    all.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"format_version = 1
title = "t"
summary = "s"
[setup]
workers = 2
[[step]]
do = ["claim Worker-A PAY-001", "advance 100"]
say = "x"
expect = ["PAY-001 owner Worker-A", "ledger claims 1", "provider PAY-001 calls 0"]
"#;

    /// A lesson of `steps` steps, each with one action and two expectations.
    fn many_steps(steps: usize) -> String {
        let step = "[[step]]\ndo = [\"advance 1\"]\nsay = \"x\"\nexpect = [\"ledger claims 0\", \"PAY-001 lease 0\"]\n";
        format!("format_version = 1\ntitle = \"t\"\n{}", step.repeat(steps))
    }

    #[test]
    fn the_lines_of_a_long_lesson_are_found_without_rescanning_it() {
        for steps in [1_000, 20_000] {
            let text = many_steps(steps);
            let p = Parser::new("t.toml", &text);
            let l = parse_with(&p, "t").unwrap();
            assert_eq!(l.steps.len(), steps);
            assert_eq!(l.steps[steps - 1].expects[1].line, 2 + 4 * steps);
            // Each expectation's line is a binary search over the line starts: about
            // log2(lines) comparisons, where a scan from the top would touch every byte
            // before it (the work growing with the square of the steps).
            let lookups = 2 * steps;
            let per_lookup = p.lines.probes.get() / lookups;
            assert!(per_lookup <= 20, "{per_lookup} comparisons per line lookup");
        }
    }

    #[test]
    fn every_amount_has_a_maximum_refused_at_its_line() {
        for (action, says) in [
            (
                "work 9223372036854775807",
                "work 9223372036854775807 is outside 0-86400000",
            ),
            (
                "work 1000001",
                "work 1000001 is 1001 heartbeat intervals of 1000 ms, more than 1000 in one step",
            ),
            ("advance 86400001", "advance 86400001 is outside 0-86400000"),
            (
                "advance 18446744073709551616",
                "bad number '18446744073709551616' for advance",
            ),
            ("add-payment 1001", "add-payment 1001 is outside 1-1000"),
            ("add-payment 0", "add-payment 0 is outside 1-1000"),
            ("workers 27", "workers 27 is outside 1-26"),
            ("batch 101", "batch 101 is outside 1-100"),
            ("advance +5", "bad number '+5' for advance"),
        ] {
            let bad = GOOD.replace("advance 100", action);
            let e = parse("t", "t.toml", &bad).unwrap_err();
            assert!(e.starts_with(&format!("t.toml:7: {says}")), "{action}: {e}");
        }
        // At the maximum the amounts are taken.
        let ok = GOOD.replace("advance 100", "advance 86400000\", \"work 1000000");
        assert!(parse("t", "t.toml", &ok).is_ok());
        let bad = GOOD.replace("ledger claims 1", "ledger claims 1000000001");
        let e = parse("t", "t.toml", &bad).unwrap_err();
        assert!(
            e.starts_with("t.toml:9: claims 1000000001 is outside 0-1000000000"),
            "{e}"
        );
        // A shorter heartbeat interval makes fewer milliseconds one step's most.
        let short = GOOD
            .replace("workers = 2", "lease_ms = 30")
            .replace("advance 100", "work 10001");
        let e = parse("t", "t.toml", &short).unwrap_err();
        assert!(
            e.starts_with("t.toml:7: work 10001 is 1001 heartbeat intervals of 10 ms"),
            "{e}"
        );
    }

    #[test]
    fn the_payments_a_lesson_adds_are_capped_in_all() {
        let adds = ["\"add-payment 1000\""; 9].join(", ") + ", \"add-payment 994\"";
        let ok = GOOD.replace("\"advance 100\"", &adds);
        assert_eq!(
            parse("t", "t.toml", &ok).unwrap().steps[0].actions.len(),
            11
        );
        // The seeded 6 and ten thousand added pass the most a lesson may hold.
        let adds = ["\"add-payment 1000\""; 10].join(", ");
        let e = parse("t", "t.toml", &GOOD.replace("\"advance 100\"", &adds)).unwrap_err();
        assert_eq!(
            e,
            "t.toml:7: add-payment 1000 brings the lesson to 10006 payments, more than 10000"
        );
        // Counts that would overflow a sum are refused one by one, never added.
        let huge = ["\"add-payment 18446744073709551615\""; 2].join(", ");
        let e = parse("t", "t.toml", &GOOD.replace("\"advance 100\"", &huge)).unwrap_err();
        assert!(
            e.starts_with("t.toml:7: bad number '18446744073709551615' for add-payment"),
            "{e}"
        );
    }

    #[test]
    fn reads_actions_and_expectations() {
        let l = parse("t", "t.toml", GOOD).unwrap();
        assert_eq!(l.steps.len(), 1);
        assert_eq!(l.steps[0].actions[1], Action::Advance { ms: 100 });
        assert_eq!(l.steps[0].expects[2].line, 9);
        assert_eq!(l.steps[0].expects[0].value, "Worker-A");
    }

    #[test]
    fn statuses_are_the_schemas_own() {
        let l = GOOD.replace(
            "\"ledger claims 1\"",
            "\"outbox deadlettered 0\", \"payments Paid 0\"",
        );
        let l = parse("t", "t.toml", &l).unwrap();
        assert_eq!(
            l.steps[0].expects[1].figure,
            Figure::Outbox(OutboxStatus::DeadLettered)
        );
        assert_eq!(
            l.steps[0].expects[2].figure,
            Figure::Payments(PaymentStatus::Paid)
        );
        let bad = GOOD.replace("\"ledger claims 1\"", "\"payments Refunded 0\"");
        let e = parse("t", "t.toml", &bad).unwrap_err();
        assert!(
            e.ends_with("'Refunded' is not a status (one of Pending, Paid, Failed)"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_line() {
        let bad = GOOD.replace("advance 100", "advance soon");
        let e = parse("t", "t.toml", &bad).unwrap_err();
        assert!(e.starts_with("t.toml:7: bad number 'soon'"), "{e}");
        let bad = GOOD.replace("workers = 2", "workers = 0");
        assert!(parse("t", "t.toml", &bad)
            .unwrap_err()
            .starts_with("t.toml:5: workers = 0"));
        let bad = GOOD.replace("claim Worker-A", "claim Worker-C");
        assert!(parse("t", "t.toml", &bad)
            .unwrap_err()
            .starts_with("t.toml:7: unknown worker 'Worker-C'"));
    }

    #[test]
    fn a_heartbeat_not_shorter_than_the_lease_is_refused_at_its_line() {
        let bad = GOOD.replace("workers = 2", "lease_ms = 900\nheartbeat_ms = 900");
        let e = parse("t", "t.toml", &bad).unwrap_err();
        assert!(e.starts_with("t.toml:6: heartbeat interval 900 ms"), "{e}");
        let ok = GOOD.replace("workers = 2", "heartbeat = false\nheartbeat_ms = 100");
        let l = parse("t", "t.toml", &ok).unwrap();
        assert!(!l.setup.reliability.heartbeats);
        assert_eq!(l.setup.reliability.heartbeat_ms, Some(100));
        let work = GOOD.replace("advance 100", "work 400");
        assert_eq!(
            parse("t", "t.toml", &work).unwrap().steps[0].actions[1],
            Action::Work { ms: 400 }
        );
    }
}
