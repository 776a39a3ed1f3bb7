//! Which process a worker is, so that a watch on the same machine can tell whether it still
//! runs. A worker process writes its identity into its `Joined` row (`process=...` after
//! its settings); a SQLite watch, which has no server to ask who is connected, looks the
//! process up: gone, it is `left`. A process id alone is not enough (ids are reused, and
//! mean another process in another pid namespace or after a reboot), so the identity is the
//! id with the process's start time, the machine's boot and the pid namespace, each as its
//! system tells it (`platform::process`). Where any of these cannot be read nothing is
//! written, and a watch says nothing it does not know.

use crate::platform::process::{self, Found};

/// The key of a `Joined` row's detail that holds the identity.
pub const PROCESS_KEY: &str = "process";

/// One process on one machine, for as long as that machine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// When it started, in its system's unit (Linux: clock ticks since the boot).
    pub started: u64,
    /// The boot it runs in (Linux, macOS), or the machine (Windows).
    pub boot: String,
    /// The pid namespace its id is counted in (0 where the system has none).
    pub pid_ns: u64,
}

/// Whether a process is still there, as far as this process can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// It runs (or is stopped, SIGSTOP: stopped is not gone).
    Running,
    /// It ended: no process of its id, or another that took its id since.
    Gone,
    /// Another machine, another boot or another pid namespace: nothing can be told.
    Unknown,
}

impl ProcessIdentity {
    /// This process's identity; None where the system does not tell it.
    pub fn of_this_process() -> Option<ProcessIdentity> {
        let stamp = process::this_process()?;
        Some(ProcessIdentity {
            pid: std::process::id(),
            started: stamp.started,
            boot: stamp.boot,
            pid_ns: stamp.pid_ns,
        })
    }

    /// `process=PID:STARTED:BOOT:NS`, as a `Joined` row's detail ends.
    pub fn detail(&self) -> String {
        format!(
            "{PROCESS_KEY}={}:{}:{}:{}",
            self.pid, self.started, self.boot, self.pid_ns
        )
    }

    /// The identity a `Joined` row's detail holds, if it holds a readable one.
    pub fn in_detail(detail: &str) -> Option<ProcessIdentity> {
        let value = detail
            .split(' ')
            .find_map(|pair| pair.strip_prefix(PROCESS_KEY)?.strip_prefix('='))?;
        let mut parts = value.split(':');
        let identity = ProcessIdentity {
            pid: parts.next()?.parse().ok()?,
            started: parts.next()?.parse().ok()?,
            boot: parts.next().filter(|b| process::is_boot_id(b))?.to_string(),
            pid_ns: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(identity)
    }

    /// Whether the process still runs, looked up from this one: only a process of this
    /// machine's boot and this pid namespace can be looked up.
    pub fn presence(&self) -> Presence {
        if process::here() != Some((self.boot.clone(), self.pid_ns)) {
            return Presence::Unknown;
        }
        match process::look_up(self.pid) {
            Found::Running { started } if started == self.started => Presence::Running,
            // Its id is another process's now.
            Found::Running { .. } | Found::Ended => Presence::Gone,
            Found::Unreadable => Presence::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_reads_back_from_a_detail_and_nothing_else_does() {
        let me = ProcessIdentity::of_this_process().expect("every supported system tells it");
        let detail = format!("lease_ms=500 guard=token {}", me.detail());
        assert_eq!(ProcessIdentity::in_detail(&detail), Some(me.clone()));
        assert_eq!(me.presence(), Presence::Running);
        for bad in [
            "lease_ms=500",
            "process=1:2:3",
            "process=1:2:abc:4:5",
            "process=x:2:abc:4",
            "process=1:2:not-hex!:4",
        ] {
            assert_eq!(ProcessIdentity::in_detail(bad), None, "{bad}");
        }
        // Its id taken by another process since, another boot, another namespace.
        let reused = ProcessIdentity {
            started: me.started + 1,
            ..me.clone()
        };
        assert_eq!(reused.presence(), Presence::Gone);
        let rebooted = ProcessIdentity {
            boot: "0000".into(),
            ..me.clone()
        };
        assert_eq!(rebooted.presence(), Presence::Unknown);
        let contained = ProcessIdentity {
            pid_ns: me.pid_ns + 1,
            ..me
        };
        assert_eq!(contained.presence(), Presence::Unknown);
    }
}
