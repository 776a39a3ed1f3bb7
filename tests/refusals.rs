//! What the real binary refuses rather than ignores: flags that would mean nothing, a saved
//! lesson over a file that exists, and output that nobody can see (a closed stdout). Each
//! refusal is one line on stderr and a non-zero exit.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

mod support;

use support::{leaselab_bounded, stderr, stdout};

/// A usage error: exit 2 and exactly one line on stderr, which holds `needle`.
fn assert_refused(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected, got: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
}

#[test]
fn a_fault_list_that_means_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (list, why) in [
        ("", "names no fault"),
        (",", "names no fault"),
        ("crash,crash", "names crash twice"),
        ("crash,", "has an empty item"),
        ("none,crash", "puts none beside a fault"),
    ] {
        let o = leaselab_bounded(&["explore", "--faults", list], dir.path());
        assert_refused(&o, &format!("--faults: '{list}' {why}"));
    }
    // What a list may be still works: none alone, spaces after the commas.
    for list in ["none", "crash, pause"] {
        let o = leaselab_bounded(
            &[
                "explore",
                "--workers",
                "1",
                "--messages",
                "1",
                "--faults",
                list,
            ],
            dir.path(),
        );
        assert!(o.status.code() != Some(2), "{list}: {}", stderr(&o));
    }
}

#[test]
fn an_empty_payment_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let o = leaselab_bounded(
        &["worker", "--name", "w1", "--db", &db, "--fail-always", ""],
        dir.path(),
    );
    assert_refused(&o, "--fail-always: '' is not a payment key");
    assert!(!dir.path().join("w.db").exists(), "nothing was created");
    let o = leaselab_bounded(&["run", "soak", "--fail-first", " =2"], dir.path());
    assert_refused(&o, "--fail-first: ' =2' is not KEY=N");
}

#[test]
fn a_lessons_flags_that_do_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lesson = |rest: &[&str]| {
        let mut args = vec!["lesson", "lease-expiry"];
        args.extend_from_slice(rest);
        leaselab_bounded(&args, d)
    };
    let o = lesson(&["--check", "--size", "80x24"]);
    assert_refused(&o, "--size is the screen size of --cast and --shot");
    let o = lesson(&["--shot", "x.svg", "--db", "x.db"]);
    assert_refused(&o, "--db does not apply to --shot");
    let o = lesson(&["--shot", "x.png"]);
    assert_refused(
        &o,
        "--shot writes an SVG picture; name the file .svg (or a device such as /dev/stdout), not x.png",
    );
    let o = lesson(&["--check", "--speed", "2"]);
    assert_refused(&o, "--speed is the dashboard's free-play clock");
    let o = lesson(&["--print", "--db", "x.db"]);
    assert_refused(&o, "--print only writes the lesson's file");
    // Nothing was written or run for any of them.
    let left: Vec<_> = std::fs::read_dir(d).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // An upper-case extension is still SVG.
    let o = lesson(&["--shot", "x.SVG", "--step", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `explore` on a world whose search breaks a check at once, saving its lesson at `path`.
fn explore_saving(path: &str, force: bool, dir: &Path) -> Output {
    let mut args = vec![
        "explore",
        "--workers",
        "1",
        "--messages",
        "1",
        "--mode",
        "no-leasing",
        "--save-lesson",
        path,
    ];
    if force {
        args.push("--force");
    }
    leaselab_bounded(&args, dir)
}

#[test]
fn a_saved_lesson_never_replaces_a_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("mine.toml"), "my own lesson").unwrap();
    std::fs::write(d.join("target.toml"), "the link's target").unwrap();
    std::os::unix::fs::symlink("target.toml", d.join("link.toml")).unwrap();
    std::os::unix::fs::symlink("nowhere.toml", d.join("dangling.toml")).unwrap();

    let o = explore_saving("mine.toml", false, d);
    assert_refused(
        &o,
        "--save-lesson mine.toml exists; add --force to replace it",
    );
    // Refused before the search: no report was printed.
    assert_eq!(stdout(&o), "");
    let o = explore_saving("link.toml", false, d);
    assert_refused(&o, "--save-lesson link.toml is a symlink");
    let o = explore_saving("dangling.toml", false, d);
    assert_refused(&o, "--save-lesson dangling.toml is a symlink");
    assert_eq!(
        std::fs::read_to_string(d.join("mine.toml")).unwrap(),
        "my own lesson"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("target.toml")).unwrap(),
        "the link's target"
    );
    assert!(!d.join("nowhere.toml").exists());

    // A new file is written; --force replaces one that exists.
    let o = explore_saving("new.toml", false, d);
    assert_eq!(o.status.code(), Some(1), "a check broke: {}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("new.toml"))
        .unwrap()
        .contains("[[step]]"));
    let o = explore_saving("mine.toml", true, d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("mine.toml"))
        .unwrap()
        .contains("[[step]]"));
    // A folder that is not there is said before the search, forced or not.
    for force in [false, true] {
        let o = explore_saving("gone/mine.toml", force, d);
        assert_refused(
            &o,
            "--save-lesson gone/mine.toml: there is no folder gone to write it in",
        );
        assert_eq!(stdout(&o), "", "refused before the search");
    }
    // A name with an escape sequence in it reaches the terminal without it.
    std::fs::write(d.join("evil\u{1b}[2J.toml"), "a file").unwrap();
    let o = explore_saving("evil\u{1b}[2J.toml", false, d);
    assert!(!stderr(&o).contains('\u{1b}'), "{:?}", stderr(&o));
    assert_refused(
        &o,
        "--save-lesson evil[2J.toml exists; add --force to replace it",
    );
    // --force alone means nothing.
    let o = leaselab_bounded(&["explore", "--force"], d);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// The real binary started with its standard output closed (`>&-`).
fn with_stdout_closed(args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(args).current_dir(cwd).env("NO_COLOR", "1");
    // SAFETY: close(2) is async-signal-safe, as a pre_exec hook must be.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(libc::STDOUT_FILENO);
            Ok(())
        });
    }
    cmd.output().expect("run leaselab")
}

#[test]
fn a_closed_stdout_is_an_error_not_a_silent_success() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["man"][..],
        &["lessons"],
        &["lessons", "--reference"],
        &["lesson", "lease-expiry", "--print"],
        &["lesson", "lease-expiry", "--check"],
        &["run", "outbox-leasing"],
        &["list"],
        &["completions", "bash"],
        &["explore", "--workers", "1", "--messages", "1"],
        &["bench", "--json", "--messages", "100", "--workers", "1"],
        &["--help"],
        &["--version"],
    ] {
        let o = with_stdout_closed(args, dir.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("standard output") && err.contains("closed"),
            "{args:?}: {err}"
        );
    }
    // Nothing ran: no report was saved.
    assert!(!dir.path().join("reports").exists());
}

#[test]
fn output_to_dev_null_is_still_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .arg("man")
        .current_dir(dir.path())
        .stdout(null)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn ctrl_c_stops_an_exercise_check_inside_a_students_statement() {
    // The statement may run ten minutes; Ctrl-C ends the check at once, with its own line.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("endless.toml"), support::endless_claim()).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["exercise", "takeover", "--check", "endless.toml"])
        .current_dir(dir.path())
        .env(support::LONG_STATEMENTS.0, support::LONG_STATEMENTS.1)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_until_catching(child.id(), libc::SIGINT);
    // Inside the statement: the check uses a few milliseconds before it.
    support::wait_until_busy(child.id(), std::time::Duration::from_millis(300));
    let start = std::time::Instant::now();
    let o = support::signal_and_wait(child, libc::SIGINT, "exercise --check");
    let took = start.elapsed();
    assert_eq!(
        stderr(&o),
        "leaselab: interrupted by SIGINT; the check stopped\n"
    );
    assert_eq!(o.status.code(), Some(130));
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}
