//! Lesson files: parse errors name the file and line, every built-in lesson holds step by
//! step on a real engine, and stepping back (re-seed and replay) gives the same state.

use leaselab::lesson::{self, check_lesson, parse, Session, BUILT_INS};

const SMALL: &str = r#"format_version = 1
title = "small"
summary = "one claim"

[setup]
workers = 2
messages = 2

[[step]]
do = ["claim Worker-A PAY-001"]
say = "Worker-A claims."
expect = ["PAY-001 owner Worker-A"]

[[step]]
do = ["act Worker-A", "act Worker-A"]
say = "Worker-A finishes."
expect = ["PAY-001 status Processed", "provider PAY-001 calls 1"]
"#;

fn error_of(text: &str) -> String {
    parse("small", "lessons/small.toml", text)
        .expect_err("a bad lesson")
        .to_string()
}

#[test]
fn every_built_in_lesson_passes_every_step() {
    for b in BUILT_INS {
        let lesson = lesson::built_in(b.name).expect("built-in");
        let reports = check_lesson(lesson.clone()).expect("runs");
        assert_eq!(reports.len(), lesson.steps.len());
        for r in &reports {
            assert!(r.passed(), "{}: {}", b.name, r.line(reports.len()));
        }
    }
}

#[test]
fn bad_lessons_are_refused_with_file_and_line() {
    assert!(parse("small", "lessons/small.toml", SMALL).is_ok());
    let cases = [
        (
            SMALL.replace("claim Worker-A PAY-001", "grab Worker-A PAY-001"),
            "lessons/small.toml:10: unknown action 'grab'",
        ),
        (
            SMALL.replace("claim Worker-A PAY-001", "claim Worker-C PAY-001"),
            "lessons/small.toml:10: unknown worker 'Worker-C' (this lesson has Worker-A, Worker-B)",
        ),
        (
            SMALL.replace("claim Worker-A PAY-001", "claim Worker-A PAY-009"),
            "lessons/small.toml:10: unknown message 'PAY-009'",
        ),
        (
            SMALL.replace("\"act Worker-A\", \"act", "\"advance 3s\", \"act"),
            "lessons/small.toml:15: bad number '3s'",
        ),
        (
            SMALL.replace("messages = 2", "messages = -4"),
            "lessons/small.toml:7: messages = -4 is outside 1-1000",
        ),
        (
            SMALL.replace("provider PAY-001 calls 1", "provider PAY-001 calls one"),
            "lessons/small.toml:17: bad number 'one'",
        ),
        (
            SMALL.replace("PAY-001 owner Worker-A", "PAY-001 colour red"),
            "lessons/small.toml:12: unknown message figure 'colour'",
        ),
        (
            SMALL.replace("workers = 2", "workers = 2\nheartbeat = 1"),
            "lessons/small.toml:7: invalid type: integer `1`, expected a boolean",
        ),
        (
            SMALL.replace("workers = 2", "workers = 2\npulse = true"),
            "lessons/small.toml:7: unknown field `pulse`",
        ),
        (
            SMALL.replace("say = \"Worker-A finishes.\"", "say = \"Worker-A finishes."),
            "lessons/small.toml:16: ",
        ),
        (
            SMALL.replace("say = \"Worker-A finishes.\"\n", ""),
            "lessons/small.toml:14: a step has no say",
        ),
        (
            SMALL.replace("claim Worker-A PAY-001", "workers 0"),
            "lessons/small.toml:10: workers 0 is outside 1-26",
        ),
        (
            SMALL.replace("claim Worker-A PAY-001", "batch 101"),
            "lessons/small.toml:10: batch 101 is outside 1-100",
        ),
        (
            SMALL.replace("workers = 2", "workers = 2\nbatch = 0"),
            "lessons/small.toml:7: batch = 0 is outside 1-100",
        ),
        (
            SMALL.replace("claim Worker-A PAY-001", "add-payment 0"),
            "lessons/small.toml:10: add-payment 0 is outside 1-1000",
        ),
        (
            SMALL.replace("workers = 2", "workers = 2\nlease_ms = 900\nheartbeat_ms = 900"),
            "lessons/small.toml:8: heartbeat interval 900 ms must be at least 1 and shorter than the lease",
        ),
        (
            SMALL.replace("workers = 2", "workers = 2\nmax_attempts = 0"),
            "lessons/small.toml:7: max_attempts = 0 is outside 1-1000",
        ),
        (
            SMALL.replace("format_version = 1", "format_version = 2"),
            "lessons/small.toml:1: format_version 2 is not supported",
        ),
    ];
    for (text, want) in cases {
        let e = error_of(&text);
        assert!(e.starts_with(want), "got {e:?}, want {want:?}");
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
}

#[test]
fn a_wrong_expectation_fails_its_step_and_says_what_was_found() {
    let text = SMALL.replace("provider PAY-001 calls 1", "provider PAY-001 calls 2");
    let lesson = parse("small", "small.toml", &text).unwrap();
    let reports = check_lesson(lesson).unwrap();
    assert!(reports[0].passed());
    assert!(!reports[1].passed());
    assert_eq!(
        reports[1].line(2),
        "step 2/2 FAIL: provider PAY-001 calls 2 (line 17): found 1"
    );
}

#[test]
fn an_action_that_cannot_happen_fails_its_step() {
    let text = SMALL.replace(
        "do = [\"act Worker-A\", \"act Worker-A\"]",
        "do = [\"crash Worker-A\", \"act Worker-A\"]",
    );
    let reports = check_lesson(parse("small", "small.toml", &text).unwrap()).unwrap();
    assert!(!reports[1].passed());
    assert!(
        reports[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("'act Worker-A' failed: Worker-A is down")),
        "{:?}",
        reports[1]
    );
}

#[test]
fn the_zombie_lesson_shows_the_fencing_token_and_the_idempotency_key() {
    let mut s = Session::start(lesson::built_in("zombie-worker").unwrap()).unwrap();
    // Through Worker-A's stale finalize in the first half.
    for _ in 0..5 {
        assert!(s.forward().passed());
    }
    let calls = s.engine.provider.calls();
    assert_eq!(s.ledger.rejected_finalizes, 1);
    assert_eq!(s.ledger.ownership_violations, 0);
    assert_eq!(s.ledger.runs_of(1), 1);
    assert_eq!(
        (
            calls["PAY-001"].status_checks,
            calls["PAY-001"].side_effects
        ),
        (2, 2)
    );
    let row = &s.engine.store().messages(0, 1).unwrap()[0];
    assert_eq!(
        (
            row.status.as_str(),
            row.locked_by.as_deref(),
            row.lease_version
        ),
        ("Processed", Some("Worker-B"), 2)
    );
    // The same story with the provider honouring the idempotency key.
    while !s.runner.finished() {
        assert!(s.forward().passed());
    }
    let calls = s.engine.provider.calls();
    assert_eq!(
        (
            calls["PAY-002"].status_checks,
            calls["PAY-002"].side_effects
        ),
        (2, 1)
    );
    assert_eq!(s.ledger.rejected_finalizes, 2);
    let payments = s.engine.store().payments().unwrap();
    assert!(payments.iter().all(|p| p.status == "Paid"));
}

#[test]
fn stepping_back_replays_to_the_same_state_at_every_step() {
    for b in BUILT_INS {
        let mut s = Session::start(lesson::built_in(b.name).unwrap()).unwrap();
        let mut states = vec![s.fingerprint()];
        while !s.runner.finished() {
            s.forward();
            states.push(s.fingerprint());
        }
        // Walk back one step at a time, the way `b` does.
        for k in (0..states.len() - 1).rev() {
            s.back().unwrap();
            assert_eq!(s.runner.done, k);
            assert_eq!(
                s.fingerprint(),
                states[k],
                "{} after stepping back to {k}",
                b.name
            );
        }
        // And forward again from the start, replaying.
        s.goto(states.len() - 1).unwrap();
        assert_eq!(s.fingerprint(), states[states.len() - 1], "{}", b.name);
    }
}

#[test]
fn lessons_load_by_name_or_path_and_unknown_names_are_refused() {
    assert_eq!(lesson::load("lease-expiry").unwrap().name, "lease-expiry");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, SMALL).unwrap();
    let l = lesson::load(path.to_str().unwrap()).unwrap();
    assert_eq!((l.name.as_str(), l.steps.len()), ("mine", 2));
    let e = lesson::load("no-such-lesson").unwrap_err().to_string();
    assert!(e.contains("unknown lesson 'no-such-lesson'") && e.contains("atomic-claim"));
}

#[test]
fn the_authoring_page_shows_the_lease_expiry_lesson_as_it_is() {
    let page = include_str!("../docs/lesson-authoring.md");
    let file = include_str!("../assets/lessons/lease-expiry.toml");
    assert!(
        page.contains(file.trim_end()),
        "docs/lesson-authoring.md's example is not assets/lessons/lease-expiry.toml"
    );
}

#[test]
fn run_until_drained_gives_up_at_once_when_a_frozen_worker_holds_a_lease() {
    let text = SMALL.replace(
        "do = [\"act Worker-A\", \"act Worker-A\"]",
        "do = [\"pause Worker-A\", \"run-until drained\"]",
    );
    let reports = check_lesson(parse("small", "small.toml", &text).unwrap()).unwrap();
    let e = reports[1].error.clone().unwrap_or_default();
    assert!(
        e.contains("'run-until drained' failed: not drained and nothing left to claim (0 Pending, 1 Processing)"),
        "{e}"
    );
    // PAY-001 stays Processing under the frozen Worker-A.
    assert_eq!(reports[1].checks[0].detail, "found Processing");
}

#[test]
fn the_slow_job_lesson_checks_twice_without_heartbeats_and_once_with_them() {
    let mut s = Session::start(lesson::built_in("slow-job").unwrap()).unwrap();
    // Through both workers finishing PAY-001, heartbeats off.
    for _ in 0..4 {
        assert!(s.forward().passed());
    }
    assert_eq!(s.engine.provider.calls()["PAY-001"].status_checks, 2);
    assert_eq!((s.ledger.heartbeats, s.ledger.rejected_finalizes), (0, 1));
    // Through Worker-A finishing PAY-002 with heartbeats on.
    for _ in 0..4 {
        assert!(s.forward().passed());
    }
    assert_eq!(s.engine.provider.calls()["PAY-002"].status_checks, 1);
    assert!(s.ledger.heartbeats >= 4, "{}", s.ledger.heartbeats);
    while !s.runner.finished() {
        assert!(s.forward().passed());
    }
    assert_eq!(s.ledger.leases_lost, 1);
    assert_eq!(s.ledger.processed_more_than_once(), 0);
    let rows = s.engine.store().messages(0, 3).unwrap();
    let check = leaselab::engine::checker::check(&s.ledger, &rows);
    assert!(check.passed(), "{check:?}");
}

#[test]
fn the_poison_message_lesson_dead_letters_then_redrives() {
    let mut s = Session::start(lesson::built_in("poison-message").unwrap()).unwrap();
    for _ in 0..5 {
        assert!(s.forward().passed());
    }
    let row = &s.engine.store().messages(0, 3).unwrap()[1];
    assert_eq!((row.status.as_str(), row.attempts), ("DeadLettered", 3));
    assert_eq!((s.ledger.retries, s.ledger.dead_letters), (4, 1));
    while !s.runner.finished() {
        assert!(s.forward().passed());
    }
    assert_eq!(s.ledger.redriven, 1);
    let rows = s.engine.store().messages(0, 3).unwrap();
    assert!(rows.iter().all(|r| r.status.as_str() == "Processed"));
    let check = leaselab::engine::checker::check(&s.ledger, &rows);
    assert!(check.passed(), "{check:?}");
}

#[test]
fn the_one_writer_lesson_adds_workers_and_batches_claims() {
    let mut s = Session::start(lesson::built_in("one-writer").unwrap()).unwrap();
    assert!(s.forward().passed());
    assert_eq!(s.ledger.claim_transactions, 8);
    assert!(s.forward().passed());
    assert_eq!(s.engine.workers().len(), 4);
    assert_eq!(s.ledger.claim_transactions, 16);
    assert!(s.forward().passed());
    // Eight more messages in four claim transactions of two.
    assert_eq!(s.ledger.claim_transactions, 20);
    assert_eq!(s.ledger.claims_ok, 24);
    assert!(s.forward().passed());
    assert_eq!(
        (s.engine.workers().len(), s.engine.settings.batch()),
        (2, 1)
    );
    let rows = s.engine.store().messages(0, 24).unwrap();
    let check = leaselab::engine::checker::check(&s.ledger, &rows);
    assert!(check.passed(), "{check:?}");
    // Stepping back to the start brings the setup's single worker back.
    s.goto(0).unwrap();
    assert_eq!(s.engine.workers().len(), 1);
}

#[test]
fn beat_extends_one_workers_lease_once_and_is_refused_with_heartbeats_off() {
    let text = r#"format_version = 1
title = "beat"
summary = "one heartbeat"

[setup]
workers = 2
messages = 1
lease_ms = 3000
heartbeats = true

[[step]]
do = ["claim Worker-A PAY-001", "advance 2000", "beat Worker-A", "advance 2000"]
say = "Worker-A extends its lease once; two seconds later it still holds."
expect = ["ledger heartbeats 1", "PAY-001 owner Worker-A", "PAY-001 lease 1"]

[[step]]
do = ["claim Worker-B PAY-001"]
say = "Worker-B is refused: the lease was extended."
expect = ["ledger blocked 1", "PAY-001 owner Worker-A"]
"#;
    let reports = check_lesson(parse("beat", "beat.toml", text).unwrap()).unwrap();
    assert!(reports.iter().all(|r| r.passed()), "{reports:?}");
    let off = text.replace("heartbeats = true", "heartbeats = false");
    let reports = check_lesson(parse("beat", "beat.toml", &off).unwrap()).unwrap();
    assert!(
        reports[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("'beat Worker-A' failed: heartbeats are off")),
        "{:?}",
        reports[0]
    );
}

#[test]
fn a_question_needs_choices_with_one_true_answer() {
    let asked = SMALL.replace(
        "do = [\"act Worker-A\", \"act Worker-A\"]",
        "ask = \"Who finalizes PAY-001?\"\nchoices = [\n  { answer = \"Worker-A\", expect = \"PAY-001 status Processed\" },\n  { answer = \"nobody\", expect = \"PAY-001 status Processing\" },\n]\ndo = [\"act Worker-A\", \"act Worker-A\"]",
    );
    let reports = check_lesson(parse("small", "small.toml", &asked).unwrap()).unwrap();
    assert!(reports[1].passed(), "{:?}", reports[1]);
    assert_eq!(reports[1].answer, Some(0));
    assert_eq!(
        reports[1].answer_line().as_deref(),
        Some("the question's answer 1: Worker-A")
    );
    // Two choices that both hold: the question has no one answer, and the step fails.
    let both = asked.replace("PAY-001 status Processing", "provider PAY-001 calls 1");
    let reports = check_lesson(parse("small", "small.toml", &both).unwrap()).unwrap();
    assert!(!reports[1].passed());
    assert!(
        reports[1]
            .line(2)
            .contains("2 of its 2 choices hold (1, 2)"),
        "{}",
        reports[1].line(2)
    );
    // Mistakes are refused at their line.
    let one = asked.replace(
        "  { answer = \"nobody\", expect = \"PAY-001 status Processing\" },\n",
        "",
    );
    assert!(error_of(&one).contains("an ask needs 2-9 choices, this one has 1"));
    let bare = asked.replace("ask = \"Who finalizes PAY-001?\"\n", "");
    assert!(error_of(&bare).contains("choices without an ask"));
    let wrong = asked.replace("PAY-001 status Processing", "PAY-001 colour blue");
    assert!(error_of(&wrong).contains("unknown message figure 'colour'"));
}

/// A lesson's clock moves only when a step says so (`advance`, `work`): a scripted claim
/// or provider call takes no scenario time, whatever `process_ms` free play uses.
#[test]
fn a_lessons_clock_moves_only_by_advance_and_work() {
    for b in BUILT_INS {
        let lesson = lesson::built_in(b.name).expect("built-in");
        let mut s = Session::start(lesson.clone()).expect("starts");
        let mut expected = s.engine.clock.now();
        for (i, step) in lesson.steps.iter().enumerate() {
            expected += step
                .actions
                .iter()
                .map(|a| match a {
                    lesson::Action::Advance { ms } | lesson::Action::Work { ms } => *ms,
                    _ => 0,
                })
                .sum::<i64>();
            s.forward();
            assert_eq!(
                s.engine.clock.now() - expected,
                0,
                "{} step {}: the clock moved beyond its advance and work",
                b.name,
                i + 1
            );
        }
    }
}

/// Worker-A claims and calls the provider, stalls; the new Worker-A takes PAY-001 over after
/// the lease ran out, and the stalled one wakes and finalizes under its old lease.
const STALL: &str = r#"format_version = 1
title = "stall"

[setup]
workers = 2
messages = 1
GUARD

[[step]]
do = ["claim Worker-A PAY-001", "act Worker-A", "stall Worker-A"]
say = "Worker-A stalls holding PAY-001; its supervisor starts a new Worker-A."
expect = ["PAY-001 owner Worker-A", "PAY-001 lease 1"]

[[step]]
do = ["advance 3100", "claim Worker-A (new) PAY-001"]
say = "The new Worker-A takes PAY-001 over: the row's owner is the same name."
expect = ["PAY-001 owner Worker-A", "PAY-001 lease 2"]

[[step]]
do = ["resume Worker-A (stalled)", "act Worker-A (stalled)"]
say = "The stalled Worker-A finalizes under lease 1."
expect = [EXPECT]
"#;

fn stall_lesson(guard: &str, expect: &str) -> String {
    STALL.replace("GUARD", guard).replace("EXPECT", expect)
}

#[test]
fn a_stall_starts_a_second_worker_of_the_same_name_and_the_guard_decides_its_finalize() {
    // The owner-only guard accepts the stalled worker's stale finalize: a violation.
    let owner = stall_lesson(
        "finalize_guard = \"owner\"",
        "\"ledger violations 1\", \"ledger rejected 0\", \"PAY-001 status Processed\"",
    );
    let lesson = parse("stall", "stall.toml", &owner).expect("parses");
    let reports = check_lesson(lesson.clone()).expect("runs");
    for r in &reports {
        assert!(r.passed(), "{}", r.line(reports.len()));
    }
    let mut s = Session::start(lesson).unwrap();
    s.forward();
    let names: Vec<String> = s.engine.workers().iter().map(|w| w.name.clone()).collect();
    assert_eq!(names, ["Worker-A", "Worker-B", "Worker-A"]);
    assert_eq!(lesson::perform::label(&s.engine, 0), "Worker-A (stalled)");
    assert_eq!(lesson::perform::label(&s.engine, 2), "Worker-A (new)");
    // Leaselab's own guard refuses the same finalize.
    for guard in ["", "finalize_guard = \"fencing-token\""] {
        let fencing = stall_lesson(
            guard,
            "\"ledger violations 0\", \"ledger rejected 1\", \"PAY-001 status Processing\"",
        );
        let reports = check_lesson(parse("stall", "stall.toml", &fencing).unwrap()).unwrap();
        for r in &reports {
            assert!(r.passed(), "{guard:?}: {}", r.line(reports.len()));
        }
    }
}

#[test]
fn after_a_stall_each_action_names_which_of_the_two_workers_it_moves() {
    let good = stall_lesson("# the guard", "\"ledger rejected 1\"");
    assert!(parse("stall", "stall.toml", &good).is_ok());
    for (from, to, says) in [
        (
            "\"resume Worker-A (stalled)\", \"act Worker-A (stalled)\"",
            "\"resume Worker-A\"",
            "stall.toml:20: 'Worker-A' is two workers since the stall at line 10: write \
             'Worker-A (stalled)' or 'Worker-A (new)'",
        ),
        (
            "\"claim Worker-A (new) PAY-001\"",
            "\"claim Worker-B (new) PAY-001\"",
            "stall.toml:15: 'Worker-B (new)': Worker-B has not stalled (a 'stall Worker-B' \
             comes first)",
        ),
        (
            "\"claim Worker-A (new) PAY-001\"",
            "\"claim Worker-A (old) PAY-001\"",
            "stall.toml:15: unknown '(old)' after Worker-A (write (stalled) or (new))",
        ),
        (
            "\"claim Worker-A (new) PAY-001\"",
            "\"stall Worker-A (new)\"",
            "stall.toml:15: 'Worker-A (new)' cannot stall: a worker stalls once, and the one \
             started in its name does not",
        ),
        (
            "\"advance 3100\", ",
            "\"workers 3\", ",
            "stall.toml:15: workers N cannot change the crew of a lesson that stalls a worker \
             (line 10)",
        ),
        (
            "# the guard",
            "finalize_guard = \"names\"",
            "stall.toml:7: finalize_guard = 'names' is not a guard (fencing-token or owner)",
        ),
    ] {
        assert!(good.contains(from), "{from}");
        let e = parse("stall", "stall.toml", &good.replace(from, to))
            .unwrap_err()
            .to_string();
        assert_eq!(e, says);
    }
}

/// An action a step cannot carry out stops the step with a type that names the action as
/// written and keeps why; a figure of a message that does not exist says so.
#[test]
fn a_failed_action_and_an_unreadable_figure_are_typed_with_their_cause() {
    use lesson::{ActionError, Expect, Figure, FigureError, MessageSel, RunError};
    use std::error::Error;
    let text = SMALL.replace(
        "do = [\"claim Worker-A PAY-001\"]",
        "do = [\"crash Worker-B\", \"crash Worker-B\"]",
    );
    let mut s = Session::start(parse("small", "small.toml", &text).unwrap()).unwrap();
    let e = s.runner.apply_next(&mut s.engine).unwrap_err();
    assert!(
        matches!(&e, RunError::Action { text, cause: ActionError::AlreadyDown(who) }
            if text == "crash Worker-B" && who == "Worker-B"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "'crash Worker-B' failed: Worker-B is already down"
    );
    assert!(e.source().is_some_and(|c| c.is::<ActionError>()), "{e:?}");
    let report = s.runner.record(Some(e), Vec::new()).clone();
    assert_eq!(
        report.line(2),
        "step 1/2 FAIL: 'crash Worker-B' failed: Worker-B is already down"
    );

    let missing = Expect {
        text: "PAY-099 status Pending".into(),
        line: 1,
        figure: Figure::Status(MessageSel {
            id: 99,
            key: "PAY-099".into(),
        }),
        value: "Pending".into(),
    };
    let e = lesson::runner::figure(&s.engine, &s.ledger, &missing).unwrap_err();
    assert!(matches!(e, FigureError::NoSuchMessage(99)), "{e:?}");
    assert_eq!(e.to_string(), "message 99 does not exist");
}
