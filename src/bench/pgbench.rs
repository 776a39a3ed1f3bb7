//! `pgbench`, PostgreSQL's own C client, sending the leased loop's own statements: the
//! limit a client can reach on this server, measured between leaselab's own PostgreSQL
//! runs. Its script is made from the store's SQL constants and their parameter types, so
//! the two cannot drift apart.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use postgres::types::Type;

use super::child::{wait_bounded, Unfinished};
use super::error::BenchError;
use super::options::BENCH_LEASE_MS;
use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{Durability, StoreShared};
use crate::engine::pg::sql::{CLAIM_NEXT_SQL, CLAIM_NEXT_TYPES, FINALIZE_SQL, FINALIZE_TYPES};
use crate::engine::pg::PgStore;
use crate::engine::provider::{Provider, ProviderStatus};

/// pgbench's clients (`-c`), each on a thread of its own (`-j`).
pub const PGBENCH_CLIENTS: u64 = 4;

/// The pgbench variable each parameter of the claim stands for, `$1` first. The worker is
/// the client's number; `now` and `until` are set as the bench's loop sets them.
const CLAIM_VARIABLES: [&str; 3] = ["worker", "now", "until"];

/// The same for the finalize: the claimed row's columns come from the claim (`\gset c_`),
/// the provider's answer is a fixed one (`-D`).
const FINALIZE_VARIABLES: [&str; 8] = [
    "now",
    "c_id",
    "worker",
    "c_leaseversion",
    "c_seeding",
    "c_paymentkey",
    "status",
    "transaction",
];

/// The provider's answer every pgbench finalize writes (the loop's most common one).
const TRANSACTION: &str = "TX-pgbench";

/// `sql` with each `$n` replaced by `(:variable::type)`: the n-th of `variables`, cast to
/// the n-th of `types`, as the store prepares it. Panics on a parameter without a
/// variable: the script is made from constants, and a test makes it.
pub fn with_variables(sql: &str, types: &[Type], variables: &[&str]) -> String {
    let mut out = String::with_capacity(sql.len() * 2);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' || !chars.peek().is_some_and(char::is_ascii_digit) {
            out.push(c);
            continue;
        }
        let mut n = 0usize;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            n = n * 10 + d as usize;
            chars.next();
        }
        let (var, ty) = (variables[n - 1], types[n - 1].name());
        out += &format!("(:{var}::{ty})");
    }
    out
}

/// One pass of the leased loop as a pgbench script: the claim, its row kept as `c_...`,
/// then the guarded finalize of that row.
pub fn script() -> String {
    let claim = with_variables(CLAIM_NEXT_SQL, CLAIM_NEXT_TYPES, &CLAIM_VARIABLES);
    let finalize = with_variables(FINALIZE_SQL, FINALIZE_TYPES, &FINALIZE_VARIABLES);
    format!(
        "\\set now {SCENARIO_START_MS}\n\\set until :now + {BENCH_LEASE_MS}\n\\set worker :client_id + 1\n{} \\gset c_\n{};\n",
        claim.trim(),
        finalize.trim()
    )
}

/// `pgbench` on PATH, else the newest PostgreSQL's under `/usr/lib/postgresql` (where
/// Debian's server packages put it, and `.ci/pg-start.sh` finds the server).
pub fn find_pgbench() -> Option<PathBuf> {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("pgbench"))
                .collect()
        })
        .unwrap_or_default();
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin/pgbench")))
        })
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(v.0));
    on_path
        .into_iter()
        .chain(versions.into_iter().map(|(_, p)| p))
        .find(|p| runnable(p))
}

fn runnable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| crate::engine::platform::files::runnable(&m))
}

/// How long a run may take: a thousand messages a second, and a minute to start.
fn time_limit(messages: u64) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(messages)
}

/// Seed `messages` (rounded up to a whole number per client) afresh at `url`, then let
/// pgbench's clients claim and finalize each once. Returns messages a second, from
/// pgbench's own clock (its connections not counted, as the loop's are not).
pub fn measure_pgbench(
    program: &Path,
    url: &str,
    messages: u64,
    durability: Durability,
    dir: &Path,
) -> Result<f64, BenchError> {
    let per_client = messages.div_ceil(PGBENCH_CLIENTS).max(1);
    let seeded = per_client * PGBENCH_CLIENTS;
    let (mut store, _) = PgStore::create_held(url, Arc::new(StoreShared::new(durability)))?;
    store.empty()?;
    store.seed(&Provider::new(), seeded, SCENARIO_START_MS)?;
    let file = dir.join("leased-loop.pgbench");
    let shown = program.display().to_string();
    let io = |source| BenchError::PgbenchIo {
        program: shown.clone(),
        source,
    };
    std::fs::write(&file, script()).map_err(io)?;
    let wait = match durability {
        Durability::Full => "on",
        Durability::Normal | Durability::Off => "off",
    };
    let mut options = std::env::var("PGOPTIONS").unwrap_or_default();
    options += &format!(" -c synchronous_commit={wait}");
    let mut cmd = Command::new(program);
    crate::platform::children::own_group(&mut cmd);
    let child = cmd
        .args(["--no-vacuum", "-M", "prepared"])
        .args(["-c", &PGBENCH_CLIENTS.to_string()])
        .args(["-j", &PGBENCH_CLIENTS.to_string()])
        .args(["-t", &per_client.to_string()])
        .args(["-D", &format!("status={}", ProviderStatus::Paid.as_str())])
        .args(["-D", &format!("transaction={TRANSACTION}")])
        .arg("-f")
        .arg(&file)
        .arg(url)
        .env("PGOPTIONS", options)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io)?;
    let limit = time_limit(seeded);
    let finished = wait_bounded(child, limit).map_err(|why| match why {
        Unfinished::Io(source) => io(source),
        Unfinished::NoPipes => io(std::io::Error::other("no output pipes")),
        Unfinished::TimedOut => BenchError::PgbenchTimedOut {
            program: shown.clone(),
            seconds: limit.as_secs(),
        },
        Unfinished::Stopped => BenchError::Stopped,
    });
    let _ = std::fs::remove_file(&file);
    let (status, out, err) = finished?;
    if !status.success() {
        return Err(BenchError::PgbenchFailed {
            program: shown,
            status,
            why: first_error(&err),
        });
    }
    let rate = tps(&out).ok_or_else(|| BenchError::PgbenchNoFigures {
        program: shown.clone(),
    })?;
    let processed = store.outbox_counts()?.processed;
    if processed != seeded {
        return Err(BenchError::PgbenchIncomplete {
            program: shown,
            processed,
            seeded,
        });
    }
    Ok(rate)
}

/// The rate pgbench printed last (`tps = ...`: without its connections' time), if it is one.
fn tps(out: &str) -> Option<f64> {
    let line = out.lines().rev().find(|l| l.starts_with("tps = "))?;
    let rate: f64 = line["tps = ".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (rate.is_finite() && rate > 0.0).then_some(rate)
}

/// The line of pgbench's error output that says what went wrong (the first naming an
/// error, else the last), without control characters, at most 200 characters.
fn first_error(err: &str) -> String {
    let line = err
        .lines()
        .find(|l| l.contains("ERROR") || l.contains("error"))
        .or_else(|| err.lines().last())
        .unwrap_or("no message");
    line.chars().filter(|c| !c.is_control()).take(200).collect()
}
