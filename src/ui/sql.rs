//! The SQL pane's memory: for each worker, the statements its store ran for its last write
//! (`engine::statements` says which, from the event), folded from the same events as the
//! ledger and the timeline, so free play, a lesson, `--watch` and a replay all show it.

use std::collections::HashMap;

use crate::engine::events::{ClaimWay, Event, EventKind};
use crate::engine::outbox::RunSettings;
use crate::engine::statements::{self, Dialect, Known, Shown};

/// A worker's last statements and when it ran them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastSql {
    pub at_ms: i64,
    /// Which came later of two workers' last statements (events folded before it).
    pub order: u64,
    /// The incarnation that ran them (`Worker-A#2`).
    pub actor: String,
    pub shown: Shown,
}

/// Each worker's last statements, by slot.
#[derive(Debug, Clone, Default)]
pub struct SqlFold {
    /// What the events do not say: the dialect, and the settings as far as they are known.
    pub known: Known,
    /// Claims read from rows are made the one way these workers claim (worker processes
    /// claim the next message, or a batch): set for `--watch` and `--processes`.
    pub processes: bool,
    pub last: Vec<Option<LastSql>>,
    /// A worker process's own settings, where it recorded them (they may differ).
    own: HashMap<usize, Known>,
    /// Each message's lease version as its newest claim tells it.
    versions: HashMap<i64, i64>,
    /// Events folded so far.
    folded: u64,
}

impl SqlFold {
    pub fn new(dialect: Dialect) -> SqlFold {
        SqlFold {
            known: Known {
                dialect,
                ..Known::default()
            },
            ..SqlFold::default()
        }
    }

    /// What the workers run with from now on: `settings` as recorded, or this dashboard's
    /// own threads' settings.
    pub fn settle(&mut self, settings: &RunSettings) {
        self.known = self.settled(self.known, settings);
    }

    fn settled(&self, known: Known, settings: &RunSettings) -> Known {
        let claims = if settings.batch > 1 {
            ClaimWay::Batch
        } else {
            ClaimWay::Next
        };
        Known {
            student: settings.student,
            owner_only: Some(settings.owner_only),
            lease_ms: Some(settings.lease_ms),
            batch: Some(settings.batch),
            claims: if self.processes {
                Some(claims)
            } else {
                known.claims
            },
            ..known
        }
    }

    pub fn apply(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::SettingsRecorded { settings } | EventKind::Joined { settings, .. } => {
                match ev.slot {
                    Some(slot) => {
                        let own = self.settled(self.known, settings);
                        self.own.insert(slot, own);
                    }
                    None => self.settle(settings),
                }
            }
            // A new seeding starts a new story (a lesson's step back reseeds): its messages
            // start again at version 0, and nobody has run anything on them yet.
            EventKind::Seeded { .. } => {
                self.versions.clear();
                self.last.clear();
            }
            _ => {}
        }
        self.folded += 1;
        let Some(slot) = ev.slot else {
            return;
        };
        let row_version = match &ev.kind {
            EventKind::FinalizeRejected { id, .. } => self.versions.get(id).copied(),
            _ => None,
        };
        let known = Known {
            row_version,
            ..self.own.get(&slot).copied().unwrap_or(self.known)
        };
        if let Some(shown) = statements::shown(ev, &known) {
            if self.last.len() <= slot {
                self.last.resize(slot + 1, None);
            }
            self.last[slot] = Some(LastSql {
                at_ms: ev.at_ms,
                order: self.folded,
                actor: ev.actor.clone(),
                shown,
            });
        }
        if let EventKind::Claimed { id, version, .. } = &ev.kind {
            self.versions.insert(*id, *version);
        }
    }
}
