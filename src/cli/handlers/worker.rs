//! `leaselab worker`: one worker process on a shared database.

use std::process::ExitCode;

use leaselab::setup::Timing;

use super::interrupted;
use crate::cli::{runtime_error, usage_error, Out, WorkerArgs};

/// Payments a worker seeds when it creates the database (the article's six).
const WORKER_SEED_MESSAGES: u64 = 6;

pub(crate) fn worker(a: &WorkerArgs) -> ExitCode {
    use leaselab::processes::worker::{self as process, WorkerOptions};
    let name = a.name.as_str();
    let Some(db) = a.db.clone() else {
        return usage_error("`worker` needs --db PATH|URL: the database it shares with the others");
    };
    if let Err(e) = process::check_name(name) {
        return usage_error(e);
    }
    let messages = a.outbox.messages().unwrap_or(WORKER_SEED_MESSAGES);
    let timing = Timing::DASHBOARD.resolve(a.timing.lease_ms, a.timing.process_ms, None);
    let reliability = match a.reliability.reliability(timing.lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let outlives = timing.check_lease_outlives_processing(
        reliability.heartbeats,
        "this worker would lose every lease mid-message",
    );
    if let Err(e) = outlives {
        return usage_error(e);
    }
    let interrupts = match leaselab::signals::watch() {
        Ok(rx) => rx,
        Err(e) => return usage_error(e),
    };
    let opts = WorkerOptions {
        db,
        name: name.to_string(),
        lease_ms: timing.lease_ms,
        process_ms: timing.process_ms,
        idle_ms: leaselab::setup::MAX_IDLE_MS,
        leasing: !a.outbox.no_leasing,
        messages,
        reliability,
    };
    let mut out = Out::new();
    let said = |out: &mut Out, l: &str| {
        out.line(l);
        out.open()
    };
    match process::run(&opts, &interrupts, |l| said(&mut out, l)) {
        // A closed pipe ends it quietly; a failed write (a full disk) says so, exit 3.
        Ok(process::Ended::OutputLost) => out.finish(ExitCode::SUCCESS),
        Ok(process::Ended::Interrupted(signo)) => {
            let what = format!("{name} stopped between two actions");
            out.finish(interrupted(signo, &what))
        }
        Err(process::Failure::BadInput(e)) => usage_error(e),
        Err(process::Failure::Runtime(e)) => runtime_error(e),
    }
}
