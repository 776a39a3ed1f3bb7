//! The SQL pane (`s`): each worker's last statements, the very text its store ran, with
//! the parameters bound and what each did, in free play, a lesson, `--watch` and a replay.

#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::Path;

use leaselab::engine::backend::Db;
use leaselab::engine::statements::{ShownStatement, NOT_RECORDED};
use leaselab::engine::store::sql;
use leaselab::lesson::{built_in, Session};
use leaselab::ui::app::App;
use leaselab::ui::render::sql::one_line;
use leaselab::ui::{DashboardOptions, Theme};
use rusqlite::types::Value;
use support::{app, frame, frame_lines, lesson_app, next, press};

/// The statements the pane holds for `slot` now.
fn last(app: &App, slot: usize) -> Vec<ShownStatement> {
    app.sql.last[slot]
        .clone()
        .expect("a statement")
        .shown
        .statements
}

/// A free-play dashboard on the file `db`.
fn on_file(db: &Path, messages: u64) -> App {
    app(DashboardOptions {
        db: Some(db.to_path_buf()),
        messages: Some(messages),
        ..DashboardOptions::default()
    })
}

/// A value as the pane shows it, bound again: an integer, or a quoted text.
fn value(shown: &str) -> Value {
    assert_ne!(shown, NOT_RECORDED, "a value the pane does not know");
    match shown.parse::<i64>() {
        Ok(n) => Value::Integer(n),
        Err(_) => {
            let inner = shown.strip_prefix('\'').and_then(|s| s.strip_suffix('\''));
            Value::Text(inner.expect("a quoted text").replace("''", "'"))
        }
    }
}

/// Run `st` with the parameters the pane shows (`fill` gives the ones it says it does not
/// know): the rows it read, and the rows it changed.
fn run(
    conn: &rusqlite::Connection,
    st: &ShownStatement,
    fill: &dyn Fn(&str) -> Value,
) -> (Vec<i64>, usize) {
    let mut stmt = conn.prepare(&st.sql).expect("the shown SQL prepares");
    let bound: Vec<(&str, Value)> = st
        .params
        .iter()
        .map(|(name, v)| {
            let v = if v == NOT_RECORDED {
                fill(name)
            } else {
                value(v)
            };
            (name.as_ref(), v)
        })
        .collect();
    for (name, v) in &bound {
        let i = stmt
            .parameter_index(name)
            .unwrap()
            .unwrap_or_else(|| panic!("{name} is not a parameter of {}", st.sql));
        stmt.raw_bind_parameter(i, v).unwrap();
    }
    assert_eq!(stmt.parameter_count(), bound.len(), "every parameter shown");
    if stmt.readonly() {
        let mut rows = stmt.raw_query();
        let mut ids = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            ids.push(r.get(0).unwrap());
        }
        (ids, 0)
    } else {
        (Vec::new(), stmt.raw_execute().unwrap())
    }
}

#[test]
fn the_pane_shows_the_very_statements_the_store_runs_for_a_claim() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = on_file(&dir.path().join("a.db"), 6);
    press(&mut app, 'n'); // Worker-A claims PAY-001
    let shown = last(&app, 0);
    // The same `&'static str` the store executes, not a copy of it.
    assert!(std::ptr::eq(&*shown[0].sql, sql::CANDIDATE_SQL));
    assert!(std::ptr::eq(&*shown[1].sql, sql::TAKE_LEASE_SQL));
    assert_eq!(shown.len(), 2);
    // And the screen shows that text, whole, with the values bound.
    press(&mut app, 's');
    let screen: String = frame_lines(&mut app, 120, 40)
        .iter()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' ').to_string())
        .collect::<Vec<_>>()
        .join(" ");
    for st in &shown {
        assert!(screen.contains(&one_line(&st.sql)), "{screen}");
        assert!(screen.contains(&st.effect), "{screen}");
    }
    assert!(screen.contains(":worker = 'Worker-A'"), "{screen}");
}

/// What the pane says a claim ran, run again on a database seeded the same way, does what
/// the pane says it did, and leaves the row the dashboard's claim left.
#[test]
fn the_shown_claim_run_on_a_fresh_seeded_store_does_what_the_pane_says() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    let mut app = on_file(&a, 6);
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B claims PAY-002
    let shown = last(&app, 1);
    assert_eq!(shown[0].effect, "1 row: Id 2 PAY-002 at v0");
    assert!(shown[1].effect.starts_with("1 row changed"), "{shown:?}");
    let row = |path: &Path, id: i64| {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT Status, LockedBy, LockedUntilUtc, LeaseVersion FROM OutboxMessages WHERE Id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .unwrap()
    };
    let claimed = row(&a, 2);
    drop(app);
    // The same outbox, seeded by the same dashboard, with Worker-A's lease on PAY-001.
    let mut fresh = on_file(&b, 6);
    press(&mut fresh, 'n');
    drop(fresh);
    let conn = rusqlite::Connection::open(&b).unwrap();
    let none = |name: &str| panic!("{name} not recorded");
    let (ids, _) = run(&conn, &shown[0], &none);
    assert_eq!(ids, vec![2], "the candidate the pane names");
    let (_, changed) = run(&conn, &shown[1], &none);
    assert_eq!(changed, 1, "1 row changed, as the pane says");
    drop(conn);
    assert_eq!(row(&b, 2), claimed);
}

/// The zombie's finalize: the guard the pane shows, run with the values it shows, changes
/// no row, and the row's version is the one the pane names.
#[test]
fn a_rejected_finalize_shows_the_guard_and_why() {
    let mut app = lesson_app("zombie-worker");
    for _ in 0..5 {
        next(&mut app);
    }
    assert!(app.ui.sql, "the step asks for the pane");
    let shown = last(&app, 0);
    assert_eq!(shown.len(), 1, "a rejected finalize writes no answer");
    assert!(std::ptr::eq(&*shown[0].sql, sql::GUARDED_FINALIZE_SQL));
    assert_eq!(
        shown[0].effect,
        "0 rows changed → FINALIZE REJECTED (lease v1, row at v2)"
    );
    let Db::Sqlite(path) = app.engine.db.clone() else {
        panic!("a lesson runs on SQLite")
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (version, seeding): (i64, i64) = conn
        .query_row(
            "SELECT LeaseVersion, Seeding FROM OutboxMessages WHERE Id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(version, 2);
    let tx = rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Deferred)
        .unwrap();
    let (_, changed) = run(&tx, &shown[0], &|_| Value::Integer(seeding));
    assert_eq!(changed, 0);
    tx.rollback().unwrap();
    for (w, h) in [(80, 24), (120, 40)] {
        let t = frame(&mut app, w, h);
        let text = t.backend().to_string();
        assert!(
            text.contains("FINALIZE REJECTED (lease v1, row at v2)"),
            "{text}"
        );
        insta::assert_snapshot!(format!("zombie_rejected_{w}x{h}"), t.backend());
    }
}

#[test]
fn a_claim_in_free_play_at_both_sizes() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 's');
    for (w, h) in [(80, 24), (120, 40)] {
        let t = frame(&mut app, w, h);
        let text = t.backend().to_string();
        assert!(text.contains("SQL · SQLite"), "{text}");
        assert!(!text.contains("┌ Timeline") || h > 24, "{text}");
        insta::assert_snapshot!(format!("claim_{w}x{h}"), t.backend());
    }
    // `s` hides it again, and the timeline is back.
    press(&mut app, 's');
    let text = frame(&mut app, 80, 24).backend().to_string();
    assert!(!text.contains("SQL · SQLite"), "{text}");
    assert!(text.contains("Timeline"), "{text}");
}

/// An empty claim writes no event row: its statements come from the worker's own event.
#[test]
fn an_empty_claim_shows_the_candidate_that_found_nothing() {
    let mut app = app(DashboardOptions {
        messages: Some(1),
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B: blocked by Worker-A's live lease
    press(&mut app, 'n'); // Worker-A calls the provider
    press(&mut app, 'n'); // Worker-B: still blocked
    press(&mut app, 'n'); // Worker-A finalizes
    press(&mut app, 'n'); // Worker-B: nothing claimable, nobody holds a lease
    let shown = last(&app, 1);
    assert!(std::ptr::eq(&*shown[0].sql, sql::CANDIDATE_SQL));
    assert_eq!(shown[0].effect, "no row claimable");
    assert!(std::ptr::eq(&*shown[1].sql, sql::SOONEST_LIVE_LEASE_SQL));
    let finalized = last(&app, 0);
    assert!(std::ptr::eq(&*finalized[0].sql, sql::GUARDED_FINALIZE_SQL));
    assert!(std::ptr::eq(&*finalized[1].sql, sql::WRITE_ANSWER_SQL));
    press(&mut app, 's');
    press(&mut app, '2'); // Worker-B's statements whole
    for (w, h) in [(80, 24), (120, 40)] {
        let t = frame(&mut app, w, h);
        let text = t.backend().to_string();
        assert!(text.contains("no row claimable"), "{text}");
        insta::assert_snapshot!(format!("empty_claim_{w}x{h}"), t.backend());
    }
}

/// The lease-expiry lesson asks for the pane at its refused claim: a claim by id reads the
/// holder and runs no update.
#[test]
fn a_lesson_step_with_show_sql_opens_the_pane() {
    let mut app = lesson_app("lease-expiry");
    next(&mut app);
    assert!(app.ui.sql, "step 1 asks for the pane");
    press(&mut app, 's');
    next(&mut app); // the crash: the pane stays as the reader left it
    assert!(!app.ui.sql);
    next(&mut app); // Worker-B asks for PAY-001 and is refused: the step shows the pane
    assert!(app.ui.sql);
    let shown = last(&app, 1);
    assert_eq!(shown.len(), 1);
    assert!(std::ptr::eq(&*shown[0].sql, sql::HOLDER_SQL));
    assert!(
        shown[0].effect.ends_with("not claimable, no update run"),
        "{shown:?}"
    );
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!("lesson_refused_claim_80x24", t.backend());
    // At 80x24 the effect has one row: it ends in `…` where it goes on, never mid-sentence.
    let effect = frame_lines(&mut app, 80, 24)
        .into_iter()
        .find_map(|l| {
            Some(
                l.split_once("⇒ ")?
                    .1
                    .trim_end_matches(['│', ' '])
                    .to_string(),
            )
        })
        .expect("the effect's row");
    assert!(
        shown[0].effect == effect || effect.ends_with('…'),
        "{effect:?} of {:?}",
        shown[0].effect
    );
    // A step back reseeds and runs the earlier steps again: the refused claim is undone.
    press(&mut app, 'b');
    assert!(
        app.sql.last.get(1).is_none_or(Option::is_none),
        "{:?}",
        app.sql.last
    );
    assert!(std::ptr::eq(&*last(&app, 0)[0].sql, sql::HOLDER_SQL));
}

/// A replay shows, at each event, the statement that event stands for; a claim's row does
/// not say which read chose it, and the pane says so.
#[test]
fn a_replay_shows_the_statement_each_recorded_event_stands_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut s = Session::start_in(built_in("zombie-worker").unwrap(), Some(path.clone())).unwrap();
    for _ in 0..5 {
        assert!(s.forward().passed());
    }
    drop(s);
    let mut app = App::replay(Db::Sqlite(path), Theme::plain()).expect("replay");
    press(&mut app, 's');
    press(&mut app, ']'); // the first mark: Worker-B's takeover of PAY-001
    let claim = last(&app, 1);
    assert_eq!(claim.len(), 1);
    assert!(std::ptr::eq(&*claim[0].sql, sql::TAKE_LEASE_SQL));
    let text = frame(&mut app, 120, 40).backend().to_string();
    assert!(text.contains("which read chose the row"), "{text}");
    press(&mut app, ']'); // the rejected finalize
    let rejected = last(&app, 0);
    assert!(std::ptr::eq(&*rejected[0].sql, sql::GUARDED_FINALIZE_SQL));
    assert_eq!(
        rejected[0].effect,
        "0 rows changed → FINALIZE REJECTED (lease v1, row at v2)"
    );
    // To the first event and back to the last: the folds kept for going back hold the
    // pane too.
    press(&mut app, 'g');
    press(&mut app, 'G');
    // The header names the recording's temporary folder: one name in the snapshot.
    let folder = dir.path().to_str().unwrap();
    let same = format!("{:<1$}", "/tmp/RECORDING", folder.chars().count());
    let screen = frame_lines(&mut app, 120, 40)
        .join("\n")
        .replace(folder, &same);
    insta::assert_snapshot!("replay_120x40", screen);
}

/// On PostgreSQL the pane shows PostgreSQL's statements.
#[test]
fn a_postgres_backed_dashboard_shows_postgres_statements() {
    let Some(db) = pg_support::scratch("sql_pane") else {
        return;
    };
    let mut app = app(DashboardOptions {
        db: Some(std::path::PathBuf::from(&db.url)),
        messages: Some(1),
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001
    let shown = last(&app, 0);
    assert_eq!(shown.len(), 1);
    assert!(std::ptr::eq(
        &*shown[0].sql,
        leaselab::engine::pg::sql::CLAIM_NEXT_SQL
    ));
    press(&mut app, 's');
    let text = frame_lines(&mut app, 120, 40).join("\n");
    assert!(text.contains("SQL · PostgreSQL"), "{text}");
    assert!(text.contains("FOR UPDATE SKIP LOCKED"), "{text}");
    let pg = |n: &str| n.starts_with('$');
    assert!(shown[0].params.iter().all(|(n, _)| pg(n)), "{shown:?}");
    press(&mut app, 'n'); // Worker-B finds nothing claimable: PostgreSQL's claim, then the read
    let blocked = last(&app, 1);
    assert!(std::ptr::eq(
        &*blocked[0].sql,
        leaselab::engine::pg::sql::CLAIM_NEXT_SQL
    ));
    assert_eq!(blocked[0].effect, "0 rows changed: no row claimable");
    assert!(std::ptr::eq(
        &*blocked[1].sql,
        leaselab::engine::pg::sql::SOONEST_LIVE_LEASE_SQL
    ));
}

/// `--watch`: a `leaselab worker` process's statements, read from its `LeaseEvents` rows.
/// A worker process claims only the next message, so its claim is the claim's two
/// statements; its finalize the guard and the answer. It works on each message for
/// 3 s, beating never, so the claim is on view before the finalize replaces it.
#[test]
fn a_watched_worker_process_shows_its_statements_from_its_rows() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = support::watcher(&db, 1);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&db)
        .args([
            "--name",
            "proc-1",
            "--messages",
            "1",
            "--process-ms",
            "3000",
            "--lease-ms",
            "10000",
            "--no-heartbeat",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start a worker");
    let start = Instant::now();
    let (mut claim, mut finalize) = (None, None);
    while claim.is_none() || finalize.is_none() {
        app.absorb_events();
        if let Some(last) = app.sql.last.iter().flatten().find(|l| l.actor == "proc-1") {
            let first = last.shown.statements.first().map(|s| &*s.sql);
            if first.is_some_and(|s| std::ptr::eq(s, sql::CANDIDATE_SQL)) {
                claim = Some(last.shown.clone());
            }
            if first.is_some_and(|s| std::ptr::eq(s, sql::GUARDED_FINALIZE_SQL)) {
                finalize = Some(last.shown.clone());
            }
        }
        assert!(
            start.elapsed() < support::DEADLINE,
            "no claim and finalize seen: {:?}",
            app.sql.last
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let claim = claim.unwrap();
    assert!(std::ptr::eq(&*claim.statements[1].sql, sql::TAKE_LEASE_SQL));
    assert!(claim.statements[1]
        .params
        .contains(&(":worker".into(), "'proc-1'".into())));
    let finalize = finalize.unwrap();
    assert_eq!(finalize.statements[0].effect, "1 row changed → Processed");
    assert!(std::ptr::eq(
        &*finalize.statements[1].sql,
        sql::WRITE_ANSWER_SQL
    ));
    press(&mut app, 's');
    let text = frame_lines(&mut app, 120, 40).join("\n");
    assert!(text.contains("SQL · SQLite"), "{text}");
    assert!(text.contains("proc-1"), "{text}");
}

/// `show` names a pane the dashboard has; anything else is a one-line mistake with its
/// line, the value quoted printable.
#[test]
fn a_step_may_show_only_a_pane_there_is() {
    let lesson = |show: &str| {
        format!(
            "format_version = 1\ntitle = \"t\"\n[[step]]\ndo = [\"claim Worker-A\"]\nshow = {show}\nsay = \"s\"\n"
        )
    };
    let l = leaselab::lesson::parse("ok", "ok.toml", &lesson("\"sql\"")).expect("parses");
    assert_eq!(l.steps[0].show, Some(leaselab::lesson::Pane::Sql));
    let e = leaselab::lesson::parse("bad", "bad.toml", &lesson("\"tab\\u001b[2Jles\""))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.toml:5: show = 'tab[2Jles' is not a pane (sql)"),
        "{e}"
    );
    assert!(!e.contains('\u{1b}'), "{e:?}");
    let e = leaselab::lesson::parse("bad", "bad.toml", &lesson("3"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.toml:5"), "{e}");
}
