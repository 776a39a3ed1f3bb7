//! The dashboard in front of a class (issue 13): every key and the lease version visible
//! at 80x24, database columns apart from ledger figures, the verdict on screen, Esc that
//! never quits, and the small words. Frames are drawn into a `TestBackend` on a paused
//! clock moved by single steps, so each one is exact.

use crossterm::event::KeyCode;
use leaselab::engine::outbox::prelude::*;
use leaselab::scenario::Scenario;
use leaselab::ui::{keys, App, DashboardOptions, Theme};

mod support;

use support::{app, frame_lines, key, lesson_app, press};

/// The footer's hints as drawn: the last lines of the screen, below the last pane.
fn footer(lines: &[String]) -> String {
    let last_border = lines
        .iter()
        .rposition(|l| l.starts_with('└') || l.starts_with('┗'))
        .expect("a pane");
    lines[last_border + 1..].join(" ")
}

/// Step the paused app until its outbox has drained.
fn step_until_drained(app: &mut App) {
    for _ in 0..400 {
        app.refresh(20, 10);
        if app.drained() {
            return;
        }
        press(app, 'n');
        // Time moves only when told, so a worker waiting on nothing still gets its turn.
        if !app.drained() && app.next_mover().is_none() {
            press(app, 'A');
        }
    }
    panic!("the outbox did not drain in 400 steps");
}

#[test]
fn every_binding_is_in_the_footer_or_the_help_at_80x24_and_the_lesson_keys_in_the_footer() {
    let mut free = app(DashboardOptions::default());
    let mut lesson = lesson_app("atomic-claim");
    // The throughput strip shares the status line: it must not push a binding out.
    let mut writer = lesson_app("one-writer");
    press(&mut writer, 'n');
    press(&mut writer, 'n');
    press(&mut writer, 'w');
    assert_eq!(writer.engine.workers().len(), 5);
    // Paused, a step moves no wall time: the strip shows no rate.
    assert!(frame_lines(&mut writer, 80, 24)[1].contains("paused w5 b1"));
    for (name, app) in [
        ("free play", &mut free),
        ("lesson", &mut lesson),
        ("one-writer", &mut writer),
    ] {
        let lines = frame_lines(app, 80, 24);
        let foot = footer(&lines);
        // A lesson's footer keeps to one line at 80x24 so its narration fits: what it
        // leaves out, the help (which scrolls there) lists.
        press(app, '?');
        let help = frame_lines(app, 80, 80).join("\n");
        press(app, '?');
        for b in keys::footer_entries(app.mode()) {
            let hint = format!("{} ", b.label);
            let shown = foot.contains(&hint) || (name != "free play" && help.contains(b.label));
            assert!(shown, "{name}: {} missing from {foot:?}", b.label);
        }
        if name != "free play" {
            for must in ["q ", "? ", "space ", "n ", "b "] {
                assert!(foot.contains(must), "{name}: {must} missing from {foot:?}");
            }
        }
    }
}

#[test]
fn the_lease_version_stays_at_80x24_and_the_ledger_runs_stand_apart() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::CompetingNoClaim,
        ..DashboardOptions::default()
    });
    for _ in 0..10 {
        press(&mut app, 'n');
    }
    let narrow = frame_lines(&mut app, 80, 24);
    let header = narrow.iter().find(|l| l.contains("Key ")).unwrap();
    assert!(header.contains("Ver"), "{header}");
    // Too narrow for both: the database's column wins; the ledger panel keeps duplicates.
    assert!(!header.contains("Processed"), "{header}");
    let wide = frame_lines(&mut app, 120, 36);
    let header = wide.iter().find(|l| l.contains("Key ")).unwrap();
    assert!(header.contains("Ver ┊Processed"), "{header}");
    let pay1 = wide.iter().find(|l| l.contains("PAY-001")).unwrap();
    assert!(
        pay1.contains("0 ┊        2"),
        "Attempts 0 in SQLite, processed twice: {pay1}"
    );
}

#[test]
fn reclaims_and_crashes_stay_in_the_ledger_panel_at_80x24() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n');
    press(&mut app, 'c');
    let lines = frame_lines(&mut app, 80, 24).join("\n");
    for figure in [
        "reclaims 0",
        "crashes 1",
        "restarts 0",
        "violations 0",
        "duplicates 0",
    ] {
        assert!(lines.contains(figure), "{figure}:\n{lines}");
    }
    assert!(lines.contains("history check"), "{lines}");
}

#[test]
fn a_drained_run_shows_its_verdict_and_each_failed_check() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::CompetingNoClaim,
        ..DashboardOptions::default()
    });
    step_until_drained(&mut app);
    let lines = frame_lines(&mut app, 120, 36);
    let all = lines.join("\n");
    assert!(lines[1].contains("VERDICT ✗"), "{}", lines[1]);
    // The verdict names what was found, not the rule it broke ("nothing duplicated").
    assert!(lines[1].contains(" duplicates · "), "{}", lines[1]);
    assert!(!lines[1].contains("nothing duplicated"), "{}", lines[1]);
    assert!(all.contains("✗ history: nothing duplicated:"), "{all}");

    let mut app = self::app(DashboardOptions::default());
    step_until_drained(&mut app);
    let lines = frame_lines(&mut app, 120, 36);
    assert!(
        lines[1].contains("VERDICT ✓ ONE OWNER AT A TIME: 6 processed, each once"),
        "{}",
        lines[1]
    );
}

#[test]
fn esc_closes_help_and_never_quits() {
    let mut app = lesson_app("atomic-claim");
    key(&mut app, KeyCode::Esc);
    assert!(!app.ui.quit);
    press(&mut app, '?');
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Esc);
    assert!(!app.ui.help && !app.ui.quit);
}

#[test]
fn one_payment_and_one_line_are_singular() {
    let mut app = app(DashboardOptions {
        messages: Some(1),
        ..DashboardOptions::default()
    });
    press(&mut app, 'n');
    press(&mut app, 'n');
    let all = frame_lines(&mut app, 120, 36).join("\n");
    assert!(all.contains("seeded 1 payment + outbox rows"), "{all}");
    // At 80x24 the log shows three lines of four, so there is a line to scroll back.
    press(&mut app, 'a');
    frame_lines(&mut app, 80, 24);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Up);
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(all.contains("scrolled back 1 line,"), "{all}");
}

#[test]
fn help_explains_the_columns_the_timeline_marks_and_j_k() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, '?');
    // Read to its end: the help scrolls at 120x40 too.
    let mut all = String::new();
    for _ in 0..20 {
        all.push_str(&frame_lines(&mut app, 120, 40).join("\n"));
        key(&mut app, KeyCode::PageDown);
    }
    for needle in [
        "Ver:",
        "┊Processed:",
        "L loaded",
        "↻ restarted",
        "no lease +",
        "j/k",
    ] {
        assert!(all.contains(needle), "{needle} missing:\n{all}");
    }
}

#[test]
fn free_play_is_not_labelled_as_the_scenario_whose_story_it_does_not_tell() {
    let mut free = app(DashboardOptions::default());
    let header = frame_lines(&mut free, 120, 36).remove(0);
    assert!(header.contains("free play outbox-leasing"), "{header}");
    assert!(!header.contains("scenario outbox-leasing"), "{header}");
    let mut story = app(DashboardOptions {
        scenario: Scenario::LeaseExpiry,
        ..DashboardOptions::default()
    });
    let header = frame_lines(&mut story, 120, 36).remove(0);
    assert!(header.contains("scenario lease-expiry"), "{header}");
}

#[test]
fn sixteen_workers_say_how_many_of_them_are_shown() {
    let mut app = app(DashboardOptions {
        workers: 16,
        ..DashboardOptions::default()
    });
    let all = frame_lines(&mut app, 120, 36).join("\n");
    assert!(all.contains("Workers ─ 1-8 of 16"), "{all}");
    assert!(all.contains("8 of 16 workers"), "{all}");
}

#[test]
fn the_table_follows_the_work_until_scrolled_and_home_follows_again() {
    let mut app = app(DashboardOptions {
        messages: Some(2_000),
        ..DashboardOptions::default()
    });
    let first_row = |app: &mut App| {
        frame_lines(app, 120, 36);
        let s = app.snapshot();
        (s.db.rows.first().map(|r| r.id), s.db.counts.processed)
    };
    for _ in 0..120 {
        press(&mut app, 'n');
    }
    let (first, processed) = first_row(&mut app);
    assert!(processed > 30, "{processed}");
    // Two processed rows above the work, then the rows being worked on.
    assert_eq!(first, Some(processed as i64 - 1));
    key(&mut app, KeyCode::Up);
    let (held, _) = first_row(&mut app);
    for _ in 0..30 {
        press(&mut app, 'n');
    }
    let (still, more) = first_row(&mut app);
    assert!(more > processed);
    assert_eq!(
        still, held,
        "a scrolled table stays where the reader left it"
    );
    press(&mut app, 'g');
    let (first, processed) = first_row(&mut app);
    assert_eq!(
        first,
        Some(processed as i64 - 1),
        "g follows the work again"
    );
    press(&mut app, 'G');
    let (last, _) = first_row(&mut app);
    assert!(last > Some(1_900), "G jumps to the end: {last:?}");
}

#[test]
fn a_200x60_screen_gives_its_room_to_the_log_not_to_empty_rows() {
    let mut app = app(DashboardOptions::default());
    for _ in 0..12 {
        press(&mut app, 'n');
    }
    let lines = frame_lines(&mut app, 200, 60);
    let all = lines.join("\n");
    let top = lines.iter().position(|l| l.contains("Ledgers")).unwrap();
    let bottom = lines
        .iter()
        .position(|l| l.contains("history check"))
        .unwrap();
    // Inside the top row: the table's part of a line, and the ledger's.
    let halves = |l: &String| {
        let (table, side) = l.split_once("┃│").unwrap_or((l, ""));
        (
            table.trim_start_matches('┃').trim().is_empty(),
            side.trim_end_matches('│').trim().is_empty(),
        )
    };
    let inside = &lines[top + 1..bottom];
    let blank_ledger = inside.iter().filter(|l| halves(l).1).count();
    let empty_table = inside.iter().filter(|l| halves(l).0).count();
    assert_eq!(blank_ledger, 0, "{all}");
    // Six messages: the rest of the table's height is the ledger's, not spare room.
    assert!(empty_table <= 8, "{empty_table} empty table rows:\n{all}");
    let events = lines.iter().position(|l| l.contains("Events")).unwrap();
    assert!(60 - events > 30, "the log starts at row {events}:\n{all}");
}

#[test]
fn polls_of_a_drained_outbox_are_counted_apart_from_empty_claims() {
    let mut app = app(DashboardOptions::default());
    step_until_drained(&mut app);
    frame_lines(&mut app, 80, 24);
    let before = app.snapshot().figures.clone();
    for _ in 0..12 {
        press(&mut app, 'n');
    }
    let lines = frame_lines(&mut app, 80, 24);
    let after = app.snapshot().figures.clone();
    assert_eq!(after.claims_empty, before.claims_empty);
    assert!(after.idle_polls >= 6, "{after:?}");
    let claims = lines.iter().find(|l| l.contains("│claims ")).unwrap();
    assert!(
        claims
            .trim_end_matches('│')
            .trim_end()
            .ends_with("blocked 0"),
        "{claims}"
    );
    let wide = frame_lines(&mut app, 120, 36).join("\n");
    assert!(
        wide.contains(&format!("· idle {}", after.idle_polls)),
        "{wide}"
    );
}

#[test]
fn worker_lines_drop_whole_fields_rather_than_cut_one() {
    let mut app = app(DashboardOptions {
        messages: Some(2_000),
        workers: 1,
        ..DashboardOptions::default()
    });
    // A hundred done leaves less room for what the worker owns.
    for _ in 0..300 {
        press(&mut app, 'n');
    }
    press(&mut app, 'n'); // a claim: the worker holds a lease with a countdown
    let lines = frame_lines(&mut app, 120, 36);
    let workers: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("Worker-") && l.contains(" done│"))
        .collect();
    assert!(!workers.is_empty(), "{}", lines.join("\n"));
    for l in &workers {
        assert!(!l.contains('…'), "cut mid-field: {l}");
    }
    assert!(workers.iter().any(|l| l.contains(" ms ")), "{workers:?}");
}

#[test]
fn a_single_step_takes_the_processing_time_on_the_scenario_clock() {
    let mut app = app(DashboardOptions::default());
    let start = app.engine.clock.now();
    press(&mut app, 'n'); // Worker-A claims PAY-001 (lease 3000 ms)
    press(&mut app, 'n'); // Worker-B claims PAY-002
    assert_eq!(app.engine.clock.now(), start, "a claim takes no time");
    press(&mut app, 'n'); // Worker-A calls the provider: 1200 ms of processing
    assert_eq!(app.engine.clock.now(), start + 1_200);
    press(&mut app, 'n'); // Worker-B's processing ran alongside: no more time passes
    assert_eq!(app.engine.clock.now(), start + 1_200);
    let lines = frame_lines(&mut app, 120, 36);
    let row = lines.iter().find(|l| l.contains("┃ 1 PAY-001")).unwrap();
    assert!(row.contains("1800 ms"), "{}", lines.join("\n"));
    // The timeline gives the claim's label its own cells before the provider's answer.
    let all = lines.join("\n");
    let lane = lines
        .iter()
        .find(|l| l.starts_with("│Worker-A"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(lane.contains("001"), "{all}");
    insta::assert_snapshot!("stepped_processing_120x36", all);
}

#[test]
fn enter_on_a_row_shows_that_messages_own_history_and_esc_closes_it() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B claims PAY-002
    press(&mut app, 'c'); // Worker-A crashes holding PAY-001
    press(&mut app, 'n'); // Worker-B calls the provider for PAY-002
    press(&mut app, 'n'); // and finalizes it
    press(&mut app, 'A'); // one lease later, Worker-A's has run out
    for _ in 0..3 {
        press(&mut app, 'n'); // Worker-B reclaims PAY-001, calls, finalizes
    }
    frame_lines(&mut app, 80, 24);
    press(&mut app, 'j'); // the cursor appears and moves to PAY-002
    press(&mut app, 'k'); // back up to PAY-001
    let lines = frame_lines(&mut app, 80, 24);
    assert!(
        lines.iter().any(|l| l.starts_with("┃▶PAY-001")),
        "{}",
        lines.join("\n")
    );
    key(&mut app, KeyCode::Enter);
    for (w, h) in [(80, 24), (120, 40)] {
        let all = frame_lines(&mut app, w, h).join("\n");
        for needle in [
            "PAY-001 (message 1)",
            "09:00:00.000 Worker-A   CLAIMED until 09:00:03.000 (lease v1)",
            "Worker-B   RECLAIMED until",
            "Worker-B   provider call -> Paid",
            "Worker-B   FINALIZED Paid (lease v2)",
            "claims 2 · provider calls 1 · processed 1 · rejected 0",
        ] {
            assert!(all.contains(needle), "{needle} at {w}x{h}:\n{all}");
        }
        insta::assert_snapshot!(format!("message_history_{w}x{h}"), all);
    }
    // With the history open, j walks the cursor on to the next message's own history.
    press(&mut app, 'j');
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(all.contains("PAY-002 (message 2)"), "{all}");
    assert!(all.contains("FINALIZED Paid (lease v1)"), "{all}");
    key(&mut app, KeyCode::Esc);
    let all = frame_lines(&mut app, 80, 24).join("\n");
    assert!(!all.contains("(message 2)") && !app.ui.quit, "{all}");
    let foot = footer(&frame_lines(&mut app, 80, 24));
    assert!(foot.contains("⏎ history"), "{foot}");
}

#[test]
fn at_80x24_the_log_has_room_the_legend_keeps_whole_words_and_dead_letters_fit() {
    use leaselab::engine::store::{ClaimOutcome, FailOutcome, RetryPolicy, Store};
    let mut app = app(DashboardOptions::default());
    let lines = frame_lines(&mut app, 80, 24);
    let all = lines.join("\n");
    let events = lines.iter().position(|l| l.contains("Events")).unwrap();
    let log_rows = lines[events + 1..]
        .iter()
        .take_while(|l| l.starts_with('│'))
        .count();
    assert!(log_rows >= 3, "{log_rows} log lines:\n{all}");
    let legend = lines.iter().find(|l| l.contains("cell ")).unwrap();
    assert!(!legend.contains('…'), "legend cut mid-word: {legend}");
    assert!(legend.contains("! blocked"), "{legend}");
    // A message dead-lettered in SQLite shows its whole status word, and Ver stays.
    let mut store = Store::open(app.engine.db_path(), app.engine.shared.clone()).unwrap();
    let now = app.engine.clock.now();
    let ClaimOutcome::Claimed(lease) = store.claim_next("Worker-Z", now, 3_000).unwrap().value
    else {
        panic!("a claim");
    };
    let policy = RetryPolicy::new(0, 0, 1).unwrap();
    let outcome = store
        .fail_attempt(&lease, "gateway down", now, &policy)
        .unwrap()
        .value;
    assert!(matches!(outcome, FailOutcome::DeadLettered { .. }));
    let lines = frame_lines(&mut app, 80, 24);
    let all = lines.join("\n");
    assert!(
        lines.iter().any(|l| l.contains("PAY-001 DeadLettered")),
        "{all}"
    );
    assert!(lines.iter().any(|l| l.contains("Ver")), "{all}");
}

#[test]
fn a_payment_done_twice_at_the_provider_fails_the_verdict_though_the_outbox_is_clean() {
    // Heartbeats off, no idempotency: Worker-A's lease runs out while it works, Worker-B
    // takes over, and both call the provider. The fencing token keeps the row right
    // (Worker-A's finalize is rejected), but the payment was done twice.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.toml");
    std::fs::write(
        &path,
        r#"format_version = 1
title = "Twice at the provider"
summary = "A lease that runs out mid-job."

[setup]
workers = 2
messages = 1
lease_ms = 3000
heartbeat = false
leasing = true

[[step]]
do = ["claim Worker-A PAY-001", "work 4000", "claim Worker-B PAY-001"]
say = "Worker-B takes over a job Worker-A is still doing."
expect = ["PAY-001 owner Worker-B"]

[[step]]
do = ["act Worker-A", "act Worker-A", "act Worker-B", "act Worker-B"]
say = "Both call the provider; one finalize is rejected."
expect = ["provider PAY-001 calls 2", "PAY-001 processed 1"]
"#,
    )
    .unwrap();
    let lesson = leaselab::lesson::load(path.to_str().unwrap()).unwrap();
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    press(&mut app, 'n');
    press(&mut app, 'n');
    app.refresh(20, 10);
    assert!(app.drained());
    let lines = frame_lines(&mut app, 120, 60);
    let all = lines.join("\n");
    assert!(
        all.contains("VERDICT ✗ 1 problem: 1 payment with side effects repeated"),
        "{all}"
    );
    assert!(all.contains("PAY-001: 2 side effects"), "{all}");
    assert!(!all.contains("history check clean"), "{all}");
}

/// The help at 80x24, scrolled from its top to its end: every line it holds.
fn whole_help(app: &mut App) -> String {
    let mut seen = String::new();
    for _ in 0..40 {
        seen.push_str(&frame_lines(app, 80, 24).join("\n"));
        key(app, KeyCode::Down);
    }
    seen
}

#[test]
fn help_is_modal_and_scrolls_to_every_key_at_80x24() {
    let mut app = lesson_app("lease-expiry");
    let done = |app: &App| app.stage().lesson().unwrap().runner.done;
    press(&mut app, '?');
    let first = frame_lines(&mut app, 80, 24).join("\n");
    assert!(
        first.contains("scroll"),
        "a help longer than the screen says it scrolls:\n{first}"
    );
    // Keys behind the help do nothing: no lesson step, no cursor, no crash.
    for c in ['n', 'j', 'c', 'a', ' ', 'p'] {
        press(&mut app, c);
    }
    assert_eq!(done(&app), 0, "a step was taken behind the help");
    assert!(app.ui.help, "the help closed on a key that is not its own");
    assert!(app.ui.table_cursor.is_none());
    let all = whole_help(&mut app);
    // The legend after Home/End and every binding's key are reachable.
    for needle in [
        "Home/End",
        "↻ restarted",
        "loaded rows.",
        "l / h",
        "p / D",
        "w / W",
        "c / r",
        "n / b",
    ] {
        assert!(all.contains(needle), "{needle} is not in the help:\n{all}");
    }
    // `?` closes it, and keys act again.
    press(&mut app, '?');
    assert!(!app.ui.help);
    press(&mut app, 'n');
    assert_eq!(done(&app), 1);
}

fn lesson_from(text: &str) -> App {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.toml");
    std::fs::write(&path, text).unwrap();
    let lesson = leaselab::lesson::load(path.to_str().unwrap()).unwrap();
    App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap()
}

#[test]
fn a_worker_line_says_what_is_true_now_not_what_was() {
    let mut app = lesson_from(
        r#"format_version = 1
title = "stale"
[setup]
workers = 3
messages = 2
[[step]]
do = ["claim Worker-A PAY-001", "claim Worker-B PAY-001"]
say = "Worker-B is blocked by Worker-A's lease."
expect = ["ledger blocked 1"]
[[step]]
do = ["act Worker-A", "act Worker-A"]
say = "Worker-A finalized: nothing blocks Worker-B any more."
expect = ["PAY-001 status Processed"]
[[step]]
do = ["claim Worker-C PAY-002", "crash Worker-C", "advance 3100", "claim Worker-A PAY-002"]
say = "Worker-C crashed holding PAY-002; Worker-A took it over."
expect = ["PAY-002 owner Worker-A"]
"#,
    );
    press(&mut app, 'n');
    let line = |app: &mut App, who: &str, w: u16, h: u16| {
        frame_lines(app, w, h)
            .into_iter()
            .filter_map(|l| l.find(who).map(|at| l[at..].to_string()))
            .find(|l| {
                ["BLOCKED", "idle", "CRASHED", "paused"]
                    .iter()
                    .any(|s| l.contains(s))
            })
            .unwrap_or_default()
    };
    assert!(line(&mut app, "Worker-B", 120, 40).contains("BLOCKED"));
    press(&mut app, 'n');
    let b = line(&mut app, "Worker-B", 120, 40);
    assert!(!b.contains("BLOCKED") && !b.contains("PAY-001"), "{b}");
    press(&mut app, 'n');
    let c = line(&mut app, "Worker-C", 120, 40);
    assert!(
        c.contains("CRASHED") && c.contains("taken by Worker-A"),
        "{c}"
    );
    let c = line(&mut app, "Worker-C", 80, 24);
    assert!(
        c.contains("CRASHED") && c.contains('→') && !c.contains("PAY-002"),
        "{c}"
    );
}

#[test]
fn the_header_says_whether_heartbeats_are_on_and_the_strip_cuts_no_word() {
    let mut app = app(DashboardOptions::default());
    let wide = frame_lines(&mut app, 120, 40);
    assert!(wide[0].contains("heartbeats on"), "{}", wide[0]);
    // The paused strip names the next mover in whole words, whatever gives way.
    for width in [80, 100] {
        let strip = frame_lines(&mut app, width, 24)[1].trim_end().to_string();
        assert!(strip.contains("next: Worker-"), "{width}: {strip}");
        let last = strip.split_whitespace().last().unwrap();
        assert!(
            ["runs", "steps", "slows", "message"].contains(&last) || last.ends_with('…'),
            "{width}: a word is cut: {strip}"
        );
    }
    press(&mut app, 'h');
    let wide = frame_lines(&mut app, 120, 40);
    assert!(wide[0].contains("heartbeats OFF"), "{}", wide[0]);
    let narrow = frame_lines(&mut app, 80, 24);
    assert!(narrow[0].contains("♥OFF"), "{}", narrow[0]);
}

/// What a mark or word of the workers pane is once names, message keys, numbers, units,
/// borders and cuts are taken out: `→B` is `→`, `♥300` is `♥`, `Worker-A` is nothing.
fn shape(token: &str) -> String {
    let t: String = token
        .chars()
        .filter(|c| !"┌┐└┘─│┏┓┗┛━┃·…`,;:.()".contains(*c))
        .collect();
    let mut out = String::new();
    let mut rest = t.as_str();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("Worker-") {
            // A worker's name: its letter and incarnation.
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
                .unwrap_or(after.len());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("PAY-") {
            rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
        } else {
            let c = rest.chars().next().unwrap();
            if !c.is_ascii_digit() {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    // A short name after a mark (`→B`), or alone (`A stalled`).
    let mut chars: Vec<char> = out.chars().collect();
    let n = chars.len();
    if n >= 1 && chars[n - 1].is_ascii_uppercase() && (n == 1 || !chars[n - 2].is_alphanumeric()) {
        chars.pop();
    }
    let out: String = chars.into_iter().collect();
    match out.as_str() {
        "ms" | "s" | "/" => String::new(),
        _ => out,
    }
}

/// The shapes of the words of `text`; a mark is a word of its own (`▶→Worker-A`).
fn shapes(text: &str) -> std::collections::BTreeSet<String> {
    let mut spaced = String::new();
    for c in text.chars() {
        match c {
            '▶' | '→' | '♥' => spaced.extend([' ', c, ' ']),
            _ => spaced.push(c),
        }
    }
    spaced
        .split_whitespace()
        .map(shape)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Which dashboards draw a worker in `state`. A match without a catch-all: a new state
/// does not compile until it is placed here, and then its word must be in their help.
fn drawn_in(state: leaselab::engine::worker::WorkerState) -> &'static [keys::Mode] {
    use keys::Mode::*;
    use leaselab::engine::worker::WorkerState::*;
    const ALL: &[keys::Mode] = &[Free, Lesson, Replay, Watch, Processes];
    match state {
        // An outside worker frozen (a recorded freeze, SIGSTOP) is `Paused` and FROZEN.
        Idle | Processing | Crashed | Paused => ALL,
        Claiming | Finalizing | Blocked | Stopped => &[Free, Lesson],
        Held => &[Processes],
        Left | Unknown => &[Replay, Watch, Processes],
    }
}

/// One worker line of every kind a dashboard of `mode` can draw in `state`.
fn views_of(
    mode: keys::Mode,
    state: leaselab::engine::worker::WorkerState,
) -> Vec<leaselab::ui::app::WorkerView> {
    use leaselab::engine::outbox::{Lease, MessageRef};
    use leaselab::engine::worker::{BlockedOn, WorkerStatus};
    let threads = matches!(mode, keys::Mode::Free | keys::Mode::Lesson);
    let now = leaselab::engine::clock::SCENARIO_START_MS;
    let lease = |until_ms: i64| Lease {
        id: 1,
        key: "PAY-001".into(),
        owner: "Worker-A".into(),
        until_ms,
        version: 1,
        seeding: 1,
    };
    let base = WorkerStatus {
        name: "Worker-A".into(),
        state,
        paused: state == leaselab::engine::worker::WorkerState::Paused,
        ..WorkerStatus::default()
    };
    let mut statuses = vec![
        base.clone(),
        WorkerStatus {
            lease: Some(lease(now + 1_200)),
            ..base.clone()
        },
        WorkerStatus {
            lease: Some(lease(now + 30_000)),
            ..base.clone()
        },
        WorkerStatus {
            lease: Some(lease(now - 1)),
            ..base.clone()
        },
    ];
    if threads {
        statuses.push(WorkerStatus {
            lease: Some(lease(now + 1_200)),
            last_beat_ms: Some(now - 300),
            ..base.clone()
        });
        statuses.push(WorkerStatus {
            blocked_on: Some(BlockedOn {
                id: 1,
                key: "PAY-001".into(),
                owner: "Worker-B".into(),
                until_ms: now + 900,
            }),
            ..base.clone()
        });
        statuses.push(WorkerStatus {
            working_on: Some(MessageRef {
                id: 1,
                key: "PAY-001".into(),
            }),
            queued: 2,
            ..base.clone()
        });
    }
    let frozen: &[bool] = match (state, threads) {
        (leaselab::engine::worker::WorkerState::Paused, true) => &[false, true],
        (leaselab::engine::worker::WorkerState::Paused, false) => &[true],
        _ => &[false],
    };
    let namesakes: &[Option<leaselab::engine::Namesake>] = if threads {
        &[
            None,
            Some(leaselab::engine::Namesake::Stalled),
            Some(leaselab::engine::Namesake::New),
        ]
    } else {
        &[None]
    };
    let mut views = Vec::new();
    for status in statuses {
        for &frozen in frozen {
            for taken_by in [None, Some("Worker-B".to_string())] {
                for &namesake in namesakes {
                    views.push(leaselab::ui::app::WorkerView {
                        slot: 0,
                        status: status.clone(),
                        done: 4,
                        frozen,
                        taken_by: taken_by.clone().filter(|_| status.lease.is_some()),
                        namesake,
                        software: None,
                    });
                }
            }
        }
    }
    views
}

/// Every mark and word the workers pane can draw in a dashboard is in that dashboard's
/// help. The pane is drawn for a worker in every state it can be in there, holding a live,
/// beating, expired or taken lease, blocked, working without a lease, or holding nothing,
/// stalled or not, selected and next to move, at every width from a projector's to a wide
/// screen, one worker and a page of many; each thing drawn that is not a name, a message
/// key or a number is looked up in the help.
#[test]
fn the_help_explains_every_mark_and_word_of_the_workers_pane() {
    use leaselab::engine::worker::WorkerState::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    let states = [
        Idle, Claiming, Processing, Finalizing, Paused, Blocked, Crashed, Stopped, Held, Left,
        Unknown,
    ];
    let modes = [
        keys::Mode::Free,
        keys::Mode::Lesson,
        keys::Mode::Replay,
        keys::Mode::Watch,
        keys::Mode::Processes,
    ];
    for mode in modes {
        let help = leaselab::ui::render::help::text(mode);
        let known = shapes(&help);
        let views: Vec<_> = states
            .iter()
            .filter(|s| drawn_in(**s).contains(&mode))
            .flat_map(|s| views_of(mode, *s))
            .collect();
        let mut unexplained = std::collections::BTreeMap::new();
        for (width, height) in [(36, 6), (42, 6), (50, 6), (54, 6), (72, 6), (54, 3)] {
            for view in &views {
                // Selected and next to move; and on a page of several (height 3).
                let mut snap = leaselab::ui::snapshot::Snapshot {
                    mode,
                    now_ms: leaselab::engine::clock::SCENARIO_START_MS,
                    next_mover: Some(0),
                    ..Default::default()
                };
                snap.workers = vec![view.clone(); 3];
                for (slot, w) in snap.workers.iter_mut().enumerate() {
                    w.slot = slot;
                }
                let ui = leaselab::ui::state::UiState::default();
                let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
                t.draw(|f| {
                    leaselab::ui::render::workers::render(f, f.area(), &snap, &ui, &Theme::plain())
                })
                .unwrap();
                let drawn = format!("{}", t.backend()).replace('"', " ");
                for s in shapes(&drawn) {
                    if !known.contains(&s) {
                        unexplained.entry(s).or_insert(drawn.clone());
                    }
                }
            }
        }
        assert!(
            unexplained.is_empty(),
            "{mode:?}: the help does not explain {:?}, drawn as in\n{}\nhelp:\n{help}",
            unexplained.keys().collect::<Vec<_>>(),
            unexplained.values().next().unwrap()
        );
    }
}
