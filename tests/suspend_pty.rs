//! A stopped dashboard gives the terminal back: SIGTSTP from outside, or Ctrl-Z typed into
//! it, leaves the alternate screen and raw mode, shows the cursor and stops the process;
//! SIGCONT (a shell's `fg`) takes the terminal again, draws the whole screen, and keys work.
//! The real binary in a pseudo-terminal; every wait is on its output or its state, bounded.

mod support;

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::ui::DashboardOptions;
use support::{Dashboard, DEADLINE};

/// The state letter of process `pid` (`T` stopped, `S` sleeping, ...), from /proc.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

/// Wait (bounded) until process `pid` is in state `want`.
fn wait_state(pid: u32, want: char, d: &Dashboard) {
    let deadline = Instant::now() + DEADLINE;
    while state(pid) != Some(want) {
        assert!(
            Instant::now() < deadline,
            "process {pid} never reached state {want} (it is {:?}); screen:\n{}",
            state(pid),
            d.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The terminal as the shell wants it back: main screen, cursor shown, line mode.
fn wait_given_back(d: &mut Dashboard) {
    d.wait_for("the main screen and the cursor back", |s| {
        !s.alternate_screen() && !s.hide_cursor()
    });
    wait_state(d.pid, 'T', d);
    assert!(!d.raw_mode(), "raw mode left on while stopped");
}

/// Continue the stopped process: the dashboard takes the terminal again and draws all
/// of it, not only what changed while it was stopped.
fn continue_and_wait_redrawn(d: &mut Dashboard, whole: &str) {
    let from = d.raw.len();
    d.signal(libc::SIGCONT);
    d.wait_for("the alternate screen again", |s| s.alternate_screen());
    let deadline = Instant::now() + DEADLINE;
    while !String::from_utf8_lossy(&d.raw[from..]).contains(whole) {
        let left = deadline.saturating_duration_since(Instant::now());
        let bytes = d
            .child
            .output
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("{whole:?} not drawn again ({e}):\n{}", d.screen()));
        d.parser.process(&bytes);
        d.raw.extend_from_slice(&bytes);
    }
    d.wait_for("the cursor hidden again", |s| s.hide_cursor());
    assert!(d.raw_mode(), "raw mode not taken again");
}

#[test]
fn a_stop_hands_the_terminal_back_and_a_continue_takes_it_again() {
    let mut d = Dashboard::spawn(
        24,
        80,
        &["lesson", "lease-expiry"],
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        &[],
    );
    d.wait_for_text("LESSON 0/6");
    assert!(d.raw_mode() && d.parser.screen().alternate_screen());

    // SIGTSTP from outside (kill -TSTP, or a shell's suspend).
    d.signal(libc::SIGTSTP);
    wait_given_back(&mut d);
    // What a shell prints while the job is stopped lands on the main screen.
    continue_and_wait_redrawn(&mut d, "Lease expiry");
    d.press("n");
    d.wait_for_text("LESSON 1/6");

    // Ctrl-Z typed into the dashboard, which raw mode delivers as a key.
    d.press("\u{1a}");
    wait_given_back(&mut d);
    continue_and_wait_redrawn(&mut d, "Lease expiry");
    d.wait_for_text("LESSON 1/6");
    d.press("n");
    d.wait_for_text("LESSON 2/6");

    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
}

#[test]
fn ctrl_z_asks_for_a_suspension_from_any_screen_and_the_scenario_clock_is_held() {
    let mut app = support::app(DashboardOptions::default());
    app.start();
    assert!(app.engine.clock.is_running());
    // Under the help too, which lets only its own keys through.
    support::press(&mut app, '?');
    assert!(app.ui.help);
    app.handle_key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL));
    assert!(app.ui.suspend, "Ctrl-Z asks the main loop to suspend");
    // While the process is stopped, no lease runs out: the clock is held, and only once.
    let now = app.engine.clock.now();
    assert!(app.hold_clock());
    assert!(!app.engine.clock.is_running());
    assert!(!app.hold_clock(), "a held clock is not held twice");
    assert_eq!(app.engine.clock.now(), now);
    assert!(!app.paused(), "the dashboard's own pause is left as it was");
}
