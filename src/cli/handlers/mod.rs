//! Each command's handler, a file each; `main` only dispatches to them.

pub mod bench;
pub mod class;
pub mod dashboard;
pub mod exercise;
pub mod explore;
pub mod run;
pub mod shell;
pub mod worker;

use std::process::ExitCode;

use leaselab::scenario::Scenario;

use crate::cli::output::to_stderr;

use crate::cli::Out;

/// One line saying what a signal stopped, and the shell's exit code for it (128 + signo),
/// also when the line cannot be written: after SIGHUP the terminal it would go to is gone,
/// and the signal is still what ended the program.
pub(crate) fn interrupted(signo: i32, what: &str) -> ExitCode {
    let line = format!(
        "leaselab: interrupted by {}; {what}\n",
        leaselab::signals::name(signo)
    );
    to_stderr(&line);
    ExitCode::from(leaselab::signals::exit_code(signo))
}

/// `leaselab list`: the scenarios.
pub(crate) fn list() -> ExitCode {
    let mut out = Out::new();
    for s in Scenario::ALL {
        out.line(&format!("{:<20} {}", s.name(), s.summary()));
    }
    out.finish(ExitCode::SUCCESS)
}

/// `leaselab lessons`: the built-in lessons, or with `--reference` the authors' reference.
pub(crate) fn lessons(reference: bool) -> ExitCode {
    let mut out = Out::new();
    if reference {
        out.print(&leaselab::lesson::reference::reference());
        return out.finish(ExitCode::SUCCESS);
    }
    for (i, b) in leaselab::lesson::BUILT_INS.iter().enumerate() {
        let l = leaselab::lesson::built_in(b.name).expect("built-in lessons parse");
        out.line(&format!("{} {:<14} {}", i + 1, b.name, l.title));
    }
    out.finish(ExitCode::SUCCESS)
}
