//! A class of thirty on the watch (issue 38): at 80x24 and 120x40 the workers pane pages
//! (`>` / `<`, `page 2/4` in its title), the timeline follows the page, the ledger and the
//! events stay on screen, and `space` holds the screen while the rows go on arriving. The
//! watch's clock is stopped, so each frame is exact but for the wall-clock times, which are
//! masked.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{Fact, LeaseEventKind, RunSettings};
use leaselab::engine::provider::{ProviderStatus, StatusCheck};
use leaselab::engine::store::{ClaimOutcome, Store, StoreShared};
use leaselab::ui::App;

use crossterm::event::KeyCode;
use support::{frame_lines, key, press, watcher};

/// Thirty names, some wide, one of the longest a worker may take.
fn names() -> Vec<String> {
    let mut names: Vec<String> = (1..=30).map(|i| format!("s{i:02}")).collect();
    names[1] = "李雷".into();
    names[2] = "たなか".into();
    names[3] = "a-very-long-student-name-32chars".into();
    assert_eq!(names[3].chars().count(), 32);
    names
}

/// A watch on a fresh file whose thirty workers joined, then each claimed a payment and
/// the first ten finished theirs, all on the watch's stopped clock.
fn class(dir: &Path) -> App {
    let db = dir.join("class.db");
    let mut app = watcher(&db, 40);
    // Stopped on a whole minute, a minute or two after the seeding: the timeline's cells
    // fall on the same times every run, and every row below comes after the seeding's.
    app.engine.clock.pause();
    app.engine
        .clock
        .advance(120_000 - app.engine.clock.now().rem_euclid(60_000));
    let now = app.engine.clock.now();
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let settings = RunSettings {
        lease_ms: 30_000,
        process_ms: 20_000,
        leasing: true,
        heartbeats: false,
        heartbeat_ms: 10_000,
        batch: 1,
        owner_only: false,
        student: false,
    };
    for (i, name) in names().iter().enumerate() {
        let at = now - 20_000 + i as i64 * 100;
        store
            .record(&Fact::of(
                LeaseEventKind::Joined,
                at,
                name,
                &settings.detail(),
            ))
            .unwrap();
        let ClaimOutcome::Claimed(lease) = store.claim_next(name, at + 50, 30_000).unwrap().value
        else {
            panic!("nothing to claim");
        };
        if i < 10 {
            let paid = StatusCheck {
                status: ProviderStatus::Paid,
                transaction_id: Some(format!("tx-{i}")),
            };
            store.finalize(&lease, &paid, at + 5_000).unwrap();
        }
    }
    // The opening line names the file, wherever the temporary directory is: said, it goes.
    app.ui.notice = None;
    let start = Instant::now();
    while app.snapshot().workers.len() < 30 || app.ledger.per_worker.len() < 10 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the rows did not arrive"
        );
        std::thread::sleep(Duration::from_millis(10));
        app.absorb_events();
        frame_lines(&mut app, 80, 24);
    }
    app
}

/// The frame's text with each wall-clock time and the temporary directory masked.
fn masked(app: &mut App, width: u16, height: u16) -> String {
    mask(&frame_lines(app, width, height).join("\n"))
}

/// `12:34:56.789` and `12:34:56` become `hh:mm:ss.mmm` and `hh:mm:ss`, `.tmpAbC123`
/// becomes `.tmpXXXXXX`: the same widths, so nothing moves.
fn mask(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let at = |i: usize, c: char| chars.get(i) == Some(&c);
    let time = |i: usize| {
        [0, 1, 3, 4, 6, 7].iter().all(|k| digit(i + k)) && at(i + 2, ':') && at(i + 5, ':')
    };
    for i in 0..chars.len() {
        if time(i) {
            for (k, c) in "hh:mm:ss".chars().enumerate() {
                out[i + k] = c;
            }
            if at(i + 8, '.') && (9..12).all(|k| digit(i + k)) {
                out[i + 9..i + 12].fill('m');
            }
        }
        if chars[i..].starts_with(&['.', 't', 'm', 'p']) {
            for c in out.iter_mut().skip(i + 4).take(6) {
                *c = 'X';
            }
        }
    }
    out.into_iter().collect()
}

/// The line of `text` that starts a pane titled `title`.
fn title_line<'a>(text: &'a str, title: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(title))
        .unwrap_or_else(|| panic!("no {title} pane:\n{text}"))
}

#[test]
fn a_class_of_thirty_pages_and_keeps_the_ledger_and_the_events_at_80x24_and_120x40() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = class(dir.path());
    for (w, h) in [(80, 24), (120, 40)] {
        let text = masked(&mut app, w, h);
        insta::assert_snapshot!(format!("thirty_{w}x{h}"), text);
        for pane in ["Ledgers", "Events", "Timeline"] {
            title_line(&text, pane);
        }
        for figure in ["duplicates", "rejected", "reclaims"] {
            assert!(text.contains(figure), "{figure} at {w}x{h}:\n{text}");
        }
    }
    // 80x24: pages of three; `>` turns to the second, and the timeline follows it.
    let first = masked(&mut app, 80, 24);
    assert!(
        title_line(&first, "Workers").contains("page 1/10"),
        "{first}"
    );
    press(&mut app, '>');
    let second = masked(&mut app, 80, 24);
    insta::assert_snapshot!("thirty_80x24_page_2", second);
    assert!(
        title_line(&second, "Workers").contains("page 2/10"),
        "{second}"
    );
    assert!(
        title_line(&second, "Timeline").contains("4-6 of 30"),
        "{second}"
    );
    let lane = second
        .lines()
        .find(|l| l.starts_with("│a-very-lo"))
        .map(str::len);
    assert!(lane.is_some(), "the fourth worker's lane:\n{second}");
    // The page before the first is the last.
    press(&mut app, '<');
    press(&mut app, '<');
    let last = masked(&mut app, 80, 24);
    assert!(
        title_line(&last, "Workers").contains("page 10/10"),
        "{last}"
    );
    assert!(
        title_line(&last, "Timeline").contains("28-30 of 30"),
        "{last}"
    );
    // 120x40: pages of eight, the timeline with them.
    frame_lines(&mut app, 120, 40);
    press(&mut app, '>');
    let wide = masked(&mut app, 120, 40);
    insta::assert_snapshot!("thirty_120x40_page_1_after_the_last", wide);
    assert!(
        title_line(&wide, "Workers").contains("1-8 of 30 · page 1/4"),
        "{wide}"
    );
    press(&mut app, '>');
    let wide = masked(&mut app, 120, 40);
    assert!(
        title_line(&wide, "Workers").contains("9-16 of 30 · page 2/4"),
        "{wide}"
    );
    assert!(
        title_line(&wide, "Timeline").contains("9-16 of 30 workers"),
        "{wide}"
    );
    assert!(wide.lines().any(|l| l.starts_with("│s16 ")), "{wide}");
    // Tab walks within the page: the timeline stays on it.
    key(&mut app, KeyCode::Tab);
    let wide = masked(&mut app, 120, 40);
    assert!(
        title_line(&wide, "Timeline").contains("9-16 of 30 workers"),
        "{wide}"
    );
}

#[test]
fn space_holds_the_watchs_screen_while_the_rows_go_on_arriving() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = class(dir.path());
    let before = masked(&mut app, 120, 40);
    press(&mut app, ' ');
    let held = masked(&mut app, 120, 40);
    assert!(held.lines().next().unwrap().contains(" HELD "), "{held}");
    // s01 claims the next payment while the screen is held.
    let db = dir.path().join("class.db");
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let now = app.engine.clock.now();
    let ClaimOutcome::Claimed(lease) = store.claim_next("s01", now, 30_000).unwrap().value else {
        panic!("nothing to claim");
    };
    assert_eq!(lease.key, "PAY-031");
    let start = Instant::now();
    while app.ledger.holdings.of(0).is_none_or(|l| l.key != "PAY-031") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the row did not arrive"
        );
        std::thread::sleep(Duration::from_millis(10));
        app.absorb_events();
    }
    // Arrived, and not drawn: everything but the strip (the answer to the key) stands.
    let still = masked(&mut app, 120, 40);
    let body = |t: &str| t.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&still), body(&before));
    assert!(!still.contains("CLAIMED PAY-031"), "{still}");
    press(&mut app, ' ');
    let caught_up = masked(&mut app, 120, 40);
    assert!(
        !caught_up.lines().next().unwrap().contains("HELD"),
        "{caught_up}"
    );
    assert!(caught_up.contains("CLAIMED PAY-031"), "{caught_up}");
}
