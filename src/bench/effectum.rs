//! effectum, a Rust job queue on SQLite with leases, measured beside the leased loop. It
//! links an older rusqlite whose bundled SQLite cannot be built into this program, so it
//! runs as its own program (`reference/effectum`), started once per worker count on a new
//! file in the bench's folder. Its output is one JSON line; it is bounded in time and size.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;

use super::child::{wait_bounded, Unfinished};
use super::error::BenchError;
use super::options::Mode;
use super::report::BenchRun;

/// More jobs a second than any SQLite queue could commit (10 ns a job): a rate above it is
/// not a measurement.
const MOST_JOBS_PER_S: f64 = 100_000_000.0;

/// What the reference program prints.
#[derive(Deserialize)]
struct Line {
    jobs_per_s: f64,
    per_worker: Vec<u64>,
    all_succeeded: bool,
}

/// Refuse a program that cannot be run, before minutes of SQLite runs.
pub fn ready(program: &Path) -> Result<(), BenchError> {
    let shown = || program.display().to_string();
    let meta = std::fs::metadata(program).map_err(|source| BenchError::EffectumIo {
        program: shown(),
        source,
    })?;
    if !crate::engine::platform::files::runnable(&meta) {
        return Err(BenchError::EffectumNotExecutable { program: shown() });
    }
    Ok(())
}

/// How long a run may take: a thousand jobs a second, and a minute to start and check.
pub fn time_limit(messages: u64) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(messages)
}

/// Run `messages` jobs through effectum with `workers` workers of one job at a time; a
/// program still running after `limit` is stopped, with all it started.
pub fn measure(
    program: &Path,
    dir: &Path,
    (workers, messages): (usize, u64),
    limit: Duration,
) -> Result<BenchRun, BenchError> {
    let file = dir.join(format!("effectum-{workers}-{messages}.db"));
    let _ = std::fs::remove_file(&file);
    let shown = program.display().to_string();
    let mut cmd = Command::new(program);
    // Its own process group, so that a stop past the time limit reaches whatever it
    // started too (it ends itself when this process goes, see reference/effectum).
    crate::platform::children::own_group(&mut cmd);
    let child = cmd
        .arg("--db")
        .arg(&file)
        .args(["--messages", &messages.to_string()])
        .args(["--workers", &workers.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| BenchError::EffectumIo {
            program: shown.clone(),
            source,
        })?;
    let finished = wait_bounded(child, limit).map_err(|why| match why {
        Unfinished::Io(source) => BenchError::EffectumIo {
            program: shown.clone(),
            source,
        },
        Unfinished::NoPipes => BenchError::EffectumNoPipes {
            program: shown.clone(),
        },
        Unfinished::TimedOut => BenchError::EffectumTimedOut {
            program: shown.clone(),
            seconds: limit.as_secs(),
        },
        Unfinished::Stopped => BenchError::Stopped,
    });
    let _ = std::fs::remove_file(&file);
    let (status, out, err) = finished?;
    if !status.success() {
        let why: String = err
            .lines()
            .last()
            .unwrap_or("no message")
            .chars()
            .take(200)
            .collect();
        return Err(BenchError::EffectumFailed {
            program: shown,
            status,
            why,
        });
    }
    let line = figures(&out, shown, workers)?;
    let once = line.all_succeeded && line.per_worker.iter().sum::<u64>() == messages;
    Ok(BenchRun {
        mode: Mode::Effectum,
        round: 1,
        workers,
        batch: 1,
        msgs_per_s: line.jobs_per_s,
        ratio: 0.0,
        ceiling_txn_per_s: 0.0,
        per_worker: line.per_worker,
        seconds: messages as f64 / line.jobs_per_s,
        exactly_once: once,
        passed: once,
        busy_met: 0,
        cost: None,
    })
}

/// The line of figures the program `shown` printed on `out`, refused when it is not one,
/// is of another run than `workers` workers, or states an impossible rate.
fn figures(out: &str, shown: String, workers: usize) -> Result<Line, BenchError> {
    let line: Line =
        serde_json::from_str(out.trim()).map_err(|source| BenchError::EffectumNoFigures {
            program: shown.clone(),
            source,
        })?;
    // Named by what it said, not quoted: its output may span lines.
    if line.per_worker.len() != workers {
        return Err(BenchError::EffectumOtherRun {
            program: shown,
            counts: line.per_worker.len(),
            workers,
        });
    }
    let rate = line.jobs_per_s;
    if !(rate > 0.0 && rate <= MOST_JOBS_PER_S) {
        let said = match rate.abs() < 1e12 {
            true => format!("{rate}"),
            false => format!("{rate:e}"),
        };
        return Err(BenchError::EffectumImpossibleRate {
            program: shown,
            said,
            most: MOST_JOBS_PER_S,
        });
    }
    Ok(line)
}
