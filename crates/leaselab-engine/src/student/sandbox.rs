//! What a student's statement may do, asked by SQLite's authorizer while it is prepared
//! and run: read and write `OutboxMessages` and `Payments` of the main database, nothing
//! else (no DDL, no ATTACH, no PRAGMA, no other table, no extension, no transaction of its
//! own). And how long it may run: a statement still running after
//! [`STATEMENT_TIME_LIMIT`] is interrupted by the progress handler.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

/// How long one statement may run before it is interrupted.
pub const STATEMENT_TIME_LIMIT: Duration = Duration::from_secs(1);

/// The tables a student's statement may read and write.
pub const TABLES: [&str; 2] = ["OutboxMessages", "Payments"];

/// Said after every refusal.
pub const ONLY: &str = "an exercise reads and writes OutboxMessages and Payments only";

/// SQL functions refused although SQLite has them: they reach outside the database.
const FUNCTIONS_REFUSED: [&str; 5] = [
    "load_extension",
    "fts3_tokenizer",
    "readfile",
    "writefile",
    "edit",
];

/// Why `action` is refused, or None when a student's statement may do it.
pub fn refusal(ctx: &AuthContext<'_>) -> Option<String> {
    let main = matches!(ctx.database_name, None | Some("main"));
    let table = |verb: &str, name: &str| {
        let ours = TABLES.iter().any(|t| t.eq_ignore_ascii_case(name));
        (!(ours && main)).then(|| format!("may not {verb} {}", crate::text::quoted(name)))
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
        AuthAction::Insert { table_name } => table("insert into", table_name),
        AuthAction::Update { table_name, .. } => table("update", table_name),
        AuthAction::Delete { table_name } => table("delete from", table_name),
        AuthAction::Function { function_name } => {
            let refused = FUNCTIONS_REFUSED
                .iter()
                .any(|f| f.eq_ignore_ascii_case(function_name));
            refused.then(|| {
                format!(
                    "may not call {}",
                    crate::text::quoted(function_name).to_lowercase()
                )
            })
        }
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => Some(
            "may not begin, commit or roll back a transaction (the operation's `transaction` \
             says how it runs)"
                .into(),
        ),
        AuthAction::Pragma { .. } => Some("may not run a PRAGMA".into()),
        AuthAction::Attach { .. } => Some("may not attach a database (nor VACUUM)".into()),
        AuthAction::Detach { .. } => Some("may not detach a database".into()),
        AuthAction::DropTable { .. } | AuthAction::DropTempTable { .. } => {
            Some("may not drop a table".into())
        }
        AuthAction::CreateTable { .. } | AuthAction::CreateTempTable { .. } => {
            Some("may not create a table".into())
        }
        AuthAction::AlterTable { .. } => Some("may not alter a table".into()),
        _ => Some("may not change the schema".into()),
    }
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
/// progress handler.
#[derive(Debug, Clone, Default)]
pub struct Deadline(Arc<Mutex<DeadlineState>>);

#[derive(Debug, Default)]
struct DeadlineState {
    until: Option<Instant>,
    passed: bool,
}

impl Deadline {
    /// The progress handler to install: true (interrupt) once the deadline has passed.
    pub fn handler(&self) -> impl FnMut() -> bool + Send + 'static + use<> {
        let state = self.0.clone();
        move || {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            let passed = s.until.is_some_and(|u| Instant::now() >= u);
            s.passed |= passed;
            passed
        }
    }

    /// The next statement starts now: it may run [`STATEMENT_TIME_LIMIT`].
    pub fn start(&self) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *s = DeadlineState {
            until: Some(Instant::now() + STATEMENT_TIME_LIMIT),
            passed: false,
        };
    }

    /// Whether the statement that ran last was interrupted for its time.
    pub fn passed(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).passed
    }
}

/// A statement as an error quotes it: its start, printable.
pub fn excerpt(sql: &str) -> String {
    let one_line = crate::text::printable(sql.trim());
    let words: String = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::bounded(&words, 24).into_owned()
}
