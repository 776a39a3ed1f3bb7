//! The bench measures real runs; here only their correctness is checked (never their speed:
//! timings belong to `leaselab bench`, not to tests).

use leaselab::bench::{measure, BenchError, BenchOptions, BenchReport, BenchRun, Mode};

mod support;
use leaselab::engine::store::Durability;

#[test]
fn every_bench_mode_ends_with_the_exactly_once_check() {
    let dir = tempfile::tempdir().unwrap();
    let ceiling = 1_000.0;
    for (mode, workers, batch) in [
        (Mode::Leased, 3, 1),
        (Mode::Batch, 3, 16),
        (Mode::Naive, 1, 1),
    ] {
        let run = measure(
            dir.path(),
            mode,
            workers,
            batch,
            500,
            Durability::Off,
            ceiling,
        )
        .unwrap();
        assert!(run.exactly_once && run.passed, "{mode:?}: {run:?}");
        assert_eq!(run.per_worker.iter().sum::<u64>(), 500, "{mode:?}");
        assert_eq!(run.per_worker.len(), workers);
    }
}

#[test]
fn a_naive_run_with_two_workers_is_reported_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let run = measure(dir.path(), Mode::Naive, 2, 1, 200, Durability::Off, 1_000.0).unwrap();
    assert!(!run.exactly_once && !run.passed, "{run:?}");
}

#[test]
fn the_bench_report_has_the_documented_shape() {
    let opts = BenchOptions {
        messages: 300,
        workers: vec![1, 4],
        durability: Durability::Off,
        batch: 16,
        scale_to: Some(2_000),
        postgres: None,
        pgbench: None,
        effectum: None,
        rounds: 1,
    };
    let report = leaselab::bench::run(&opts, |_| {}).unwrap();
    let j = serde_json::to_value(&report).unwrap();
    assert_eq!(j["synchronous"], "off");
    assert_eq!(j["messages"], 300);
    assert!(j["ceiling_txn_per_s"].as_f64().unwrap() > 0.0);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        8,
        "leased+plain+batch per worker count, naive at 1 and 2"
    );
    // The plain reference loop ran beside the leased one, each message once.
    for w in [1, 4] {
        assert!(
            runs.iter()
                .any(|r| r["mode"] == "plain" && r["workers"] == w && r["exactly_once"] == true),
            "{runs:?}"
        );
    }
    let plain_target = j["targets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["what"].as_str().unwrap().contains("plain") && t["got"].as_f64().is_some());
    assert!(plain_target, "{}", j["targets"]);
    for r in runs {
        for key in [
            "mode",
            "workers",
            "batch",
            "msgs_per_s",
            "ratio",
            "per_worker",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    assert!(runs
        .iter()
        .any(|r| r["mode"] == "batch" && r["batch"] == 16));
    assert!(j["scaling"]["cost_ratio"].as_f64().unwrap() > 0.0);
    let targets = j["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 4, "{targets:?}");
    for t in targets {
        assert!(t["met"].is_boolean() && t["bound"].is_f64(), "{t}");
    }
    assert!(report.text().contains("target: leased, 4 workers"));
    // Each leased run says where a message's time went; the event rows are written inside
    // the two transactions, so they take part of that time, never more.
    for r in runs.iter().filter(|r| r["mode"] == "leased") {
        let cost = &r["cost"];
        let part = |k: &str| cost[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
        assert!(part("claim_us") > 0.0 && part("finalize_us") > 0.0, "{r}");
        assert!(part("provider_us") > 0.0, "{r}");
        assert!(part("events_us") > 0.0, "{r}");
        assert!(
            part("events_us") < part("claim_us") + part("finalize_us"),
            "{r}"
        );
    }
    assert!(runs
        .iter()
        .filter(|r| r["mode"] != "leased")
        .all(|r| r.get("cost").is_none()));
    assert!(report.text().contains("leased, 4 workers: claim "));
}

#[test]
fn a_target_bound_is_a_floor_for_ratios_and_a_ceiling_for_the_scaling_cost() {
    use leaselab::bench::Target;
    let floor = |got| Target {
        what: "ratio",
        bound: 0.4,
        at_most: false,
        got: Some(got),
        rounds: vec![got],
    };
    let ceiling = |got| Target {
        what: "cost",
        bound: 1.3,
        at_most: true,
        got: Some(got),
        rounds: vec![got],
    };
    assert_eq!(floor(0.42).met(), Some(true));
    assert_eq!(floor(0.39).met(), Some(false));
    assert_eq!(ceiling(1.03).met(), Some(true));
    assert_eq!(ceiling(1.31).met(), Some(false));
    assert_eq!(ceiling(0.97).to_string(), "cost <= 1.3: 0.97, met");
}

/// A reference program that never answers is stopped at its time limit, with what it
/// started (here a `sleep` it left running), and the bench says so in one line.
#[test]
fn an_effectum_program_that_never_answers_is_stopped_with_all_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let program = support::stand_in(
        dir.path(),
        "silent",
        &format!(
            "sleep 600 &\necho $! > {0}.tmp\nmv {0}.tmp {0}\nwait",
            started.display()
        ),
    );
    let limit = std::time::Duration::from_secs(5);
    let err = leaselab::bench::measure_effectum(&program, dir.path(), (4, 100), limit)
        .expect_err("no answer");
    assert!(
        matches!(err, BenchError::EffectumTimedOut { seconds: 5, .. }),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("no result after 5 s; stopped it"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    // The limit allows a minute plus a millisecond a job.
    assert_eq!(
        leaselab::bench::effectum_time_limit(100_000),
        std::time::Duration::from_secs(160)
    );
    let pid: i32 = std::fs::read_to_string(&started)
        .expect("the program started its sleep before the limit")
        .trim()
        .parse()
        .unwrap();
    support::wait_until_gone(pid);
}

/// A run of `mode` with 4 workers in `round` at `ratio` (to half the ceiling).
fn run_at(mode: Mode, round: usize, ratio: f64) -> BenchRun {
    BenchRun {
        mode,
        round,
        workers: 4,
        batch: 1,
        msgs_per_s: ratio * 1_000.0,
        ratio,
        ceiling_txn_per_s: 2_000.0,
        per_worker: vec![25, 25, 25, 25],
        seconds: 0.1,
        exactly_once: true,
        passed: true,
        busy_met: 0,
        cost: None,
    }
}

#[test]
fn each_target_is_the_median_of_its_figure_taken_within_each_round() {
    // Three rounds: the leased loop at 0.60, 0.40, 0.50 of half the ceiling, the plain
    // loop at 0.50, 0.20, 0.50. Each round's leased/plain is 1.2, 2.0, 1.0: the target's
    // figure is their median, 1.2, not the ratio of the medians (0.5 / 0.5 = 1.0).
    let runs = vec![
        run_at(Mode::Leased, 1, 0.60),
        run_at(Mode::Plain, 1, 0.50),
        run_at(Mode::Leased, 2, 0.40),
        run_at(Mode::Plain, 2, 0.20),
        run_at(Mode::Leased, 3, 0.50),
        run_at(Mode::Plain, 3, 0.50),
    ];
    let report = BenchReport {
        synchronous: "normal".into(),
        messages: 100,
        ceiling_txn_per_s: 2_000.0,
        runs,
        scaling: None,
        targets: Vec::new(),
        postgres: None,
    };
    let targets = report.targets();
    let find = |what: &str| targets.iter().find(|t| t.what.contains(what)).unwrap();
    let leased = find("ratio to half the ceiling");
    assert_eq!(leased.rounds, vec![0.60, 0.40, 0.50]);
    assert_eq!(leased.got, Some(0.50));
    assert_eq!(leased.met(), Some(true));
    let over_plain = find("over the plain claim loop");
    let got = over_plain.got.unwrap();
    assert!((got - 1.2).abs() < 1e-9, "{over_plain:?}");
    assert_eq!(over_plain.met(), Some(false));
    assert_eq!(
        over_plain.to_string(),
        "leased, 4 workers, over the plain claim loop with 4 workers >= 1.3: 1.20 \
         (median of 3 rounds: 1.20 2.00 1.00), NOT met"
    );
    // No batch run in any round: nothing to take a median of.
    let batch = targets
        .iter()
        .find(|t| t.what.starts_with("batch"))
        .unwrap();
    assert_eq!((batch.got, batch.rounds.len()), (None, 0));
    assert!(report.text().contains("mode     workers batch round"));
}

/// A failure of the reference program is a type of its own that keeps its cause: what it
/// printed instead of figures is refused in one line, with the parse error beneath it.
#[test]
fn an_effectum_answer_that_is_no_figures_keeps_the_parse_error_as_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let program = support::stand_in(dir.path(), "noise", "echo hello");
    let limit = std::time::Duration::from_secs(60);
    let err = leaselab::bench::measure_effectum(&program, dir.path(), (1, 10), limit)
        .expect_err("no figures");
    assert!(
        matches!(err, BenchError::EffectumNoFigures { .. }),
        "{err:?}"
    );
    let cause = std::error::Error::source(&err).expect("the parse error is kept");
    assert!(cause.is::<serde_json::Error>(), "{cause:?}");
    let line = err.to_string();
    let opening = format!(
        "--effectum {} printed no line of figures (",
        program.display()
    );
    assert!(line.starts_with(&opening), "{line}");
    assert!(
        line.ends_with(&format!("({cause}); is it reference/effectum?")),
        "{line}"
    );
}
