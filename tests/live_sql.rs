//! `leaselab --sql FILE`: the dashboard's workers run a student's statements, and the SQL
//! pane shows them, the file's own text with its parameters bound, from the start.

mod support;

use std::sync::Arc;

use leaselab::engine::statements::ShownStatement;
use leaselab::engine::student::Exercise;
use leaselab::exercise::built_in;
use leaselab::ui::app::App;
use leaselab::ui::render::sql::one_line;
use leaselab::ui::DashboardOptions;
use support::{app, frame, frame_lines, leaselab, press, stderr};

fn starter(name: &str) -> Arc<Exercise> {
    Arc::new(built_in(name).unwrap().starter())
}

/// Free play with the workers running `exercise`'s statements.
fn live(exercise: Arc<Exercise>) -> App {
    app(DashboardOptions {
        messages: Some(3),
        sql: Some(exercise),
        ..DashboardOptions::default()
    })
}

fn last(app: &App, slot: usize) -> Vec<ShownStatement> {
    app.sql.last[slot]
        .clone()
        .expect("a statement")
        .shown
        .statements
}

fn screen(app: &mut App, width: u16, height: u16) -> String {
    frame_lines(app, width, height)
        .iter()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' ').to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_pane_is_on_and_shows_the_students_claim_as_the_file_has_it() {
    let exercise = starter("one-owner");
    let mut app = live(exercise.clone());
    assert!(app.ui.sql, "--sql opens with the pane on");
    // Each statement outside a transaction is a step of its own, as explore --sql has it.
    press(&mut app, 'n'); // Worker-A runs the claim's SELECT
    let select = last(&app, 0);
    assert_eq!(select.len(), 1, "{select:?}");
    assert_eq!(select[0].sql, exercise.claim.statements[0].sql);
    assert!(app.engine.store().messages(0, 1).unwrap()[0]
        .locked_by
        .is_none());
    press(&mut app, 'n'); // Worker-B runs its SELECT
    press(&mut app, 'n'); // Worker-A runs the UPDATE: its claim is done
    let shown = last(&app, 0);
    let file: Vec<&str> = exercise
        .claim
        .statements
        .iter()
        .map(|s| s.sql.as_str())
        .collect();
    let ran: Vec<&str> = shown.iter().map(|s| s.sql.as_ref()).collect();
    assert_eq!(ran, file, "the file's text, every statement, in order");
    let params = |st: &ShownStatement| -> Vec<(String, String)> {
        st.params
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect()
    };
    assert_eq!(
        params(&shown[1]),
        [
            (":worker", "'Worker-A'"),
            (
                ":lease_until",
                &(app.engine.clock.now() + app.lease_ms()).to_string()
            ),
            (":id", "1"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    assert!(
        shown[0]
            .effect
            .contains("returned Id = 1, LeaseVersion = 0"),
        "{shown:?}"
    );
    assert!(
        shown[1]
            .effect
            .contains("returned Id = 1, LeaseVersion = 1"),
        "{shown:?}"
    );
    let text = screen(&mut app, 140, 44);
    for st in &shown {
        assert!(text.contains(&one_line(&st.sql)), "{text}");
    }
    assert!(text.contains(":worker = 'Worker-A'"), "{text}");
    // The table reads what the student's claim wrote: PAY-001 is held by Worker-A.
    let row = &app.engine.store().messages(0, 1).unwrap()[0];
    assert_eq!(row.locked_by.as_deref(), Some("Worker-A"));
    assert_eq!(row.lease_version, 1);
}

/// The naive claim's race, stepped live: both SELECTs read PAY-001, then both UPDATEs
/// take it, and the second owner's token is 2 while the first still holds a live lease.
#[test]
fn the_students_pane_in_free_play_as_a_class_sees_it() {
    let mut app = live(starter("one-owner"));
    for _ in 0..4 {
        press(&mut app, 'n'); // A's SELECT, B's SELECT, A's UPDATE, B's UPDATE
    }
    let b = last(&app, 1);
    assert_eq!(
        b[1].effect, "line 11: returned Id = 1, LeaseVersion = 2",
        "{b:?}"
    );
    let row = &app.engine.store().messages(0, 1).unwrap()[0];
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    // No takeover: Worker-A's lease still held, and the log says so.
    assert!(
        app.log
            .contains("took PAY-001 while Worker-A's lease held, until 09:00:03.000 (lease v2)"),
        "{:?}",
        app.log.lines()
    );
    assert!(!app.log.contains("RECLAIMED"), "{:?}", app.log.lines());
    assert_eq!((app.ledger.reclaims, app.ledger.overlaps), (0, 1));
    let t = frame(&mut app, 120, 40);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn a_crashed_workers_lease_taken_over_by_the_students_claim_and_finalized() {
    // The model answer claims in one transaction: one step.
    let mut app = live(Arc::new(built_in("one-owner").unwrap().model()));
    press(&mut app, 'n'); // A claims PAY-001
    press(&mut app, 'c'); // A crashes, holding it
    press(&mut app, 'A'); // a lease later, and a little more: A's lease has run out
    press(&mut app, 'a');
    for _ in 0..6 {
        press(&mut app, 'n'); // B: claims, calls the provider, finalizes
    }
    let rows = app.engine.store().messages(0, 3).unwrap();
    let taken = &rows[0];
    assert_eq!(taken.key, "PAY-001");
    assert_eq!(taken.locked_by.as_deref(), Some("Worker-B"), "{rows:?}");
    assert_eq!(
        taken.lease_version, 2,
        "the student's claim bumped the token"
    );
    assert_eq!(app.ledger.results_written(), 2, "B finalized both");
    // A takeover after the lease ran out is a reclaim, in the log as in the ledger.
    assert!(
        app.log.contains("RECLAIMED PAY-001"),
        "{:?}",
        app.log.lines()
    );
    assert!(!app.log.contains("took PAY-001"), "{:?}", app.log.lines());
    assert_eq!((app.ledger.reclaims, app.ledger.overlaps), (1, 0));
    let b = last(&app, 1);
    assert!(b[0].sql.contains("LeaseVersion = :version"), "{b:?}");
    assert!(b[0].effect.ends_with(": 1 row changed"), "{b:?}");
}

#[test]
fn what_the_exercise_does_not_define_is_said_and_nothing_breaks() {
    let mut app = live(starter("one-owner"));
    for (key, words) in [
        ('l', "runs its own claim, so leasing stays on"),
        ('h', "defines no [heartbeat]"),
        ('D', "nothing to redrive"),
    ] {
        press(&mut app, key);
        let notice = app.ui.notice.clone().unwrap_or_default();
        assert!(notice.contains(words), "{key}: {notice}");
        assert!(notice.contains("one-owner"), "{notice}");
        if key == 'l' {
            // Short enough to be read whole in the strip of an 80x24 screen.
            let strip = support::frame_lines(&mut app, 80, 24).remove(1);
            assert!(strip.contains(words), "{strip}");
        }
    }
    assert!(app.leasing(), "leasing stays on");
    assert!(
        !app.engine.settings.heartbeats(),
        "no [heartbeat]: heartbeats off"
    );
    press(&mut app, 'n');
    assert!(app.sql.last[0].is_some(), "the workers still run");
    // An exercise with a heartbeat may have them switched.
    let mut beats = live(starter("heartbeat"));
    assert!(beats.engine.settings.heartbeats());
    press(&mut beats, 'h');
    assert!(!beats.engine.settings.heartbeats());
}

#[test]
fn a_bad_file_is_one_line_before_the_terminal_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let text = built_in("one-owner").unwrap().start.replace(
        "SELECT Id, LeaseVersion",
        "SELECT Id, LeaseVersion FROM sqlite_master, ",
    );
    std::fs::write(&bad, text).unwrap();
    let out = leaselab(&["--sql", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("{}:10:", bad.display())), "{err}");
    assert!(out.stdout.is_empty(), "the terminal untouched");
    let missing = leaselab(&["--sql", "nowhere.toml"], dir.path());
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(stderr(&missing).lines().count(), 1);
}

#[test]
fn the_students_sql_on_postgresql_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, built_in("one-owner").unwrap().solution).unwrap();
    let out = leaselab(
        &[
            "--sql",
            file.to_str().unwrap(),
            "--db",
            "postgres://nobody@localhost/x",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("runs on SQLite"), "{err}");
    let fail = leaselab(
        &["--sql", file.to_str().unwrap(), "--fail-always", "PAY-001"],
        dir.path(),
    );
    assert_eq!(fail.status.code(), Some(2));
    assert!(
        stderr(&fail).contains("no failed attempt"),
        "{}",
        stderr(&fail)
    );
}

/// A statement that goes wrong only as it runs (a claim returning two rows) stops that
/// worker with the student's words in the log; the dashboard and the other worker go on.
#[test]
fn a_statement_that_fails_as_it_runs_stops_its_worker_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.toml");
    let text = built_in("one-owner")
        .unwrap()
        .solution
        .replace("LIMIT 1", "LIMIT 2");
    std::fs::write(&path, text).unwrap();
    let exercise = leaselab::exercise::load_file(&path).expect("it loads: it fails as it runs");
    let mut app = live(Arc::new(exercise));
    press(&mut app, 'n'); // Worker-A's claim returns two rows
                          // The worker's thread says it stopped as it ends, after the step it answered: wait for
                          // that event (bounded), as the dashboard's next refresh would take it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.ui.notice.is_none() && std::time::Instant::now() < deadline {
        if app.absorb_events() == 0 {
            std::thread::yield_now();
        }
    }
    let notice = app.ui.notice.clone().unwrap_or_default();
    assert!(
        notice.starts_with("Worker-A stopped: ") && notice.contains("returned 2 rows"),
        "{notice}"
    );
    press(&mut app, 'n');
    let text = screen(&mut app, 160, 50);
    assert!(text.contains("returned 2 rows"), "{text}");
    assert!(app.engine.worker_states().len() == 2);
    // Long after the log's line, Worker-A's row still says why it stopped.
    for _ in 0..30 {
        press(&mut app, 'n');
    }
    let lines = frame_lines(&mut app, 160, 50);
    let row = lines
        .iter()
        .find(|l| l.contains("Worker-A") && l.contains("stopped"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        row.contains("stopped: the claim's statement 1 returned 2 rows"),
        "{row}"
    );
}

/// A replay of a database a `--sql` run wrote: its rows do not keep the student's
/// statements, so the pane says whose they were and that they were not recorded, rather
/// than showing the lab's own claim as if it had run.
#[test]
fn a_replay_of_a_students_run_does_not_show_the_labs_statements_as_if_they_ran() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("class.db");
    let mut app = app(DashboardOptions {
        messages: Some(3),
        db: Some(path.clone()),
        sql: Some(Arc::new(built_in("one-owner").unwrap().model())),
        ..DashboardOptions::default()
    });
    for _ in 0..3 {
        press(&mut app, 'n'); // A claims, calls the provider, finalizes
    }
    assert!(
        !last(&app, 0).is_empty(),
        "live, the student's statements show"
    );
    drop(app);
    let mut replay = App::replay(
        leaselab::engine::backend::Db::Sqlite(path),
        leaselab::ui::Theme::plain(),
    )
    .expect("replay");
    press(&mut replay, 's');
    press(&mut replay, 'G');
    let shown = replay.sql.last[0].clone().expect("Worker-A's last write");
    assert!(shown.shown.statements.is_empty(), "{shown:?}");
    let text = screen(&mut replay, 120, 40);
    assert!(text.contains("a student's exercise ran here"), "{text}");
    assert!(!text.contains("UPDATE OutboxMessages"), "{text}");
}

/// `z` works on a student's workers too: the frozen worker's finalize, after another took
/// its message over, is refused by the student's own fencing token.
#[test]
fn z_freezes_a_worker_running_the_students_statements() {
    let mut app = live(Arc::new(built_in("stale-finalize").unwrap().model()));
    press(&mut app, 'n'); // A claims PAY-001
    press(&mut app, 'z'); // and freezes holding it
    assert!(app
        .ui
        .notice
        .clone()
        .unwrap_or_default()
        .contains("FROZEN holding PAY-001"));
    press(&mut app, 'A'); // its lease runs out
    press(&mut app, 'a');
    for _ in 0..3 {
        press(&mut app, 'n'); // B: takes PAY-001 over, calls the provider, finalizes
    }
    let rows = app.engine.store().messages(0, 3).unwrap();
    assert_eq!(rows[0].locked_by.as_deref(), Some("Worker-B"), "{rows:?}");
    assert_eq!(app.ledger.results_written(), 1);
    press(&mut app, 'z'); // A wakes, believing it holds lease v1
    for _ in 0..6 {
        if app.ledger.rejected_finalizes == 0 {
            press(&mut app, 'n');
        }
    }
    assert_eq!(app.ledger.rejected_finalizes, 1);
    let a = last(&app, 0);
    assert!(a[0].sql.contains("LeaseVersion = :version"), "{a:?}");
    assert!(a[0].effect.ends_with("no row changed"), "{a:?}");
}

#[test]
fn q_ends_the_dashboard_at_once_while_a_worker_is_inside_a_students_statement() {
    let dir = tempfile::tempdir().unwrap();
    let model = built_in("takeover").unwrap().solution;
    let select = "SELECT Id FROM OutboxMessages WHERE ";
    // A LIKE that once took minutes in one step, which nothing could interrupt; then a
    // statement that may run ten minutes, which the quit interrupts.
    let like = model.replacen(
        select,
        &format!("{select}hex(zeroblob(500000)) NOT LIKE '%' || hex(zeroblob(20000)) || 'x%' AND "),
        1,
    );
    for (name, text) in [
        ("like.toml", like),
        ("endless.toml", support::endless_claim()),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let (var, value) = support::LONG_STATEMENTS;
        let mut d = support::Dashboard::spawn(
            support::ROWS,
            support::COLS,
            &["--sql", name],
            dir.path(),
            &[(var, std::path::Path::new(value))],
        );
        d.wait_for_text("space runs");
        d.press(" ");
        if name == "like.toml" {
            // The worker is stopped, the value named: the LIKE never ran.
            d.wait_for_text("4096 bytes");
        } else {
            // A worker is inside the statement: the dashboard alone uses little.
            support::wait_until_busy(d.pid, std::time::Duration::from_millis(300));
        }
        let start = std::time::Instant::now();
        let (status, _) = d.quit();
        let took = start.elapsed();
        assert!(status.success(), "{name}: {status:?}");
        assert!(
            took < std::time::Duration::from_secs(10),
            "{name}: {took:?}"
        );
    }
}

/// The one-owner model claim with `transaction = "deferred"`: it reads, then asks for the
/// write lock at its UPDATE, which SQLite refuses at once (no busy handler) when another
/// connection holds the lock or wrote since the read.
fn deferred_claim(dir: &std::path::Path) -> Arc<Exercise> {
    let path = dir.join("deferred.toml");
    let text = built_in("one-owner").unwrap().solution.replacen(
        "transaction = \"immediate\"",
        "transaction = \"deferred\"",
        1,
    );
    assert!(
        text.contains("[claim]\ntransaction = \"deferred\""),
        "{text}"
    );
    std::fs::write(&path, text).unwrap();
    Arc::new(leaselab::exercise::load_file(&path).unwrap())
}

/// Live, two running workers with a deferred claim, while another connection holds the
/// write lock: each claim is refused it at once, is rolled back and tried again after a
/// backoff on the scenario clock, as a real worker would, and once the lock is free every
/// message is done, with no worker stopped. The log says what happened.
#[test]
fn a_deferred_claim_refused_the_write_lock_is_tried_again_and_every_message_is_done() {
    use leaselab::engine::events::EventKind;
    use leaselab::engine::ledger::Ledger;
    use leaselab::engine::worker::WorkerState;
    use leaselab::engine::{Engine, EngineConfig};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(
        EngineConfig {
            workers: 2,
            messages: 4,
            lease_ms: 60_000,
            process_ms: 0,
            idle_ms: 10,
            exercise: Some(deferred_claim(dir.path())),
            ..EngineConfig::default()
        },
        true,
    )
    .unwrap();
    let other = rusqlite::Connection::open(&engine.db_path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    engine.resume_all();
    let mut ledger = Ledger::new();
    let mut log: Vec<String> = Vec::new();
    /// The next event, folded and logged; a worker that stops fails the test.
    fn take(engine: &Engine, ledger: &mut Ledger, log: &mut Vec<String>, wait: Duration) -> bool {
        let Ok(e) = engine.events().recv_timeout(wait) else {
            return false;
        };
        ledger.apply(&e);
        assert!(
            !matches!(e.kind, EventKind::Failed { .. }),
            "{} stopped: {}\n{log:#?}",
            e.actor,
            e.describe()
        );
        log.push(format!("{} {}", e.actor, e.describe()));
        true
    }
    // Both workers' claims meet the held lock; neither stops.
    let busy = |log: &[String], who: &str| {
        log.iter()
            .any(|l| l.starts_with(who) && l.contains(" BUSY: "))
    };
    while !(busy(&log, "Worker-A") && busy(&log, "Worker-B")) {
        assert!(
            take(&engine, &mut ledger, &mut log, Duration::from_secs(30)),
            "{log:#?}"
        );
    }
    let first = log.iter().find(|l| l.contains(" BUSY: ")).unwrap();
    assert!(
        first.ends_with(
            "BUSY: the claim's transaction met SQLITE_BUSY when it asked for the write lock: \
             another connection held it, and SQLite refuses a transaction that has read rather \
             than let it wait; rolled back, retrying in 10 ms (try 2 of at most 10)"
        ),
        "{first}"
    );
    other.execute_batch("ROLLBACK").unwrap();
    // The clock moves on while the workers wait for it; every message gets done.
    let deadline = Instant::now() + Duration::from_secs(60);
    while ledger.unique_processed() < 4 {
        assert!(Instant::now() < deadline, "{log:#?}");
        if !take(&engine, &mut ledger, &mut log, Duration::from_millis(20)) {
            engine.advance(10);
        }
    }
    assert_eq!(ledger.processed_more_than_once(), 0, "{log:#?}");
    assert!(
        !engine.worker_states().contains(&WorkerState::Stopped),
        "{:?}",
        engine.worker_states()
    );
    let claimed = log.iter().filter(|l| l.contains(" CLAIMED ")).count();
    assert_eq!(claimed, 4, "{log:#?}");
}

/// A heartbeat and a finalize that each read, then write, in a deferred transaction, run by
/// a stepped worker while another connection holds the write lock: each is refused it, says
/// so, is rolled back, and works when tried again once the lock is free.
#[test]
fn a_deferred_heartbeat_and_finalize_refused_the_write_lock_are_tried_again() {
    use leaselab::engine::{Engine, EngineConfig};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deferred.toml");
    let read_first = |op: &str| {
        (
            format!("[{op}]\ntransaction = \"immediate\"\nstatements = [\"UPDATE"),
            format!(
                "[{op}]\ntransaction = \"deferred\"\nstatements = [\"SELECT Id FROM \
                 OutboxMessages WHERE Id = :id AND LeaseVersion = :version\", \"UPDATE"
            ),
        )
    };
    let mut text = built_in("heartbeat").unwrap().solution.to_string();
    for op in ["finalize", "heartbeat"] {
        let (from, to) = read_first(op);
        assert!(text.contains(&from), "{text}");
        text = text.replace(&from, &to);
    }
    std::fs::write(&path, text).unwrap();
    let exercise = Arc::new(leaselab::exercise::load_file(&path).unwrap());
    let engine = Engine::start(
        EngineConfig {
            workers: 1,
            messages: 1,
            lease_ms: 3_000,
            process_ms: 0,
            exercise: Some(exercise),
            ..EngineConfig::default()
        },
        true,
    )
    .unwrap();
    let other = rusqlite::Connection::open(&engine.db_path).unwrap();
    let locked = |f: &dyn Fn() -> bool| {
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let answered = f();
        other.execute_batch("ROLLBACK").unwrap();
        answered
    };
    assert!(engine.step(0), "the claim");
    assert!(locked(&|| engine.heartbeat(0)), "a heartbeat refused");
    assert!(engine.heartbeat(0), "the heartbeat again");
    assert!(engine.step(0), "the provider call");
    assert!(locked(&|| engine.step(0)), "a finalize refused");
    assert!(engine.step(0), "the finalize again");
    let lines: Vec<String> = engine.events().try_iter().map(|e| e.describe()).collect();
    let refused = |op: &str| {
        format!(
            "BUSY: the {op}'s transaction met SQLITE_BUSY when it asked for the write lock: \
             another connection held it, and SQLite refuses a transaction that has read \
             rather than let it wait; rolled back"
        )
    };
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {lines:#?}"))
    };
    let beat_refused = at(&refused("heartbeat"));
    assert!(
        lines[beat_refused].ends_with(", retrying in 10 ms (try 2 of at most 10)"),
        "{lines:#?}"
    );
    assert!(at("heartbeat PAY-001 until") > beat_refused, "{lines:#?}");
    let finalize_refused = at(&refused("finalize"));
    assert!(
        lines[finalize_refused].ends_with("; its next step tries again (try 2 of at most 10)"),
        "{lines:#?}"
    );
    assert!(
        at("FINALIZED PAY-001 Paid") > finalize_refused,
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("FAILED")), "{lines:#?}");
}
