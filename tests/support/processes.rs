//! `leaselab worker` children for the tests of worker processes, on a SQLite file or a
//! PostgreSQL URL, and the one polling wait those tests use.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a wait on worker processes may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(90);
/// How often such a wait looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// A `leaselab worker` child, stopped with SIGTERM (and reaped) when dropped. Its standard
/// output is kept line by line as it comes, its standard error whole: a test reads them
/// while it runs, and the pipes never fill.
pub struct WorkerProcess {
    pub child: Option<Child>,
    pub name: String,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    /// How many lines [`WorkerProcess::line_with`] has read past.
    read: usize,
}

/// How a signalled worker ended, and what it wrote.
pub struct Ended {
    pub status: ExitStatus,
    /// Every line of its standard output.
    pub out: String,
    /// The lines after the last one [`WorkerProcess::line_with`] returned.
    pub rest: String,
    pub err: String,
}

impl Ended {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl WorkerProcess {
    /// Start `leaselab worker --db DB --name NAME EXTRA...`.
    pub fn start(db: impl AsRef<OsStr>, name: &str, extra: &[&str]) -> WorkerProcess {
        WorkerProcess::start_with(db, name, extra, &[])
    }

    /// [`WorkerProcess::start`] with `env` set (and `PGPASSWORD` only when `env` gives it).
    pub fn start_with(
        db: impl AsRef<OsStr>,
        name: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> WorkerProcess {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
        cmd.args(["worker", "--db"])
            .arg(db)
            .args(["--name", name])
            .args(extra)
            .env_remove("PGPASSWORD")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start leaselab worker");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().unwrap();
        let kept = lines.clone();
        let read_out = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let mut err = child.stderr.take().unwrap();
        let kept = stderr.clone();
        let read_err = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = err.read_to_end(&mut bytes);
            kept.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&bytes));
        });
        WorkerProcess {
            child: Some(child),
            name: name.to_string(),
            lines,
            stderr,
            readers: vec![read_out, read_err],
            read: 0,
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> libc::pid_t {
        self.child.as_ref().expect("running").id() as libc::pid_t
    }

    /// The lines it wrote so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// How many of its lines so far hold `needle`.
    pub fn count(&self, needle: &str) -> usize {
        let lines = self.lines.lock().unwrap();
        lines.iter().filter(|l| l.contains(needle)).count()
    }

    /// Whether any of its lines so far holds `needle`.
    pub fn said(&self, needle: &str) -> bool {
        self.count(needle) > 0
    }

    /// Fail the test, with what it wrote, if it has ended: for a wait on a worker that
    /// refused its arguments or stopped on an error.
    pub fn still_running(&mut self) {
        let child = self.child.as_mut().expect("running");
        if let Some(status) = child.try_wait().expect("look at the worker") {
            panic!(
                "{} ended ({status}):\n{}\n{}",
                self.name,
                self.lines().join("\n"),
                self.stderr.lock().unwrap()
            );
        }
    }

    /// The next line holding `needle`, after the last one this returned: waited for, at
    /// most [`DEADLINE`].
    pub fn line_with(&mut self, needle: &str) -> String {
        let (at, line) = wait_for(&format!("{}: a line with {needle:?}", self.name), || {
            let lines = self.lines.lock().unwrap();
            lines
                .iter()
                .enumerate()
                .skip(self.read)
                .find(|(_, l)| l.contains(needle))
                .map(|(i, l)| (i, l.clone()))
        });
        self.read = at + 1;
        line
    }

    /// Send `signo`, then wait (at most [`DEADLINE`]) for it to end: how it ended and all
    /// it wrote. One that does not end is killed, and the test fails.
    pub fn signal(mut self, signo: i32) -> Ended {
        let mut child = self.child.take().expect("running");
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, signo) },
            0,
            "{}: kill {signo}",
            self.name
        );
        let status = reap(&mut child, &self.name);
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        let lines = self.lines();
        Ended {
            status,
            out: lines.join("\n"),
            rest: lines[self.read.min(lines.len())..].join("\n"),
            err: self.stderr.lock().unwrap().clone(),
        }
    }

    /// SIGTERM, then its exit status and its stderr.
    pub fn stop(self) -> (ExitStatus, String) {
        let ended = self.signal(libc::SIGTERM);
        (ended.status, ended.err)
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        let child = self.child.as_mut().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// Wait for `child` to end, at most [`DEADLINE`]; past it, kill it and fail.
fn reap(child: &mut Child, name: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the worker") {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not end within {DEADLINE:?} of its signal; killed");
        }
        std::thread::sleep(POLL);
    }
}

impl Drop for WorkerProcess {
    /// SIGTERM, and SIGCONT for one a test stopped (a failed test may leave it so); one
    /// that has not ended by the deadline is killed.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id() as libc::pid_t;
            unsafe {
                libc::kill(pid, libc::SIGTERM);
                libc::kill(pid, libc::SIGCONT);
            }
            let start = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if start.elapsed() > DEADLINE {
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
                std::thread::sleep(POLL);
            }
        }
    }
}

/// Poll `what` until it returns Some, or fail after the deadline saying what was awaited.
pub fn wait_for<T>(awaited: &str, mut what: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = what() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {awaited}");
        std::thread::sleep(POLL);
    }
}

/// The live (not zombie) children of `parent`, from /proc.
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name in parentheses: state, then the parent's pid.
        let rest = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let mut fields = rest.split_whitespace();
        let (state, ppid) = (fields.next(), fields.next());
        if ppid == Some(parent.to_string().as_str()) && state != Some("Z") {
            found.push(pid);
        }
    }
    found
}

/// A process that is gone: no /proc entry, or a zombie waiting for its reaper.
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat[stat.rfind(')').map_or(0, |i| i + 1)..]
                .split_whitespace()
                .next()
                == Some("Z")
        }
    }
}

/// A server restarted (by `restart`, the running `pg-restart.sh`) under worker processes
/// and a watch: draws the watch while the server is away and after, and returns once the
/// restart has ended, the watch went stale (saying `CONNECTION LOST … reconnecting`) and is
/// current again, and every one of `laptops` said `reconnected`. Returns when the wait began.
pub fn until_reconnected(
    watch: &mut leaselab::ui::App,
    laptops: &[WorkerProcess],
    mut restart: Child,
) -> Instant {
    let start = Instant::now();
    let (mut stale, mut restarted) = (None, None);
    loop {
        watch.absorb_events();
        let lines = super::frame_lines(watch, 160, 40);
        let snap = watch.snapshot();
        if snap.stale_since.is_some() && stale.is_none() {
            assert!(
                lines[1].contains("CONNECTION LOST") && lines[1].contains("reconnecting"),
                "{}",
                lines[1]
            );
            stale = Some(snap.now_ms);
        }
        if restarted.is_none() {
            restarted = restart.try_wait().unwrap();
        }
        let back = laptops.iter().all(|l| l.said("reconnected"));
        if stale.is_some() && snap.stale_since.is_none() && back && restarted.is_some() {
            break;
        }
        let waiting: Vec<&str> = laptops
            .iter()
            .filter(|l| !l.said("reconnected"))
            .map(|l| l.name.as_str())
            .collect();
        assert!(
            start.elapsed() < DEADLINE,
            "gave up waiting for the reconnections (restarted: {restarted:?}, watch stale at \
             {stale:?}, workers not back: {waiting:?}):\n{}",
            lines.join("\n")
        );
        std::thread::sleep(POLL);
    }
    assert!(restart.wait().unwrap().success(), "pg-restart.sh failed");
    start
}
