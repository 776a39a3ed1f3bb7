//! A run's events as they arrive: each folded into the ledger, the first kept for the
//! report's timeline.

use crate::engine::events::{Event, EventKind};
use crate::engine::ledger::Ledger;
use crate::engine::Engine;

use super::error::RunError;

/// Does a report's timeline show this event? Empty claims and pauses are only counted.
pub fn on_timeline(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::ClaimEmpty | EventKind::Paused | EventKind::Resumed
    )
}

/// Timeline events a run keeps for its report: the ledger folds every event, so memory
/// need not grow with the outbox.
const KEPT_EVENTS: usize = 1_000;

/// The first [`KEPT_EVENTS`] timeline events of a run, and how many there were.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    pub(super) kept: Vec<Event>,
    pub(super) total: u64,
}

/// Take one event into the run's history; a worker that failed ends the run with its error.
pub(crate) fn absorb(
    mut e: Event,
    ledger: &mut Ledger,
    events: &mut Timeline,
) -> Result<(), RunError> {
    ledger.settle_claim(&mut e);
    let failed = match &e.kind {
        EventKind::Failed { error } => Some(RunError::WorkerStopped {
            worker: e.actor.to_string(),
            error: error.to_string(),
        }),
        _ => None,
    };
    ledger.apply(&e);
    if on_timeline(&e.kind) {
        events.total += 1;
        if events.kept.len() < KEPT_EVENTS {
            events.kept.push(e);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Take every event already sent.
pub(crate) fn drain_now(
    engine: &Engine,
    ledger: &mut Ledger,
    events: &mut Timeline,
) -> Result<(), RunError> {
    while let Ok(e) = engine.events().try_recv() {
        absorb(e, ledger, events)?;
    }
    Ok(())
}
