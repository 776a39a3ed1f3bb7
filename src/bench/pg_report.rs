//! What the PostgreSQL comparison found, one worker count at a time, and its part of the
//! report's text.

use serde::Serialize;

/// One worker count on both databases.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    pub workers: usize,
    /// Medians over the runs of each (`REPEATS` in `pg.rs`).
    pub postgres_msgs_per_s: f64,
    pub sqlite_msgs_per_s: f64,
    pub postgres_over_sqlite: f64,
    /// pgbench sending the loop's own statements, its median over the runs (`None`
    /// without pgbench), and the leased loop's median over it.
    pub pgbench_msgs_per_s: Option<f64>,
    pub leased_over_pgbench: Option<f64>,
    /// Every run, in the order measured.
    pub postgres_runs: Vec<f64>,
    pub sqlite_runs: Vec<f64>,
    pub pgbench_runs: Vec<f64>,
    /// Results each PostgreSQL worker wrote in the median run.
    pub postgres_per_worker: Vec<u64>,
    /// Every run on both databases ended with each message processed exactly once.
    pub exactly_once: bool,
}

/// The `postgres` section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct PgComparison {
    pub database: String,
    /// `on` with `--sync full`, else `off` (SQLite's `synchronous=normal` in WAL mode
    /// likewise returns before the log reaches the disk).
    pub synchronous_commit: String,
    pub messages: u64,
    pub repeats: usize,
    /// The pgbench run between the PostgreSQL runs; `None` when none was found.
    pub pgbench: Option<String>,
    /// Its clients, each on a thread of its own, whatever the loop's worker count.
    pub pgbench_clients: u64,
    pub runs: Vec<Versus>,
}

impl PgComparison {
    pub fn passed(&self) -> bool {
        self.runs.iter().all(|r| r.exactly_once)
    }

    pub fn text(&self) -> String {
        let mut t = format!(
            "\nPostgreSQL vs SQLite, leased loop: {}, synchronous_commit={}, {} messages, median of {} runs each\n",
            self.database, self.synchronous_commit, self.messages, self.repeats
        );
        t += &match &self.pgbench {
            Some(p) => format!(
                "pgbench: {p}, {} clients, prepared, the loop's own statements on an outbox seeded afresh before each run\n",
                self.pgbench_clients
            ),
            None => "pgbench: not found on PATH or under /usr/lib/postgresql; leased / pgbench not measured\n".to_string(),
        };
        // Each line within 80 columns: the figures are messages a second, said below.
        t += &format!(
            "{:>7}  {:>8}  {:>4}  {:>6}  {:>4}  {:>9}  {:>7}  {:>14}  once\n",
            "workers", "postgres", "x1", "sqlite", "x1", "pg/sqlite", "pgbench", "leased/pgbench"
        );
        let first = self.runs.first();
        let base = |f: fn(&Versus) -> f64| first.map_or(1.0, f).max(f64::MIN_POSITIVE);
        let (pg1, sq1) = (
            base(|v| v.postgres_msgs_per_s),
            base(|v| v.sqlite_msgs_per_s),
        );
        for v in &self.runs {
            let (pgbench, over) = match (v.pgbench_msgs_per_s, v.leased_over_pgbench) {
                (Some(p), Some(o)) => (format!("{p:.0}"), format!("{o:.2}")),
                _ => ("-".to_string(), "not measured".to_string()),
            };
            t += &format!(
                "{:>7}  {:>8.0}  {:>4.2}  {:>6.0}  {:>4.2}  {:>9.2}  {:>7}  {:>14}  {}\n",
                v.workers,
                v.postgres_msgs_per_s,
                v.postgres_msgs_per_s / pg1,
                v.sqlite_msgs_per_s,
                v.sqlite_msgs_per_s / sq1,
                v.postgres_over_sqlite,
                pgbench,
                over,
                if v.exactly_once { "yes" } else { "NO" }
            );
        }
        t += "postgres, sqlite, pgbench: messages a second, medians. x1: over the first worker\n\
              count's. SKIP LOCKED lets PostgreSQL claims run side by side; SQLite has one\n\
              writer at a time. leased/pgbench: the loop's messages a second over pgbench's\n\
              with its clients, the limit a client reaches on this server.\n";
        t
    }
}
