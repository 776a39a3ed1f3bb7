//! The `leaselab` command: the dashboard, headless runs and the scenario list.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use leaselab::report::{self, Report};
use leaselab::scenario::{self, RunError, RunOptions, Scenario};
use leaselab::ui::{self, DashboardOptions};

#[derive(Parser, Debug)]
#[command(
    name = "leaselab",
    version,
    about = "Watch workers compete for a real SQLite outbox, with and without leases.",
    after_help = "With no command, leaselab opens the live dashboard on the article's setup \
                  (2 workers, 6 payments, leasing on). Press ? there for keys."
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
    /// Payments (and outbox messages) to seed (1-1000000).
    #[arg(long, value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    messages: Option<u64>,
    /// Lease length in scenario milliseconds (1-3600000).
    #[arg(long = "lease-ms", value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..=3_600_000))]
    lease_ms: Option<i64>,
    /// Scenario milliseconds one message takes to process (0-600000).
    #[arg(long = "process-ms", value_name = "N", global = true, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(0..=600_000))]
    process_ms: Option<i64>,
    /// Scenario clock speed: scenario seconds per wall second (0.05-1000).
    #[arg(long, value_name = "X", global = true, allow_negative_numbers = true, value_parser = parse_speed)]
    speed: Option<f64>,
    /// Keep the database in this file (created, or an earlier leaselab database reused).
    #[arg(long, value_name = "PATH", global = true)]
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
    /// Measure claim throughput against the database's own ceiling (see README, Performance).
    Bench {
        /// SQLite's synchronous setting for the bench: full or normal.
        #[arg(long, value_name = "full|normal", default_value = "normal", value_parser = ["full", "normal"])]
        sync: String,
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

impl Cli {
    /// The single worker count of `run` and the dashboard.
    fn one_worker_count(&self) -> Result<Option<usize>, String> {
        match self.workers.as_ref().map(|w| w.0.as_slice()) {
            None => Ok(None),
            Some([n]) => Ok(Some(usize::from(*n))),
            Some(_) => Err("--workers takes one number here (a list is for `bench`)".into()),
        }
    }
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
    match &cli.command {
        Some(Command::List) => {
            for s in Scenario::ALL {
                println!("{:<20} {}", s.name(), s.summary());
            }
            ExitCode::SUCCESS
        }
        Some(Command::Run { scenario, json }) => run(&cli, scenario, *json),
        Some(Command::Bench {
            sync,
            batch,
            scale,
            json,
        }) => bench(&cli, sync, *batch, *scale, *json),
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
    let defaults = RunOptions::default();
    let opts = RunOptions {
        workers,
        seed: cli.seed,
        messages: cli.messages,
        lease_ms: cli.lease_ms.unwrap_or(defaults.lease_ms),
        process_ms: cli.process_ms.unwrap_or(defaults.process_ms),
        speed: cli.speed.unwrap_or(defaults.speed),
        db: cli.db.clone(),
        no_leasing: cli.no_leasing,
        interrupt,
        ..defaults
    };
    let outcome = match scenario::run(scenario, &opts) {
        Ok(o) => o,
        Err(RunError::Usage(m)) => return usage_error(m),
        Err(RunError::Interrupted(signo)) => {
            return interrupted(signo, "the run stopped before its checks; no report saved")
        }
        Err(e) => return usage_error(e),
    };
    let report = Report::build(&outcome);
    let saved = match report.save(&cli.report_dir) {
        Ok(paths) => paths,
        Err(e) => return usage_error(e),
    };
    if json {
        println!("{}", report.json_pretty());
    } else {
        print!("{}", report.text);
        println!("Report saved to {}", saved.0.display());
        println!("JSON saved to {}", saved.1.display());
    }
    if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn dashboard(cli: &Cli) -> ExitCode {
    let scenario = match cli.open_scenario.as_deref().map(scenario_named).transpose() {
        Ok(s) => s.unwrap_or(Scenario::OutboxLeasing),
        Err(e) => return usage_error(e),
    };
    let workers = match cli.one_worker_count() {
        Ok(w) => w.unwrap_or(scenario.default_workers()),
        Err(e) => return usage_error(e),
    };
    let opts = DashboardOptions {
        scenario,
        workers,
        messages: cli.messages,
        lease_ms: cli.lease_ms,
        process_ms: cli.process_ms,
        speed: cli.speed,
        db: cli.db.clone(),
        no_leasing: cli.no_leasing,
    };
    match ui::run(opts) {
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

fn bench(cli: &Cli, sync: &str, batch: u16, scale: Option<u64>, json: bool) -> ExitCode {
    use leaselab::bench::{self, BenchOptions};
    use leaselab::engine::store::Durability;
    let opts = BenchOptions {
        messages: cli.messages.unwrap_or(100_000),
        workers: cli
            .workers
            .clone()
            .map_or_else(|| vec![1, 2, 4, 8], |w| w.0)
            .into_iter()
            .map(usize::from)
            .collect(),
        durability: if sync == "full" {
            Durability::Full
        } else {
            Durability::Normal
        },
        batch: usize::from(batch),
        scale_to: scale,
    };
    let report = match bench::run(&opts, |step| eprintln!("bench: {step}...")) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", report.text());
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
