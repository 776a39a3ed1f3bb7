//! `leaselab completions SHELL` and `leaselab man`, both made from the command line's own
//! definition. The completions offer the built-in names (lessons, scenarios, exercises;
//! `cli/names.rs`), and bash, after a word that is not a flag, offers those names and the
//! files where a path is taken rather than every flag. The manual page is one page: the
//! dashboard's flags, its keys, then each command's description and options; it names no
//! other page.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory, ValueHint};
use leaselab::ui::keys::{self, Mode};

use crate::cli::Out;

/// `leaselab completions SHELL`: clap's script, and for bash and fish the names and files
/// of the commands' own words.
pub(crate) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = crate::cli::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "leaselab", &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    match shell {
        clap_complete::Shell::Bash => script.push_str(&bash_words(&cmd)),
        clap_complete::Shell::Fish => script.push_str(&fish_names(&cmd)),
        _ => {}
    }
    let mut out = Out::new();
    out.print(&script);
    out.finish(ExitCode::SUCCESS)
}

/// The flags of `cmd` that take a value, as typed; with `deep`, its own commands' too.
fn valued_flags(cmd: &clap::Command, deep: bool) -> Vec<String> {
    let mut flags = Vec::new();
    for arg in cmd.get_arguments().filter(|a| !a.is_positional()) {
        if arg.get_action().takes_values() {
            flags.extend(arg.get_long().map(|l| format!("--{l}")));
            flags.extend(arg.get_short().map(|s| format!("-{s}")));
        }
    }
    for sub in cmd.get_subcommands().filter(|_| deep) {
        flags.extend(valued_flags(sub, true));
    }
    flags.sort();
    flags.dedup();
    flags
}

/// Whether the first word a command takes may be a path (`lesson FILE`, `replay PATH`).
fn takes_a_path(cmd: &clap::Command) -> bool {
    cmd.get_positionals().next().is_some_and(|a| {
        matches!(
            a.get_value_hint(),
            ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
        )
    })
}

/// A bash function over clap's: the value of a flag is left to clap's answer; a word that
/// is not a flag is completed with names (commands, lessons, scenarios, exercises, shells)
/// rather than flags, and with files where the command's first word may be a path; once
/// that word is given, flags only.
fn bash_words(cmd: &clap::Command) -> String {
    let mut arms = String::new();
    for sub in cmd.get_subcommands() {
        let _ = write!(
            arms,
            "\n        {}) valued=\" {} \"; files={} ;;",
            sub.get_name(),
            valued_flags(sub, true).join(" "),
            u8::from(takes_a_path(sub))
        );
    }
    format!(
        r#"
# leaselab's words: after a word that is not a flag, names (and files where a path is
# taken) rather than every flag.
_leaselab_words() {{
    _leaselab "$@"
    local cur="$2" prev="$3" sub="" valued files=0 given=0 i w kept=()
    [[ $cur == -* ]] && return 0
    (( COMP_CWORD > 1 )) && [[ ${{COMP_WORDS[1]}} != -* ]] && sub="${{COMP_WORDS[1]}}"
    case "$sub" in{arms}
        *) sub=""; valued=" {root} " ;;
    esac
    [[ $valued == *" $prev "* ]] && return 0
    i=1
    [[ -n $sub ]] && i=2
    for (( ; i < COMP_CWORD; i++ )); do
        w="${{COMP_WORDS[i]}}"
        if [[ $w == -* ]]; then
            [[ $valued == *" $w "* ]] && (( i++ ))
        else
            (( given++ ))
        fi
    done
    for w in "${{COMPREPLY[@]}}"; do
        if (( given > 0 )); then
            [[ $w == -* ]] && kept+=("$w")
        else
            [[ $w == -* ]] || kept+=("$w")
        fi
    done
    COMPREPLY=("${{kept[@]}}")
    if (( given == 0 && files )); then
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
    return 0
}}
if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _leaselab_words -o nosort -o bashdefault -o default leaselab
else
    complete -F _leaselab_words -o bashdefault -o default leaselab
fi
"#,
        root = valued_flags(cmd, false).join(" "),
    )
}

/// Fish lines for the first word of each command that offers names (clap's fish script
/// completes flags and commands only); files stay offered beside them.
fn fish_names(cmd: &clap::Command) -> String {
    let mut lines = String::from("\n# leaselab's words: the built-in names a command takes.\n");
    for sub in cmd.get_subcommands() {
        let Some(values) = sub
            .get_positionals()
            .next()
            .map(|a| a.get_possible_values())
        else {
            continue;
        };
        if values.is_empty() || sub.get_name() == "completions" {
            continue;
        }
        let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
        let _ = writeln!(
            lines,
            "complete -c leaselab -n \"__fish_seen_subcommand_from {}\" -a \"{}\"",
            sub.get_name(),
            names.join(" ")
        );
    }
    lines
}

/// `leaselab man`: the manual page in roff.
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

/// Text set in roff as it reads: hyphens as hyphens, nothing taken for a request.
fn roff(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

fn man_page() -> std::io::Result<String> {
    let cmd = crate::cli::Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    page.extend_from_slice(commands_section(&cmd).as_bytes());
    page.extend_from_slice(keys_section().as_bytes());
    man.render_extra_section(&mut page)?;
    man.render_version_section(&mut page)?;
    for sub in cmd.get_subcommands() {
        page.extend_from_slice(command_part(sub, "leaselab", ".SH")?.as_bytes());
    }
    Ok(String::from_utf8_lossy(&page).into_owned())
}

/// The commands, each with its line; each has a section of its own below, under its name.
fn commands_section(cmd: &clap::Command) -> String {
    let mut text = String::from(
        ".SH COMMANDS\nEach command has a section of its own below, under its name.\n",
    );
    for sub in cmd.get_subcommands() {
        let name = format!("leaselab {}", sub.get_name());
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let _ = write!(text, ".TP\n\\fB{}\\fR\n{}\n", roff(&name), roff(&about));
    }
    text
}

/// One command's section (`.SH "LEASELAB RUN"`), its description and options, and a
/// section of its own for each of its commands (`leaselab class new-round`).
fn command_part(sub: &clap::Command, parent: &str, heading: &str) -> std::io::Result<String> {
    let name = format!("{parent} {}", sub.get_name());
    let man = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
    let mut part = Vec::new();
    man.render_description_section(&mut part)?;
    man.render_options_section(&mut part)?;
    let mut part = String::from_utf8_lossy(&part)
        .replace(
            ".SH DESCRIPTION",
            &format!("{heading} \"{}\"", name.to_uppercase()),
        )
        .replace(".SH OPTIONS", ".SS Options");
    for nested in sub.get_subcommands().filter(|s| s.get_name() != "help") {
        part.push_str(&command_part(nested, &name, ".SH")?);
    }
    Ok(part)
}

/// The dashboard's keys, from the same list as its footer and help: free play's, then
/// what each other dashboard has besides and lacks.
fn keys_section() -> String {
    let mut text = String::from(
        ".SH KEYS\nThe dashboard's keys (\\fB?\\fR lists those of the screen it is on).\n",
    );
    let free: Vec<(&str, &str)> = keys::help_entries(Mode::Free)
        .map(|b| (b.label, b.help_in(Mode::Free)))
        .collect();
    let _ = writeln!(text, ".SS \"Free play (leaselab \\-\\-scenario NAME)\"");
    for (label, help) in &free {
        let _ = write!(text, ".TP\n\\fB{}\\fR\n{}\n", roff(label), roff(help));
    }
    let others = [
        (Mode::Lesson, "A lesson (leaselab lesson NAME)"),
        (
            Mode::Processes,
            "Worker processes (leaselab \\-\\-processes)",
        ),
        (Mode::Watch, "A watch (leaselab \\-\\-watch \\-\\-db PATH)"),
        (Mode::Replay, "A replay (leaselab replay PATH)"),
    ];
    for (mode, title) in others {
        let _ = writeln!(text, ".SS \"{title}\"");
        let entries: Vec<(&str, &str)> = keys::help_entries(mode)
            .map(|b| (b.label, b.help_in(mode)))
            .collect();
        for (label, help) in entries.iter().filter(|e| !free.contains(e)) {
            let _ = write!(text, ".TP\n\\fB{}\\fR\n{}\n", roff(label), roff(help));
        }
        let lacks: Vec<&str> = free
            .iter()
            .filter(|(l, _)| !entries.iter().any(|(m, _)| m == l))
            .map(|(l, _)| *l)
            .collect();
        let _ = writeln!(
            text,
            ".PP\nThe other keys as in free play{}.",
            if lacks.is_empty() {
                String::new()
            } else {
                roff(&format!("; not here: {}", lacks.join(", ")))
            }
        );
    }
    text
}
