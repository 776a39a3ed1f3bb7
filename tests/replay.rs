//! `leaselab replay DB`: a run recorded with a crash and a takeover is replayed, and at
//! every position its table is the database's as it stood then (read from the real
//! database while the run was going), with the ledger, marks and the verdict to match.

#[allow(dead_code)]
mod pg_support;
mod support;

use crossterm::event::KeyCode;
use leaselab::engine::backend::Db;
use leaselab::lesson::{built_in, Session};
use leaselab::ui::app::App;
use leaselab::ui::Theme;
use support::{frame_lines, key, leaselab, stderr};

/// (id, status, owner, lease version, attempts) of every row.
type Rows = Vec<(i64, String, Option<String>, i64, i64)>;

fn rows_of(rows: &[leaselab::engine::outbox::MessageRow]) -> Rows {
    rows.iter()
        .map(|r| {
            (
                r.id,
                r.status.to_string(),
                r.locked_by.clone(),
                r.lease_version,
                r.attempts,
            )
        })
        .collect()
}

/// Step the lease-expiry lesson on a file, noting after each step how many events the
/// table holds and what the rows are.
fn record(path: &std::path::Path) -> Vec<(usize, Rows)> {
    record_lesson("lease-expiry", path)
}

fn record_lesson(name: &str, path: &std::path::Path) -> Vec<(usize, Rows)> {
    let lesson = built_in(name).unwrap();
    let mut s = Session::start_in(lesson, Some(path.to_path_buf())).unwrap();
    let mut seen = Vec::new();
    while !s.runner.finished() {
        assert!(s.forward().passed());
        let events = match Db::parse(path) {
            Db::Sqlite(p) => leaselab::engine::store::Store::open_read_only(&p)
                .unwrap()
                .all_events()
                .unwrap()
                .len(),
            Db::Postgres(url) => leaselab::engine::pg::PgStore::open_url(&url)
                .unwrap()
                .all_events_after(0, 1_000_000)
                .unwrap()
                .len(),
        };
        seen.push((events, rows_of(&s.engine.store().messages(0, 100).unwrap())));
    }
    seen
}

#[test]
fn a_run_on_postgres_replays_from_its_events_table_too() {
    let Some(db) = pg_support::scratch("replay") else {
        return;
    };
    let url = std::path::PathBuf::from(&db.url);
    let seen = record(&url);
    let mut app = App::replay(Db::parse(&url), Theme::plain()).expect("replay");
    for (events, rows) in &seen {
        app.replay_to(*events);
        frame_lines(&mut app, 120, 40);
        assert_eq!(&rows_of(&app.snapshot().db.rows), rows, "at event {events}");
    }
    assert_eq!(app.ledger.reclaims, 1);
}

#[test]
fn every_position_shows_the_rows_the_database_held_then() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let seen = record(&path);
    let mut app = App::replay(Db::Sqlite(path.clone()), Theme::plain()).expect("replay");
    let total = app.snapshot().replay.as_ref().map_or(0, |_| 0);
    assert_eq!(total, 0, "no frame taken yet");
    for (events, rows) in &seen {
        app.replay_to(*events);
        frame_lines(&mut app, 120, 40);
        assert_eq!(&rows_of(&app.snapshot().db.rows), rows, "at event {events}");
    }
    // The crash left Worker-A's lease to run out; Worker-B's claim is a takeover mark.
    key(&mut app, KeyCode::Home);
    key(&mut app, KeyCode::Char(']'));
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    let view = app.snapshot().replay.clone().unwrap();
    assert!(
        view.mark
            .as_deref()
            .is_some_and(|m| m.starts_with("takeover: Worker-B claims PAY-001 (v2)")),
        "{view:?}"
    );
    assert!(
        screen.contains("takeover: Worker-B claims PAY-001 (v2)"),
        "{screen}"
    );
    assert_eq!(
        rows_of(&app.snapshot().db.rows)[0].2.as_deref(),
        Some("Worker-B")
    );
    // One event back: the row is Worker-A's again, as it was in the database.
    key(&mut app, KeyCode::Left);
    frame_lines(&mut app, 120, 40);
    assert_eq!(
        rows_of(&app.snapshot().db.rows)[0].2.as_deref(),
        Some("Worker-A")
    );
    // At the end: processed once, and the ledger agrees.
    key(&mut app, KeyCode::End);
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert_eq!(app.snapshot().db.rows[0].status.to_string(), "Processed");
    assert_eq!(app.ledger.reclaims, 1);
    assert_eq!(app.ledger.ownership_violations, 0);
    assert!(screen.contains("REPLAY"), "{screen}");
    // Keys that would change a live run only say how to move.
    key(&mut app, KeyCode::Char('c'));
    assert!(app
        .ui
        .notice
        .as_deref()
        .unwrap_or("")
        .contains("←/→ one event"));
}

#[test]
fn a_dead_letter_and_its_redrive_are_replayed_as_the_database_held_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("poison.db");
    let seen = record_lesson("poison-message", &path);
    let mut app = App::replay(Db::Sqlite(path), Theme::plain()).expect("replay");
    for (events, rows) in &seen {
        app.replay_to(*events);
        frame_lines(&mut app, 120, 40);
        assert_eq!(&rows_of(&app.snapshot().db.rows), rows, "at event {events}");
    }
    let marks = app.stage().replay().unwrap().position;
    assert!(marks > 0);
    key(&mut app, KeyCode::Home);
    key(&mut app, KeyCode::Char(']'));
    frame_lines(&mut app, 120, 40);
    let mark = app
        .snapshot()
        .replay
        .clone()
        .unwrap()
        .mark
        .unwrap_or_default();
    assert!(mark.starts_with("dead letter: "), "{mark}");
}

#[test]
fn a_missing_or_empty_database_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.db");
    let out = leaselab(&["replay", missing.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no such database file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);
    let foreign = dir.path().join("foreign.db");
    std::fs::write(&foreign, b"not a database at all, just some bytes......").unwrap();
    let out = leaselab(&["replay", foreign.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end().lines().count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_position_bar_starts_at_the_first_event_and_ends_at_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    record(&path);
    let mut app = App::replay(Db::parse(&path), Theme::plain()).expect("replay");
    let bar = |app: &mut App| -> String {
        let lines = frame_lines(app, 120, 40);
        let strip = lines
            .iter()
            .find(|l| l.contains("REPLAY"))
            .expect("the strip");
        strip
            .chars()
            .skip_while(|c| !"━─●◆".contains(*c))
            .take_while(|c| "━─●◆".contains(*c))
            .collect()
    };
    key(&mut app, KeyCode::Home);
    let first = bar(&mut app);
    assert!(first.starts_with('●') && !first.contains('━'), "{first}");
    key(&mut app, KeyCode::End);
    let last = bar(&mut app);
    assert!(last.ends_with('●') && !last.contains('─'), "{last}");
}

#[test]
fn a_postgres_database_that_is_empty_or_not_leaselabs_is_refused_untouched() {
    let Some(db) = pg_support::scratch("replay_foreign") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = leaselab(&["replay", &db.url], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("holds no leaselab tables: nothing was recorded there"),
        "{}",
        stderr(&out)
    );
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE invoices (id int)")
        .unwrap();
    let out = leaselab(&["replay", &db.url], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("holds tables of another application (invoices)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);
    // Nothing was made there.
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 1);
}

#[test]
fn the_replay_dashboard_moves_through_a_run_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let steps = record(&path).len();
    assert_eq!(steps, 6);
    let mut d = support::Dashboard::open(&["replay", path.to_str().unwrap()]);
    d.wait_for_text("REPLAY 1/");
    d.press("]");
    d.wait_for_text("takeover: Worker-B claims PAY-001 (v2)");
    d.press("\x1b[F"); // End
    d.wait_for("PAY-001 Processed in the table", |s| {
        s.contents()
            .lines()
            .any(|l| l.contains("PAY-001") && l.contains("Processed"))
    });
    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
}

/// Workers may still be writing a PostgreSQL database when it is replayed, and an event row
/// that commits later can take a lower Seq than one already visible. A replay reads the
/// history only once no transaction older than its read is open: while one is, it is refused
/// in one line naming it, never shown with a hole that fills in later; once it ends, every
/// row is there, in Seq order.
#[test]
fn a_postgres_replay_waits_for_a_lower_seq_still_in_flight_and_never_shows_a_hole() {
    use leaselab::engine::outbox::Seeding;
    use leaselab::engine::pg::PgStore;
    use leaselab::engine::provider::Provider;
    use leaselab::ui::app::Recording;

    let Some(db) = pg_support::scratch("replay_in_flight") else {
        return;
    };
    let (mut store, _) = PgStore::create(&db.config).expect("create");
    store.seed(&Provider::new(), 2, 0).expect("seed");
    let insert = "INSERT INTO LeaseEvents (AtUtc, Worker, Kind, Detail)
                  SELECT 0, 'Worker-Z', 'Paused', 'pause'
                    FROM (SELECT pg_current_xact_id()) AS identified
                  RETURNING Seq";
    // A writer draws a Seq and has not committed; another row, drawn after it, commits.
    let mut writer = db.client();
    let mut open = writer.transaction().unwrap();
    let low: i64 = open.query_one(insert, &[]).unwrap().get(0);
    let high: i64 = db.client().query_one(insert, &[]).unwrap().get(0);
    assert!(high > low);

    let dir = tempfile::tempdir().unwrap();
    let out = leaselab(&["replay", &db.url], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("its events are held back by an open transaction (server pid"),
        "{err}"
    );

    open.commit().unwrap();
    let recording = Recording::load(&Db::Postgres(db.url.clone())).expect("replay");
    let seqs: Vec<u64> = recording.rows.iter().map(|r| r.seq).collect();
    assert_eq!(
        seqs,
        (1..=high as u64).collect::<Vec<u64>>(),
        "every row once, in Seq order, the late one before the row drawn after it"
    );
}

/// A run whose message fails every attempt until it is dead-lettered, and one whose message
/// fails twice and is then processed: the replay's ledger and history verdict at the last
/// event are the run's own. Failed attempts release their lease (no takeover is counted, no
/// lease overlaps, no worker is seen holding a dead letter), as the live run saw them.
#[test]
fn failed_attempts_and_dead_letters_replay_with_the_runs_own_ledger_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for (name, fault) in [
        ("dead.db", ["--fail-always", "PAY-005"]),
        ("retried.db", ["--fail-first", "PAY-002=2"]),
    ] {
        let path = dir.path().join(name);
        let db = path.to_str().unwrap();
        let args = [
            "run",
            "outbox-leasing",
            "--db",
            db,
            "--json",
            fault[0],
            fault[1],
        ];
        let out = leaselab(&args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let run: serde_json::Value = serde_json::from_str(&support::stdout(&out)).unwrap();
        let mut app = App::replay(Db::Sqlite(path.clone()), Theme::plain()).expect("replay");
        key(&mut app, KeyCode::End);
        frame_lines(&mut app, 120, 40);
        let l = &app.ledger;
        let figures = [
            ("processing_attempts", l.processing_attempts),
            ("reclaims", l.reclaims),
            ("retries", l.retries),
            ("dead_letters", l.dead_letters),
        ];
        for (figure, replayed) in figures {
            assert_eq!(Some(replayed), run[figure].as_u64(), "{name}: {figure}");
        }
        let verdict = leaselab::engine::checker::check(&app.ledger, &app.snapshot().db.rows);
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
    // A retried attempt's row says when the message may be claimed again (after its backoff),
    // which the log shows as "retry from".
    let conn = rusqlite::Connection::open(dir.path().join("retried.db")).unwrap();
    let retries: Vec<(i64, Option<i64>)> = conn
        .prepare("SELECT AtUtc, LockedUntilUtc FROM LeaseEvents WHERE Kind = 'Retry'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(retries.len(), 2);
    assert!(
        retries
            .iter()
            .all(|(at, until)| until.is_some_and(|u| u > *at)),
        "{retries:?}"
    );
}
