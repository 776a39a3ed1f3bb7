//! What a worker's last write was, in SQL: the statements its store ran for an event, in
//! order, each with its parameters bound and what it did. The text is the store's own
//! constant (`store::sql`, `pg::sql`), the very `&'static str` it executes, never a copy. A
//! value the event does not carry is shown as [`NOT_RECORDED`], never guessed.

use std::borrow::Cow;

use crate::clock::hms;
use crate::events::{ClaimWay, Event, EventKind, StudentStatement};
use crate::pg::sql as pg;
use crate::store::sql as lite;
use crate::text;

/// Which database's statements a store runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    #[default]
    Sqlite,
    Postgres,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
        }
    }
}

/// A parameter's value the event does not carry.
pub const NOT_RECORDED: &str = "not recorded";

/// The longest text value shown bound to a parameter.
const MAX_VALUE: usize = 64;

/// One statement the store ran: its text, its parameters by name as bound, what it did.
/// The lab's own are its constants, borrowed; a student's are the exercise file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownStatement {
    pub sql: Cow<'static, str>,
    pub params: Vec<(Cow<'static, str>, String)>,
    pub effect: String,
}

/// The statements one event stands for, in the order the store ran them, and a note when
/// something about them is not known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shown {
    pub statements: Vec<ShownStatement>,
    pub note: Option<&'static str>,
}

/// What is known beside the event itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known {
    pub dialect: Dialect,
    /// The finalize checks the owner's name only (a lesson's weaker guard); None when the
    /// settings were not recorded.
    pub owner_only: Option<bool>,
    /// The lease a claim or heartbeat asks for, when the settings say.
    pub lease_ms: Option<i64>,
    /// Messages a batch claim takes, when the settings say.
    pub batch: Option<i64>,
    /// The lease version the message's row was at, as its newest claim tells it.
    pub row_version: Option<i64>,
    /// How a claim read from a row was made, when the workers can make it one way only
    /// (a worker process claims the next message, or a batch); None: not known.
    pub claims: Option<ClaimWay>,
    /// The workers ran a student's exercise, as their settings recorded: an event read
    /// back from a row stands for the exercise's statements, which no row keeps.
    pub student: bool,
}

fn int(v: i64) -> String {
    v.to_string()
}

fn opt(v: Option<i64>) -> String {
    v.map_or_else(|| NOT_RECORDED.to_string(), int)
}

/// A text value as SQL writes it: quoted, a quote doubled, printable and bounded.
pub fn sql_text(s: &str) -> String {
    let clean = text::printable(s);
    format!("'{}'", text::bounded(&clean, MAX_VALUE).replace('\'', "''"))
}

fn unknown() -> String {
    NOT_RECORDED.to_string()
}

fn stmt(
    sql: &'static str,
    params: Vec<(&'static str, String)>,
    effect: impl Into<String>,
) -> ShownStatement {
    ShownStatement {
        sql: Cow::Borrowed(sql),
        params: params
            .into_iter()
            .map(|(name, value)| (Cow::Borrowed(name), value))
            .collect(),
        effect: effect.into(),
    }
}

/// The statements `ev` stands for, or None when it is not a worker's statement (a provider
/// call, a crash, the engine's own doings): the pane then keeps the worker's last one.
pub fn shown(ev: &Event, known: &Known) -> Option<Shown> {
    match &ev.sql {
        Some(ran) if ev.kind.is_statement() => Some(student(ran)),
        None if known.student && ev.kind.is_statement() => Some(Shown {
            statements: Vec::new(),
            note: Some(
                "a student's exercise ran here: its statements are the exercise's, which the \
                 database does not record",
            ),
        }),
        _ => lab_shown(ev, known),
    }
}

/// A student's statements as they ran, with their file lines: the text is the file's, the
/// parameters as the lab bound them, the effect as the statement had it.
fn student(ran: &[StudentStatement]) -> Shown {
    let statements = ran
        .iter()
        .map(|st| ShownStatement {
            sql: Cow::Owned(st.sql.clone()),
            params: st
                .parameters
                .iter()
                .map(|(name, value)| (Cow::Owned(name.clone()), value.clone()))
                .collect(),
            effect: format!("line {}: {}", st.line, st.effect),
        })
        .collect();
    Shown {
        statements,
        note: None,
    }
}

/// The lab's own statements for `ev`.
fn lab_shown(ev: &Event, known: &Known) -> Option<Shown> {
    let worker = sql_text(&ev.actor);
    let at = ev.at_ms;
    let pg = known.dialect == Dialect::Postgres;
    let shown = match &ev.kind {
        EventKind::Claimed {
            id,
            key,
            until_ms,
            version,
            way,
            ..
        } => {
            let way = claim_way(*way, known);
            let lease = Lease {
                worker,
                at,
                until: *until_ms,
                id: *id,
            };
            let taken = format!(
                "1 row changed → {key} leased until {} (lease v{version})",
                hms(*until_ms)
            );
            let found = format!("1 row: Id {id} {key} at v{}", version - 1);
            claimed(way, pg, &lease, found, taken, known)
        }
        EventKind::ClaimEmpty => {
            let way = claim_way(ClaimWay::Next, known);
            let none = "no row: no other worker holds a live lease".to_string();
            nothing_claimable(way, pg, &worker, at, none, known)
        }
        EventKind::ClaimBlocked {
            id,
            key,
            owner,
            left_ms,
            way,
        } => {
            let held = format!(
                "1 row: Id {id} {key} held by {} for {left_ms} ms more",
                text::printable(owner)
            );
            match claim_way(*way, known) {
                Some(ClaimWay::Id) => {
                    let holder = if pg { pg::HOLDER_SQL } else { lite::HOLDER_SQL };
                    let name = if pg { "$1" } else { "?1" };
                    let effect = format!("{held}: not claimable, no update run");
                    Shown {
                        statements: vec![stmt(holder, vec![(name, int(*id))], effect)],
                        note: None,
                    }
                }
                way => nothing_claimable(way, pg, &worker, at, held, known),
            }
        }
        _ => return finalize_or_upkeep(ev, &worker, known),
    };
    Some(shown)
}

/// The way a claim was made, or the only way these workers claim.
fn claim_way(way: ClaimWay, known: &Known) -> Option<ClaimWay> {
    match way {
        ClaimWay::Unrecorded => known.claims,
        way => Some(way),
    }
}

/// A lease a claim took.
struct Lease {
    worker: String,
    at: i64,
    until: i64,
    id: i64,
}

/// A claim that took a lease, as each way of claiming ran it.
fn claimed(
    way: Option<ClaimWay>,
    pg: bool,
    l: &Lease,
    found: String,
    taken: String,
    known: &Known,
) -> Shown {
    let take = |sql| {
        let params = if pg {
            vec![
                ("$1", l.worker.clone()),
                ("$2", int(l.until)),
                ("$3", int(l.id)),
                ("$4", int(l.at)),
            ]
        } else {
            vec![
                (":worker", l.worker.clone()),
                (":until", int(l.until)),
                (":id", int(l.id)),
                (":now", int(l.at)),
            ]
        };
        stmt(sql, params, taken.clone())
    };
    let statements = match (way, pg) {
        (Some(ClaimWay::Id), false) => vec![
            stmt(lite::HOLDER_SQL, vec![("?1", int(l.id))], found),
            take(lite::TAKE_LEASE_SQL),
        ],
        (Some(ClaimWay::Id), true) => vec![
            stmt(pg::HOLDER_SQL, vec![("$1", int(l.id))], found),
            take(pg::TAKE_LEASE_SQL),
        ],
        (Some(ClaimWay::Next), false) => vec![
            stmt(lite::CANDIDATE_SQL, vec![(":now", int(l.at))], found),
            take(lite::TAKE_LEASE_SQL),
        ],
        (Some(ClaimWay::Batch), false) => vec![
            stmt(lite::BATCH_CANDIDATES_SQL, batch_params(l.at, known), found),
            take(lite::TAKE_LEASE_SQL),
        ],
        // PostgreSQL claims a batch one message a statement.
        (Some(ClaimWay::Next | ClaimWay::Batch), true) => vec![stmt(
            pg::CLAIM_NEXT_SQL,
            vec![
                ("$1", l.worker.clone()),
                ("$2", int(l.at)),
                ("$3", int(l.until)),
            ],
            taken.clone(),
        )],
        (None | Some(ClaimWay::Unrecorded), false) => {
            return Shown {
                statements: vec![take(lite::TAKE_LEASE_SQL)],
                note: Some("which read chose the row (the next claimable, or one asked by id) is not recorded"),
            }
        }
        (None | Some(ClaimWay::Unrecorded), true) => {
            return Shown {
                statements: Vec::new(),
                note: Some("a claim, but whether of the next message (CLAIM_NEXT_SQL) or of one asked by id (HOLDER_SQL, TAKE_LEASE_SQL) is not recorded"),
            }
        }
    };
    Shown {
        statements,
        note: None,
    }
}

fn batch_params(at: i64, known: &Known) -> Vec<(&'static str, String)> {
    vec![(":now", int(at)), (":k", opt(known.batch))]
}

/// A claim of the next message that found nothing claimable, then the read of whose live
/// lease is in the way (`blocked`: what that read found).
fn nothing_claimable(
    way: Option<ClaimWay>,
    pg: bool,
    worker: &str,
    at: i64,
    blocked: String,
    known: &Known,
) -> Shown {
    let soonest = if pg {
        stmt(
            pg::SOONEST_LIVE_LEASE_SQL,
            vec![("$1", worker.to_string()), ("$2", int(at))],
            blocked,
        )
    } else {
        stmt(
            lite::SOONEST_LIVE_LEASE_SQL,
            vec![(":worker", worker.to_string()), (":now", int(at))],
            blocked,
        )
    };
    let first = match (way, pg) {
        (Some(ClaimWay::Batch), false) => stmt(
            lite::BATCH_CANDIDATES_SQL,
            batch_params(at, known),
            "no row claimable",
        ),
        (_, false) => stmt(
            lite::CANDIDATE_SQL,
            vec![(":now", int(at))],
            "no row claimable",
        ),
        (_, true) => stmt(
            pg::CLAIM_NEXT_SQL,
            vec![
                ("$1", worker.to_string()),
                ("$2", int(at)),
                ("$3", known.lease_ms.map_or_else(unknown, |l| int(at + l))),
            ],
            "0 rows changed: no row claimable",
        ),
    };
    Shown {
        statements: vec![first, soonest],
        note: None,
    }
}

/// The lease an event is about.
struct Held<'a> {
    worker: &'a str,
    at: i64,
    id: i64,
    version: i64,
}

/// What a failed attempt wrote.
struct Outcome<'a> {
    status: &'static str,
    available: Option<i64>,
    error: &'a str,
    attempts: i64,
    effect: String,
}

/// Finalizes, heartbeats, failed attempts and leasing off.
fn finalize_or_upkeep(ev: &Event, worker: &str, known: &Known) -> Option<Shown> {
    let lease = |id: &i64, version: &i64| Held {
        worker,
        at: ev.at_ms,
        id: *id,
        version: *version,
    };
    let statements = match &ev.kind {
        EventKind::Finalized {
            id,
            version,
            key,
            status,
        } => {
            return Some(finalize(
                &lease(id, version),
                key,
                Some(status.as_str()),
                known,
            ))
        }
        EventKind::FinalizeRejected { id, key, version } => {
            return Some(finalize(&lease(id, version), key, None, known))
        }
        EventKind::Heartbeat {
            id,
            version,
            until_ms,
            ..
        } => heartbeat(&lease(id, version), Some(*until_ms), known),
        EventKind::LeaseLost { id, key, version } => {
            let mut beat = heartbeat(&lease(id, version), None, known);
            beat[0].effect = format!("0 rows changed → LEASE LOST: the worker drops {key}");
            beat
        }
        EventKind::Marked { id, key, status } => marked(ev.at_ms, *id, key, status.as_str(), known),
        EventKind::Loaded { count } => loaded(ev.at_ms, *count, known),
        _ => attempt(ev, &lease, known)?,
    };
    Some(Shown {
        statements,
        note: None,
    })
}

/// A failed attempt: written back (retried or dead-lettered), or found lost.
fn attempt<'a>(
    ev: &Event,
    lease: &dyn Fn(&i64, &i64) -> Held<'a>,
    known: &Known,
) -> Option<Vec<ShownStatement>> {
    let statements = match &ev.kind {
        EventKind::AttemptFailed {
            id,
            version,
            attempt,
            available_at_ms,
            error,
            ..
        } => {
            let outcome = Outcome {
                status: "Pending",
                available: Some(*available_at_ms),
                error,
                attempts: *attempt,
                effect: format!(
                    "1 row changed → Pending, claimable again from {}",
                    hms(*available_at_ms)
                ),
            };
            failed(&lease(id, version), &outcome, known)
        }
        EventKind::DeadLettered {
            id,
            version,
            attempts,
            error,
            ..
        } => {
            let outcome = Outcome {
                status: "DeadLettered",
                available: None,
                error,
                attempts: *attempts,
                effect: format!("1 row changed → DeadLettered after {attempts} attempts"),
            };
            failed(&lease(id, version), &outcome, known)
        }
        EventKind::AttemptLost { id, version, .. } => {
            let mut read = failed(&lease(id, version), &Outcome::lost(), known);
            read.truncate(1);
            read[0].effect =
                "no row: the lease is lost, the failure is not written (rolled back)".into();
            read
        }
        _ => return None,
    };
    Some(statements)
}

impl Outcome<'_> {
    fn lost() -> Outcome<'static> {
        Outcome {
            status: "",
            available: None,
            error: "",
            attempts: 0,
            effect: String::new(),
        }
    }
}

/// The guarded finalize, then (when it changed the row) the answer's write; `answer` is
/// the provider's status, None for a rejected finalize (its event does not carry it).
fn finalize(l: &Held<'_>, key: &str, answer: Option<&str>, known: &Known) -> Shown {
    let Some(owner_only) = known.owner_only else {
        return Shown {
            statements: Vec::new(),
            note: Some("a finalize, but which guard it ran (the fencing token or the owner's name only) is not recorded"),
        };
    };
    let effect = match answer {
        Some(_) => "1 row changed → Processed".to_string(),
        None => format!(
            "0 rows changed → FINALIZE REJECTED (lease v{}{})",
            l.version,
            known
                .row_version
                .map_or_else(String::new, |v| format!(", row at v{v}"))
        ),
    };
    let status = answer.map_or_else(unknown, sql_text);
    let pg_version = known.dialect == Dialect::Postgres;
    let statements = if pg_version {
        let sql = if owner_only {
            pg::OWNER_ONLY_FINALIZE_SQL
        } else {
            pg::FINALIZE_SQL
        };
        let effect = match answer {
            Some(_) => format!("{effect}, the answer written"),
            None => effect,
        };
        vec![stmt(
            sql,
            vec![
                ("$1", int(l.at)),
                ("$2", int(l.id)),
                ("$3", l.worker.to_string()),
                ("$4", int(l.version)),
                ("$5", unknown()),
                ("$6", sql_text(key)),
                ("$7", status),
                ("$8", unknown()),
            ],
            effect,
        )]
    } else {
        let sql = if owner_only {
            lite::OWNER_ONLY_FINALIZE_SQL
        } else {
            lite::GUARDED_FINALIZE_SQL
        };
        let guard = stmt(
            sql,
            vec![
                ("?1", int(l.at)),
                ("?2", int(l.id)),
                ("?3", l.worker.to_string()),
                ("?4", int(l.version)),
                ("?5", unknown()),
            ],
            effect,
        );
        let mut statements = vec![guard];
        if answer.is_some() {
            statements.push(answer_write(
                lite::WRITE_ANSWER_SQL,
                ["?1", "?2", "?3"],
                key,
                status,
            ));
        }
        statements
    };
    Shown {
        statements,
        note: None,
    }
}

/// The provider's answer written onto the payment of `key`.
fn answer_write(
    sql: &'static str,
    names: [&'static str; 3],
    key: &str,
    status: String,
) -> ShownStatement {
    stmt(
        sql,
        vec![
            (names[0], status),
            (names[1], unknown()),
            (names[2], sql_text(key)),
        ],
        "1 row changed → the provider's answer written",
    )
}

/// A heartbeat that left the lease at `until` (None: it changed no row), and on SQLite the
/// read of the expiry it left.
fn heartbeat(l: &Held<'_>, until: Option<i64>, known: &Known) -> Vec<ShownStatement> {
    let asked = known.lease_ms.map_or_else(unknown, |ms| int(l.at + ms));
    let effect = until.map_or_else(
        || "0 rows changed".to_string(),
        |u| format!("1 row changed → lease until {}", hms(u)),
    );
    if known.dialect == Dialect::Postgres {
        return vec![stmt(
            pg::HEARTBEAT_SQL,
            vec![
                ("$1", asked),
                ("$2", int(l.id)),
                ("$3", l.worker.to_string()),
                ("$4", int(l.version)),
                ("$5", int(l.at)),
                ("$6", unknown()),
            ],
            effect,
        )];
    }
    let mut params = vec![(":until", asked)];
    params.extend(named(l));
    params.push((":now", int(l.at)));
    let mut out = vec![stmt(lite::HEARTBEAT_SQL, params, effect)];
    if let Some(u) = until {
        out.push(stmt(
            lite::HELD_UNTIL_SQL,
            vec![("?1", int(l.id))],
            format!("1 row: LockedUntilUtc = {u} ({})", hms(u)),
        ));
    }
    out
}

/// SQLite's `:id, :worker, :version, :seeding`: the holder's condition.
fn named(l: &Held<'_>) -> Vec<(&'static str, String)> {
    vec![
        (":id", int(l.id)),
        (":worker", l.worker.to_string()),
        (":version", int(l.version)),
        (":seeding", unknown()),
    ]
}

/// A failed attempt: the read of the attempts this worker's lease holds, then the release.
fn failed(l: &Held<'_>, o: &Outcome<'_>, known: &Known) -> Vec<ShownStatement> {
    let read = format!("1 row: Attempts = {}", o.attempts);
    let available = o.available.map_or_else(unknown, int);
    if known.dialect == Dialect::Postgres {
        let who = |first| {
            vec![
                (first, int(l.id)),
                ("$2", l.worker.to_string()),
                ("$3", int(l.version)),
                ("$4", unknown()),
            ]
        };
        return vec![
            stmt(pg::HELD_ATTEMPTS_SQL, who("$1"), read),
            stmt(
                pg::RELEASE_SQL,
                vec![
                    ("$1", sql_text(o.status)),
                    ("$2", available),
                    ("$3", sql_text(o.error)),
                    ("$4", int(l.id)),
                    ("$5", l.worker.to_string()),
                    ("$6", int(l.version)),
                    ("$7", unknown()),
                    ("$8", int(l.at)),
                ],
                o.effect.clone(),
            ),
        ];
    }
    let mut release = vec![
        (":status", sql_text(o.status)),
        (":available", available),
        (":error", sql_text(o.error)),
        (":now", int(l.at)),
    ];
    release.extend(named(l));
    vec![
        stmt(lite::HELD_ATTEMPTS_SQL, named(l), read),
        stmt(lite::RELEASE_SQL, release, o.effect.clone()),
    ]
}

/// Leasing off: the answer written and the row marked Processed, asking nobody.
fn marked(at: i64, id: i64, key: &str, status: &str, known: &Known) -> Vec<ShownStatement> {
    let (answer, mark, names) = match known.dialect {
        Dialect::Sqlite => (lite::WRITE_ANSWER_SQL, lite::MARK_SQL, ["?1", "?2", "?3"]),
        Dialect::Postgres => (pg::WRITE_ANSWER_SQL, pg::MARK_SQL, ["$1", "$2", "$3"]),
    };
    vec![
        answer_write(answer, names, key, sql_text(status)),
        stmt(
            mark,
            vec![(names[0], int(at)), (names[1], int(id))],
            format!("1 row changed → {key} Processed, no lease asked"),
        ),
    ]
}

/// Leasing off: every Pending message read at once.
fn loaded(at: i64, count: usize, known: &Known) -> Vec<ShownStatement> {
    let (sql, name) = match known.dialect {
        Dialect::Sqlite => (lite::LOAD_PENDING_SQL, ":now"),
        Dialect::Postgres => (pg::LOAD_PENDING_SQL, "$1"),
    };
    let rows = if count == 1 { "row" } else { "rows" };
    vec![stmt(
        sql,
        vec![(name, int(at))],
        format!("{count} {rows}: no lease taken"),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderStatus;

    fn ev(actor: &str, kind: EventKind) -> Event {
        Event {
            seq: 1,
            at_ms: 1_500,
            slot: Some(0),
            actor: actor.into(),
            kind,
            sql: None,
        }
    }

    /// One event of every kind a worker's statement stands for, each claim in every way.
    fn every_event() -> Vec<Event> {
        let mut out = claims();
        out.extend(writes());
        out
    }

    /// A claim and a refused claim in every way.
    fn claims() -> Vec<Event> {
        let key = || "PAY-002".to_string();
        let mut out = Vec::new();
        for way in [
            ClaimWay::Next,
            ClaimWay::Batch,
            ClaimWay::Id,
            ClaimWay::Unrecorded,
        ] {
            out.push(ev(
                "Worker-A",
                EventKind::Claimed {
                    id: 2,
                    key: key(),
                    until_ms: 3_500,
                    version: 1,
                    reclaim: false,
                    way,
                    overlapped: None,
                },
            ));
            out.push(ev(
                "Worker-A",
                EventKind::ClaimBlocked {
                    id: 2,
                    key: key(),
                    owner: "Worker-B".into(),
                    left_ms: 900,
                    way,
                },
            ));
        }
        out
    }

    /// Every other write a worker's statements stand for.
    fn writes() -> Vec<Event> {
        let key = || "PAY-002".to_string();
        let (id, version) = (2, 1);
        Vec::from(
            [
                EventKind::ClaimEmpty,
                EventKind::Finalized {
                    id,
                    key: key(),
                    version,
                    status: ProviderStatus::Paid,
                },
                EventKind::FinalizeRejected {
                    id,
                    key: key(),
                    version,
                },
                EventKind::Heartbeat {
                    id,
                    key: key(),
                    version,
                    until_ms: 4_500,
                },
                EventKind::LeaseLost {
                    id,
                    key: key(),
                    version,
                },
                EventKind::AttemptFailed {
                    id,
                    key: key(),
                    version,
                    attempt: 1,
                    available_at_ms: 1_600,
                    error: "timeout".into(),
                },
                EventKind::DeadLettered {
                    id,
                    key: key(),
                    version,
                    attempts: 5,
                    error: "timeout".into(),
                },
                EventKind::AttemptLost {
                    id,
                    key: key(),
                    version,
                    error: "timeout".into(),
                },
                EventKind::Marked {
                    id,
                    key: key(),
                    status: ProviderStatus::Paid,
                },
                EventKind::Loaded { count: 3 },
            ]
            .map(|k| ev("Worker-A", k)),
        )
    }

    fn known(dialect: Dialect) -> Known {
        Known {
            dialect,
            owner_only: Some(false),
            lease_ms: Some(2_000),
            batch: Some(4),
            row_version: Some(2),
            claims: None,
            student: false,
        }
    }

    /// Every statement shown for SQLite prepares on the schema, and its parameters are
    /// exactly the ones shown, by name.
    #[test]
    fn every_sqlite_statement_shown_prepares_with_exactly_the_parameters_shown() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::store::SCHEMA_SQL).unwrap();
        let mut seen = 0;
        for e in every_event() {
            let shown = shown(&e, &known(Dialect::Sqlite)).expect("a statement");
            for st in &shown.statements {
                let stmt = conn.prepare(&st.sql).unwrap();
                let names: Vec<String> = (1..=stmt.parameter_count())
                    .map(|i| stmt.parameter_name(i).unwrap_or("?").to_string())
                    .collect();
                let mut expected: Vec<String> =
                    st.params.iter().map(|(n, _)| n.to_string()).collect();
                let mut names_sorted = names.clone();
                names_sorted.sort();
                expected.sort();
                assert_eq!(names_sorted, expected, "{e:?}\n{}", st.sql);
                seen += 1;
            }
        }
        assert!(seen > 20, "{seen}");
    }

    /// PostgreSQL's statements name `$1`..`$n`: the pane shows each one exactly once.
    #[test]
    fn every_postgres_statement_shown_binds_each_of_its_placeholders() {
        for e in every_event() {
            let shown = shown(&e, &known(Dialect::Postgres)).expect("a statement");
            for st in &shown.statements {
                let most = (1..=12)
                    .filter(|n| st.sql.contains(&format!("${n}")))
                    .max()
                    .unwrap_or(0);
                let mut names: Vec<&str> = st.params.iter().map(|(n, _)| n.as_ref()).collect();
                names.sort_by_key(|n| n[1..].parse::<u32>().unwrap());
                let want: Vec<String> = (1..=most).map(|n| format!("${n}")).collect();
                assert_eq!(names, want, "{e:?}\n{}", st.sql);
            }
        }
    }

    #[test]
    fn each_dialect_shows_its_own_claim() {
        let claim = &every_event()[0];
        let lite = shown(claim, &known(Dialect::Sqlite)).unwrap();
        assert!(std::ptr::eq(
            &*lite.statements[0].sql,
            crate::store::sql::CANDIDATE_SQL
        ));
        assert!(std::ptr::eq(
            &*lite.statements[1].sql,
            crate::store::sql::TAKE_LEASE_SQL
        ));
        let pg = shown(claim, &known(Dialect::Postgres)).unwrap();
        assert_eq!(pg.statements.len(), 1);
        assert!(std::ptr::eq(
            &*pg.statements[0].sql,
            crate::pg::sql::CLAIM_NEXT_SQL
        ));
        assert!(pg.statements[0].sql.contains("FOR UPDATE SKIP LOCKED"));
    }

    /// What is not known is said, never guessed: a claim row that does not say how it was
    /// made, a finalize whose guard is not recorded, a seeding no event carries.
    #[test]
    fn what_an_event_does_not_carry_is_shown_as_not_recorded() {
        let row_claim = &every_event()[6];
        assert!(matches!(
            row_claim.kind,
            EventKind::Claimed {
                way: ClaimWay::Unrecorded,
                ..
            }
        ));
        let pg = shown(row_claim, &known(Dialect::Postgres)).unwrap();
        assert!(pg.statements.is_empty() && pg.note.is_some());
        let lite = shown(row_claim, &known(Dialect::Sqlite)).unwrap();
        assert_eq!(lite.statements.len(), 1);
        assert!(lite.note.is_some());
        // Worker processes claim only the next message: then the row's claim is that.
        let processes = Known {
            claims: Some(ClaimWay::Next),
            ..known(Dialect::Postgres)
        };
        let pg = shown(row_claim, &processes).unwrap();
        assert!(std::ptr::eq(
            &*pg.statements[0].sql,
            crate::pg::sql::CLAIM_NEXT_SQL
        ));
        let rejected = every_event()
            .into_iter()
            .find(|e| matches!(e.kind, EventKind::FinalizeRejected { .. }))
            .unwrap();
        let unknown_guard = Known {
            owner_only: None,
            ..known(Dialect::Sqlite)
        };
        let s = shown(&rejected, &unknown_guard).unwrap();
        assert!(s.statements.is_empty() && s.note.is_some());
        let s = shown(&rejected, &known(Dialect::Sqlite)).unwrap();
        assert!(s.statements[0]
            .params
            .contains(&("?5".into(), NOT_RECORDED.to_string())));
        let owner_only = Known {
            owner_only: Some(true),
            ..known(Dialect::Sqlite)
        };
        let s = shown(&rejected, &owner_only).unwrap();
        assert!(std::ptr::eq(
            &*s.statements[0].sql,
            crate::store::sql::OWNER_ONLY_FINALIZE_SQL
        ));
    }

    /// A worker's name from a row reaches the screen printable, bounded and quoted as SQL.
    #[test]
    fn a_hostile_worker_name_is_bound_printable_and_quoted() {
        let name = format!("Evil\u{1b}[2J'; DROP TABLE x; --{}", "y".repeat(200));
        let claim = ev(
            &name,
            EventKind::ClaimBlocked {
                id: 1,
                key: "PAY-001".into(),
                owner: "Bad\u{7}Owner".into(),
                left_ms: 10,
                way: ClaimWay::Next,
            },
        );
        let s = shown(&claim, &known(Dialect::Sqlite)).unwrap();
        let worker = &s.statements[1].params[0].1;
        assert!(
            worker.starts_with("'Evil[2J''; DROP TABLE x; --"),
            "{worker}"
        );
        assert!(worker.chars().all(|c| !c.is_control()));
        // Bounded before its quotes are doubled, with the cut marked.
        assert!(worker.ends_with("…'"), "{worker}");
        assert!(worker.chars().count() <= 2 * MAX_VALUE + 2, "{worker}");
        assert!(!s.statements[1].effect.chars().any(char::is_control));
    }
}
