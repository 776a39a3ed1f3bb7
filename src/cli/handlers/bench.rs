//! `leaselab bench`: claim throughput against the database's own ceiling, with `--db` also PostgreSQL.

use std::process::ExitCode;

use crate::cli::{runtime_error, usage_error, BenchArgs, Out, Sync};

pub(crate) fn bench(a: &BenchArgs) -> ExitCode {
    use leaselab::bench::{self, BenchOptions};
    use leaselab::engine::backend::Db;
    use leaselab::engine::outbox::Durability;
    let postgres =
        match a.db.as_deref().map(Db::parse) {
            None => None,
            Some(Db::Postgres(url)) => Some(url),
            Some(Db::Sqlite(_)) => return usage_error(
                "bench measures SQLite on temporary files; its --db takes only a postgres:// URL \
                 (measured beside them)"
                    .to_string(),
            ),
        };
    let opts = BenchOptions {
        messages: a.messages.map_or(100_000, |n| n as u64),
        workers: a.workers.clone().map_or_else(|| vec![1, 2, 4, 8], |w| w.0),
        durability: match a.sync {
            Sync::Full => Durability::Full,
            Sync::Normal => Durability::Normal,
        },
        batch: a.batch as usize,
        scale_to: a.scale.map(|n| n as u64),
        // Looked for only when it would run: beside the PostgreSQL runs.
        pgbench: postgres.as_ref().and_then(|_| bench::find_pgbench()),
        postgres,
        effectum: a.effectum.clone(),
        rounds: a.rounds as usize,
    };
    // From here on a signal stops the bench at its next message: workers joined, the
    // reference program stopped, the temporary databases removed.
    if let Err(e) = leaselab::signals::watch() {
        return usage_error(e);
    }
    let steps = leaselab::progress::Steps::new();
    let report = bench::run(&opts, |step| steps.step(step));
    let steps_lost = steps.write_failed();
    // The spinner goes before the report is printed.
    drop(steps);
    if steps_lost {
        return runtime_error("cannot write the bench's steps to standard error");
    }
    let report = match report {
        Ok(r) => r,
        // A signal ended the bench, or a wait for a lock it cut short: the signal is what
        // happened.
        Err(e) => {
            return match leaselab::signals::received() {
                Some(signo) => super::interrupted(signo, "the bench stopped; no figures printed"),
                None => usage_error(e),
            }
        }
    };
    let mut out = Out::new();
    if a.json {
        out.line(&serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out.print(&report.text());
    }
    out.finish(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
