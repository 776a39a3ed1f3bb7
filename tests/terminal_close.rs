//! A dashboard whose terminal goes away (a closed window, a killed tmux session) ends on
//! its own: within the deadline, leaving no temporary database and no lock behind. The
//! terminal is a real pseudo-terminal whose only master descriptor the test closes, as a
//! terminal emulator does when its window closes: the kernel hangs the session up.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// `leaselab ARGS` as the session leader of a new pseudo-terminal, and the master side.
fn on_a_terminal(args: &[&str], cwd: &Path, tmp: &Path) -> (Child, std::fs::File) {
    on_a_terminal_as(args, cwd, tmp, "xterm-256color")
}

fn on_a_terminal_as(args: &[&str], cwd: &Path, tmp: &Path, term: &str) -> (Child, std::fs::File) {
    on_a_terminal_with(args, cwd, tmp, term, &[])
}

/// [`on_a_terminal_as`] with more variables in the child's environment.
fn on_a_terminal_with(
    args: &[&str],
    cwd: &Path,
    tmp: &Path,
    term: &str,
    env: &[(&str, &str)],
) -> (Child, std::fs::File) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty");
    // The master must not leak into the child, or the terminal could never hang up.
    unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(args)
        .current_dir(cwd)
        .env("TMPDIR", tmp)
        .env("NO_COLOR", "1")
        .env("TERM", term)
        .envs(env.iter().copied())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    unsafe {
        cmd.pre_exec(|| {
            // A session of its own, with this terminal as its controlling terminal.
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("start leaselab on the terminal");
    (child, unsafe { std::fs::File::from_raw_fd(master) })
}

/// Read the terminal until its output holds `text` (the dashboard has drawn).
fn read_until(master: &mut std::fs::File, text: &str) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&seen).contains(text) {
        let n = master.read(&mut buf).expect("read the terminal");
        assert!(n > 0, "the terminal closed before {text:?} was drawn");
        seen.extend_from_slice(&buf[..n]);
    }
}

fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("leaselab was still running {DEADLINE:?} after its terminal closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_closed_terminal_ends_a_lesson_a_free_play_and_a_kept_database_dashboard() {
    for (args, drawn) in [
        (&["lesson", "lease-expiry"][..], "LESSON"),
        (&["--scenario", "outbox-leasing"], "PAUSED"),
        (
            &["--scenario", "outbox-leasing", "--db", "kept.db"],
            "PAUSED",
        ),
    ] {
        let cwd = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let (mut child, mut master) = on_a_terminal(args, cwd.path(), tmp.path());
        read_until(&mut master, drawn);
        // The window closes: the only master descriptor goes.
        drop(master);
        let status = wait_for_exit(&mut child);
        assert!(
            status.code().is_some(),
            "{args:?}: killed by a signal: {status:?}"
        );
        // Ended as SIGHUP ends it (128 + 1), not by a panic (101) printing to the terminal
        // that is gone, nor as a failed write (3).
        assert_eq!(status.code(), Some(129), "{args:?}");
        assert!(
            entries(tmp.path()).is_empty(),
            "{args:?}: left {:?}",
            entries(tmp.path())
        );
        let left: Vec<String> = entries(cwd.path())
            .into_iter()
            .filter(|f| f.ends_with(".lock") || f.contains(".leaselab-new"))
            .collect();
        assert!(left.is_empty(), "{args:?}: left {left:?}");
    }
}

#[test]
fn a_dumb_terminal_is_refused_in_one_line_pointing_to_a_headless_run() {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mut master) =
        on_a_terminal_as(&["lesson", "lease-expiry"], cwd.path(), tmp.path(), "dumb");
    let status = wait_for_exit(&mut child);
    assert_eq!(status.code(), Some(2));
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    // What it wrote before it ended (a hung-up terminal reads EIO at its end).
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("TERM=dumb cannot show the dashboard"),
        "{text:?}"
    );
    assert!(text.contains("leaselab run"), "{text:?}");
    // Nothing was drawn: no switch to the alternate screen.
    assert!(!text.contains("\u{1b}[?1049h"), "{text:?}");
}

/// The dashboard's wait for a database another program holds locked ends the same way when
/// its terminal closes: at once, as SIGHUP ends it (it once spun on the closed terminal's
/// input, deaf to every signal but SIGKILL, until the lock was gone).
#[test]
fn a_closed_terminal_ends_the_wait_for_a_locked_database() {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = cwd.path().join("held.db");
    let made = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["run", "lease-expiry", "--db", "held.db"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(made.status.code(), Some(0));
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // A busy limit of ten minutes: only the closed terminal can end the wait in time.
    let (mut child, mut master) = on_a_terminal_with(
        &["--scenario", "outbox-leasing", "--db", "held.db"],
        cwd.path(),
        tmp.path(),
        "xterm-256color",
        &[(leaselab::engine::store::BUSY_GIVE_UP_ENV, "600000")],
    );
    // The wait's screen (its words are drawn one by one, so one word is looked for).
    read_until(&mut master, "Waiting");
    drop(master);
    let status = wait_for_exit(&mut child);
    assert_eq!(status.code(), Some(129), "{status:?}");
    holder.execute_batch("ROLLBACK").unwrap();
}
