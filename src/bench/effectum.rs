//! effectum, a Rust job queue on SQLite with leases, measured beside the leased loop. It
//! links an older rusqlite whose bundled SQLite cannot be built into this program, so it
//! runs as its own program (`reference/effectum`), started once per worker count on a new
//! file in the bench's folder. Its output is one JSON line; it is bounded in time and size.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::error::BenchError;
use super::options::Mode;
use super::report::BenchRun;
use super::stop::stop_asked;

/// More jobs a second than any SQLite queue could commit (10 ns a job): a rate above it is
/// not a measurement.
const MOST_JOBS_PER_S: f64 = 100_000_000.0;

/// The most bytes read of the program's output: one line of figures.
const MOST_OUTPUT: u64 = 64 * 1024;

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
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
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
    let child = Command::new(program)
        .arg("--db")
        .arg(&file)
        .args(["--messages", &messages.to_string()])
        .args(["--workers", &workers.to_string()])
        .stdin(Stdio::null())
        // Its own process group, so that a stop past the time limit reaches whatever it
        // started too (it ends itself when this process goes, see reference/effectum).
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| BenchError::EffectumIo {
            program: shown.clone(),
            source,
        })?;
    let finished = wait_bounded(child, limit, &shown);
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

/// Wait for `child` (the program `shown`) at most `limit`, reading at most [`MOST_OUTPUT`]
/// of each of its pipes; past the limit, or when a stopping signal arrives, it is killed
/// with its group. Returns its status, its output and its error output.
fn wait_bounded(
    mut child: std::process::Child,
    limit: Duration,
    shown: &str,
) -> Result<(std::process::ExitStatus, String, String), BenchError> {
    let program = || shown.to_string();
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(BenchError::EffectumNoPipes { program: program() });
    };
    let read = |pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut pipe = pipe.take(MOST_OUTPUT);
            let _ = pipe.read_to_string(&mut text);
            // Past the bound, keep draining so the program never blocks on a full pipe.
            let _ = std::io::copy(&mut pipe.into_inner(), &mut std::io::sink());
            text
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let deadline = Instant::now() + limit;
    let status = loop {
        let waited = child.try_wait().map_err(|source| BenchError::EffectumIo {
            program: program(),
            source,
        })?;
        if let Some(status) = waited {
            break status;
        }
        let stop = if stop_asked() {
            Some(BenchError::Stopped)
        } else {
            (Instant::now() > deadline).then(|| BenchError::EffectumTimedOut {
                program: program(),
                seconds: limit.as_secs(),
            })
        };
        if let Some(why) = stop {
            // SAFETY: a plain kill(2) of the group this child leads; no memory is shared.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.kill();
            let _ = child.wait();
            return Err(why);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    Ok((status, out, err))
}
