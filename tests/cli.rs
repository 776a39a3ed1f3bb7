//! The real `leaselab` binary: exit codes, one-line errors, reports and kept databases.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn leaselab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run leaselab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A usage error: exit 2 and exactly one line on stderr.
fn assert_usage_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected, got: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", stdout(o)))
}

#[test]
fn run_outbox_leasing_json_prints_the_after_figures_and_saves_both_reports() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "outbox-leasing", "--json"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    for (key, want) in [
        ("processing_attempts", 6),
        ("unique_processed", 6),
        ("processed_more_than_once", 0),
        ("provider_status_checks", 6),
        ("ownership_violations", 0),
        ("gateway_creation_calls", 6),
    ] {
        assert_eq!(j[key], want, "{key}");
    }
    for key in [
        "scenario",
        "leasing",
        "workers",
        "messages",
        "claims_ok",
        "claims_empty",
        "claims_blocked",
        "rejected_finalizes",
        "outbox",
        "payments",
        "per_worker",
        "checks",
        "passed",
    ] {
        assert!(j.get(key).is_some(), "missing key {key}");
    }
    let saved: Vec<_> = std::fs::read_dir(dir.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert!(saved
        .iter()
        .any(|f| f.starts_with("outbox-leasing-") && f.ends_with(".txt")));
    assert!(saved
        .iter()
        .any(|f| f.starts_with("outbox-leasing-") && f.ends_with(".json")));
}

#[test]
fn run_competing_no_claim_json_prints_the_before_figures() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "competing-no-claim", "--json"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["processing_attempts"], 12);
    assert_eq!(j["provider_status_checks"], 12);
    assert_eq!(j["processed_more_than_once"], 6);
    assert_eq!(j["unique_processed"], 6);
    assert_eq!(j["outbox"]["processed"], 6);
    assert_eq!(j["payments"]["paid"], 4);
    assert_eq!(j["payments"]["failed"], 2);
}

#[test]
fn text_report_names_the_temporary_database_which_is_gone_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "lease-expiry"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Verdict: ONE OWNER AT A TIME"), "{out}");
    let line = out.lines().find(|l| l.starts_with("database ")).unwrap();
    let path = line.split_whitespace().nth(1).unwrap();
    assert!(path.ends_with("outbox.db"), "{line}");
    assert!(
        !Path::new(path).exists(),
        "temporary database left behind: {path}"
    );
}

#[test]
fn a_failing_check_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &["run", "outbox-leasing", "--no-leasing", "--json"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json_of(&o)["passed"], false);
}

#[test]
fn unknown_scenario_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "outbox-leeching"], dir.path());
    assert_usage_error(&o, "unknown scenario 'outbox-leeching'");
    let err = stderr(&o);
    for s in ["competing-no-claim", "outbox-leasing", "lease-expiry"] {
        assert!(err.contains(s), "{err}");
    }
    let o = leaselab(&["--scenario", "nope"], dir.path());
    assert_usage_error(&o, "unknown scenario 'nope'");
}

#[test]
fn bad_numbers_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["run", "outbox-leasing", "--workers", "0"], "--workers"),
        (vec!["run", "outbox-leasing", "--workers", "-1"], "-1"),
        (vec!["run", "outbox-leasing", "--workers", "many"], "many"),
        (
            vec!["run", "outbox-leasing", "--messages", "0"],
            "--messages",
        ),
        (vec!["run", "outbox-leasing", "--messages", "1e3"], "1e3"),
        (vec!["run", "outbox-leasing", "--lease-ms", "-5"], "-5"),
        (
            vec!["run", "outbox-leasing", "--process-ms", "soon"],
            "soon",
        ),
        (vec!["run", "outbox-leasing", "--speed", "0"], "--speed"),
        (vec!["run", "outbox-leasing", "--speed", "fast"], "fast"),
        (vec!["run"], "SCENARIO"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let o = leaselab(&args, dir.path());
        assert_usage_error(&o, needle);
    }
    assert!(
        !dir.path().join("reports").exists(),
        "a refused run wrote reports"
    );
}

#[test]
fn story_needs_two_workers() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "lease-expiry", "--workers", "1"], dir.path());
    assert_usage_error(&o, "at least 2 workers");
    let o = leaselab(&["run", "lease-expiry", "--no-leasing"], dir.path());
    assert_usage_error(&o, "--no-leasing");
}

#[test]
fn list_names_every_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["list"], dir.path());
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 4, "{out}");
    assert!(
        out.contains("competing-no-claim")
            && out.contains("outbox-leasing")
            && out.contains("lease-expiry")
            && out.contains("soak")
    );
}

#[test]
fn a_kept_database_holds_the_final_state_and_is_reused_on_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kept.db");
    let db_arg = db.to_str().unwrap();
    let o = leaselab(&["run", "outbox-leasing", "--db", db_arg], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("created and kept"));
    let read_state = || {
        let c = rusqlite::Connection::open(&db).unwrap();
        let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
        (
            q("SELECT COUNT(*) FROM OutboxMessages WHERE Status='Processed'"),
            q("SELECT COUNT(*) FROM Payments WHERE PaymentStatus='Paid' AND TransactionId IS NOT NULL"),
            q("SELECT COUNT(*) FROM Payments WHERE PaymentStatus='Failed' AND TransactionId IS NULL"),
            q("SELECT LeaseVersion FROM OutboxMessages WHERE PaymentKey='PAY-001'"),
        )
    };
    assert_eq!(read_state(), (6, 4, 2, 2));
    let o = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_of(&o)["database"]["reused"], true);
    assert_eq!(
        read_state(),
        (6, 4, 2, 2),
        "emptied and reseeded, not appended"
    );
}

#[test]
fn a_db_path_that_is_not_ours_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "do not lose me").unwrap();
    let foreign = dir.path().join("shop.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE Orders(Id INTEGER PRIMARY KEY);")
        .unwrap();
    let foreign_before = std::fs::read(&foreign).unwrap();
    let sub = dir.path().join("a-folder");
    std::fs::create_dir(&sub).unwrap();
    for (path, needle) in [
        (&notes, "not a SQLite database"),
        (&foreign, "another application"),
        (&sub, "directory"),
    ] {
        let o = leaselab(
            &["run", "outbox-leasing", "--db", path.to_str().unwrap()],
            dir.path(),
        );
        assert_usage_error(&o, needle);
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "do not lose me");
    assert_eq!(std::fs::read(&foreign).unwrap(), foreign_before);
    let o = leaselab(
        &["run", "outbox-leasing", "--db", "/no/such/folder/x.db"],
        dir.path(),
    );
    assert_usage_error(&o, "does not exist");
}

#[test]
fn an_unwritable_report_folder_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("reports-file");
    std::fs::write(&blocker, "a file where a folder should be").unwrap();
    let o = leaselab(
        &[
            "run",
            "outbox-leasing",
            "--report-dir",
            blocker.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_usage_error(&o, "report folder");
    assert_eq!(
        std::fs::read_to_string(&blocker).unwrap(),
        "a file where a folder should be"
    );
}

#[test]
fn bench_json_prints_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &[
            "bench",
            "--messages",
            "300",
            "--workers",
            "1,2",
            "--batch",
            "8",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["synchronous"], "normal");
    assert_eq!(j["messages"], 300);
    let runs = j["runs"].as_array().unwrap();
    assert!(runs
        .iter()
        .any(|r| r["mode"] == "leased" && r["workers"] == 2));
    assert!(runs.iter().any(|r| r["mode"] == "batch" && r["batch"] == 8));
    assert!(runs.iter().any(|r| r["mode"] == "naive"));
}

#[test]
fn a_worker_list_is_only_for_bench() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "outbox-leasing", "--workers", "1,2"], dir.path());
    assert_usage_error(&o, "a list is for `bench`");
    let o = leaselab(&["bench", "--workers", "1,0"], dir.path());
    assert_usage_error(&o, "0 is not in 1..=64");
    let o = leaselab(&["bench", "--sync", "sometimes"], dir.path());
    assert_usage_error(&o, "sometimes");
}

/// Rows the run's workers hold right now, read from its database; None while unreadable.
fn processing_rows(db: &Path) -> Option<i64> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.query_row(
        "SELECT count(*) FROM OutboxMessages WHERE Status = 'Processing'",
        [],
        |r| r.get(0),
    )
    .ok()
}

#[test]
fn a_signal_stops_a_run_with_one_line_a_nonzero_exit_and_no_temporary_database() {
    for (signo, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        // A message takes 600 scenario seconds at 0.05x: the run cannot end on its own.
        let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(["run", "outbox-leasing", "--process-ms", "600000"])
            .args(["--speed", "0.05", "--lease-ms", "3600000"])
            .current_dir(dir.path())
            .env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start leaselab run");
        // Started: its workers hold messages in its temporary database.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let db = std::fs::read_dir(&tmp)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path().join("outbox.db")))
                .find(|p| p.exists());
            if db
                .and_then(|db| processing_rows(&db))
                .is_some_and(|n| n > 0)
            {
                break;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name}: the run never started working");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(pid, signo) }, 0);
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        let o = match rx.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(o) => o.expect("leaselab run ends"),
            Err(_) => {
                // SAFETY: as above; the run ignored the signal, so end it for good.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("{name}: the run did not stop");
            }
        };
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(128 + signo), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err:?}");
        assert!(err.contains(&format!("interrupted by {name}")), "{err}");
        assert!(stdout(&o).is_empty(), "{name}: no report for a stopped run");
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(left.is_empty(), "{name}: left behind {left:?}");
        // The folder exists (checked writable before the run) but holds no report.
        let reports = std::fs::read_dir(dir.path().join("reports")).map_or(0, |d| d.count());
        assert_eq!(reports, 0, "{name}: a report was saved");
    }
}
