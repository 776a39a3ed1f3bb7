//! Each command's handler, a file each; `main` only dispatches to them.

pub mod bench;
pub mod class;
pub mod dashboard;
pub mod exercise;
pub mod explore;
pub mod run;
pub mod worker;

use std::process::ExitCode;

use leaselab::scenario::Scenario;

use crate::cli::output::to_stderr;
use clap::CommandFactory;

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

/// `leaselab completions SHELL`: the completion script, made from the command line's own
/// definition.
pub(crate) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::cli::Cli::command(),
        "leaselab",
        &mut script,
    );
    let mut out = Out::new();
    out.print(&String::from_utf8_lossy(&script));
    out.finish(ExitCode::SUCCESS)
}

/// `leaselab man`: the manual page in roff, made from the command line's own definition:
/// the dashboard's flags, then each command's description and options.
pub(crate) fn man() -> ExitCode {
    match man_page() {
        Ok(page) => {
            let mut out = Out::new();
            out.print(&page);
            out.finish(ExitCode::SUCCESS)
        }
        Err(e) => crate::cli::runtime_error(format!("cannot make the manual page: {e}")),
    }
}

fn man_page() -> std::io::Result<String> {
    let cmd = crate::cli::Cli::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    for sub in cmd.get_subcommands() {
        let name = format!("leaselab {}", sub.get_name());
        let man = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
        let mut part = Vec::new();
        man.render_description_section(&mut part)?;
        man.render_options_section(&mut part)?;
        let part = String::from_utf8_lossy(&part)
            .replace(
                ".SH DESCRIPTION",
                &format!(".SH \"{}\"", name.to_uppercase()),
            )
            .replace(".SH OPTIONS", ".SS Options");
        page.extend_from_slice(part.as_bytes());
    }
    Ok(String::from_utf8_lossy(&page).into_owned())
}
