//! Grading a student's SQL for a class: `explore --sql` on the 2 workers x 2 messages world
//! with every fault (crash, clock jump, pause), every schedule up to 12 steps, as the
//! command grades by default. The target: under 10 s for a file that passes (every state
//! is visited) and for one that breaks. The explorer's own outbox on the same world is
//! measured beside them, for the ratio. Each run's verdict is checked too, so a faster
//! grader that grades wrong fails here.
//!
//! `cargo bench --bench grade`

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use leaselab::engine::student::Exercise;
use leaselab::exercise::built_in;
use leaselab::explore::{explore, Check, ExploreOptions};

mod support;
use support::peak_rss_mb;

fn options(sql: Option<Exercise>) -> ExploreOptions {
    ExploreOptions {
        heartbeats: sql.as_ref().is_some_and(|e| e.heartbeat.is_some()),
        idempotent: true,
        sql: sql.map(Arc::new),
        ..ExploreOptions::default()
    }
}

fn grade(c: &mut Criterion) {
    let one_owner = built_in("one-owner").expect("a built-in");
    let heartbeat = built_in("heartbeat").expect("a built-in");
    let runs: [(&str, ExploreOptions, Vec<Check>); 4] = [
        ("the explorer's own outbox", options(None), vec![]),
        (
            "one-owner, the model answer",
            options(Some(one_owner.model())),
            vec![],
        ),
        (
            "one-owner, the starter",
            options(Some(one_owner.starter())),
            vec![Check::LeaseExclusivity],
        ),
        (
            "heartbeat, the starter",
            options(Some(heartbeat.starter())),
            vec![Check::LeaseExclusivity],
        ),
    ];
    let mut group = c.benchmark_group("grade 2x2, every fault, depth 12");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(30));
    for (name, opts, want) in runs {
        let r = explore(&opts, &mut |_| true).expect("the search runs");
        assert_eq!(r.broken(), want, "{name}: {}", r.text());
        assert!(r.exhaustive, "{name}: no cut");
        println!("{name}: {} states, {} schedules", r.states, r.schedules);
        group.bench_function(name, |b| {
            b.iter(|| explore(&opts, &mut |_| true).expect("the search runs"))
        });
    }
    group.finish();
    println!("peak resident memory: {:.0} MB", peak_rss_mb());
}

criterion_group!(benches, grade);
criterion_main!(benches);
