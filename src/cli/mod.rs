//! The command line: the dashboard's flags on `leaselab` itself, and each command with
//! only the flags it uses (`commands.rs`), built from shared groups (`args.rs`). Every
//! number is read the same way (`numbers.rs`), every refusal is one line on stderr with
//! exit 2, and nothing printed can panic (`output.rs`).

pub mod args;
pub mod commands;
pub mod handlers;
pub mod names;
pub mod numbers;
pub mod output;

use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

pub use commands::{
    BenchArgs, ClassCommand, Command, DashboardArgs, LessonArgs, RunArgs, Sync, WorkerArgs,
};
pub use output::{runtime_error, usage_error, Out};

#[derive(Parser, Debug)]
#[command(
    name = "leaselab",
    version = leaselab::version::LONG,
    about = "Watch workers compete for a real SQLite outbox, with and without leases.",
    args_conflicts_with_subcommands = true,
    after_help = "With no command, leaselab opens lesson 2 (atomic-claim) paused, with \
                  narration: n steps, b steps back. --scenario NAME (or any of --workers, \
                  --messages, --lease-ms, --process-ms, --no-leasing) opens the free-play \
                  dashboard instead. Press ? there for keys. Each command lists its own \
                  flags: leaselab COMMAND --help.\n\n\
                  Exit codes: 0 every check passed, 1 a check failed, 2 bad input, 3 the run \
                  failed while running (a worker's database error such as a lock held past \
                  the busy limit or a full disk, a database changed under the run, a stall, \
                  output that could not be written). A report that could not be saved keeps \
                  the run's own code and says so on stderr."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// The command line, or the exit code of what was printed instead: help and the version
/// (exit 0, or 3 when they could not be written), or a refusal in one line (exit 2).
pub fn parse() -> Result<Cli, ExitCode> {
    Cli::try_parse().map_err(|e| match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = if color_wanted() {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let mut out = Out::new();
            out.print_own(&text);
            out.finish(ExitCode::SUCCESS)
        }
        _ => {
            let line = usage_line(&e);
            if line.contains("--help") {
                usage_error(line)
            } else {
                usage_error(format!("{line} (see leaselab --help)"))
            }
        }
    })
}

fn color_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// A context string of the error, if it has one.
fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        _ => None,
    }
}

/// `--lease-ms <N>` as the flag alone.
fn flag_of(arg: &str) -> &str {
    arg.split([' ', '=']).next().unwrap_or(arg)
}

/// What went wrong, in one line: `--FLAG: 'VALUE' is not ...` for a bad value, which
/// command a known flag belongs to, or clap's own first sentence.
fn usage_line(e: &clap::Error) -> String {
    let arg = context(e, ContextKind::InvalidArg);
    match (e.kind(), arg.as_deref()) {
        (ErrorKind::ValueValidation, Some(arg)) => {
            let value = context(e, ContextKind::InvalidValue).unwrap_or_default();
            match std::error::Error::source(e) {
                Some(why) => format!("{}: '{value}' {why}", flag_of(arg)),
                None => first_paragraph(e),
            }
        }
        (ErrorKind::UnknownArgument, Some(arg)) => {
            misplaced(e, flag_of(arg)).unwrap_or_else(|| first_paragraph(e))
        }
        (ErrorKind::ArgumentConflict, Some(arg)) => {
            let prior = context(e, ContextKind::PriorArg).unwrap_or_default();
            conflict(flag_of(arg), flag_of(&prior))
        }
        _ => subcommand_conflict(&first_paragraph(e)).unwrap_or_else(|| first_paragraph(e)),
    }
}

/// clap's "the subcommand 'list' cannot be used with: --watch --db <PATH|URL>", said as
/// the other conflicts are: which flag is for the dashboard.
fn subcommand_conflict(text: &str) -> Option<String> {
    let rest = text.strip_prefix("the subcommand '")?;
    let (sub, flags) = rest.split_once('\'')?;
    let flags = flags
        .split_once("cannot be used with")?
        .1
        .replace([':', '\''], " ");
    let flags = flags.as_str();
    let flag = flags
        .split_whitespace()
        .find(|f| *f == "--watch" || *f == "--processes")
        .or_else(|| flags.split_whitespace().find(|f| f.starts_with("--")))?;
    let root = Cli::command();
    let takes_it = root.find_subcommand(sub).is_some_and(|c| {
        c.get_arguments()
            .any(|a| a.get_long() == flag.strip_prefix("--"))
    });
    if takes_it {
        return Some(format!(
            "{flag} goes after the command: leaselab {sub} ... {flag}"
        ));
    }
    Some(conflict(flag, sub))
}

/// clap's explanation, which runs over several lines: its first paragraph, on one line.
fn first_paragraph(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text
        .trim_start()
        .split("\n\n")
        .next()
        .unwrap_or("invalid arguments")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    first.trim_start_matches("error: ").to_string()
}

/// Two flags that cannot go together: a dashboard mode and what it does not use, or any
/// other pair (a subcommand named after a dashboard flag included).
fn conflict(a: &str, b: &str) -> String {
    let command = |s: &str| Cli::command().find_subcommand(s).is_some();
    match (a, b) {
        (mode @ ("--watch" | "--processes"), other)
        | (other, mode @ ("--watch" | "--processes"))
            if command(other) =>
        {
            format!("{mode} is for the dashboard, not for a command")
        }
        (mode @ ("--watch" | "--processes"), other)
        | (other, mode @ ("--watch" | "--processes")) => {
            format!("{other} does not apply to {mode}")
        }
        (flag, other) if command(other) => {
            format!("{flag} is for the dashboard; `{other}` takes its own flags")
        }
        (flag, other) if command(flag) => {
            format!("{other} is for the dashboard; `{flag}` takes its own flags")
        }
        _ => format!("{a} cannot be used with {b}"),
    }
}

/// A flag given to a command that does not take it, though another one does: which
/// command was given it, and why it is not there.
fn misplaced(e: &clap::Error, flag: &str) -> Option<String> {
    let name = flag.strip_prefix("--")?;
    let root = Cli::command();
    let takes = |c: &clap::Command| c.get_arguments().any(|a| a.get_long() == Some(name));
    let known = takes(&root) || root.get_subcommands().any(takes);
    if !known {
        return None;
    }
    // The usage clap shows names the command being parsed: `leaselab lesson ...`.
    let usage = context_styled(e, ContextKind::Usage).unwrap_or_default();
    let sub = usage
        .split_whitespace()
        .skip_while(|w| *w != "leaselab")
        .nth(1)
        .filter(|w| root.find_subcommand(w).is_some());
    Some(match sub {
        Some("lesson") => {
            format!("{flag} does not apply to a lesson: its [setup] decides the outbox")
        }
        Some("worker") => {
            format!("{flag} does not apply to `worker`: it is one worker on the real clock")
        }
        Some(other) => format!("{flag} does not apply to `{other}` (see leaselab {other} --help)"),
        None => format!("{flag} does not apply to the dashboard"),
    })
}

fn context_styled(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::StyledStr(s) => Some(s.to_string()),
        ContextValue::String(s) => Some(s.clone()),
        _ => None,
    }
}
