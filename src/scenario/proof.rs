//! What the lease-expiry story proved, read back from a run's events.

use crate::engine::events::{Event, EventKind};
use crate::engine::ledger::Ledger;
use crate::engine::worker_id::WorkerId;

/// What the story proved, read back from the events.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoryProof {
    pub a_claimed: bool,
    pub a_crashed_holding: bool,
    pub b_blocked_before_expiry: bool,
    pub b_reclaimed_after_expiry: bool,
    pub reclaimed_processed_once: bool,
    pub lines: Vec<String>,
}

impl StoryProof {
    pub fn holds(&self) -> bool {
        self.a_claimed
            && self.a_crashed_holding
            && self.b_blocked_before_expiry
            && self.b_reclaimed_after_expiry
            && self.reclaimed_processed_once
    }

    pub fn from_events(events: &[Event], ledger: &Ledger) -> StoryProof {
        let a = WorkerId::first(0).to_string();
        let b = WorkerId::first(1).to_string();
        let mut p = StoryProof::default();
        let mut a_until = None;
        for e in events {
            let line = format!(
                "{}  {:<10} {}",
                crate::engine::clock::hms(e.at_ms),
                e.actor,
                e.describe()
            );
            match &e.kind {
                EventKind::Claimed {
                    id: 1, until_ms, ..
                } if e.actor == a && a_until.is_none() => {
                    p.a_claimed = true;
                    a_until = Some(*until_ms);
                    p.lines.push(line);
                }
                EventKind::Crashed {
                    holding: Some((1, ..)),
                    ..
                } if e.actor == a => {
                    p.a_crashed_holding = true;
                    p.lines.push(line);
                }
                EventKind::ClaimBlocked {
                    id: 1,
                    owner,
                    left_ms,
                    ..
                } if e.actor == b && *owner == a && *left_ms >= 0 => {
                    p.b_blocked_before_expiry = true;
                    p.lines.push(line);
                }
                EventKind::ClockMoved { .. }
                    if p.b_blocked_before_expiry && !p.b_reclaimed_after_expiry =>
                {
                    p.lines.push(line);
                }
                EventKind::Claimed {
                    id: 1,
                    reclaim: true,
                    ..
                } if e.actor == b && a_until.is_some_and(|u| e.at_ms > u) => {
                    p.b_reclaimed_after_expiry = true;
                    p.lines.push(line);
                }
                EventKind::ProviderCalled { id: 1, .. } | EventKind::Finalized { id: 1, .. }
                    if e.actor == b =>
                {
                    p.lines.push(line);
                }
                _ => {}
            }
        }
        p.reclaimed_processed_once = ledger.messages.get(&1).is_some_and(|m| {
            m.runs == 1 && m.attempts == 1 && m.processed_by().iter().map(|n| &**n).eq([b.as_str()])
        });
        p
    }
}
