//! The whole bench: for each worker count and round the leased, plain, batch (and
//! effectum) runs between ceiling bursts, the naive runs, the scaling, then PostgreSQL.

use std::path::Path;

use crate::engine::outbox::Durability;

use super::ceiling::{around, Ceiling};
use super::effectum;
use super::error::BenchError;
use super::measure::{measure, measure_plain};
use super::options::{BenchOptions, Mode};
use super::pg;
use super::report::{median, workers, BenchReport, BenchRun, Scaling};
use super::stop::{clean, go_on, scratch_folder};

/// The whole bench: the SQLite runs, then with a PostgreSQL URL the leased loop on both.
pub fn run(opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport, BenchError> {
    // A PostgreSQL database that cannot be used is refused before minutes of SQLite runs.
    if let Some(url) = &opts.postgres {
        pg::ready(url)?;
    }
    if let Some(program) = &opts.effectum {
        effectum::ready(program)?;
    }
    let mut report = run_sqlite(opts, &mut progress)?;
    if let Some(url) = &opts.postgres {
        let dir = scratch_folder()?;
        let (workers, d) = (&opts.workers, opts.durability);
        let pgbench = opts.pgbench.as_deref();
        let pg = pg::compare(
            url,
            (workers, opts.messages),
            d,
            pgbench,
            dir.path(),
            &mut progress,
        )?;
        report.postgres = Some(pg);
    }
    Ok(report)
}

/// Ceiling, leased and batch runs for each worker count, naive runs for one and two
/// workers (more only multiplies the duplicates), and optionally the scaling.
fn run_sqlite(
    opts: &BenchOptions,
    mut progress: impl FnMut(&str),
) -> Result<BenchReport, BenchError> {
    let dir = scratch_folder()?;
    let d = opts.durability;
    let mut ceiling = Ceiling::new(dir.path(), d)?;
    let mut runs = Vec::new();
    for &w in &opts.workers {
        for round in 1..=opts.rounds.max(1) {
            let of = if opts.rounds > 1 {
                format!(", round {round} of {}", opts.rounds)
            } else {
                String::new()
            };
            let mut step = |what: String| progress(&format!("{what}, {}{of}", workers(w)));
            for mut run in one_round(&mut ceiling, dir.path(), opts, w, &mut step)? {
                run.round = round;
                runs.push(run);
            }
        }
    }
    for w in [1, 2] {
        go_on()?;
        progress(&format!("naive, {}", workers(w)));
        runs.push(measured(
            &mut ceiling,
            dir.path(),
            Mode::Naive,
            w,
            1,
            opts.messages,
            d,
        )?);
        clean(dir.path(), "ceiling.db");
    }
    let scaling = match opts.scale_to {
        Some(large) => {
            progress(&format!("scaling, 1000 vs {large} messages"));
            Some(scaling(dir.path(), large, d)?)
        }
        None => None,
    };
    let ceiling_txn_per_s = ceiling.median();
    let mut report = BenchReport {
        synchronous: d.pragma().to_lowercase(),
        messages: opts.messages,
        ceiling_txn_per_s,
        runs,
        scaling,
        targets: Vec::new(),
        postgres: None,
    };
    report.targets = report.targets();
    Ok(report)
}

/// A run with ceiling bursts right before and after it.
fn measured(
    ceiling: &mut Ceiling,
    dir: &Path,
    mode: Mode,
    workers: usize,
    batch: usize,
    messages: u64,
    durability: Durability,
) -> Result<BenchRun, BenchError> {
    around(ceiling, |before| match mode {
        Mode::Plain => measure_plain(dir, workers, messages, durability, before),
        _ => measure(dir, mode, workers, batch, messages, durability, before),
    })
}

/// One round for `workers`: the leased, plain, batch and (with `--effectum`) effectum runs,
/// back to back, each between two ceiling bursts.
fn one_round(
    ceiling: &mut Ceiling,
    dir: &Path,
    opts: &BenchOptions,
    workers: usize,
    progress: &mut dyn FnMut(String),
) -> Result<Vec<BenchRun>, BenchError> {
    let (w, n, d) = (workers, opts.messages, opts.durability);
    let mut runs = Vec::new();
    for (mode, batch) in [
        (Mode::Leased, 1),
        (Mode::Plain, 1),
        (Mode::Batch, opts.batch),
    ] {
        progress(match mode {
            Mode::Plain => "plain claim loop".to_string(),
            Mode::Batch => format!("batch {batch}"),
            _ => "leased".to_string(),
        });
        runs.push(measured(ceiling, dir, mode, w, batch, n, d)?);
    }
    if let Some(program) = &opts.effectum {
        progress("effectum".to_string());
        runs.push(around(ceiling, |_| {
            effectum::measure(program, dir, (w, n), effectum::time_limit(n))
        })?);
    }
    clean(dir, "ceiling.db");
    Ok(runs)
}

/// The per-message cost of one worker at 1,000 messages and at `large`.
fn scaling(dir: &Path, large: u64, d: Durability) -> Result<Scaling, BenchError> {
    // A run of 1,000 messages lasts some 60 ms, where one hiccup of the machine
    // moves its figure by a fifth: its cost is the median of five.
    let mut smalls = Vec::new();
    for _ in 0..5 {
        clean(dir, "ceiling.db");
        let run = measure(dir, Mode::Leased, 1, 1, 1_000, d, 1.0)?;
        go_on()?;
        smalls.push(1e6 / run.msgs_per_s);
    }
    let small = median(&smalls);
    let large_run = measure(dir, Mode::Leased, 1, 1, large, d, 1.0)?;
    go_on()?;
    let big = 1e6 / large_run.msgs_per_s;
    Ok(Scaling {
        small_messages: 1_000,
        large_messages: large,
        small_us_per_msg: small,
        large_us_per_msg: big,
        cost_ratio: big / small,
    })
}
