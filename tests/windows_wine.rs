//! The Windows `leaselab.exe` does its headless work under Wine as the Linux binary does
//! here (issue 49): the same figures from `run`, every built-in lesson's check, the same
//! explorer verdict, an exercise's starter and solution graded alike, and a Windows worker
//! beside a Linux worker in one class round on a PostgreSQL server reached over TCP with a
//! password, every payment processed once.
//!
//! The binary comes from `LEASELAB_WINDOWS_EXE` (`.ci/run` builds it); without it the tests
//! say so once and pass, except in CI, where they fail. `tests/wine` makes the Wine prefix,
//! one for the whole run. Every child is bounded in time; every wait reads output or the
//! database with a deadline.

#[allow(dead_code)]
mod class_support;
#[allow(dead_code)]
mod pg_server;
#[allow(dead_code)]
mod pg_support;
mod support;
mod wine;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use class_support::{counted, drained, processed_once, scoreboard};
use pg_server::PgServer;
use serde_json::Value;
use support::processes::{wait_for, DEADLINE, POLL};
use wine::Leaselab;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a run printed, for a failed assertion.
fn shown(o: &Output) -> String {
    format!("{}\n{}", text(&o.stdout), text(&o.stderr))
}

/// `leaselab ARGS` on both systems, each in a folder of its own: both outputs, after
/// checking that both ended with `code`.
fn on_both(windows: Leaselab, args: &[&str], code: i32) -> (Output, Output) {
    let both = [Leaselab::Linux, windows].map(|side| {
        let dir = tempfile::tempdir().unwrap();
        let o = side.run(args, dir.path());
        assert_eq!(
            o.status.code(),
            Some(code),
            "{} leaselab {args:?}: {}",
            side.name(),
            shown(&o)
        );
        o
    });
    let [linux, windows] = both;
    (linux, windows)
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", shown(o)))
}

/// The figures of `run outbox-leasing --json` that the scenario decides, whatever the
/// threads' timing: its settings, the ledger, the outbox, the payments, the history check and
/// the verdict. (Which worker did how many, how many claims found the queue blocked or
/// empty, and SQLite's busy waits follow the threads' timing; the database's path and the
/// time taken are the run's own.)
const RUN_FIGURES: &[&str] = &[
    "scenario",
    "leasing",
    "workers",
    "messages",
    "lease_ms",
    "process_ms",
    "processing_attempts",
    "unique_processed",
    "processed_more_than_once",
    "provider_status_checks",
    "ownership_violations",
    "gateway_creation_calls",
    "payment_creation_calls_in_workers",
    "claims_ok",
    "rejected_finalizes",
    "crashes",
    "reclaims",
    "leases_lost",
    "overlaps",
    "dead_letters",
    "dead_lettered_now",
    "results_written",
    "retries",
    "heartbeats",
    "outbox",
    "payments",
    "duplicate_rows",
    "runs_histogram",
    "history",
    "lease_expiry",
    "checks",
    "passed",
    "verdict",
];

#[test]
fn run_outbox_leasing_prints_the_same_figures_on_windows() {
    let Some(windows) = wine::windows() else {
        return;
    };
    let (linux, win) = on_both(windows, &["run", "outbox-leasing", "--json"], 0);
    let (linux, win) = (json(&linux), json(&win));
    // The figures the Linux tests hold (tests/cli.rs), then every figure the scenario decides.
    for (key, want) in [
        ("processing_attempts", 6),
        ("unique_processed", 6),
        ("processed_more_than_once", 0),
        ("provider_status_checks", 6),
        ("ownership_violations", 0),
        ("gateway_creation_calls", 6),
    ] {
        assert_eq!(win[key], want, "{key}: {win}");
    }
    assert_eq!(win["passed"], true, "{win}");
    for key in RUN_FIGURES {
        assert!(linux.get(key).is_some(), "run --json has no {key} any more");
        assert_eq!(win[key], linux[key], "{key}");
    }
    let per_worker = win["per_worker"].as_object().expect("per_worker");
    let total: i64 = per_worker.values().filter_map(Value::as_i64).sum();
    assert_eq!(total, 6, "{per_worker:?}");
}

#[test]
fn every_built_in_lesson_checks_on_windows() {
    let Some(windows) = wine::windows() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let listed = Leaselab::Linux.run(&["lessons"], dir.path());
    assert!(listed.status.success(), "{}", shown(&listed));
    let names = lesson_names(&text(&listed.stdout));
    assert!(names.len() >= 5, "{names:?}");
    // The Windows binary lists the same lessons.
    let listed_there = windows.run(&["lessons"], dir.path());
    assert_eq!(text(&listed_there.stdout), text(&listed.stdout));
    for name in &names {
        let (linux, win) = on_both(windows, &["lesson", name, "--check"], 0);
        assert_eq!(
            text(&win.stdout),
            text(&linux.stdout),
            "lesson {name} --check"
        );
    }
}

/// The lesson names of `leaselab lessons`, whose lines read `1 no-claim  No claim: ...`.
fn lesson_names(listed: &str) -> Vec<String> {
    listed
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let number = words.next()?;
            number.parse::<u32>().ok()?;
            words.next().map(str::to_string)
        })
        .collect()
}

#[test]
fn explore_finds_the_same_states_and_verdict_on_windows() {
    let Some(windows) = wine::windows() else {
        return;
    };
    // Exit 1: the default world (fencing token, no idempotency key) breaks a check.
    let args = ["explore", "--workers", "2", "--messages", "1", "--json"];
    let (linux, win) = on_both(windows, &args, 1);
    let (linux, win) = (json(&linux), json(&win));
    assert!(win["states"].as_u64().is_some_and(|n| n > 0), "{win}");
    for key in ["states", "schedules", "exhaustive", "violations"] {
        assert_eq!(win[key], linux[key], "{key}");
    }
    // Everything but the time it took: the search is deterministic.
    let (mut linux, mut win) = (linux, win);
    for j in [&mut linux, &mut win] {
        j.as_object_mut().unwrap().remove("seconds");
    }
    assert_eq!(win, linux);
}

#[test]
fn an_exercise_starter_fails_and_its_solution_passes_on_windows() {
    let Some(windows) = wine::windows() else {
        return;
    };
    for (flag, code) in [("--start", 1), ("--solution", 0)] {
        let (linux, win) = on_both(windows, &["exercise", "one-owner", flag], 0);
        assert_eq!(text(&win.stdout), text(&linux.stdout), "exercise {flag}");
        // The file as the Windows binary printed it, checked by each, from its own folder.
        let [linux_check, windows_check] = [Leaselab::Linux, windows].map(|side| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("mine.toml"), &win.stdout).unwrap();
            let o = side.run(
                &["exercise", "one-owner", "--check", "mine.toml"],
                dir.path(),
            );
            assert_eq!(
                o.status.code(),
                Some(code),
                "{} {flag}: {}",
                side.name(),
                shown(&o)
            );
            o
        });
        assert_eq!(
            text(&windows_check.stdout),
            text(&linux_check.stdout),
            "exercise one-owner --check on the {flag} file"
        );
    }
}

const PASSWORD: &str = "class-on-every-laptop";
const PAYMENTS: i64 = 30;

/// A `leaselab worker` child of either system, `PGPASSWORD` set: its standard output kept
/// line by line as it comes, its standard error whole. Killed and reaped when dropped.
struct Laptop {
    name: String,
    child: Option<Child>,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Laptop {
    fn join(side: Leaselab, url: &str, name: &str) -> Laptop {
        let mut cmd = side.command();
        cmd.args(["worker", "--db", url, "--name", name])
            .args(["--lease-ms", "20000", "--process-ms", "100"])
            .env("PGPASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("start {name}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let kept = lines.clone();
        let read_out = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let kept = stderr.clone();
        let read_err = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = err.read_to_end(&mut bytes);
            kept.lock().unwrap().push_str(&text(&bytes));
        });
        Laptop {
            name: name.to_string(),
            child: Some(child),
            lines,
            stderr,
            readers: vec![read_out, read_err],
        }
    }

    fn said(&mut self, needle: &str) -> bool {
        let child = self.child.as_mut().expect("running");
        if let Some(status) = child.try_wait().expect("look at the worker") {
            panic!("{} ended ({status}):\n{}", self.name, self.everything());
        }
        self.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    }

    fn everything(&self) -> String {
        format!(
            "{}\n{}",
            self.lines.lock().unwrap().join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// Ctrl-C (SIGINT, which Wine hands to the program as CTRL_C_EVENT), then wait for it
    /// to end, at most [`DEADLINE`]: how it ended. One that does not end is killed and the
    /// test fails.
    fn ctrl_c(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        // SAFETY: kill(2) on this test's own child, not reaped yet.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the worker") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} did not end within {DEADLINE:?} of Ctrl-C; killed:\n{}",
                    self.name,
                    self.everything()
                );
            }
            std::thread::sleep(POLL);
        };
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        (status, self.everything())
    }
}

impl Drop for Laptop {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `leaselab ARGS` on Linux with the class's password, which must succeed.
fn teacher(args: &[&str]) -> String {
    let mut cmd = Leaselab::Linux.command();
    cmd.args(args).env("PGPASSWORD", PASSWORD);
    let o = wine::bounded(cmd, wine::COMMAND_DEADLINE, "the teacher's command");
    assert!(o.status.success(), "leaselab {args:?}: {}", shown(&o));
    text(&o.stdout)
}

#[test]
fn a_windows_worker_and_a_linux_worker_share_a_class_round_over_tcp() {
    let Some(windows) = wine::windows() else {
        return;
    };
    let Some(server) = PgServer::on_tcp_with_password(PASSWORD) else {
        return;
    };
    let url = server.url.as_str();
    assert!(url.starts_with("postgres://leaselab@127.0.0.1:"), "{url}");
    let messages = PAYMENTS.to_string();
    teacher(&[
        "class",
        "new-round",
        "--db",
        url,
        "--messages",
        &messages,
        "--hold",
    ]);
    // Both join while the class is held, so both are at work from the first payment.
    let mut laptops = [
        Laptop::join(Leaselab::Linux, url, "linux-laptop"),
        Laptop::join(windows, url, "windows-laptop"),
    ];
    for laptop in &mut laptops {
        let name = laptop.name.clone();
        wait_for(&format!("{name} to be held"), || {
            laptop.said("held by the teacher").then_some(())
        });
    }
    teacher(&["class", "go", "--db", url]);
    // The test's own connections give the password in the URL.
    let url = &url.replacen("leaselab@", &format!("leaselab:{PASSWORD}@"), 1);
    wait_for("the round to be processed", || drained(url, PAYMENTS));
    for laptop in laptops {
        let name = laptop.name.clone();
        let (status, said) = laptop.ctrl_c();
        assert_eq!(status.code(), Some(130), "{name}:\n{said}");
        assert!(
            said.contains(&format!("{name} works on")),
            "{name}:\n{said}"
        );
    }
    let (twice, finalized) = processed_once(url);
    assert_eq!(
        (twice, finalized),
        (0, PAYMENTS),
        "every payment finalized once"
    );
    class_support::history_checks(url, PAYMENTS as u64);
    let board = scoreboard(url, Some(1));
    assert_eq!(board, counted(url, Some(1)));
    let done = |name: &str| {
        board
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["done"].as_i64())
            .unwrap_or_else(|| panic!("{name} is not on the scoreboard: {board:?}"))
    };
    let (linux_done, windows_done) = (done("linux-laptop"), done("windows-laptop"));
    assert!(
        linux_done > 0 && windows_done > 0,
        "both did payments: {board:?}"
    );
    assert_eq!(linux_done + windows_done, PAYMENTS, "{board:?}");
    // Who runs what: each laptop's leaselab and system, as it said when it joined.
    let out = Leaselab::Linux
        .command()
        .args(["class", "scoreboard", "--db", url, "--json"])
        .output()
        .expect("run leaselab");
    assert!(out.status.success(), "{}", shown(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let system = |name: &str| {
        doc["workers"]
            .as_array()
            .and_then(|w| w.iter().find(|r| r["name"] == name))
            .map(|r| (r["system"].clone(), r["version"].clone()))
            .unwrap_or_else(|| panic!("{name} is not among the workers: {doc}"))
    };
    let version = serde_json::Value::from(env!("CARGO_PKG_VERSION"));
    assert_eq!(
        system("windows-laptop"),
        ("Windows x86_64".into(), version.clone())
    );
    assert_eq!(
        system("linux-laptop"),
        (format!("Linux {}", std::env::consts::ARCH).into(), version)
    );
}
