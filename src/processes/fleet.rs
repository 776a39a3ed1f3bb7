//! Worker processes a dashboard starts itself (`--processes`): each is `leaselab worker` on
//! the same database, so a crash is a real SIGKILL and a pause a real SIGSTOP. None outlives
//! the dashboard: they are killed when this set is dropped (a quit, a signal, a panic's
//! unwinding), and the kernel kills them if the dashboard dies without unwinding.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::engine::worker_id::WorkerId;

use super::flags::{ProcessSettings, CHILD_ENV, HOLD_ENV};

/// Why a worker process could not be started, in the one line the dashboard shows.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("cannot find the leaselab program to start workers: {0}")]
    NoProgram(#[source] std::io::Error),
    #[error("cannot start worker process {name}: {source}")]
    Start {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// One slot's process, as the dashboard knows it.
#[derive(Debug)]
struct Slot {
    name: String,
    incarnation: u32,
    child: Option<Child>,
    stopped: bool,
    /// A held child's start pipe: closing it starts the child.
    hold: Option<ChildStdin>,
    /// How its process ended, once reaped (`exited with status 3`, `killed by SIGKILL`).
    ended: Option<String>,
}

/// The dashboard's worker processes, one per slot.
#[derive(Debug)]
pub struct WorkerProcesses {
    settings: ProcessSettings,
    exe: PathBuf,
    slots: Vec<Slot>,
}

/// How a slot's process is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// Started held: waiting for the dashboard's first space before it opens the database.
    Held,
    Running,
    /// SIGSTOP: alive, holding what it holds, doing nothing.
    Stopped,
    /// Killed, or ended on its own.
    Gone,
}

/// `exited with status 3`, or `killed by signal 9`.
fn ended_how(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signo)) => format!("killed by signal {signo}"),
        (None, None) => "ended".to_string(),
    }
}

impl WorkerProcesses {
    /// Start `count` worker processes named `Worker-A`, `Worker-B`, ...
    pub fn start(settings: ProcessSettings, count: usize) -> Result<WorkerProcesses, FleetError> {
        WorkerProcesses::start_with(settings, count, false)
    }

    /// Start `count` worker processes held before their first database access, shown
    /// stopped, until [`WorkerProcesses::set_stopped`] wakes them. A SIGSTOP sent as they
    /// start could stop one inside a write transaction and lock the database for everyone.
    pub fn start_held(
        settings: ProcessSettings,
        count: usize,
    ) -> Result<WorkerProcesses, FleetError> {
        WorkerProcesses::start_with(settings, count, true)
    }

    fn start_with(
        settings: ProcessSettings,
        count: usize,
        held: bool,
    ) -> Result<WorkerProcesses, FleetError> {
        let exe = std::env::current_exe().map_err(FleetError::NoProgram)?;
        let mut set = WorkerProcesses {
            settings,
            exe,
            slots: Vec::new(),
        };
        for slot in 0..count {
            let name = WorkerId::new(slot, 1).to_string();
            let mut child = set.spawn(&name, held)?;
            let hold = child.stdin.take();
            set.slots.push(Slot {
                name,
                incarnation: 1,
                child: Some(child),
                stopped: held,
                hold,
                ended: None,
            });
        }
        Ok(set)
    }

    fn spawn(&self, name: &str, held: bool) -> Result<Child, FleetError> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(self.settings.worker_args(name))
            .env(CHILD_ENV, "1")
            .stdin(if held { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: the terminal's Ctrl-C and SIGHUP are the dashboard's to handle.
            .process_group(0);
        if held {
            cmd.env(HOLD_ENV, "1");
        }
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid and _exit are async-signal-safe, as pre_exec requires.
        unsafe {
            cmd.pre_exec(move || {
                // The kernel kills the worker when the dashboard's thread that started it dies.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The dashboard may have died before prctl: then nobody would send it.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        cmd.spawn().map_err(|source| FleetError::Start {
            name: name.to_string(),
            source,
        })
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn db(&self) -> &Path {
        &self.settings.db
    }

    /// The name of the slot's newest process.
    pub fn name(&self, slot: usize) -> Option<&str> {
        self.slots.get(slot).map(|s| s.name.as_str())
    }

    /// The pid of the slot's process while it lives.
    pub fn pid(&self, slot: usize) -> Option<u32> {
        self.slots.get(slot)?.child.as_ref().map(Child::id)
    }

    pub fn pids(&self) -> Vec<u32> {
        (0..self.len()).filter_map(|s| self.pid(s)).collect()
    }

    pub fn state(&mut self, slot: usize) -> ProcessState {
        let Some(s) = self.slots.get_mut(slot) else {
            return ProcessState::Gone;
        };
        let Some(child) = &mut s.child else {
            return ProcessState::Gone;
        };
        // A worker that ended on its own (a database error) is reaped here.
        match child.try_wait() {
            Ok(None) => {}
            done => {
                s.ended = Some(match done {
                    Ok(Some(status)) => ended_how(status),
                    _ => "ended (its status could not be read)".to_string(),
                });
                s.child = None;
                return ProcessState::Gone;
            }
        }
        if s.hold.is_some() {
            ProcessState::Held
        } else if s.stopped {
            ProcessState::Stopped
        } else {
            ProcessState::Running
        }
    }

    /// SIGKILL: the process ends where it stands; any lease it holds stays in the database.
    /// False when there was no process to kill.
    pub fn kill(&mut self, slot: usize) -> bool {
        let Some(s) = self.slots.get_mut(slot) else {
            return false;
        };
        let Some(mut child) = s.child.take() else {
            return false;
        };
        let _ = child.kill();
        let _ = child.wait();
        s.stopped = false;
        true
    }

    /// Replace the slot's process by a new one under the next name (`Worker-A#2`); a live
    /// one is killed first. Returns the new name.
    pub fn restart(&mut self, slot: usize) -> Result<String, FleetError> {
        self.kill(slot);
        let incarnation = self.slots.get(slot).map_or(1, |s| s.incarnation + 1);
        let name = WorkerId::new(slot, incarnation).to_string();
        let child = self.spawn(&name, false)?;
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Slot {
                name: name.clone(),
                incarnation,
                child: Some(child),
                stopped: false,
                hold: None,
                ended: None,
            };
        }
        Ok(name)
    }

    /// SIGSTOP (true) or SIGCONT (false) to the slot's process: a stopped worker is a real
    /// zombie, holding its lease while the clock runs on. False when it is gone.
    pub fn set_stopped(&mut self, slot: usize, stop: bool) -> bool {
        let Some(s) = self.slots.get_mut(slot) else {
            return false;
        };
        let Some(child) = &s.child else {
            return false;
        };
        if s.hold.is_some() {
            // Held before its first database access: closing the pipe starts it; it is
            // already as still as a stopped one.
            if !stop {
                s.hold = None;
                s.stopped = false;
            }
            return true;
        }
        let signal = if stop { libc::SIGSTOP } else { libc::SIGCONT };
        // SAFETY: a plain kill(2) on our own child's pid, which we have not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        s.stopped = stop;
        true
    }

    /// How the slot's process ended, once it was found gone on its own.
    pub fn ended(&self, slot: usize) -> Option<&str> {
        self.slots.get(slot)?.ended.as_deref()
    }

    pub fn is_stopped(&self, slot: usize) -> bool {
        self.slots.get(slot).is_some_and(|s| s.stopped)
    }
}

impl Drop for WorkerProcesses {
    fn drop(&mut self) {
        for slot in 0..self.slots.len() {
            self.kill(slot);
        }
    }
}
