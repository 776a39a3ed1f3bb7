//! Grading a student's SQL for a class: `explore --sql` on the 2 workers x 2 messages world
//! with every fault (crash, clock moves, pause), as the command grades by default: every
//! schedule within its bounds (1 lease expiry per message, 1 crash or stall, 1 heartbeat),
//! up to 60 steps, so a model answer's search closes. The target: under 10 s for each
//! built-in exercise's model answer (every state is visited) and its starter (the search
//! stops a few steps after the first failure). The explorer's own outbox on the same world
//! (12 steps) is measured beside them, for the ratio. Each run's verdict is checked too, so
//! a faster grader that grades wrong fails here.
//!
//! `cargo bench --bench grade`

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use leaselab::engine::student::Exercise;
use leaselab::exercise::built_in;
use leaselab::explore::{explore, ExploreOptions, Outcome};

mod support;
use support::peak_rss_mb;

fn options(sql: Option<Exercise>) -> ExploreOptions {
    let depth = if sql.is_some() { 60 } else { 12 };
    ExploreOptions {
        heartbeats: sql.as_ref().is_some_and(|e| e.heartbeat.is_some()),
        idempotent: true,
        max_depth: depth,
        sql: sql.map(Arc::new),
        ..ExploreOptions::default()
    }
}

fn grade(c: &mut Criterion) {
    let mut runs: Vec<(String, ExploreOptions, Outcome)> = vec![(
        "the explorer's own outbox".into(),
        options(None),
        Outcome::Unfinished,
    )];
    for name in ["one-owner", "stale-finalize", "takeover", "heartbeat"] {
        let b = built_in(name).expect("a built-in");
        runs.push((
            format!("{name}, the model answer"),
            options(Some(b.model())),
            Outcome::Safe,
        ));
        runs.push((
            format!("{name}, the starter"),
            options(Some(b.starter())),
            Outcome::Broken,
        ));
    }
    let mut group = c.benchmark_group("grade 2x2, every fault");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(10));
    for (name, opts, want) in runs {
        let r = explore(&opts, &mut |_| true).expect("the search runs");
        assert_eq!(r.outcome(), want, "{name}: {}", r.text());
        assert!(r.exhaustive, "{name}: no cut");
        println!("{name}: {} states, {} schedules", r.states, r.schedules);
        group.bench_function(name.as_str(), |b| {
            b.iter(|| explore(&opts, &mut |_| true).expect("the search runs"))
        });
    }
    group.finish();
    println!("peak resident memory: {:.0} MB", peak_rss_mb());
}

criterion_group!(benches, grade);
criterion_main!(benches);
