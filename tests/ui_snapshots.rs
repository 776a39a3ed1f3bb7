//! Whole-screen snapshots drawn into a `TestBackend`. Each app starts paused (clock frozen
//! at 09:00:00.000) and is moved by key presses and single steps, so frames are exact.

use leaselab::scenario::Scenario;
use leaselab::ui::DashboardOptions;

mod support;

use support::{app, frame, press};

/// `ui::run` draws this frame before it lets the clock and the workers go.
#[test]
fn first_frame() {
    let mut app = app(DashboardOptions::default());
    let t = frame(&mut app, 120, 36);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn first_frame_at_the_minimum_size() {
    let mut app = app(DashboardOptions::default());
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn crashed_worker_holding_a_lease() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B claims PAY-002
    press(&mut app, 'n'); // Worker-A calls the provider for PAY-001
    press(&mut app, 'a'); // the clock moves on a little
    press(&mut app, 'c'); // Worker-A (selected) crashes holding PAY-001
    let t = frame(&mut app, 120, 36);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn help_overlay() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, '?');
    let t = frame(&mut app, 120, 36);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn leasing_off_after_duplicates() {
    let mut app = app(DashboardOptions {
        scenario: Scenario::CompetingNoClaim,
        ..DashboardOptions::default()
    });
    // Both workers load every Pending row, then both process PAY-001 and PAY-002.
    for _ in 0..10 {
        press(&mut app, 'n');
    }
    let t = frame(&mut app, 120, 36);
    assert!(app.ledger.processed_more_than_once() >= 2);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn too_small() {
    let mut app = app(DashboardOptions::default());
    let t = frame(&mut app, 60, 20);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn help_overlay_scrolls_at_the_minimum_size() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, '?');
    let t = frame(&mut app, 80, 24);
    insta::assert_snapshot!(t.backend());
    // Scrolled to its end, every binding's label has been on screen, the last included.
    let mut seen = t.backend().to_string();
    for _ in 0..40 {
        support::key(&mut app, crossterm::event::KeyCode::Down);
        seen.push_str(&frame(&mut app, 80, 24).backend().to_string());
    }
    for b in leaselab::ui::keys::help_entries(leaselab::ui::keys::Mode::Free) {
        assert!(seen.contains(b.label), "{} missing", b.label);
    }
}

/// Worker-A crashes holding the only message; Worker-B's claim finds nothing claimable and
/// says whose live lease is in the way, in the workers pane, the log and the ledger.
#[test]
fn a_claim_blocked_by_a_crashed_workers_live_lease() {
    let mut app = app(DashboardOptions {
        messages: Some(1),
        ..DashboardOptions::default()
    });
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'c'); // Worker-A (selected) crashes holding it
    press(&mut app, 'a'); // 250 ms pass
    press(&mut app, 'n'); // Worker-B finds nothing claimable: blocked by Worker-A
    for (w, h) in [(80, 24), (120, 36)] {
        let t = frame(&mut app, w, h);
        let text = format!("{}", t.backend());
        assert!(
            text.contains("BLOCKED on PAY-001 by Worker-A, 2750 ms left"),
            "{text}"
        );
        assert!(text.contains("blocked 1"), "{text}");
        insta::assert_snapshot!(format!("blocked_live_{w}x{h}"), t.backend());
    }
}

/// `z` froze Worker-A holding PAY-001: its line says FROZEN and what it holds, the step
/// marker passes it by, at a projector's size and a larger one.
#[test]
fn a_worker_frozen_by_z() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 'n'); // Worker-B claims PAY-002
    press(&mut app, 'z'); // Worker-A (selected) freezes holding PAY-001
    for (w, h) in [(80, 24), (120, 36)] {
        let t = frame(&mut app, w, h);
        let text = format!("{}", t.backend());
        let line = text
            .lines()
            .find(|l| l.contains("▶Worker-A") || l.contains("▶ Worker-A"))
            .unwrap_or_else(|| panic!("no line for Worker-A:\n{text}"));
        assert!(
            line.contains("FROZEN") && line.contains("PAY-001"),
            "{line}"
        );
        assert!(
            !line.contains('→'),
            "the next step does not move it: {line}"
        );
        insta::assert_snapshot!(format!("frozen_by_z_{w}x{h}"), t.backend());
    }
    // Past its lease's end it still believes it holds it; the line says it ran out.
    press(&mut app, 'A');
    press(&mut app, 'a');
    let text = format!("{}", frame(&mut app, 120, 36).backend());
    assert!(
        text.contains("▶ Worker-A   FROZEN     held PAY-001 expired"),
        "{text}"
    );
}
