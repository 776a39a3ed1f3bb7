//! Headless progress: drawn on stderr when it is a terminal (a real pty here), never on a
//! redirected stdout, and not at all when stderr is a pipe.

use std::io::Read;
use std::process::Command;
use std::time::Duration;

use portable_pty::{native_pty_system, CommandBuilder, PtySize};

const DEADLINE: Duration = Duration::from_secs(120);

/// Run `sh -c script` with stderr (and stdin) on a pty; returns what the pty showed.
fn on_a_terminal(script: &str, dir: &std::path::Path) -> String {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let mut cmd = CommandBuilder::new("sh");
    cmd.args(["-c", script]);
    cmd.env("LEASELAB", env!("CARGO_BIN_EXE_leaselab"));
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(dir);
    let mut child = pty.slave.spawn_command(cmd).expect("spawn sh");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let (tx, output) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = done
        .recv_timeout(DEADLINE)
        .expect("the run ended")
        .expect("exit status");
    assert!(status.success(), "{status:?}");
    drop(pty.master);
    let mut raw = Vec::new();
    while let Ok(b) = output.recv_timeout(Duration::from_secs(5)) {
        raw.extend(b);
    }
    String::from_utf8_lossy(&raw).into_owned()
}

#[test]
fn a_run_shows_progress_on_a_terminal_stderr_and_keeps_json_stdout_clean() {
    let dir = tempfile::tempdir().unwrap();
    let shown = on_a_terminal(
        "\"$LEASELAB\" run outbox-leasing --messages 400 --process-ms 0 --json > out.json",
        dir.path(),
    );
    assert!(shown.contains("/400 messages processed"), "{shown}");
    let stdout = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert!(!stdout.contains("/400 messages processed"), "{stdout}");
    let j: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON alone");
    assert!(j.is_object());
}

#[test]
fn a_run_with_stderr_not_a_terminal_draws_no_progress() {
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args([
            "run",
            "outbox-leasing",
            "--messages",
            "400",
            "--process-ms",
            "0",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("/400 messages processed"), "{err}");
}
