//! What a student's statement may do, asked by SQLite's authorizer while it is prepared
//! and run: read and write `OutboxMessages` and `Payments` of the main database, nothing
//! else (no DDL, no ATTACH, no PRAGMA, no other table, no extension, no transaction of its
//! own). And how long it may run: a statement still running after
//! [`STATEMENT_TIME_LIMIT`] is interrupted by the progress handler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::InterruptHandle;

use super::outside;
use super::watchdog::{self, Reason, Watched};

/// How long one statement may run before it is interrupted.
pub const STATEMENT_TIME_LIMIT: Duration = Duration::from_secs(1);
/// Overrides [`STATEMENT_TIME_LIMIT`] in milliseconds, read once per process (tests of a
/// stop that must not wait for the limit use a long one).
pub const STATEMENT_LIMIT_ENV: &str = "LEASELAB_STATEMENT_LIMIT_MS";

/// How long one statement may run in this process.
pub fn statement_time_limit() -> Duration {
    static LIMIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(STATEMENT_LIMIT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(STATEMENT_TIME_LIMIT, Duration::from_millis)
    })
}

/// The tables a student's statement may read and write.
pub const TABLES: [&str; 2] = ["OutboxMessages", "Payments"];

/// Said after every refusal.
pub const ONLY: &str = "an exercise reads and writes OutboxMessages and Payments only";

/// Why `action` is refused, or None when a student's statement may do it: the whole
/// reason, with [`ONLY`] after what reaches outside the two tables.
pub fn refusal(ctx: &AuthContext<'_>) -> Option<String> {
    let main = matches!(ctx.database_name, None | Some("main"));
    let ours = |name: &str| main && TABLES.iter().any(|t| t.eq_ignore_ascii_case(name));
    let table = |verb: &str, name: &str| {
        (!ours(name)).then(|| format!("may not {verb} {}; {ONLY}", crate::text::quoted(name)))
    };
    match ctx.action {
        AuthAction::Select | AuthAction::Recursive => None,
        // A `CREATE` or `DROP` writes the schema table first, then asks for its own
        // action, which is refused: let the write be asked about so the refusal names the
        // action. SQLite itself refuses a statement that writes the schema table directly.
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
            if is_schema_table(table_name) =>
        {
            None
        }
        AuthAction::Read { table_name, .. } => table("read", table_name),
        AuthAction::Insert { table_name } if ours(table_name) => Some(outside::insert(table_name)),
        AuthAction::Insert { table_name } => table("insert into", table_name),
        AuthAction::Update {
            table_name,
            column_name,
        } if ours(table_name) => outside::update(table_name, column_name),
        AuthAction::Update { table_name, .. } => table("update", table_name),
        AuthAction::Delete { table_name } => table("delete from", table_name),
        AuthAction::Function { function_name } => outside::function(function_name, ONLY),
        other => schema_refusal(&other).map(|why| format!("{why}; {ONLY}")),
    }
}

/// Why an action on the schema, a transaction, a pragma or an attachment is refused.
fn schema_refusal(action: &AuthAction<'_>) -> Option<&'static str> {
    Some(match action {
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            "may not begin, commit or roll back a transaction (the operation's `transaction` \
             says how it runs)"
        }
        AuthAction::Pragma { .. } => "may not run a PRAGMA",
        AuthAction::Attach { .. } => "may not attach a database (nor VACUUM)",
        AuthAction::Detach { .. } => "may not detach a database",
        AuthAction::DropTable { .. } | AuthAction::DropTempTable { .. } => "may not drop a table",
        AuthAction::CreateTable { .. } | AuthAction::CreateTempTable { .. } => {
            "may not create a table"
        }
        AuthAction::AlterTable { .. } => "may not alter a table",
        _ => "may not change the schema",
    })
}

/// SQLite's table of the schema, under each of its names.
fn is_schema_table(name: &str) -> bool {
    [
        "sqlite_master",
        "sqlite_schema",
        "sqlite_temp_master",
        "sqlite_temp_schema",
    ]
    .iter()
    .any(|t| t.eq_ignore_ascii_case(name))
}

/// The first refusal the authorizer met since it was last taken (the first of the
/// statement's own action, when it has one, over a table it touches on the way).
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<Option<(bool, String)>>>);

impl Refusals {
    /// The authorizer to install: it refuses what [`refusal`] refuses and keeps the first
    /// reason.
    pub fn authorizer(
        &self,
    ) -> impl FnMut(AuthContext<'_>) -> Authorization + Send + 'static + use<> {
        let first = self.0.clone();
        move |ctx| match refusal(&ctx) {
            None => Authorization::Allow,
            Some(why) => {
                // A `DROP TABLE` first deletes from sqlite_master: the statement's own
                // action, which comes after, says better what it does.
                let says_more = !matches!(
                    ctx.action,
                    AuthAction::Read { .. }
                        | AuthAction::Insert { .. }
                        | AuthAction::Update { .. }
                        | AuthAction::Delete { .. }
                );
                let mut first = first.lock().unwrap_or_else(|p| p.into_inner());
                match &mut *first {
                    Some((said_more, kept)) if says_more && !*said_more => {
                        *kept = why;
                        *said_more = true;
                    }
                    Some(_) => {}
                    None => *first = Some((says_more, why)),
                }
                Authorization::Deny
            }
        }
    }

    /// The first reason kept, and forget it.
    pub fn take(&self) -> Option<String> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        kept.map(|(_, why)| why)
    }
}

/// The deadline of the statement running now: set before each statement, asked by the
/// progress handler and kept on wall time by the watchdog, which also interrupts it when
/// this process is asked to stop or its engine quits (`quit`, the engine's flag).
#[derive(Debug, Clone, Default)]
pub struct Deadline {
    until: Arc<Mutex<Option<Instant>>>,
    reason: Reason,
    quit: Arc<AtomicBool>,
}

/// Why a statement was stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It ran longer than [`STATEMENT_TIME_LIMIT`].
    Time,
    /// This process was asked to stop, or its engine quit.
    Stop,
}

impl Deadline {
    /// The deadlines of an engine's connection: `quit` is the engine's flag.
    pub fn new(quit: Arc<AtomicBool>) -> Deadline {
        Deadline {
            quit,
            ..Deadline::default()
        }
    }

    /// The progress handler to install: true (interrupt) once the deadline has passed or a
    /// stop was asked.
    pub fn handler(&self) -> impl FnMut() -> bool + Send + 'static + use<> {
        let (until, reason, quit) = (self.until.clone(), self.reason.clone(), self.quit.clone());
        move || {
            let why = if watchdog::stopped(&quit) {
                watchdog::STOP
            } else if until
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some_and(|u| Instant::now() >= u)
            {
                watchdog::TIME
            } else {
                return reason.load(Ordering::SeqCst) != watchdog::NOT_INTERRUPTED;
            };
            let _ = reason.compare_exchange(
                watchdog::NOT_INTERRUPTED,
                why,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            true
        }
    }

    /// The next statement, of the connection `handle` interrupts, starts now: it may run
    /// [`STATEMENT_TIME_LIMIT`], watched until the guard is dropped. None when a stop was
    /// asked: it must not run.
    pub fn start(&self, handle: InterruptHandle) -> Option<Watched> {
        let until = Instant::now() + statement_time_limit();
        *self.until.lock().unwrap_or_else(|p| p.into_inner()) = Some(until);
        self.reason
            .store(watchdog::NOT_INTERRUPTED, Ordering::SeqCst);
        watchdog::watch(handle, until, &self.quit, &self.reason)
    }

    /// Why the statement that ran last was interrupted, if it was.
    pub fn stopped(&self) -> Option<Stopped> {
        match self.reason.load(Ordering::SeqCst) {
            watchdog::TIME => Some(Stopped::Time),
            watchdog::STOP => Some(Stopped::Stop),
            _ => None,
        }
    }
}

/// A statement as an error quotes it: its start, printable.
pub fn excerpt(sql: &str) -> String {
    let one_line = crate::text::printable(sql.trim());
    let words: String = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::bounded(&words, 24).into_owned()
}

/// What stopped a statement, said after `what` names it.
pub fn stopped_said(what: &str, stopped: Stopped, sql: &str) -> String {
    match stopped {
        Stopped::Time => {
            // The one cause worth guessing: a recursive query that never ends.
            let hint = if sql.to_ascii_uppercase().contains("RECURSIVE") {
                " (a WITH RECURSIVE without an end?)"
            } else {
                ""
            };
            let limit = statement_time_limit();
            let limit = if limit.subsec_millis() == 0 {
                format!("{} s", limit.as_secs())
            } else {
                format!("{} ms", limit.as_millis())
            };
            format!("{what} ran longer than {limit} and was stopped{hint}")
        }
        Stopped::Stop => format!("{what} was stopped: leaselab was asked to stop"),
    }
}

/// The sandbox's limit `e` says a statement passed, in the student's words; None for any
/// other error.
pub fn over_a_limit(e: &rusqlite::Error) -> Option<String> {
    use crate::store::{STUDENT_COLUMN_LIMIT, STUDENT_LENGTH_LIMIT, STUDENT_PATTERN_LIMIT};
    let msg = match e {
        rusqlite::Error::SqliteFailure(_, Some(m)) => m.as_str(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.as_str(),
        _ => "",
    };
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::TooBig) || msg.contains("too big") {
        Some(format!(
            "made a string, blob or row of more than {STUDENT_LENGTH_LIMIT} bytes, the most a \
             statement of an exercise may make"
        ))
    } else if msg.starts_with("too many columns") {
        Some(format!(
            "has more than {STUDENT_COLUMN_LIMIT} columns (SQLite: {}); a statement of an \
             exercise has at most {STUDENT_COLUMN_LIMIT}",
            crate::text::quoted(msg)
        ))
    } else if msg.contains("LIKE or GLOB pattern too complex") {
        Some(format!(
            "has a LIKE or GLOB pattern of more than {STUDENT_PATTERN_LIMIT} bytes, the longest \
             a statement of an exercise may use"
        ))
    } else {
        None
    }
}
