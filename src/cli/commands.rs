//! Each command's own arguments: a command takes and lists only the flags it acts on.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use leaselab::processes::flags;

use super::args::{OutboxArgs, ReliabilityArgs, ThreadArgs, TimingArgs};
use super::{names, numbers};

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a scenario headless: print the report, save it, exit 0 only if every check passes.
    Run(RunArgs),
    /// List the scenarios.
    List,
    /// Open a lesson in the dashboard, paused, with narration; --check runs it headless.
    Lesson(LessonArgs),
    /// List the built-in lessons; --reference prints the lesson file reference.
    Lessons(LessonsArgs),
    /// List the built-in exercises; --reference prints the exercise file reference.
    Exercises(ExercisesArgs),
    /// An exercise: print its starter file (--start) or its model answer (--solution), or
    /// check a student's file with the exercise's schedule (--check FILE).
    Exercise(ExerciseArgs),
    /// One worker as its own process on the real clock, sharing --db with other workers
    /// (processes, on this machine or others); creates and seeds --db when it is missing.
    #[command(
        name = flags::WORKER,
        // A worker runs on the wall clock, not the scenario clock `run` and the dashboard use.
        mut_arg("lease_ms", |a| a.help(WORKER_LEASE_MS)),
        mut_arg("process_ms", |a| a.help(WORKER_PROCESS_MS)),
        mut_arg("heartbeat_ms", |a| a.help(WORKER_HEARTBEAT_MS)),
    )]
    Worker(WorkerArgs),
    /// A class on one PostgreSQL server: rounds of payments, the teacher's hold and go, the
    /// scoreboard, and the command students type to join (see docs/class.md).
    #[command(subcommand)]
    Class(ClassCommand),
    /// Measure claim throughput against the database's own ceiling (see docs/performance.md).
    Bench(BenchArgs),
    /// Open the dashboard on a recorded run (a --db workers used), read from its events:
    /// ←/→ one event, [/] the previous or next mark, Home/End; it shows only what the rows
    /// recorded, refuses a row no leaselab writes, and writes nothing to disk.
    Replay(ReplayArgs),
    /// Run every schedule of a small world's worker steps and faults on real SQLite, and
    /// show a shortest one that breaks each check.
    Explore(ExploreArgs),
    /// Print a completion script for a shell: commands, flags, and the built-in names
    /// (see `leaselab completions --help` for where it goes).
    ///
    /// For bash, on a fresh account too (bash-completion loads it in the next shell):
    ///
    /// mkdir -p ~/.local/share/bash-completion/completions && leaselab completions bash > ~/.local/share/bash-completion/completions/leaselab
    Completions(CompletionsArgs),
    /// Print the manual page (roff): leaselab man > leaselab.1; man ./leaselab.1
    Man,
}

/// `worker --lease-ms`: in the worker's own words, on the wall clock.
const WORKER_LEASE_MS: &str = "Lease length in milliseconds of the wall clock (1-3600000)";
/// `worker --process-ms`.
const WORKER_PROCESS_MS: &str = "Milliseconds of the wall clock one message takes to process \
     (0-600000); without heartbeats it must be shorter than --lease-ms";
/// `worker --heartbeat-ms`.
const WORKER_HEARTBEAT_MS: &str = "The worker extends the lease of the message it processes \
     every N ms of the wall clock (1 to below the lease; default a third of the lease)";

/// `leaselab replay DB`.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// The database the run used: a SQLite file, or postgres://USER@HOST/DB.
    #[arg(value_name = "PATH|URL", value_hint = clap::ValueHint::AnyPath)]
    pub db: PathBuf,
}

/// `leaselab explore`.
#[derive(Args, Debug, Clone)]
pub struct ExploreArgs {
    /// Workers in the world (1-3).
    #[arg(long, value_name = "W", default_value_t = 2, allow_negative_numbers = true, value_parser = numbers::whole::<1, 3>)]
    pub workers: i64,
    /// Messages in the outbox (1-3).
    #[arg(long, value_name = "M", default_value_t = 2, allow_negative_numbers = true, value_parser = numbers::whole::<1, 3>)]
    pub messages: i64,
    /// How the outbox is guarded.
    #[arg(long, value_enum, default_value_t = ExploreMode::FencingToken)]
    pub mode: ExploreMode,
    /// The provider honours the payment's idempotency key.
    #[arg(long)]
    pub idempotent: bool,
    /// Faults a scheduler may choose at any point: crash, jump, pause (comma-separated, each
    /// once), or none alone.
    #[arg(long, value_name = "LIST", default_value = "crash,jump,pause", value_parser = numbers::faults)]
    pub faults: leaselab::explore::Faults,
    /// The longest schedule explored, in steps (1-100; 12, or 60 with --sql).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, 100>)]
    pub max_depth: Option<i64>,
    /// Stop after this many distinct states (1-5000000); the report then says it was cut.
    #[arg(long, value_name = "N", default_value_t = 300_000, allow_negative_numbers = true, value_parser = numbers::whole::<1, 5_000_000>)]
    pub max_states: i64,
    /// Stop when the search holds more than this many MiB of memory (64-1048576); the
    /// report then says it was cut.
    #[arg(long, value_name = "MIB", default_value_t = 2_048, allow_negative_numbers = true, value_parser = numbers::whole::<64, 1_048_576>)]
    pub max_memory: i64,
    /// Stop after this many seconds (1-86400); the report then says it was cut.
    #[arg(long, value_name = "S", default_value_t = 600, allow_negative_numbers = true, value_parser = numbers::whole::<1, 86_400>)]
    pub max_seconds: i64,
    /// With --sql: the most times one message's lease may run out in a schedule (1-5); the
    /// verdict names the bound.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = numbers::whole::<1, 5>)]
    pub max_expiries: i64,
    /// With --sql: the most crashes and stalls, together, in a schedule (0-5).
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = numbers::whole::<0, 5>)]
    pub max_faults: i64,
    /// With --sql: the most heartbeats in a schedule (0-5).
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = numbers::whole::<0, 5>)]
    pub max_beats: i64,
    /// Workers holding a lease may also extend it, a heartbeat at a time.
    #[arg(long)]
    pub heartbeats: bool,
    /// Keep every state, not one for each set of states equal up to renaming the workers:
    /// the same checks break, after as many steps, with more states kept. (A student's
    /// statements, --sql, are never reduced.)
    #[arg(long)]
    pub no_reduction: bool,
    /// Grade a student's exercise file: the workers run its claim, finalize and heartbeat
    /// statements on real SQLite, a statement outside a transaction a step of its own.
    /// Exit 0 when no schedule breaks a check, 1 when one does, 2 for a file that cannot
    /// be run.
    #[arg(long, value_name = "FILE", conflicts_with = "mode")]
    pub sql: Option<PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the shortest counterexample found as a lesson file (`leaselab lesson FILE`);
    /// a file that exists (or a symlink) is refused before the search, unless --force.
    #[arg(long, value_name = "FILE")]
    pub save_lesson: Option<PathBuf>,
    /// Let --save-lesson replace a file that exists (through a symlink, its target).
    #[arg(long, requires = "save_lesson")]
    pub force: bool,
}

/// `explore --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExploreMode {
    /// Workers load every Pending message and process it, owning nothing.
    NoLeasing,
    /// Leases; the finalize checks the owner's name only.
    OwnerGuard,
    /// Leases; the finalize also checks the lease version (leaselab's rule).
    FencingToken,
}

/// `leaselab completions SHELL`.
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The dashboard's flags, given with no command.
#[derive(Args, Debug, Clone, Default)]
pub struct DashboardArgs {
    /// The scenario to open (see `leaselab list`).
    #[arg(long = "scenario", value_name = "NAME", value_parser = names::scenarios(), hide_possible_values = true)]
    pub open_scenario: Option<String>,
    #[command(flatten)]
    pub threads: ThreadArgs,
    #[command(flatten)]
    pub outbox: OutboxArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub reliability: ReliabilityArgs,
    /// Keep the database in this file (created, or an earlier leaselab database reused), or
    /// use a PostgreSQL database: postgres://USER@HOST/DB (emptied and reseeded).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Show --db PATH while `leaselab worker` processes started elsewhere use it (created
    /// and seeded when missing, never emptied).
    #[arg(
        long,
        conflicts_with_all = ["processes", "open_scenario", "speed", "workers", "no_leasing"]
    )]
    pub watch: bool,
    /// Start the workers as `leaselab worker` processes on the wall clock; c is SIGKILL,
    /// space SIGSTOP / SIGCONT, r a new process.
    #[arg(long, conflicts_with_all = ["open_scenario", "speed"])]
    pub processes: bool,
    /// Run a student's exercise file live: the workers' claim, finalize and heartbeat are
    /// its statements (on SQLite), shown in the SQL pane from the start.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["watch", "processes", "open_scenario", "no_leasing"]
    )]
    pub sql: Option<PathBuf>,
}

impl DashboardArgs {
    /// Whether the command line sets up an outbox (free play) rather than opening the
    /// default lesson, which takes only --db and --speed.
    pub fn sets_up_an_outbox(&self) -> bool {
        self.open_scenario.is_some()
            || self.threads.workers.is_some()
            || self.outbox.messages.is_some()
            || self.outbox.no_leasing
            || self.timing.lease_ms.is_some()
            || self.timing.process_ms.is_some()
            || self.reliability.any()
            || self.watch
            || self.processes
            || self.sql.is_some()
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// One of: competing-no-claim, outbox-leasing, lease-expiry, soak.
    #[arg(value_parser = names::scenarios(), hide_possible_values = true)]
    pub scenario: String,
    /// Print the JSON report on stdout instead of the text report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub threads: ThreadArgs,
    #[command(flatten)]
    pub outbox: OutboxArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub reliability: ReliabilityArgs,
    /// Keep the database in this file (created, or an earlier leaselab database reused), or
    /// use a PostgreSQL database: postgres://USER@HOST/DB (emptied and reseeded).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Where the reports are saved.
    #[arg(long = "report-dir", value_name = "DIR", default_value = "reports")]
    pub report_dir: PathBuf,
    /// The seed of the soak's random fault schedule (printed in the report).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<0, { i64::MAX }>)]
    pub seed: Option<i64>,
}

#[derive(Args, Debug, Clone)]
pub struct LessonArgs {
    /// A built-in lesson (see `leaselab lessons`) or the path of a lesson file.
    #[arg(value_parser = names::lessons(), hide_possible_values = true, value_hint = clap::ValueHint::FilePath)]
    pub lesson: String,
    /// Run every step and check every expectation; exit 0 only when all hold.
    #[arg(long, conflicts_with = "print")]
    pub check: bool,
    /// Write a built-in lesson's file to standard output, to start a lesson of your own.
    #[arg(long)]
    pub print: bool,
    /// Keep the lesson's database in this file, or use a PostgreSQL database (not with
    /// --cast or --shot, which draw on a database of their own).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Free play's clock speed in the dashboard: scenario seconds per wall second
    /// (0.05-1000).
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = numbers::speed)]
    pub speed: Option<f64>,
    /// Write the lesson, step by step, as an asciicast v2 recording with a marker per step
    /// (and one per question, before its step), instead of opening it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["check", "print"])]
    pub cast: Option<PathBuf>,
    /// Write one screen of the lesson as an SVG picture (FILE ends in .svg), instead of
    /// opening it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["check", "print"])]
    pub shot: Option<PathBuf>,
    /// The step --shot draws: 0 before the first step (default: after the last).
    #[arg(long, value_name = "N", requires = "shot", value_parser = numbers::whole::<0, 1000>)]
    pub step: Option<i64>,
    /// With --shot: draw the question step N asks, as the dashboard shows it before the step
    /// runs (a shot of that step otherwise shows its answer).
    #[arg(long, requires = "shot")]
    pub question: bool,
    /// The screen size of --cast and --shot (default 120x40); only with one of them.
    #[arg(long, value_name = "COLSxROWS", value_parser = numbers::size)]
    pub size: Option<(u16, u16)>,
}

#[derive(Args, Debug, Clone)]
pub struct LessonsArgs {
    /// Print the reference for lesson authors (Markdown): every setup key, action and
    /// expectation, with an example each.
    #[arg(long)]
    pub reference: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ExercisesArgs {
    /// Print the reference of the exercise file (Markdown): its keys, parameters and sandbox.
    #[arg(long)]
    pub reference: bool,
}

#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["start", "solution", "check"])))]
pub struct ExerciseArgs {
    /// The built-in exercise (leaselab exercises lists them).
    #[arg(value_name = "NAME", value_parser = names::exercises(), hide_possible_values = true)]
    pub name: String,
    /// Print the starter file, to copy and change.
    #[arg(long)]
    pub start: bool,
    /// Print the model solution (for the teacher).
    #[arg(long)]
    pub solution: bool,
    /// Check a student's exercise file: load it under the sandbox, run the exercise's
    /// schedule on a scratch database, print every statement it ran; exit 0 when the rule
    /// holds, 1 when it is broken, 2 when the file is refused.
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct WorkerArgs {
    /// The worker's name, as the table and the events show it (Worker-A, laptop-3, ...).
    #[arg(long = flags::NAME, value_name = "NAME")]
    pub name: String,
    /// The database it shares with the other workers: a file or a postgres:// URL.
    #[arg(long = flags::DB, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    #[command(flatten)]
    pub outbox: OutboxArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub reliability: ReliabilityArgs,
    /// Run this worker's clock N ms ahead (negative: behind), to show clock skew on
    /// purpose (-86400000 to 86400000). On SQLite its leases go by that clock; on
    /// PostgreSQL they still go by the server's, unless --local-clock.
    #[arg(long = flags::CLOCK_SKEW_MS, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = numbers::signed::<{ -MAX_CLOCK_SKEW_MS }, MAX_CLOCK_SKEW_MS>)]
    pub clock_skew_ms: i64,
    /// On PostgreSQL, take lease times from this worker's own clock instead of the
    /// server's: with --clock-skew-ms, the harm of clock skew on purpose.
    #[arg(long = flags::LOCAL_CLOCK)]
    pub local_clock: bool,
}

/// The farthest `worker --clock-skew-ms` puts a worker's clock from the real one: a day.
pub const MAX_CLOCK_SKEW_MS: i64 = 86_400_000;

/// Most messages the bench claims in one run.
pub const MAX_BENCH_MESSAGES: i64 = 1_000_000;

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// SQLite's synchronous setting for the bench: full or normal.
    #[arg(long, value_name = "full|normal", value_enum, default_value_t = Sync::Normal)]
    pub sync: Sync,
    /// Messages claimed per transaction in the batch runs (1-1000).
    #[arg(long, value_name = "K", default_value_t = 16, allow_negative_numbers = true, value_parser = numbers::whole::<1, 1000>)]
    pub batch: i64,
    /// Also compare the per-message cost at 1,000 messages and at this many
    /// (1000-10000000).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1_000, 10_000_000>)]
    pub scale: Option<i64>,
    /// Print the JSON result on stdout.
    #[arg(long)]
    pub json: bool,
    /// Worker counts to measure, each 1-64 (default 1,2,4,8).
    #[arg(long, value_name = "N,N,...", allow_negative_numbers = true, value_parser = numbers::worker_list)]
    pub workers: Option<numbers::WorkerList>,
    /// Messages per run (1-1000000; default 100000).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_BENCH_MESSAGES>)]
    pub messages: Option<i64>,
    /// Also measure a PostgreSQL database beside SQLite: postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL")]
    pub db: Option<PathBuf>,
    /// Also run effectum, a job queue on SQLite, beside the leased loop: the program built
    /// from reference/effectum (see docs/performance.md).
    #[arg(long, value_name = "PROGRAM")]
    pub effectum: Option<PathBuf>,
    /// Measure every leased, plain, batch and effectum run this many times (1-9), each
    /// round's runs back to back; each target is the median of the rounds' figures.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = numbers::whole::<1, 9>)]
    pub rounds: i64,
}

/// `bench --sync`: SQLite's synchronous setting for the bench's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sync {
    Full,
    Normal,
}

/// `leaselab class ...`: what a teacher types or scripts.
#[derive(Subcommand, Debug, Clone)]
pub enum ClassCommand {
    /// A new round of N payments beside the earlier rounds' (their rows and events stay,
    /// labelled by round); --hold holds the class first. Makes the schema in an empty
    /// database.
    NewRound {
        /// The class's server: postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        db: String,
        /// Payments in the round (1-10000).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, 10_000>)]
        messages: i64,
        /// Hold the class as the round is made: nobody claims until `class go`.
        #[arg(long)]
        hold: bool,
    },
    /// Hold the class: every worker finishes what it holds and claims nothing until `go`.
    Hold {
        /// The class's server: postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        db: String,
    },
    /// Let the class go: every held worker claims again.
    Go {
        /// The class's server: postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        db: String,
    },
    /// Per student: done, rejected finalizes, leases lost, reclaims, duplicates and
    /// unguarded writes; sorted by done, then by the fewest rejected finalizes. Or, with
    /// --systems, who runs what: each worker's leaselab and system.
    Scoreboard {
        /// The class's server: postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        db: String,
        /// One round only (default: every round).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, { i64::MAX }>)]
        round: Option<i64>,
        /// One JSON object instead of the table (with who runs what under "workers").
        #[arg(long)]
        json: bool,
        /// Who runs what instead of the counts: each worker's leaselab version, commit and
        /// system, as it last joined (unknown where it did not record them).
        #[arg(long, conflicts_with_all = ["round", "json"])]
        systems: bool,
    },
    /// Print the command students type to join, with the password left out.
    Join {
        /// The class's server: postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        db: String,
    },
}
