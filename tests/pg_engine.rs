//! The engine on PostgreSQL (`--db postgres://...`): headless runs, the dashboard, a reset,
//! the soak and the bench, each on its own scratch database of `LEASELAB_PG_URL`'s server.

mod pg_support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::bench::BenchOptions;
use leaselab::engine::backend::Db;
use leaselab::engine::store::Durability;
use leaselab::engine::{Engine, EngineConfig};
use leaselab::scenario::report::Report;
use leaselab::scenario::{run, RunOptions, Scenario};
use leaselab::ui::{self, App, DashboardOptions, Theme};
use pg_support::scratch;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::Value;

fn leaselab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .output()
        .expect("run leaselab")
}

#[test]
fn run_on_postgres_passes_every_check_and_names_the_database() {
    let Some(db) = scratch("run") else { return };
    let reports = tempfile::tempdir().unwrap();
    let dir = reports.path().to_str().unwrap();
    for origin in ["created", "reused"] {
        let out = leaselab(&[
            "run",
            "outbox-leasing",
            "--json",
            "--db",
            &db.url,
            "--report-dir",
            dir,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{origin}: {stderr}");
        let j: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
        assert_eq!(j["passed"], true);
        assert_eq!(j["unique_processed"], 6);
        assert_eq!(j["processed_more_than_once"], 0);
        assert_eq!(j["database"]["engine"], "PostgreSQL");
        assert_eq!(j["database"]["reused"], origin == "reused");
        let path = j["database"]["path"].as_str().unwrap();
        assert!(path.contains(&db.name), "{path}");
        assert!(!path.contains("postgres://"), "{path}");
    }
    let rows: i64 = db
        .client()
        .query_one(
            "SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processed'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 6, "the run's final state stays in the database");
}

#[test]
fn a_postgres_database_of_another_application_is_refused_in_one_line() {
    let Some(db) = scratch("refuse") else { return };
    db.client()
        .batch_execute("CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)")
        .unwrap();
    let out = leaselab(&["run", "outbox-leasing", "--db", &db.url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("another application (orders)"), "{stderr}");
    let tables: i64 = db
        .client()
        .query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "nothing was created beside it");
}

fn press(app: &mut App, c: char) {
    app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

/// Step the paused dashboard until the table says the outbox drained, or fail.
fn step_until_drained(app: &mut App) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        app.refresh(20, 10);
        let db = &app.snapshot().db;
        if db.total > 0 && db.counts.drained() {
            return;
        }
        assert!(Instant::now() < deadline, "never drained: {:?}", db.counts);
        press(app, '\t');
        press(app, 'n');
        app.absorb_events();
    }
}

#[test]
fn the_dashboard_on_postgres_shows_its_rows_and_a_reset_reseeds_them() {
    let Some(db) = scratch("dash") else { return };
    let opts = DashboardOptions {
        db: Some(PathBuf::from(&db.url)),
        ..DashboardOptions::default()
    };
    let mut app = App::new(opts, Theme::plain()).expect("dashboard on PostgreSQL");
    step_until_drained(&mut app);
    assert_eq!(app.snapshot().db.counts.processed, 6);
    // Wide enough for the header to name the database after everything else.
    let mut t = Terminal::new(TestBackend::new(250, 36)).unwrap();
    ui::draw(&mut t, &mut app).unwrap();
    let screen = format!("{}", t.backend());
    assert!(screen.contains("PostgreSQL database"), "{screen}");
    assert!(screen.contains("Processed"), "{screen}");
    press(&mut app, 'R');
    app.refresh(20, 10);
    let counts = &app.snapshot().db.counts;
    assert_eq!((counts.pending, counts.processed), (6, 0), "{counts:?}");
    let events: Vec<(String, Option<String>)> = db
        .client()
        .query("SELECT Kind, Detail FROM LeaseEvents ORDER BY Seq", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        events,
        [
            ("Seeded".to_string(), Some("6".to_string())),
            (
                "Settings".to_string(),
                Some(
                    "lease_ms=3000 process_ms=1200 leasing=on heartbeats=on heartbeat_ms=1000 batch=1 guard=token"
                        .to_string()
                )
            )
        ],
        "a reset empties the events table too, then records the new seeding and its settings"
    );
}

/// The soak at a CI-friendly size: faults from a fixed seed, every message once.
#[test]
fn the_soak_on_postgres_loses_and_duplicates_nothing() {
    let Some(db) = scratch("soak") else { return };
    let opts = RunOptions {
        workers: Some(6),
        messages: Some(600),
        seed: Some(4242),
        db: Some(PathBuf::from(&db.url)),
        ..RunOptions::default()
    };
    let outcome = run(Scenario::Soak, &opts).expect("the soak runs on PostgreSQL");
    let report = Report::build(&outcome);
    let j = &report.json;
    assert!(report.passed, "{}", report.text);
    assert_eq!(j["database"]["engine"], "PostgreSQL");
    assert_eq!(j["unique_processed"], 600);
    assert_eq!(j["processed_more_than_once"], 0);
    assert_eq!(j["ownership_violations"], 0);
    assert_eq!(j["history"]["lost"]["count"], 0);
    let f = &j["faults"];
    assert!(f["crashes"].as_u64().unwrap() > 0, "{f}");
    assert!(f["clock_jumps"].as_u64().unwrap() > 0, "{f}");
}

/// `bench --db postgres://...`: the SQLite figures as before, and the leased loop on both
/// databases side by side (checked for shape and exactly-once, never for speed).
#[test]
fn the_bench_with_a_postgres_url_reports_both_databases_from_one_run() {
    let Some(db) = scratch("bench") else { return };
    let opts = BenchOptions {
        messages: 200,
        workers: vec![1, 3],
        durability: Durability::Off,
        batch: 8,
        scale_to: None,
        postgres: Some(db.url.clone()),
        // pgbench too where it is installed (in CI it is: tests/pg_bench.rs).
        pgbench: leaselab::bench::find_pgbench(),
        effectum: None,
        rounds: 1,
    };
    let report = leaselab::bench::run(&opts, |_| {}).expect("bench on both");
    let with_pgbench = opts.pgbench.is_some();
    assert!(report.passed());
    let j = serde_json::to_value(&report).unwrap();
    assert_eq!(
        j["runs"].as_array().unwrap().len(),
        8,
        "the SQLite runs stay"
    );
    let pg = &j["postgres"];
    assert!(pg["database"].as_str().unwrap().contains(&db.name), "{pg}");
    assert_eq!(pg["synchronous_commit"], "off");
    let runs = pg["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (r, workers) in runs.iter().zip([1, 3]) {
        assert_eq!(r["workers"], workers);
        assert_eq!(r["exactly_once"], true, "{r}");
        let per_worker = r["postgres_per_worker"].as_array().unwrap();
        assert_eq!(per_worker.len(), workers);
        let total: u64 = per_worker.iter().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(total, 200);
        for key in [
            "postgres_msgs_per_s",
            "sqlite_msgs_per_s",
            "postgres_over_sqlite",
        ] {
            assert!(r[key].as_f64().unwrap() > 0.0, "{key} in {r}");
        }
        assert_eq!(r["postgres_runs"].as_array().unwrap().len(), 3);
        let pgbench_runs = r["pgbench_runs"].as_array().unwrap().len();
        assert_eq!(pgbench_runs, if with_pgbench { 3 } else { 0 }, "{r}");
        assert_eq!(
            r["leased_over_pgbench"].as_f64().is_some_and(|x| x > 0.0),
            with_pgbench,
            "{r}"
        );
    }
    assert!(report.text().contains("PostgreSQL vs SQLite"));
}

#[test]
fn a_second_engine_on_a_postgres_database_in_use_is_refused_until_the_first_ends() {
    let Some(db) = scratch("inuse") else { return };
    let config = EngineConfig {
        db: Some(Db::Postgres(db.url.clone())),
        ..EngineConfig::default()
    };
    let first = Engine::start(config.clone(), true).expect("first engine");
    let err = match Engine::start(config.clone(), true) {
        Ok(_) => panic!("a second engine on the same database must be refused"),
        Err(e) => e,
    };
    assert!(err.is_bad_input(), "{err}");
    let line = err.to_string();
    let me = format!(
        "in use by another leaselab (leaselab pid {}",
        std::process::id()
    );
    assert!(line.contains(&me), "{line}");
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(
        first.store().outbox_counts().unwrap().pending,
        6,
        "untouched"
    );
    drop(first);
    Engine::start(config, true).expect("free again once the first ended");
}

#[test]
fn a_run_on_postgres_records_its_settings_crash_restart_and_provider_calls() {
    let Some(db) = scratch("facts") else { return };
    let opts = RunOptions {
        db: Some(PathBuf::from(&db.url)),
        ..RunOptions::default()
    };
    let outcome = run(Scenario::OutboxLeasing, &opts).unwrap();
    type Row = (String, String, Option<i64>, Option<i64>, Option<String>);
    let rows: Vec<Row> = db
        .client()
        .query(
            "SELECT Worker, Kind, MessageId, LeaseVersion, Detail FROM LeaseEvents ORDER BY Seq",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    let find = |worker: &str, kind: &str| {
        rows.iter()
            .position(|r| r.0 == worker && r.1 == kind)
            .unwrap_or_else(|| panic!("no {kind} by {worker} in {rows:#?}"))
    };
    assert_eq!(rows[1].1, "Settings");
    assert!(rows[1].4.as_deref().unwrap().starts_with("lease_ms=500 "));
    let crashed = find("Worker-A", "Crashed");
    assert_eq!((rows[crashed].2, rows[crashed].3), (Some(1), Some(1)));
    assert_eq!(
        rows[find("Worker-A#2", "Restarted")].4.as_deref(),
        Some("Worker-A")
    );
    let checks = rows.iter().filter(|r| r.1 == "Checked").count() as u64;
    assert_eq!(checks, outcome.ledger.processing_attempts);
}

/// A stall on PostgreSQL: the new Worker-A takes PAY-001 over under the same name, and the
/// stalled one's finalize under lease 1 is accepted by the owner-only guard (a violation)
/// and refused by leaselab's own.
#[test]
fn a_stalled_workers_finalize_on_postgres_follows_the_lessons_guard() {
    let dir = tempfile::tempdir().unwrap();
    for (guard, expect) in [
        (
            "finalize_guard = \"owner\"",
            "\"ledger violations 1\", \"PAY-001 status Processed\", \"PAY-001 lease 2\"",
        ),
        (
            "finalize_guard = \"fencing-token\"",
            "\"ledger rejected 1\", \"PAY-001 status Processing\", \"PAY-001 owner Worker-A\"",
        ),
    ] {
        let Some(db) = scratch("stall") else { return };
        let text = format!(
            "format_version = 1\ntitle = \"stall\"\n[setup]\nworkers = 2\nmessages = 1\n{guard}\n\
             [[step]]\ndo = [\"claim Worker-A PAY-001\", \"act Worker-A\", \"stall Worker-A\", \
             \"advance 3100\", \"claim Worker-A (new) PAY-001\", \"resume Worker-A (stalled)\", \
             \"act Worker-A (stalled)\"]\nsay = \"x\"\nexpect = [{expect}]\n"
        );
        let file = dir.path().join("stall.toml");
        std::fs::write(&file, text).unwrap();
        let out = leaselab(&["lesson", file.to_str().unwrap(), "--check", "--db", &db.url]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{guard}: {stdout}");
        assert!(stdout.contains("1 of 1 steps passed"), "{guard}: {stdout}");
    }
}
