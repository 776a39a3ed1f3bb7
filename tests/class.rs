//! `leaselab class`: a teacher's rounds, hold and go, the scoreboard and the join command,
//! against real worker processes on a real PostgreSQL server (a scratch database of
//! `LEASELAB_PG_URL`; skipped without one outside CI). Every wait reads the workers' lines
//! or the database with a deadline; nothing sleeps to synchronise.

#[allow(dead_code)]
mod class_support;
#[allow(dead_code)]
mod pg_server;
#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::Path;
use std::process::{Command, Output};

use class_support::scoreboard;
use pg_server::PgServer;
use support::processes::{wait_for, WorkerProcess};

/// `leaselab ARGS`, run to its end.
fn leaselab(args: &[&str]) -> Output {
    support::leaselab(args, Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// `leaselab ARGS`, which must succeed: its standard output.
fn ok(args: &[&str]) -> String {
    let o = leaselab(args);
    assert!(
        o.status.success(),
        "leaselab {args:?}: {}",
        support::stderr(&o)
    );
    support::stdout(&o)
}

/// A student's `leaselab worker`: a lease of 20 s, 20 ms a payment, then `extra`.
fn laptop(url: &str, name: &str, extra: &[&str]) -> WorkerProcess {
    let args: Vec<&str> = ["--lease-ms", "20000", "--process-ms", "20"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    WorkerProcess::start(url, name, &args)
}

fn count(db: &pg_support::ScratchDb, sql: &str) -> i64 {
    class_support::count(&db.url, sql)
}

fn drained(db: &pg_support::ScratchDb, n: i64) -> Option<()> {
    class_support::drained(&db.url, n)
}

fn counted(db: &pg_support::ScratchDb, round: Option<i64>) -> Vec<serde_json::Value> {
    class_support::counted(&db.url, round)
}

#[test]
fn a_class_runs_held_rounds_and_its_scoreboard_is_the_events_table() {
    let Some(db) = pg_support::scratch("class") else {
        return;
    };
    let url = db.url.as_str();
    assert!(ok(&[
        "class",
        "new-round",
        "--db",
        url,
        "--messages",
        "20",
        "--hold"
    ])
    .starts_with("round 1: 20 payments (PAY-001 to PAY-020), held"));
    let laptops: Vec<WorkerProcess> = ["ada", "李雷", "sam"]
        .iter()
        .map(|n| laptop(url, n, &[]))
        .collect();
    wait_for("every worker to say it is held", || {
        laptops
            .iter()
            .all(|l| l.count("held by the teacher") == 1)
            .then_some(())
    });
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Claimed'"
        ),
        0
    );
    ok(&["class", "go", "--db", url]);
    wait_for("round 1 to be processed", || drained(&db, 20));
    assert!(laptops.iter().all(|l| l.count("go: the teacher") == 1));
    // Round 2, with a worker without leases beside them: unguarded writes and duplicates.
    assert!(ok(&["class", "new-round", "--db", url, "--messages", "30"])
        .starts_with("round 2: 30 payments (PAY-021 to PAY-050)"));
    let naive = laptop(url, "mallory", &["--no-leasing"]);
    wait_for("round 2 to be processed", || drained(&db, 50));
    // Its loads may still mark what it read: it is stopped before anything is counted.
    drop(naive);
    // Round 1's events are still there, and its scoreboard is its own.
    let round_1 = scoreboard(url, Some(1));
    let done_1: i64 = round_1.iter().map(|s| s["done"].as_i64().unwrap()).sum();
    assert_eq!(done_1, 20, "{round_1:?}");
    assert_eq!(round_1, counted(&db, Some(1)));
    assert_eq!(scoreboard(url, Some(2)), counted(&db, Some(2)));
    assert_eq!(scoreboard(url, None), counted(&db, None));
    // A held class claims nothing more, also from a round made after the hold.
    ok(&["class", "hold", "--db", url]);
    let claims = count(
        &db,
        "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Claimed'",
    );
    wait_for("every worker to say it is held again", || {
        laptops
            .iter()
            .all(|l| l.count("held by the teacher") == 2)
            .then_some(())
    });
    ok(&["class", "new-round", "--db", url, "--messages", "5"]);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Claimed'"
        ),
        claims
    );
    ok(&["class", "go", "--db", url]);
    wait_for("round 3 to be processed", || drained(&db, 55));
    let after = count(
        &db,
        "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Claimed'",
    );
    assert_eq!(
        after - claims,
        5,
        "only round 3's five payments were claimed after the hold"
    );
}

#[test]
fn a_round_that_does_not_exist_and_a_database_that_is_not_a_class_exit_2() {
    let Some(db) = pg_support::scratch("class_refusals") else {
        return;
    };
    let url = db.url.as_str();
    for args in [
        vec!["class", "scoreboard", "--db", url],
        vec!["class", "hold", "--db", url],
        vec!["class", "join", "--db", url],
    ] {
        let o = leaselab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(support::stderr(&o).contains("holds no leaselab tables"));
    }
    ok(&["class", "new-round", "--db", url, "--messages", "3"]);
    let o = leaselab(&["class", "scoreboard", "--db", url, "--round", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        support::stderr(&o).ends_with("has no round 2 (its rounds: 1)\n"),
        "{}",
        support::stderr(&o)
    );
    db.client()
        .batch_execute("CREATE TABLE Other (x int)")
        .unwrap();
    let o = leaselab(&["class", "go", "--db", url]);
    assert_eq!(o.status.code(), Some(2));
    assert!(support::stderr(&o).contains("an extra table other"));
}

#[test]
fn bad_class_input_is_one_line_and_exit_2() {
    for (args, says) in [
        (vec!["class", "rewind"], "unrecognized subcommand 'rewind'"),
        (
            vec![
                "class",
                "new-round",
                "--db",
                "postgres://x@h/d",
                "--messages",
                "0",
            ],
            "--messages: '0' is not a whole number in 1-10000",
        ),
        (
            vec![
                "class",
                "new-round",
                "--db",
                "postgres://x@h/d",
                "--messages",
                "ten",
            ],
            "--messages: 'ten'",
        ),
        (
            vec![
                "class",
                "scoreboard",
                "--db",
                "postgres://x@h/d",
                "--round",
                "-1",
            ],
            "--round: '-1'",
        ),
        (
            vec!["class", "hold", "--db", "class.db"],
            "`class` works on a PostgreSQL server",
        ),
        (
            vec!["class", "join", "--db", "postgres://x@h:notaport/d"],
            "cannot read the PostgreSQL URL",
        ),
    ] {
        let o = leaselab(&args);
        let err = support::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The watch of a class: the join command until the first worker joins, `B` the scoreboard
/// as `class scoreboard` counts it, `P` five payments more in the current round.
#[test]
fn the_watch_shows_the_join_command_the_scoreboard_and_adds_to_the_round() {
    let Some(db) = pg_support::scratch("class_watch") else {
        return;
    };
    let url = db.url.as_str();
    ok(&["class", "new-round", "--db", url, "--messages", "4"]);
    let mut watch = support::watcher(Path::new(url), 4);
    let screen =
        |watch: &mut leaselab::ui::app::App| support::frame_lines(watch, 200, 40).join("\n");
    let shown = screen(&mut watch);
    assert!(
        shown.contains("students join with: leaselab worker --db 'postgres://"),
        "{shown}"
    );
    assert!(
        shown.contains(":5432/") && shown.contains("--name YOUR-NAME"),
        "{shown}"
    );
    // At 80x24 the strip has room for the command's start only: a box below the table
    // shows it whole, as `class join` prints it.
    let join = ok(&["class", "join", "--db", url]);
    let command = join.lines().next().unwrap();
    let small = support::frame_lines(&mut watch, 80, 24);
    let boxed: Vec<&str> = small
        .iter()
        .skip_while(|l| !l.contains("students join with "))
        .skip(1)
        .take_while(|l| !l.starts_with('┗'))
        .map(|l| l.trim_matches('┃').trim_end())
        .collect();
    assert!(boxed.join(" ").starts_with(command), "{small:#?}");
    let ada = laptop(url, "ada", &[]);
    wait_for("the first worker to join the watch", || {
        watch.absorb_events();
        (!screen(&mut watch).contains("students join with")).then_some(())
    });
    let small = support::frame_lines(&mut watch, 80, 24).join("\n");
    assert!(!small.contains("students join with"), "{small}");
    wait_for("round 1 to be processed", || drained(&db, 4));
    drop(ada);
    // The help names both keys.
    support::press(&mut watch, '?');
    let help = screen(&mut watch);
    assert!(
        help.contains("show or hide the class's scoreboard"),
        "{help}"
    );
    assert!(
        help.contains("add five payments to the current round"),
        "{help}"
    );
    support::press(&mut watch, '?');
    support::press(&mut watch, 'B');
    let shown = screen(&mut watch);
    assert!(shown.contains("scoreboard, every round"), "{shown}");
    let want = format!("ada {:>5} {:>8} {:>5} {:>8} {:>5} {:>9}", 4, 0, 0, 0, 0, 0);
    let line = shown
        .lines()
        .find(|l| l.contains("┃ada "))
        .unwrap_or_default();
    assert!(
        line.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(&want.split_whitespace().collect::<Vec<_>>().join(" ")),
        "{shown}"
    );
    support::press(&mut watch, 'B');
    assert!(!screen(&mut watch).contains("scoreboard, every round"));
    support::press(&mut watch, 'P');
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM OutboxMessages WHERE Seeding = 1"),
        9
    );
    assert!(screen(&mut watch).contains("added 5 payments to the current round"));
}

const PASSWORD: &str = "class-of-2026";

/// `leaselab ARGS` with `PGPASSWORD` set (or removed).
fn with_password(args: &[&str], password: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(args).env_remove("PGPASSWORD");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd.output().unwrap()
}

#[test]
fn students_reach_a_server_on_tcp_with_a_password_given_in_pgpassword() {
    let Some(server) = PgServer::on_tcp_with_password(PASSWORD) else {
        return;
    };
    let url = server.url.as_str();
    assert!(url.starts_with("postgres://leaselab@127.0.0.1:") && !url.contains(PASSWORD));
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    // Without the password, or with a wrong one: refused in one line, exit 2.
    for password in [None, Some("wrong")] {
        let o = with_password(
            &["class", "new-round", "--db", url, "--messages", "6"],
            password,
        );
        let err = support::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("password"), "{err}");
        // No password given: the line says where a student gives it.
        assert_eq!(err.contains("PGPASSWORD"), password.is_none(), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let made = with_password(
        &["class", "new-round", "--db", url, "--messages", "6"],
        Some(PASSWORD),
    );
    assert!(made.status.success(), "{}", support::stderr(&made));
    let join = with_password(&["class", "join", "--db", url], Some(PASSWORD));
    let said = support::stdout(&join);
    assert!(
        said.starts_with(&format!(
            "leaselab worker --db 'postgres://leaselab@THIS-MACHINE:{port}/leaselab' --name YOUR-NAME\n"
        )),
        "{said}"
    );
    assert!(!said.contains(PASSWORD));
    // A student's worker, its password in PGPASSWORD, does the round.
    let worker = WorkerProcess::start_with(
        url,
        "ada",
        &["--process-ms", "20"],
        &[("PGPASSWORD", PASSWORD)],
    );
    let done = wait_for("the student's worker to do the round", || {
        let o = with_password(
            &["class", "scoreboard", "--db", url, "--json"],
            Some(PASSWORD),
        );
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
        let done = doc["students"][0]["done"].as_i64()?;
        (done == 6).then_some(done)
    });
    assert_eq!(done, 6);
    drop(worker);
}

/// `--messages` on a database already there seeds nothing: the worker says so rather than
/// ignore it.
#[test]
fn messages_on_a_database_already_there_is_said_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("class.db");
    let db = path.to_str().unwrap();
    let first = laptop(db, "ada", &["--messages", "3"]);
    wait_for("the first worker to make the database", || {
        (first.count("(created it with 3 payments)") == 1).then_some(())
    });
    let second = laptop(db, "bo", &["--messages", "50"]);
    wait_for(
        "the second worker to say its --messages seeds nothing",
        || (second.count("already there: --messages seeds only a new database") == 1).then_some(()),
    );
    let quiet = laptop(db, "cy", &[]);
    wait_for("a worker without --messages to join", || {
        (quiet.count("cy works on") == 1).then_some(())
    });
    assert_eq!(quiet.count("already there"), 0);
}

/// The watch says plainly that the teacher holds the class: `CLASS HELD` in its header
/// from `class hold` (or a round made held) until `class go`, and in the strip what it
/// means, once the join command has given way to the first worker.
#[test]
fn the_watch_shows_the_class_held_until_go() {
    let Some(db) = pg_support::scratch("class_held") else {
        return;
    };
    let url = db.url.as_str();
    ok(&[
        "class",
        "new-round",
        "--db",
        url,
        "--messages",
        "3",
        "--hold",
    ]);
    let mut watch = support::watcher(Path::new(url), 3);
    let lines = support::draw_until(&mut watch, "the watch to show the hold", |l| {
        l[0].contains(" CLASS HELD ")
    });
    // Before anyone joins, the strip shows what the students type.
    assert!(lines[1].contains("students join with"), "{}", lines[1]);
    let ada = laptop(url, "ada", &[]);
    let lines = support::draw_until(&mut watch, "the strip to say what the hold means", |l| {
        l[1].contains("CLASS HELD by the teacher")
    });
    assert!(
        lines[1].contains("the workers claim nothing until `leaselab class go`"),
        "{}",
        lines[1]
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Claimed'"
        ),
        0
    );
    ok(&["class", "go", "--db", url]);
    let lines = support::draw_until(&mut watch, "the hold to leave the watch", |l| {
        !l.join("\n").contains("CLASS HELD")
    });
    assert!(lines[0].contains(" RUNNING "), "{}", lines[0]);
    wait_for("the round to be processed", || drained(&db, 3));
    ok(&["class", "hold", "--db", url]);
    support::draw_until(&mut watch, "the watch to show the hold again", |l| {
        l[0].contains(" CLASS HELD ") && l[1].contains("CLASS HELD by the teacher")
    });
    // The screen's own hold (space) is another: it says HELD, and only that.
    support::press(&mut watch, ' ');
    let lines = support::frame_lines(&mut watch, 120, 40);
    assert!(
        lines[0].contains(" HELD ") && !lines[0].contains("CLASS"),
        "{}",
        lines[0]
    );
    drop(ada);
}
