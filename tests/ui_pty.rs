//! End to end: the real binary in a pseudo-terminal, keys typed into it, the screen read
//! back through a vt100 parser. Every wait is on the child's output, with a deadline.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, PtySize};

const ROWS: u16 = 40;
const COLS: u16 = 120;
const DEADLINE: Duration = Duration::from_secs(30);

struct Dashboard {
    parser: vt100::Parser,
    output: Receiver<Vec<u8>>,
    input: Box<dyn Write + Send>,
    exited: Receiver<std::io::Result<ExitStatus>>,
    killer: Box<dyn portable_pty::ChildKiller + Send + Sync>,
}

impl Dashboard {
    fn open(args: &[&str]) -> Dashboard {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_leaselab"));
        cmd.args(args);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(env!("CARGO_MANIFEST_DIR"));
        let mut child: Box<dyn Child + Send + Sync> =
            pty.slave.spawn_command(cmd).expect("spawn leaselab");
        // Our copy of the slave end must close, or the reader never sees the child leave.
        drop(pty.slave);
        let killer = child.clone_killer();
        let (done_tx, exited) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait());
        });
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let (tx, output) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let input = pty.master.take_writer().expect("pty writer");
        // The master must outlive the child: keep it alive in the reader's place.
        std::mem::forget(pty.master);
        Dashboard {
            parser: vt100::Parser::new(
                NonZeroU16::new(ROWS).unwrap(),
                NonZeroU16::new(COLS).unwrap(),
                0,
            ),
            output,
            input,
            exited,
            killer,
        }
    }

    fn screen(&self) -> String {
        self.parser.screen().contents()
    }

    /// Read output until the screen satisfies `done`.
    fn wait_for(&mut self, what: &str, done: impl Fn(&vt100::Screen) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if done(self.parser.screen()) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.parser.process(&bytes),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.killer.kill();
                    panic!("timed out waiting for {what}; screen:\n{}", self.screen());
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "leaselab ended while waiting for {what}; screen:\n{}",
                        self.screen()
                    )
                }
            }
        }
    }

    fn wait_for_text(&mut self, text: &str) {
        let t = text.to_string();
        self.wait_for(text, move |s| s.contents().contains(&t));
    }

    fn press(&mut self, keys: &str) {
        self.input.write_all(keys.as_bytes()).expect("type");
        self.input.flush().expect("flush");
    }

    /// Quit with `q` and return the exit status, reading the last frames meanwhile.
    fn quit(mut self) -> (ExitStatus, vt100::Parser) {
        self.press("q");
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            crossbeam_channel::select! {
                recv(self.exited) -> st => break st.expect("waiter").expect("exit status"),
                recv(self.output) -> bytes => {
                    if let Ok(b) = bytes { self.parser.process(&b) }
                },
                default(deadline.saturating_duration_since(Instant::now())) => {
                    let _ = self.killer.kill();
                    panic!("leaselab did not quit; screen:\n{}", self.screen());
                }
            }
        };
        // Whatever was written before the exit (leaving the alternate screen) is in the pipe.
        while let Ok(b) = self.output.recv_timeout(Duration::from_millis(200)) {
            self.parser.process(&b);
        }
        (status, self.parser)
    }
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
    d.wait_for_text("RUNNING");
    d.wait_for_text("LEASING ON");
    assert!(d.screen().contains("scenario outbox-leasing"));
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

    d.press("R");
    d.wait_for_text("RESET: outbox reseeded");

    // Crash Worker-A as soon as it holds a lease; Worker-B takes over after expiry.
    d.wait_for("Worker-A to own a message", |s| {
        line_with(s, "▶ Worker-A").is_some_and(|l| l.contains("PAY-0") && l.contains("left"))
    });
    d.press("c");
    d.wait_for_text("CRASHED holding PAY-");
    d.wait_for_text("RECLAIMED PAY-");
    d.wait_for("Worker-A's lease to pass to Worker-B", |s| {
        line_with(s, "▶ Worker-A").is_some_and(|l| l.contains("→ Worker-B"))
    });

    d.press("l");
    d.wait_for_text("LEASING OFF");
    d.press("R");
    d.wait_for("duplicates in the ledger", |s| {
        line_with(s, "duplicates")
            .is_some_and(|l| !l.trim_end_matches('│').trim_end().ends_with(" 0"))
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
    d.wait_for_text("STORY 1/7");
    assert!(d.screen().contains("PAUSED"));
    let steps = [
        "CLAIMED PAY-001",
        "CRASHED holding PAY-001",
        "BLOCKED on PAY-001 by Worker-A",
        "clock advanced 3100 ms",
        "RECLAIMED PAY-001",
        "status check PAY-001",
        "FINALIZED PAY-001",
    ];
    for (i, expect) in steps.iter().enumerate() {
        d.press("n");
        d.wait_for_text(expect);
        if i + 1 < steps.len() {
            d.wait_for_text(&format!("STORY {}/7", i + 2));
        }
    }
    d.wait_for("PAY-001 Processed in the table", |s| {
        line_with(s, "PAY-001 Processed").is_some()
    });
    d.press("?");
    d.wait_for_text("Keys (? or Esc closes)");
    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
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
