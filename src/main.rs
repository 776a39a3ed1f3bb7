//! The `leaselab` command: the dashboard, headless runs and the scenario list.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use leaselab::engine::provider::ProviderFaults;
use leaselab::engine::store::RetryPolicy;
use leaselab::report::{self, Report};
use leaselab::scenario::{self, RunOptions, Scenario};
use leaselab::setup::{Reliability, Timing};
use leaselab::ui::{self, DashboardOptions};

#[derive(Parser, Debug)]
#[command(
    name = "leaselab",
    version,
    about = "Watch workers compete for a real SQLite outbox, with and without leases.",
    after_help = "With no command, leaselab opens lesson 2 (atomic-claim) paused, with \
                  narration: n steps, b steps back. --scenario NAME (or any of --workers, \
                  --messages, --lease-ms, --process-ms, --no-leasing) opens the free-play \
                  dashboard instead. Press ? there for keys.\n\n\
                  Exit codes: 0 every check passed, 1 a check failed, 2 bad input, 3 the run \
                  failed while running (a worker's database error such as a lock held past \
                  the busy limit or a full disk, a database changed under the run, a stall, \
                  output that could not be written). A report that could not be saved keeps \
                  the run's own code and says so on stderr."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Dashboard: the scenario to open.
    #[arg(long = "scenario", value_name = "NAME", global = true)]
    open_scenario: Option<String>,
    /// Worker threads, each with its own SQLite connection (1-64); `bench` takes a list (1,2,4,8).
    #[arg(long, value_name = "N", global = true, allow_negative_numbers = true, value_parser = parse_workers)]
    workers: Option<WorkerList>,
    /// Payments (and outbox messages) to seed: 1-100000 for `run` and the dashboard, up to
    /// 1000000 for `bench`.
    #[arg(long, value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    messages: Option<u64>,
    /// Lease length in scenario milliseconds (1-3600000).
    #[arg(long = "lease-ms", value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..=3_600_000))]
    lease_ms: Option<i64>,
    /// Scenario milliseconds one message takes to process (0-600000); `run` needs a
    /// --lease-ms above it.
    #[arg(long = "process-ms", value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(0..=600_000))]
    process_ms: Option<i64>,
    /// Scenario clock speed: scenario seconds per wall second (0.05-1000).
    #[arg(long, value_name = "X", global = true, allow_negative_numbers = true, value_parser = parse_speed)]
    speed: Option<f64>,
    /// Keep the database in this file (created, or an earlier leaselab database reused), or
    /// use a PostgreSQL database: postgres://USER@HOST/DB (emptied and reseeded).
    #[arg(long, value_name = "PATH|URL", global = true)]
    db: Option<PathBuf>,
    /// Where `run` saves its reports.
    #[arg(
        long = "report-dir",
        value_name = "DIR",
        global = true,
        default_value = "reports"
    )]
    report_dir: PathBuf,
    /// Soak: the seed of the random fault schedule (printed in the report).
    #[arg(long, value_name = "N", global = true)]
    seed: Option<u64>,
    /// Switch leasing off: workers load every Pending row and process it unguarded.
    #[arg(long = "no-leasing", global = true)]
    no_leasing: bool,
    /// Dashboard: show --db PATH while `leaselab worker` processes started elsewhere use it
    /// (created and seeded when missing, never emptied).
    #[arg(long, conflicts_with = "processes")]
    watch: bool,
    /// Dashboard: start the workers as `leaselab worker` processes on the wall clock; c is
    /// SIGKILL, space SIGSTOP / SIGCONT, r a new process.
    #[arg(long)]
    processes: bool,
    /// A worker processing a message extends its lease every N scenario ms (1 to below the
    /// lease; default a third of the lease).
    #[arg(long = "heartbeat-ms", value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..=3_600_000))]
    heartbeat_ms: Option<i64>,
    /// Workers never extend a lease: a message that outlives it is taken over.
    #[arg(long = "no-heartbeat", global = true, conflicts_with = "heartbeat_ms")]
    no_heartbeat: bool,
    /// Attempts a message gets before it is dead-lettered (at least 1; default 5).
    #[arg(
        long = "max-attempts",
        value_name = "N",
        global = true,
        allow_negative_numbers = true
    )]
    max_attempts: Option<i64>,
    /// Backoff after the first failed attempt, doubled after each further one (default 100).
    #[arg(
        long = "backoff-ms",
        value_name = "N",
        global = true,
        allow_negative_numbers = true
    )]
    backoff_ms: Option<i64>,
    /// The provider fails the first N status checks of KEY (a transient fault), e.g.
    /// PAY-002=2; may be repeated.
    #[arg(long = "fail-first", value_name = "KEY=N", global = true, value_parser = parse_fail_first)]
    fail_first: Vec<(String, u64)>,
    /// The provider fails every status check of KEY (a poison message); may be repeated.
    #[arg(long = "fail-always", value_name = "KEY", global = true)]
    fail_always: Vec<String>,
    /// The longest backoff (default 2000).
    #[arg(
        long = "backoff-cap-ms",
        value_name = "N",
        global = true,
        allow_negative_numbers = true
    )]
    backoff_cap_ms: Option<i64>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario headless: print the report, save it, exit 0 only if every check passes.
    Run {
        /// One of: competing-no-claim, outbox-leasing, lease-expiry, soak.
        scenario: String,
        /// Print the JSON report on stdout instead of the text report.
        #[arg(long)]
        json: bool,
    },
    /// List the scenarios.
    List,
    /// Open a lesson in the dashboard, paused, with narration; --check runs it headless.
    Lesson {
        /// A built-in lesson (see `leaselab lessons`) or the path of a lesson file.
        lesson: String,
        /// Run every step and check every expectation; exit 0 only when all hold.
        #[arg(long)]
        check: bool,
    },
    /// List the built-in lessons.
    Lessons,
    /// One worker as its own process on the real clock, sharing --db with other workers
    /// (processes, on this machine or others); creates and seeds --db when it is missing.
    Worker {
        /// The worker's name, as the table and the events show it (Worker-A, laptop-3, ...).
        #[arg(long, value_name = "NAME")]
        name: String,
    },
    /// Measure claim throughput against the database's own ceiling (see README, Performance).
    Bench {
        /// SQLite's synchronous setting for the bench: full or normal.
        #[arg(long, value_name = "full|normal", value_enum, default_value_t = Sync::Normal)]
        sync: Sync,
        /// Messages claimed per transaction in the batch runs (1-1000).
        #[arg(long, value_name = "K", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1000))]
        batch: u16,
        /// Also compare the per-message cost at 1,000 messages and at this many.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1_000..=10_000_000))]
        scale: Option<u64>,
        /// Print the JSON result on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `--workers 4`, or `--workers 1,2,4,8` for `bench`.
#[derive(Debug, Clone)]
struct WorkerList(Vec<u16>);

/// `4` or `1,2,4,8`: each 1-64.
fn parse_workers(s: &str) -> Result<WorkerList, String> {
    s.split(',')
        .map(|part| {
            let n: u16 = part
                .trim()
                .parse()
                .map_err(|_| format!("'{part}' is not a whole number"))?;
            if (1..=64).contains(&n) {
                Ok(n)
            } else {
                Err(format!("{n} is not in 1..=64"))
            }
        })
        .collect::<Result<Vec<u16>, String>>()
        .map(WorkerList)
}

/// `bench --sync`: SQLite's synchronous setting for the bench's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Sync {
    Full,
    Normal,
}

/// Most messages `run` and the dashboard take: each message costs about 1 KB of ledger and
/// final-state checks, and a million of them would not drain in reasonable time with every
/// commit synced (see README, Ranges).
const MAX_RUN_MESSAGES: u64 = 100_000;

/// Without heartbeats a headless run needs every lease to outlive the processing: a lease
/// that runs out mid-message is taken over by an idle worker and its finalize rejected,
/// again and again.
fn lease_too_short(cli: &Cli) -> Option<String> {
    let Timing {
        lease_ms: lease,
        process_ms: process,
        ..
    } = Timing::HEADLESS.resolve(cli.lease_ms, cli.process_ms, None);
    (cli.no_heartbeat && process > 0 && process >= lease).then(|| {
        format!(
            "--process-ms {process} needs a longer --lease-ms (now {lease}) without heartbeats: a lease that runs \
             out mid-message is taken over and the outbox may never drain"
        )
    })
}

impl Cli {
    /// Heartbeats and retries from the command line, checked against the lease in use.
    fn reliability(&self, lease_ms: i64) -> Result<Reliability, String> {
        let d = RetryPolicy::default();
        let retry = RetryPolicy::new(
            self.backoff_ms.unwrap_or(d.base_ms),
            self.backoff_cap_ms
                .unwrap_or(d.cap_ms.max(self.backoff_ms.unwrap_or(0))),
            self.max_attempts.unwrap_or(d.max_attempts),
        )?;
        let r = Reliability {
            heartbeats: !self.no_heartbeat,
            heartbeat_ms: self.heartbeat_ms,
            retry,
            faults: ProviderFaults {
                fail_first: self.fail_first.iter().cloned().collect(),
                fail_always: self.fail_always.iter().cloned().collect(),
            },
        };
        r.check(lease_ms)
            .map_err(|e| format!("--heartbeat-ms: {e}"))?;
        Ok(r)
    }

    /// `--messages` of `run` and the dashboard.
    fn run_messages(&self) -> Result<Option<u64>, String> {
        match self.messages {
            Some(n) if n > MAX_RUN_MESSAGES => Err(format!(
                "--messages {n} is more than run and the dashboard take (1-{MAX_RUN_MESSAGES}; \
                 bench takes up to 1000000)"
            )),
            m => Ok(m),
        }
    }

    /// The single worker count of `run` and the dashboard.
    fn one_worker_count(&self) -> Result<Option<usize>, String> {
        match self.workers.as_ref().map(|w| w.0.as_slice()) {
            None => Ok(None),
            Some([n]) => Ok(Some(usize::from(*n))),
            Some(_) => Err("--workers takes one number here (a list is for `bench`)".into()),
        }
    }
}

/// `PAY-002=2`: the key and how many of its first status checks fail.
fn parse_fail_first(s: &str) -> Result<(String, u64), String> {
    let (key, n) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not KEY=N (for example PAY-002=2)"))?;
    let n: u64 = n
        .parse()
        .map_err(|_| format!("'{n}' is not a whole number of failures"))?;
    if key.is_empty() {
        return Err(format!("'{s}' names no key"));
    }
    Ok((key.to_string(), n))
}

fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.05..=1000.0).contains(&v) {
        return Err(format!("{v} is outside 0.05-1000"));
    }
    Ok(v)
}

/// Print one line on stderr and return the usage exit code.
fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("leaselab: {msg}");
    ExitCode::from(2)
}

/// Exit code of a run that started and then failed (a database error, a stall, output
/// that could not be written).
const RUNTIME_FAILURE: u8 = 3;

/// Print one line on stderr and return the runtime-failure exit code.
fn runtime_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("leaselab: {msg}");
    ExitCode::from(RUNTIME_FAILURE)
}

/// Standard output for results. A reader that went away (`| head`) ends the output
/// quietly; any other write error is kept and reported once, in one line.
struct Out {
    stdout: std::io::Stdout,
    closed: bool,
    failed: Option<std::io::Error>,
}

impl Out {
    fn new() -> Out {
        Out {
            stdout: std::io::stdout(),
            closed: false,
            failed: None,
        }
    }

    fn print(&mut self, text: &str) {
        use std::io::Write;
        if self.closed || self.failed.is_some() {
            return;
        }
        let mut lock = self.stdout.lock();
        if let Err(e) = lock.write_all(text.as_bytes()).and_then(|()| lock.flush()) {
            self.fail(e);
        }
    }

    fn line(&mut self, text: &str) {
        self.print(&format!("{text}\n"));
    }

    fn fail(&mut self, e: std::io::Error) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            self.closed = true;
        } else {
            self.failed = Some(e);
        }
    }

    /// `code`, unless the output could not be written: then one line and exit 3.
    fn finish(self, code: ExitCode) -> ExitCode {
        match self.failed {
            Some(e) => runtime_error(format!("cannot write to standard output: {e}")),
            None => code,
        }
    }
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
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // clap explains over several lines; keep its first paragraph, on one line.
            let text = e.render().to_string();
            let first = text
                .trim_start()
                .split("\n\n")
                .next()
                .unwrap_or("invalid arguments")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let first = first.trim_start_matches("error: ");
            return usage_error(format!("{first} (see leaselab --help)"));
        }
    };
    if cli.command.is_some() && (cli.watch || cli.processes) {
        let flag = if cli.watch { "--watch" } else { "--processes" };
        return usage_error(format!("{flag} is for the dashboard, not for a command"));
    }
    match &cli.command {
        Some(Command::List) => {
            let mut out = Out::new();
            for s in Scenario::ALL {
                out.line(&format!("{:<20} {}", s.name(), s.summary()));
            }
            out.finish(ExitCode::SUCCESS)
        }
        Some(Command::Run { scenario, json }) => run(&cli, scenario, *json),
        Some(Command::Lessons) => {
            let mut out = Out::new();
            for (i, b) in leaselab::lesson::BUILT_INS.iter().enumerate() {
                let l = leaselab::lesson::built_in(b.name).expect("built-in lessons parse");
                out.line(&format!("{} {:<14} {}", i + 1, b.name, l.title));
            }
            out.finish(ExitCode::SUCCESS)
        }
        Some(Command::Lesson { lesson, check }) => lesson_command(&cli, lesson, *check),
        Some(Command::Worker { name }) => worker(&cli, name),
        Some(Command::Bench {
            sync,
            batch,
            scale,
            json,
        }) => bench(&cli, *sync, *batch, *scale, *json),
        None if cli.watch || cli.processes => dashboard(&cli),
        // No command: the default lesson, unless the outbox is set up on the command line.
        None if lesson_setup_flags(&cli).is_none() => {
            lesson_command(&cli, leaselab::lesson::DEFAULT_LESSON, false)
        }
        None => dashboard(&cli),
    }
}

fn run(cli: &Cli, name: &str, json: bool) -> ExitCode {
    let scenario = match scenario_named(name) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if cli.open_scenario.is_some() {
        return usage_error(
            "--scenario is for the dashboard; `run` takes the scenario as its argument",
        );
    }
    let messages = match cli.run_messages() {
        Ok(m) => m,
        Err(e) => return usage_error(e),
    };
    if let Some(e) = lease_too_short(cli) {
        return usage_error(e);
    }
    let lease_ms = Timing::HEADLESS.resolve(cli.lease_ms, None, None).lease_ms;
    let reliability = match cli.reliability(lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    // Find out before the run whether the report can be saved, so no run is wasted.
    if let Err(e) = report::check_writable(&cli.report_dir) {
        return usage_error(e);
    }
    let workers = match cli.one_worker_count() {
        Ok(w) => w,
        Err(e) => return usage_error(e),
    };
    // From here on a signal stops the run cleanly: workers joined, temporary database removed.
    let interrupt = match leaselab::signals::watch() {
        Ok(rx) => Some(rx),
        Err(e) => return usage_error(e),
    };
    let timing = Timing::HEADLESS.resolve(cli.lease_ms, cli.process_ms, cli.speed);
    let opts = RunOptions {
        workers,
        seed: cli.seed,
        messages,
        lease_ms: timing.lease_ms,
        process_ms: timing.process_ms,
        speed: timing.speed,
        db: cli.db.clone(),
        no_leasing: cli.no_leasing,
        interrupt,
        reliability,
        ..RunOptions::default()
    };
    let outcome = match scenario::run(scenario, &opts) {
        Ok(o) => o,
        Err(scenario::RunError::Interrupted(signo)) => {
            return interrupted(signo, "the run stopped before its checks; no report saved")
        }
        Err(e) if e.is_runtime() => return runtime_error(e),
        Err(e) => return usage_error(e),
    };
    print_and_save(&Report::build(&outcome), &cli.report_dir, json)
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
        Err(e) => eprintln!("leaselab: the report was printed but not saved: {e}"),
    }
    out.finish(code)
}

/// Options that make no sense for workers that are processes.
fn external_refusal(cli: &Cli) -> Option<String> {
    let mode = if cli.watch { "--watch" } else { "--processes" };
    let refused = [
        (
            cli.speed.is_some(),
            "--speed",
            "the workers run on the wall clock",
        ),
        (
            cli.open_scenario.is_some(),
            "--scenario",
            "the workers run freely",
        ),
        (cli.seed.is_some(), "--seed", "there is no fault schedule"),
        (
            cli.watch && cli.workers.is_some(),
            "--workers",
            "the workers are started elsewhere",
        ),
        (
            cli.watch && cli.no_leasing,
            "--no-leasing",
            "each worker process sets its own leasing",
        ),
    ];
    refused
        .iter()
        .find(|(set, _, _)| *set)
        .map(|(_, flag, why)| format!("{flag} does not apply to {mode}: {why}"))
}

fn dashboard(cli: &Cli) -> ExitCode {
    if cli.watch || cli.processes {
        if let Some(e) = external_refusal(cli) {
            return usage_error(e);
        }
        if cli.watch && cli.db.is_none() {
            return usage_error("--watch needs --db PATH: the database the workers use");
        }
        let t = Timing::DASHBOARD.resolve(cli.lease_ms, cli.process_ms, None);
        if cli.processes && t.process_ms >= t.lease_ms && cli.no_heartbeat {
            return usage_error(format!(
                "--process-ms {} needs a longer --lease-ms (now {}) without heartbeats: every worker process would lose its lease mid-message",
                t.process_ms, t.lease_ms
            ));
        }
    }
    let scenario = match cli.open_scenario.as_deref().map(scenario_named).transpose() {
        Ok(s) => s.unwrap_or(Scenario::OutboxLeasing),
        Err(e) => return usage_error(e),
    };
    let workers = match cli.one_worker_count() {
        Ok(w) => w.unwrap_or(scenario.default_workers()),
        Err(e) => return usage_error(e),
    };
    let messages = match cli.run_messages() {
        Ok(m) => m,
        Err(e) => return usage_error(e),
    };
    let lease_ms = Timing::DASHBOARD.resolve(cli.lease_ms, None, None).lease_ms;
    let reliability = match cli.reliability(lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let opts = DashboardOptions {
        reliability,
        scenario,
        workers,
        messages,
        lease_ms: cli.lease_ms,
        process_ms: cli.process_ms,
        speed: cli.speed,
        db: cli.db.clone(),
        no_leasing: cli.no_leasing,
        watch: cli.watch,
        processes: cli.processes,
    };
    match ui::run(opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Err(e) => usage_error(e),
    }
}

/// Options a lesson sets itself in its `[setup]`; refused on the command line.
fn lesson_setup_flags(cli: &Cli) -> Option<&'static str> {
    [
        (cli.workers.is_some(), "--workers"),
        (cli.messages.is_some(), "--messages"),
        (cli.lease_ms.is_some(), "--lease-ms"),
        (cli.process_ms.is_some(), "--process-ms"),
        (cli.no_leasing, "--no-leasing"),
        (cli.heartbeat_ms.is_some(), "--heartbeat-ms"),
        (cli.no_heartbeat, "--no-heartbeat"),
        (cli.max_attempts.is_some(), "--max-attempts"),
        (cli.backoff_ms.is_some(), "--backoff-ms"),
        (cli.backoff_cap_ms.is_some(), "--backoff-cap-ms"),
        (!cli.fail_first.is_empty(), "--fail-first"),
        (!cli.fail_always.is_empty(), "--fail-always"),
        (cli.open_scenario.is_some(), "--scenario"),
    ]
    .into_iter()
    .find(|(set, _)| *set)
    .map(|(_, flag)| flag)
}

fn lesson_command(cli: &Cli, name: &str, check: bool) -> ExitCode {
    if let Some(flag) = lesson_setup_flags(cli) {
        return usage_error(format!(
            "{flag} does not apply to a lesson: its [setup] decides the outbox"
        ));
    }
    let lesson = match leaselab::lesson::load(name) {
        Ok(l) => l,
        // A bad lesson file is reported as FILE:LINE: what, alone on its line.
        Err(e) if std::path::Path::new(name).exists() => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
        Err(e) => return usage_error(e),
    };
    if !check {
        return lesson_dashboard(cli, lesson);
    }
    let total = lesson.steps.len();
    let mut out = Out::new();
    out.line(&format!(
        "lesson {} ({}): {}",
        lesson.name, lesson.path, lesson.title
    ));
    let reports = match leaselab::lesson::runner::check_lesson_in(lesson, cli.db.clone()) {
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

fn lesson_dashboard(cli: &Cli, lesson: leaselab::lesson::Lesson) -> ExitCode {
    let opts = DashboardOptions {
        speed: cli.speed,
        db: cli.db.clone(),
        ..DashboardOptions::default()
    };
    match ui::run_lesson(lesson, opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Err(e) => usage_error(e),
    }
}

/// One line saying what a signal stopped, and the shell's exit code for it (128 + signo).
fn interrupted(signo: i32, what: &str) -> ExitCode {
    eprintln!(
        "leaselab: interrupted by {}; {what}",
        leaselab::signals::name(signo)
    );
    ExitCode::from(leaselab::signals::exit_code(signo))
}

fn bench(cli: &Cli, sync: Sync, batch: u16, scale: Option<u64>, json: bool) -> ExitCode {
    use leaselab::bench::{self, BenchOptions};
    use leaselab::engine::backend::Db;
    use leaselab::engine::store::Durability;
    let postgres =
        match cli.db.as_deref().map(Db::parse) {
            None => None,
            Some(Db::Postgres(url)) => Some(url),
            Some(Db::Sqlite(_)) => return usage_error(
                "bench measures SQLite on temporary files; its --db takes only a postgres:// URL \
                 (measured beside them)"
                    .to_string(),
            ),
        };
    let opts = BenchOptions {
        messages: cli.messages.unwrap_or(100_000),
        workers: cli
            .workers
            .clone()
            .map_or_else(|| vec![1, 2, 4, 8], |w| w.0)
            .into_iter()
            .map(usize::from)
            .collect(),
        durability: match sync {
            Sync::Full => Durability::Full,
            Sync::Normal => Durability::Normal,
        },
        batch: usize::from(batch),
        scale_to: scale,
        postgres,
    };
    let steps = leaselab::progress::Steps::new();
    let report = bench::run(&opts, |step| steps.step(step));
    // The spinner goes before the report is printed.
    drop(steps);
    let report = match report {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let mut out = Out::new();
    if json {
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

fn worker(cli: &Cli, name: &str) -> ExitCode {
    use leaselab::worker_cmd::{self, WorkerOptions};
    let refused = [
        (cli.workers.is_some(), "--workers"),
        (cli.speed.is_some(), "--speed"),
        (cli.open_scenario.is_some(), "--scenario"),
        (cli.seed.is_some(), "--seed"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(set, _)| *set) {
        return usage_error(format!(
            "{flag} does not apply to `worker`: it is one worker on the real clock"
        ));
    }
    let Some(db) = cli.db.clone() else {
        return usage_error("`worker` needs --db PATH|URL: the database it shares with the others");
    };
    if let Err(e) = worker_cmd::check_name(name) {
        return usage_error(e);
    }
    let messages = match cli.run_messages() {
        Ok(m) => m.unwrap_or(WORKER_SEED_MESSAGES),
        Err(e) => return usage_error(e),
    };
    let timing = Timing::DASHBOARD.resolve(cli.lease_ms, cli.process_ms, None);
    let reliability = match cli.reliability(timing.lease_ms) {
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
        leasing: !cli.no_leasing,
        messages,
        reliability,
    };
    let mut out = Out::new();
    match worker_cmd::run(&opts, &interrupts, |l| out.line(l)) {
        Ok(worker_cmd::Ended::Interrupted(signo)) => {
            let what = format!("{name} stopped between two actions");
            out.finish(interrupted(signo, &what))
        }
        Err(worker_cmd::Failure::BadInput(e)) => usage_error(e),
        Err(worker_cmd::Failure::Runtime(e)) => runtime_error(e),
    }
}
