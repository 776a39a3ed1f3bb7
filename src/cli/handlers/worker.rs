//! `leaselab worker`: one worker process on a shared database.

use std::path::PathBuf;
use std::process::ExitCode;

use leaselab::processes::worker::{self as process, WorkerOptions};
use leaselab::setup::Timing;

use super::interrupted;
use crate::cli::{runtime_error, usage_error, Out, WorkerArgs};

/// Payments a worker seeds when it creates the database (the article's six).
const WORKER_SEED_MESSAGES: u64 = 6;

pub(crate) fn worker(a: &WorkerArgs) -> ExitCode {
    let name = a.name.as_str();
    let Some(db) = a.db.clone() else {
        return usage_error("`worker` needs --db PATH|URL: the database it shares with the others");
    };
    if let Err(e) = process::check_name(name) {
        return usage_error(e);
    }
    let opts = match options(a, db) {
        Ok(o) => o,
        Err(e) => return usage_error(e),
    };
    let interrupts = match leaselab::signals::watch() {
        Ok(rx) => rx,
        Err(e) => return usage_error(e),
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
        Err(e) if e.is_bad_input() => usage_error(e),
        Err(e) => runtime_error(e),
    }
}

/// The worker's settings from its flags (its name checked apart), or why they cannot run.
fn options(a: &WorkerArgs, db: PathBuf) -> Result<WorkerOptions, String> {
    let timing = Timing::DASHBOARD.resolve(a.timing.lease_ms, a.timing.process_ms, None);
    let reliability = a.reliability.reliability(timing.lease_ms)?;
    timing.check_lease_outlives_processing(
        reliability.heartbeats,
        "this worker would lose every lease mid-message",
    )?;
    Ok(WorkerOptions {
        db,
        name: a.name.clone(),
        lease_ms: timing.lease_ms,
        process_ms: timing.process_ms,
        idle_ms: leaselab::setup::MAX_IDLE_MS,
        leasing: !a.outbox.no_leasing,
        messages: a.outbox.messages().unwrap_or(WORKER_SEED_MESSAGES),
        messages_asked: a.outbox.messages().is_some(),
        reliability,
        clock_skew_ms: a.clock_skew_ms,
        local_clock: a.local_clock,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use clap::Parser;
    use leaselab::engine::outbox::RetryPolicy;
    use leaselab::engine::provider::ProviderFaults;
    use leaselab::processes::ProcessSettings;
    use leaselab::setup::Reliability;

    use super::*;
    use crate::cli::args::{MAX_ATTEMPTS, MAX_LEASE_MS, MAX_PROCESS_MS};
    use crate::cli::{Cli, Command};

    /// What the worker's own command line makes of the arguments the fleet renders.
    fn parsed_back(s: &ProcessSettings, name: &str) -> WorkerOptions {
        let argv = std::iter::once(OsString::from("leaselab")).chain(s.worker_args(name));
        let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        let Some(Command::Worker(a)) = cli.command else {
            panic!("not the worker command: {:?}", cli.command);
        };
        let db = a.db.clone().expect("--db is given");
        options(&a, db).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn reliability(heartbeats: bool, heartbeat_ms: Option<i64>, retry: RetryPolicy) -> Reliability {
        Reliability {
            heartbeats,
            heartbeat_ms,
            retry,
            faults: ProviderFaults::default(),
        }
    }

    fn settings_to_try() -> Vec<ProcessSettings> {
        let plain = ProcessSettings {
            db: "class.db".into(),
            lease_ms: Timing::DASHBOARD.lease_ms,
            process_ms: Timing::DASHBOARD.process_ms,
            leasing: true,
            reliability: Reliability::default(),
        };
        let mut faults = plain.clone();
        faults.reliability.faults = ProviderFaults {
            fail_first: BTreeMap::from([("PAY-001".into(), 0), ("PAY-002".into(), 2)]),
            fail_always: BTreeSet::from(["PAY-003".into(), "-odd-key".into()]),
        };
        let retry = |base, cap, attempts| RetryPolicy::new(base, cap, attempts).unwrap();
        vec![
            plain.clone(),
            faults,
            // Leasing off, no heartbeats, a path that starts with `-` and holds `=`, a space
            // and bytes that are not UTF-8.
            ProcessSettings {
                db: OsString::from_vec(b"-odd dir/a=b\xff.db".to_vec()).into(),
                leasing: false,
                reliability: reliability(false, None, retry(0, 0, 1)),
                ..plain.clone()
            },
            // The longest lease, with the longest processing and a heartbeat just inside it.
            ProcessSettings {
                db: "postgres://class:secret@localhost:5432/lab?sslmode=disable".into(),
                lease_ms: MAX_LEASE_MS,
                process_ms: MAX_PROCESS_MS,
                reliability: reliability(true, Some(MAX_LEASE_MS - 1), {
                    retry(MAX_LEASE_MS, MAX_LEASE_MS, MAX_ATTEMPTS)
                }),
                ..plain.clone()
            },
            // The shortest lease, with no processing time and a heartbeat of 1 ms.
            ProcessSettings {
                lease_ms: 2,
                process_ms: 0,
                reliability: reliability(true, Some(1), retry(0, 1, 2)),
                ..plain
            },
        ]
    }

    #[test]
    fn a_workers_rendered_flags_parse_back_to_its_settings() {
        for (i, s) in settings_to_try().iter().enumerate() {
            let name = if i % 2 == 0 {
                "Worker-A"
            } else {
                "Worker-B#12"
            };
            let back = parsed_back(s, name);
            assert_eq!(back.db, s.db, "{s:?}");
            assert_eq!(back.name, name);
            assert_eq!(
                (back.lease_ms, back.process_ms, back.leasing),
                (s.lease_ms, s.process_ms, s.leasing),
                "{s:?}"
            );
            assert_eq!(back.reliability, s.reliability, "{s:?}");
        }
    }
}
