//! The class is the cluster, in one run (issue 38's "done when"): a PostgreSQL server of the
//! test's own, a watch, and ten `leaselab worker` processes that join over time. Round 1
//! is held until everyone in it has joined; round 2 is held too (the watch says so), and
//! mid-run the server is restarted with `pg_ctl restart -m immediate`: every worker and the
//! watch reconnect and go on. A worker whose clock runs 60 s ahead meets a live lease and does not take it;
//! one stopped with Ctrl-C (SIGINT) gives its lease back at once. In the end every payment
//! was processed once and `class scoreboard` equals counts queried from the events table.
//! Every wait reads the workers' lines, the database or the watch with a deadline; nothing
//! sleeps to synchronise.

#[allow(dead_code)]
mod class_support;
#[allow(dead_code)]
mod pg_server;
#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use class_support::{count, counted, drained, processed_once, scoreboard};
use leaselab::engine::backend::Db;
use leaselab::ui::app::App;
use pg_server::PgServer;
use support::frame_lines;
use support::processes::{until_reconnected, wait_for, WorkerProcess, DEADLINE};

/// Each payment takes a student's worker this long: long enough that the restart finds
/// workers mid-payment, short enough for a quick run.
const PROCESS_MS: &str = "150";

/// `leaselab ARGS`, which must succeed: its standard output.
fn ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .output()
        .expect("run leaselab");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "leaselab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

/// A student's worker: a 20 s lease (heartbeats on), `process_ms` a payment, then `extra`.
fn laptop(url: &str, name: &str, process_ms: &str, extra: &[&str]) -> WorkerProcess {
    let args: Vec<&str> = ["--lease-ms", "20000", "--process-ms", process_ms]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    WorkerProcess::start(url, name, &args)
}

/// Finalizes in round `round` so far.
fn done_in(url: &str, round: i64) -> i64 {
    count(
        url,
        &format!(
            "SELECT COUNT(*) FROM LeaseEvents e JOIN OutboxMessages m ON m.Id = e.MessageId
              WHERE e.Kind = 'Finalized' AND m.Seeding = {round}"
        ),
    )
}

/// Claims of round `round`'s payments so far.
fn claims_in(url: &str, round: i64) -> i64 {
    count(
        url,
        &format!(
            "SELECT COUNT(*) FROM LeaseEvents e JOIN OutboxMessages m ON m.Id = e.MessageId
              WHERE e.Kind = 'Claimed' AND m.Seeding = {round}"
        ),
    )
}

/// Start `name` while the class is held: it says so before the next one joins.
fn join_held(url: &str, laptops: &mut Vec<WorkerProcess>, name: &str, args: (&str, &[&str])) {
    laptops.push(laptop(url, name, args.0, args.1));
    let newest = laptops.last_mut().unwrap();
    wait_for(&format!("{name} to be held"), || {
        newest.still_running();
        (newest.count("held by the teacher") == 1).then_some(())
    });
}

/// Start `name` once round `round` has `done` finalizes: students joining while the others
/// work.
fn join_at(url: &str, laptops: &mut Vec<WorkerProcess>, name: &str, round: i64, done: i64) {
    wait_for(&format!("{done} payments of round {round} done"), || {
        (done_in(url, round) >= done).then_some(())
    });
    laptops.push(laptop(url, name, PROCESS_MS, &[]));
}

/// The watch, drawn, with what arrived taken in.
fn look(watch: &mut App) -> Vec<String> {
    watch.absorb_events();
    frame_lines(watch, 160, 40)
}

/// Restart the server under the class and the watch; draw the watch while the server is
/// away and after, until it and every worker in `laptops` have reconnected.
fn restart_under_the_class(server: &PgServer, watch: &mut App, laptops: &[WorkerProcess]) {
    assert!(laptops.iter().all(|l| !l.said("reconnected")));
    until_reconnected(watch, laptops, server.restart());
    for l in laptops {
        let lines = l.lines().join("\n");
        assert!(l.said("connection lost"), "{}:\n{lines}", l.name);
        assert!(
            l.said("reconnecting (attempt 1, next in 250 ms)"),
            "{}:\n{lines}",
            l.name
        );
    }
}

/// Claims of a lease version above 1 made while the lease before it was live on the
/// server's clock and not given back: a live lease taken over.
fn live_takeovers(url: &str) -> Vec<String> {
    let sql = "SELECT c.Worker || ' took ' || c.PaymentKey || ' v' || c.LeaseVersion
         FROM LeaseEvents c
        WHERE c.Kind = 'Claimed' AND c.LeaseVersion > 1
          AND NOT EXISTS (SELECT 1 FROM LeaseEvents r
                WHERE r.MessageId = c.MessageId AND r.Kind = 'Retry'
                  AND r.LeaseVersion = c.LeaseVersion - 1 AND r.Seq < c.Seq)
          AND (SELECT MAX(p.LockedUntilUtc) FROM LeaseEvents p
                WHERE p.MessageId = c.MessageId AND p.LeaseVersion = c.LeaseVersion - 1
                  AND p.Kind IN ('Claimed', 'Heartbeat') AND p.Seq < c.Seq) > c.AtUtc";
    class_support::client(url)
        .query(sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Leases lost and finalizes rejected: none in this run, whose leases last 20 s and are
/// kept live by heartbeats, unless a live lease was taken over. (This holds whatever clock
/// a row's time was written on; [`live_takeovers`] needs the server's.)
fn lost_or_rejected(url: &str) -> Vec<String> {
    let sql = "SELECT e.Seq || ' ' || e.AtUtc || ' ' || e.Worker || ' ' || e.Kind || ' '
                || COALESCE(e.PaymentKey, '-') || ' v' || COALESCE(e.LeaseVersion, 0) || ' '
                || COALESCE(e.Detail, '')
         FROM LeaseEvents e
        WHERE e.MessageId IN (SELECT MessageId FROM LeaseEvents
                               WHERE Kind IN ('LeaseLost', 'FinalizeRejected'))
        ORDER BY e.Seq";
    class_support::client(url)
        .query(sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The payment key a `CLAIMED PAY-007 until ...` line names.
fn key_in(line: &str) -> String {
    let at = line.find("PAY-").expect("a payment key");
    line[at..]
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .next()
        .unwrap()
        .to_string()
}

/// `holder`, stopped with SIGINT while it holds `key` under a live lease, gives it back at
/// once: it says so, a `Retry` row says it was released and available at once, and the
/// payment's next claim comes before the given-back lease would have run out.
fn ctrl_c_gives_the_lease_back(url: &str, holder: WorkerProcess, key: &str) {
    let ended = holder.signal(libc::SIGINT);
    assert_eq!(ended.code(), Some(130), "{}\n{}", ended.out, ended.err);
    assert!(
        ended
            .out
            .contains(&format!("holder released {key} (lease v1)")),
        "{}",
        ended.out
    );
    let mut client = class_support::client(url);
    let released = client
        .query_one(
            "SELECT AtUtc, LockedUntilUtc, Detail FROM LeaseEvents
              WHERE Kind = 'Retry' AND Worker = 'holder' AND PaymentKey = $1",
            &[&key],
        )
        .unwrap();
    let (at, available, detail): (i64, Option<i64>, Option<String>) =
        (released.get(0), released.get(1), released.get(2));
    assert_eq!(detail.as_deref(), Some("released: SIGINT"));
    assert!(available.is_some_and(|a| a <= at), "{available:?} > {at}");
    let held_until: i64 = client
        .query_one(
            "SELECT MAX(LockedUntilUtc) FROM LeaseEvents WHERE PaymentKey = $1
                AND Worker = 'holder' AND Kind IN ('Claimed', 'Heartbeat')",
            &[&key],
        )
        .unwrap()
        .get(0);
    let next = wait_for(&format!("{key} claimed again"), || {
        client
            .query_opt(
                "SELECT AtUtc FROM LeaseEvents
                  WHERE Kind = 'Claimed' AND PaymentKey = $1 AND LeaseVersion = 2",
                &[&key],
            )
            .unwrap()
            .map(|r| r.get::<_, i64>(0))
    });
    assert!(
        next < held_until,
        "{key} claimed again at {next}, not before its lease ran out at {held_until}"
    );
}

/// Round 1 (made held): four students join while the class is held, one after another,
/// and nobody claims; on `go`, two more join while the others work, and the round is done.
fn round_one(url: &str) -> Vec<WorkerProcess> {
    let mut laptops: Vec<WorkerProcess> = Vec::new();
    // Round 1: four join while the class is held, one after another; nobody claims.
    for i in 1..=4 {
        join_held(
            url,
            &mut laptops,
            &format!("student-{i}"),
            (PROCESS_MS, &[]),
        );
    }
    assert_eq!(claims_in(url, 1), 0, "nobody claims a held round");
    ok(&["class", "go", "--db", url]);
    // Two more join while the others work.
    join_at(url, &mut laptops, "student-5", 1, 10);
    join_at(url, &mut laptops, "student-6", 1, 20);
    wait_for("round 1 to be processed", || drained(url, 40));
    assert!(laptops[..4].iter().all(|l| l.count("go: the teacher") == 1));
    laptops
}

/// The watch caught up from the events table: every finalize, none twice, and current.
fn the_watch_caught_up(watch: &mut App, total: u64) {
    let start = Instant::now();
    let lines = loop {
        let lines = look(watch);
        let snap = watch.snapshot();
        if snap.drained && snap.figures.results_written == total || start.elapsed() > DEADLINE {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let snap = watch.snapshot();
    let shown = lines.join("\n");
    assert!(snap.drained && snap.stale_since.is_none(), "{shown}");
    assert_eq!(snap.figures.results_written, total, "{shown}");
    assert_eq!(snap.figures.duplicates, 0, "{shown}");
}

#[test]
fn ten_students_a_restart_a_fast_clock_and_a_ctrl_c_and_every_payment_is_paid_once() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.url.as_str();
    let said = ok(&[
        "class",
        "new-round",
        "--db",
        url,
        "--messages",
        "40",
        "--hold",
    ]);
    assert!(said.starts_with("round 1: 40 payments (PAY-001 to PAY-040), held"));
    let mut watch = support::watcher(Path::new(url), 40);
    let mut laptops = round_one(url);
    // Round 2, held: everyone says so, and one more joins, who will hold a payment long.
    let said = ok(&[
        "class",
        "new-round",
        "--db",
        url,
        "--messages",
        "120",
        "--hold",
    ]);
    assert!(said.starts_with("round 2: 120 payments (PAY-041 to PAY-160), held"));
    wait_for("every student to be held for round 2", || {
        let before = [2, 2, 2, 2, 1, 1];
        laptops
            .iter()
            .zip(before)
            .all(|(l, n)| l.count("held by the teacher") == n)
            .then_some(())
    });
    // The watch says so too.
    support::draw_until(&mut watch, "the watch to show the hold", |l| {
        l[0].contains(" CLASS HELD ")
    });
    // Its payment takes ten minutes; its lease is kept live by a heartbeat a second.
    let slow = ("600000", &["--heartbeat-ms", "1000"][..]);
    join_held(url, &mut laptops, "holder", slow);
    assert_eq!(claims_in(url, 2), 0, "nobody claims a held round");
    ok(&["class", "go", "--db", url]);
    let key = key_in(&laptops[6].line_with("CLAIMED"));
    support::draw_until(&mut watch, "the hold to leave the watch", |l| {
        !l[0].contains("CLASS HELD")
    });
    join_at(url, &mut laptops, "student-8", 2, 5);
    join_at(url, &mut laptops, "student-9", 2, 10);
    // Mid-run, with every worker at work and the holder holding its lease.
    wait_for("20 payments of round 2 done", || {
        (done_in(url, 2) >= 20).then_some(())
    });
    assert!(done_in(url, 2) < 100, "the restart comes mid-run");
    restart_under_the_class(&server, &mut watch, &laptops);
    // The last to join: its clock 60 s ahead. By its clock the holder's lease ran out long
    // ago; by the server's it is live, and it is not taken.
    laptops.push(laptop(url, "fast", PROCESS_MS, &["--clock-skew-ms=60000"]));
    wait_for("every payment but the holder's to be done", || {
        let taken = live_takeovers(url);
        assert!(taken.is_empty(), "a live lease taken over: {taken:?}");
        let lost = lost_or_rejected(url);
        assert!(
            lost.is_empty(),
            "a lease lost or a finalize rejected:\n{}",
            lost.join("\n")
        );
        let open = count(
            url,
            "SELECT COUNT(*) FROM OutboxMessages WHERE Status IN ('Pending', 'Processing')",
        );
        (done_in(url, 2) == 119 && open == 1).then_some(())
    });
    // Its first line about the holder's payment.
    let met = laptops[9].line_with(&key);
    assert!(
        met.contains(&format!("BLOCKED on {key} by holder")),
        "{met}"
    );
    assert!(met.contains("ms left"), "{met}");
    assert_eq!(live_takeovers(url), Vec::<String>::new());
    let holder = laptops.remove(6);
    ctrl_c_gives_the_lease_back(url, holder, &key);
    wait_for("round 2 to be processed", || drained(url, 160));
    the_watch_caught_up(&mut watch, 160);
    for l in laptops {
        let name = l.name.clone();
        let ended = l.signal(libc::SIGTERM);
        let said = format!("{name}:\n{}\n{}", ended.out, ended.err);
        assert_eq!(ended.code(), Some(143), "{said}");
        let skewed = ended
            .err
            .contains("clock is 60.0 s ahead of the database server's");
        assert_eq!(skewed, name == "fast", "{said}");
    }
    assert_eq!(live_takeovers(url), Vec::<String>::new());
    assert_eq!(lost_or_rejected(url), Vec::<String>::new());
    let (twice, finalized) = processed_once(url);
    assert_eq!((twice, finalized), (0, 160), "every payment finalized once");
    class_support::history_checks(url, 160);
    let replay = leaselab::ui::app::Recording::load(&Db::Postgres(url.to_string()));
    assert!(
        replay.is_ok(),
        "a replay of the class loads: {:?}",
        replay.err()
    );
    for round in [Some(1), Some(2), None] {
        let (said, counted) = (scoreboard(url, round), counted(url, round));
        assert_eq!(said, counted, "round {round:?}");
    }
}
