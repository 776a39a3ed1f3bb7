//! End to end: the real binary in a pseudo-terminal, keys typed into it, the screen read
//! back through a vt100 parser. Every wait is on the child's output, with a deadline.

mod support;

use support::{Dashboard, COLS, ROWS};

/// A figure of the Ledgers pane: the number after `label` at the pane's left edge, so the
/// header's own words ("... processes them: duplicates") never count.
fn ledger_figure(screen: &vt100::Screen, label: &str) -> Option<u64> {
    let edge = format!("│{label} ");
    screen.contents().lines().find_map(|line| {
        let at = line.find(&edge)?;
        let rest = line[at + edge.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let after = rest[digits.len()..].trim_start();
        (!digits.is_empty() && after.starts_with('│')).then(|| digits.parse().ok())?
    })
}

/// The header line: run state, leasing mode, scenario.
fn header(screen: &vt100::Screen) -> String {
    screen
        .contents()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The Workers pane's row of the selected worker (`▶` marks it, nothing else draws one).
fn selected_worker(screen: &vt100::Screen) -> Option<String> {
    line_with(screen, "▶").map(|l| l[l.find('▶').unwrap_or(0)..].to_string())
}

/// Line of the screen that contains `needle`.
fn line_with(screen: &vt100::Screen, needle: &str) -> Option<String> {
    screen
        .contents()
        .lines()
        .find(|l| l.contains(needle))
        .map(str::to_string)
}

#[test]
fn dashboard_runs_resets_crashes_switches_leasing_and_quits_cleanly() {
    let mut d = Dashboard::open(&["--scenario", "outbox-leasing", "--speed", "4"]);
    // Free play opens paused and says how to start and how to slow down.
    d.wait_for("the paused first frame", |s| {
        header(s).contains("PAUSED") && s.contents().contains("space runs · n steps · - slows")
    });
    d.press(" ");
    d.wait_for_text("RUNNING");
    d.wait_for_text("LEASING ON");
    // The dashboard does not tell outbox-leasing's headless recovery story: free play.
    assert!(d.screen().contains("free play outbox-leasing"));
    // Workers drain the outbox on their own.
    d.wait_for_text("FINALIZED PAY-0");

    // NO_COLOR: not a single coloured cell, yet the run state is still highlighted.
    {
        let s = d.parser.screen();
        for row in 0..ROWS {
            for col in 0..COLS {
                let cell = s.cell(row, col).unwrap();
                assert_eq!(
                    cell.fgcolor(),
                    vt100::Color::Default,
                    "colour at {row},{col}"
                );
                assert_eq!(
                    cell.bgcolor(),
                    vt100::Color::Default,
                    "colour at {row},{col}"
                );
            }
        }
        let header = s.contents().lines().next().unwrap_or_default().to_string();
        let col = header.find("RUNNING").unwrap() as u16;
        assert!(s.cell(0, col).unwrap().bold());
    }

    // Crash Worker-A while it holds a lease: pause, reseed, one step (Worker-A claims
    // PAY-001), crash. Nothing runs while paused, so the crash cannot miss the lease.
    d.press(" ");
    d.wait_for("the header to say PAUSED", |s| header(s).contains("PAUSED"));
    d.press("R");
    d.wait_for("an empty ledger after the reset", |s| {
        ledger_figure(s, "attempts") == Some(0)
            && selected_worker(s).is_some_and(|l| l.contains("Worker-A") && !l.contains("PAY-0"))
    });
    d.press("n");
    d.wait_for("Worker-A to own PAY-001", |s| {
        selected_worker(s)
            .is_some_and(|l| l.contains("Worker-A") && l.contains("PAY-001") && l.contains("left"))
    });
    d.press("c");
    d.wait_for_text("CRASHED holding PAY-001");
    // Run again: the lease runs out on the clock and Worker-B takes PAY-001 over.
    d.press(" ");
    d.wait_for("the header to say RUNNING", |s| {
        header(s).contains("RUNNING")
    });
    d.wait_for("Worker-A's lease to pass to Worker-B", |s| {
        selected_worker(s)
            .is_some_and(|l| l.contains("Worker-A") && l.contains("taken by Worker-B"))
    });
    d.wait_for_text("RECLAIMED PAY-001");

    // Leasing off: pause, reseed, and let both workers load the same Pending rows before
    // either processes one; then run, and the ledger's duplicates figure climbs.
    d.press(" ");
    d.wait_for("the header to say PAUSED", |s| header(s).contains("PAUSED"));
    d.press("l");
    d.wait_for("the header to say LEASING OFF", |s| {
        header(s).contains("LEASING OFF")
    });
    d.press("R");
    d.wait_for("an empty ledger after the reset", |s| {
        ledger_figure(s, "attempts") == Some(0)
    });
    assert_eq!(ledger_figure(d.parser.screen(), "duplicates"), Some(0));
    let loads = |s: &vt100::Screen| s.contents().matches("LOADED 6 pending").count();
    d.press("n");
    d.wait_for("Worker-A to load the outbox", move |s| loads(s) == 1);
    d.press("n");
    d.wait_for("Worker-B to load the same rows", move |s| loads(s) == 2);
    d.press(" ");
    d.wait_for("duplicates in the ledger", |s| {
        ledger_figure(s, "duplicates").is_some_and(|n| n > 0)
    });

    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        !parser.screen().alternate_screen(),
        "terminal left in the alternate screen"
    );
}

#[test]
fn the_lease_expiry_story_is_stepped_in_the_terminal() {
    let mut d = Dashboard::open(&["--scenario", "lease-expiry"]);
    // The strip counts the steps done, as the panel and the lessons do.
    d.wait_for_text("STORY 0/7");
    d.wait_for_text("Story step 0/7");
    assert!(d.screen().contains("PAUSED"));
    let steps = [
        "CLAIMED PAY-001",
        "CRASHED holding PAY-001",
        "BLOCKED on PAY-001 by Worker-A",
        "clock advanced 3100 ms",
        "RECLAIMED PAY-001",
        "provider call PAY-001",
        "FINALIZED PAY-001",
    ];
    for (i, expect) in steps.iter().enumerate() {
        d.press("n");
        d.wait_for_text(expect);
        if i + 1 < steps.len() {
            d.wait_for_text(&format!("STORY {}/7", i + 1));
        }
    }
    d.wait_for("PAY-001 Processed in the table", |s| {
        line_with(s, "PAY-001 Processed").is_some()
    });
    // Told to its end, the story still takes `b`: its last step undone.
    d.press("b");
    d.wait_for_text("STORY 6/7");
    d.wait_for("PAY-001 back to Processing", |s| {
        line_with(s, "PAY-001 Processing").is_some()
    });
    d.press("?");
    // The help opens (it scrolls at 120x40: its title then counts its lines).
    d.wait_for_text("? or Esc closes");
    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
}

/// The `leaselab-*` folders (temporary databases) under `dir`.
fn temporary_databases(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .expect("read the temporary folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("leaselab-"))
        })
        .collect()
}

#[test]
fn a_signal_restores_the_terminal_stops_the_workers_and_removes_the_temporary_database() {
    for (signo, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
    ] {
        // The child's temporary database goes under a folder of our own, so we can see it.
        let tmp = tempfile::tempdir().expect("temporary folder");
        let args = ["--scenario", "outbox-leasing"];
        let mut d = Dashboard::open_with(&args, &[("TMPDIR", tmp.path())]);
        d.wait_for("the dashboard to open", |s| header(s).contains("PAUSED"));
        d.press(" ");
        d.wait_for("the dashboard to run", |s| header(s).contains("RUNNING"));
        let dbs = temporary_databases(tmp.path());
        assert_eq!(dbs.len(), 1, "{dbs:?}");
        assert!(dbs[0].join("outbox.db").exists());
        // What the signal must undo is in place.
        assert!(d.raw_mode());
        assert!(d.parser.screen().alternate_screen());
        assert!(d.parser.screen().hide_cursor());

        d.signal(signo);
        let status = d.wait_for_exit();
        assert_eq!(status.exit_code(), 128 + signo as u32, "{name}: {status:?}");
        let screen = d.parser.screen();
        assert!(!screen.alternate_screen(), "{name}: alternate screen kept");
        assert!(!screen.hide_cursor(), "{name}: cursor left hidden");
        assert!(!d.raw_mode(), "{name}: raw mode left on");
        assert!(
            screen
                .contents()
                .contains(&format!("interrupted by {name}")),
            "{name}: {}",
            screen.contents()
        );
        assert!(
            temporary_databases(tmp.path()).is_empty(),
            "{name}: temporary database left behind"
        );
    }
}

#[test]
fn refuses_to_open_the_dashboard_when_stdout_is_not_a_terminal() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run leaselab");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("leaselab run"), "{err}");
    assert!(out.stdout.is_empty());
}
