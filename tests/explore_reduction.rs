//! The explorer's reduction (one state kept for each set of states equal up to renaming
//! the workers) against the search over every state (`--no-reduction`), on small worlds:
//! the same checks break, their shortest schedules have the same length, and the reduced
//! search keeps no more states. Every world of each mode, with faults on and off, and the
//! planted defects.

use leaselab::exercise::built_in;
use leaselab::explore::{explore, Check, ExploreOptions, Faults, Mode, Report};

fn run(opts: &ExploreOptions) -> Report {
    explore(opts, &mut |_| true).expect("explore")
}

/// Each check broken, with the length of its shortest schedule.
fn broken(r: &Report) -> Vec<(Check, usize)> {
    r.verdicts
        .iter()
        .filter(|v| v.count > 0)
        .map(|v| (v.check, v.shortest.len()))
        .collect()
}

/// Both searches of `opts`' world: they agree, and the reduced one keeps no more states.
/// Returns (reduced, every state).
fn agree(opts: ExploreOptions) -> (Report, Report) {
    let reduced = run(&ExploreOptions {
        reduction: true,
        ..opts.clone()
    });
    let every = run(&ExploreOptions {
        reduction: false,
        ..opts
    });
    let o = &every.options;
    let world = format!(
        "{} x {}, {:?}, faults {}, depth {}, broken claim {}, forgotten answer {}",
        o.workers,
        o.messages,
        o.mode,
        o.faults.shown(),
        o.max_depth,
        o.broken_claim,
        o.forget_answer
    );
    assert_eq!(broken(&reduced), broken(&every), "{world}");
    assert!(
        reduced.states <= every.states,
        "{world}: {} reduced, {} every",
        reduced.states,
        every.states
    );
    assert_eq!(
        (reduced.exhaustive, reduced.closed, reduced.depth),
        (every.exhaustive, every.closed, every.depth),
        "{world}"
    );
    // Every schedule the reduced search tells is one its workers took, step by step.
    for v in reduced.verdicts.iter().filter(|v| v.count > 0) {
        let told = v.shortest.len();
        assert_eq!(v.steps().len(), told, "{world}: {:?}", v.check);
    }
    (reduced, every)
}

const MODES: [Mode; 3] = [Mode::NoLeasing, Mode::OwnerGuard, Mode::FencingToken];

#[test]
fn every_mode_and_small_world_breaks_the_same_checks_in_as_many_steps() {
    let worlds: [(usize, u64, usize); 4] = [(1, 1, 8), (2, 1, 8), (3, 1, 7), (2, 2, 7)];
    let mut fewer = 0;
    for (workers, messages, max_depth) in worlds {
        for mode in MODES {
            for faults in [Faults::all(), Faults::default()] {
                let (reduced, every) = agree(ExploreOptions {
                    workers,
                    messages,
                    mode,
                    faults,
                    max_depth,
                    ..ExploreOptions::default()
                });
                if workers == 1 {
                    // One worker, and no stall to make two of it: nothing to rename.
                    if !faults.pause {
                        assert_eq!(reduced.states, every.states);
                    }
                } else if reduced.states < every.states {
                    fewer += 1;
                }
            }
        }
    }
    // Every world of two or three workers: 3 sizes x 3 modes x 2 fault sets.
    assert_eq!(fewer, 18, "the reduction keeps fewer states in each");
}

#[test]
fn the_planted_defects_are_caught_by_both_searches_in_as_many_steps() {
    for mode in [Mode::OwnerGuard, Mode::FencingToken] {
        let (reduced, _) = agree(ExploreOptions {
            workers: 2,
            messages: 1,
            mode,
            max_depth: 8,
            broken_claim: true,
            ..ExploreOptions::default()
        });
        assert!(reduced.broken().contains(&Check::LeaseExclusivity));
        let (reduced, _) = agree(ExploreOptions {
            workers: 2,
            messages: 2,
            mode,
            max_depth: 7,
            forget_answer: true,
            ..ExploreOptions::default()
        });
        assert!(reduced.broken().contains(&Check::Lost));
    }
}

#[test]
fn heartbeats_the_idempotent_provider_and_a_frozen_clock_agree_too() {
    for mode in [Mode::OwnerGuard, Mode::FencingToken] {
        agree(ExploreOptions {
            workers: 2,
            messages: 1,
            mode,
            max_depth: 8,
            heartbeats: true,
            ..ExploreOptions::default()
        });
        agree(ExploreOptions {
            workers: 3,
            messages: 1,
            mode,
            max_depth: 7,
            idempotent: true,
            ..ExploreOptions::default()
        });
        // Without jumps a crashed owner's message is stuck: the stuck check agrees.
        let (reduced, _) = agree(ExploreOptions {
            workers: 2,
            messages: 1,
            mode,
            max_depth: 6,
            faults: Faults::parse("crash").unwrap(),
            ..ExploreOptions::default()
        });
        assert!(reduced.broken().contains(&Check::Stuck));
    }
}

/// A search cut by `--max-states` is cut in both; with fewer states a depth, the reduced
/// one gets as deep or deeper in as many states.
#[test]
fn a_cut_search_stays_cut_in_both_and_the_reduced_one_gets_as_deep() {
    let opts = ExploreOptions {
        workers: 2,
        messages: 2,
        max_depth: 12,
        max_states: 200,
        ..ExploreOptions::default()
    };
    let reduced = run(&opts);
    let every = run(&ExploreOptions {
        reduction: false,
        ..opts
    });
    assert!(!reduced.exhaustive && !every.exhaustive);
    assert_eq!((reduced.states, every.states), (200, 200));
    assert!(
        reduced.depth >= every.depth,
        "{} {}",
        reduced.depth,
        every.depth
    );
}

/// A student's statements that treat a worker's name as a name (compared with the row's
/// owner for equality, written to it) are searched up to renaming the workers, with the
/// same checks broken after as many steps as over every state, for every built-in starter
/// and model answer; statements that sort by the owner are searched over every state.
#[test]
fn a_students_statements_are_reduced_only_when_they_treat_a_name_as_a_name() {
    for b in &leaselab::exercise::BUILT_INS {
        for exercise in [b.starter(), b.model()] {
            let opts = ExploreOptions {
                workers: 2,
                messages: 1,
                max_depth: 60,
                idempotent: true,
                heartbeats: exercise.heartbeat.is_some(),
                sql: Some(std::sync::Arc::new(exercise)),
                ..ExploreOptions::default()
            };
            assert!(opts.reduced(), "{}", b.name);
            let asked = run(&opts);
            let every = run(&ExploreOptions {
                reduction: false,
                ..opts
            });
            assert_eq!(broken(&asked), broken(&every), "{}", b.name);
            assert!(asked.states < every.states, "{}", b.name);
            assert_eq!(asked.json()["reduction"], "workers");
            assert_eq!(every.json()["reduction"], "none");
        }
    }
    let one_owner = built_in("one-owner").expect("a built-in");
    let sorted = one_owner
        .start
        .replace("ORDER BY CreatedAtUtc, Id", "ORDER BY LockedBy, Id");
    let exercise = leaselab::engine::student::Exercise::parse(&sorted, "sorted.toml").unwrap();
    let opts = ExploreOptions {
        workers: 2,
        messages: 1,
        max_depth: 60,
        idempotent: true,
        sql: Some(std::sync::Arc::new(exercise)),
        ..ExploreOptions::default()
    };
    assert!(!opts.reduced());
    let asked = run(&opts);
    let every = run(&ExploreOptions {
        reduction: false,
        ..opts
    });
    assert_eq!(
        (asked.states, asked.schedules),
        (every.states, every.schedules)
    );
    assert_eq!(asked.json()["reduction"], "none");
}

/// The renamings are built for the worlds the command line allows (1-3 workers); a
/// larger world asked of the library is searched over every state, never squeezed into
/// one.
#[test]
fn a_world_of_more_workers_than_the_renamings_cover_is_searched_whole() {
    let opts = ExploreOptions {
        workers: 4,
        messages: 1,
        max_depth: 5,
        faults: Faults::parse("jump").unwrap(),
        ..ExploreOptions::default()
    };
    let asked = run(&opts);
    let every = run(&ExploreOptions {
        reduction: false,
        ..opts
    });
    assert_eq!((asked.states, asked.depth), (every.states, every.depth));
    assert_eq!(broken(&asked), broken(&every));
    assert!(asked.broken().contains(&Check::SideEffectTwice));
    assert_eq!(asked.json()["reduction"], "none");
}

/// The text says what its counts are: states kept up to renaming the workers or every
/// state, the world's heartbeats, and one state or step as one.
#[test]
fn the_text_says_what_was_counted_and_counts_one_as_one() {
    // One worker that crashes holding its lease, the clock standing still: stuck in one
    // state, after two steps.
    let opts = ExploreOptions {
        workers: 1,
        messages: 1,
        max_depth: 3,
        faults: Faults::parse("crash").unwrap(),
        ..ExploreOptions::default()
    };
    let text = run(&opts).text();
    assert!(
        text.contains("stuck: broken in 1 state; a shortest schedule (2 steps)"),
        "{text}"
    );
    assert!(
        !text.contains(" 1 states") && !text.contains(" 1 steps"),
        "{text}"
    );
    assert!(
        text.contains(" states up to renaming the workers, "),
        "{text}"
    );
    let every = run(&ExploreOptions {
        reduction: false,
        ..opts.clone()
    });
    assert!(!every.text().contains("renaming"), "{}", every.text());
    let one_step = run(&ExploreOptions {
        max_depth: 1,
        ..opts.clone()
    });
    assert!(
        one_step.text().contains("(every schedule up to 1 step)"),
        "{}",
        one_step.text()
    );
    let beats = run(&ExploreOptions {
        heartbeats: true,
        idempotent: true,
        ..opts
    });
    let first = beats.text().lines().next().unwrap_or_default().to_string();
    assert!(
        first.contains("fencing-token with the idempotent provider and heartbeats, faults crash:"),
        "{first}"
    );
}
