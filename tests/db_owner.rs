//! One leaselab per database file: a second run or dashboard on a `--db` in use is refused
//! and told who holds it; a database left by a killed leaselab is taken over, and the report
//! says so. Real processes throughout; every wait is on output or on a file, with a deadline.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use leaselab::engine::db_lock::lock_path;
use leaselab::engine::store::StoreError;
use leaselab::engine::{Engine, EngineConfig};
use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, PtySize};
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(60);

fn leaselab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run leaselab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The real dashboard in a pseudo-terminal, read back through a vt100 parser.
struct Dashboard {
    parser: vt100::Parser,
    output: Receiver<Vec<u8>>,
    input: Box<dyn Write + Send>,
    exited: Receiver<std::io::Result<ExitStatus>>,
    killer: Box<dyn portable_pty::ChildKiller + Send + Sync>,
    pid: u32,
}

impl Dashboard {
    fn open(args: &[&str], cwd: &Path) -> Dashboard {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_leaselab"));
        cmd.args(args);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(cwd);
        let mut child: Box<dyn Child + Send + Sync> =
            pty.slave.spawn_command(cmd).expect("spawn leaselab");
        drop(pty.slave);
        let pid = child.process_id().expect("pid");
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
        std::mem::forget(pty.master);
        Dashboard {
            parser: vt100::Parser::new(
                NonZeroU16::new(40).unwrap(),
                NonZeroU16::new(120).unwrap(),
                0,
            ),
            output,
            input,
            exited,
            killer,
            pid,
        }
    }

    fn wait_for_text(&mut self, text: &str) {
        let deadline = Instant::now() + DEADLINE;
        while !self.parser.screen().contents().contains(text) {
            match self
                .output
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(bytes) => self.parser.process(&bytes),
                Err(e) => {
                    let _ = self.killer.kill();
                    panic!(
                        "no {text:?} ({e:?}); screen:\n{}",
                        self.parser.screen().contents()
                    );
                }
            }
        }
    }

    /// Everything the process wrote until it ended, and how it ended.
    fn wait_exit(mut self) -> (ExitStatus, String) {
        let mut raw = Vec::new();
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            crossbeam_channel::select! {
                recv(self.exited) -> st => break st.expect("waiter").expect("exit status"),
                recv(self.output) -> bytes => if let Ok(b) = bytes { raw.extend(b) },
                default(deadline.saturating_duration_since(Instant::now())) => {
                    let _ = self.killer.kill();
                    panic!("leaselab did not end");
                }
            }
        };
        // The pty closes once the child is gone: read to its end.
        loop {
            match self.output.recv_timeout(DEADLINE) {
                Ok(b) => raw.extend(b),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("pty never closed"),
            }
        }
        (status, String::from_utf8_lossy(&raw).into_owned())
    }

    fn quit(mut self) -> ExitStatus {
        self.input.write_all(b"q").expect("type");
        self.input.flush().expect("flush");
        self.wait_exit().0
    }
}

/// Wait until the lock file beside `db` names `pid`.
fn wait_for_lock_of(db: &Path, pid: u32) -> String {
    let lock = lock_path(db);
    let want = format!("pid {pid}\n");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        if text.starts_with(&want) {
            return text;
        }
        assert!(Instant::now() < deadline, "no lock of pid {pid}: {text:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn processed(db: &Path) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    c.query_row(
        "SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processed'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_second_engine_on_a_database_in_use_is_refused_and_the_lock_goes_with_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let config = EngineConfig {
        db: Some(db.clone().into()),
        ..EngineConfig::default()
    };
    let first = Engine::start(config.clone(), true).unwrap();
    assert!(first.recovered.is_none());
    let held = std::fs::read_to_string(lock_path(&db)).unwrap();
    assert!(
        held.starts_with(&format!("pid {}\n", std::process::id())),
        "{held}"
    );
    let err = Engine::start(config.clone(), true).err().expect("refused");
    assert!(matches!(err, StoreError::InUse(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    assert!(msg.contains("since 20"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    // The first engine's outbox was not reseeded under it.
    assert_eq!(first.store().message_count().unwrap(), 6);

    drop(first);
    assert!(!lock_path(&db).exists(), "a released lock leaves no file");
    let again = Engine::start(config, true).unwrap();
    assert!(again.recovered.is_none(), "a clean end is no recovery");
}

#[test]
fn a_run_on_the_database_of_an_open_dashboard_is_refused_and_the_dashboard_finishes_unharmed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let db_arg = db.to_str().unwrap();
    let mut first = Dashboard::open(
        &["--db", db_arg, "--process-ms", "0", "--speed", "8"],
        dir.path(),
    );
    // Free play opens paused: space runs it.
    first.wait_for_text("PAUSED");
    first.input.write_all(b" ").expect("type");
    first.input.flush().expect("flush");
    first.wait_for_text("RUNNING");
    wait_for_lock_of(&db, first.pid);
    // Its workers drain the outbox on their own.
    first.wait_for_text("0 pending · 0 processing · 6 processed");
    assert_eq!(processed(&db), 6);

    let second = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("in use by another leaselab"), "{err}");
    assert!(err.contains(&format!("pid {}", first.pid)), "{err}");
    assert!(err.contains("--db"), "{err}");
    assert!(second.stdout.is_empty());

    // A second dashboard is refused the same way, before it touches the terminal.
    let (status, out) = Dashboard::open(&["--db", db_arg], dir.path()).wait_exit();
    assert_eq!(status.exit_code(), 2, "{out}");
    assert!(
        out.contains(&format!("in use by another leaselab (pid {}", first.pid)),
        "{out}"
    );

    assert_eq!(processed(&db), 6, "the refused runs reseeded the outbox");
    let status = first.quit();
    assert!(status.success(), "{status:?}");
    assert!(!lock_path(&db).exists());
    let third = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    let j: Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(j["database"]["reused"], true);
    assert_eq!(j["db_recovered"], false);
}

#[test]
fn a_database_left_by_a_killed_leaselab_is_taken_over_and_the_report_says_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let db_arg = db.to_str().unwrap();
    let mut first = Dashboard::open(&["--db", db_arg], dir.path());
    let pid = first.pid;
    wait_for_lock_of(&db, pid);
    // Killed with its database made and seeded: the first frame shows the seeded outbox.
    first.wait_for_text("6 pending · 0 processing · 0 processed");
    let kill = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let (status, _) = first.wait_exit();
    assert!(!status.success());
    // The killed holder could not clean up: its lock file is still there, but not held.
    assert!(std::fs::read_to_string(lock_path(&db))
        .unwrap()
        .starts_with(&format!("pid {pid}\n")));

    let o = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["db_recovered"], true);
    assert_eq!(j["database"]["reused"], true);
    let from = j["database"]["recovered_from"].as_str().unwrap();
    assert!(
        from.starts_with(&format!("pid {pid}, `leaselab --db")),
        "{from}"
    );
    assert_eq!(j["unique_processed"], 6);
    assert_eq!(j["passed"], true);
    assert!(!lock_path(&db).exists());

    // The dashboard says so too: kill a second holder, at any moment after it took the
    // lock, and open the database again.
    let second = Dashboard::open(&["--db", db_arg], dir.path());
    let pid = second.pid;
    wait_for_lock_of(&db, pid);
    let kill = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let _ = second.wait_exit();
    let mut third = Dashboard::open(&["--db", db_arg], dir.path());
    third.wait_for_text(&format!("database recovered from pid {pid}"));
    assert!(third.quit().success());
    assert!(!lock_path(&db).exists());

    let text = leaselab(&["run", "outbox-leasing", "--db", db_arg], dir.path());
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        !out.contains("recovered "),
        "only the run after the kill recovers: {out}"
    );
}
