//! The real `leaselab` binary: exit codes, one-line errors, reports and kept databases.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;

use support::{
    leaselab, signal_and_wait, stand_in, stderr, stdout, wait_until_gone, EFFECTUM_ANSWER,
};

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
fn bench_rounds_measure_every_run_again_and_take_the_medians() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &[
            "bench",
            "--messages",
            "200",
            "--workers",
            "4",
            "--rounds",
            "3",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    let runs = j["runs"].as_array().unwrap();
    for mode in ["leased", "plain", "batch"] {
        let rounds: Vec<u64> = runs
            .iter()
            .filter(|r| r["mode"] == mode)
            .map(|r| r["round"].as_u64().unwrap())
            .collect();
        assert_eq!(rounds, vec![1, 2, 3], "{mode}: {runs:?}");
    }
    // The lesson's naive runs are measured once.
    assert_eq!(runs.iter().filter(|r| r["mode"] == "naive").count(), 2);
    let leased: Vec<f64> = runs
        .iter()
        .filter(|r| r["mode"] == "leased")
        .map(|r| r["ratio"].as_f64().unwrap())
        .collect();
    let target = &j["targets"][0];
    assert_eq!(
        target["what"],
        "leased, 4 workers, ratio to half the ceiling"
    );
    let got: Vec<f64> = target["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, leased, "each round's own figure");
    let mut sorted = leased.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(target["got"].as_f64(), Some(sorted[1]), "the median");
    for bad in ["0", "10", "x"] {
        let o = leaselab(&["bench", "--rounds", bad], dir.path());
        assert_usage_error(&o, "--rounds");
    }
}

#[test]
fn bench_runs_the_effectum_program_beside_the_leased_loop() {
    let dir = tempfile::tempdir().unwrap();
    let good = stand_in(dir.path(), "good", EFFECTUM_ANSWER);
    let args = |program: &Path| {
        let p = program.to_str().unwrap().to_string();
        vec![
            "bench".to_string(),
            "--messages".into(),
            "400".into(),
            "--workers".into(),
            "1,4".into(),
            "--json".into(),
            "--effectum".into(),
            p,
        ]
    };
    let words = args(&good);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let o = leaselab(&words, dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    let runs = j["runs"].as_array().unwrap();
    let effectum_runs = runs.iter().filter(|r| r["mode"] == "effectum");
    assert_eq!(effectum_runs.count(), 2, "one per worker count: {runs:?}");
    let effectum = runs
        .iter()
        .find(|r| r["mode"] == "effectum" && r["workers"] == 4)
        .expect("an effectum run with 4 workers");
    assert_eq!(effectum["msgs_per_s"], 2000.0);
    assert_eq!(effectum["exactly_once"], true);
    assert!(effectum["ratio"].as_f64().unwrap() > 0.0, "{effectum}");
    let leased = runs
        .iter()
        .find(|r| r["mode"] == "leased" && r["workers"] == 4)
        .unwrap();
    let target = j["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["what"].as_str().unwrap().contains("effectum"))
        .expect("the effectum target")
        .clone();
    let expected = leased["ratio"].as_f64().unwrap() / effectum["ratio"].as_f64().unwrap();
    assert!(
        (target["got"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{target}"
    );

    // A program that cannot be run is refused before any run, in one line, exit 2.
    let missing = args(&dir.path().join("missing"));
    let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
    assert_usage_error(&leaselab(&missing, dir.path()), "--effectum");
    // What cannot be its answer ends the bench after the steps so far: one error line, exit 2.
    let cases = [
        (
            stand_in(dir.path(), "noise", "echo hello"),
            "printed no line of figures",
        ),
        (
            stand_in(
                dir.path(),
                "fails",
                "echo 'cannot open the queue' >&2; exit 1",
            ),
            "cannot open the queue",
        ),
        (
            stand_in(
                dir.path(),
                "other",
                r#"echo '{"jobs_per_s":5.0,"per_worker":[1,2,3],"all_succeeded":true}'"#,
            ),
            "figures of another run",
        ),
        (
            stand_in(
                dir.path(),
                "too-fast",
                r#"echo '{"jobs_per_s":1e308,"per_worker":[400],"all_succeeded":true}'"#,
            ),
            "printed an impossible rate (1e308 jobs/s",
        ),
        (
            stand_in(
                dir.path(),
                "negative",
                r#"echo '{"jobs_per_s":-5,"per_worker":[400],"all_succeeded":true}'"#,
            ),
            "printed an impossible rate (-5 jobs/s",
        ),
    ];
    for (program, needle) in cases {
        let words = args(&program);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = leaselab(&words, dir.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("leaselab: --effectum ") && last.contains(needle),
            "{err}"
        );
        assert!(
            err.lines().all(|l| l.starts_with("bench: ") || l == last),
            "{err}"
        );
    }
    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let words = args(&plain);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    assert_usage_error(&leaselab(&words, dir.path()), "not an executable file");
}

#[test]
fn a_worker_list_is_only_for_bench() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "outbox-leasing", "--workers", "1,2"], dir.path());
    assert_usage_error(&o, "--workers: '1,2' is not a whole number in 1-64");
    let o = leaselab(&["bench", "--workers", "1,0"], dir.path());
    assert_usage_error(
        &o,
        "--workers: '1,0' is not a whole number in 1-64, or a list of them",
    );
    let o = leaselab(&["bench", "--sync", "sometimes"], dir.path());
    assert_usage_error(&o, "sometimes");
}

#[test]
fn an_app_database_with_the_articles_table_names_is_refused_and_left_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.db");
    rusqlite::Connection::open(&app)
        .unwrap()
        .execute_batch(
            "CREATE TABLE Payments(Id INTEGER PRIMARY KEY, Customer TEXT, Total REAL);
             CREATE TABLE OutboxMessages(Id INTEGER PRIMARY KEY, Topic TEXT, Body TEXT);
             INSERT INTO Payments VALUES (1, 'ACME', 12.5);
             INSERT INTO OutboxMessages VALUES (1, 'invoice', '{}');",
        )
        .unwrap();
    let before = std::fs::read(&app).unwrap();
    let o = leaselab(
        &["run", "outbox-leasing", "--db", app.to_str().unwrap()],
        dir.path(),
    );
    assert_usage_error(&o, "another application");
    assert_eq!(std::fs::read(&app).unwrap(), before);
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "reports")
        .collect();
    assert_eq!(beside, ["app.db"], "no -wal, -shm or .lock");
}

#[test]
fn the_schema_section_is_the_schema_the_database_file_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kept.db");
    let o = leaselab(
        &["run", "lease-expiry", "--db", db.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let section: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Schema"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let c = rusqlite::Connection::open(&db).unwrap();
    // SQLite's own bookkeeping (sqlite_sequence, for LeaseEvents' AUTOINCREMENT) is not ours.
    let mut stmt = c
        .prepare(
            "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
        )
        .unwrap();
    let from_file: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|s| format!("{};", s.unwrap()))
        .collect();
    let expected: Vec<String> = from_file
        .join("\n")
        .lines()
        .map(|l| format!("  {l}"))
        .collect();
    assert_eq!(section, expected);
}

#[test]
fn a_database_in_a_read_only_folder_is_refused_as_such() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    let ro = dir.path().join("read-only");
    std::fs::create_dir(&ro).unwrap();
    let kept = ro.join("kept.db");
    let o = leaselab(
        &["run", "lease-expiry", "--db", kept.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = std::fs::read(&kept).unwrap();
    let reports = dir.path().join("reports");
    mode(dir.path(), 0o755).unwrap();
    mode(&reports, 0o777).unwrap();
    mode(&ro, 0o555).unwrap();
    // Root writes anywhere: then the binary runs as nobody, for whom the folder is read-only.
    let as_root = std::fs::metadata(dir.path()).unwrap().uid() == 0;
    // A copy of the binary nobody can reach, whatever the folders above the build allow.
    let bin = dir.path().join("leaselab-bin");
    std::fs::copy(env!("CARGO_BIN_EXE_leaselab"), &bin).unwrap();
    mode(&bin, 0o755).unwrap();
    for db in [ro.join("new.db"), kept.clone()] {
        let mut cmd = Command::new(&bin);
        cmd.args(["run", "lease-expiry", "--db", db.to_str().unwrap()])
            .current_dir(dir.path());
        if as_root {
            cmd.uid(65534).gid(65534);
        }
        let o = cmd.output().expect("run leaselab");
        assert_usage_error(&o, &format!("folder {} is not writable", ro.display()));
        assert!(stderr(&o).starts_with(&format!("leaselab: {}", db.display())));
    }
    let left: Vec<_> = std::fs::read_dir(&ro)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["kept.db"]);
    assert_eq!(std::fs::read(&kept).unwrap(), before);
    mode(&ro, 0o755).unwrap();
}

#[test]
fn every_built_in_lesson_passes_its_check() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "no-claim",
        "atomic-claim",
        "lease-expiry",
        "zombie-worker",
        "slow-job",
        "poison-message",
        "one-writer",
    ] {
        let o = leaselab(&["lesson", name, "--check"], dir.path());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let out = stdout(&o);
        let steps: Vec<&str> = out.lines().filter(|l| l.starts_with("step ")).collect();
        assert!(
            !steps.is_empty() && steps.iter().all(|l| l.ends_with(" PASS")),
            "{out}"
        );
    }
}

#[test]
fn a_lesson_with_a_wrong_expectation_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../assets/lessons/lease-expiry.toml")
        .replace("\"ledger blocked 1\"", "\"ledger blocked 0\"");
    let path = dir.path().join("wrong.toml");
    std::fs::write(&path, text).unwrap();
    let o = leaselab(&["lesson", path.to_str().unwrap(), "--check"], dir.path());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("step 2/6 PASS"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("step 3/6 FAIL: ledger blocked 0 (line ")
                && l.ends_with("found 1")),
        "{out}"
    );
    assert!(out.contains("5 of 6 steps passed"), "{out}");
}

#[test]
fn a_bad_lesson_file_is_one_line_with_file_and_line_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "format_version = 1\ntitle = \"t\"\n[[step]]\ndo = [\"claim Worker-A\", \"jump Worker-A\"]\nsay = \"x\"\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    for args in [vec!["lesson", file, "--check"], vec!["lesson", file]] {
        let o = leaselab(&args, dir.path());
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("{file}:4: unknown action 'jump'")),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
    }
    let o = leaselab(&["lesson", "no-such-lesson", "--check"], dir.path());
    assert_usage_error(&o, "unknown lesson 'no-such-lesson'");
    let o = leaselab(
        &["lesson", "atomic-claim", "--check", "--workers", "3"],
        dir.path(),
    );
    assert_usage_error(&o, "--workers does not apply to a lesson");
}

#[test]
fn lessons_lists_the_built_ins_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["lessons"], dir.path());
    assert_eq!(o.status.code(), Some(0));
    let names: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect();
    assert_eq!(
        names,
        [
            "no-claim",
            "atomic-claim",
            "lease-expiry",
            "zombie-worker",
            "slow-job",
            "poison-message",
            "one-writer"
        ]
    );
}

#[test]
fn a_lesson_check_keeps_its_database_with_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lesson.db");
    let o = leaselab(
        &[
            "lesson",
            "atomic-claim",
            "--check",
            "--db",
            db.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let processed: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(processed, 6);
}

/// Start `leaselab` with stdout and stderr in files under `dir`, for runs a test acts on
/// while they are under way.
fn spawn_leaselab(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> std::process::Child {
    let out = std::fs::File::create(dir.join("child.out")).unwrap();
    let err = std::fs::File::create(dir.join("child.err")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawn leaselab")
}

/// Poll until `f` gives a value, or panic after a generous deadline.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    wait_for("leaselab to exit", || child.try_wait().unwrap())
}

/// The test's own connection to a database a running leaselab made (never creating it).
fn outside_connection(db: &Path) -> Option<rusqlite::Connection> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
        .ok()?;
    c.busy_timeout(std::time::Duration::from_secs(60)).ok()?;
    Some(c)
}

/// Panic with its stderr if the run ended before the test could act on it.
fn still_running(child: &mut std::process::Child, dir: &Path) {
    if let Some(status) = child.try_wait().unwrap() {
        let err = std::fs::read_to_string(dir.join("child.err")).unwrap_or_default();
        panic!("leaselab ended early ({status}): {err}");
    }
}

/// Wait until the run has finalized a message; the test's connection to its database.
fn under_way(child: &mut std::process::Child, dir: &Path, db: &Path) -> rusqlite::Connection {
    wait_for("the run to finalize a message", || {
        still_running(child, dir);
        let c = outside_connection(db)?;
        let done: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processed'",
                [],
                |r| r.get(0),
            )
            .ok()?;
        (done > 0).then_some(c)
    })
}

/// A run long enough to act on: each message takes 1 s of scenario time at speed 1 and the
/// lease outlives every message, so any reclaim comes from outside.
const SLOW_RUN: [&str; 12] = [
    "run",
    "outbox-leasing",
    "--db",
    "outbox.db",
    "--messages",
    "400",
    "--process-ms",
    "1000",
    "--lease-ms",
    "3600000",
    "--speed",
    "1",
];

#[test]
fn a_write_lock_held_past_the_busy_limit_ends_the_run_with_exit_three_naming_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let mut child = spawn_leaselab(
        &SLOW_RUN,
        dir.path(),
        &[("LEASELAB_BUSY_GIVE_UP_MS", "300")],
    );
    let conn = under_way(&mut child, dir.path(), &db);
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let status = wait_exit(&mut child);
    conn.execute_batch("ROLLBACK").unwrap();
    let err = std::fs::read_to_string(dir.path().join("child.err")).unwrap();
    assert_eq!(status.code(), Some(3), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(
        err.contains("stopped") && err.contains("locked by another connection"),
        "{err}"
    );
}

#[test]
fn rows_edited_and_deleted_under_the_run_fail_the_checks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let mut args = SLOW_RUN.to_vec();
    args.push("--json");
    let mut child = spawn_leaselab(&args, dir.path(), &[]);
    // Another program hands a message that a worker is still processing back to Pending
    // (not message 1, which the opening story leases and reclaims on purpose).
    let (edited, version): (i64, i64) = wait_for("a message in processing", || {
        still_running(&mut child, dir.path());
        outside_connection(&db)?
            .query_row(
                "UPDATE OutboxMessages SET Status = 'Pending', LockedBy = NULL, LockedUntilUtc = NULL
                 WHERE Id = (SELECT MIN(Id) FROM OutboxMessages
                             WHERE Status = 'Processing' AND Id > 1)
                 RETURNING Id, LeaseVersion",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok()
    });
    // Then it deletes what is still Pending (which also ends the run sooner).
    let c = outside_connection(&db).unwrap();
    wait_for("the edited message to be claimed again", || {
        c.query_row(
            "SELECT LeaseVersion FROM OutboxMessages WHERE Id = ?1",
            [edited],
            |r| r.get::<_, i64>(0),
        )
        .ok()
        .filter(|v| *v > version)
    });
    let deleted = c
        .execute("DELETE FROM OutboxMessages WHERE Status = 'Pending'", [])
        .unwrap();
    assert!(deleted > 0, "nothing left to delete");
    let status = wait_exit(&mut child);
    let out = std::fs::read(dir.path().join("child.out")).unwrap();
    let err = std::fs::read_to_string(dir.path().join("child.err")).unwrap();
    assert_eq!(status.code(), Some(1), "stderr: {err}");
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["passed"], false);
    let failed: Vec<&str> = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for rule in [
        "history: leases never overlap",
        "history: final state agrees with history",
    ] {
        assert!(failed.contains(&rule), "{rule} not in {failed:?}");
    }
}

/// The report folder fills up while the report is saved (a test hook cuts the write short
/// as a full disk would; every other test writes reports through the same path).
#[test]
fn a_report_folder_that_fills_up_keeps_the_printed_report_and_the_runs_exit_code() {
    for (extra, code) in [(None, 0), (Some("--no-leasing"), 1)] {
        for json in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let mut args = vec!["run", "outbox-leasing"];
            args.extend(extra);
            if json {
                args.push("--json");
            }
            let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
                .args(&args)
                .current_dir(dir.path())
                .env("LEASELAB_REPORT_DISK_BYTES", "200")
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
            assert!(err.contains("not saved"), "{err}");
            if json {
                assert_eq!(json_of(&o)["passed"], code == 0);
            } else {
                assert!(stdout(&o).contains("Verdict:"), "{}", stdout(&o));
                assert!(!stdout(&o).contains("saved to"));
            }
            let left: Vec<_> = std::fs::read_dir(dir.path().join("reports"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(left.is_empty(), "partial files left: {left:?}");
        }
    }
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

#[test]
fn a_full_stdout_is_one_line_and_exit_three_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["list"][..],
        &["run", "outbox-leasing"],
        &["run", "lease-expiry", "--json"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(args)
            .current_dir(dir.path())
            .stdout(dev_full())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("standard output"), "{err}");
    }
}

#[test]
fn a_reader_that_went_away_ends_the_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["list"][..],
        &["run", "outbox-leasing"],
        &["run", "outbox-leasing", "--json"],
    ] {
        // The reading end is closed before leaselab starts: every write meets a broken pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(args)
            .current_dir(dir.path())
            .stdout(writer)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err:?}");
    }
}

#[test]
fn more_messages_than_a_run_can_drain_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["run", "soak", "--messages", "100001"], dir.path());
    assert_usage_error(&o, "1-100000");
    assert!(!dir.path().join("reports").exists());
}

/// The database's disk fills mid-run: the operating system's file-size limit (1-2 MB, far
/// below the 4 MB at which SQLite would checkpoint its log) stops the log from growing, as
/// a full disk would, without root.
#[test]
fn a_database_whose_disk_fills_mid_run_ends_with_exit_three_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "trap '' XFSZ; ulimit -f 2048; exec '{}' run outbox-leasing --db outbox.db \
         --messages 3000",
        env!("CARGO_BIN_EXE_leaselab")
    );
    let o = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.contains("stopped: SQLite:"), "{err}");
    assert!(!stdout(&o).contains("Verdict"), "a verdict was claimed");
}

#[test]
fn a_column_dropped_under_the_run_ends_it_with_exit_three_and_the_workers_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let mut child = spawn_leaselab(&SLOW_RUN, dir.path(), &[]);
    let conn = under_way(&mut child, dir.path(), &db);
    conn.execute_batch("ALTER TABLE OutboxMessages DROP COLUMN Attempts")
        .unwrap();
    let status = wait_exit(&mut child);
    let err = std::fs::read_to_string(dir.path().join("child.err")).unwrap();
    assert_eq!(status.code(), Some(3), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.contains("stopped") && err.contains("Attempts"), "{err}");
}

#[test]
fn a_run_whose_lease_would_run_out_mid_message_is_refused() {
    // Without heartbeats nothing extends the lease: the run is refused before it starts.
    // (With heartbeats, the default, a job longer than the lease is kept alive.)
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &[
            "run",
            "outbox-leasing",
            "--process-ms",
            "600000",
            "--no-heartbeat",
        ],
        dir.path(),
    );
    assert_usage_error(&o, "--lease-ms");
    assert!(!dir.path().join("reports").exists());
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
        let o = signal_and_wait(child, signo, &format!("{name}: the run"));
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

#[test]
fn a_heartbeat_that_cannot_keep_the_lease_and_zero_attempts_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            vec!["run", "outbox-leasing", "--heartbeat-ms", "500"],
            "shorter than the lease (500 ms)",
        ),
        (
            vec![
                "run",
                "outbox-leasing",
                "--lease-ms",
                "900",
                "--heartbeat-ms",
                "1000",
            ],
            "heartbeat interval 1000 ms",
        ),
        (
            vec!["run", "outbox-leasing", "--max-attempts", "0"],
            "--max-attempts: '0' is not a whole number in 1-1000",
        ),
        (
            vec![
                "run",
                "outbox-leasing",
                "--backoff-ms",
                "500",
                "--backoff-cap-ms",
                "100",
            ],
            "0 <= base <= cap",
        ),
        (
            vec![
                "run",
                "outbox-leasing",
                "--heartbeat-ms",
                "100",
                "--no-heartbeat",
            ],
            "--no-heartbeat",
        ),
        (
            vec!["lesson", "slow-job", "--heartbeat-ms", "100"],
            "[setup]",
        ),
        // The dashboard (its lease is 3000 ms) and a worker process refuse them too.
        (vec!["--heartbeat-ms", "3000"], "heartbeat interval 3000 ms"),
        (
            vec!["--max-attempts", "0"],
            "--max-attempts: '0' is not a whole number in 1-1000",
        ),
        (
            vec![
                "worker",
                "--db",
                "w.db",
                "--name",
                "w",
                "--lease-ms",
                "500",
                "--heartbeat-ms",
                "600",
            ],
            "heartbeat interval 600 ms",
        ),
        (
            vec![
                "worker",
                "--db",
                "w.db",
                "--name",
                "w",
                "--max-attempts",
                "0",
            ],
            "--max-attempts: '0' is not a whole number in 1-1000",
        ),
    ] {
        let o = leaselab(&args, dir.path());
        assert_usage_error(&o, needle);
    }
    assert!(!dir.path().join("reports").exists());
    assert!(
        !dir.path().join("w.db").exists(),
        "a refused worker opened its database"
    );
}

#[test]
fn help_version_and_a_run_to_full_outputs_exit_three_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["run", "outbox-leasing"],
        &["bench", "--messages", "no"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(args)
            .current_dir(dir.path())
            .stdout(dev_full())
            .stderr(dev_full())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3), "{args:?}");
    }
}

#[test]
fn each_command_takes_and_lists_only_its_own_flags() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            &["bench", "--seed", "3"][..],
            "--seed does not apply to `bench`",
        ),
        (
            &["bench", "--no-leasing"],
            "--no-leasing does not apply to `bench`",
        ),
        (
            &["bench", "--scenario", "soak"],
            "--scenario does not apply to `bench`",
        ),
        (
            &["lesson", "slow-job", "--workers", "3"],
            "--workers does not apply to a lesson",
        ),
        (
            &["worker", "--db", "w.db", "--name", "w", "--seed", "1"],
            "--seed does not apply to `worker`",
        ),
        (&["--seed", "1"], "--seed does not apply to the dashboard"),
        (
            &["--workers", "3", "run", "soak"],
            "--workers goes after the command: leaselab run",
        ),
        (
            &["--db", "x.db", "lessons"],
            "--db is for the dashboard; `lessons` takes its own flags",
        ),
    ] {
        assert_usage_error(&leaselab(args, dir.path()), needle);
    }
    let help = |args: &[&str]| stdout(&leaselab(args, dir.path()));
    let lesson = help(&["lesson", "--help"]);
    for absent in ["--workers", "--scenario", "--lease-ms", "--seed"] {
        assert!(
            !lesson.contains(absent),
            "lesson --help lists {absent}:\n{lesson}"
        );
    }
    let bench = help(&["bench", "--help"]);
    for absent in [
        "--seed",
        "--fail-always",
        "--lease-ms",
        "--process-ms",
        "--no-leasing",
        "--speed",
        "--scenario",
    ] {
        assert!(
            !bench.contains(absent),
            "bench --help lists {absent}:\n{bench}"
        );
    }
    assert!(help(&["run", "--help"]).contains("--seed"));
    assert!(
        !dir.path().join("w.db").exists(),
        "a refused worker opened its database"
    );
}

#[test]
fn every_bad_number_is_refused_the_same_way_naming_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            &["run", "soak", "--seed", "-1"][..],
            "--seed: '-1' is not a whole number",
        ),
        (
            &["run", "soak", "--workers", " 3"],
            "--workers: ' 3' is not a whole number in 1-64",
        ),
        (
            &["run", "soak", "--workers", "3 "],
            "--workers: '3 ' is not a whole number in 1-64",
        ),
        (
            &["run", "soak", "--max-attempts", "-1"],
            "--max-attempts: '-1' is not a whole number in 1-1000",
        ),
        (
            &["run", "soak", "--messages", "1e3"],
            "--messages: '1e3' is not a whole number",
        ),
        (
            &["run", "soak", "--backoff-ms", "9223372036854775807"],
            "--backoff-ms: '9223372036854775807' is not a whole number in 0-3600000",
        ),
        (
            &["run", "soak", "--lease-ms", "99999999999999999999"],
            "--lease-ms: '99999999999999999999' is not a whole number",
        ),
        (
            &[
                "worker",
                "--db",
                "w.db",
                "--name",
                "w",
                "--process-ms",
                "+5",
            ],
            "--process-ms: '+5' is not a whole number",
        ),
        (
            &["--speed", "nan"],
            "--speed: 'nan' is not a number in 0.05-1000",
        ),
    ] {
        assert_usage_error(&leaselab(args, dir.path()), needle);
    }
}

#[test]
fn completions_are_made_from_the_command_line_itself_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["completions", "bash"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(script.contains("complete -F _leaselab"), "{script}");
    for word in [
        "run",
        "lesson",
        "worker",
        "bench",
        "completions",
        "man",
        "--lease-ms",
        "--db",
    ] {
        assert!(
            script.contains(word),
            "{word} missing from the bash completions"
        );
    }
    // The script is valid bash.
    let file = dir.path().join("leaselab.bash");
    std::fs::write(&file, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = leaselab(&["completions", shell], dir.path());
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("lease-ms"), "{shell}");
    }
    let o = leaselab(&["completions", "tcsh"], dir.path());
    assert_usage_error(&o, "invalid value 'tcsh'");
}

#[test]
fn the_manual_page_has_every_command_and_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["man"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH leaselab 1"), "{page}");
    for section in [
        "RUN",
        "LESSON",
        "LESSONS",
        "WORKER",
        "BENCH",
        "COMPLETIONS",
        "MAN",
    ] {
        assert!(
            page.contains(&format!(".SH \"LEASELAB {section}\"")),
            "no section for {section}"
        );
    }
    // Flags of the dashboard and of a command, in roff's escaped hyphens.
    assert!(page.contains(r"\-\-lease\-ms"));
    assert!(page.contains(r"\-\-scale"), "the bench's own flag");
}

/// The bench's folder in `tmp` (named `leaselab-bench-PID-...`), once it exists.
fn bench_folder(tmp: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(tmp)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("leaselab-bench-"))
        })
}

/// Start `leaselab bench` on a large outbox with its temporary folder in `tmp`, and wait
/// until its first leased run has finished messages. The caller waits for the child.
#[allow(clippy::zombie_processes)]
fn bench_under_way(dir: &Path, tmp: &Path) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["bench", "--messages", "100000", "--workers", "4"])
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start leaselab bench");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let done = bench_folder(tmp)
            .map(|f| f.join("leased-4-1-100000.db"))
            .filter(|db| db.exists())
            .and_then(|db| {
                let conn = rusqlite::Connection::open_with_flags(
                    &db,
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )
                .ok()?;
                conn.query_row(
                    "SELECT count(*) FROM OutboxMessages WHERE Status = 'Processed'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .ok()
            });
        if done.is_some_and(|n| n > 0) {
            return child;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the bench never started its leased run");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_signal_stops_the_bench_within_its_run_and_removes_its_databases() {
    for (signo, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let child = bench_under_way(dir.path(), &tmp);
        // The run it is in has thousands of messages to go: it ends at the next one instead.
        let o = signal_and_wait(child, signo, &format!("{name}: the bench"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(128 + signo), "{name}: {err}");
        // The steps it took, one line each, then one line for the signal.
        let (last, steps) = err
            .trim_end()
            .lines()
            .collect::<Vec<_>>()
            .split_last()
            .map(|(last, steps)| (last.to_string(), steps.to_vec()))
            .unwrap();
        assert!(last.contains(&format!("interrupted by {name}")), "{err}");
        assert!(steps.iter().all(|l| l.starts_with("bench: ")), "{err:?}");
        assert!(
            stdout(&o).is_empty(),
            "{name}: no figures for a stopped bench"
        );
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(left.is_empty(), "{name}: left behind {left:?}");
    }
}

#[test]
fn the_folder_of_a_killed_bench_is_removed_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = bench_under_way(dir.path(), &tmp);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = bench_folder(&tmp).expect("a killed bench leaves its folder");
    // A folder of a bench still running is not touched: this test's own process stands in.
    let alive = tmp.join(format!("leaselab-bench-{}-alive", std::process::id()));
    std::fs::create_dir(&alive).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["bench", "--messages", "50", "--workers", "1"])
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!left.exists(), "{left:?} is still there");
    assert!(alive.exists(), "the folder of a living process was removed");
}

#[test]
fn a_signal_while_the_effectum_program_runs_stops_it_with_all_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let started = dir.path().join("started");
    let silent = stand_in(
        dir.path(),
        "silent",
        &format!(
            "sleep 600 &\necho $! > {0}.tmp\nmv {0}.tmp {0}\nwait",
            started.display()
        ),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["bench", "--messages", "50", "--workers", "1", "--effectum"])
        .arg(&silent)
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start leaselab bench");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let sleeper: i32 = loop {
        if let Ok(pid) = std::fs::read_to_string(&started) {
            break pid.trim().parse().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bench never started the program"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let o = signal_and_wait(child, libc::SIGINT, "the bench");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    // The program's own child went with it.
    wait_until_gone(sleeper);
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind {left:?}");
}

/// A worker process runs on the wall clock and `run` has nothing to do with it: its help
/// says so, while `run`'s keeps the scenario clock's words.
#[test]
fn the_workers_help_speaks_of_the_wall_clock_and_not_of_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["worker", "--help"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let help = stdout(&o);
    for flag in ["--lease-ms", "--process-ms", "--heartbeat-ms"] {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("no {flag} in\n{help}"));
        assert!(line.contains("wall clock"), "{line}");
    }
    assert!(!help.contains("scenario"), "{help}");
    assert!(!help.contains("`run`"), "{help}");
    assert!(help.contains("must be shorter than --lease-ms"), "{help}");
    // The manual page, made from the same definition, says the same.
    let page = stdout(&leaselab(&["man"], dir.path()));
    let worker = &page[page.find(".SH \"LEASELAB WORKER\"").unwrap()..];
    let worker = &worker[..worker[1..].find(".SH ").map_or(worker.len(), |i| i + 1)];
    assert!(
        worker.contains("wall clock") && !worker.contains("scenario"),
        "{worker}"
    );
    let run = stdout(&leaselab(&["run", "--help"], dir.path()));
    assert!(
        run.contains("Lease length in scenario milliseconds"),
        "{run}"
    );
}

/// The install line `completions --help` gives is the README's, and on a fresh account (no
/// completions directory yet) it works as written: the script lands where bash-completion
/// looks, and bash takes it.
#[test]
fn the_completion_install_line_works_on_a_fresh_account() {
    let dir = tempfile::tempdir().unwrap();
    let help = stdout(&leaselab(&["completions", "--help"], dir.path()));
    let line = help
        .lines()
        .find(|l| l.starts_with("mkdir -p "))
        .unwrap_or_else(|| panic!("no install line in\n{help}"));
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    assert!(
        readme.unwrap().lines().any(|l| l.trim_end() == line),
        "the README does not show {line}"
    );
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_leaselab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new("sh")
        .args(["-c", line])
        .env("HOME", &home)
        .env("PATH", &path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let script = home.join(".local/share/bash-completion/completions/leaselab");
    let loaded = Command::new("bash")
        .args(["-c", "source \"$1\" && complete -p leaselab", "-"])
        .arg(&script)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.status.success(),
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(said.contains("-F _leaselab_words leaselab"), "{said}");
}

/// What bash offers for the words of `line` (its last word is the one completed), in `dir`.
fn bash_offers(script: &Path, dir: &Path, line: &str) -> Vec<String> {
    let probe = r#"source "$1"
read -ra COMP_WORDS <<< "$2"
[[ $2 == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$2"; COMP_POINT=${#2}
fn=$(complete -p leaselab | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
"$fn" leaselab "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
    let o = Command::new("bash")
        .args(["-c", probe, "-"])
        .arg(script)
        .arg(line)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut offered: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    offered.sort();
    offered
}

/// Tab after a command offers its built-in names (lessons, scenarios, exercises), and files
/// where a path is taken; flags when a flag is begun, or once the name is given.
#[test]
fn tab_completion_offers_the_built_in_names_and_files_where_a_path_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("leaselab.bash");
    std::fs::write(
        &script,
        stdout(&leaselab(&["completions", "bash"], dir.path())),
    )
    .unwrap();
    let here = dir.path().join("here");
    std::fs::create_dir(&here).unwrap();
    std::fs::write(here.join("my-lesson.toml"), "").unwrap();
    let offers = |line: &str| bash_offers(&script, &here, line);
    let sorted = |names: Vec<&str>| {
        let mut v: Vec<String> = names.into_iter().map(str::to_string).collect();
        v.sort();
        v
    };
    let lessons: Vec<&str> = leaselab::lesson::BUILT_INS.iter().map(|b| b.name).collect();
    let mut with_file = lessons.clone();
    with_file.push("my-lesson.toml");
    assert_eq!(offers("leaselab lesson "), sorted(with_file.clone()));
    assert_eq!(offers("leaselab lesson --check "), sorted(with_file));
    assert_eq!(offers("leaselab lesson zo"), ["zombie-worker"]);
    assert_eq!(offers("leaselab lesson my"), ["my-lesson.toml"]);
    let scenarios: Vec<&str> = leaselab::scenario::Scenario::ALL
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(offers("leaselab run "), sorted(scenarios.clone()));
    assert_eq!(offers("leaselab --scenario "), sorted(scenarios));
    let exercises: Vec<&str> = leaselab::exercise::BUILT_INS
        .iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(offers("leaselab exercise "), sorted(exercises));
    // Where a path is taken: files.
    for line in [
        "leaselab replay ",
        "leaselab exercise one-owner --check ",
        "leaselab --sql ",
        "leaselab lesson --db ",
    ] {
        assert_eq!(offers(line), ["my-lesson.toml"], "{line}");
    }
    // Flags when one is begun, or once the lesson is named; commands first.
    let flags = offers("leaselab lesson zombie-worker ");
    assert!(flags.contains(&"--check".to_string()), "{flags:?}");
    assert!(flags.iter().all(|f| f.starts_with('-')), "{flags:?}");
    assert!(offers("leaselab lesson --").contains(&"--check".to_string()));
    let commands = offers("leaselab ");
    assert!(commands.contains(&"lesson".to_string()), "{commands:?}");
    assert!(commands.iter().all(|c| !c.starts_with('-')), "{commands:?}");
    // zsh and fish name the built-in lessons too (clap's elvish and powershell scripts
    // complete commands and flags only).
    for shell in ["zsh", "fish"] {
        let script = stdout(&leaselab(&["completions", shell], dir.path()));
        assert!(script.contains("zombie-worker"), "{shell}");
    }
}

/// The manual page is one page: it names no other (`leaselab-run(1)`), lists every
/// command, its own commands (`class new-round`) included, and the dashboard's keys.
#[test]
fn the_manual_page_names_no_other_page_and_lists_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let page = stdout(&leaselab(&["man"], dir.path()));
    assert!(!page.contains("(1)"), "{page}");
    assert!(page.contains(".SH KEYS"), "{page}");
    let keys = &page[page.find(".SH KEYS").unwrap()..];
    let keys = &keys[..keys.find(".SH EXTRA").unwrap()];
    for b in leaselab::ui::keys::help_entries(leaselab::ui::keys::Mode::Free) {
        let label = b.label.replace('-', r"\-");
        assert!(
            keys.contains(&format!("\\fB{label}\\fR")),
            "{} missing:\n{keys}",
            b.label
        );
    }
    for shown in [
        "freeze the selected worker",
        r"\fBb\fR",
        r"\fB[/]\fR",
        "SIGSTOP",
    ] {
        assert!(keys.contains(shown), "{shown} missing:\n{keys}");
    }
    for section in ["CLASS NEW-ROUND", "CLASS SCOREBOARD", "REPLAY", "EXPLORE"] {
        assert!(
            page.contains(&format!(".SH \"LEASELAB {section}\"")),
            "no {section}"
        );
    }
    assert!(page.contains(r"\fBleaselab class\fR"), "{page}");
}
