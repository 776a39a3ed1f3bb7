//! What a lesson step puts in the Ledgers panel: the ledger figures the lesson names come
//! first, and each message the step talks about gets a line of the figures it names that
//! are no table column (results, attempts, payment, provider calls and effects), with the
//! time a row backing off may be claimed again.

use crate::engine::clock::hms;
use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::lesson::{
    runner, Expect, Figure, Lesson, Step, PROCESSED, PROVIDER_CALLS, SIDE_EFFECTS,
};
use crate::ui::snapshot::Spot;

use super::App;

/// Messages a step may spotlight at most: the panel has few lines at 80x24.
const MAX_SPOTS: usize = 3;

/// The Ledgers panel's name of a lesson figure that is no message's, if it is one.
pub fn panel_name(f: &Figure) -> Option<&'static str> {
    match f {
        Figure::Ledger(name) => Some(name),
        Figure::ProviderCalls(None) => Some(PROVIDER_CALLS),
        Figure::ProviderEffects(None) => Some(SIDE_EFFECTS),
        Figure::Payments(PaymentStatus::Paid) => Some("payments Paid"),
        Figure::Payments(PaymentStatus::Failed) => Some("payments Failed"),
        Figure::Payments(PaymentStatus::Pending) => Some("payments Pending"),
        _ => None,
    }
}

/// The name a message figure has on the spotlight line, when it is one the table has no
/// column for (the table shows status, owner and lease): the words of its expectation.
pub fn spot_label(f: &Figure) -> Option<&'static str> {
    match f {
        Figure::Processed(_) => Some(PROCESSED),
        Figure::Attempts(_) => Some("attempts"),
        Figure::Payment(_) => Some("payment"),
        Figure::ProviderCalls(Some(_)) => Some(PROVIDER_CALLS),
        Figure::ProviderEffects(Some(_)) => Some(SIDE_EFFECTS),
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

/// The messages `step` names, in order, each with its expectations the spotlight shows.
fn spotlit(step: &Step) -> Vec<(i64, Vec<&Expect>)> {
    let mut keys: Vec<(i64, Vec<&Expect>)> = Vec::new();
    for e in &step.expects {
        let Some(m) = e.figure.message() else {
            continue;
        };
        let at = match keys.iter().position(|(id, _)| *id == m.id) {
            Some(i) => i,
            None => {
                keys.push((m.id, Vec::new()));
                keys.len() - 1
            }
        };
        let label = spot_label(&e.figure);
        let shown = keys[at].1.iter().any(|o| spot_label(&o.figure) == label);
        if label.is_some() && !shown {
            keys[at].1.push(e);
        }
    }
    keys
}

impl App {
    /// The spotlight lines of the step just run: a message it names gets one when the step
    /// names a figure of it that is no column, or when it is backing off.
    pub(super) fn spots(&self, now_ms: i64) -> Vec<Spot> {
        let Some(mode) = self.stage.lesson() else {
            return Vec::new();
        };
        let r = &mode.runner;
        let Some(step) = r.done.checked_sub(1).and_then(|i| r.lesson.steps.get(i)) else {
            return Vec::new();
        };
        let mut spots = Vec::new();
        for (id, expects) in spotlit(step) {
            let Some(row) = super::external::row_at(self.reader.as_ref(), id) else {
                continue;
            };
            // Each value is the one the step's check compares, read the same way.
            let mut figures: Vec<(&'static str, String)> = expects
                .iter()
                .filter_map(|e| {
                    let label = spot_label(&e.figure)?;
                    Some((label, runner::figure(&self.engine, &self.ledger, e).ok()?))
                })
                .collect();
            if row.status == OutboxStatus::Pending && row.available_at_ms > now_ms {
                figures.push(("available", hms(row.available_at_ms)));
            }
            if !figures.is_empty() {
                spots.push(Spot {
                    key: row.key,
                    figures,
                });
            }
            if spots.len() == MAX_SPOTS {
                break;
            }
        }
        spots
    }
}
