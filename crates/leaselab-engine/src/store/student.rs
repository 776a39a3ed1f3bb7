//! The lab's side of a student's operation (the statements themselves are
//! `crate::student`'s): the sandbox's hooks on this connection while the student's
//! statements are prepared and run, the transaction they run in, and the lab's own writes
//! (the event rows, the provider's answer) once an operation is done.

use rusqlite::hooks::{AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::{Connection, OptionalExtension};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::claim::record_claim;
use super::conn::End;
use super::finalize::write_answer;
use super::lease_events::{record, record_beat, LeaseEventKind, NewEvent};
use super::prepared::Tx;
use super::{Lease, Result, Store, StoreShared};
use crate::provider::StatusCheck;

/// The largest string, blob or row a student's statement may make or read, in bytes: the
/// size of the longest statement. SQLite's own limit is a gigabyte, and its functions that
/// compare two strings (`instr`, `replace`, `trim`, `LIKE`) take time that grows with the
/// product of their lengths, in one step the statement's deadline cannot interrupt: at
/// this size the slowest of them takes a few milliseconds.
pub const STUDENT_LENGTH_LIMIT: i32 = 4096;
/// The longest `LIKE` or `GLOB` pattern, in bytes.
pub const STUDENT_PATTERN_LIMIT: i32 = 200;
/// The most columns of a statement's row (and of its `ORDER BY`, `GROUP BY`, set list):
/// with [`STUDENT_LENGTH_LIMIT`], the values of a row being made hold at most 256 KiB.
pub const STUDENT_COLUMN_LIMIT: i32 = 64;

/// SQLite's limits on a student's statements, each with what it bounds.
pub const STUDENT_LIMITS: [(Limit, i32); 3] = [
    (Limit::SQLITE_LIMIT_LENGTH, STUDENT_LENGTH_LIMIT),
    (
        Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH,
        STUDENT_PATTERN_LIMIT,
    ),
    (Limit::SQLITE_LIMIT_COLUMN, STUDENT_COLUMN_LIMIT),
];

/// Put the student's limits on `conn`; the limits it had, to put back.
pub fn limit_for_students(conn: &Connection) -> rusqlite::Result<[i32; 3]> {
    let mut before = [0; 3];
    for (kept, (limit, value)) in before.iter_mut().zip(STUDENT_LIMITS) {
        *kept = conn.set_limit(limit, value)?;
    }
    Ok(before)
}

/// Put back the limits [`limit_for_students`] returned.
fn unlimit(conn: &Connection, before: [i32; 3]) -> rusqlite::Result<()> {
    for (value, (limit, _)) in before.into_iter().zip(STUDENT_LIMITS) {
        conn.set_limit(limit, value)?;
    }
    Ok(())
}

/// How a student's transaction begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    Immediate,
    Deferred,
}

/// Whether the lab's writes join the student's transaction, still open, or run in one of
/// their own (the student's statements ran each on its own, or were rolled back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    Open,
    Own,
}

/// A message as a claim found it: its key, its seeding and the lease's end in the row.
struct Found {
    key: String,
    seeding: i64,
    until: Option<i64>,
}

/// The authorizer and the progress handler of a student's statements while they run.
type Authorize = Box<dyn FnMut(AuthContext<'_>) -> Authorization + Send>;
type Progress = Box<dyn FnMut() -> bool + Send>;

/// The sandbox's hooks as the connection holds them: installed once, since setting an
/// authorizer makes SQLite prepare every statement of the connection again, and each
/// asking the closures of the student's run in progress, or allowing everything when none
/// is (the lab's own statements).
#[derive(Clone, Default)]
pub(super) struct Gate(Arc<Mutex<(Option<Authorize>, Option<Progress>)>>);

impl Gate {
    fn hooks(&self) -> MutexGuard<'_, (Option<Authorize>, Option<Progress>)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn install(&self, c: &mut Connection) -> Result<()> {
        let gate = self.clone();
        c.authorizer(Some(move |ctx: AuthContext<'_>| {
            match &mut gate.hooks().0 {
                Some(authorize) => authorize(ctx),
                None => Authorization::Allow,
            }
        }))?;
        let gate = self.clone();
        c.progress_handler(
            1_000,
            Some(move || gate.hooks().1.as_mut().is_some_and(|progress| progress())),
        )?;
        Ok(())
    }
}

impl Store {
    /// `body` with `authorize` asked about every statement prepared, `progress` asked
    /// every thousand virtual-machine steps whether to interrupt the statement, and the
    /// student's limits ([`STUDENT_LIMITS`]); all are undone before this returns, so the
    /// lab's own statements run without them.
    pub fn sandboxed<T>(
        &mut self,
        authorize: impl FnMut(AuthContext<'_>) -> Authorization + Send + 'static,
        progress: impl FnMut() -> bool + Send + 'static,
        body: impl FnOnce(&Connection) -> T,
    ) -> Result<T> {
        if self.sandbox.is_none() {
            let gate = Gate::default();
            self.conn.with_mut(|c| gate.install(c))?;
            self.sandbox = Some(gate);
        }
        let gate = self.sandbox.clone().expect("installed above");
        super::conn::forget_given_up_wait();
        let before = limit_for_students(&self.conn)?;
        *gate.hooks() = (Some(Box::new(authorize)), Some(Box::new(progress)));
        let out = body(&self.conn);
        *gate.hooks() = (None, None);
        unlimit(&self.conn, before)?;
        Ok(out)
    }

    /// The flag its engine sets when it quits: the student's statements running on its
    /// connections are interrupted (`student::quit`).
    pub fn student_quit(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.shared.student_quit.clone()
    }

    /// The commit stamp of an operation that wrote nothing (a claim that found no row).
    pub fn stamp_nothing(&self) -> u64 {
        self.shared.next_seq()
    }

    /// Begin the student's transaction.
    pub fn begin_student(&mut self, begin: Begin) -> Result<()> {
        super::conn::forget_given_up_wait();
        self.conn.execute_batch(match begin {
            Begin::Immediate => "BEGIN IMMEDIATE",
            Begin::Deferred => "BEGIN DEFERRED",
        })?;
        Ok(())
    }

    /// End the student's transaction, if one is open: commit it, or roll it back.
    pub fn end_student(&mut self, commit: bool) -> Result<()> {
        if !self.conn.is_autocommit() {
            let end = if commit { "COMMIT" } else { "ROLLBACK" };
            let done = self.conn.execute_batch(end);
            if done.is_err() && !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            done?;
        }
        self.absorb_busy();
        Ok(())
    }

    /// The lab's writes, in the student's open transaction or in one of their own.
    fn lab_write<T>(
        &mut self,
        join: Join,
        body: impl FnOnce(&Tx<'_, '_>, &StoreShared) -> Result<T>,
    ) -> Result<T> {
        match join {
            Join::Open => {
                let shared = &self.shared;
                self.conn.with(|tx| body(tx, shared))
            }
            Join::Own => self.write(|tx, shared| Ok((body(tx, shared)?, End::Commit))),
        }
    }

    /// A student's claim returned `(id, version)`: the lease it took, as the row has it
    /// (its key, its seeding, its end, else `lease_until`), with its `Claimed` row and its
    /// commit stamp. None when no message of the newest seeding has that Id (a student's
    /// statement cannot add a row, nor change a row's Id or seeding: this holds the lab's
    /// word that a lease is on a message it seeded).
    pub fn record_student_claim(
        &mut self,
        join: Join,
        worker: &str,
        (id, version): (i64, i64),
        (now, lease_until): (i64, i64),
    ) -> Result<Option<(Lease, u64)>> {
        self.lab_write(join, |tx, shared| {
            let found = tx
                .prepare_cached(
                    "SELECT PaymentKey, Seeding, LockedUntilUtc FROM OutboxMessages
                      WHERE Id = ?1 AND Seeding = (SELECT COALESCE(MAX(Seeding), 0) FROM Seedings)",
                )?
                .query_row([id], |r| {
                    Ok(Found {
                        key: r.get(0)?,
                        seeding: r.get(1)?,
                        until: r.get(2)?,
                    })
                })
                .optional()?;
            let Some(found) = found else {
                return Ok(None);
            };
            let until = found.until.unwrap_or(lease_until);
            let lease = Lease::taken(worker, until, (id, found.key), (version, found.seeding));
            record_claim(tx, &lease, now)?;
            Ok(Some((lease, shared.next_seq())))
        })
    }

    /// A student's finalize of `lease` ended: when `accepted`, the provider's answer on the
    /// payment and a `Finalized` row; else a `FinalizeRejected` row. Its commit stamp.
    pub fn record_student_finalize(
        &mut self,
        join: Join,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
        accepted: bool,
    ) -> Result<u64> {
        self.lab_write(join, |tx, shared| {
            let kind = if accepted {
                write_answer(tx, &lease.key, check)?;
                LeaseEventKind::Finalized
            } else {
                LeaseEventKind::FinalizeRejected
            };
            record(
                tx,
                &NewEvent {
                    version: Some(lease.version),
                    detail: Some(check.status.as_str()),
                    ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
                },
            )?;
            Ok(shared.next_seq())
        })
    }

    /// A student's heartbeat of `lease` ended: when `extended`, the lease's end as the row
    /// now has it (else `lease_until`) and a `Heartbeat` row; else a `LeaseLost` row.
    pub fn record_student_heartbeat(
        &mut self,
        join: Join,
        lease: &Lease,
        (now, lease_until): (i64, i64),
        extended: bool,
    ) -> Result<(Option<i64>, u64)> {
        self.lab_write(join, |tx, shared| {
            let until = if extended {
                let held: Option<i64> = tx
                    .prepare_cached("SELECT LockedUntilUtc FROM OutboxMessages WHERE Id = ?1")?
                    .query_row([lease.id], |r| r.get(0))
                    .optional()?
                    .flatten();
                Some(held.unwrap_or(lease_until))
            } else {
                None
            };
            record_beat(tx, lease, now, until)?;
            Ok((until, shared.next_seq()))
        })
    }
}
