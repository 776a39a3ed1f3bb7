//! `leaselab run`: a scenario headless, its report printed and saved.

use std::process::ExitCode;

use leaselab::scenario::report::Report;
use leaselab::scenario::save;
use leaselab::scenario::{self, RunOptions, Scenario};
use leaselab::setup::Timing;

use super::interrupted;
use crate::cli::output::warn;
use crate::cli::{runtime_error, usage_error, Out, RunArgs};

pub(crate) fn scenario_named(name: &str) -> Result<Scenario, String> {
    Scenario::from_name(name).ok_or_else(|| {
        format!(
            "unknown scenario '{name}'; known scenarios: {}",
            Scenario::names()
        )
    })
}

pub(crate) fn run(a: &RunArgs) -> ExitCode {
    let scenario = match scenario_named(&a.scenario) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    // Resolved once: every figure below comes from here.
    let timing = Timing::HEADLESS.resolve(a.timing.lease_ms, a.timing.process_ms, a.threads.speed);
    let outlives = timing.check_lease_outlives_processing(
        !a.reliability.no_heartbeat,
        "a lease that runs out mid-message is taken over and the outbox may never drain",
    );
    if let Err(e) = outlives {
        return usage_error(e);
    }
    let reliability = match a.reliability.reliability(timing.lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    // Find out before the run whether the report can be saved, so no run is wasted.
    if let Err(e) = save::check_writable(&a.report_dir) {
        return usage_error(e);
    }
    // From here on a signal stops the run cleanly: workers joined, temporary database removed.
    let interrupt = match leaselab::signals::watch() {
        Ok(rx) => Some(rx),
        Err(e) => return usage_error(e),
    };
    let opts = RunOptions {
        workers: a.threads.workers(),
        seed: a.seed.map(|n| n as u64),
        messages: a.outbox.messages(),
        lease_ms: timing.lease_ms,
        process_ms: timing.process_ms,
        speed: timing.speed,
        db: a.db.clone(),
        no_leasing: a.outbox.no_leasing,
        interrupt,
        reliability,
        ..RunOptions::default()
    };
    let outcome = match scenario::run(scenario, &opts) {
        Ok(o) => o,
        Err(scenario::RunError::Interrupted(signo)) => {
            return interrupted(signo, "the run stopped before its checks; no report saved")
        }
        // A signal ended a wait for a locked database: the signal is what happened.
        Err(_) if leaselab::signals::received().is_some() => {
            let signo = leaselab::signals::received().unwrap_or(2);
            return interrupted(signo, "the run stopped before its checks; no report saved");
        }
        Err(e) if e.is_runtime() => return runtime_error(e),
        Err(e) => return usage_error(e),
    };
    print_and_save(&Report::build(&outcome), &a.report_dir, a.json)
}

/// Print a run's report, then save it: exit 0 when every check passed, 1 when one failed.
pub(crate) fn print_and_save(
    report: &Report,
    report_dir: &std::path::Path,
    json: bool,
) -> ExitCode {
    let code = if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    // Printed before it is saved: a report folder that fails now must not cost the run.
    let mut out = Out::new();
    if json {
        out.line(&report.json_pretty());
    } else {
        out.print(&report.text);
    }
    match report.save(report_dir) {
        Ok((txt, js)) if !json => {
            out.line(&format!("Report saved to {}", txt.display()));
            out.line(&format!("JSON saved to {}", js.display()));
        }
        Ok(_) => {}
        // The verdict stands and was printed; only the copy on disk is missing.
        Err(e) => {
            if !warn(format!("the report was printed but not saved: {e}")) {
                return out.finish(ExitCode::from(crate::cli::output::RUNTIME_FAILURE));
            }
        }
    }
    out.finish(code)
}
