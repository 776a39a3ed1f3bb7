//! Reading an exercise file: its TOML, its bounds, and every statement prepared under the
//! sandbox on a scratch database of the lab's schema before anything runs, so a forbidden
//! statement, a syntax error, an unknown parameter or a claim that returns no `Id` is
//! refused with the file's line.

use serde::Deserialize;
use toml::Spanned;

use super::error::ExerciseError;
use super::sandbox::{excerpt, over_a_limit, Refusals, ONLY};
use super::{
    Exercise, OpKind, Operation, Statement, TxMode, MAX_FILE_BYTES, MAX_STATEMENTS,
    MAX_STATEMENT_BYTES, MAX_TEXT_CHARS, PARAMETERS,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Spanned<String>,
    title: Spanned<String>,
    task: Spanned<String>,
    claim: Spanned<RawOp>,
    finalize: Spanned<RawOp>,
    heartbeat: Option<Spanned<RawOp>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    transaction: Spanned<String>,
    statements: Spanned<Vec<Spanned<String>>>,
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> u32 {
    let end = offset.min(text.len());
    let upto = text.get(..end).unwrap_or(text);
    upto.bytes().filter(|&b| b == b'\n').count() as u32 + 1
}

/// The ordinal a message names a statement by: "the claim's statement 2".
pub(super) fn which(kind: OpKind, index: usize) -> String {
    format!("the {}'s statement {}", kind.name(), index + 1)
}

impl Exercise {
    /// Read an exercise from `text`, the contents of `file` (as errors name it): the
    /// format, the bounds, and every statement prepared under the sandbox.
    pub fn parse(text: &str, file: &str) -> Result<Exercise, ExerciseError> {
        if text.len() > MAX_FILE_BYTES {
            return Err(ExerciseError::new(
                file,
                1,
                format!(
                    "the file has {} bytes; an exercise file has at most {MAX_FILE_BYTES}",
                    text.len()
                ),
            ));
        }
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            ExerciseError::new(file, line, e.message().trim().to_string()).caused(e)
        })?;
        let at = |span: std::ops::Range<usize>| line_of(text, span.start);
        let name = raw.name.get_ref();
        if name.is_empty()
            || name.len() > 40
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(ExerciseError::new(
                file,
                at(raw.name.span()),
                format!(
                    "the name '{}' is not 1-40 lowercase letters, digits and dashes",
                    crate::text::quoted(name)
                ),
            ));
        }
        for (what, value) in [("title", &raw.title), ("task", &raw.task)] {
            if value.get_ref().chars().count() > MAX_TEXT_CHARS {
                return Err(ExerciseError::new(
                    file,
                    at(value.span()),
                    format!("the {what} is longer than {MAX_TEXT_CHARS} characters"),
                ));
            }
        }
        let op = |kind, raw: Spanned<RawOp>| operation(text, file, kind, raw);
        let exercise = Exercise {
            file: file.to_string(),
            name: raw.name.into_inner(),
            title: raw.title.into_inner(),
            task: raw.task.into_inner(),
            claim: op(OpKind::Claim, raw.claim)?,
            finalize: op(OpKind::Finalize, raw.finalize)?,
            heartbeat: raw
                .heartbeat
                .map(|h| op(OpKind::Heartbeat, h))
                .transpose()?,
        };
        check(&exercise)?;
        Ok(exercise)
    }
}

/// One operation's table: its transaction and its statements, within bounds.
fn operation(
    text: &str,
    file: &str,
    kind: OpKind,
    raw: Spanned<RawOp>,
) -> Result<Operation, ExerciseError> {
    let table_line = line_of(text, raw.span().start);
    let raw = raw.into_inner();
    let tx_line = line_of(text, raw.transaction.span().start);
    let transaction = TxMode::ALL
        .into_iter()
        .find(|m| m.name() == raw.transaction.get_ref())
        .ok_or_else(|| {
            ExerciseError::new(
                file,
                tx_line,
                format!(
                    "the {}'s transaction '{}' is none of: immediate, deferred, none",
                    kind.name(),
                    crate::text::quoted(raw.transaction.get_ref())
                ),
            )
        })?;
    let list = raw.statements.into_inner();
    if list.is_empty() || list.len() > MAX_STATEMENTS {
        return Err(ExerciseError::new(
            file,
            table_line,
            format!(
                "the {} has {} statements; an operation has 1 to {MAX_STATEMENTS}",
                kind.name(),
                list.len()
            ),
        ));
    }
    let mut statements = Vec::with_capacity(list.len());
    for (i, s) in list.into_iter().enumerate() {
        let line = line_of(text, s.span().start);
        let sql = s.into_inner();
        if sql.len() > MAX_STATEMENT_BYTES {
            return Err(ExerciseError::new(
                file,
                line,
                format!(
                    "{} has {} bytes; a statement has at most {MAX_STATEMENT_BYTES}",
                    which(kind, i),
                    sql.len()
                ),
            ));
        }
        statements.push(Statement { sql, line });
    }
    Ok(Operation {
        kind,
        transaction,
        statements,
    })
}

/// What one statement returns and uses, as its preparation tells.
struct Prepared {
    returns_id: bool,
    returns_version: bool,
    returns_rows: bool,
    read_only: bool,
    parameters: Vec<String>,
}

/// Every statement prepared under the sandbox on a scratch database of the lab's schema,
/// then the parameters each uses and the shape of what the operation returns.
fn check(exercise: &Exercise) -> Result<(), ExerciseError> {
    let file = exercise.file.as_str();
    let scratch = || -> rusqlite::Result<rusqlite::Connection> {
        let conn = rusqlite::Connection::open_in_memory()?;
        conn.execute_batch(crate::store::SCHEMA_SQL)?;
        // The limits the statements run under, so that one past them is refused here.
        crate::store::limit_for_students(&conn)?;
        Ok(conn)
    };
    let mut conn = scratch().map_err(|e| {
        ExerciseError::new(file, 1, format!("cannot make the scratch database: {e}")).caused(e)
    })?;
    let refusals = Refusals::default();
    let _ = conn.authorizer(Some(refusals.authorizer()));
    let ops = [Some(&exercise.claim), Some(&exercise.finalize)]
        .into_iter()
        .chain([exercise.heartbeat.as_ref()])
        .flatten();
    for op in ops {
        let mut prepared = Vec::new();
        for (i, s) in op.statements.iter().enumerate() {
            prepared.push(prepare(&conn, &refusals, file, op.kind, i, s)?);
        }
        check_operation(file, op, &prepared)?;
    }
    Ok(())
}

/// One statement prepared under the sandbox, or why it cannot be.
fn prepare(
    conn: &rusqlite::Connection,
    refusals: &Refusals,
    file: &str,
    kind: OpKind,
    index: usize,
    s: &Statement,
) -> Result<Prepared, ExerciseError> {
    refusals.take();
    if let Some(at) = s.sql.find('\0') {
        // SQLite would read the statement only up to it: what follows would be shown, and
        // never run.
        let before = &s.sql[..at];
        return Err(ExerciseError::new(
            file,
            s.line + before.matches('\n').count() as u32,
            format!(
                "{} holds a NUL character (at character {} of the statement), where SQLite \
                 would stop reading it; remove it",
                which(kind, index),
                before.chars().count() + 1
            ),
        ));
    }
    let stmt = conn
        .prepare(&s.sql)
        .map_err(|e| prepare_error(refusals, file, kind, index, s, e))?;
    if is_vacuum(conn, &s.sql) {
        return Err(ExerciseError::new(
            file,
            s.line,
            format!(
                "{} ({}) is a VACUUM, which rewrites the whole database file (or with INTO \
                 writes a copy of it elsewhere); {ONLY}",
                which(kind, index),
                excerpt(&s.sql)
            ),
        ));
    }
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let has = |name: &str| columns.iter().any(|c| c.eq_ignore_ascii_case(name));
    let mut parameters = Vec::new();
    for p in 1..=stmt.parameter_count() {
        parameters.push(stmt.parameter_name(p).unwrap_or("?").to_string());
    }
    Ok(Prepared {
        returns_id: has("Id"),
        returns_version: has("LeaseVersion"),
        returns_rows: stmt.column_count() > 0,
        read_only: stmt.readonly(),
        parameters,
    })
}

/// Whether the statement is a `VACUUM`, as its program says: the authorizer is asked
/// nothing about one until it runs.
fn is_vacuum(conn: &rusqlite::Connection, sql: &str) -> bool {
    let Ok(mut explain) = conn.prepare(&format!("EXPLAIN {sql}")) else {
        return false;
    };
    let mut vacuum = false;
    if let Ok(opcodes) = explain.query_map([], |row| row.get::<_, String>(1)) {
        vacuum = opcodes.flatten().any(|op| op == "Vacuum");
    }
    vacuum
}

/// Why a statement could not be prepared, in the student's words.
pub(super) fn prepare_error(
    refusals: &Refusals,
    file: &str,
    kind: OpKind,
    index: usize,
    s: &Statement,
    e: rusqlite::Error,
) -> ExerciseError {
    let what = format!("{} ({})", which(kind, index), excerpt(&s.sql));
    let (line, message) = match (&e, refusals.take()) {
        (_, Some(why)) => (s.line, format!("{what} {why}")),
        (e, None) if over_a_limit(e).is_some() => (
            s.line,
            format!("{what} {}", over_a_limit(e).unwrap_or_default()),
        ),
        (rusqlite::Error::MultipleStatement, None) => (
            s.line,
            format!("{what} holds more than one statement; write one statement per string"),
        ),
        (rusqlite::Error::Empty, None) => (s.line, format!("{} is empty", which(kind, index))),
        (rusqlite::Error::SqlInputError { msg, offset, .. }, None) => {
            let offset = usize::try_from(*offset).unwrap_or(0).min(s.sql.len());
            let before = s.sql.get(..offset).unwrap_or("");
            let line = s.line + before.matches('\n').count() as u32;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            let near = excerpt(s.sql.get(offset..).unwrap_or(""));
            (
                line,
                format!(
                    "{what}: {} at character {} of the statement (column {column}: '{near}')",
                    crate::text::quoted(msg),
                    before.chars().count() + 1
                ),
            )
        }
        (other, None) => (
            s.line,
            format!(
                "{what} cannot be prepared: {}",
                crate::text::quoted(&other.to_string())
            ),
        ),
    };
    ExerciseError::new(file, line, message).caused(e)
}

/// The parameters each statement uses, and what the operation returns.
fn check_operation(file: &str, op: &Operation, prepared: &[Prepared]) -> Result<(), ExerciseError> {
    let kind = op.kind;
    let mut has_id = kind != OpKind::Claim;
    let mut has_version = kind != OpKind::Claim;
    for (i, (p, s)) in prepared.iter().zip(&op.statements).enumerate() {
        for name in &p.parameters {
            let known = PARAMETERS.iter().any(|(n, _)| n == name);
            let message = if name == "?" {
                format!(
                    "{} uses a ? parameter; name it (:worker, :now, :lease_until, :id, :version)",
                    which(kind, i)
                )
            } else if !known {
                format!(
                    "unknown parameter {} in {}",
                    crate::text::quoted(name),
                    which(kind, i)
                )
            } else if (name == ":id" && !has_id) || (name == ":version" && !has_version) {
                format!(
                    "{} uses {name} before a statement of the claim returned it \
                     (a claim's :id and :version are the Id and LeaseVersion a statement before returned)",
                    which(kind, i)
                )
            } else {
                continue;
            };
            return Err(ExerciseError::new(file, s.line, message));
        }
        has_id |= p.returns_id;
        has_version |= p.returns_version;
    }
    let last = op.statements.len() - 1;
    let line = op.statements[last].line;
    match kind {
        OpKind::Claim => {
            let returning = prepared.iter().rposition(|p| p.returns_rows);
            let Some(at) = returning else {
                return Err(ExerciseError::new(file, line, "the claim returns no row: its last statement that returns rows (a SELECT, or RETURNING) gives the claimed message's Id and LeaseVersion"));
            };
            if !(prepared[at].returns_id && prepared[at].returns_version) {
                return Err(ExerciseError::new(
                    file,
                    op.statements[at].line,
                    format!("{} is the claim's last that returns rows, and it does not return both Id and LeaseVersion", which(kind, at)),
                ));
            }
        }
        OpKind::Finalize | OpKind::Heartbeat if prepared[last].read_only => {
            return Err(ExerciseError::new(
                file,
                line,
                format!(
                    "{} only reads; the {}'s last statement is its guarded UPDATE, which changes one row when it holds",
                    which(kind, last),
                    kind.name()
                ),
            ));
        }
        _ => {}
    }
    Ok(())
}
