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

use super::{BenchRun, Mode};

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
pub fn ready(program: &Path) -> Result<(), String> {
    let meta =
        std::fs::metadata(program).map_err(|e| format!("--effectum {}: {e}", program.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "--effectum {}: not an executable file (build it with cargo build --release --manifest-path reference/effectum/Cargo.toml)",
            program.display()
        ));
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
) -> Result<BenchRun, String> {
    let file = dir.join(format!("effectum-{workers}-{messages}.db"));
    let _ = std::fs::remove_file(&file);
    let shown = program.display();
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
        .map_err(|e| format!("--effectum {shown}: {e}"))?;
    let finished = wait_bounded(child, limit);
    let _ = std::fs::remove_file(&file);
    let (status, out, err) = finished.map_err(|why| format!("--effectum {shown}: {why}"))?;
    if !status.success() {
        let why: String = err
            .lines()
            .last()
            .unwrap_or("no message")
            .chars()
            .take(200)
            .collect();
        return Err(format!("--effectum {shown} failed ({status}): {why}"));
    }
    let line: Line = serde_json::from_str(out.trim()).map_err(|e| {
        format!("--effectum {shown} printed no line of figures ({e}); is it reference/effectum?")
    })?;
    // Named by what it said, not quoted: its output may span lines.
    if line.per_worker.len() != workers {
        return Err(format!(
            "--effectum {shown} printed figures of another run ({} worker counts for {workers} workers)",
            line.per_worker.len(),
        ));
    }
    let rate = line.jobs_per_s;
    if !(rate > 0.0 && rate <= MOST_JOBS_PER_S) {
        let said = match rate.abs() < 1e12 {
            true => format!("{rate}"),
            false => format!("{rate:e}"),
        };
        return Err(format!(
            "--effectum {shown} printed an impossible rate ({said} jobs/s; a rate is above 0 and at most {MOST_JOBS_PER_S:.0})"
        ));
    }
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

/// Wait for `child` at most `limit`, reading at most [`MOST_OUTPUT`] of each of its pipes;
/// past the limit, or when a stopping signal arrives, it is killed with its group. Returns
/// its status, its output and its error output.
fn wait_bounded(
    mut child: std::process::Child,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String, String), String> {
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("no output pipes".to_string());
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
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let stop = if super::stop_asked() {
            Some(super::STOPPED.to_string())
        } else {
            (Instant::now() > deadline)
                .then(|| format!("no result after {} s; stopped it", limit.as_secs()))
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
