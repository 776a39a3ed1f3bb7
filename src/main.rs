//! The `leaselab` command: the dashboard, headless runs and the scenario list. The
//! command line itself is in `cli/`.

mod cli;

use std::process::ExitCode;

use leaselab::report::{self, Report};
use leaselab::scenario::{self, RunOptions, Scenario};
use leaselab::setup::Timing;
use leaselab::ui::{self, DashboardOptions};

use cli::output::{line_and_exit, warn, USAGE};
use cli::{
    runtime_error, usage_error, BenchArgs, Command, DashboardArgs, LessonArgs, Out, RunArgs, Sync,
    WorkerArgs,
};

/// Without heartbeats a headless run needs every lease to outlive the processing: a lease
/// that runs out mid-message is taken over by an idle worker and its finalize rejected,
/// again and again.
fn lease_too_short(a: &RunArgs) -> Option<String> {
    let Timing {
        lease_ms: lease,
        process_ms: process,
        ..
    } = Timing::HEADLESS.resolve(a.timing.lease_ms, a.timing.process_ms, None);
    (a.reliability.no_heartbeat && process > 0 && process >= lease).then(|| {
        format!(
            "--process-ms {process} needs a longer --lease-ms (now {lease}) without heartbeats: a lease that runs \
             out mid-message is taken over and the outbox may never drain"
        )
    })
}

fn scenario_named(name: &str) -> Result<Scenario, String> {
    Scenario::from_name(name).ok_or_else(|| {
        format!(
            "unknown scenario '{name}'; known scenarios: {}",
            Scenario::names()
        )
    })
}

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(c) => c,
        Err(code) => return code,
    };
    match &cli.command {
        Some(Command::List) => {
            let mut out = Out::new();
            for s in Scenario::ALL {
                out.line(&format!("{:<20} {}", s.name(), s.summary()));
            }
            out.finish(ExitCode::SUCCESS)
        }
        Some(Command::Run(a)) => run(a),
        Some(Command::Lessons(a)) if a.reference => {
            let mut out = Out::new();
            out.print(&leaselab::lesson::reference::reference());
            out.finish(ExitCode::SUCCESS)
        }
        Some(Command::Lessons(_)) => {
            let mut out = Out::new();
            for (i, b) in leaselab::lesson::BUILT_INS.iter().enumerate() {
                let l = leaselab::lesson::built_in(b.name).expect("built-in lessons parse");
                out.line(&format!("{} {:<14} {}", i + 1, b.name, l.title));
            }
            out.finish(ExitCode::SUCCESS)
        }
        Some(Command::Lesson(a)) => lesson_command(a),
        Some(Command::Worker(a)) => worker(a),
        Some(Command::Bench(a)) => bench(a),
        // No command: the default lesson, unless the outbox is set up on the command line.
        None if !cli.dashboard.sets_up_an_outbox() => lesson_command(&LessonArgs {
            lesson: leaselab::lesson::DEFAULT_LESSON.to_string(),
            check: false,
            print: false,
            db: cli.dashboard.db.clone(),
            speed: cli.dashboard.threads.speed,
        }),
        None => dashboard(&cli.dashboard),
    }
}

fn run(a: &RunArgs) -> ExitCode {
    let scenario = match scenario_named(&a.scenario) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if let Some(e) = lease_too_short(a) {
        return usage_error(e);
    }
    let lease_ms = Timing::HEADLESS
        .resolve(a.timing.lease_ms, None, None)
        .lease_ms;
    let reliability = match a.reliability.reliability(lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    // Find out before the run whether the report can be saved, so no run is wasted.
    if let Err(e) = report::check_writable(&a.report_dir) {
        return usage_error(e);
    }
    // From here on a signal stops the run cleanly: workers joined, temporary database removed.
    let interrupt = match leaselab::signals::watch() {
        Ok(rx) => Some(rx),
        Err(e) => return usage_error(e),
    };
    let timing = Timing::HEADLESS.resolve(a.timing.lease_ms, a.timing.process_ms, a.threads.speed);
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
fn print_and_save(report: &Report, report_dir: &std::path::Path, json: bool) -> ExitCode {
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
                return out.finish(ExitCode::from(cli::output::RUNTIME_FAILURE));
            }
        }
    }
    out.finish(code)
}

fn dashboard(d: &DashboardArgs) -> ExitCode {
    if d.watch && d.db.is_none() {
        return usage_error("--watch needs --db PATH: the database the workers use");
    }
    let t = Timing::DASHBOARD.resolve(d.timing.lease_ms, d.timing.process_ms, None);
    if d.processes && t.process_ms >= t.lease_ms && d.reliability.no_heartbeat {
        return usage_error(format!(
            "--process-ms {} needs a longer --lease-ms (now {}) without heartbeats: every worker process would lose its lease mid-message",
            t.process_ms, t.lease_ms
        ));
    }
    let scenario = match d.open_scenario.as_deref().map(scenario_named).transpose() {
        Ok(s) => s.unwrap_or(Scenario::OutboxLeasing),
        Err(e) => return usage_error(e),
    };
    let reliability = match d.reliability.reliability(t.lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let opts = DashboardOptions {
        reliability,
        scenario,
        workers: d.threads.workers().unwrap_or(scenario.default_workers()),
        messages: d.outbox.messages(),
        lease_ms: d.timing.lease_ms,
        process_ms: d.timing.process_ms,
        speed: d.threads.speed,
        db: d.db.clone(),
        no_leasing: d.outbox.no_leasing,
        watch: d.watch,
        processes: d.processes,
    };
    match ui::run(opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Ok(ui::Ended::Failed(e)) => runtime_error(e),
        Err(e) => usage_error(e),
    }
}

fn lesson_command(a: &LessonArgs) -> ExitCode {
    if a.print {
        let Some(text) = leaselab::lesson::built_in_text(&a.lesson) else {
            return usage_error(format!(
                "--print writes a built-in lesson; '{}' is not one (see leaselab lessons)",
                a.lesson
            ));
        };
        let mut out = Out::new();
        out.print(text);
        return out.finish(ExitCode::SUCCESS);
    }
    let lesson = match leaselab::lesson::load(&a.lesson) {
        Ok(l) => l,
        // A bad lesson file is reported as FILE:LINE: what, alone on its line.
        Err(e) if std::path::Path::new(&a.lesson).exists() => return line_and_exit(&e, USAGE),
        Err(e) => return usage_error(e),
    };
    if !a.check {
        return lesson_dashboard(a, lesson);
    }
    let total = lesson.steps.len();
    let mut out = Out::new();
    out.line(&format!(
        "lesson {} ({}): {}",
        lesson.name,
        leaselab::lesson::source(&lesson),
        lesson.title
    ));
    let reports = match leaselab::lesson::runner::check_lesson_in(lesson, a.db.clone()) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    for r in &reports {
        out.line(&r.line(total));
    }
    let passed = reports.iter().filter(|r| r.passed()).count();
    out.line(&format!("{passed} of {total} steps passed"));
    out.finish(if passed == total {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn lesson_dashboard(a: &LessonArgs, lesson: leaselab::lesson::Lesson) -> ExitCode {
    let opts = DashboardOptions {
        speed: a.speed,
        db: a.db.clone(),
        ..DashboardOptions::default()
    };
    match ui::run_lesson(lesson, opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Ok(ui::Ended::Failed(e)) => runtime_error(e),
        Err(e) => usage_error(e),
    }
}

/// One line saying what a signal stopped, and the shell's exit code for it (128 + signo).
fn interrupted(signo: i32, what: &str) -> ExitCode {
    let line = format!(
        "leaselab: interrupted by {}; {what}",
        leaselab::signals::name(signo)
    );
    line_and_exit(&line, leaselab::signals::exit_code(signo))
}

fn bench(a: &BenchArgs) -> ExitCode {
    use leaselab::bench::{self, BenchOptions};
    use leaselab::engine::backend::Db;
    use leaselab::engine::store::Durability;
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
        postgres,
    };
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
        Err(e) => return usage_error(e),
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

/// Payments a worker seeds when it creates the database (the article's six).
const WORKER_SEED_MESSAGES: u64 = 6;

fn worker(a: &WorkerArgs) -> ExitCode {
    use leaselab::worker_cmd::{self, WorkerOptions};
    let name = a.name.as_str();
    let Some(db) = a.db.clone() else {
        return usage_error("`worker` needs --db PATH|URL: the database it shares with the others");
    };
    if let Err(e) = worker_cmd::check_name(name) {
        return usage_error(e);
    }
    let messages = a.outbox.messages().unwrap_or(WORKER_SEED_MESSAGES);
    let timing = Timing::DASHBOARD.resolve(a.timing.lease_ms, a.timing.process_ms, None);
    let reliability = match a.reliability.reliability(timing.lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    if timing.process_ms >= timing.lease_ms && !reliability.heartbeats {
        return usage_error(format!(
            "--process-ms {} needs a longer --lease-ms (now {}) without heartbeats: this worker would lose every lease mid-message",
            timing.process_ms, timing.lease_ms
        ));
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
    match worker_cmd::run(&opts, &interrupts, |l| said(&mut out, l)) {
        // A closed pipe ends it quietly; a failed write (a full disk) says so, exit 3.
        Ok(worker_cmd::Ended::OutputLost) => out.finish(ExitCode::SUCCESS),
        Ok(worker_cmd::Ended::Interrupted(signo)) => {
            let what = format!("{name} stopped between two actions");
            out.finish(interrupted(signo, &what))
        }
        Err(worker_cmd::Failure::BadInput(e)) => usage_error(e),
        Err(worker_cmd::Failure::Runtime(e)) => runtime_error(e),
    }
}
