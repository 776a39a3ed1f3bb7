//! A class in the watch: the scoreboard pane (`B`, read from the class's PostgreSQL server
//! as `leaselab class scoreboard` reads it), `P` adding five payments to the current round,
//! `V` showing who runs what in the workers pane, and the command students type, shown
//! until the first worker joins.

use std::time::{Duration, Instant};

use crate::engine::backend::Db;
use crate::engine::pg::{PgStore, Score, ScoreError};
use crate::processes::join;
use crate::ui::keys::Action;
use crate::ui::snapshot::ScoreboardView;

use super::App;

/// Payments `P` adds to the current round.
pub const ROUND_PAYMENTS: u64 = 5;

/// How often a shown scoreboard is read again.
const READ_EVERY: Duration = Duration::from_secs(1);

/// The watch's own connection for the scoreboard, opened at the first `B`, and what it
/// read last.
#[derive(Default)]
pub(super) struct Class {
    store: Option<PgStore>,
    read_at: Option<Instant>,
    scores: Vec<Score>,
    error: Option<String>,
}

impl App {
    /// `B` and `P` in the watch; false for any other key or dashboard.
    pub(super) fn act_on_class(&mut self, action: Action) -> bool {
        if !self.watching() {
            return false;
        }
        match action {
            Action::Scoreboard if !self.engine.db.is_postgres() => self
                .ui
                .say("the scoreboard is a class's: watch its PostgreSQL server (docs/class.md)"),
            Action::Scoreboard => {
                self.ui.scoreboard = !self.ui.scoreboard;
                self.class.read_at = None;
            }
            Action::WhoRunsWhat => {
                self.ui.who_runs_what = !self.ui.who_runs_what;
                self.ui.say(if self.ui.who_runs_what {
                    "workers: each one's leaselab and system, as it joined (V: their work)"
                } else {
                    "workers: their work (V: each one's leaselab and system)"
                });
            }
            Action::AddRoundPayments => {
                let mut added = 0;
                let mut failed = None;
                while added < ROUND_PAYMENTS && failed.is_none() {
                    match self.engine.add_payment() {
                        Ok(()) => added += 1,
                        Err(e) => failed = Some(e),
                    }
                }
                self.ui.say(match failed {
                    None => format!("added {added} payments to the current round"),
                    Some(e) => format!("added {added} payments, then could not: {e}"),
                });
                self.after_engine_call();
            }
            _ => return false,
        }
        true
    }

    /// The scoreboard while `B` shows it, read again once a second.
    pub(super) fn scoreboard_view(&mut self) -> Option<ScoreboardView> {
        if !self.ui.scoreboard {
            self.class.store = None;
            return None;
        }
        let due = self
            .class
            .read_at
            .is_none_or(|at| at.elapsed() >= READ_EVERY);
        if due {
            self.class.read_at = Some(Instant::now());
            match self.read_scores() {
                Ok(scores) => {
                    self.class.scores = scores;
                    self.class.error = None;
                }
                Err(e) => {
                    // A new connection next time: this one may be gone with the server.
                    self.class.store = None;
                    self.class.error = Some(e.to_string());
                }
            }
        }
        Some(ScoreboardView {
            scores: self.class.scores.clone(),
            error: self.class.error.clone(),
        })
    }

    fn read_scores(&mut self) -> Result<Vec<Score>, ScoreError> {
        let Db::Postgres(url) = &self.engine.db else {
            return Ok(Vec::new());
        };
        if self.class.store.is_none() {
            self.class.store = Some(PgStore::open_url(url)?);
        }
        let store = self.class.store.as_mut().expect("opened above");
        store.scoreboard(None)
    }

    /// A `--watch` dashboard: workers followed through the table, none started here, no
    /// replay.
    fn watching(&self) -> bool {
        self.stage.replay().is_none() && self.stage.external().is_some_and(|x| x.children.is_none())
    }

    /// The join command, in the watch until the first worker joins.
    pub(super) fn join_command(&self) -> Option<String> {
        if !self.watching() || self.worker_count() > 0 {
            return None;
        }
        match &self.engine.db {
            Db::Postgres(url) => join::for_watch(std::path::Path::new(url)),
            Db::Sqlite(path) => join::for_watch(path),
        }
    }
}
