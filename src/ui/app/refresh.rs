//! Taking the frame's [`Snapshot`]: the only place where the dashboard reads the clock,
//! the workers' status, the provider's counters and SQLite for drawing.

use std::time::{Duration, Instant};

use crate::engine::checker;
use crate::engine::ledger::HistoryStep;
use crate::engine::outbox::OutboxError;
use crate::engine::outbox::OutboxStatus;
use crate::engine::worker::WorkerHandle;
use crate::scenario::checks;

use super::super::render::timeline;
use super::super::snapshot::{
    DbView, LedgerFigures, LessonView, LogView, MessageHistoryView, QuestionView, RevealView,
    SettingsView, Spot, SqlView, ThroughputView, Unknown, WorkerView,
};
use super::{App, LessonMode};

/// Outboxes up to this size have their status counts read every frame.
const SMALL_OUTBOX: u64 = 10_000;

/// How long the verdict waits at most for the events of rows already read as Processed: a
/// row no event ever explains is judged after that (a state mismatch).
const MAX_HISTORY_WAIT: Duration = Duration::from_secs(3);

/// Processed rows kept above the work when the table follows it.
const FOLLOW_ABOVE: u64 = 2;
/// Larger ones at most this often: counting every status scans the whole table.
const COUNTS_EVERY: Duration = Duration::from_millis(300);

impl App {
    /// Take this frame's snapshot: the clock, the workers, the visible table rows, the
    /// ledger's figures and the visible log lines.
    pub fn refresh(&mut self, table_rows: u16, log_rows: u16) {
        self.ui.table_page = table_rows.max(1);
        self.ui.log_page = log_rows.max(1);
        // A held watch draws the frame it held; what arrives waits in the ledger.
        if self.ui.held {
            return;
        }
        // The time first: a verdict the read below logs is stamped now, after the events it
        // judges, not at the last frame's time, above them.
        let now_ms = self.engine.clock.now();
        self.snap.now_ms = now_ms;
        self.read_db(table_rows);
        self.reap_processes();
        self.count_idle_polls();
        self.ui.clamp_to(self.snap.db.total, self.log.len());
        let now_ms = self.now_or_when_stale();
        self.snap.now_ms = now_ms;
        self.snap.speed = self.speed;
        self.snap.paused = self.paused;
        self.snap.mode = self.mode();
        self.snap.owner_only_finalize = self.engine.settings.finalize_guard()
            == crate::engine::outbox::FinalizeGuard::OwnerOnly;
        // A replay's setting names the database already.
        self.snap.db_file = (!self.engine.is_temporary() && self.stage.replay().is_none())
            .then(|| self.engine.db_shown());
        self.snap.setting = self.setting_label();
        self.snap.workers = self.take_workers(now_ms);
        // The bars and the timeline need a scale even where the lease is not known.
        self.snap.lease_ms = self
            .snap
            .settings
            .lease_ms
            .known()
            .unwrap_or(crate::setup::Timing::DASHBOARD.lease_ms);
        self.snap.replay = self.replay_view();
        self.snap.next_mover = if self.paused { self.next_mover() } else { None };
        self.snap.drained = self.drained();
        self.snap.figures = self.figures();
        let spots = self.spots(now_ms);
        self.snap.lesson = self.stage.lesson().map(|l| lesson_view(l, now_ms, spots));
        if let Some(l) = &self.snap.lesson {
            // A new step's narration starts at its top.
            if l.done != self.ui.narration_step {
                self.ui.narration_step = l.done;
                self.ui.narration_scroll = 0;
            }
        }
        self.snap.log = self.log_view();
        let from = match self.ui.width {
            0 => i64::MIN,
            w => timeline::shown_from(w, self.snap.lease_ms, now_ms),
        };
        self.snap.lanes = self.timeline.lanes.iter().map(|l| l.since(from)).collect();
        // An open history follows the cursor, so j/k walk from message to message.
        if self.ui.history.is_some() {
            let row = self.ui.table_cursor.and_then(|c| {
                let i = c.checked_sub(self.ui.table_offset)?;
                self.snap.db.rows.get(i as usize)
            });
            if let Some(r) = row {
                self.ui.history = Some(r.id);
            }
        }
        self.snap.message_history = self.ui.history.map(|id| self.message_history(id));
        self.snap.scoreboard = self.scoreboard_view();
        self.snap.join_command = self.join_command();
        self.snap.throughput = self.throughput_view();
        self.snap.sql = self.ui.sql.then(|| SqlView {
            dialect: self.sql.known.dialect,
            last: self.sql.last.clone(),
            student: self.exercise().map(|e| e.file.clone()),
        });
    }

    /// The clock's time; for workers followed through a database that stopped answering,
    /// the time it stopped, so that nothing counts down on a view that is no longer current.
    fn now_or_when_stale(&mut self) -> i64 {
        let now = self.engine.clock.now();
        let failed = self.snap.db.error.is_some();
        let replaying = self.stage.replay().is_some();
        match self.stage.external_mut() {
            Some(x) if x.children.is_some() || !replaying => {
                // Back when every connection is: the ledger has caught up from the table.
                if !x.stale(failed) {
                    x.stale_since = None;
                } else if x.stale_since.is_none() {
                    x.stale_since = Some(now);
                }
                x.stale_since.unwrap_or(now)
            }
            _ => now,
        }
    }

    /// The workers panel's lines, with the settings and state the header shows for them:
    /// this dashboard's threads, or what the rows of outside workers recorded.
    fn take_workers(&mut self, now_ms: i64) -> Vec<WorkerView> {
        self.snap.settings = SettingsView::of(&self.engine.run_settings());
        self.snap.held = false;
        self.snap.class_held = false;
        self.snap.stale_since = None;
        self.snap.reconnecting = false;
        self.snap.stale_why = None;
        let replaying = self.stage.replay().is_some();
        match self.stage.external_mut() {
            Some(x) => {
                // Watched and recorded workers have settings of their own: show what their
                // rows recorded, and nothing where they recorded none.
                self.snap.settings = x.witness.settings();
                self.snap.owner_only_finalize = x.witness.owner_only();
                self.snap.held = !x.started;
                self.snap.stale_since = x.stale_since;
                self.snap.reconnecting = x.reconnecting();
                self.snap.stale_why = x.tail_ended.clone();
                self.snap.setting = match x.children {
                    _ if replaying => self.snap.setting.clone(),
                    Some(_) => ("worker processes ", String::new()),
                    None => ("watching ", "worker processes".to_string()),
                };
                let reader = &self.reader;
                x.look_who_is_here(reader.as_ref());
                self.snap.class_held = x.who.teacher_holds && x.children.is_none() && !replaying;
                x.views(now_ms, &self.ledger, |id| {
                    super::external::row_at(reader.as_ref(), id)
                })
            }
            None => self
                .engine
                .workers()
                .iter()
                .map(|w| self.worker_view(w))
                .collect(),
        }
    }

    /// The throughput strip's figures, when it is on; sampled every frame while it is.
    fn throughput_view(&mut self) -> Option<ThroughputView> {
        if !self.ui.throughput {
            return None;
        }
        let written = self.ledger.results_written();
        self.throughput.sample(Instant::now(), written);
        Some(ThroughputView {
            rate: self.throughput.rate(),
            minute: self.throughput.minute(),
            workers: self.worker_count(),
            batch: self.engine.settings.batch(),
        })
    }

    /// One message's steps from the ledger, oldest commit first, each in the log's words.
    fn message_history(&self, id: i64) -> MessageHistoryView {
        use crate::engine::clock::hms;
        let Some(m) = self.ledger.messages.get(&id) else {
            let key = self.snap.db.rows.iter().find(|r| r.id == id);
            return MessageHistoryView {
                id,
                key: key.map(|r| r.key.clone()).unwrap_or_default(),
                ..MessageHistoryView::default()
            };
        };
        let mut steps: Vec<&(u64, HistoryStep)> = m.steps.iter().collect();
        steps.sort_by_key(|(seq, _)| *seq);
        let lines = steps
            .into_iter()
            .map(|(seq, step)| {
                let text = match step {
                    HistoryStep::Claim {
                        version,
                        at_ms,
                        until_ms,
                        ..
                    } => {
                        let word = match self.ledger.overlapped_by_claim(id, *seq, *at_ms) {
                            Some((owner, i64::MAX)) => {
                                format!("took it, which {owner} had processed,")
                            }
                            Some((owner, _)) => format!("took it while {owner}'s lease held,"),
                            None if *version > 1 && !self.ledger.follows_a_release(id, *seq) => {
                                "RECLAIMED".to_string()
                            }
                            None => "CLAIMED".to_string(),
                        };
                        format!("{word} until {} (lease v{version})", hms(*until_ms))
                    }
                    HistoryStep::Call { status, .. } => {
                        format!("provider call -> {}", status.as_str())
                    }
                    HistoryStep::Finalize {
                        version, status, ..
                    } => format!("FINALIZED {} (lease v{version})", status.as_str()),
                    HistoryStep::Rejected { version, .. } => {
                        format!("FINALIZE REJECTED: lease v{version} lost, rolled back")
                    }
                    HistoryStep::Mark { status, .. } => {
                        format!("MARKED {} without a lease", status.as_str())
                    }
                    HistoryStep::Heartbeat {
                        version, until_ms, ..
                    } => format!("HEARTBEAT: lease v{version} until {}", hms(*until_ms)),
                    HistoryStep::Released { version, .. } => {
                        format!("ATTEMPT FAILED: lease v{version} released, retry after backoff")
                    }
                    HistoryStep::DeadLettered { version, .. } => {
                        format!("DEAD-LETTERED after its last attempt (lease v{version})")
                    }
                    HistoryStep::Redriven { .. } => "REDRIVEN: back to Pending".to_string(),
                };
                (step.at_ms(), step.owner().to_string(), text)
            })
            .collect();
        MessageHistoryView {
            id,
            key: m.key.clone(),
            lines,
            runs: m.runs,
            attempts: m.attempts,
            claims: m.claims,
            rejected: m.rejected,
        }
    }

    /// The visible table rows and the status counts, or the error that prevented them.
    fn read_db(&mut self, table_rows: u16) {
        let counts_due = self.snap.db.total <= SMALL_OUTBOX
            || self.counts_at.is_none_or(|t| t.elapsed() >= COUNTS_EVERY);
        let read = |app: &App| -> Result<(u64, DbView), OutboxError> {
            let total = app.reader.message_count()?;
            let max_offset = total.saturating_sub(app.ui.table_page as u64);
            let counts = if counts_due || total <= SMALL_OUTBOX {
                app.reader.outbox_counts()?
            } else {
                app.snap.db.counts.clone()
            };
            // Rows are claimed oldest first, so the work sits just past the processed ones.
            let offset = if app.ui.table_follows {
                counts.processed.saturating_sub(FOLLOW_ABOVE)
            } else {
                app.ui.table_offset
            }
            .min(max_offset);
            let rows = app.reader.messages(offset, table_rows as u64)?;
            let runs = rows.iter().map(|r| app.ledger.runs_of(r.id)).collect();
            Ok((
                offset,
                DbView {
                    rows,
                    runs,
                    total,
                    counts,
                    error: None,
                },
            ))
        };
        match read(self) {
            Ok((offset, v)) => {
                self.ui.table_offset = offset;
                if counts_due {
                    self.counts_at = Some(Instant::now());
                }
                self.snap.db = v;
                self.check_history();
            }
            Err(e) => {
                self.snap.db.error = Some(e.to_string());
                if e.may_heal() {
                    self.reopen_reader();
                }
            }
        }
    }

    /// Run the history checker when the outbox has drained and the work changed since the
    /// last verdict (not on every idle claim: at 100,000 rows it reads every row).
    fn check_history(&mut self) {
        let l = &self.ledger;
        let key = (
            l.claims_ok,
            l.results_written(),
            l.rejected_finalizes,
            l.seeded_upto,
            l.added.len(),
        );
        if !self.drained() {
            self.snap.history = None;
            self.snap.checks.clear();
            return;
        }
        if self.snap.history.is_some() && key == self.history_key {
            return;
        }
        if let Ok(rows) = self.reader.messages(0, self.snap.db.total) {
            // A result can be committed before its event arrives (a channel, or a table a
            // reader tails): wait a few frames for the events before judging the rows.
            let processed = rows
                .iter()
                .filter(|r| r.status == OutboxStatus::Processed)
                .count() as u64;
            let since = *self.history_waits.get_or_insert_with(Instant::now);
            if self.ledger.unique_processed() < processed && since.elapsed() < MAX_HISTORY_WAIT {
                return;
            }
            self.history_waits = None;
            let mut h = checker::check(&self.ledger, &rows);
            // Worker processes each have a provider of their own, out of this one's sight: their
            // calls' rows say which did new work; threads' calls are the provider's own count.
            if self.stage.external().is_none() {
                h.count_side_effects(&self.engine.provider.calls());
            } else {
                h.count_recorded_side_effects(&self.ledger);
            }
            self.snap.checks = checks::of_history(&h);
            self.log_verdict(&h);
            self.snap.history = Some(h);
            self.history_key = key;
        }
    }

    /// The verdict and each failed check, written into the event log where they stay.
    fn log_verdict(&mut self, h: &checker::HistoryCheck) {
        let at = self.snap.now_ms;
        let line = crate::ui::snapshot::verdict_line(h, &self.snap.checks);
        let passed = crate::ui::snapshot::all_passed(&self.snap.checks);
        self.log.verdict(at, line, passed);
        for c in self.snap.checks.iter().filter(|c| !c.passed) {
            let text = format!("✗ {}: {}", c.name, c.detail);
            self.log.verdict(at, text, false);
        }
    }

    /// Whether the lease a worker was blocked by still holds its message, as far as the
    /// events tell: the lease has not run out (a heartbeat since would have told of a new
    /// end), and the message's newest step is its owner's claim, call or heartbeat.
    fn still_blocked(&self, b: &crate::engine::worker::BlockedOn, now_ms: i64) -> bool {
        let extended = self.ledger.messages.get(&b.id).and_then(|m| {
            m.steps
                .iter()
                .filter_map(|(_, s)| match s {
                    HistoryStep::Heartbeat {
                        owner, until_ms, ..
                    } if **owner == *b.owner => Some(*until_ms),
                    _ => None,
                })
                .max()
        });
        let until = extended.map_or(b.until_ms, |u| u.max(b.until_ms));
        if !crate::engine::lease::is_live(until, now_ms) {
            return false;
        }
        let Some(m) = self.ledger.messages.get(&b.id) else {
            return true;
        };
        match m.steps.iter().max_by_key(|(seq, _)| *seq).map(|(_, s)| s) {
            Some(
                HistoryStep::Claim { owner, .. }
                | HistoryStep::Call { owner, .. }
                | HistoryStep::Heartbeat { owner, .. },
            ) => **owner == *b.owner,
            Some(_) => false,
            None => true,
        }
    }

    fn worker_view(&self, w: &WorkerHandle) -> WorkerView {
        let mut status = w.status();
        // A block is news only while the blocking lease still holds its message: once it
        // runs out, is finalized or is taken over, the line must not say BLOCKED any more.
        if let Some(b) = &status.blocked_on {
            if !self.still_blocked(b, self.engine.clock.now()) {
                status.blocked_on = None;
                if status.state == crate::engine::worker::WorkerState::Blocked {
                    // What it would be but for the block: paused like the others while
                    // the dashboard is paused, idle otherwise.
                    status.state = match status.paused {
                        true => crate::engine::worker::WorkerState::Paused,
                        false => crate::engine::worker::WorkerState::Idle,
                    };
                }
            }
        }
        let namesake = self.engine.namesake(w.slot);
        // Two workers of one name share its results in the ledger: each counts its own.
        let done = match namesake {
            Some(_) => status.processed,
            None => self
                .ledger
                .per_worker
                .get(&status.id.base().to_string())
                .copied()
                .unwrap_or(0),
        };
        let frozen = self.is_frozen(w.slot);
        let taken_by = status.lease.as_ref().and_then(|lease| {
            let m = self.ledger.messages.get(&lease.id)?;
            m.steps.iter().rev().find_map(|(_, step)| match step {
                HistoryStep::Claim { owner, version, .. } if *version > lease.version => {
                    Some(owner.to_string())
                }
                _ => None,
            })
        });
        let mut view = WorkerView {
            slot: w.slot,
            status,
            done,
            frozen,
            taken_by,
            namesake,
            software: None,
        };
        view.frozen &= view.alive();
        view
    }

    /// Workers keep polling a drained outbox; those polls are counted apart so `empty`
    /// keeps meaning "found nothing while there was work".
    fn count_idle_polls(&mut self) {
        let empty = self.ledger.claims_empty;
        let drained = self.drained();
        let (seen, idle) = &mut self.idle_polls;
        if empty < *seen {
            // A reset started a new ledger.
            (*seen, *idle) = (0, 0);
        }
        if drained {
            *idle += empty - *seen;
        }
        *seen = empty;
    }

    fn figures(&self) -> LedgerFigures {
        let l = &self.ledger;
        let p = &self.engine.provider;
        LedgerFigures {
            claims_ok: l.claims_ok,
            claims_empty: l.claims_empty - self.idle_polls.1,
            idle_polls: self.idle_polls.1,
            claims_blocked: l.claims_blocked,
            processing_attempts: l.processing_attempts,
            duplicates: l.processed_more_than_once(),
            rejected_finalizes: l.rejected_finalizes,
            ownership_violations: l.ownership_violations,
            overlaps: l.overlaps,
            reclaims: l.reclaims,
            results_written: l.results_written(),
            crashes: l.crashes,
            restarts: l.restarts,
            // Each worker process has a provider of its own: count what the table shows.
            provider_checks: match self.stage.external() {
                Some(_) => l.processing_attempts,
                None => p.status_checks_total(),
            },
            // Each call's row says whether it did new work at the provider.
            provider_effects: match self.stage.external() {
                Some(_) => l.side_effects(),
                None => p.side_effects_total(),
            },
            provider_idempotent: p.is_idempotent(),
            retries: l.retries,
            dead_letters: l.dead_letters,
            dead_now: l.dead.len() as u64,
            heartbeats: l.heartbeats,
            leases_lost: l.leases_lost,
            transactions: l.claim_transactions,
            writes: l.writes(),
            unique: l.unique_processed(),
            payments: match self.stage.lesson() {
                Some(_) => self.reader.payment_counts().unwrap_or_default(),
                None => Default::default(),
            },
            // Worker processes: their empty and blocked claims are never written; a watcher
            // only guesses at crashes, while --processes sees its children die.
            unknown: match self.stage.external() {
                None => Unknown::default(),
                // A recording of the lab's threads holds every crash; one of worker
                // processes cannot hold a kill from outside.
                Some(x) => Unknown {
                    claims: true,
                    crashes: x.children.is_none()
                        && (self.stage.replay().is_none() || x.witness.has_processes()),
                },
            },
        }
    }

    /// The page of log lines ending where the reader looks.
    fn log_view(&self) -> LogView {
        let total = self.log.len();
        let end = total.saturating_sub(self.ui.log_back);
        let first = end.saturating_sub(self.ui.log_page as usize);
        LogView {
            lines: self.log.lines().range(first..end).cloned().collect(),
            total,
            back: self.ui.log_back,
        }
    }
}

fn lesson_view(mode: &LessonMode, now_ms: i64, spots: Vec<Spot>) -> LessonView {
    let r = &mode.runner;
    let say = match r.done.checked_sub(1) {
        None if r.lesson.summary.trim().is_empty() => "Press n for the first step.".into(),
        None => format!(
            "{}. Press n for the first step.",
            r.lesson.summary.trim().trim_end_matches('.')
        ),
        Some(i) => r.lesson.steps[i].say.clone(),
    };
    LessonView {
        title: r.lesson.title.clone(),
        story: mode.story,
        done: r.done,
        total: r.total(),
        finished: r.finished(),
        off_script: mode.left_script(now_ms),
        say,
        next_actions: r
            .lesson
            .steps
            .get(r.done)
            .map(|s| s.actions_text.join(", ")),
        report: mode.last_report().cloned(),
        named: super::spotlight::named_in(&r.lesson, r.done),
        spots,
        question: mode
            .question(now_ms)
            .filter(|_| mode.asked)
            .map(|q| QuestionView {
                ask: q.ask.clone(),
                choices: q.choices.iter().map(|c| c.text.clone()).collect(),
                prediction: mode.prediction,
            }),
        reveal: reveal(mode),
    }
}

/// The prediction and the answer of the question the step just run asked.
fn reveal(mode: &LessonMode) -> Option<RevealView> {
    let predicted = mode.predicted?;
    let r = &mode.runner;
    let step = r.done.checked_sub(1).and_then(|i| r.lesson.steps.get(i))?;
    let answer = mode.last_report().and_then(|rep| rep.answer);
    let answer_text = answer
        .and_then(|a| step.quiz.as_ref()?.choices.get(a))
        .map(|c| c.text.clone())
        .unwrap_or_default();
    Some(RevealView {
        predicted,
        answer,
        answer_text,
    })
}
