//! What the tests of a class count on its PostgreSQL database, apart from what `leaselab
//! class` counts: each figure by a query of its own on the tables, and the scoreboard as
//! `class scoreboard --json` prints it.

use std::collections::BTreeMap;
use std::process::Command;

use postgres::{Client, Config, NoTls};
use serde_json::Value;

/// A plain client on the database of `url`, for raw SQL beside what is under test.
pub fn client(url: &str) -> Client {
    let config: Config = url.parse().expect("a PostgreSQL URL");
    config
        .connect(NoTls)
        .expect("connect to the class's database")
}

/// The one number `sql` selects.
pub fn count(url: &str, sql: &str) -> i64 {
    client(url).query_one(sql, &[]).unwrap().get(0)
}

/// Nothing Pending or Processing, and at least `n` messages.
pub fn drained(url: &str, n: i64) -> Option<()> {
    let all = count(url, "SELECT COUNT(*) FROM OutboxMessages");
    let open = count(
        url,
        "SELECT COUNT(*) FROM OutboxMessages WHERE Status IN ('Pending', 'Processing')",
    );
    (all >= n && open == 0).then_some(())
}

/// Messages not completed exactly once (by a finalize or an unguarded write), and how many
/// finalizes there were.
pub fn processed_once(url: &str) -> (i64, i64) {
    let twice = count(
        url,
        "SELECT COUNT(*) FROM OutboxMessages m WHERE (SELECT COUNT(*) FROM LeaseEvents e
          WHERE e.MessageId = m.Id AND e.Kind IN ('Finalized', 'Marked')) <> 1",
    );
    let finalized = count(
        url,
        "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Finalized'",
    );
    (twice, finalized)
}

/// The scoreboard as counted straight from the events table, written apart from the one
/// `class scoreboard` runs: one query a column, each completion after the first of its
/// message a duplicate. Sorted by name: the order is checked apart.
pub fn counted(url: &str, round: Option<i64>) -> Vec<Value> {
    let of_round = match round {
        Some(r) => format!("AND m.Seeding = {r}"),
        None => String::new(),
    };
    let mut client = client(url);
    let mut per = |kind_filter: &str| -> BTreeMap<String, i64> {
        let sql = format!(
            "SELECT e.Worker, COUNT(*) FROM LeaseEvents e JOIN OutboxMessages m ON m.Id = e.MessageId
              WHERE {kind_filter} {of_round} GROUP BY e.Worker"
        );
        client
            .query(&sql, &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let done = per("e.Kind = 'Finalized'");
    let rejected = per("e.Kind = 'FinalizeRejected'");
    let lost = per("e.Kind = 'LeaseLost'");
    let reclaims = per("e.Kind = 'Claimed' AND e.LeaseVersion > 1");
    let unguarded = per("e.Kind = 'Marked'");
    let duplicates = per(
        "e.Kind IN ('Finalized', 'Marked') AND EXISTS (SELECT 1 FROM LeaseEvents b
          WHERE b.MessageId = e.MessageId AND b.Kind IN ('Finalized', 'Marked') AND b.Seq < e.Seq)",
    );
    let claimed =
        per("e.Kind IN ('Claimed', 'Finalized', 'FinalizeRejected', 'LeaseLost', 'Marked')");
    let n = |m: &BTreeMap<String, i64>, w: &str| m.get(w).copied().unwrap_or(0);
    claimed
        .keys()
        .map(|w| {
            serde_json::json!({
                "name": w, "done": n(&done, w), "rejected": n(&rejected, w),
                "lost": n(&lost, w), "reclaims": n(&reclaims, w),
                "duplicates": n(&duplicates, w), "unguarded": n(&unguarded, w),
            })
        })
        .collect()
}

/// `class scoreboard --json` (`PGPASSWORD` as the test's environment has it), its order
/// checked, then sorted by name.
pub fn scoreboard(url: &str, round: Option<i64>) -> Vec<Value> {
    let r = round.map(|r| r.to_string());
    let mut args = vec!["class", "scoreboard", "--db", url, "--json"];
    if let Some(r) = &r {
        args.extend(["--round", r]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(&args)
        .output()
        .expect("run leaselab");
    assert!(
        out.status.success(),
        "leaselab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut students = doc["students"].as_array().unwrap().clone();
    let key = |s: &Value| {
        (
            -s["done"].as_i64().unwrap(),
            s["rejected"].as_i64().unwrap(),
        )
    };
    assert!(
        students.windows(2).all(|w| key(&w[0]) <= key(&w[1])),
        "sorted by done, then fewest rejected: {students:?}"
    );
    students.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    students
}

/// What the events table alone says: every payment processed once, by the history checker
/// over the events as a replay reads them, against the outbox's rows.
pub fn history_checks(url: &str, total: u64) {
    use leaselab::engine::backend::Db;
    use leaselab::engine::checker;
    use leaselab::engine::events_table::Translator;
    use leaselab::engine::ledger::Ledger;
    use leaselab::engine::pg::PgStore;
    let mut ledger = Ledger::new();
    let mut t = Translator::new();
    let rows = PgStore::open_url(url)
        .and_then(|mut s| s.all_events_after(0, 1_000_000))
        .unwrap();
    for row in rows {
        for ev in t.events(&row) {
            ledger.apply(&ev);
        }
    }
    let reader = Db::Postgres(url.to_string()).open_reader().unwrap();
    let check = checker::check(&ledger, &reader.messages(0, 100_000).unwrap());
    assert!(check.passed(), "{check:?}");
    assert_eq!(check.processed, total);
}
