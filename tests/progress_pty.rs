//! Headless progress: drawn on stderr when it is a terminal (a real pty here), never on a
//! redirected stdout, and not at all when stderr is a pipe.

use std::process::Command;
use std::time::Duration;

use portable_pty::CommandBuilder;

mod support;

use support::PtyChild;

const DEADLINE: Duration = Duration::from_secs(120);

/// Run `sh -c script` with stderr (and stdin) on a pty; returns what the pty showed.
fn on_a_terminal(script: &str, dir: &std::path::Path) -> String {
    let mut cmd = CommandBuilder::new("sh");
    cmd.args(["-c", script]);
    cmd.env("LEASELAB", env!("CARGO_BIN_EXE_leaselab"));
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(dir);
    let child = PtyChild::spawn(cmd, 24, 120);
    let status = child
        .exited
        .recv_timeout(DEADLINE)
        .expect("the run ended")
        .expect("exit status");
    assert!(status.success(), "{status:?}");
    let output = child.output.clone();
    drop(child);
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
