//! Who is here now: the worker names held by a live process, for refusing a second worker
//! under one of them at join and for the watch's `left`.
//!
//! On PostgreSQL the server knows: a worker's sessions carry its name as their
//! `application_name` (`pg::session_name`), and a session ends with its process, even one
//! killed with SIGKILL. On SQLite there is no server: a name is live while its newest
//! `LeaseEvents` row is not its leaving or a crash and is at most [`STALE_MS`] old. A worker
//! killed so frees its name that long after its last row, or at once where its `Joined` row
//! says which process it was and that process has ended on this machine; one that writes
//! nothing that long (an outbox with nothing to claim) frees it too.

use std::collections::BTreeSet;

use crate::engine::outbox::{LeaseEventKind, NewestRow, OutboxError, Reading};
use crate::engine::pg::{is_this_process, named_in, session_name, SESSION_PREFIX};
use crate::engine::process_identity::Presence;
use crate::engine::text::printable;

/// On SQLite, how old a name's newest row may be and the name still held.
pub const STALE_MS: i64 = 30_000;

/// Most names an error lists.
const LISTED: usize = 12;

/// The names held now, sorted: on PostgreSQL those with a session, on SQLite those whose
/// newest row is recent and not a leaving (`now_ms` on the caller's clock, the one every
/// SQLite row was written on).
pub fn names_in_use(store: &dyn Reading, now_ms: i64) -> Result<Vec<String>, OutboxError> {
    let rows = store.newest_rows()?;
    let names: BTreeSet<String> = match store.sessions()? {
        Some(sessions) => sessions
            .iter()
            .map(|s| named_in(s))
            .map(|s| {
                rows.iter()
                    .find(|r| session_name(&r.worker) == s)
                    .map_or_else(
                        || s[SESSION_PREFIX.len()..].to_string(),
                        |r| r.worker.clone(),
                    )
            })
            .collect(),
        None => rows
            .iter()
            .filter(|r| live_on_sqlite(r, now_ms))
            .map(|r| r.worker.clone())
            .collect(),
    };
    Ok(names.into_iter().collect())
}

/// On SQLite: a worker's (not the engine's) newest row is recent and says neither that it
/// left nor that it crashed, and its process is not known to have ended (on this machine,
/// where it said which process it is: `process_identity`).
pub fn live_on_sqlite(row: &NewestRow, now_ms: i64) -> bool {
    let ended = row
        .process
        .as_ref()
        .is_some_and(|p| p.presence() == Presence::Gone);
    row.worker != crate::engine::events::ENGINE
        && !matches!(row.kind, LeaseEventKind::Left | LeaseEventKind::Crashed)
        && now_ms - row.at_ms <= STALE_MS
        && !ended
}

/// Whether another live worker holds `name`: on PostgreSQL a session of that name of
/// another process; on SQLite a live row.
pub fn held_by_another(store: &dyn Reading, name: &str, now_ms: i64) -> Result<bool, OutboxError> {
    Ok(match store.sessions()? {
        Some(sessions) => {
            let wanted = session_name(name);
            sessions
                .iter()
                .any(|s| named_in(s) == wanted && !is_this_process(s))
        }
        None => store
            .newest_rows()?
            .iter()
            .any(|r| r.worker == name && live_on_sqlite(r, now_ms)),
    })
}

/// The names in use as one line: each printable, at most [`LISTED`].
pub fn listed(names: &[String]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(LISTED)
        .map(|n| {
            printable(n)
                .chars()
                .take(2 * super::name::MAX_NAME)
                .collect()
        })
        .collect();
    if names.len() > LISTED {
        shown.push(format!("and {} more", names.len() - LISTED));
    }
    shown.join(", ")
}
