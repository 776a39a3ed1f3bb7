//! One message's history, step by step as SQLite committed it, and the walk that judges a
//! lease's life along it: a claim while another lease held (an overlap), a heartbeat of a
//! lease no longer held, a finalize by a non-owner, a result written while dead-lettered.
//! The history check reports what the walk meets; the ledger counts the overlaps with it,
//! so the Ledgers panel and the check never disagree.

use std::sync::Arc;

use super::provider::ProviderStatus;

/// One step of a message's history, as committed by SQLite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryStep {
    Claim {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
        until_ms: i64,
    },
    /// A provider status check made for the message (a processing attempt).
    Call {
        owner: Arc<str>,
        at_ms: i64,
        status: ProviderStatus,
    },
    /// A committed ownership-guarded finalize.
    Finalize {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
        status: ProviderStatus,
    },
    /// A guarded finalize that changed no row (its lease was lost) and was rolled back.
    Rejected {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
    },
    /// Leasing off: an unconditional write.
    Mark {
        owner: Arc<str>,
        at_ms: i64,
        status: ProviderStatus,
    },
    /// A failed attempt released the lease of `version`: back to Pending after a backoff.
    Released {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
    },
    /// The last attempt failed: the message is dead-lettered until a redrive.
    DeadLettered {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
    },
    /// A redrive put the dead letter back to Pending.
    Redriven { owner: Arc<str>, at_ms: i64 },
    /// A committed heartbeat: the lease of `version` now runs until `until_ms`.
    Heartbeat {
        owner: Arc<str>,
        version: i64,
        at_ms: i64,
        until_ms: i64,
    },
}

impl HistoryStep {
    /// Who took the step.
    pub fn owner(&self) -> &str {
        match self {
            HistoryStep::Claim { owner, .. }
            | HistoryStep::Call { owner, .. }
            | HistoryStep::Finalize { owner, .. }
            | HistoryStep::Rejected { owner, .. }
            | HistoryStep::Mark { owner, .. }
            | HistoryStep::Released { owner, .. }
            | HistoryStep::DeadLettered { owner, .. }
            | HistoryStep::Redriven { owner, .. }
            | HistoryStep::Heartbeat { owner, .. } => owner,
        }
    }

    /// When, on the scenario clock.
    pub fn at_ms(&self) -> i64 {
        match self {
            HistoryStep::Claim { at_ms, .. }
            | HistoryStep::Call { at_ms, .. }
            | HistoryStep::Finalize { at_ms, .. }
            | HistoryStep::Rejected { at_ms, .. }
            | HistoryStep::Mark { at_ms, .. }
            | HistoryStep::Released { at_ms, .. }
            | HistoryStep::DeadLettered { at_ms, .. }
            | HistoryStep::Redriven { at_ms, .. }
            | HistoryStep::Heartbeat { at_ms, .. } => *at_ms,
        }
    }
}

/// What a step did against the lease rules, as the walk met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Breach {
    /// A claim at `at_ms` while `holder`'s lease held until `until_ms` (`i64::MAX` once
    /// the message's result was written).
    Overlap {
        owner: Arc<str>,
        at_ms: i64,
        holder: Arc<str>,
        until_ms: i64,
    },
    /// A heartbeat that extended lease `version`, which its worker no longer held.
    HeartbeatWithoutLease { owner: Arc<str>, version: i64 },
    /// A committed finalize whose lease was not the newest claimed.
    NonOwnerFinalize {
        owner: Arc<str>,
        version: i64,
        newest: i64,
    },
    /// A result written (`finalized`, or an unguarded mark) while the message was
    /// dead-lettered, with no redrive in between.
    WhileDead { owner: Arc<str>, finalized: bool },
}

/// What a walk through one message's history carries from step to step.
#[derive(Debug, Default)]
pub struct Walk {
    /// The newest lease's owner and end (`i64::MAX` once processed).
    previous: Option<(Arc<str>, i64)>,
    /// The newest lease version claimed.
    newest: Option<i64>,
    /// The lease held now (owner and version), if any.
    held: Option<(Arc<str>, i64)>,
    /// A dead letter waiting for a redrive.
    dead: bool,
}

impl Walk {
    /// Take the next step (in commit order); `found` hears of each breach it makes.
    pub fn step(&mut self, step: &HistoryStep, found: &mut impl FnMut(Breach)) {
        match step {
            HistoryStep::Heartbeat {
                owner,
                version,
                until_ms,
                ..
            } => {
                if self.held.as_ref() == Some(&(owner.clone(), *version)) {
                    self.previous = Some((owner.clone(), *until_ms));
                } else {
                    found(Breach::HeartbeatWithoutLease {
                        owner: owner.clone(),
                        version: *version,
                    });
                }
            }
            // Released by a failed attempt: the next claim may come at any time.
            HistoryStep::Released { .. } => self.release(false),
            HistoryStep::DeadLettered { .. } => self.release(true),
            HistoryStep::Redriven { .. } => self.dead = false,
            HistoryStep::Claim {
                owner,
                version,
                at_ms,
                until_ms,
            } => self.claim(owner, *version, (*at_ms, *until_ms), found),
            HistoryStep::Finalize { owner, version, .. } => self.finalize(owner, *version, found),
            HistoryStep::Mark { owner, .. } => {
                if self.dead {
                    found(Breach::WhileDead {
                        owner: owner.clone(),
                        finalized: false,
                    });
                }
            }
            HistoryStep::Call { .. } | HistoryStep::Rejected { .. } => {}
        }
    }

    fn release(&mut self, dead: bool) {
        self.previous = None;
        self.held = None;
        self.dead |= dead;
    }

    /// A reclaim is only allowed once the previous lease has run out.
    fn claim(
        &mut self,
        owner: &Arc<str>,
        version: i64,
        (at_ms, until_ms): (i64, i64),
        found: &mut impl FnMut(Breach),
    ) {
        if let Some((holder, until)) = self.held_at(at_ms) {
            found(Breach::Overlap {
                owner: owner.clone(),
                at_ms,
                holder,
                until_ms: until,
            });
        }
        self.previous = Some((owner.clone(), until_ms));
        self.newest = Some(version);
        self.held = Some((owner.clone(), version));
    }

    fn finalize(&mut self, owner: &Arc<str>, version: i64, found: &mut impl FnMut(Breach)) {
        if self.newest != Some(version) {
            found(Breach::NonOwnerFinalize {
                owner: owner.clone(),
                version,
                newest: self.newest.unwrap_or(0),
            });
        }
        // Processed: a later claim of it would be an overlap of its own kind.
        self.previous = Some((owner.clone(), i64::MAX));
        self.held = None;
        if self.dead {
            found(Breach::WhileDead {
                owner: owner.clone(),
                finalized: true,
            });
        }
    }

    /// The newest lease (owner and end) if it still holds at `at_ms`: a claim then overlaps.
    fn held_at(&self, at_ms: i64) -> Option<(Arc<str>, i64)> {
        self.previous
            .clone()
            .filter(|(_, until_ms)| at_ms <= *until_ms)
    }
}

/// The lease a claim at `at_ms`, committed after `before` (one message's steps in commit
/// order), took its message from while it still held: its owner and end (`i64::MAX` once
/// the message's result was written). What the history check counts as an overlap.
pub fn lease_held<'a>(
    before: impl IntoIterator<Item = &'a HistoryStep>,
    at_ms: i64,
) -> Option<(Arc<str>, i64)> {
    let mut walk = Walk::default();
    for step in before {
        walk.step(step, &mut |_| {});
    }
    walk.held_at(at_ms)
}

/// One message's overlaps, its steps in commit order: claims while another lease held, and
/// heartbeats that extended a lease no longer held (the ledger figure `overlaps`).
pub fn overlaps_in<'a>(steps: impl IntoIterator<Item = &'a HistoryStep>) -> u64 {
    let mut walk = Walk::default();
    let mut n = 0;
    for step in steps {
        walk.step(step, &mut |b| {
            if matches!(
                b,
                Breach::Overlap { .. } | Breach::HeartbeatWithoutLease { .. }
            ) {
                n += 1;
            }
        });
    }
    n
}
