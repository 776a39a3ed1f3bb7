//! A lesson in the real binary, in an 80x24 pseudo-terminal: stepping forward with `n`
//! and back with `b`, the narration and its checks read back through a vt100 parser.
//! Every wait is on the child's output, with a deadline.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, PtySize};

const ROWS: u16 = 24;
const COLS: u16 = 80;
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

#[test]
fn a_lesson_steps_forward_and_back_at_80x24() {
    let mut d = Dashboard::open(&["lesson", "lease-expiry"]);
    d.wait_for_text("LESSON 0/6");
    d.wait_for_text("n: claim Worker-A PAY-001");
    assert!(d.screen().contains("PAUSED"), "{}", d.screen());

    d.press("n");
    d.wait_for_text("LESSON 1/6");
    d.wait_for_text("✓ PAY-001 owner Worker-A");
    d.press("n");
    d.wait_for_text("LESSON 2/6");
    d.wait_for_text("✓ ledger crashes 1");

    // One step back: the outbox is reseeded and step 1 replayed.
    d.press("b");
    d.wait_for_text("LESSON 1/6");
    d.wait_for("Worker-A alive again after the replay", |s| {
        s.contents()
            .lines()
            .any(|l| l.contains("Worker-A") && l.contains("paused"))
    });
    d.wait_for_text("✓ PAY-001 owner Worker-A");

    for n in 2..=6 {
        d.press("n");
        let want = if n == 6 {
            "LESSON DONE 6/6".to_string()
        } else {
            format!("LESSON {n}/6")
        };
        d.wait_for_text(&want);
    }
    d.wait_for_text("✓ PAY-001 status Processed");
    d.wait_for_text("✓ ledger violations 0");
    assert!(!d.screen().contains('✗'), "{}", d.screen());
    d.press("b");
    d.wait_for_text("LESSON 5/6");

    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
}

#[test]
fn no_arguments_open_the_atomic_claim_lesson_paused() {
    let mut d = Dashboard::open(&[]);
    d.wait_for_text("LESSON 0/5");
    d.wait_for_text("Atomic claim");
    assert!(d.screen().contains("PAUSED"), "{}", d.screen());
    d.press("n");
    d.wait_for_text("✓ PAY-001 owner Worker-A");
    let (status, _) = d.quit();
    assert!(status.success(), "exit status {status:?}");
}
