//! `leaselab exercises` and `leaselab exercise NAME`: the built-in exercises, their
//! starters and model answers, and the check of a student's file on the exercise's one
//! schedule, whose verdict names `explore --sql`, the search of every schedule.

use std::process::ExitCode;

use leaselab::exercise::{self, check};

use crate::cli::commands::ExerciseArgs;
use crate::cli::output::{runtime_error, usage_error};
use crate::cli::Out;

/// `leaselab exercises`: the built-in exercises, or with `--reference` the file reference.
pub(crate) fn exercises(reference: bool) -> ExitCode {
    let mut out = Out::new();
    if reference {
        out.print(&leaselab::engine::student::reference());
        return out.finish(ExitCode::SUCCESS);
    }
    for (i, b) in exercise::BUILT_INS.iter().enumerate() {
        out.line(&format!("{} {:<15} {}", i + 1, b.name, b.starter().title));
    }
    out.finish(ExitCode::SUCCESS)
}

/// `leaselab exercise NAME --start | --solution | --check FILE`.
pub(crate) fn exercise(a: &ExerciseArgs) -> ExitCode {
    let Some(built_in) = exercise::built_in(&a.name) else {
        return usage_error(format!(
            "unknown exercise '{}'; built-in exercises: {}",
            leaselab::text::quoted(&a.name),
            exercise::names()
        ));
    };
    let mut out = Out::new();
    if a.start || a.solution {
        out.print(if a.start {
            built_in.start
        } else {
            built_in.solution
        });
        return out.finish(ExitCode::SUCCESS);
    }
    let Some(path) = &a.check else {
        return usage_error("say --start, --solution or --check FILE");
    };
    let student = match exercise::load_file(path) {
        Ok(e) => e,
        Err(e) => return usage_error(e),
    };
    // A stop (Ctrl-C) interrupts the student's statement running and ends the check.
    let signals = match leaselab::signals::watch() {
        Ok(rx) => rx,
        Err(e) => return runtime_error(e),
    };
    let checked = check::check(built_in.name, &student);
    if let Ok(signo) = signals.try_recv() {
        return super::interrupted(signo, "the check stopped");
    }
    let verdict = match checked {
        Some(Ok(v)) => v,
        Some(Err(e)) if e.is_students() => return usage_error(e),
        Some(Err(e)) => return runtime_error(e),
        None => return usage_error(format!("no check for '{}'", built_in.name)),
    };
    for line in &verdict.lines {
        out.line(line);
    }
    // One schedule is a first look: the verdict says so, and names the search of them all.
    let explore = format!(
        "explore --sql {} tries every schedule",
        leaselab::text::quoted(&path.display().to_string())
    );
    match &verdict.broken {
        Some(rule) => {
            out.line(&format!(
                "BROKEN on the one schedule this check runs: {rule} ({explore})"
            ));
            out.finish(ExitCode::from(1))
        }
        None => {
            out.line(&format!(
                "PASSED on the one schedule this check runs; {explore}"
            ));
            out.finish(ExitCode::SUCCESS)
        }
    }
}
