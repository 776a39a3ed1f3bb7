//! `leaselab worker` children for the tests of worker processes, on a SQLite file or a
//! PostgreSQL URL, and the one polling wait those tests use.

use std::ffi::OsStr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a wait on worker processes may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(90);
/// How often such a wait looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// A `leaselab worker` child, stopped with SIGTERM (and reaped) when dropped.
pub struct WorkerProcess {
    pub child: Option<Child>,
    pub name: String,
}

impl WorkerProcess {
    /// Start `leaselab worker --db DB --name NAME EXTRA...`.
    pub fn start(db: impl AsRef<OsStr>, name: &str, extra: &[&str]) -> WorkerProcess {
        let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(["worker", "--db"])
            .arg(db)
            .args(["--name", name])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start leaselab worker");
        WorkerProcess {
            child: Some(child),
            name: name.to_string(),
        }
    }

    /// SIGTERM, then its exit status and its stderr.
    pub fn stop(mut self) -> (ExitStatus, String) {
        let child = self.child.take().expect("running");
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
            0
        );
        let out = child.wait_with_output().expect("wait for the worker");
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        let child = self.child.as_mut().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = child.wait();
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
