//! Everything the command prints goes through here, so a write that fails never panics:
//! a reader that went away (`| head`) ends the output quietly, any other failure (a full
//! disk, `/dev/full`, a closed stdout) ends the program with exit 3. What is printed may
//! quote a file, a row or a flag: it reaches the terminal without control characters, and
//! an error quotes at most a prefix of an over-long command-line value.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use leaselab::text::{self, printable};

/// Exit code of bad input (one line on stderr).
pub const USAGE: u8 = 2;
/// Exit code of a run that started and then failed (a database error, a stall, output
/// that could not be written).
pub const RUNTIME_FAILURE: u8 = 3;

/// Whether the program was started with its standard output closed (`>&-`): nothing it
/// prints could be seen, and it would exit 0 (on Unix, Rust's runtime opens /dev/null in
/// its place before `main`; `platform::stdout` looks earlier). A pipe whose reader went away
/// (`| head`) is not this: it ends quietly.
pub fn stdout_closed() -> bool {
    leaselab::platform::stdout::closed_at_start()
}

/// Write `text` to stderr. False when it could not be written for any reason but a
/// closed pipe.
pub fn to_stderr(text: &str) -> bool {
    // Not env::args(), which panics on an argument that is not UTF-8 (a path may be).
    let args = std::env::args_os().skip(1);
    let text = printable_lines(&bound_arguments(
        text,
        args.map(|a| a.to_string_lossy().into_owned()),
    ));
    let mut err = std::io::stderr().lock();
    match err.write_all(text.as_bytes()).and_then(|()| err.flush()) {
        Ok(()) => true,
        Err(e) => leaselab::platform::stdout::reader_gone(&e),
    }
}

/// Each line of `text` printable, its line breaks and tabs kept (a terminal only moves on
/// for those).
fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let cells: Vec<_> = line.split('\t').map(printable).collect();
            cells.join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every over-long command-line value in it (an argument, or what follows
/// `=` in `--flag=value`) quoted as its printable prefix: whichever error echoes a value (a
/// refusal, a path the system could not open), it shows at most [`text::MAX_QUOTED`]
/// characters of it, and a line break inside it cannot split the error's line.
fn bound_arguments(text: &str, args: impl Iterator<Item = String>) -> String {
    let mut values: Vec<String> = args
        .flat_map(|a| {
            let after = a.split_once('=').map(|(_, v)| v.to_string());
            [Some(a), after]
        })
        .flatten()
        .filter(|v| v.chars().count() > text::MAX_QUOTED)
        .collect();
    // The longest first, so a value is not cut inside one that holds it.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut text = text.to_string();
    for v in values {
        if text.contains(&v) {
            text = text.replace(&v, &text::quoted(&v));
        }
    }
    text
}

/// One line on stderr, and `code`; exit 3 instead if stderr cannot take it.
pub fn line_and_exit(line: &str, code: u8) -> ExitCode {
    if to_stderr(&format!("{line}\n")) {
        ExitCode::from(code)
    } else {
        ExitCode::from(RUNTIME_FAILURE)
    }
}

/// `leaselab: MSG` on stderr, and the usage exit code.
pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    line_and_exit(&format!("leaselab: {msg}"), USAGE)
}

/// `leaselab: MSG` on stderr, and the runtime-failure exit code.
pub fn runtime_error(msg: impl std::fmt::Display) -> ExitCode {
    line_and_exit(&format!("leaselab: {msg}"), RUNTIME_FAILURE)
}

/// `leaselab: MSG` on stderr for something the run goes on after (a report not saved).
/// False when stderr could not take it.
pub fn warn(msg: impl std::fmt::Display) -> bool {
    to_stderr(&format!("leaselab: {msg}\n"))
}

/// Standard output for results. A reader that went away (`| head`) ends the output
/// quietly; any other write error is kept and reported once, in one line.
pub struct Out {
    stdout: std::io::Stdout,
    closed: bool,
    failed: Option<std::io::Error>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            stdout: std::io::stdout(),
            closed: false,
            failed: stdout_closed().then(|| std::io::Error::other("it is closed (>&-)")),
        }
    }

    /// `text`, each line printable: what it quotes from a file, a row or a flag cannot
    /// drive the terminal.
    pub fn print(&mut self, text: &str) {
        self.print_own(&printable_lines(text));
    }

    /// `text` as it is: only for text leaselab made itself with styles of its own (the
    /// coloured `--help`).
    pub fn print_own(&mut self, text: &str) {
        if !self.open() {
            return;
        }
        let mut lock = self.stdout.lock();
        if let Err(e) = lock.write_all(text.as_bytes()).and_then(|()| lock.flush()) {
            if leaselab::platform::stdout::reader_gone(&e) {
                self.closed = true;
            } else {
                self.failed = Some(e);
            }
        }
    }

    pub fn line(&mut self, text: &str) {
        self.print(&format!("{text}\n"));
    }

    /// Whether what is printed still goes somewhere.
    pub fn open(&self) -> bool {
        !self.closed && self.failed.is_none()
    }

    /// `code`, unless the output could not be written: then one line and exit 3.
    pub fn finish(self, code: ExitCode) -> ExitCode {
        match self.failed {
            Some(e) => runtime_error(format!("cannot write to standard output: {e}")),
            None => code,
        }
    }
}

/// Write a file through `write`, never leaving half of it under its name: a regular file
/// (a new one, or one a symlink names) is written beside itself under a temporary name,
/// synced, and renamed over the name once whole; a failed write removes the temporary
/// file. Anything else the name holds (a device such as `/dev/stdout`, a fifo) is
/// written in place, as it is: a rename would replace the device node itself.
pub fn write_file<E: From<std::io::Error>>(
    path: &std::path::Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    use std::io::BufWriter;
    let target = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            let mut out = BufWriter::new(
                leaselab::engine::platform::files::open_to_write_in_place(path)?,
            );
            write(&mut out)?;
            return Ok(out.flush()?);
        }
        // Through a symlink, the file it names is replaced, as a plain write would do.
        Ok(_) => std::fs::canonicalize(path)?,
        Err(e) if e.kind() == ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e.into()),
    };
    let mut tmp = Unfinished::beside(&target)?;
    let mut out = BufWriter::new(&mut tmp.file);
    write(&mut out)?;
    out.flush()?;
    drop(out);
    tmp.file.sync_all()?;
    std::fs::rename(&tmp.path, &target)?;
    tmp.path = std::path::PathBuf::new();
    Ok(())
}

/// A file being written under a temporary name beside its target; removed when dropped
/// before it is renamed (an empty path: renamed, nothing to remove).
struct Unfinished {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Unfinished {
    /// `.NAME.PID-N.tmp` in the target's folder, made new (never an existing file), with
    /// the mode a plain write gives a new file (0666 less the umask).
    fn beside(target: &std::path::Path) -> std::io::Result<Unfinished> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let mut n = 0;
        loop {
            let path = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
            let made = leaselab::engine::platform::files::create_new(&path);
            match made {
                Ok(file) => return Ok(Unfinished { file, path }),
                Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_over_long_argument_is_cut_wherever_an_error_echoes_it() {
        let q = text::MAX_QUOTED;
        let long = "y".repeat(2 * q);
        let args = [format!("--name={long}"), "short".to_string()];
        let text = format!("--name={long}: no; '{long}' twice; short stays");
        let shown = bound_arguments(&text, args.into_iter());
        // The whole argument first (its first q characters), then the value alone.
        let want = format!(
            "--name={}…: no; '{}…' twice; short stays",
            "y".repeat(q - "--name=".len()),
            "y".repeat(q)
        );
        assert_eq!(shown, want);
    }

    #[test]
    fn printed_text_keeps_its_lines_and_tabs_and_loses_escape_codes() {
        let text = "a\tb \u{1b}[2Jc\r\nd\u{7}\n";
        assert_eq!(printable_lines(text), "a\tb [2Jc \nd\n");
    }
}
