//! `leaselab class`: a teacher's commands on the class's PostgreSQL server (rounds, hold and
//! go, the scoreboard, the join command). PostgreSQL only: a class shares one server.

use std::process::ExitCode;

use leaselab::engine::pg::{self, PgError, PgStore, Score, ScoreError};
use leaselab::engine::provider::Provider;
use leaselab::processes::join;
use unicode_width::UnicodeWidthStr;

use crate::cli::{runtime_error, usage_error, ClassCommand, Out};

/// Why a class command could not do its work, in the one line it prints.
#[derive(Debug, thiserror::Error)]
enum ClassError {
    #[error(
        "`class` works on a PostgreSQL server (--db postgres://USER@HOST:PORT/DB), not {0}: \
         a class shares one server"
    )]
    NotPostgres(String),
    #[error(transparent)]
    Pg(#[from] PgError),
    #[error(transparent)]
    Score(#[from] ScoreError),
    #[error("cannot write the scoreboard as JSON")]
    Json(#[source] serde_json::Error),
}

impl ClassError {
    /// Given what cannot be used (exit 2), rather than failing while at work (exit 3).
    fn is_bad_input(&self) -> bool {
        match self {
            ClassError::NotPostgres(_) => true,
            ClassError::Pg(e) | ClassError::Score(ScoreError::Pg(e)) => e.is_bad_input(),
            ClassError::Score(ScoreError::NoRound { .. }) => true,
            ClassError::Json(_) => false,
        }
    }
}

pub(crate) fn class(c: &ClassCommand) -> ExitCode {
    let mut out = Out::new();
    let done = match c {
        ClassCommand::NewRound { db, messages, hold } => new_round(db, *messages as u64, *hold),
        ClassCommand::Hold { db } => hold(db, true),
        ClassCommand::Go { db } => hold(db, false),
        ClassCommand::Scoreboard {
            db,
            round,
            json,
            systems: false,
        } => scoreboard(db, *round, *json),
        ClassCommand::Scoreboard { db, .. } => systems(db),
        ClassCommand::Join { db } => join(db),
    };
    match done {
        Ok(text) => {
            out.print(&text);
            out.finish(ExitCode::SUCCESS)
        }
        Err(e) if e.is_bad_input() => usage_error(e),
        Err(e) => runtime_error(e),
    }
}

/// The class's database, which must be a PostgreSQL URL.
fn url(db: &str) -> Result<&str, ClassError> {
    if pg::is_url(db) {
        Ok(db)
    } else {
        Err(ClassError::NotPostgres(leaselab::engine::text::quoted(db)))
    }
}

fn new_round(db: &str, count: u64, held: bool) -> Result<String, ClassError> {
    let config = pg::parse_url(url(db)?)?;
    let (mut store, _) = PgStore::create(&config)?;
    let (round, first) = store.new_round(&Provider::new(), count, held)?;
    let last = first + count - 1;
    let keys = format!(
        "{} to {}",
        leaselab::engine::outbox::payment_key(first),
        leaselab::engine::outbox::payment_key(last)
    );
    Ok(if held {
        format!("round {round}: {count} payments ({keys}), held: `leaselab class go` starts it\n")
    } else {
        format!("round {round}: {count} payments ({keys})\n")
    })
}

fn hold(db: &str, held: bool) -> Result<String, ClassError> {
    let mut store = PgStore::open_existing(url(db)?)?;
    let before = store.set_held(held)?;
    Ok(match (held, before) {
        (true, false) => "held: every worker finishes what it holds and claims nothing until `leaselab class go`\n",
        (true, true) => "already held: nobody claims until `leaselab class go`\n",
        (false, true) => "go: every worker claims again\n",
        (false, false) => "not held: every worker claims already\n",
    }
    .to_string())
}

fn scoreboard(db: &str, round: Option<i64>, json: bool) -> Result<String, ClassError> {
    let mut store = PgStore::open_existing(url(db)?)?;
    let scores = store.scoreboard(round)?;
    if json {
        let workers = store.who_runs_what()?;
        let doc = serde_json::json!({ "round": round, "students": scores, "workers": workers });
        return serde_json::to_string_pretty(&doc)
            .map(|s| s + "\n")
            .map_err(ClassError::Json);
    }
    Ok(table(round, &scores))
}

/// The widest a name is shown in the table, in terminal cells.
const NAME_CELLS: usize = 24;

/// The scoreboard as a table, names measured by display width and cut with an ellipsis.
fn table(round: Option<i64>, scores: &[Score]) -> String {
    let title = match round {
        Some(r) => format!("round {r}"),
        None => "every round".to_string(),
    };
    let mut text = format!(
        "scoreboard, {title} (by done, then fewest rejected):\n{:<w$} {:>5} {:>8} {:>5} {:>8} {:>10} {:>9}\n",
        "student",
        "done",
        "rejected",
        "lost",
        "reclaims",
        "duplicates",
        "unguarded",
        w = NAME_CELLS
    );
    if scores.is_empty() {
        text.push_str("(nobody has claimed yet)\n");
    }
    for s in scores {
        let name = fit(&leaselab::engine::text::printable(&s.name), NAME_CELLS);
        let pad = NAME_CELLS.saturating_sub(name.width());
        text.push_str(&format!(
            "{name}{:pad$} {:>5} {:>8} {:>5} {:>8} {:>10} {:>9}\n",
            "", s.done, s.rejected, s.lost, s.reclaims, s.duplicates, s.unguarded
        ));
    }
    text
}

/// Who runs what, one line per worker: its leaselab version, commit and system, each cut to
/// its column (values read back are checked, see `engine::software`).
fn systems(db: &str) -> Result<String, ClassError> {
    let mut store = PgStore::open_existing(url(db)?)?;
    let workers = store.who_runs_what()?;
    let mut text = format!(
        "who runs what (as each worker last joined):\n{:<w$} {:<10} {:<17} system\n",
        "student",
        "leaselab",
        "commit",
        w = NAME_CELLS
    );
    if workers.is_empty() {
        text.push_str("(nobody has joined yet)\n");
    }
    for r in &workers {
        let name = fit(&leaselab::engine::text::printable(&r.name), NAME_CELLS);
        let pad = NAME_CELLS.saturating_sub(name.width());
        text.push_str(&format!(
            "{name}{:pad$} {:<10} {:<17} {}\n",
            "",
            fit(&r.software.version_shown(), 10),
            fit(&r.software.commit_shown(), 17),
            fit(&r.system, 24),
        ));
    }
    Ok(text)
}

/// `name` cut to `cells` terminal cells, with an ellipsis when cut.
fn fit(name: &str, cells: usize) -> String {
    if name.width() <= cells {
        return name.to_string();
    }
    let mut out = String::new();
    for c in name.chars() {
        if (out.clone() + &c.to_string()).width() + 1 > cells {
            break;
        }
        out.push(c);
    }
    out + "…"
}

fn join(db: &str) -> Result<String, ClassError> {
    let config = pg::parse_url(url(db)?)?;
    // A database that is not leaselab's (or not made yet) is said now, not by every laptop.
    drop(PgStore::open_existing(db)?);
    let (url, note) = join::student_url(&config);
    let mut text = format!("{}\n", join::command(&url));
    if let Some(note) = note {
        text.push_str(&format!("note: {note}\n"));
    }
    text.push_str(
        "students give the password in PGPASSWORD (export PGPASSWORD=...), never in the URL\n",
    );
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_or_wide_name_is_cut_by_display_width() {
        assert_eq!(fit("李雷李雷李雷", 7), "李雷李…");
        assert_eq!(fit("sam", 7), "sam");
    }
}
