//! A blip does not end the class: a PostgreSQL server restarted (`pg_ctl restart -m
//! immediate`) under three worker processes and a watch. Every worker says it reconnects and
//! goes on, the watch is stale while the server is away and current again after, and the run
//! ends with every payment processed once. The server is one of the test's own (started
//! with `.ci/pg-start.sh`, restarted with `.ci/pg-restart.sh`), so no other test's
//! connections are cut; it runs where the other PostgreSQL tests run (`LEASELAB_PG_URL`
//! set, or CI). Every wait reads output or the database with a deadline; nothing sleeps to
//! synchronise.

#[allow(dead_code)]
mod pg_server;
#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::Path;
use std::time::Duration;

use leaselab::engine::backend::Db;
use leaselab::engine::checker;
use leaselab::engine::events_table::Translator;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::pg::PgStore;
use pg_server::PgServer;
use support::frame_lines;
use support::processes::{until_reconnected, wait_for, WorkerProcess, DEADLINE};

/// A worker with a lease far longer than the restart: no lease runs out while the server
/// is away, so each worker finalizes what it held, and no payment is paid twice.
fn laptop(url: &str, name: &str) -> WorkerProcess {
    let args = [
        "--messages",
        "300",
        "--lease-ms",
        "20000",
        "--process-ms",
        "50",
    ];
    WorkerProcess::start(url, name, &args)
}

fn drained(url: &str) -> Option<()> {
    let r = Db::Postgres(url.to_string()).open_reader().ok()?;
    let c = r.outbox_counts().ok()?;
    (r.message_count().ok()? > 0 && c.drained()).then_some(())
}

#[test]
fn a_server_restart_is_a_blip_every_worker_and_the_watch_reconnect_and_go_on() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.url.clone();
    let mut watch = support::watcher(Path::new(&url), 300);
    let laptops: Vec<_> = ["laptop-1", "laptop-2", "laptop-3"]
        .iter()
        .map(|n| laptop(&url, n))
        .collect();
    wait_for("every worker to finalize a payment", || {
        watch.absorb_events();
        laptops.iter().all(|l| l.said("FINALIZED")).then_some(())
    });
    // Draw the watch while the server is away and after: it is stale, then current again.
    let start = until_reconnected(&mut watch, &laptops, server.restart());
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
        let ended = laptop.signal(libc::SIGTERM);
        let (code, out) = (ended.code(), ended.out);
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
