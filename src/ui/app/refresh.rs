//! Taking the frame's [`Snapshot`]: the only place where the dashboard reads the clock,
//! the workers' status, the provider's counters and SQLite for drawing.

use std::time::{Duration, Instant};

use crate::engine::checker;
use crate::engine::ledger::HistoryStep;
use crate::engine::store::StoreError;
use crate::engine::worker::WorkerHandle;

use super::super::render::timeline;
use super::super::snapshot::{DbView, LedgerFigures, LessonView, LogView, StoryView, WorkerView};
use super::{App, LessonMode};

/// Outboxes up to this size have their status counts read every frame.
const SMALL_OUTBOX: u64 = 10_000;
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
        self.read_db(table_rows);
        self.count_idle_polls();
        self.ui.clamp_to(self.snap.db.total, self.log.len());
        let s = &self.engine.settings;
        let now_ms = self.engine.clock.now();
        self.snap.now_ms = now_ms;
        self.snap.speed = self.speed;
        self.snap.paused = self.paused;
        self.snap.leasing = s.leasing();
        self.snap.lease_ms = s.lease_ms();
        self.snap.process_ms = s.process_ms();
        self.snap.db_file =
            (!self.engine.is_temporary()).then(|| self.engine.db_path().display().to_string());
        self.snap.setting = self.setting_label();
        self.snap.workers = self
            .engine
            .workers()
            .iter()
            .map(|w| self.worker_view(w))
            .collect();
        self.snap.next_mover = if self.paused { self.next_mover() } else { None };
        self.snap.drained = self.drained();
        self.snap.figures = self.figures();
        self.snap.story = self.story.next().map(|step| StoryView {
            number: self.story.at + 1,
            len: self.story.len(),
            describe: step.describe(),
        });
        self.snap.lesson = self.lesson.as_ref().map(|l| lesson_view(l, now_ms));
        self.snap.log = self.log_view();
        let from = match self.ui.width {
            0 => i64::MIN,
            w => timeline::shown_from(w, s.lease_ms(), now_ms),
        };
        self.snap.lanes = self.timeline.lanes.iter().map(|l| l.since(from)).collect();
    }

    /// The visible table rows and the status counts, or the error that prevented them.
    fn read_db(&mut self, table_rows: u16) {
        let counts_due = self.snap.db.total <= SMALL_OUTBOX
            || self.counts_at.is_none_or(|t| t.elapsed() >= COUNTS_EVERY);
        let read = |app: &App| -> Result<(u64, DbView), StoreError> {
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
            Err(e) => self.snap.db.error = Some(e.to_string()),
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
            return;
        }
        if self.snap.history.is_some() && key == self.history_key {
            return;
        }
        if let Ok(rows) = self.reader.messages(0, self.snap.db.total) {
            let h = checker::check(&self.ledger, &rows);
            self.log_verdict(&h);
            self.snap.history = Some(h);
            self.history_key = key;
        }
    }

    /// The verdict and each failed check, written into the event log where they stay.
    fn log_verdict(&mut self, h: &checker::HistoryCheck) {
        let at = self.snap.now_ms;
        self.log
            .verdict(at, crate::ui::snapshot::verdict_line(h), h.passed());
        for (name, passed, detail) in h.rules() {
            if !passed {
                self.log.verdict(at, format!("✗ {name}: {detail}"), false);
            }
        }
    }

    fn worker_view(&self, w: &WorkerHandle) -> WorkerView {
        let status = w.status();
        let done = self
            .ledger
            .per_worker
            .get(&status.id.base().to_string())
            .copied()
            .unwrap_or(0);
        let frozen = self
            .lesson
            .as_ref()
            .is_some_and(|l| l.runner.frozen.contains(&w.slot));
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
            reclaims: l.reclaims,
            results_written: l.results_written(),
            crashes: l.crashes,
            restarts: l.restarts,
            provider_checks: p.status_checks_total(),
            provider_effects: p.side_effects_total(),
            provider_idempotent: p.is_idempotent(),
            retries: l.retries,
            dead_letters: l.dead_letters,
            dead_now: l.dead.len() as u64,
            heartbeats: l.heartbeats,
            leases_lost: l.leases_lost,
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

fn lesson_view(mode: &LessonMode, now_ms: i64) -> LessonView {
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
    }
}
