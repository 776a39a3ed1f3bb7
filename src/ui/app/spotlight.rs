//! What a lesson step puts in the Ledgers panel: the ledger figures the lesson names come
//! first, and each message the step talks about gets a line of the figures it names that
//! are no table column (results, attempts, payment, provider calls and effects), with the
//! time a row backing off may be claimed again.

use crate::engine::clock::hms;
use crate::engine::store::{OutboxStatus, PaymentStatus};
use crate::lesson::{Figure, Lesson, Step};
use crate::ui::snapshot::Spot;

use super::App;

/// Messages a step may spotlight at most: the panel has few lines at 80x24.
const MAX_SPOTS: usize = 3;

/// The Ledgers panel's name of a lesson figure that is no message's, if it is one.
pub fn panel_name(f: &Figure) -> Option<&'static str> {
    match f {
        Figure::Ledger(name) => Some(name),
        Figure::ProviderCalls(None) => Some("provider"),
        Figure::ProviderEffects(None) => Some("effects"),
        Figure::Payments(PaymentStatus::Paid) => Some("paid"),
        Figure::Payments(PaymentStatus::Failed) => Some("failed"),
        Figure::Payments(PaymentStatus::Pending) => Some("unpaid"),
        _ => None,
    }
}

/// A message figure the spotlight line shows (the table shows status, owner and lease).
pub fn spot_name(f: &Figure) -> Option<(&str, &'static str)> {
    match f {
        Figure::Processed(m) => Some((&m.key, "runs")),
        Figure::Attempts(m) => Some((&m.key, "attempts")),
        Figure::Payment(m) => Some((&m.key, "payment")),
        Figure::ProviderCalls(Some(m)) => Some((&m.key, "calls")),
        Figure::ProviderEffects(Some(m)) => Some((&m.key, "effects")),
        _ => None,
    }
}

/// Every panel figure the lesson names, each once: those of the step just run (`done`
/// steps in) first, then the others in the order first named.
pub fn named_in(lesson: &Lesson, done: usize) -> Vec<&'static str> {
    let current = done.checked_sub(1).and_then(|i| lesson.steps.get(i));
    let mut names: Vec<&'static str> = Vec::new();
    for e in current
        .into_iter()
        .chain(&lesson.steps)
        .flat_map(|s| &s.expects)
    {
        if let Some(n) = panel_name(&e.figure) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// The messages `step` names, in order, each with the spotlight figures named for it.
fn spotlit(step: &Step) -> Vec<(i64, Vec<&'static str>)> {
    let mut keys: Vec<(i64, Vec<&'static str>)> = Vec::new();
    for e in &step.expects {
        let key = match &e.figure {
            Figure::Status(m)
            | Figure::Owner(m)
            | Figure::Lease(m)
            | Figure::Payment(m)
            | Figure::Processed(m)
            | Figure::Attempts(m)
            | Figure::ProviderCalls(Some(m))
            | Figure::ProviderEffects(Some(m)) => m.id,
            _ => continue,
        };
        let at = match keys.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                keys.push((key, Vec::new()));
                keys.len() - 1
            }
        };
        if let Some((_, name)) = spot_name(&e.figure) {
            if !keys[at].1.contains(&name) {
                keys[at].1.push(name);
            }
        }
    }
    keys
}

impl App {
    /// The spotlight lines of the step just run: a message it names gets one when the step
    /// names a figure of it that is no column, or when it is backing off.
    pub(super) fn spots(&self, now_ms: i64) -> Vec<Spot> {
        let Some(mode) = &self.lesson else {
            return Vec::new();
        };
        let r = &mode.runner;
        let Some(step) = r.done.checked_sub(1).and_then(|i| r.lesson.steps.get(i)) else {
            return Vec::new();
        };
        let calls = self.engine.provider.calls();
        let mut spots = Vec::new();
        for (id, names) in spotlit(step) {
            let Some(row) = super::external::row_at(self.reader.as_ref(), id) else {
                continue;
            };
            let key = row.key.clone();
            let mut figures: Vec<(&'static str, String)> = Vec::new();
            for name in names {
                let c = calls.get(&key);
                let value = match name {
                    "runs" => self.ledger.runs_of(row.id).to_string(),
                    "attempts" => row.attempts.to_string(),
                    "payment" => row.payment_status.to_string(),
                    "calls" => c.map_or(0, |c| c.status_checks).to_string(),
                    _ => c.map_or(0, |c| c.side_effects).to_string(),
                };
                figures.push((name, value));
            }
            if row.status == OutboxStatus::Pending && row.available_at_ms > now_ms {
                figures.push(("available", hms(row.available_at_ms)));
            }
            if !figures.is_empty() {
                spots.push(Spot { key, figures });
            }
            if spots.len() == MAX_SPOTS {
                break;
            }
        }
        spots
    }
}
