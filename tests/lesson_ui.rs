//! The lesson in the dashboard: the narration panel drawn into a `TestBackend` (the clock
//! stays frozen, so frames are exact), and `n`, `b` and free play driven through `App`.

use leaselab::lesson;
use leaselab::ui::{self, App, DashboardOptions, Theme};

mod support;

use crossterm::event::KeyCode;
use support::{frame, frame_lines, key, lesson_app, next, press};

fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut s = String::new();
    for line in frame_lines(app, width, height) {
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// At 80x24 the panel has six lines under its title: every step's narration and its
/// checks must fit there, whole.
#[test]
fn every_built_in_narration_fits_the_minimum_screen() {
    for b in lesson::BUILT_INS {
        let mut app = lesson_app(b.name);
        let total = app.stage().lesson().unwrap().runner.total();
        for step in 0..=total {
            app.refresh(20, 10);
            let view = app.snapshot().lesson.as_ref().unwrap();
            let lines = ui::render::narration::lines(view, &app.theme, 78);
            let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            assert!(
                lines.len() <= 6,
                "{} step {step}: {} lines\n{}",
                b.name,
                lines.len(),
                text.join("\n")
            );
            next(&mut app);
        }
    }
}

/// The narration panel's lines: from its title to the pane below it (the log's verdict
/// lines and the timeline's legend have their own ✗).
fn narration(screen: &str) -> String {
    screen
        .lines()
        .skip_while(|l| !l.contains("Lesson step"))
        // The pane below may be joined to the panel (`├ Events`).
        .take_while(|l| {
            !["┌ Events", "├ Events", "┌ Timeline", "├ Timeline"]
                .iter()
                .any(|p| l.contains(p))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn rows(app: &App) -> Vec<(String, String, Option<String>, i64)> {
    let store = app.engine.store();
    store
        .messages(0, store.message_count().unwrap())
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.status.to_string(), r.locked_by, r.lease_version))
        .collect()
}

fn done(app: &App) -> usize {
    app.stage().lesson().unwrap().runner.done
}

#[test]
fn narration_at_the_minimum_size() {
    let mut app = lesson_app("lease-expiry");
    next(&mut app);
    next(&mut app);
    next(&mut app); // Worker-B is blocked by the crashed Worker-A's lease
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn narration_on_a_larger_screen() {
    let mut app = lesson_app("zombie-worker");
    for _ in 0..5 {
        next(&mut app);
    }
    let t = frame(&mut app, 120, 40);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn a_failed_expectation_shows_as_a_cross_with_what_was_found() {
    let text = include_str!("../assets/lessons/lease-expiry.toml")
        .replace("\"ledger blocked 1\"", "\"ledger blocked 0\"");
    let lesson = lesson::parse("wrong", "wrong.toml", &text).unwrap();
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    for _ in 0..3 {
        next(&mut app);
    }
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("✗ ledger blocked 0 (found 1)"), "{s}");
    assert!(s.contains("✓ PAY-001 owner Worker-A"), "{s}");
}

#[test]
fn the_first_frame_is_paused_before_step_one_and_says_how_to_go_on() {
    let mut app = lesson_app("atomic-claim");
    app.start();
    let s = screen(&mut app, 80, 24);
    assert!(app.paused() && !app.engine.clock.is_running());
    assert!(s.contains("LESSON 0/5"), "{s}");
    assert!(s.contains("Lesson step 0/5"), "{s}");
    assert!(s.contains("n: claim Worker-A"), "{s}");
    assert!(s.contains(" atomic-claim "), "{s}");
    assert!(s.contains("b back"), "{s}");
}

#[test]
fn b_steps_back_to_the_same_state_at_every_step() {
    let mut app = lesson_app("lease-expiry");
    let mut states = vec![rows(&app)];
    let total = app.stage().lesson().unwrap().runner.total();
    for _ in 0..total {
        next(&mut app);
        states.push(rows(&app));
    }
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("LESSON DONE 6/6"), "{s}");
    assert!(!narration(&s).contains('✗'), "{s}");
    for k in (0..total).rev() {
        press(&mut app, 'b');
        assert_eq!(done(&app), k);
        assert_eq!(rows(&app), states[k], "after stepping back to {k}");
        // The checks shown are the replayed step's own, and they hold again.
        if let Some(r) = app.stage().lesson().unwrap().last_report() {
            assert!(r.passed(), "{r:?}");
        }
    }
    press(&mut app, 'b');
    assert_eq!(done(&app), 0, "b at the start stays at the start");
}

#[test]
fn a_change_in_free_play_leaves_the_script_and_n_replays_it() {
    let mut app = lesson_app("lease-expiry");
    next(&mut app); // Worker-A claims PAY-001
    let after_one = rows(&app);
    next(&mut app); // Worker-A crashes
    let after_two = rows(&app);
    press(&mut app, 'A'); // the clock jumps a whole lease: not in the script
    press(&mut app, '2');
    press(&mut app, 'c'); // and Worker-B crashes too
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("OFF SCRIPT"), "{s}");
    assert!(s.contains("n or b puts the lesson back"), "{s}");
    next(&mut app); // replays steps 1-2, then runs step 3: Worker-B is blocked
    assert_eq!(done(&app), 3);
    let r = app.stage().lesson().unwrap().last_report().unwrap().clone();
    assert!(r.passed(), "{r:?}");
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("OFF SCRIPT"), "{s}");
    press(&mut app, 'a');
    press(&mut app, 'b'); // off script again, and b still goes one step back
    assert_eq!(done(&app), 2);
    assert_eq!(rows(&app), after_two);
    press(&mut app, 'b');
    assert_eq!(rows(&app), after_one);
    press(&mut app, 'R'); // from the very start
    assert_eq!(done(&app), 0);
}

#[test]
fn a_frozen_worker_stays_frozen_in_free_play() {
    let mut app = lesson_app("zombie-worker");
    next(&mut app);
    next(&mut app); // Worker-A is frozen; its lease has expired
    press(&mut app, ' '); // free play: Worker-B runs, Worker-A must not
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while app.ledger.finalized < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "Worker-B never drained the outbox"
        );
        if let Ok(ev) = app
            .engine
            .events()
            .recv_timeout(std::time::Duration::from_secs(1))
        {
            app.apply_event(&ev);
        }
    }
    assert!(app.engine.worker(0).unwrap().status().paused);
    assert_eq!(app.ledger.per_worker.get("Worker-A"), None);
    assert_eq!(app.ledger.rejected_finalizes, 0);
    next(&mut app); // back on the script: step 3, Worker-B reclaims PAY-001
    assert_eq!(done(&app), 3);
    assert!(app
        .stage()
        .lesson()
        .unwrap()
        .last_report()
        .unwrap()
        .passed());
}

#[test]
fn help_in_a_lesson_names_n_and_b_and_fits_the_minimum_size() {
    let mut app = lesson_app("atomic-claim");
    press(&mut app, '?');
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("n / b"), "{s}");
    assert!(s.contains("scroll"), "{s}");
}

#[test]
fn the_ledger_shows_provider_side_effects_once_the_provider_is_idempotent() {
    let mut app = lesson_app("zombie-worker");
    for _ in 0..5 {
        next(&mut app);
    }
    // The lesson names the provider's side effects: they show beside the calls.
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("side effects 2"), "{s}");
    // With room, each figure has its own line: room the SQL pane the step opened takes
    // while it is shown.
    // A figure on a line of its own: its name, then spaces up to its value.
    let own_line = |s: &str, name: &str| {
        s.lines().any(|l| {
            l.split_once(&format!("│{name}  "))
                .is_some_and(|(_, rest)| {
                    rest.trim_start().starts_with(|c: char| c.is_ascii_digit())
                })
        })
    };
    let s = screen(&mut app, 120, 36);
    assert!(s.contains("provider calls 2"), "{s}");
    assert!(!own_line(&s, "provider calls"), "{s}");
    press(&mut app, 's');
    let s = screen(&mut app, 120, 36);
    // The step's own figures on lines of their own; the rest packed below them, every
    // one still shown.
    assert!(own_line(&s, "rejected"), "{s}");
    for shown in [
        "provider calls 2",
        "results 1",
        "restarts 0",
        "duplicates 0",
    ] {
        assert!(s.contains(shown), "{shown}: {s}");
    }
    for _ in 0..2 {
        next(&mut app); // the same story with the idempotent provider
    }
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("PAY-002 provider calls 2"), "{s}");
    assert!(s.contains("  side effects 1"), "{s}");
    // The provider now keeps idempotency keys: its side effects in all have a line.
    let s = screen(&mut app, 120, 40);
    assert!(own_line(&s, "side effects"), "{s}");
}

#[test]
fn every_built_in_lesson_steps_to_the_end_and_back_in_the_dashboard() {
    for b in lesson::BUILT_INS {
        let mut app = lesson_app(b.name);
        let total = app.stage().lesson().unwrap().runner.total();
        for k in 1..=total {
            next(&mut app);
            let s = screen(&mut app, 80, 24);
            assert!(!narration(&s).contains('✗'), "{} step {k}:\n{s}", b.name);
            assert!(s.contains(&format!("step {k}/{total}")), "{s}");
        }
        for k in (0..total).rev() {
            press(&mut app, 'b');
            assert_eq!(done(&app), k, "{}", b.name);
            let s = screen(&mut app, 80, 24);
            assert!(!narration(&s).contains('✗'), "{} back at {k}:\n{s}", b.name);
        }
    }
}

#[test]
fn a_frozen_worker_is_marked_in_the_workers_panel() {
    let mut app = lesson_app("zombie-worker");
    next(&mut app);
    next(&mut app); // pause Worker-A: frozen after its provider call
    let s = screen(&mut app, 80, 24);
    let line = s.lines().find(|l| l.contains("Worker-A")).unwrap();
    assert!(line.contains("FROZEN"), "{s}");
    next(&mut app);
    next(&mut app);
    next(&mut app); // resume Worker-A
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("FROZEN"), "{s}");
}

#[test]
fn narration_longer_than_its_panel_scrolls_and_a_new_step_starts_at_its_top() {
    // one-writer, with a second step that says more than four workers leave room for.
    let text = include_str!("../assets/lessons/one-writer.toml").replace(
        "Four workers, eight more jobs:",
        "Four workers, eight more jobs, and a narration one line too long:",
    );
    let lesson = lesson::parse("one-writer", "one-writer.toml", &text).unwrap();
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    next(&mut app);
    next(&mut app); // four workers: the top row is taller, the narration scrolls
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("↓ 1 more · PgDn"), "{s}");
    assert!(!s.contains("✓ ledger duplicates 0"), "{s}");
    key(&mut app, KeyCode::PageDown);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("✓ ledger duplicates 0"), "{s}");
    assert!(s.contains("↑ PgUp"), "{s}");
    // The table stayed where it was: PgDn went to the narration.
    assert_eq!(app.ui.table_offset, 8, "{s}");
    key(&mut app, KeyCode::PageUp);
    assert!(screen(&mut app, 80, 24).contains("↓ 1 more"));
    key(&mut app, KeyCode::PageDown);
    next(&mut app);
    screen(&mut app, 80, 24);
    assert_eq!(app.ui.narration_scroll, 0, "a new step starts at its top");
    // With room, the whole narration shows and PgDn pages the table again.
    let s = screen(&mut app, 120, 40);
    assert!(!s.contains("more · PgDn"), "{s}");
}

#[test]
fn a_dead_letter_count_and_the_retry_time_are_on_screen_at_80x24() {
    let mut app = lesson_app("poison-message");
    next(&mut app);
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!("poison_retry_80x24", t.backend());
    for _ in 0..4 {
        next(&mut app);
    }
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!("poison_dead_letter_80x24", t.backend());
}

#[test]
fn the_writes_a_lesson_counts_are_in_the_ledger_at_120x40() {
    let mut app = lesson_app("one-writer");
    next(&mut app);
    let t = frame(&mut app, 120, 40);
    insta::assert_snapshot!("one_writer_120x40", t.backend());
}

#[test]
fn with_many_workers_at_80x24_the_workers_pane_pages_and_the_log_keeps_three_lines() {
    let mut app = lesson_app("one-writer");
    next(&mut app);
    next(&mut app);
    for _ in 0..22 {
        press(&mut app, 'w');
    }
    assert_eq!(app.engine.workers().len(), 26);
    let lines = frame_lines(&mut app, 80, 24);
    let s = lines.join("\n");
    let events = lines
        .iter()
        .position(|l| l.contains("┌ Events") || l.contains("├ Events"))
        .unwrap();
    let logged = lines[events + 1..]
        .iter()
        .take_while(|l| l.starts_with('│'))
        .count();
    assert!(logged >= 3, "{s}");
    let lesson = lines
        .iter()
        .position(|l| l.contains("Lesson step"))
        .unwrap();
    assert!(events - lesson > 2, "two narration lines at least:\n{s}");
    assert!(s.contains("writes 32"), "{s}");
}

#[test]
fn a_question_waits_for_a_prediction_then_the_step_reveals_the_answer() {
    let mut app = lesson_app("lease-expiry");
    next(&mut app);
    next(&mut app);
    // The first `n` at a question asks it and runs nothing.
    press(&mut app, 'n');
    assert_eq!(done(&app), 2);
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!("question_at_the_minimum_size", t.backend());
    // A digit is a prediction here, not a worker's selection.
    press(&mut app, '1');
    assert_eq!(app.ui.selected, 0);
    press(&mut app, '9');
    assert!(app
        .ui
        .notice
        .as_deref()
        .unwrap_or("")
        .contains("choices 1-2"));
    press(&mut app, '2');
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(
        all.contains("▶2 Worker-B is refused until the lease runs out"),
        "{all}"
    );
    press(&mut app, 'n');
    assert_eq!(done(&app), 3);
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(
        all.contains("✓ You predicted 2: Worker-B is refused until the lease runs out. Right."),
        "{all}"
    );
    // A wrong prediction is told apart, with the answer.
    press(&mut app, 'b');
    press(&mut app, 'n');
    press(&mut app, '1');
    press(&mut app, 'n');
    let all = frame_lines(&mut app, 120, 40).join("\n");
    assert!(
        all.contains(
            "✗ You predicted 1; the answer is 2: Worker-B is refused until the lease runs out."
        ),
        "{all}"
    );
    // Past the question, digits select workers again.
    press(&mut app, '2');
    assert_eq!(app.ui.selected, 1);
}

/// The history verdict judges what the log shows above it: when a frame first logs it,
/// every worker's line is already above, and only the verdict's own lines follow it.
#[test]
fn the_verdict_comes_after_every_event_it_judges() {
    for b in lesson::BUILT_INS {
        let mut app = lesson_app(b.name);
        let total = app.stage().lesson().unwrap().runner.total();
        let mut verdicts = 0;
        for k in 1..=total {
            next(&mut app);
            screen(&mut app, 80, 24);
            let lines: Vec<_> = app.log.lines().iter().collect();
            let seen = lines
                .iter()
                .filter(|l| l.text.starts_with("VERDICT"))
                .count();
            if seen > verdicts {
                let at = lines
                    .iter()
                    .rposition(|l| l.text.starts_with("VERDICT"))
                    .unwrap();
                let after: Vec<String> = lines[at + 1..]
                    .iter()
                    .filter(|l| l.actor != "history")
                    .map(|l| format!("{} {}", l.actor, l.text))
                    .collect();
                assert!(
                    after.is_empty(),
                    "{} step {k}: the verdict precedes {after:?}",
                    b.name
                );
            }
            verdicts = seen;
        }
    }
}

/// A worker's block lasts as long as the lease it met: once the clock passes that lease,
/// the pane no longer calls it BLOCKED (lease-expiry step 4 says the row is claimable).
#[test]
fn a_block_ends_when_the_lease_it_met_runs_out() {
    let mut app = lesson_app("lease-expiry");
    for _ in 0..3 {
        next(&mut app);
    }
    let s = screen(&mut app, 80, 24);
    // The Workers pane's line of Worker-B (right of the table).
    let worker_b = |s: &str| {
        s.lines()
            .filter_map(|l| l.split_once("┃│").map(|(_, pane)| pane.to_string()))
            .find(|l| l.contains("Worker-B"))
            .unwrap()
    };
    assert!(worker_b(&s).contains("BLOCKED"), "{s}");
    next(&mut app); // advance 3100: past Worker-A's lease
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("claimable again"), "{s}");
    let line = worker_b(&s);
    assert!(
        !line.contains("BLOCKED") && !line.contains("PAY-001"),
        "{s}"
    );
}

/// Two workers of one name after a stall: the Workers pane, the timeline and the log say
/// which is which, at the smallest screen too.
#[test]
fn a_stalled_worker_and_its_namesake_are_told_apart_on_screen() {
    let text = r#"format_version = 1
title = "stall"
[setup]
workers = 2
messages = 1
[[step]]
do = ["claim Worker-A PAY-001", "act Worker-A", "stall Worker-A"]
say = "Worker-A stalls; a new Worker-A starts."
[[step]]
do = ["advance 3100", "claim Worker-A (new) PAY-001"]
say = "The new Worker-A takes PAY-001 over."
"#;
    let lesson = lesson::parse("stall", "stall.toml", text).unwrap();
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    next(&mut app);
    next(&mut app);
    let narrow = screen(&mut app, 80, 24);
    for shown in [
        "A stalled  FROZEN",
        "A new ",
        "Worker-B",
        "(new) RECLAIMED PAY-001",
    ] {
        assert!(narrow.contains(shown), "{shown}:\n{narrow}");
    }
    let wide = screen(&mut app, 120, 40);
    for shown in ["Worker-A (stalled) FROZEN", "Worker-A (new)", "Worker-B"] {
        assert!(wide.contains(shown), "{shown}:\n{wide}");
    }
    // Without a stall, names are as ever.
    let plain = screen(&mut lesson_app("zombie-worker"), 120, 40);
    assert!(
        !plain.contains("(new)") && !plain.contains("stalled"),
        "{plain}"
    );
}

/// The narration panel has no bottom border of its own: the pane below closes it, its top
/// corners joined to the panel's sides (`├`, `┤`), so no box looks left open.
#[test]
fn the_narration_panel_is_joined_to_the_pane_below_it() {
    for (width, height, steps) in [(80, 24, 3), (120, 40, 2), (80, 24, 0)] {
        let mut app = lesson_app("lease-expiry");
        for _ in 0..steps {
            next(&mut app);
        }
        let lines = frame_lines(&mut app, width, height);
        let title = lines
            .iter()
            .position(|l| l.contains("Lesson step"))
            .expect("the panel");
        let below = lines[title + 1..]
            .iter()
            .find(|l| !l.starts_with('│'))
            .unwrap();
        assert!(
            below.starts_with('├') && below.trim_end().ends_with('┤'),
            "{width}x{height}:\n{}",
            lines.join("\n")
        );
    }
}

/// A lesson that ends on a failed history check (the harm it shows on purpose) says so in
/// its last narration, so a class does not read the ✗ as the lab's mistake.
#[test]
fn a_lesson_that_ends_on_a_failed_check_says_why_in_its_last_step() {
    let mut ended_failed = Vec::new();
    for b in lesson::BUILT_INS {
        let mut app = lesson_app(b.name);
        let total = app.stage().lesson().unwrap().runner.total();
        for _ in 0..total {
            next(&mut app);
        }
        let s = screen(&mut app, 120, 40);
        if !s.contains("VERDICT ✗") {
            continue;
        }
        ended_failed.push(b.name);
        let say = &app.snapshot().lesson.as_ref().unwrap().say;
        assert!(
            say.to_lowercase().contains("verdict"),
            "{}: ends on VERDICT ✗ and its last step does not say why:\n{say}",
            b.name
        );
    }
    assert!(ended_failed.contains(&"zombie-worker"), "{ended_failed:?}");
}

/// The event log wraps a long line under its own text rather than cut it mid-word:
/// poison-message's first step sends the class to a line that is wider than 80 columns.
#[test]
fn a_long_event_line_wraps_whole_at_80x24() {
    let mut app = lesson_app("poison-message");
    next(&mut app);
    let s = screen(&mut app, 80, 24);
    let log: String = s
        .lines()
        .skip_while(|l| !l.contains(" Events "))
        .map(|l| l.trim_matches(|c| "│▲▼█║".contains(c)).trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        log.contains("(provider unavailable (failure 1 of 2)); retry from 09:00:01.000"),
        "{s}"
    );
}

/// In a lesson every worker is paused: one whose block has ended is `paused` like the
/// others, not `idle` (slow-job step 8, poison-message steps 6-8).
#[test]
fn a_worker_whose_block_ended_reads_paused_like_the_others_in_a_lesson() {
    for (name, steps) in [
        ("slow-job", 8),
        ("poison-message", 6),
        ("poison-message", 8),
    ] {
        let mut app = lesson_app(name);
        for _ in 0..steps {
            next(&mut app);
        }
        let s = screen(&mut app, 80, 24);
        let states: Vec<&str> = s
            .lines()
            .flat_map(|l| l.split("Worker-").skip(1))
            .filter_map(|rest| rest.split_whitespace().nth(1))
            .collect();
        assert!(!states.is_empty(), "{s}");
        assert!(
            !states.contains(&"idle"),
            "{name} step {steps}: {states:?}\n{s}"
        );
    }
}

/// Every built-in lesson fits 80x24 as drawn: at no step does the narration panel hide a
/// line (its `more · PgDn` hint), whatever the workers and ledgers take.
#[test]
fn every_built_in_lesson_shows_its_whole_narration_at_80x24() {
    let mut hidden = Vec::new();
    for b in lesson::BUILT_INS {
        let mut app = lesson_app(b.name);
        let total = app.stage().lesson().unwrap().runner.total();
        for step in 0..=total {
            let s = screen(&mut app, 80, 24);
            if s.contains("more · PgDn") {
                hidden.push(format!("{} step {step}:\n{s}", b.name));
            }
            next(&mut app);
        }
    }
    assert!(hidden.is_empty(), "{}", hidden.join("\n"));
}

/// A line longer than half the log is cut after two rows (`…`), so one long verdict does
/// not push every other line off an 80x24 screen.
#[test]
fn a_very_long_event_line_takes_at_most_half_the_log() {
    let mut app = lesson_app("no-claim");
    for _ in 0..4 {
        next(&mut app);
    }
    let s = screen(&mut app, 80, 24);
    let log: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.contains(" Events "))
        .skip(1)
        .take_while(|l| l.starts_with('│'))
        .collect();
    assert_eq!(log.len(), 3, "{s}");
    // Two rows of the verdict's long line, and the line before it.
    let firsts = log.iter().filter(|l| l.contains(":00.000 ")).count();
    assert!(firsts >= 2, "{s}");
    assert!(log.iter().any(|l| l.contains('…')), "{s}");
}

/// With leasing off, `+N` after the row a worker works on counts the loaded rows still to
/// come after it, as the help says: six loaded, PAY-001 first, five more.
#[test]
fn a_loaded_workers_count_is_the_rows_after_the_one_it_works_on() {
    let mut app = lesson_app("no-claim");
    // What n does next is said in the event log's word: leasing off, a worker loads.
    let strip = frame_lines(&mut app, 120, 40).remove(1);
    assert!(strip.contains("n: load Worker-A, load Worker-B"), "{strip}");
    next(&mut app); // both workers load the six Pending rows
    let all = frame_lines(&mut app, 120, 40).join("\n");
    assert!(all.contains("LOADED 6 pending"), "{all}");
    assert!(all.contains("PAY-001 no lease +5"), "{all}");
    assert!(!all.contains("no lease +6"), "{all}");
    next(&mut app); // Worker-A did PAY-001: PAY-002 next, four after it
    let all = frame_lines(&mut app, 120, 40).join("\n");
    assert!(all.contains("PAY-002 no lease +4"), "{all}");
}

/// With leasing off nobody owns a message, so the ledger says ownership violations do not
/// apply rather than count none, as the JSON report (null) and the text report (n/a) do.
#[test]
fn with_leasing_off_the_ledger_says_violations_do_not_apply() {
    let mut app = lesson_app("no-claim");
    next(&mut app);
    let all = frame_lines(&mut app, 120, 40).join("\n");
    assert!(all.contains("LEASING OFF"), "{all}");
    let line = all
        .lines()
        .find(|l| l.contains("violations"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(line.contains("n/a"), "{line}");
    let mut on = lesson_app("atomic-claim");
    next(&mut on);
    let all = frame_lines(&mut on, 120, 40).join("\n");
    let line = all.lines().find(|l| l.contains("violations")).unwrap();
    assert!(!line.contains("n/a") && line.contains('0'), "{line}");
}

/// A question is asked before its step runs, and the panel numbers it as that step, as a
/// recording's marker (`step 3 of 6: question`) and `--check` (`step 3/6`) do.
#[test]
fn a_question_is_numbered_as_the_step_it_asks_about() {
    let mut app = lesson_app("lease-expiry");
    next(&mut app);
    next(&mut app);
    press(&mut app, 'n'); // the third step's question
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(all.contains("Predict:"), "{all}");
    assert!(all.contains("Lesson step 3/6: its question"), "{all}");
    press(&mut app, '2');
    press(&mut app, 'n'); // the step runs and the answer is revealed
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(all.contains("Lesson step 3/6 ·"), "{all}");
}
