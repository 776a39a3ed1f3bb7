//! A blip does not end the class: a PostgreSQL server restarted (`pg_ctl restart -m
//! immediate`) under three worker processes and a watch. Every worker says it reconnects and
//! goes on, the watch is stale while the server is away and current again after, and the run
//! ends with every payment processed once. The server is one of the test's own (started
//! with `.ci/pg-start.sh`, restarted with `.ci/pg-restart.sh`), so no other test's
//! connections are cut; it runs where the other PostgreSQL tests run (`LEASELAB_PG_URL`
//! set, or CI). Every wait reads output or the database with a deadline; nothing sleeps to
//! synchronise.

#[allow(dead_code)]
mod pg_support;
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaselab::engine::backend::Db;
use leaselab::engine::checker;
use leaselab::engine::events_table::Translator;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::pg::PgStore;
use support::frame_lines;
use support::processes::{wait_for, DEADLINE};

/// A PostgreSQL server of this test's own, stopped and removed when dropped.
struct PrivateServer {
    dir: String,
    url: String,
}

/// `.ci/` beside this crate.
fn script(name: &str) -> String {
    format!("{}/.ci/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A value `printf %q` wrote: its backslashes dropped (the paths here have no quotes).
fn unquoted(v: &str) -> String {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

impl PrivateServer {
    /// Started where the PostgreSQL tests run; None (after the skip line) elsewhere.
    fn start() -> Option<PrivateServer> {
        let env = |k: &str| std::env::var(k).ok();
        match pg_support::decide(env(pg_support::URL_ENV), env("CI")) {
            Ok(Some(_)) => {}
            Ok(None) => {
                eprintln!("{}", pg_support::SKIP_LINE);
                return None;
            }
            Err(why) => panic!("{why}"),
        }
        let out = Command::new("bash")
            .arg(script("pg-start.sh"))
            .output()
            .expect("run pg-start.sh");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "pg-start.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value = |name: &str| {
            said.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(unquoted)
                .unwrap_or_else(|| panic!("pg-start.sh printed no {name}: {said}"))
        };
        Some(PrivateServer {
            dir: value("LEASELAB_PG_DIR"),
            url: value("LEASELAB_PG_URL"),
        })
    }

    /// `pg_ctl restart -m immediate`, running while the test draws the watch.
    fn restart(&self) -> Child {
        Command::new("bash")
            .arg(script("pg-restart.sh"))
            .args([&self.dir, "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run pg-restart.sh")
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script("pg-stop.sh"))
            .arg(&self.dir)
            .stderr(Stdio::null())
            .status();
    }
}

/// A `leaselab worker` child whose lines are kept as they come.
struct Laptop {
    name: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Laptop {
    fn start(url: &str, name: &str) -> Laptop {
        // A lease far longer than the restart: no lease runs out while the server is away,
        // so each worker finalizes what it held, and no payment is paid twice.
        let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(["worker", "--db", url, "--name", name])
            .args([
                "--messages",
                "300",
                "--lease-ms",
                "20000",
                "--process-ms",
                "50",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start leaselab worker");
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Laptop {
            name: name.to_string(),
            child,
            lines,
        }
    }

    fn said(&self, needle: &str) -> bool {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    }

    /// SIGTERM; its exit code and its lines.
    fn stop(mut self) -> (Option<i32>, String) {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        (status.code(), self.lines.lock().unwrap().join("\n"))
    }
}

impl Drop for Laptop {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn drained(url: &str) -> Option<()> {
    let r = Db::Postgres(url.to_string()).open_reader().ok()?;
    let c = r.outbox_counts().ok()?;
    (r.message_count().ok()? > 0 && c.drained()).then_some(())
}

#[test]
fn a_server_restart_is_a_blip_every_worker_and_the_watch_reconnect_and_go_on() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let url = server.url.clone();
    let mut watch = support::watcher(Path::new(&url), 300);
    let laptops: Vec<_> = ["laptop-1", "laptop-2", "laptop-3"]
        .iter()
        .map(|n| Laptop::start(&url, n))
        .collect();
    wait_for("every worker to finalize a payment", || {
        watch.absorb_events();
        laptops.iter().all(|l| l.said("FINALIZED")).then_some(())
    });
    let mut restart = server.restart();
    // Draw the watch while the server is away and after: it is stale, then current again.
    let start = Instant::now();
    let mut stale = None;
    let mut restarted = None;
    loop {
        watch.absorb_events();
        let lines = frame_lines(&mut watch, 160, 40);
        let snap = watch.snapshot();
        if snap.stale_since.is_some() && stale.is_none() {
            assert!(
                lines[1].contains("CONNECTION LOST") && lines[1].contains("reconnecting"),
                "{}",
                lines[1]
            );
            stale = Some(snap.now_ms);
        }
        if restarted.is_none() {
            restarted = restart.try_wait().unwrap();
        }
        let back = laptops.iter().all(|l| l.said("reconnected"));
        if stale.is_some() && snap.stale_since.is_none() && back && restarted.is_some() {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "gave up waiting for the reconnections (restarted: {restarted:?}, watch stale at \
             {stale:?}):\n{}",
            lines.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(restart.wait().unwrap().success(), "pg-restart.sh failed");
    wait_for("the outbox to drain", || drained(&url));
    let lines = loop {
        watch.absorb_events();
        let lines = frame_lines(&mut watch, 160, 40);
        let snap = watch.snapshot();
        let caught_up = snap.drained && snap.figures.results_written == 300;
        if caught_up || start.elapsed() > DEADLINE {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The watch caught up from the events table: every finalize, none twice.
    let snap = watch.snapshot();
    assert!(snap.drained, "{}", lines.join("\n"));
    assert_eq!(snap.figures.results_written, 300, "{}", lines.join("\n"));
    assert_eq!(snap.figures.duplicates, 0, "{}", lines.join("\n"));
    assert!(snap.stale_since.is_none());
    for laptop in laptops {
        let name = laptop.name.clone();
        let (code, out) = laptop.stop();
        assert_eq!(code, Some(143), "{name} did not run to the end:\n{out}");
        assert!(out.contains("connection lost"), "{name}:\n{out}");
        assert!(
            out.contains("reconnecting (attempt 1, next in 250 ms)"),
            "{name}:\n{out}"
        );
        let after = out.split("reconnected").nth(1).unwrap_or_default();
        assert!(after.contains("FINALIZED"), "{name} went on:\n{out}");
    }
    // The history, from the events table alone: every payment processed once.
    let mut ledger = Ledger::new();
    let mut t = Translator::new();
    let rows = PgStore::open_url(&url)
        .and_then(|mut s| s.all_events_after(0, 1_000_000))
        .unwrap();
    for row in rows {
        for ev in t.events(&row) {
            ledger.apply(&ev);
        }
    }
    let reader = Db::Postgres(url.clone()).open_reader().unwrap();
    let check = checker::check(&ledger, &reader.messages(0, 100_000).unwrap());
    assert!(check.passed(), "{check:?}");
    assert_eq!(check.processed, 300);
}
