//! `leaselab explore` on the smallest worlds: each mode's verdict with exact state and
//! schedule counts (a change in the engine's steps shows up here), a planted defect in the
//! claim caught, and the saved counterexamples passing `leaselab lesson FILE --check`.

mod support;

use leaselab::explore::{
    explore, Check, Cut, ExploreError, ExploreOptions, Faults, FaultsError, Mode, Report,
};
use support::{leaselab, stderr, stdout};

fn run(opts: ExploreOptions) -> Report {
    explore(&opts, &mut |_| true).expect("explore")
}

/// The 2 x 1 world, every state kept (`--no-reduction`): the exact counts below are the
/// search's over every state. tests/explore_reduction.rs compares it with the reduced one.
fn two_by_one(mode: Mode) -> ExploreOptions {
    ExploreOptions {
        workers: 2,
        messages: 1,
        mode,
        max_depth: 8,
        reduction: false,
        ..ExploreOptions::default()
    }
}

/// (check, states where it is broken, steps of the shortest schedule)
fn verdicts(r: &Report) -> Vec<(Check, u64, usize)> {
    r.verdicts
        .iter()
        .map(|v| (v.check, v.count, v.shortest.len()))
        .collect()
}

#[test]
fn without_leases_two_workers_process_one_message_twice_in_six_steps() {
    let r = run(two_by_one(Mode::NoLeasing));
    assert_eq!((r.states, r.schedules, r.depth), (757, 2018, 8));
    assert!(r.exhaustive && !r.closed);
    assert_eq!(
        verdicts(&r),
        [
            (Check::Lost, 0, 0),
            (Check::ProcessedTwice, 10, 6),
            (Check::SideEffectTwice, 408, 4),
            (Check::Stuck, 0, 0),
        ]
    );
    let twice = &r.verdicts[1].steps();
    assert_eq!(twice[0], "1. Worker-A loads PAY-001 (no lease).");
    assert!(
        twice[5]
            .ends_with("marks PAY-001 Processed, owning nothing: so PAY-001 was processed twice."),
        "{twice:?}"
    );
}

#[test]
fn an_owner_only_guard_lets_a_stalled_worker_finalize_after_its_namesake_reclaimed() {
    let r = run(two_by_one(Mode::OwnerGuard));
    assert_eq!((r.states, r.schedules), (1023, 2596));
    assert_eq!(
        verdicts(&r),
        [
            (Check::Lost, 0, 0),
            (Check::ProcessedTwice, 0, 0),
            (Check::SideEffectTwice, 228, 5),
            (Check::NonOwnerFinalize, 12, 7),
            (Check::LeaseExclusivity, 0, 0),
            (Check::Stuck, 0, 0),
        ]
    );
    let steps = r.verdicts[3].steps();
    assert!(
        steps[2].contains("stalls holding PAY-001 (lease v1)"),
        "{steps:?}"
    );
    assert!(
        steps[5].contains("The new Worker-A claims PAY-001 (lease v2"),
        "{steps:?}"
    );
    assert!(
        steps[6].contains("accepted, though the row was at lease v2, because the guard checks only the owner's name"),
        "{steps:?}"
    );
}

#[test]
fn the_fencing_token_refuses_every_stale_finalize_and_the_idempotency_key_the_rest() {
    let r = run(two_by_one(Mode::FencingToken));
    assert_eq!((r.states, r.schedules), (1011, 2588));
    assert_eq!(
        verdicts(&r),
        [
            (Check::Lost, 0, 0),
            (Check::ProcessedTwice, 0, 0),
            (Check::SideEffectTwice, 222, 5),
            (Check::NonOwnerFinalize, 0, 0),
            (Check::LeaseExclusivity, 0, 0),
            (Check::Stuck, 0, 0),
        ]
    );
    let r = run(ExploreOptions {
        idempotent: true,
        max_depth: 10,
        ..two_by_one(Mode::FencingToken)
    });
    assert_eq!((r.states, r.schedules), (3123, 9424));
    assert_eq!(r.bad_schedules(), 0, "{}", r.text());
}

#[test]
fn a_claim_without_its_claimable_condition_is_caught_in_two_steps() {
    let r = run(ExploreOptions {
        broken_claim: true,
        faults: Faults::default(),
        max_depth: 4,
        ..two_by_one(Mode::FencingToken)
    });
    let exclusivity = r
        .verdicts
        .iter()
        .find(|v| v.check == Check::LeaseExclusivity)
        .expect("the check applies");
    assert!(exclusivity.count > 0, "{}", r.text());
    assert_eq!(
        exclusivity.steps(),
        [
            "1. Worker-A claims PAY-001 (lease v1, until 09:00:03.000).",
            "2. Worker-B claims PAY-001 (lease v2, until 09:00:03.000): so two workers held a live lease on PAY-001 at once.",
        ]
    );
    // The same world with leaselab's own claim: nothing breaks.
    let r = run(ExploreOptions {
        faults: Faults::default(),
        max_depth: 4,
        ..two_by_one(Mode::FencingToken)
    });
    assert_eq!(r.bad_schedules(), 0, "{}", r.text());
}

#[test]
fn a_finalize_that_forgets_the_answer_is_caught_as_lost() {
    let r = run(ExploreOptions {
        forget_answer: true,
        faults: Faults::default(),
        max_depth: 4,
        ..two_by_one(Mode::FencingToken)
    });
    let lost = r.verdicts.iter().find(|v| v.check == Check::Lost).unwrap();
    assert!(lost.count > 0, "{}", r.text());
    assert_eq!(lost.shortest.len(), 3, "{}", r.text());
    assert!(
        lost.steps()[2].ends_with("or with its answer unwritten."),
        "{:?}",
        lost.steps()
    );
}

#[test]
fn without_the_clock_moving_a_crashed_owners_message_is_stuck() {
    let only_crash = ExploreOptions {
        workers: 1,
        messages: 1,
        faults: Faults::parse("crash").unwrap(),
        ..ExploreOptions::default()
    };
    let r = run(only_crash.clone());
    assert_eq!((r.states, r.schedules), (6, 8));
    assert!(r.closed, "every reachable state");
    let stuck = r.verdicts.iter().find(|v| v.check == Check::Stuck).unwrap();
    assert_eq!((stuck.count, stuck.shortest.len()), (2, 2));
    // With clock jumps the lease runs out and the message is taken again (and with the
    // idempotency key, the provider's second call does no second piece of work).
    let r = run(ExploreOptions {
        faults: Faults::parse("crash,jump").unwrap(),
        idempotent: true,
        max_depth: 10,
        ..only_crash
    });
    assert_eq!(r.bad_schedules(), 0, "{}", r.text());
}

#[test]
fn heartbeats_add_schedules_but_every_state_they_reach_is_reached_without_them() {
    let r = run(ExploreOptions {
        heartbeats: true,
        ..two_by_one(Mode::FencingToken)
    });
    // A beat gives a lease as long as a fresh claim's: the states are those above.
    assert_eq!((r.states, r.schedules), (1011, 2908));
}

#[test]
fn max_states_cuts_the_search_and_the_report_says_so() {
    let r = run(ExploreOptions {
        max_states: 50,
        ..two_by_one(Mode::FencingToken)
    });
    assert!(!r.exhaustive && !r.closed);
    assert_eq!(r.states, 50);
    assert!(r.text().contains("CUT at --max-states 50"), "{}", r.text());
    assert_eq!(r.cut, Some(Cut::States));
}

#[test]
fn a_memory_budget_cuts_the_search_and_the_report_says_so() {
    // The process holds more than 1 MiB from the start: the first check cuts, right
    // after the first state's moves.
    let r = run(ExploreOptions {
        max_memory_mib: 1,
        ..two_by_one(Mode::FencingToken)
    });
    assert_eq!(r.cut, Some(Cut::Memory));
    assert!(!r.exhaustive && !r.closed);
    assert!(r.states > 1 && r.states < 20, "{}", r.states);
    assert!(
        r.text()
            .contains("CUT at --max-memory 1 MiB: not exhaustive"),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["cut"], "max-memory");
    // The progress callback is told the memory it was measured against.
    let mut told = None;
    explore(
        &ExploreOptions {
            max_memory_mib: 1,
            ..two_by_one(Mode::FencingToken)
        },
        &mut |p| {
            told = p.memory_mib;
            true
        },
    )
    .unwrap();
    assert!(told.is_some_and(|mib| mib > 1), "{told:?}");
    // The default budget leaves the small world whole.
    let whole = run(two_by_one(Mode::FencingToken));
    assert_eq!(
        (whole.cut, whole.json()["cut"].clone()),
        (None, serde_json::Value::Null)
    );
    assert_eq!(whole.json()["max_memory_mib"], 2048);
}

#[test]
fn the_command_prints_json_and_exits_one_when_a_check_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "explore",
            "--workers",
            "2",
            "--messages",
            "1",
            "--mode",
            "no-leasing",
            "--max-depth",
            "8",
            "--json",
        ];
        args.extend_from_slice(extra);
        leaselab(&args, dir.path())
    };
    let out = run(&["--no-reduction"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(j["exhaustive"], true);
    assert_eq!(j["reduction"], "none");
    assert_eq!(j["states"], 757);
    assert_eq!(j["schedules"], 2018);
    assert_eq!(j["violations"][1]["check"], "processed twice");
    assert_eq!(j["violations"][1]["count"], 10);
    assert_eq!(j["violations"][1]["shortest"].as_array().unwrap().len(), 6);
    // By default one state is kept for each set of states equal up to renaming the
    // workers: fewer states, the same check broken after as many steps.
    let reduced = run(&[]);
    assert_eq!(reduced.status.code(), Some(1), "{}", stderr(&reduced));
    let r: serde_json::Value = serde_json::from_str(&stdout(&reduced)).expect("json");
    assert_eq!(r["reduction"], "workers");
    assert_eq!(r["exhaustive"], true);
    assert_eq!(r["states"], 300);
    assert_eq!(r["violations"][1]["check"], "processed twice");
    assert_eq!(r["violations"][1]["shortest"].as_array().unwrap().len(), 6);
    let ok = leaselab(
        &[
            "explore",
            "--workers",
            "2",
            "--messages",
            "1",
            "--idempotent",
            "--max-depth",
            "6",
        ],
        dir.path(),
    );
    // Nothing broke, but the search was cut at its depth: said as a bound, and not a pass.
    assert_eq!(ok.status.code(), Some(4), "{}", stderr(&ok));
    let text = stdout(&ok);
    assert!(
        text.contains("ok    finalize by a non-owner: no schedule of up to 6 steps breaks it"),
        "{text}"
    );
    assert!(
        text.contains("NOT A PASS: the search did not reach every state"),
        "{text}"
    );
}

/// `explore --save-lesson` in `dir`: the lesson's text.
fn save(dir: &std::path::Path, workers: &str, mode: &str, file: &str) -> String {
    let path = dir.join(file);
    let out = leaselab(
        &[
            "explore",
            "--workers",
            workers,
            "--messages",
            "1",
            "--mode",
            mode,
            "--max-depth",
            "8",
            "--save-lesson",
            path.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("saved the shortest counterexample as a lesson"));
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn saved_counterexamples_are_lessons_that_pass_their_check() {
    let dir = tempfile::tempdir().unwrap();
    for (workers, mode, check, proof) in [
        (
            "2",
            "no-leasing",
            "processed twice",
            "\"PAY-001 processed 2\"",
        ),
        (
            "1",
            "no-leasing",
            "processed twice",
            "\"ledger duplicates 1\"",
        ),
        (
            "2",
            "owner-guard",
            "finalize by a non-owner",
            "\"ledger violations 1\"",
        ),
        (
            "1",
            "owner-guard",
            "finalize by a non-owner",
            "\"ledger violations 1\"",
        ),
        (
            "2",
            "fencing-token",
            "provider side effect twice",
            "\"provider PAY-001 side effects 2\"",
        ),
        (
            "1",
            "fencing-token",
            "provider side effect twice",
            "\"provider PAY-001 side effects 2\"",
        ),
        // Three workers, the states kept one for each renaming of them: the schedule is
        // still one the named workers took.
        (
            "3",
            "owner-guard",
            "finalize by a non-owner",
            "\"ledger violations 1\"",
        ),
    ] {
        let file = format!("{mode}-{workers}.toml");
        let text = save(dir.path(), workers, mode, &file);
        assert!(text.contains(&format!("breaks \"{check}\"")), "{text}");
        // The last step states the figure that shows the check broken.
        let last = text.rsplit("[[step]]").next().unwrap();
        assert!(last.contains(proof), "{mode} x {workers}: {last}");
        let path = dir.path().join(&file);
        let checked = leaselab(&["lesson", path.to_str().unwrap(), "--check"], dir.path());
        assert_eq!(
            checked.status.code(),
            Some(0),
            "{}\n{text}",
            stdout(&checked)
        );
        assert!(
            stdout(&checked).contains("steps passed"),
            "{}",
            stdout(&checked)
        );
    }
}

/// The owner-guard counterexample as the search found it: the stalled Worker-A, the new
/// Worker-A its supervisor started under the same name, and the stale finalize accepted by
/// a guard that checks the owner's name only.
#[test]
fn the_owner_guard_lesson_replays_the_search_with_its_own_names_and_guard() {
    let dir = tempfile::tempdir().unwrap();
    let text = save(dir.path(), "2", "owner-guard", "stale.toml");
    assert!(text.contains("workers = 2\n"), "{text}");
    assert!(text.contains("finalize_guard = \"owner\"\n"), "{text}");
    assert!(!text.contains("Worker-C"), "{text}");
    let actions: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("do = "))
        .collect();
    assert_eq!(
        actions,
        [
            "[\"act Worker-A\"]",
            "[\"act Worker-A\"]",
            "[\"stall Worker-A\"]",
            "[\"wake Worker-A (stalled)\"]",
            "[\"advance 3100\"]",
            "[\"act Worker-A (new)\"]",
            "[\"act Worker-A (stalled)\"]",
        ]
    );
    let last = text.rsplit("[[step]]").next().unwrap();
    assert!(
        last.contains("The stalled Worker-A finalizes PAY-001 under lease v1: accepted"),
        "{last}"
    );
    assert!(!text.contains("refuses"), "{text}");
    assert!(last.contains("\"PAY-001 status Processed\""), "{last}");
    // The dashboard's last screen: the stalled one's finalize accepted, as told.
    let lesson = leaselab::lesson::load(dir.path().join("stale.toml").to_str().unwrap()).unwrap();
    let mut app = leaselab::ui::App::for_lesson(
        lesson,
        leaselab::ui::DashboardOptions::default(),
        leaselab::ui::Theme::plain(),
    )
    .unwrap();
    for _ in 0..7 {
        support::next(&mut app);
    }
    let screen = support::frame_lines(&mut app, 120, 40).join("\n");
    for shown in [
        "Worker-A (stalled)",
        "Worker-A (new)",
        "Worker-A   (stalled) FINALIZED PAY-001 Paid (lease v1)",
        "Worker-A   (new) RECLAIMED PAY-001",
        "✓ ledger violations 1",
    ] {
        assert!(screen.contains(shown), "{shown}:\n{screen}");
    }
    assert!(!screen.contains("REJECTED"), "{screen}");
    // The header says which guard the finalizes meet, whatever room it has.
    for width in [80, 200] {
        let header = support::frame_lines(&mut app, width, 40).remove(0);
        assert!(
            header.contains("guard:owner") || header.contains("owner-only guard"),
            "{header}"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["explore", "--workers", "4"][..], "--workers"),
        (&["explore", "--messages", "0"][..], "--messages"),
        (
            &["explore", "--faults", "crash,flood"][..],
            "'crash,flood' has an unknown fault 'flood'",
        ),
        (
            &["explore", "--faults", "flood"][..],
            "'flood' is not a fault",
        ),
        (&["explore", "--mode", "maybe"][..], "--mode"),
        (&["explore", "--max-depth", "101"][..], "--max-depth"),
        (&["explore", "--max-memory", "63"][..], "--max-memory"),
    ] {
        let out = leaselab(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        let given = args.last().unwrap();
        assert!(err.matches(given).count() <= 1, "{given} said once: {err}");
    }
}

/// A search its progress callback stops ends with the stop itself, a variant the caller
/// matches, not a text it compares; it stops at once, at the first state's moves.
#[test]
fn a_search_its_progress_stops_ends_with_the_stop_variant() {
    let mut asked = 0;
    let result = explore(&two_by_one(Mode::FencingToken), &mut |_| {
        asked += 1;
        false
    });
    assert!(matches!(result, Err(ExploreError::Stopped)), "{result:?}");
    assert_eq!(asked, 1);
    assert_eq!(ExploreError::Stopped.to_string(), "stopped");
}

/// Each way a `--faults` list means nothing is a variant of its own, with its line; an
/// unknown fault is kept without its control characters.
#[test]
fn a_faults_list_that_means_nothing_is_refused_with_its_reason() {
    let choose = "choose from crash, jump, pause (or none)";
    for (given, refused, line) in [
        (
            " , ",
            FaultsError::NoFault,
            format!("names no fault: {choose}"),
        ),
        (
            "crash,,jump",
            FaultsError::EmptyItem,
            format!("has an empty item: {choose}, comma-separated"),
        ),
        (
            "none,jump",
            FaultsError::NoneBeside,
            "puts none beside a fault: give none alone".to_string(),
        ),
        (
            "jump,crash,jump",
            FaultsError::Twice("jump".into()),
            "names jump twice".to_string(),
        ),
        (
            "flood",
            FaultsError::NotAFault,
            format!("is not a fault: {choose}"),
        ),
        (
            "crash,flo\x1bod",
            FaultsError::Unknown("flood".into()),
            format!("has an unknown fault 'flood': {choose}"),
        ),
    ] {
        assert_eq!(Faults::parse(given), Err(refused.clone()), "{given:?}");
        assert_eq!(refused.to_string(), line, "{given:?}");
    }
}

/// A schedule leaselab's engine replays without breaking its check is not saved: the
/// search's planted claim defect takes a live lease, the engine's claim does not, and the
/// refusal says what the engine's figures show instead.
#[test]
fn a_counterexample_the_engine_does_not_break_is_refused_with_what_it_shows() {
    let r = run(ExploreOptions {
        broken_claim: true,
        faults: Faults::default(),
        max_depth: 4,
        ..two_by_one(Mode::FencingToken)
    });
    let err = leaselab::explore::save_lesson(&r, std::path::Path::new("explored.toml"))
        .expect_err("the engine keeps the lease");
    assert!(
        matches!(
            err,
            ExploreError::NotBroken {
                check: "lease exclusivity",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the lesson, replayed, does not show lease exclusivity on this schedule: its figures, \
         read from the rows and events, show ledger overlaps 0, PAY-001 owner Worker-A, \
         PAY-001 lease 1"
    );
}

/// A saved lesson's first line is the command that finds its schedule again, every
/// setting that shapes the search in it: run as written, it breaks the same check.
#[test]
fn a_saved_lessons_found_by_line_runs_as_written_and_finds_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("found.toml");
    let out = leaselab(
        &[
            "explore",
            "--workers",
            "2",
            "--messages",
            "1",
            "--mode",
            "no-leasing",
            "--heartbeats",
            "--faults",
            "crash",
            "--max-depth",
            "7",
            "--save-lesson",
            path.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    let command = first
        .strip_prefix("# Found by: leaselab ")
        .unwrap_or_else(|| panic!("{first}"));
    for setting in [
        "--heartbeats",
        "--faults crash",
        "--max-depth 7",
        "--mode no-leasing",
    ] {
        assert!(command.contains(setting), "{setting} in {first}");
    }
    let mut args: Vec<&str> = command.split_whitespace().collect();
    args.push("--json");
    let again = leaselab(&args, dir.path());
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let j: serde_json::Value = serde_json::from_str(&stdout(&again)).expect("json");
    assert_eq!(j["heartbeats"], true, "{j}");
    assert_eq!(j["max_depth"], 7, "{j}");
    let broke = text.lines().nth(1).unwrap();
    let check = broke.split('"').nth(1).unwrap();
    assert!(
        j["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["check"] == check),
        "{check}: {j}"
    );
}
