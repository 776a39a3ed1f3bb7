//! The `leaselab` command. The command line is in `cli/`, each command's handler in
//! `cli/handlers/`; `main` parses and dispatches.

mod cli;

use std::process::ExitCode;

use cli::handlers::{bench, dashboard, explore, run, worker};
use cli::{Command, LessonArgs};

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(c) => c,
        Err(code) => return code,
    };
    // Nothing any command makes could be seen, so none is run (a dashboard could not draw).
    if cli::output::stdout_closed() {
        return cli::runtime_error("standard output is closed (>&-): nothing was run");
    }
    match &cli.command {
        Some(Command::List) => cli::handlers::list(),
        Some(Command::Run(a)) => run::run(a),
        Some(Command::Lessons(a)) => cli::handlers::lessons(a.reference),
        Some(Command::Lesson(a)) => dashboard::lesson_command(a),
        Some(Command::Exercises(a)) => cli::handlers::exercise::exercises(a.reference),
        Some(Command::Exercise(a)) => cli::handlers::exercise::exercise(a),
        Some(Command::Worker(a)) => worker::worker(a),
        Some(Command::Class(c)) => cli::handlers::class::class(c),
        Some(Command::Bench(a)) => bench::bench(a),
        Some(Command::Explore(a)) => explore::explore(a),
        Some(Command::Replay(a)) => dashboard::replay(&a.db),
        Some(Command::Completions(a)) => cli::handlers::shell::completions(a.shell),
        Some(Command::Man) => cli::handlers::shell::man(),
        // No command: the default lesson, unless the outbox is set up on the command line.
        None if !cli.dashboard.sets_up_an_outbox() => dashboard::lesson_command(&LessonArgs {
            lesson: leaselab::lesson::DEFAULT_LESSON.to_string(),
            check: false,
            print: false,
            db: cli.dashboard.db.clone(),
            speed: cli.dashboard.threads.speed,
            cast: None,
            shot: None,
            step: None,
            question: false,
            size: None,
        }),
        None => dashboard::dashboard(&cli.dashboard),
    }
}
