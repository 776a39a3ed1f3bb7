//! Running a student's operation a step at a time: one statement when the operation runs
//! each statement on its own, the whole transaction otherwise. An operation in progress is
//! a value ([`OpRun`]) the explorer can keep in its states; each step says what it ran
//! ([`Shown`]). When the operation is done the lab writes its event rows (and, for an
//! accepted finalize, the provider's answer): in the student's transaction when it has
//! one, else in one of its own right after the last statement.

use std::borrow::BorrowMut;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::error::StudentError;
use super::file::{prepare_error, which};
use super::op::{Bound, OpRun};
use super::sandbox::{excerpt, over_a_limit, stopped_said, Deadline, Refusals};
use super::store::StudentStore;
use super::{OpKind, Operation, Statement, TxMode};
use crate::outbox::{Failure, Lease, OutboxError};
use crate::store::{write_lock_refused, Begin, Join, Store, STUDENT_LENGTH_LIMIT};

/// What a step left: more statements to run, or the operation's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Continue,
    Done(OpResult),
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The claim took this lease (its `id`, `version` and `until` as the claim left them).
    Claimed(Lease),
    /// The claim found no row to take.
    NoRow,
    /// The finalize's guarded update changed the row.
    Accepted,
    /// The finalize's guard held no row: nothing of it stays.
    Rejected,
    /// The heartbeat's lease now runs until this time.
    Extended(i64),
    /// The heartbeat's guard held no row: the lease is lost.
    Lost,
}

/// What one step ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown {
    pub statements: Vec<ShownStatement>,
    /// The step's transaction was rolled back (an operation that ended early in one).
    pub rolled_back: bool,
    /// The commit stamp of the lab's writes, when the operation is done.
    pub stamp: Option<u64>,
}

/// One statement as it ran, as the worker's events carry it to the SQL pane.
pub use crate::outbox::StudentStatement as ShownStatement;

/// What a statement did.
struct Ran {
    shown: ShownStatement,
    /// It returned no row or changed none: the operation ends here.
    ends: bool,
    changed: usize,
}

/// The most columns a step shows of a returned row.
const SHOWN_COLUMNS: usize = 6;

impl<S: BorrowMut<Store>> StudentStore<S> {
    /// Run the next step of `run`: one statement when its operation runs each statement on
    /// its own, the whole transaction otherwise.
    /// The statements it ran are kept with the operation's others (`student_statements`).
    pub fn step(&mut self, run: &mut OpRun) -> Result<(Step, Shown), StudentError> {
        let exercise = self.exercise.clone();
        let op = exercise
            .operation(run.kind)
            .ok_or_else(|| StudentError::Undefined {
                file: crate::text::quoted(&exercise.file),
                operation: run.kind.name(),
            })?;
        if run.next == 0 {
            self.ran.clear();
        }
        let stepped = match op.transaction {
            TxMode::None => self.step_one(op, run),
            TxMode::Immediate => self.step_all(op, run, Begin::Immediate),
            TxMode::Deferred if self.deferred_in_two && run.next == 0 => self.step_reads(op, run),
            TxMode::Deferred => self.step_all(op, run, Begin::Deferred),
        }?;
        self.ran.extend(stepped.1.statements.iter().cloned());
        Ok(stepped)
    }

    /// Run `run` to its end, step by step.
    pub fn run_to_end(&mut self, mut run: OpRun) -> Result<(OpResult, u64), StudentError> {
        loop {
            if let (Step::Done(result), shown) = self.step(&mut run)? {
                let stamp = shown.stamp.unwrap_or_else(|| self.store().stamp_nothing());
                return Ok((result, stamp));
            }
        }
    }

    fn step_one(&mut self, op: &Operation, run: &mut OpRun) -> Result<(Step, Shown), StudentError> {
        let statement = op.statements.get(run.next).ok_or_else(|| {
            student(
                &self.exercise.file,
                0,
                "an operation stepped past its end".into(),
            )
        })?;
        let ran = self.sandboxed(|conn, sandbox| {
            sandbox.execute(conn, (op.kind, run.next), &mut run.bound, statement)
        })?;
        let mut shown = Shown {
            statements: vec![ran.shown],
            ..Shown::default()
        };
        if !ran.ends && run.next + 1 < op.statements.len() {
            run.next += 1;
            return Ok((Step::Continue, shown));
        }
        run.next = op.statements.len();
        let (result, stamp) = self.finish(op, run, Join::Own, (ran.ends, ran.changed))?;
        shown.stamp = stamp;
        Ok((Step::Done(result), shown))
    }

    /// A deferred transaction's first step when it reads before it writes: its reads, up to
    /// its first write. One that writes first, or only reads, runs whole.
    fn step_reads(
        &mut self,
        op: &Operation,
        run: &mut OpRun,
    ) -> Result<(Step, Shown), StudentError> {
        let first_write = self.sandboxed(|conn, _| {
            for (i, s) in op.statements.iter().enumerate() {
                match conn.prepare_cached(&s.sql) {
                    Ok(stmt) if stmt.readonly() => {}
                    _ => return Ok(Some(i)),
                }
            }
            Ok(None)
        })?;
        let Some(w) = first_write.filter(|w| *w > 0) else {
            return self.step_all(op, run, Begin::Deferred);
        };
        self.store_mut().begin_student(Begin::Deferred)?;
        let ran = self.run_statements(op, run, 0..w);
        // The reads change nothing: their transaction ends here whatever they found.
        let _ = self.store_mut().end_student(false);
        let ran = ran?;
        let ended = ran.last().is_some_and(|r| r.ends);
        let mut shown = Shown {
            statements: ran.into_iter().map(|r| r.shown).collect(),
            ..Shown::default()
        };
        if !ended {
            run.next = w;
            return Ok((Step::Continue, shown));
        }
        shown.rolled_back = true;
        run.next = op.statements.len();
        let (result, stamp) = self.finish(op, run, Join::Own, (true, 0))?;
        shown.stamp = stamp;
        Ok((Step::Done(result), shown))
    }

    /// The statements `range` of `op`, in the sandbox, until one ends the operation.
    fn run_statements(
        &mut self,
        op: &Operation,
        run: &mut OpRun,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<Ran>, StudentError> {
        self.sandboxed(|conn, sandbox| {
            let mut all = Vec::new();
            for index in range {
                let statement = &op.statements[index];
                let ran = sandbox.execute(conn, (op.kind, index), &mut run.bound, statement)?;
                let stop = ran.ends;
                all.push(ran);
                if stop {
                    break;
                }
            }
            Ok(all)
        })
    }

    fn step_all(
        &mut self,
        op: &Operation,
        run: &mut OpRun,
        begin: Begin,
    ) -> Result<(Step, Shown), StudentError> {
        self.store_mut().begin_student(begin)?;
        let first = run.next.min(op.statements.len());
        let ran = self.run_statements(op, run, first..op.statements.len());
        let ran = match ran {
            Ok(ran) => ran,
            Err(e) => {
                let _ = self.store_mut().end_student(false);
                return Err(refused(op, e));
            }
        };
        run.next = op.statements.len();
        let last = ran.last().map_or((true, 0), |r| (r.ends, r.changed));
        let mut shown = Shown {
            statements: ran.into_iter().map(|r| r.shown).collect(),
            ..Shown::default()
        };
        let finished = if last.0 {
            shown.rolled_back = true;
            self.store_mut().end_student(false)?;
            self.finish(op, run, Join::Own, last)
        } else {
            match self.finish(op, run, Join::Open, last) {
                Ok(done) => self.store_mut().end_student(true).map(|()| done),
                Err(e) => {
                    let _ = self.store_mut().end_student(false);
                    return Err(refused(op, e));
                }
            }
            .map_err(|e| refused(op, StudentError::from(e)))
        };
        let (result, stamp) = finished?;
        shown.stamp = stamp;
        Ok((Step::Done(result), shown))
    }

    /// The statements ran (`ends`: the last ended the operation early, `changed`: the rows
    /// the last changed): the result, with the lab's writes and their stamp.
    fn finish(
        &mut self,
        op: &Operation,
        run: &OpRun,
        join: Join,
        (ends, changed): (bool, usize),
    ) -> Result<(OpResult, Option<u64>), StudentError> {
        let file = self.exercise.file.clone();
        let last = op.statements.last().map_or(0, |s| s.line);
        if !ends && changed > 1 && op.kind != OpKind::Claim {
            let message = format!(
                "{} changed {changed} rows; a {} ends one lease",
                which(op.kind, op.statements.len() - 1),
                op.kind.name()
            );
            return Err(student(&file, last, message));
        }
        let b = &run.bound;
        let store = self.store_mut();
        match op.kind {
            OpKind::Claim => {
                let (Some(id), Some(version), false) = (b.id, b.version, ends) else {
                    return Ok((OpResult::NoRow, None));
                };
                match store.record_student_claim(
                    join,
                    &b.worker,
                    (id, version),
                    (b.now, b.lease_until),
                )? {
                    Some((lease, stamp)) => Ok((OpResult::Claimed(lease), Some(stamp))),
                    None => Err(student(
                        &file,
                        last,
                        format!("the claim returned Id = {id}, which is no message the lab seeded"),
                    )),
                }
            }
            OpKind::Finalize => {
                let (Some(lease), Some(answer)) = (&run.lease, &run.answer) else {
                    return Err(student(&file, last, "a finalize without its lease".into()));
                };
                let accepted = !ends && changed == 1;
                let stamp = store.record_student_finalize(join, lease, answer, b.now, accepted)?;
                let result = if accepted {
                    OpResult::Accepted
                } else {
                    OpResult::Rejected
                };
                Ok((result, Some(stamp)))
            }
            OpKind::Heartbeat => {
                let Some(lease) = &run.lease else {
                    return Err(student(&file, last, "a heartbeat without its lease".into()));
                };
                let extended = !ends && changed == 1;
                let (until, stamp) = store.record_student_heartbeat(
                    join,
                    lease,
                    (b.now, b.lease_until),
                    extended,
                )?;
                Ok((
                    until.map_or(OpResult::Lost, OpResult::Extended),
                    Some(stamp),
                ))
            }
        }
    }

    /// `body` with the sandbox on the store's connection.
    fn sandboxed<T>(
        &mut self,
        body: impl FnOnce(&Connection, &Sandbox<'_>) -> Result<T, StudentError>,
    ) -> Result<T, StudentError> {
        let refusals = self.refusals.clone();
        let deadline = self.deadline.clone();
        let file = self.exercise.file.clone();
        let authorize = refusals.authorizer();
        let progress = deadline.handler();
        self.store_mut().sandboxed(authorize, progress, |conn| {
            body(
                conn,
                &Sandbox {
                    file: &file,
                    refusals: &refusals,
                    deadline: &deadline,
                },
            )
        })?
    }
}

/// A transaction SQLite refused the write lock (it had read, and another connection wrote
/// or held the lock): said as the operation's, and that nothing of it stayed. Any other
/// error as it is.
fn refused(op: &Operation, e: StudentError) -> StudentError {
    match e {
        StudentError::Database(OutboxError::Database {
            failure: failure @ Failure::WriteLockRefused { snapshot },
            cause,
            ..
        }) => StudentError::Database(OutboxError::Database {
            failure,
            message: format!(
                "the {}'s transaction met {}; rolled back",
                op.kind.name(),
                write_lock_refused(snapshot)
            ),
            cause,
        }),
        e => e,
    }
}

fn student(file: &str, line: u32, message: String) -> StudentError {
    StudentError::Student {
        file: crate::text::quoted(file),
        line,
        message: crate::text::printable(&message).into_owned(),
        cause: None,
    }
}

/// The sandbox while a step runs: the file its errors name, the authorizer's refusals and
/// the statement's deadline.
struct Sandbox<'a> {
    file: &'a str,
    refusals: &'a Refusals,
    deadline: &'a Deadline,
}

impl Sandbox<'_> {
    /// Run one statement with `run`'s values bound; bind what its row returns.
    fn execute(
        &self,
        conn: &Connection,
        (kind, index): (OpKind, usize),
        bound: &mut Bound,
        s: &Statement,
    ) -> Result<Ran, StudentError> {
        let fail = |e: rusqlite::Error| self.failed(kind, index, s, e);
        self.refusals.take();
        // Kept prepared between runs; only ever run here, inside the sandbox, so that were
        // SQLite to prepare it again, the authorizer would be asked again.
        let mut stmt = conn.prepare_cached(&s.sql).map_err(|e| {
            let e = prepare_error(self.refusals, self.file, kind, index, s, e);
            StudentError::Student {
                file: e.file,
                line: e.line,
                message: e.message,
                cause: None,
            }
        })?;
        // Watched from here until it has run: interrupted at its deadline, or at a stop.
        let Some(_watched) = self.deadline.start(conn.get_interrupt_handle()) else {
            let stop = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT);
            return Err(fail(rusqlite::Error::SqliteFailure(stop, None)));
        };
        let parameters = bind(&mut stmt, bound).map_err(&fail)?;
        let read_only = stmt.readonly();
        let (effect, ends, changed) = if stmt.column_count() > 0 {
            let row = self.one_row(&mut stmt, kind, index, s)?;
            let changed = if read_only {
                0
            } else {
                conn.changes() as usize
            };
            match row {
                None => ("no row".to_string(), true, changed),
                Some(row) => {
                    self.bind_row(&row, bound, kind, index, s)?;
                    (returned(&row), false, changed)
                }
            }
        } else {
            let changed = stmt.raw_execute().map_err(&fail)?;
            let effect = match changed {
                0 => "no row changed".to_string(),
                1 => "1 row changed".to_string(),
                n => format!("{n} rows changed"),
            };
            (effect, changed == 0 && !read_only, changed)
        };
        let shown = ShownStatement {
            line: s.line,
            sql: s.sql.clone(),
            parameters,
            effect,
        };
        Ok(Ran {
            shown,
            ends,
            changed,
        })
    }

    /// The statement's one row (its columns' names and values), none, or the refusal of
    /// a second.
    fn one_row(
        &self,
        stmt: &mut rusqlite::Statement<'_>,
        kind: OpKind,
        index: usize,
        s: &Statement,
    ) -> Result<Option<Vec<(String, Value)>>, StudentError> {
        let names: Vec<String> = stmt.column_names().map(String::from).collect();
        let mut rows = stmt.raw_query();
        let fail = |e| self.failed(kind, index, s, e);
        let Some(row) = rows.next().map_err(fail)? else {
            return Ok(None);
        };
        let values: Vec<(String, Value)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.clone(),
                    Value::of(row.get_ref(i).unwrap_or(ValueRef::Null)),
                )
            })
            .collect();
        let bytes: usize = values.iter().map(|(_, v)| v.size()).sum();
        if bytes > STUDENT_LENGTH_LIMIT as usize {
            let message = format!(
                "{} returned a row of {bytes} bytes, more than the {STUDENT_LENGTH_LIMIT} a row \
                 of an exercise may hold",
                which(kind, index)
            );
            return Err(student(self.file, s.line, message));
        }
        if rows.next().map_err(fail)?.is_some() {
            let what = match kind {
                OpKind::Claim => "a claim takes one message",
                _ => "a statement returns at most one",
            };
            let message = format!("{} returned 2 rows; {what}", which(kind, index));
            return Err(student(self.file, s.line, message));
        }
        Ok(Some(values))
    }

    /// `Id` and `LeaseVersion` of a returned row bound as `:id` and `:version`.
    fn bind_row(
        &self,
        row: &[(String, Value)],
        bound: &mut Bound,
        kind: OpKind,
        index: usize,
        s: &Statement,
    ) -> Result<(), StudentError> {
        for (name, value) in row {
            let slot = if name.eq_ignore_ascii_case("Id") {
                &mut bound.id
            } else if name.eq_ignore_ascii_case("LeaseVersion") {
                &mut bound.version
            } else {
                continue;
            };
            match value {
                Value::Integer(n) => *slot = Some(*n),
                other => {
                    let message = format!(
                        "{} returned {} = {} ({}); {} is an integer",
                        which(kind, index),
                        crate::text::quoted(name),
                        other.shown(),
                        other.type_name(),
                        crate::text::quoted(name),
                    );
                    return Err(student(self.file, s.line, message));
                }
            }
        }
        Ok(())
    }

    /// A statement that failed while it ran, said in the student's words; the database's
    /// own failures (a lock held too long, a full disk) stay the database's.
    fn failed(
        &self,
        kind: OpKind,
        index: usize,
        s: &Statement,
        e: rusqlite::Error,
    ) -> StudentError {
        let what = format!("{} ({})", which(kind, index), excerpt(&s.sql));
        let message = if let Some(stopped) = self.deadline.stopped() {
            stopped_said(&what, stopped, &s.sql)
        } else if let Some(why) = self.refusals.take() {
            format!("{what} {why}")
        } else {
            use rusqlite::ErrorCode::*;
            let code = e.sqlite_error_code();
            if matches!(
                code,
                Some(DatabaseBusy | DatabaseLocked | DiskFull | SystemIoFailure | CannotOpen)
            ) {
                return StudentError::Database(OutboxError::from(e));
            }
            match over_a_limit(&e) {
                Some(why) => format!("{what} {why}"),
                None => format!("{what} failed: {}", crate::text::quoted(&e.to_string())),
            }
        };
        StudentError::Student {
            file: crate::text::quoted(self.file),
            line: s.line,
            message: crate::text::printable(&message).into_owned(),
            cause: Some(Box::new(e)),
        }
    }
}

/// Bind every named parameter the statement uses; what was bound, as shown.
fn bind(stmt: &mut rusqlite::Statement<'_>, b: &Bound) -> rusqlite::Result<Vec<(String, String)>> {
    let mut shown = Vec::new();
    for i in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(i).unwrap_or("?").to_string();
        let value = match name.as_str() {
            ":worker" => Value::Text(b.worker.clone()),
            ":now" => Value::Integer(b.now),
            ":lease_until" => Value::Integer(b.lease_until),
            ":id" => b.id.map_or(Value::Null, Value::Integer),
            ":version" => b.version.map_or(Value::Null, Value::Integer),
            _ => Value::Null,
        };
        match &value {
            Value::Text(t) => stmt.raw_bind_parameter(i, t)?,
            Value::Integer(n) => stmt.raw_bind_parameter(i, n)?,
            _ => stmt.raw_bind_parameter(i, rusqlite::types::Null)?,
        }
        shown.push((name, value.shown()));
    }
    Ok(shown)
}

/// A value a statement returned or was bound to.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(usize),
}

impl Value {
    fn of(v: ValueRef<'_>) -> Value {
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::Integer(n),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Value::Blob(b.len()),
        }
    }

    /// Its size in a row, in bytes.
    fn size(&self) -> usize {
        match self {
            Value::Null => 0,
            Value::Integer(_) | Value::Real(_) => 8,
            Value::Text(t) => t.len(),
            Value::Blob(n) => *n,
        }
    }

    fn shown(&self) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Integer(n) => n.to_string(),
            Value::Real(x) => x.to_string(),
            Value::Text(t) => format!("'{}'", crate::text::bounded(&crate::text::printable(t), 40)),
            Value::Blob(n) => format!("a blob of {n} bytes"),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Integer(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

/// `returned Id = 2, LeaseVersion = 1`.
fn returned(row: &[(String, Value)]) -> String {
    let mut parts: Vec<String> = row
        .iter()
        .take(SHOWN_COLUMNS)
        .map(|(n, v)| format!("{} = {}", crate::text::quoted(n), v.shown()))
        .collect();
    if row.len() > SHOWN_COLUMNS {
        parts.push("…".into());
    }
    format!("returned {}", parts.join(", "))
}
