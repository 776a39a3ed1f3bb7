//! `bench --db postgres://...` beside `pgbench`: the script is the store's own statements,
//! pgbench accepts it against a real server, a pgbench that fails says why in one line, and
//! a missing one is said and its comparison skipped. Never a check of speed.

mod pg_support;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use leaselab::bench::{
    find_pgbench, measure_pgbench, pgbench_script, BenchError, PgComparison, Versus,
};
use leaselab::engine::pg::sql::{CLAIM_NEXT_SQL, CLAIM_NEXT_TYPES, FINALIZE_SQL, FINALIZE_TYPES};
use leaselab::engine::store::Durability;
use pg_support::scratch;
use postgres::types::Type;

/// `sql` read from `at` in `script`: its text word for word, each `$n` standing as
/// `(:variable::type)` with the n-th of `types`, the same variable for every `$n`.
/// Returns where it ends in `script`.
fn read_statement(script: &str, at: usize, sql: &str, types: &[Type]) -> usize {
    let mut names: HashMap<usize, String> = HashMap::new();
    let (mut s, mut q) = (
        script[at..].char_indices().peekable(),
        sql.char_indices().peekable(),
    );
    let mut end = at;
    while let Some((_, c)) = q.next() {
        if c == '$' && q.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
            let mut n = 0;
            while let Some((_, d)) = q.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                n = n * 10 + d.to_digit(10).unwrap() as usize;
                q.next();
            }
            let rest = &script[at + s.peek().expect("script ended").0..];
            assert!(rest.starts_with("(:"), "${n} stands as {rest:.40}");
            let close = rest.find(')').expect("a parameter closes");
            let (var, ty) = rest[2..close].split_once("::").expect("(:var::type)");
            assert_eq!(ty, types[n - 1].name(), "${n}'s type");
            let name = names.entry(n).or_insert_with(|| var.to_string());
            assert_eq!(name, var, "${n} stands for one variable");
            for _ in 0..=close {
                s.next();
            }
            continue;
        }
        let (i, got) = s.next().expect("script ended inside a statement");
        assert_eq!(got, c, "script differs from the store's SQL at {i}");
        end = at + i + got.len_utf8();
    }
    assert_eq!(names.len(), types.len(), "every parameter has a variable");
    end
}

#[test]
fn the_pgbench_script_is_the_stores_claim_and_finalize_with_parameters_as_variables() {
    let script = pgbench_script();
    let claim = CLAIM_NEXT_SQL.trim();
    let at = script.find(&claim[..40]).expect("the claim's text");
    let end = read_statement(&script, at, claim, CLAIM_NEXT_TYPES);
    let (gset, rest) = script[end..].split_once('\n').unwrap();
    assert_eq!(gset.trim(), "\\gset c_", "the claimed row is kept");
    let finalize = FINALIZE_SQL.trim();
    let end = read_statement(rest, 0, finalize, FINALIZE_TYPES);
    assert_eq!(&rest[end..], ";\n", "the finalize ends the script");
    assert!(
        !script.contains('$'),
        "no parameter left unreplaced:\n{script}"
    );
    // Every variable the statements read is set before them or kept from the claim.
    for var in [":now", ":until", ":worker", ":c_id", ":c_leaseversion"] {
        assert!(script.contains(var), "{var}");
    }
    assert!(script.starts_with("\\set now "), "{script}");
}

/// pgbench on this machine: in CI it must be there (`.ci/run` installs it with the server).
fn pgbench_or_skip() -> Option<PathBuf> {
    let found = find_pgbench();
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true" && v != "1"),
            "CI=true but no pgbench on PATH or under /usr/lib/postgresql"
        );
        eprintln!("skipped: no pgbench");
    }
    found
}

#[test]
fn pgbench_runs_the_script_against_a_real_server_and_processes_every_message_once() {
    let Some(db) = scratch("pgbench") else { return };
    let Some(program) = pgbench_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 203 messages: rounded up to 51 for each of the 4 clients.
    let rate = measure_pgbench(&program, &db.url, 203, Durability::Off, dir.path())
        .unwrap_or_else(|e| panic!("pgbench: {e}"));
    assert!(rate > 0.0);
    let mut c = db.client();
    let mut count = |sql: &str| -> i64 { c.query_one(sql, &[]).unwrap().get(0) };
    assert_eq!(
        count("SELECT count(*) FROM OutboxMessages WHERE Status = 'Processed'"),
        204
    );
    assert_eq!(count("SELECT count(*) FROM OutboxMessages"), 204);
    // Each message claimed and finalized once, by the script's statements and their events.
    assert_eq!(
        count("SELECT count(*) FROM LeaseEvents WHERE Kind = 'Claimed'"),
        204
    );
    assert_eq!(
        count("SELECT count(DISTINCT MessageId) FROM LeaseEvents WHERE Kind = 'Finalized'"),
        204
    );
    assert_eq!(
        count("SELECT count(*) FROM LeaseEvents WHERE Kind = 'FinalizeRejected'"),
        0
    );
    assert_eq!(
        count("SELECT count(*) FROM Payments WHERE PaymentStatus = 'Paid'"),
        204
    );
    // Its four clients each took a part (worker names 1 to 4, from the client number).
    assert_eq!(
        count("SELECT count(DISTINCT LockedBy) FROM OutboxMessages"),
        4
    );
}

#[test]
fn a_pgbench_that_fails_ends_the_bench_with_its_error_in_one_clean_line() {
    let Some(db) = scratch("pgbenchfails") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("pgbench");
    std::fs::write(
        &program,
        "#!/bin/sh\necho 'starting' >&2\nprintf 'pgbench: error: \\033[31mconnection refused\\n' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = measure_pgbench(&program, &db.url, 40, Durability::Off, dir.path()).unwrap_err();
    assert!(matches!(err, BenchError::PgbenchFailed { .. }), "{err:?}");
    let line = err.to_string();
    assert!(line.contains("connection refused"), "{line}");
    assert!(!line.contains(|c: char| c.is_control()), "{line:?}");
}

#[test]
fn without_pgbench_the_report_says_so_in_one_line_and_has_no_ratio() {
    let versus = Versus {
        workers: 4,
        postgres_msgs_per_s: 7_000.0,
        sqlite_msgs_per_s: 20_000.0,
        postgres_over_sqlite: 0.35,
        pgbench_msgs_per_s: None,
        leased_over_pgbench: None,
        postgres_runs: vec![7_000.0; 3],
        sqlite_runs: vec![20_000.0; 3],
        pgbench_runs: Vec::new(),
        postgres_per_worker: vec![1, 1, 1, 1],
        exactly_once: true,
    };
    let mut pg = PgComparison {
        database: "PostgreSQL database \"leaselab\"".into(),
        synchronous_commit: "off".into(),
        messages: 4,
        repeats: 3,
        pgbench: None,
        pgbench_clients: 4,
        runs: vec![versus.clone()],
    };
    let text = pg.text();
    let said: Vec<&str> = text.lines().filter(|l| l.starts_with("pgbench")).collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(said[0].contains("not found") && said[0].contains("not measured"));
    assert!(text.contains("not measured  yes"), "{text}");
    assert!(pg.passed());
    let j = serde_json::to_value(&pg).unwrap();
    assert!(j["runs"][0]["leased_over_pgbench"].is_null(), "{j}");
    assert_eq!(j["runs"][0]["postgres_over_sqlite"], 0.35);

    pg.pgbench = Some("/usr/bin/pgbench".into());
    pg.runs = vec![Versus {
        pgbench_msgs_per_s: Some(8_000.0),
        leased_over_pgbench: Some(0.875),
        pgbench_runs: vec![8_000.0; 3],
        ..versus
    }];
    let text = pg.text();
    assert!(!text.contains("not measured"), "{text}");
    // The table and what it says of itself fit an 80-column terminal (the two lines of
    // settings above it are sentences, which a terminal wraps).
    for line in text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("workers"))
    {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(text.contains(" 8000            0.88  yes"), "{text}");
    let j = serde_json::to_value(&pg).unwrap();
    assert_eq!(j["runs"][0]["leased_over_pgbench"], 0.875);
}
