//! Worker processes a dashboard starts itself (`--processes`): each is `leaselab worker` on
//! the same database, so a crash is a real kill and a pause a real freeze (SIGSTOP on Unix,
//! every thread suspended on Windows: `platform::children`). None outlives the dashboard:
//! they are killed when this set is dropped (a quit, a signal, a panic's unwinding), and if
//! the dashboard dies without unwinding each one's lifeline closes (`lifeline.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::engine::worker_id::WorkerId;
use crate::platform::children;

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
    /// Started held, and not started yet.
    held: bool,
    /// The child's lifeline: a byte on it starts a held child; it closes when the dashboard
    /// ends, however it ends.
    lifeline: Option<ChildStdin>,
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
    /// Frozen: alive, holding what it holds, doing nothing.
    Stopped,
    /// Killed, or ended on its own.
    Gone,
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
            let lifeline = child.stdin.take();
            set.slots.push(Slot {
                name,
                incarnation: 1,
                child: Some(child),
                stopped: held,
                held,
                lifeline,
                ended: None,
            });
        }
        Ok(set)
    }

    fn spawn(&self, name: &str, held: bool) -> Result<Child, FleetError> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(self.settings.worker_args(name))
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Away from the terminal: its Ctrl-C and hang-up are the dashboard's to handle.
        children::detach(&mut cmd);
        if held {
            cmd.env(HOLD_ENV, "1");
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
                    Ok(Some(status)) => children::ended_how(status),
                    _ => "ended (its status could not be read)".to_string(),
                });
                s.child = None;
                return ProcessState::Gone;
            }
        }
        if s.held {
            ProcessState::Held
        } else if s.stopped {
            ProcessState::Stopped
        } else {
            ProcessState::Running
        }
    }

    /// Killed: the process ends where it stands; any lease it holds stays in the database.
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
        s.lifeline = None;
        true
    }

    /// Replace the slot's process by a new one under the next name (`Worker-A#2`); a live
    /// one is killed first. Returns the new name.
    pub fn restart(&mut self, slot: usize) -> Result<String, FleetError> {
        self.kill(slot);
        let incarnation = self.slots.get(slot).map_or(1, |s| s.incarnation + 1);
        let name = WorkerId::new(slot, incarnation).to_string();
        let mut child = self.spawn(&name, false)?;
        let lifeline = child.stdin.take();
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Slot {
                name: name.clone(),
                incarnation,
                child: Some(child),
                stopped: false,
                held: false,
                lifeline,
                ended: None,
            };
        }
        Ok(name)
    }

    /// Freeze (true) or wake (false) the slot's process: a frozen worker is a real zombie,
    /// holding its lease while the clock runs on. False when it is gone.
    pub fn set_stopped(&mut self, slot: usize, stop: bool) -> bool {
        let Some(s) = self.slots.get_mut(slot) else {
            return false;
        };
        let Some(child) = &s.child else {
            return false;
        };
        if s.held {
            // Held before its first database access: a byte on its lifeline starts it; it is
            // already as still as a frozen one.
            if !stop {
                if let Some(pipe) = s.lifeline.as_mut() {
                    let _ = pipe
                        .write_all(&[super::lifeline::START])
                        .and_then(|()| pipe.flush());
                }
                s.held = false;
                s.stopped = false;
            }
            return true;
        }
        let _ = children::set_frozen(child, stop);
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
        self.end_all();
    }
}

/// How long the dashboard's end waits for its workers to give their leases back.
const LEAVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

impl WorkerProcesses {
    /// End every worker process as the dashboard ends: each one's lifeline closes (a frozen
    /// one is woken first, to read it), so it gives its lease back and ends; one still there
    /// after [`LEAVE_WITHIN`] is killed.
    fn end_all(&mut self) {
        for s in &mut self.slots {
            if let Some(child) = &s.child {
                if s.stopped && !s.held {
                    let _ = children::set_frozen(child, false);
                }
            }
            s.lifeline = None;
        }
        let deadline = std::time::Instant::now() + LEAVE_WITHIN;
        while std::time::Instant::now() < deadline
            && self.slots.iter_mut().any(|s| {
                s.child
                    .as_mut()
                    .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
            })
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for slot in 0..self.slots.len() {
            self.kill(slot);
        }
    }
}
