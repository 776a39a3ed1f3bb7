//! A replay shows what the recording holds and nothing else: a frozen worker is frozen, not
//! crashed; a provider call is where it happened; the header shows the settings the run
//! recorded (or `-`); its help lists its own keys; a row no leaselab writes refuses the
//! whole recording in one line naming the file and the row; and nothing appears on disk.

#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::engine::backend::Db;
use leaselab::engine::worker::WorkerState;
use leaselab::lesson::{built_in, Session};
use leaselab::ui::app::App;
use leaselab::ui::Theme;
use support::{frame_lines, key, leaselab, stderr};

/// Step a built-in lesson to its end on `db` (a file or a URL).
fn record_lesson(name: &str, db: &Path) {
    let mut s = Session::start_in(built_in(name).unwrap(), Some(db.to_path_buf())).unwrap();
    while !s.runner.finished() {
        assert!(s.forward().passed());
    }
}

fn replay(db: &Path) -> App {
    App::replay(Db::parse(db), Theme::plain()).expect("replay")
}

fn worker_state(app: &App, name: &str) -> WorkerState {
    app.snapshot()
        .workers
        .iter()
        .find(|w| w.status.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .status
        .state
}

#[test]
fn the_zombie_is_frozen_not_crashed_and_its_provider_call_is_where_it_happened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("z.db");
    record_lesson("zombie-worker", &db);
    let mut app = replay(&db);
    key(&mut app, KeyCode::Char(']'));
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    let mark = app
        .snapshot()
        .replay
        .clone()
        .unwrap()
        .mark
        .unwrap_or_default();
    assert!(
        mark.starts_with("takeover: Worker-B claims PAY-001"),
        "{mark}"
    );
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Paused);
    assert!(screen.contains("FROZEN"), "{screen}");
    assert!(!screen.contains("CRASHED"), "{screen}");
    assert_eq!(app.ledger.crashes, 0);
    // The zombie's provider call is logged at its own time (a scripted step takes no
    // processing time: the time of its claim), before Worker-B's takeover.
    let log: Vec<String> = app
        .log
        .lines()
        .iter()
        .map(|l| format!("{} {}", leaselab::engine::clock::hms(l.at_ms), l.text))
        .collect();
    let check = log
        .iter()
        .position(|l| l.starts_with("09:00:00.000") && l.contains("provider call PAY-001"))
        .unwrap_or_else(|| panic!("{log:#?}"));
    let takeover = log
        .iter()
        .position(|l| l.contains("RECLAIMED PAY-001"))
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert!(check < takeover, "{log:#?}");
    // Woken, the zombie is no longer frozen; its finalize is refused.
    key(&mut app, KeyCode::Char(']'));
    frame_lines(&mut app, 120, 40);
    assert_ne!(worker_state(&app, "Worker-A"), WorkerState::Paused);
}

#[test]
fn a_recorded_crash_shows_as_one_and_the_settings_are_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let out = leaselab(
        &["run", "outbox-leasing", "--db", db.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut app = replay(&db);
    // Only the seeding so far: nothing says what the workers ran with.
    let header = frame_lines(&mut app, 120, 40)[0].clone();
    assert!(header.contains("lease - "), "{header}");
    key(&mut app, KeyCode::Right);
    let header = frame_lines(&mut app, 120, 40)[0].clone();
    assert!(header.contains("lease 500 ms"), "{header}");
    assert!(header.contains("heartbeats on"), "{header}");
    key(&mut app, KeyCode::Char(']'));
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Crashed);
    assert!(screen.contains("CRASHED"), "{screen}");
}

#[test]
fn a_lesson_with_heartbeats_replays_with_heartbeats_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("slow.db");
    record_lesson("slow-job", &db);
    let mut app = replay(&db);
    key(&mut app, KeyCode::Right);
    let header = frame_lines(&mut app, 160, 40)[0].clone();
    assert!(header.contains("heartbeats"), "{header}");
    let settings = app.snapshot().settings;
    assert!(settings.heartbeats.known().is_some(), "{settings:?}");
}

#[test]
fn the_replays_help_and_footer_list_its_own_keys_and_ctrl_c_quits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    record_lesson("lease-expiry", &db);
    let mut app = replay(&db);
    // The header names the recording once, at 80 columns too.
    let header = frame_lines(&mut app, 80, 24)[0].clone();
    assert_eq!(header.matches("run.db").count(), 1, "{header}");
    let lines = frame_lines(&mut app, 120, 40);
    let footer = lines[lines.len() - 2..].join(" ");
    for shown in ["←/→ event", "[/] mark", "Home/End ends"] {
        assert!(footer.contains(shown), "{shown} missing from {footer}");
    }
    for absent in ["space", " n ", "c crash", "leasing", "reset"] {
        assert!(!footer.contains(absent), "{absent} in {footer}");
    }
    key(&mut app, KeyCode::Char('?'));
    let help = frame_lines(&mut app, 120, 60).join("\n");
    for shown in [
        "[/]",
        "Home/End",
        "the previous / next mark",
        "FROZEN",
        "unknown",
    ] {
        assert!(help.contains(shown), "{shown} missing from {help}");
    }
    for absent in ["space ", "c / r", "l / h", "p / D", "move the focus"] {
        assert!(!help.contains(absent), "{absent} in {help}");
    }
    key(&mut app, KeyCode::Esc);
    app.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.ui.quit, "Ctrl-C quits a replay");
}

/// A copy of a recorded run with `sql` run on it.
fn tampered(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let db = dir.join(name);
    record_lesson("lease-expiry", &db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(sql).unwrap();
    conn.close().unwrap();
    db
}

#[test]
fn a_hand_edited_history_is_refused_in_one_line_naming_the_file_and_the_row() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sql, why) in [
        (
            "negative.db",
            "UPDATE LeaseEvents SET Seq = -5 WHERE Kind = 'Finalized'",
            "row Seq -5: Seq is not above 0",
        ),
        (
            "unseeded.db",
            "DELETE FROM LeaseEvents WHERE Kind = 'Seeded'",
            "not with its seeding",
        ),
        (
            "ghost.db",
            "UPDATE LeaseEvents SET MessageId = 42, PaymentKey = 'PAY-042'
              WHERE Seq = (SELECT MIN(Seq) FROM LeaseEvents WHERE Kind = 'Claimed')",
            "a Claimed of message 42, which was never seeded or added",
        ),
        (
            "forever.db",
            "UPDATE LeaseEvents SET AtUtc = 9223372036854775807 WHERE Kind = 'Claimed'",
            "AtUtc 9223372036854775807 is outside",
        ),
        (
            "huge.db",
            "UPDATE LeaseEvents SET Detail = '999999999999' WHERE Kind = 'Seeded'",
            "not a number of payments in 0-1000000",
        ),
        (
            "escape.db",
            "UPDATE LeaseEvents SET Worker = 'Worker-' || char(27) || '[2JA' WHERE Seq = 3",
            "Worker holds a control character",
        ),
        (
            "text.db",
            "UPDATE LeaseEvents SET AtUtc = 'noon' WHERE Seq = 3",
            "row Seq 3: AtUtc is not a whole number",
        ),
        (
            "answer.db",
            "UPDATE LeaseEvents SET Detail = 'Maybe' WHERE Kind = 'Finalized'",
            "neither Paid nor Failed",
        ),
        (
            "unclaimed.db",
            "UPDATE LeaseEvents SET LeaseVersion = 9 WHERE Kind = 'Checked'",
            "a Checked under lease v9 of message 1, which nobody claimed",
        ),
        (
            "stranger.db",
            "UPDATE LeaseEvents SET Worker = 'Worker-C' WHERE Kind = 'Finalized'",
            "a Finalized by Worker-C under lease v2 of message 1, which Worker-B claimed",
        ),
        (
            "skipped.db",
            "UPDATE LeaseEvents SET LeaseVersion = 7 WHERE Seq = 3",
            "under lease version 7, where the next is 1",
        ),
        (
            "early.db",
            "UPDATE LeaseEvents SET AtUtc = AtUtc - 100000 WHERE Kind = 'Checked'",
            "is before the seeding's",
        ),
        (
            "engine.db",
            "UPDATE LeaseEvents SET Worker = 'engine' WHERE Kind = 'Crashed'",
            "a Crashed by the engine, which only workers write",
        ),
        (
            "mute.db",
            "UPDATE LeaseEvents SET Detail = NULL WHERE Kind = 'Crashed'",
            "a Crashed that says nothing of how",
        ),
        (
            "reseeded.db",
            "INSERT INTO LeaseEvents (AtUtc, Worker, Kind, Detail)
             SELECT AtUtc, 'engine', 'Seeded', '300' FROM LeaseEvents WHERE Seq = 1",
            "a second seeding",
        ),
    ] {
        let db = tampered(dir.path(), name, sql);
        let out = support::leaselab_bounded(&["replay", db.to_str().unwrap()], dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
        assert!(err.contains(why), "{name}: {why} not in {err}");
        assert!(!err.contains('\u{1b}'), "{name}: {err:?}");
    }
}

/// Files beside `db` other than itself.
fn beside(db: &Path) -> Vec<String> {
    let name = db.file_name().unwrap().to_string_lossy().to_string();
    std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(&name) && *n != name)
        .collect()
}

#[test]
fn a_replay_changes_nothing_on_disk_refused_or_not_through_a_symlink_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    record_lesson("lease-expiry", &db);
    assert_eq!(
        beside(&db),
        Vec::<String>::new(),
        "the run closed its files"
    );
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    let bad = tampered(
        dir.path(),
        "bad.db",
        "DELETE FROM LeaseEvents WHERE Seq = 1",
    );
    // Not a terminal; refused; through the link: each leaves the files alone.
    for target in [&db, &link, &bad] {
        let out = leaselab(&["replay", target.to_str().unwrap()], dir.path());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    }
    assert_eq!(beside(&db), Vec::<String>::new());
    assert_eq!(beside(&bad), Vec::<String>::new());
    // The dashboard over it, opened and ended, too.
    let app = replay(&link);
    drop(app);
    assert_eq!(beside(&db), Vec::<String>::new());
}

#[test]
fn a_hand_edited_postgres_history_is_refused_too() {
    let Some(db) = pg_support::scratch("replay_hostile") else {
        return;
    };
    let url = PathBuf::from(&db.url);
    record_lesson("lease-expiry", &url);
    let dir = tempfile::tempdir().unwrap();
    for (sql, why) in [
        (
            "UPDATE LeaseEvents SET Detail = '999999999999' WHERE Kind = 'Seeded'",
            "not a number of payments",
        ),
        (
            "UPDATE LeaseEvents SET Detail = '1' WHERE Kind = 'Seeded';
             UPDATE LeaseEvents SET MessageId = 7, PaymentKey = 'PAY-007' WHERE Kind = 'Claimed'",
            "which was never seeded or added",
        ),
        (
            "INSERT INTO LeaseEvents (Seq, AtUtc, Worker, Kind, MessageId, PaymentKey)
               OVERRIDING SYSTEM VALUE VALUES (-5, 0, 'Worker-A', 'Finalized', 1, 'PAY-001')",
            "row Seq -5",
        ),
    ] {
        db.client().batch_execute(sql).unwrap();
        let out = support::leaselab_bounded(&["replay", &db.url], dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(why), "{why} not in {err}");
        // Put the recording back for the next case.
        db.client()
            .batch_execute("TRUNCATE LeaseEvents, OutboxMessages, Payments CASCADE")
            .unwrap();
        record_lesson("lease-expiry", &url);
    }
}

/// A transaction open in another database of the same server cannot write this one's events:
/// it does not hold a replay back. One open in this database does.
#[test]
fn a_postgres_replay_waits_only_for_transactions_of_its_own_database() {
    let Some(db) = pg_support::scratch("replay_own") else {
        return;
    };
    let Some(other) = pg_support::scratch("replay_other") else {
        return;
    };
    let url = PathBuf::from(&db.url);
    record_lesson("lease-expiry", &url);
    let mut elsewhere = other.client();
    let mut open = elsewhere.transaction().unwrap();
    open.query_one("SELECT pg_current_xact_id()", &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recording = leaselab::ui::app::Recording::load(&Db::Postgres(db.url.clone()));
    assert!(recording.is_ok(), "{:?}", recording.err());
    let mut here = db.client();
    let mut mine = here.transaction().unwrap();
    mine.query_one("SELECT pg_current_xact_id()", &[]).unwrap();
    let out = leaselab(&["replay", &db.url], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("held back by an open transaction"));
    mine.rollback().unwrap();
    open.rollback().unwrap();
}

/// A failed attempt gives its message back (Pending after its backoff, or the dead
/// letter): the worker holds nothing after it, as its row says, and another worker's later
/// claim is not a lease taken from it.
#[test]
fn a_worker_whose_attempt_failed_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("poison.db");
    record_lesson("poison-message", &db);
    let mut app = replay(&db);
    // Rows 1-6: the seeding, the settings, and each worker's claim and failed attempt.
    for _ in 0..5 {
        key(&mut app, KeyCode::Right);
    }
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert_eq!(app.snapshot().replay.clone().unwrap().position, 6);
    assert_eq!(
        worker_state(&app, "Worker-A"),
        WorkerState::Idle,
        "{screen}"
    );
    assert_eq!(
        worker_state(&app, "Worker-B"),
        WorkerState::Idle,
        "{screen}"
    );
    // The end: Worker-B dead-lettered PAY-002, which Worker-A took after its redrive.
    key(&mut app, KeyCode::End);
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert_eq!(
        worker_state(&app, "Worker-B"),
        WorkerState::Idle,
        "{screen}"
    );
    assert!(!screen.contains("taken by"), "{screen}");
}

/// Every recording the lab itself writes reads back: each built-in lesson, a saved
/// counterexample of every explorer mode, and runs with crashes, restarts, pauses, clock
/// jumps, retries and dead letters. The checks that refuse a hand-edited history refuse
/// nothing a leaselab wrote.
#[test]
fn every_recording_the_lab_writes_is_accepted_whole() {
    let dir = tempfile::tempdir().unwrap();
    let accept = |db: &Path, what: &str| {
        let r = leaselab::ui::app::Recording::load(&Db::parse(db));
        assert!(
            r.is_ok(),
            "{what}: {}",
            r.err().map(|e| e.to_string()).unwrap_or_default()
        );
    };
    for b in leaselab::lesson::BUILT_INS {
        let db = dir.path().join(format!("{}.db", b.name));
        record_lesson(b.name, &db);
        accept(&db, b.name);
    }
    for mode in ["no-leasing", "owner-guard", "fencing-token"] {
        let toml = dir.path().join(format!("{mode}.toml"));
        let args = [
            "explore",
            "--workers",
            "2",
            "--messages",
            "1",
            "--mode",
            mode,
        ];
        let save = ["--save-lesson", toml.to_str().unwrap()];
        let out = leaselab(&[&args[..], &save[..]].concat(), dir.path());
        assert!(toml.exists(), "{mode}: {}", stderr(&out));
        let db = dir.path().join(format!("{mode}.db"));
        let check = [
            "lesson",
            toml.to_str().unwrap(),
            "--check",
            "--db",
            db.to_str().unwrap(),
        ];
        let out = leaselab(&check, dir.path());
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", stderr(&out));
        accept(&db, mode);
    }
    for (name, run) in [
        (
            "soak.db",
            &[
                "run",
                "soak",
                "--workers",
                "4",
                "--messages",
                "200",
                "--seed",
                "7",
            ][..],
        ),
        (
            "retries.db",
            &[
                "run",
                "outbox-leasing",
                "--fail-first",
                "PAY-002=2",
                "--fail-always",
                "PAY-005",
            ][..],
        ),
        ("naive.db", &["run", "competing-no-claim"][..]),
        (
            "batch.db",
            &[
                "run",
                "outbox-leasing",
                "--workers",
                "3",
                "--messages",
                "50",
            ][..],
        ),
    ] {
        let db = dir.path().join(name);
        let out = leaselab(
            &[run, &["--db", db.to_str().unwrap()][..]].concat(),
            dir.path(),
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name}: {}",
            stderr(&out)
        );
        accept(&db, name);
    }
}

/// slow-job's first half checks PAY-001 twice at a provider that does the work twice: the
/// live lesson ends on that failed check, and so does its replay, from the calls' own rows
/// (each says whether it did new work). With the idempotent provider, the repeat did none.
#[test]
fn a_replay_judges_side_effects_from_the_calls_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("slow.db");
    record_lesson("slow-job", &db);
    let mut app = replay(&db);
    key(&mut app, KeyCode::End);
    let screen = frame_lines(&mut app, 160, 50).join("\n");
    let h = app
        .snapshot()
        .history
        .clone()
        .expect("a verdict at the end");
    assert!(h.duplicate_side_effects.count >= 1, "{h:?}\n{screen}");
    let checks = &app.snapshot().checks;
    assert!(checks.iter().any(|c| !c.passed), "{checks:?}");
    // The zombie lesson ends with the idempotent provider: its repeated call is recorded as a
    // replay of the first answer, and its replay counts one side effect for that payment.
    let z = dir.path().join("z.db");
    record_lesson("zombie-worker", &z);
    let rows = leaselab::engine::store::Store::open_read_only(&z)
        .unwrap()
        .all_events()
        .unwrap();
    assert!(
        rows.iter()
            .any(|r| r.detail.as_deref() == Some("Paid replayed")),
        "{rows:#?}"
    );
}

/// A worker whose freeze ended is shown at work on what it believed it held (its next
/// write says what became of it), not as a worker nothing is known of.
#[test]
fn a_woken_zombie_is_at_work_not_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("z.db");
    record_lesson("zombie-worker", &db);
    let recording = leaselab::ui::app::Recording::load(&Db::parse(&db)).unwrap();
    let woke = recording
        .rows
        .iter()
        .position(|r| r.kind == leaselab::engine::store::LeaseEventKind::Resumed)
        .expect("a Resumed row")
        + 1;
    let mut app = replay(&db);
    app.replay_to(woke);
    frame_lines(&mut app, 120, 40);
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Processing);
    app.replay_to(woke + 1);
    frame_lines(&mut app, 120, 40);
    assert_ne!(worker_state(&app, "Worker-A"), WorkerState::Unknown);
}

/// Free play's `z` is recorded as a lesson's pause and resume are: a replay of the
/// database shows the worker FROZEN from the freeze to the wake, holding its lease through
/// the takeover, and its finalize refused after it.
#[test]
fn a_freeze_by_z_in_free_play_replays_as_it_happened() {
    use leaselab::engine::store::LeaseEventKind;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("free.db");
    let mut live = App::new(
        leaselab::ui::DashboardOptions {
            messages: Some(1),
            db: Some(db.clone()),
            ..Default::default()
        },
        Theme::plain(),
    )
    .unwrap();
    let press = |app: &mut App, c: char| key(app, KeyCode::Char(c));
    for c in ['n', 'z', 'A', 'a', 'n', 'n', 'n', 'z'] {
        press(&mut live, c);
    }
    // Worker-A's provider call and finalize, in turn with Worker-B's empty claims.
    for _ in 0..4 {
        if live.ledger.rejected_finalizes == 0 {
            press(&mut live, 'n');
        }
    }
    assert_eq!(
        (live.ledger.rejected_finalizes, live.ledger.finalized),
        (1, 1)
    );
    drop(live);
    let recording = leaselab::ui::app::Recording::load(&Db::parse(&db)).unwrap();
    let at = |kind: LeaseEventKind| {
        let i = recording.rows.iter().position(|r| r.kind == kind);
        i.unwrap_or_else(|| panic!("no {kind:?} row")) + 1
    };
    let (froze, woke) = (at(LeaseEventKind::Paused), at(LeaseEventKind::Resumed));
    assert!(froze < woke);
    let froze_row = &recording.rows[froze - 1];
    assert_eq!(froze_row.worker, "Worker-A");
    assert_eq!(froze_row.detail.as_deref(), Some("z key"));
    assert_eq!(
        (froze_row.key.as_deref(), froze_row.version),
        (Some("PAY-001"), Some(1))
    );
    let mut app = replay(&db);
    app.replay_to(froze);
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert!(screen.contains("FROZEN (z key)"), "{screen}");
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Paused);
    // Through the takeover it is frozen; woken, it is at work on what it believed.
    app.replay_to(woke - 1);
    frame_lines(&mut app, 120, 40);
    assert_eq!(app.ledger.reclaims, 1);
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Paused);
    app.replay_to(woke);
    frame_lines(&mut app, 120, 40);
    assert_eq!(worker_state(&app, "Worker-A"), WorkerState::Processing);
    app.replay_to(recording.rows.len());
    let screen = frame_lines(&mut app, 120, 40).join("\n");
    assert_eq!(app.ledger.rejected_finalizes, 1, "{screen}");
    assert!(!screen.contains("CRASHED"), "{screen}");
}
