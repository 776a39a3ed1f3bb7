//! An outside program the bench runs between its own runs (effectum, pgbench): waited for
//! at most a time limit, its output read up to a bound, it and all it started stopped when
//! the limit passes or a stopping signal arrives.

use std::io::Read;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::stop::stop_asked;

/// The most bytes read of each of the program's pipes: a report of some lines.
const MOST_OUTPUT: u64 = 64 * 1024;

/// Why a wait ended without the program's own end.
pub(super) enum Unfinished {
    /// The program could not be waited for.
    Io(std::io::Error),
    /// It was started without its output pipes.
    NoPipes,
    /// Still running at the limit: stopped.
    TimedOut,
    /// A stopping signal arrived: stopped.
    Stopped,
}

/// Wait for `child` at most `limit`, reading at most [`MOST_OUTPUT`] of each of its pipes;
/// past the limit, or when a stopping signal arrives, it is killed with its group (it must
/// have been started in a process group of its own). Returns its status, its output and
/// its error output.
pub(super) fn wait_bounded(
    mut child: Child,
    limit: Duration,
) -> Result<(ExitStatus, String, String), Unfinished> {
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(Unfinished::NoPipes);
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
        if let Some(status) = child.try_wait().map_err(Unfinished::Io)? {
            break status;
        }
        let stop = if stop_asked() {
            Some(Unfinished::Stopped)
        } else {
            (Instant::now() > deadline).then_some(Unfinished::TimedOut)
        };
        if let Some(why) = stop {
            crate::platform::children::kill_group(&mut child);
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
