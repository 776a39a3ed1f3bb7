//! Everything the command prints goes through here, so a write that fails never panics:
//! a reader that went away (`| head`) ends the output quietly, any other failure (a full
//! disk, `/dev/full`) ends the program with exit 3.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Exit code of bad input (one line on stderr).
pub const USAGE: u8 = 2;
/// Exit code of a run that started and then failed (a database error, a stall, output
/// that could not be written).
pub const RUNTIME_FAILURE: u8 = 3;

/// Write `text` to stderr. False when it could not be written for any reason but a
/// closed pipe.
pub fn to_stderr(text: &str) -> bool {
    let mut err = std::io::stderr().lock();
    match err.write_all(text.as_bytes()).and_then(|()| err.flush()) {
        Ok(()) => true,
        Err(e) => e.kind() == ErrorKind::BrokenPipe,
    }
}

/// One line on stderr as it is, and `code`; exit 3 instead if stderr cannot take it.
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
            failed: None,
        }
    }

    pub fn print(&mut self, text: &str) {
        if !self.open() {
            return;
        }
        let mut lock = self.stdout.lock();
        if let Err(e) = lock.write_all(text.as_bytes()).and_then(|()| lock.flush()) {
            if e.kind() == ErrorKind::BrokenPipe {
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
            let mut out = BufWriter::new(open_in_place(path)?);
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

/// A device or a fifo opened for writing without waiting: a fifo nobody reads is refused at
/// once (a blocked open would not hear Ctrl-C), then the writes block as usual.
fn open_in_place(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => std::io::Error::other("a fifo nobody reads"),
            _ => e,
        })?;
    // SAFETY: fcntl on a descriptor this function owns, with flags read from it.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(file)
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
        use std::os::unix::fs::OpenOptionsExt;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let mut n = 0;
        loop {
            let path = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(&path);
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
