//! What the engine tells the world. Every event carries the scenario time, the worker (or
//! the engine itself) and a sequence number; for writes the number was taken while the
//! transaction still held SQLite's write lock, so it orders events as SQLite committed them.

use std::sync::Arc;

pub use super::outbox::StudentStatement;
use super::provider::ProviderStatus;

/// The actor of an engine-level event.
pub const ENGINE: &str = "engine";

/// How many times in a row a worker tries again a transaction SQLite refused the write lock
/// before it stops.
pub const BUSY_TRIES: u32 = 9;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub at_ms: i64,
    /// Worker slot (0 for Worker-A), or None for the engine.
    pub slot: Option<usize>,
    /// The worker's identity of this incarnation (`Worker-A`, `Worker-A#2`), or `engine`.
    pub actor: String,
    pub kind: EventKind,
    /// A student's statements, when the worker's store runs an exercise's SQL: the last
    /// operation's, as they ran. The SQL pane shows them in place of the lab's own.
    pub sql: Option<Arc<[StudentStatement]>>,
}

/// Which claim a worker made, and so which statements its store ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimWay {
    /// The oldest claimable message.
    Next,
    /// Several oldest claimable messages in one transaction (a batch size above one).
    Batch,
    /// One message asked for by id (a lesson's `claim W PAY-001`).
    Id,
    /// Read from a `LeaseEvents` row, which does not say.
    Unrecorded,
}

/// Whose lease a claim overlapped, and until when it held: the history check's overlap,
/// a claim at or before the end of the message's newest lease. `until_ms` is `i64::MAX`
/// when the message's result had been written (it was taken again once finished).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlapped {
    pub owner: String,
    pub until_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// A successful claim: this worker owns the message until `until_ms`.
    Claimed {
        id: i64,
        key: String,
        until_ms: i64,
        version: i64,
        /// The message had been leased before (its previous lease expired).
        reclaim: bool,
        /// Which claim took it: the statements it ran.
        way: ClaimWay,
        /// The lease it took the message from while that lease still held (or the
        /// finished message it took again): never a reclaim. The ledger, which knows the
        /// message's history, says so ([`crate::ledger::Ledger::settle_claim`]).
        overlapped: Option<Overlapped>,
    },
    /// Nothing was claimable.
    ClaimEmpty,
    /// One statement of a student's claim or finalize ran, and the operation goes on at the
    /// worker's next action (a statement outside a transaction is a step of its own).
    StatementRan {
        /// `claim` or `finalize`.
        operation: &'static str,
    },
    /// The message asked for is owned by someone else whose lease still runs.
    ClaimBlocked {
        id: i64,
        key: String,
        owner: String,
        left_ms: i64,
        /// Which claim was refused: the statements it ran.
        way: ClaimWay,
    },
    /// Leasing off: the worker read every Pending message at once.
    Loaded {
        count: usize,
    },
    /// The worker called the provider's status check: one processing attempt.
    ProviderCalled {
        id: i64,
        key: String,
        status: ProviderStatus,
        /// The call did new work at the provider (a side effect); false when an idempotent
        /// provider replayed its first answer for the key.
        effect: bool,
    },
    /// Leasing on: the ownership-guarded finalize committed.
    Finalized {
        id: i64,
        key: String,
        version: i64,
        status: ProviderStatus,
    },
    /// Leasing on: the guarded finalize changed no row and was rolled back.
    FinalizeRejected {
        id: i64,
        key: String,
        version: i64,
    },
    /// A heartbeat extended the held lease to `until_ms`.
    Heartbeat {
        id: i64,
        key: String,
        version: i64,
        until_ms: i64,
    },
    /// A heartbeat changed no row: the lease was lost and the worker dropped the message.
    LeaseLost {
        id: i64,
        key: String,
        version: i64,
    },
    /// The next lease of a batch had run out (at `until_ms`) when its worker got to it: the
    /// worker gave the message up without calling the provider.
    QueuedLeaseRanOut {
        id: i64,
        key: String,
        version: i64,
        until_ms: i64,
    },
    /// The provider failed this attempt, and by then the lease was lost: the failure was
    /// not written (the message belongs to someone else), but the attempt happened.
    AttemptLost {
        id: i64,
        key: String,
        version: i64,
        error: String,
    },
    /// The provider failed this attempt: the message waits until `available_at_ms`.
    AttemptFailed {
        id: i64,
        key: String,
        version: i64,
        attempt: i64,
        available_at_ms: i64,
        error: String,
    },
    /// The provider failed the message's last attempt: it is dead-lettered.
    DeadLettered {
        id: i64,
        key: String,
        version: i64,
        attempts: i64,
        error: String,
    },
    /// Dead letters were put back to Pending: the one of `key`, or all.
    Redriven {
        key: Option<String>,
        count: u64,
    },
    /// Heartbeats were switched on or off for every worker.
    HeartbeatsChanged {
        on: bool,
    },
    /// Leasing off: the result was written unconditionally.
    Marked {
        id: i64,
        key: String,
        status: ProviderStatus,
    },
    /// The worker stopped at once; whatever lease it held stays in the database.
    Crashed {
        holding: Option<(i64, String, i64)>,
        /// Set when the crash was a panic in the worker thread.
        panic: Option<String>,
        /// How a worker process was ended (`SIGKILL`, `exited with status 3`), when the
        /// crash was one.
        how: Option<String>,
    },
    /// One worker froze, holding what it holds (a lesson's `pause`, or SIGSTOP to a worker
    /// process): `how` says which.
    Froze {
        how: String,
    },
    /// A frozen worker woke and carries on with what it believed (`resume`, SIGCONT).
    Woke {
        how: String,
    },
    /// A worker process joined the database with these settings of its own, which process
    /// it is where it could tell, and which leaselab it runs on which system (each part
    /// unknown where the row does not say it).
    Joined {
        settings: super::outbox::RunSettings,
        process: Option<super::process_identity::ProcessIdentity>,
        software: super::software::Software,
    },
    /// A worker process stopped between two actions (`how`: the signal that asked it to);
    /// a lease it held stays in the database until it runs out.
    Left {
        how: String,
        holding: Option<(i64, String, i64)>,
    },
    /// The settings the engine's workers run with from now on, as recorded.
    SettingsRecorded {
        settings: super::outbox::RunSettings,
    },
    /// A new incarnation replaced a crashed (or stopped) worker.
    Restarted {
        previous: String,
    },
    Paused,
    Resumed,
    /// A worker process of a class found the teacher's hold on (`held`), or off again: it
    /// claims nothing while held, and finishes what it holds.
    HeldByTeacher {
        held: bool,
    },
    /// A worker met a database error and stopped.
    Failed {
        error: String,
    },
    /// SQLite refused a transaction of the worker the write lock (it had read, and another
    /// connection wrote or held the lock): rolled back, and tried again at `retry_at_ms`
    /// (None: at the worker's next step). `tries` is how many times in a row so far.
    BusyRetry {
        error: String,
        tries: u32,
        retry_at_ms: Option<i64>,
    },
    ClockMoved {
        from_ms: i64,
        to_ms: i64,
    },
    LeasingChanged {
        on: bool,
    },
    MessageAdded {
        id: i64,
        key: String,
    },
    /// The outbox was emptied and seeded again.
    Seeded {
        messages: u64,
    },
    /// A line of narration from a scripted story.
    Note {
        text: String,
    },
}

fn on_off(on: bool) -> &'static str {
    if on {
        "ON"
    } else {
        "OFF"
    }
}

/// `CLAIMED PAY-001 until 09:00:03.000 (lease v1)`, `RECLAIMED ...` for a takeover after
/// the lease ran out, and `took PAY-001 while Worker-A's lease held, ...` for a claim that
/// overlapped a lease (never a takeover, whatever the version says).
fn describe_claim(
    key: &str,
    (until_ms, version): (i64, i64),
    reclaim: bool,
    overlapped: Option<&Overlapped>,
) -> String {
    use super::clock::hms;
    let until = hms(until_ms);
    match overlapped {
        Some(o) if o.until_ms == i64::MAX => format!(
            "took {key}, which {} had processed, until {until} (lease v{version})",
            o.owner
        ),
        Some(o) => format!(
            "took {key} while {}'s lease held, until {until} (lease v{version})",
            o.owner
        ),
        None => format!(
            "{} {key} until {until} (lease v{version})",
            if reclaim { "RECLAIMED" } else { "CLAIMED" }
        ),
    }
}

impl EventKind {
    /// What a student's claim, finalize or heartbeat ends in: the events whose statements
    /// an exercise's store runs.
    pub fn is_statement(&self) -> bool {
        matches!(
            self,
            EventKind::Claimed { .. }
                | EventKind::ClaimEmpty
                | EventKind::StatementRan { .. }
                | EventKind::ClaimBlocked { .. }
                | EventKind::Finalized { .. }
                | EventKind::FinalizeRejected { .. }
                | EventKind::Heartbeat { .. }
                | EventKind::LeaseLost { .. }
        )
    }
}

impl Event {
    /// `CLAIMED PAY-003 until 09:00:01.500` and friends: one line for logs and reports.
    pub fn describe(&self) -> String {
        self.describe_work()
            .or_else(|| self.describe_given_up())
            .or_else(|| self.describe_failure())
            .or_else(|| self.describe_control())
            .unwrap_or_default()
    }

    /// A worker giving up what it cannot do now: a lease of its batch that ran out before
    /// its work started, a transaction SQLite refused the write lock (tried again later).
    fn describe_given_up(&self) -> Option<String> {
        use super::clock::hms;
        match &self.kind {
            EventKind::QueuedLeaseRanOut {
                key,
                version,
                until_ms,
                ..
            } => Some(format!(
                "GAVE UP {key}: {}'s lease v{version} on it, from a batch claim, ran out at \
                 {} before its work could start; the provider was not called",
                self.actor,
                hms(*until_ms)
            )),
            EventKind::BusyRetry {
                error,
                tries,
                retry_at_ms,
            } => Some(match retry_at_ms {
                Some(at) => format!(
                    "BUSY: {error}, retrying in {} ms (try {} of at most {})",
                    at - self.at_ms,
                    tries + 1,
                    BUSY_TRIES + 1
                ),
                None => format!(
                    "BUSY: {error}; its next step tries again (try {} of at most {})",
                    tries + 1,
                    BUSY_TRIES + 1
                ),
            }),
            _ => None,
        }
    }

    /// Claims, provider calls, finalizes and heartbeats.
    fn describe_work(&self) -> Option<String> {
        use super::clock::hms;
        match &self.kind {
            EventKind::Claimed {
                key,
                until_ms,
                version,
                reclaim,
                overlapped,
                ..
            } => Some(describe_claim(
                key,
                (*until_ms, *version),
                *reclaim,
                overlapped.as_ref(),
            )),
            EventKind::ClaimEmpty => Some("claim: nothing claimable".into()),
            EventKind::StatementRan { operation } => Some(format!(
                "ran a statement of its {operation}; the {operation} goes on"
            )),
            EventKind::ClaimBlocked {
                key,
                owner,
                left_ms,
                ..
            } => Some(format!("BLOCKED on {key} by {owner}, {left_ms} ms left")),
            EventKind::Loaded { count } => Some(format!("LOADED {count} pending (no claim)")),
            EventKind::ProviderCalled {
                key,
                status,
                effect,
                ..
            } => Some(format!(
                "provider call {key} -> {}{}",
                status.as_str(),
                if *effect {
                    ""
                } else {
                    " (its first answer replayed: no new side effect)"
                }
            )),
            EventKind::Finalized {
                key,
                version,
                status,
                ..
            } => Some(format!(
                "FINALIZED {key} {} (lease v{version})",
                status.as_str()
            )),
            EventKind::FinalizeRejected { key, version, .. } => Some(format!(
                "FINALIZE REJECTED {key}: lease v{version} lost, rolled back"
            )),
            EventKind::Heartbeat {
                key,
                version,
                until_ms,
                ..
            } => Some(format!(
                "heartbeat {key} until {} (lease v{version})",
                hms(*until_ms)
            )),
            EventKind::LeaseLost { key, version, .. } => Some(format!(
                "LEASE LOST {key}: {} woke after its lease ran out (lease v{version}), dropped it",
                self.actor
            )),
            EventKind::Marked { key, status, .. } => {
                Some(format!("MARKED {key} {} without a lease", status.as_str()))
            }
            _ => None,
        }
    }

    /// Failed attempts, dead letters, redrives, crashes.
    fn describe_failure(&self) -> Option<String> {
        use super::clock::hms;
        match &self.kind {
            EventKind::AttemptLost {
                key,
                version,
                error,
                ..
            } => Some(format!(
                "ATTEMPT FAILED {key} ({error}); lease v{version} lost meanwhile, nothing written"
            )),
            EventKind::AttemptFailed {
                key,
                version,
                error,
                ..
            } if error.starts_with(crate::outbox::RELEASED) => Some(format!(
                "RELEASED {key} (lease v{version}, {}): claimable now",
                &error[crate::outbox::RELEASED.len()..]
            )),
            EventKind::AttemptFailed {
                key,
                attempt,
                available_at_ms,
                error,
                ..
            } => Some(format!(
                "ATTEMPT {attempt} FAILED {key} ({error}); retry from {}",
                hms(*available_at_ms)
            )),
            EventKind::DeadLettered {
                key,
                attempts,
                error,
                ..
            } => Some(format!(
                "DEAD-LETTERED {key} after {attempts} attempt{} ({error})",
                if *attempts == 1 { "" } else { "s" }
            )),
            EventKind::Redriven { key, count } => Some(match key {
                Some(k) => format!("redrove {k} ({count} dead letter)"),
                None => format!("redrove {count} dead letters"),
            }),
            EventKind::Crashed {
                holding,
                panic,
                how,
            } => Some({
                let what = match (panic, how) {
                    (Some(p), _) => format!("PANICKED ({p})"),
                    (None, Some(how)) => format!("CRASHED ({how})"),
                    (None, None) => "CRASHED".to_string(),
                };
                match holding {
                    Some((_, key, until)) => {
                        format!("{what} holding {key} (lease until {})", hms(*until))
                    }
                    None => format!("{what} holding nothing"),
                }
            }),
            EventKind::Restarted { previous } => Some(format!("RESTARTED (replaces {previous})")),
            EventKind::Failed { error } => Some(format!("FAILED: {error}")),
            _ => None,
        }
    }

    /// The clock, switches, seeding and notes.
    fn describe_control(&self) -> Option<String> {
        use super::clock::hms;
        match &self.kind {
            EventKind::HeartbeatsChanged { on } => Some(format!(
                "heartbeats switched {}",
                if *on { "ON" } else { "OFF" }
            )),
            EventKind::Paused => Some("paused".into()),
            EventKind::Resumed => Some("resumed".into()),
            EventKind::HeldByTeacher { held: true } => {
                Some("held by the teacher: claims nothing until go".into())
            }
            EventKind::HeldByTeacher { held: false } => {
                Some("go: the teacher let the class go, claiming again".into())
            }
            EventKind::Froze { how } => Some(format!(
                "FROZEN ({how}): holds what it holds, still believes it owns it"
            )),
            EventKind::Woke { how } => {
                Some(format!("WOKE ({how}): carries on with what it believed"))
            }
            EventKind::Joined {
                settings, software, ..
            } => Some(format!(
                "joined: lease {} ms, processing {} ms, leasing {}, heartbeats {}; {}",
                settings.lease_ms,
                settings.process_ms,
                on_off(settings.leasing),
                if settings.heartbeats {
                    format!("every {} ms", settings.heartbeat_ms)
                } else {
                    "OFF".to_string()
                },
                software.line()
            )),
            EventKind::Left { how, holding } => Some(match holding {
                Some((_, key, until)) => format!(
                    "LEFT ({how}) holding {key} (lease until {})",
                    super::clock::hms(*until)
                ),
                None => format!("LEFT ({how}) holding nothing"),
            }),
            EventKind::SettingsRecorded { settings } => Some(format!(
                "settings: lease {} ms, processing {} ms, leasing {}, heartbeats {}, batch {}, {} guard",
                settings.lease_ms,
                settings.process_ms,
                on_off(settings.leasing),
                on_off(settings.heartbeats),
                settings.batch,
                if settings.owner_only {
                    "owner-only"
                } else {
                    "fencing-token"
                }
            )),
            EventKind::ClockMoved { from_ms, to_ms } => Some(format!(
                "clock advanced {} ms to {}",
                to_ms - from_ms,
                hms(*to_ms)
            )),
            EventKind::LeasingChanged { on } => Some(format!(
                "leasing switched {}",
                if *on { "ON" } else { "OFF" }
            )),
            EventKind::MessageAdded { key, .. } => {
                Some(format!("added payment {key} with its outbox row"))
            }
            EventKind::Seeded { messages } => Some({
                let noun = if *messages == 1 {
                    "payment"
                } else {
                    "payments"
                };
                format!("seeded {messages} {noun} + outbox rows")
            }),
            EventKind::Note { text } => Some(text.clone()),
            _ => None,
        }
    }

    /// The message this event is about, if any.
    pub fn message(&self) -> Option<(i64, &str)> {
        match &self.kind {
            EventKind::Claimed { id, key, .. }
            | EventKind::ClaimBlocked { id, key, .. }
            | EventKind::ProviderCalled { id, key, .. }
            | EventKind::Finalized { id, key, .. }
            | EventKind::FinalizeRejected { id, key, .. }
            | EventKind::Heartbeat { id, key, .. }
            | EventKind::LeaseLost { id, key, .. }
            | EventKind::QueuedLeaseRanOut { id, key, .. }
            | EventKind::AttemptFailed { id, key, .. }
            | EventKind::AttemptLost { id, key, .. }
            | EventKind::DeadLettered { id, key, .. }
            | EventKind::Marked { id, key, .. }
            | EventKind::MessageAdded { id, key } => Some((*id, key)),
            _ => None,
        }
    }
}
