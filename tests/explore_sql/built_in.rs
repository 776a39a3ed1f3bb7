//! The built-in exercises through the grader: every starter is caught as the mistake it
//! teaches, with a shortest schedule that shows its statements; every model answer passes
//! every schedule; a model answer whose finalize forgets the fencing token is caught as a
//! finalize by a non-owner.

use std::sync::Arc;

use leaselab::engine::student::Exercise;
use leaselab::exercise::{built_in, BUILT_INS};
use leaselab::explore::{explore, Check, ExploreOptions, Report};

/// 2 workers x 1 message with every fault, `depth` steps deep, as `explore --sql` grades.
fn grade(exercise: Exercise, depth: usize) -> Report {
    let heartbeats = exercise.heartbeat.is_some();
    let opts = ExploreOptions {
        workers: 2,
        messages: 1,
        max_depth: depth,
        heartbeats,
        idempotent: true,
        sql: Some(Arc::new(exercise)),
        ..ExploreOptions::default()
    };
    explore(&opts, &mut |_| true).expect("the search runs")
}

/// The mistake each starter is written to make.
fn teaches(name: &str) -> Check {
    match name {
        "one-owner" => Check::LeaseExclusivity,
        "stale-finalize" => Check::NonOwnerFinalize,
        "takeover" => Check::Stuck,
        "heartbeat" => Check::LeaseExclusivity,
        other => panic!("a built-in exercise this test does not know: {other}"),
    }
}

#[test]
fn every_starter_is_caught_with_its_statements_on_show() {
    for b in &BUILT_INS {
        let r = grade(b.starter(), 60);
        let text = r.text();
        let want = teaches(b.name);
        assert!(r.broken().contains(&want), "{}: {text}", b.name);
        let v = r.verdicts.iter().find(|v| v.check == want).unwrap();
        assert!(!v.shortest.is_empty(), "{}: a schedule is shown", b.name);
        // The schedule shows the starter's own statements, each with its line in the file.
        let starter = b.starter();
        let claim = &starter.claim.statements[0];
        let at = format!("line {}: ", claim.line);
        assert!(text.contains(&at), "{}: the claim's line: {text}", b.name);
        assert!(
            text.contains("with :now = 1768467600000 (09:00:00.000)"),
            "{}: its parameters: {text}",
            b.name
        );
    }
}

#[test]
fn every_model_answer_passes_every_schedule() {
    for b in &BUILT_INS {
        let r = grade(b.model(), 60);
        assert_eq!(r.broken(), [], "{}: {}", b.name, r.text());
        assert!(r.states > 50, "{}: the search went somewhere", b.name);
    }
}

#[test]
fn a_model_answer_without_the_fencing_token_is_a_finalize_by_a_non_owner() {
    let b = built_in("stale-finalize").expect("a built-in");
    let text = b.solution.replace(" AND LeaseVersion = :version\"]", "\"]");
    assert_ne!(text, b.solution, "the guard was in the model answer");
    let file = "assets/exercises/stale-finalize.solution.toml";
    let r = grade(Exercise::parse(&text, file).expect("it loads"), 60);
    assert!(
        r.broken().contains(&Check::NonOwnerFinalize),
        "{}",
        r.text()
    );
}

/// What a state keeps of its times (where each stands among the instants an answer may
/// change; a time only written or sorted on, by less) leaves nothing out that matters: for
/// every built-in starter and model answer, the search that keeps every time column and each
/// exact distance finds the same checks broken, in at least as many states.
#[test]
fn keeping_every_time_exactly_finds_what_the_regions_find() {
    for b in &BUILT_INS {
        for exercise in [b.starter(), b.model()] {
            let opts = ExploreOptions {
                workers: 2,
                messages: 1,
                max_depth: 60,
                heartbeats: exercise.heartbeat.is_some(),
                idempotent: true,
                sql: Some(Arc::new(exercise)),
                ..ExploreOptions::default()
            };
            let regions = explore(&opts, &mut |_| true).expect("the search runs");
            let exact = explore(
                &ExploreOptions {
                    exact_clock: true,
                    ..opts
                },
                &mut |_| true,
            )
            .expect("the search runs");
            assert_eq!(
                exact.broken(),
                regions.broken(),
                "{}: {}\n{}",
                b.name,
                exact.text(),
                regions.text()
            );
            assert_eq!(exact.outcome(), regions.outcome(), "{}", b.name);
            assert!(exact.states >= regions.states, "{}", b.name);
        }
    }
}
