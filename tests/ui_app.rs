//! The dashboard's state driven by key presses, without a terminal. Waits are on engine
//! events with a deadline, never on sleeps.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::engine::worker::WorkerState;
use leaselab::scenario::Scenario;
use leaselab::setup::Timing;
use leaselab::ui::app::{App, Focus};
use leaselab::ui::{DashboardOptions, Theme};

mod support;

use support::{app, key, press};

/// Fold engine events until `done` holds, or fail after a deadline.
fn wait_for(app: &mut App, what: &str, mut done: impl FnMut(&App) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        app.refresh(20, 10);
        if done(app) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Countdowns move with the clock alone, so look again at least every 50 ms.
        if let Ok(ev) = app.engine.events().recv_timeout(Duration::from_millis(50)) {
            app.apply_event(&ev);
        }
        app.absorb_events();
    }
}

fn row_status(app: &App, id: i64) -> (String, Option<String>) {
    let r = app
        .snapshot()
        .db
        .rows
        .iter()
        .find(|r| r.id == id)
        .expect("row shown");
    (r.status.to_string(), r.locked_by.clone())
}

#[test]
fn pressing_c_crashes_the_selected_worker_and_logs_it() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'c');
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[0].status.state, WorkerState::Crashed);
    assert!(
        app.log.contains("CRASHED holding PAY-001"),
        "{:?}",
        app.log.last()
    );
    assert_eq!(app.ledger.crashes, 1);
    // The lease it held is still in SQLite.
    assert_eq!(
        row_status(&app, 1),
        ("Processing".into(), Some("Worker-A".into()))
    );
    // A second crash is refused with a hint; a restart brings a new incarnation.
    press(&mut app, 'c');
    assert!(app
        .ui
        .notice
        .as_deref()
        .unwrap_or("")
        .contains("r restarts"));
    press(&mut app, 'r');
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[0].status.name, "Worker-A#2");
    assert!(app.log.contains("RESTARTED (replaces Worker-A)"));
}

#[test]
fn the_lease_expiry_story_steps_from_start_to_end() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::LeaseExpiry,
        ..DashboardOptions::default()
    });
    app.start();
    assert!(app.paused() && !app.engine.clock.is_running());
    assert_eq!(app.stage().lesson().map(|l| l.runner.total()), Some(7));
    let t0 = app.engine.clock.now();

    press(&mut app, 'n'); // Worker-A claims message 1
    app.refresh(20, 10);
    assert_eq!(
        row_status(&app, 1),
        ("Processing".into(), Some("Worker-A".into()))
    );
    assert!(app.log.contains("CLAIMED PAY-001"));
    assert_eq!(app.next_mover(), Some(0)); // the crash comes next

    press(&mut app, 'n'); // Worker-A crashes
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[0].status.state, WorkerState::Crashed);
    assert!(app.log.contains("CRASHED holding PAY-001"));

    press(&mut app, 'n'); // Worker-B is blocked before expiry
    assert_eq!(app.ledger.claims_blocked, 1);
    assert!(app.log.contains("BLOCKED on PAY-001 by Worker-A"));

    press(&mut app, 'n'); // the clock passes the lease
    assert!(app.engine.clock.now() > t0 + app.lease_ms());

    press(&mut app, 'n'); // Worker-B reclaims
    app.refresh(20, 10);
    assert_eq!(
        row_status(&app, 1),
        ("Processing".into(), Some("Worker-B".into()))
    );
    assert_eq!(app.ledger.reclaims, 1);

    press(&mut app, 'n'); // provider call
    press(&mut app, 'n'); // finalize
    app.refresh(20, 10);
    assert_eq!(row_status(&app, 1).0, "Processed");
    assert_eq!(app.ledger.runs_of(1), 1);
    assert_eq!(app.ledger.ownership_violations, 0);
    assert!(!app.is_story());

    // The timeline holds the picture: A's lease, its crash, the dead lease; B's reclaim.
    use leaselab::ui::timeline::{MarkKind, SegmentKind};
    let a = &app.timeline.lanes[0];
    assert!(a
        .segments
        .iter()
        .any(|s| s.kind == SegmentKind::DeadLease && s.id == 1));
    let b = &app.timeline.lanes[1];
    assert!(b.marks.iter().any(|m| m.kind == MarkKind::Blocked));
    assert_eq!(
        b.segments.back().and_then(|s| s.end),
        Some(MarkKind::Finalized)
    );

    // After the story, n falls back to single worker steps: Worker-B finds nothing.
    press(&mut app, 'n');
    assert_eq!(app.ledger.claims_empty, 1);
}

#[test]
fn leasing_off_with_two_workers_shows_duplicates() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::CompetingNoClaim,
        ..DashboardOptions::default()
    });
    app.start();
    assert!(!app.paused());
    wait_for(&mut app, "a duplicate", |a| {
        a.ledger.processed_more_than_once() > 0
            && a.snapshot()
                .db
                .rows
                .iter()
                .any(|r| a.ledger.runs_of(r.id) > 1)
    });
}

#[test]
fn crash_while_holding_then_the_other_worker_takes_over_after_expiry() {
    let mut app = app(DashboardOptions {
        timing: Timing {
            speed: 8.0,
            ..Timing::DASHBOARD
        },
        ..DashboardOptions::default()
    });
    // Still paused: one step makes Worker-A claim, and nothing moves until we say so.
    press(&mut app, 'n');
    app.refresh(20, 10);
    let held = app.snapshot().workers[0]
        .status
        .lease
        .clone()
        .expect("Worker-A holds a lease");
    press(&mut app, 'c');
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[0].status.state, WorkerState::Crashed);
    assert!(app.log.contains(&format!("CRASHED holding {}", held.key)));
    // Run: Worker-B drains the rest and reclaims the message once the lease has expired.
    press(&mut app, ' ');
    assert!(!app.paused());
    wait_for(&mut app, "Worker-B to reclaim", |a| {
        a.ledger.messages.get(&held.id).is_some_and(|m| {
            m.processed_by().iter().map(|n| &**n).eq(["Worker-B"]) && m.claims >= 2
        })
    });
    assert!(app.engine.clock.now() > held.until_ms);
    assert_eq!(app.ledger.ownership_violations, 0);
    assert!(app.log.contains(&format!("RECLAIMED {}", held.key)));
}

#[test]
fn while_the_crashed_lease_runs_out_the_other_worker_shows_blocked_live() {
    // A lease far longer than any test: Worker-B stays blocked until the clock is advanced.
    let mut app = app(DashboardOptions {
        messages: Some(1),
        timing: Timing {
            lease_ms: 3_600_000,
            ..Timing::DASHBOARD
        },
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'c'); // and crashes holding it
    press(&mut app, ' ');
    wait_for(&mut app, "Worker-B blocked by Worker-A's lease", |a| {
        a.snapshot().workers[1].status.state == WorkerState::Blocked
            && a.snapshot().figures.claims_blocked >= 1
    });
    let blocked = app.snapshot().workers[1].status.blocked_on.clone().unwrap();
    assert_eq!(
        (blocked.key.as_str(), blocked.owner.as_str()),
        ("PAY-001", "Worker-A")
    );
    assert!(app.log.contains("BLOCKED on PAY-001 by Worker-A, "));
    assert_eq!(app.ledger.claims_empty, 0, "blocked, not empty");
    press(&mut app, 'A'); // one lease later, Worker-A's has run out
    wait_for(&mut app, "Worker-B to reclaim PAY-001", |a| {
        a.ledger.reclaims == 1 && a.snapshot().workers[1].status.blocked_on.is_none()
    });
}

#[test]
fn reset_keeps_leasing_mode_speed_and_workers_and_starts_a_new_ledger() {
    let mut app = app(DashboardOptions {
        workers: 3,
        ..DashboardOptions::default()
    });
    press(&mut app, 'n');
    press(&mut app, 'l');
    press(&mut app, '+');
    assert!(!app.leasing());
    assert_eq!(app.speed(), 2.0);
    press(&mut app, 'R');
    app.refresh(20, 10);
    assert!(!app.leasing());
    assert_eq!(app.speed(), 2.0);
    assert_eq!(app.engine.clock.speed(), 2.0);
    assert_eq!(app.snapshot().workers.len(), 3);
    assert_eq!(app.ledger.claims_ok, 0);
    assert_eq!(app.snapshot().db.counts.pending, 6);
    assert!(app.log.contains("RESET"));
}

#[test]
fn switching_leasing_off_live_produces_duplicates() {
    let mut app = app(DashboardOptions {
        timing: Timing {
            speed: 8.0,
            ..Timing::DASHBOARD
        },
        ..DashboardOptions::default()
    });
    app.start();
    press(&mut app, 'l');
    assert!(app.log.contains("leasing switched OFF"));
    // Fresh Pending rows, and both unguarded workers load them (paused, one step each)
    // before either is done: no thread has to win a race against the other.
    press(&mut app, ' ');
    press(&mut app, 'R');
    press(&mut app, 'n');
    press(&mut app, 'n');
    press(&mut app, ' ');
    wait_for(&mut app, "a duplicate", |a| {
        a.ledger.processed_more_than_once() > 0
    });
}

#[test]
fn p_adds_a_payment_with_its_outbox_row() {
    let mut app = app(DashboardOptions::default());
    app.refresh(20, 10);
    assert_eq!(app.snapshot().db.total, 6);
    press(&mut app, 'p');
    app.refresh(20, 10);
    assert_eq!(app.snapshot().db.total, 7);
    assert_eq!(app.snapshot().db.counts.pending, 7);
    assert!(app.log.contains("added payment PAY-007"));
}

#[test]
fn keys_while_running_and_help_toggles() {
    let mut app = app(DashboardOptions::default());
    app.start();
    press(&mut app, 'n');
    assert!(app
        .ui
        .notice
        .as_deref()
        .unwrap_or("")
        .contains("while paused"));
    press(&mut app, ' ');
    assert!(app.paused() && !app.engine.clock.is_running());
    press(&mut app, '?');
    assert!(app.ui.help);
    key(&mut app, KeyCode::Esc);
    assert!(!app.ui.help && !app.ui.quit);
    // A second Esc (after closing help) must not quit and delete the database.
    key(&mut app, KeyCode::Esc);
    assert!(!app.ui.quit && !app.ui.help);
    press(&mut app, 'q');
    assert!(app.ui.quit);
    let mut app2 = self::app(DashboardOptions::default());
    app2.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app2.ui.quit);
    assert_eq!(app2.ledger.crashes, 0);
}

#[test]
fn a_big_outbox_scrolls_by_windows() {
    let mut app = app(DashboardOptions {
        messages: Some(100_000),
        ..DashboardOptions::default()
    });
    app.refresh(30, 10);
    assert_eq!(app.snapshot().db.total, 100_000);
    assert_eq!(app.snapshot().db.rows.len(), 30);
    key(&mut app, KeyCode::End);
    app.refresh(30, 10);
    assert_eq!(app.snapshot().db.rows.last().map(|r| r.id), Some(100_000));
    assert_eq!(app.snapshot().db.rows.len(), 30);
    key(&mut app, KeyCode::PageUp);
    app.refresh(30, 10);
    assert_eq!(
        app.snapshot().db.rows.first().map(|r| r.id),
        Some(100_000 - 59)
    );
    key(&mut app, KeyCode::Home);
    app.refresh(30, 10);
    assert_eq!(app.snapshot().db.rows.first().map(|r| r.id), Some(1));
}

#[test]
fn the_log_scrolls_when_focused_and_follows_again_at_the_end() {
    let mut app = app(DashboardOptions::default());
    for _ in 0..12 {
        press(&mut app, 'n');
    }
    app.refresh(20, 4);
    key(&mut app, KeyCode::Right);
    assert_eq!(app.ui.focus, Focus::Log);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.ui.log_back, 2);
    key(&mut app, KeyCode::End);
    assert_eq!(app.ui.log_back, 0);
}

#[test]
fn the_temporary_database_is_removed_when_the_dashboard_ends() {
    let app = app(DashboardOptions::default());
    let path = app.engine.db_path().to_path_buf();
    assert!(path.exists() && app.engine.is_temporary());
    drop(app);
    assert!(!path.exists());
    assert!(!path.parent().unwrap().exists());
}

#[test]
fn refuses_a_story_without_leases() {
    let err = App::new(
        DashboardOptions {
            scenario: Scenario::LeaseExpiry,
            no_leasing: true,
            ..DashboardOptions::default()
        },
        Theme::plain(),
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(err.contains("lease-expiry"));
}

#[test]
fn engine_events_are_folded_into_the_same_ledger_the_reports_use() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n');
    press(&mut app, 'n');
    assert_eq!(app.ledger.claims_ok, 2);
    let claimed = app
        .log
        .lines()
        .iter()
        .filter(|l| l.text.starts_with("CLAIMED"))
        .count();
    assert_eq!(claimed, 2);
}

#[test]
fn on_the_too_small_screen_only_quit_acts() {
    use ratatui::{backend::TestBackend, Terminal};
    let mut app = app(DashboardOptions::default());
    let mut small = Terminal::new(TestBackend::new(60, 20)).unwrap();
    leaselab::ui::draw(&mut small, &mut app).unwrap();
    press(&mut app, 'n');
    press(&mut app, 'c');
    assert_eq!(app.ledger.claims_ok + app.ledger.crashes, 0);
    let mut big = Terminal::new(TestBackend::new(100, 30)).unwrap();
    leaselab::ui::draw(&mut big, &mut app).unwrap();
    press(&mut app, 'n');
    assert_eq!(app.ledger.claims_ok, 1);
    leaselab::ui::draw(&mut small, &mut app).unwrap();
    press(&mut app, 'q');
    assert!(app.ui.quit);
}

#[test]
fn a_log_scrolled_back_stays_put_while_workers_poll() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::LeaseExpiry,
        ..DashboardOptions::default()
    });
    for _ in 0..7 {
        press(&mut app, 'n');
    }
    app.refresh(20, 3);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Up);
    let seen = app.log.len() - app.ui.log_back;
    let anchor = app.log.lines()[seen - 1].text.clone();
    // New lines and folded idle claims arrive; the reader's window keeps its last line.
    press(&mut app, 'n');
    press(&mut app, 'n');
    press(&mut app, 'n');
    app.refresh(20, 3);
    let seen = app.log.len() - app.ui.log_back;
    assert_eq!(app.log.lines()[seen - 1].text, anchor);
}

#[test]
fn the_history_check_is_clean_with_leases_and_finds_duplicates_without() {
    let fast = |no_leasing| DashboardOptions {
        timing: Timing {
            process_ms: 200,
            speed: 4.0,
            ..Timing::DASHBOARD
        },
        no_leasing,
        ..DashboardOptions::default()
    };
    let mut on = app(fast(false));
    assert!(on.snapshot().history.is_none());
    on.start();
    wait_for(&mut on, "a clean verdict after the drain", |a| {
        a.snapshot().history.as_ref().is_some_and(|h| h.passed())
    });
    assert_eq!(on.snapshot().history.as_ref().unwrap().processed, 6);

    // Both workers load the outbox (one step each, still paused) before either processes.
    let mut off = app(fast(true));
    press(&mut off, 'n');
    press(&mut off, 'n');
    assert_eq!(
        off.log
            .lines()
            .iter()
            .filter(|l| l.text.starts_with("LOADED 6"))
            .count(),
        2
    );
    off.start();
    wait_for(&mut off, "the checker to find duplicates", |a| {
        a.snapshot()
            .history
            .as_ref()
            .is_some_and(|h| h.duplicated.count > 0)
    });
    assert!(!off.snapshot().history.as_ref().unwrap().passed());
}

#[test]
fn a_lease_at_its_until_is_still_held_on_screen_as_in_sql() {
    use ratatui::{backend::TestBackend, Terminal};
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001 for one lease
    press(&mut app, 'A'); // the clock moves exactly one lease: now == until
    let mut t = Terminal::new(TestBackend::new(120, 36)).unwrap();
    leaselab::ui::draw(&mut t, &mut app).unwrap();
    let screen = t.backend().to_string();
    assert!(!screen.contains("expired"), "{screen}");
    assert!(screen.contains("PAY-001 Processing Worker-A"), "{screen}");
    // SQL agrees: nobody can claim it at this instant.
    let until = app.snapshot().workers[0]
        .status
        .lease
        .clone()
        .unwrap()
        .until_ms;
    assert_eq!(app.engine.clock.now(), until);
    assert!(app.engine.claim_id(1, 1), "Worker-B tries PAY-001");
    app.absorb_events();
    assert_eq!((app.ledger.claims_blocked, app.ledger.claims_ok), (1, 1));
    app.engine.advance(1);
    leaselab::ui::draw(&mut t, &mut app).unwrap();
    assert!(t.backend().to_string().contains("expired"));
}

#[test]
fn h_switches_heartbeats_and_the_workers_pane_shows_the_beat_s_age() {
    let mut app = app(DashboardOptions::default());
    assert!(app.engine.settings.heartbeats(), "on by default");
    press(&mut app, 'h');
    assert!(!app.engine.settings.heartbeats());
    wait_for(&mut app, "the switch in the log", |a| {
        a.log.contains("heartbeats switched OFF")
    });
    press(&mut app, 'h');
    assert!(app.engine.settings.heartbeats());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    app.engine.advance(500);
    assert!(app.engine.heartbeat(0));
    app.engine.advance(300);
    wait_for(&mut app, "the heartbeat", |a| a.ledger.heartbeats == 1);
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 36)).unwrap();
    leaselab::ui::draw(&mut t, &mut app).unwrap();
    let screen = format!("{}", t.backend());
    assert!(screen.contains("PAY-001 ♥300 ms ago"), "{screen}");
}

#[test]
fn a_dead_letter_is_counted_and_d_redrives_it() {
    use leaselab::engine::provider::ProviderFaults;
    use leaselab::engine::store::RetryPolicy;
    let mut app = app(DashboardOptions {
        reliability: leaselab::setup::Reliability {
            retry: RetryPolicy::new(100, 100, 1).unwrap(),
            faults: ProviderFaults {
                fail_always: ["PAY-001".to_string()].into(),
                ..ProviderFaults::default()
            },
            ..Default::default()
        },
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B claims PAY-002
    press(&mut app, 'n'); // Worker-A's provider call fails: its only attempt
    wait_for(&mut app, "the dead letter", |a| {
        a.snapshot().figures.dead_now == 1
    });
    assert_eq!(row_status(&app, 1).0, "DeadLettered");
    assert!(app.log.contains("DEAD-LETTERED PAY-001 after 1 attempt ("));
    press(&mut app, 'D');
    wait_for(&mut app, "the redrive", |a| {
        a.snapshot().figures.dead_now == 0
    });
    assert_eq!(row_status(&app, 1).0, "Pending");
    assert_eq!(app.ledger.redriven, 1);
}

#[test]
fn w_adds_a_worker_that_works_and_shift_w_stops_the_last_one() {
    let mut app = app(DashboardOptions {
        messages: Some(12),
        timing: Timing {
            process_ms: 0,
            ..Timing::DASHBOARD
        },
        ..DashboardOptions::default()
    });
    assert_eq!(app.engine.workers().len(), 2);
    assert!(app.snapshot().throughput.is_none());
    press(&mut app, 'w');
    assert_eq!(app.engine.workers().len(), 3);
    assert!(app.ui.notice.as_deref().unwrap_or("").contains("3 workers"));
    app.refresh(20, 10);
    let strip = app.snapshot().throughput.clone().expect("the strip shows");
    assert_eq!((strip.workers, strip.batch, strip.minute.len()), (3, 1, 60));
    // The new Worker-C claims like the others once the workers run.
    press(&mut app, ' ');
    wait_for(&mut app, "the outbox to drain", |a| a.drained());
    press(&mut app, ' ');
    assert_eq!(app.ledger.unique_processed(), 12);
    assert_eq!(app.ledger.processed_more_than_once(), 0);
    for _ in 0..3 {
        press(&mut app, 'W');
    }
    assert_eq!(app.engine.workers().len(), 1);
    assert_eq!(
        app.ui.notice.as_deref(),
        Some("one worker is the fewest"),
        "W never stops the last worker"
    );
}

#[test]
fn the_story_steps_back_like_a_lesson_and_space_leaves_it_for_free_play() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::LeaseExpiry,
        ..DashboardOptions::default()
    });
    app.start();
    // What n does next names the message as the table does.
    let strip = support::frame_lines(&mut app, 80, 24).remove(1);
    assert!(
        strip.contains("n: Worker-A tries to claim PAY-001"),
        "{strip}"
    );
    press(&mut app, 'n'); // Worker-A claims
    press(&mut app, 'n'); // Worker-A crashes
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[0].status.state, WorkerState::Crashed);
    press(&mut app, 'b'); // reseeded, the claim replayed
    app.refresh(20, 10);
    assert_ne!(app.snapshot().workers[0].status.state, WorkerState::Crashed);
    assert_eq!(
        row_status(&app, 1),
        ("Processing".into(), Some("Worker-A".into()))
    );
    assert_eq!(app.stage().lesson().map(|l| l.runner.done), Some(1));
    assert!(app.is_story());
    assert!(app.log.contains("LESSON back to step 1/7"));
    // Space leaves the story: the workers run on their own, and R tells it again.
    press(&mut app, ' ');
    assert!(!app.is_story() && !app.paused());
    press(&mut app, ' ');
    press(&mut app, 'R');
    assert!(app.is_story());
    assert_eq!(app.stage().lesson().map(|l| l.runner.done), Some(0));
}

/// How many actions worker `slot` has started.
fn acts(app: &App, slot: usize) -> u64 {
    app.engine.worker(slot).unwrap().status().acts
}

/// `z` freezes the selected worker holding its lease: steps pass it by, its lease runs out
/// and Worker-B takes the message over. Woken, it carries on with what it believed, and
/// its finalize is refused by the lease version it still holds.
#[test]
fn z_freezes_a_worker_whose_finalize_after_a_takeover_is_rejected() {
    let mut app = app(DashboardOptions {
        messages: Some(1),
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001 (lease v1)
    press(&mut app, 'z'); // Worker-A (selected) freezes holding it
    app.refresh(20, 10);
    let a = &app.snapshot().workers[0];
    assert!(a.frozen, "{a:?}");
    assert_eq!(a.status.lease.as_ref().map(|l| l.version), Some(1));
    assert!(app.log.contains("FROZEN (z key)"), "{:?}", app.log.last());
    let notice = app.ui.notice.clone().unwrap_or_default();
    assert!(
        notice.contains("FROZEN holding PAY-001 (lease v1)"),
        "{notice}"
    );
    let frozen_at = acts(&app, 0);
    // A step passes it by: Worker-B moves, and is blocked by the frozen worker's lease.
    press(&mut app, 'n');
    app.refresh(20, 10);
    assert_eq!(app.snapshot().workers[1].status.state, WorkerState::Blocked);
    press(&mut app, 'A'); // a lease and a little later it has run out: a frozen worker
    press(&mut app, 'a'); // never beats
    press(&mut app, 'n'); // Worker-B takes PAY-001 over (lease v2)
    assert_eq!(app.ledger.reclaims, 1);
    press(&mut app, 'n'); // Worker-B calls the provider
    press(&mut app, 'n'); // and finalizes
    assert_eq!(app.ledger.finalized, 1);
    assert_eq!(acts(&app, 0), frozen_at, "a frozen worker acted");
    press(&mut app, 'z'); // Worker-A wakes, still believing it holds lease v1
    app.refresh(20, 10);
    assert!(!app.snapshot().workers[0].frozen);
    assert!(app.log.contains("WOKE (z key)"), "{:?}", app.log.last());
    // Its provider call, then its finalize, in turn with Worker-B's empty claims.
    for _ in 0..4 {
        if app.ledger.rejected_finalizes > 0 {
            break;
        }
        press(&mut app, 'n');
    }
    assert_eq!(app.ledger.rejected_finalizes, 1);
    assert!(app.log.contains("FINALIZE REJECTED PAY-001: lease v1 lost"));
    assert_eq!(app.ledger.finalized, 1);
    assert_eq!(
        row_status(&app, 1),
        ("Processed".into(), Some("Worker-B".into()))
    );
}

/// Live, a worker frozen while it processes stays frozen through a pause and a resume,
/// and wakes to carry on; a worker that is down cannot be frozen.
#[test]
fn z_freezes_a_running_worker_until_z_wakes_it() {
    let mut app = app(DashboardOptions {
        messages: Some(2),
        timing: Timing {
            lease_ms: 120_000,
            process_ms: 60_000,
            ..Timing::DASHBOARD
        },
        reliability: leaselab::setup::Reliability {
            heartbeats: false,
            ..Default::default()
        },
        ..DashboardOptions::default()
    });
    app.start();
    wait_for(&mut app, "both workers to hold a lease", |a| {
        a.snapshot()
            .workers
            .iter()
            .all(|w| w.status.lease.is_some())
    });
    press(&mut app, 'z');
    assert!(app.engine.worker(0).unwrap().status().paused);
    let frozen_at = acts(&app, 0);
    press(&mut app, ' '); // pause and run again: the frozen worker stays frozen
    press(&mut app, ' ');
    assert!(!app.paused());
    press(&mut app, 'A'); // both leases run out; Worker-B finishes and takes PAY-001 over
    wait_for(&mut app, "Worker-B to take PAY-001 over", |a| {
        a.ledger.reclaims == 1 && a.ledger.finalized == 1
    });
    press(&mut app, 'A');
    wait_for(&mut app, "Worker-B to finalize PAY-001", |a| {
        a.ledger.finalized == 2
    });
    assert_eq!(acts(&app, 0), frozen_at, "a frozen worker acted");
    app.refresh(20, 10);
    assert!(app.snapshot().workers[0].frozen);
    press(&mut app, 'z');
    wait_for(&mut app, "the woken worker's finalize to be refused", |a| {
        a.ledger.rejected_finalizes == 1
    });
    assert_eq!(app.ledger.finalized, 2);
    // A worker that is down is not frozen: it says so.
    press(&mut app, 'c');
    press(&mut app, 'z');
    let notice = app.ui.notice.clone().unwrap_or_default();
    assert!(notice.contains("is down: r restarts it"), "{notice}");
    app.refresh(20, 10);
    assert!(!app.snapshot().workers[0].frozen);
}

/// `z` is free play's: where the workers are not this dashboard's threads to freeze, or a
/// lesson's steps drive them, it says so in one line.
#[test]
fn z_says_why_where_it_cannot_freeze() {
    let mut lesson = support::lesson_app("zombie-worker");
    press(&mut lesson, 'z');
    let notice = lesson.ui.notice.clone().unwrap_or_default();
    assert!(
        notice.contains("lesson's steps drive the workers"),
        "{notice}"
    );
    assert!(!lesson.snapshot().workers.iter().any(|w| w.frozen));
    let mut story = app(DashboardOptions {
        scenario: Scenario::LeaseExpiry,
        ..DashboardOptions::default()
    });
    press(&mut story, 'z');
    let notice = story.ui.notice.clone().unwrap_or_default();
    assert!(notice.contains("space leaves the story"), "{notice}");
    let dir = tempfile::tempdir().unwrap();
    let mut watch = support::watcher(&dir.path().join("w.db"), 2);
    press(&mut watch, 'z');
    let notice = watch.ui.notice.clone().unwrap_or_default();
    assert!(notice.contains("watch mode"), "{notice}");
}
