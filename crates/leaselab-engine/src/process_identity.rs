//! Which process a worker is, so that a watch on the same machine can tell whether it still
//! runs. A worker process writes its identity into its `Joined` row (`process=...` after
//! its settings); a SQLite watch, which has no server to ask who is connected, looks the
//! process up: gone, it is `left`. A process id alone is not enough (ids are reused, and
//! mean another process in another pid namespace or after a reboot), so the identity is the
//! id with the process's start time, the machine's boot and the pid namespace. Where any of
//! these cannot be read (not Linux) nothing is written, and a watch says nothing it does
//! not know.

/// The key of a `Joined` row's detail that holds the identity.
pub const PROCESS_KEY: &str = "process";

/// One process on one machine, for as long as that machine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// When it started, in clock ticks since the boot (`/proc/PID/stat`, field 22).
    pub started: u64,
    /// The boot it runs in (`/proc/sys/kernel/random/boot_id`).
    pub boot: String,
    /// The pid namespace its id is counted in (the inode of `/proc/self/ns/pid`).
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
    /// This process's identity; None where it cannot be read.
    pub fn of_this_process() -> Option<ProcessIdentity> {
        let pid = std::process::id();
        Some(ProcessIdentity {
            pid,
            started: started(pid)?,
            boot: boot()?,
            pid_ns: pid_ns()?,
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
            boot: parts.next().filter(|b| is_boot_id(b))?.to_string(),
            pid_ns: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(identity)
    }

    /// Whether the process still runs, looked up from this one: only a process of this
    /// machine's boot and this pid namespace can be looked up.
    pub fn presence(&self) -> Presence {
        let here = (boot(), pid_ns());
        if here != (Some(self.boot.clone()), Some(self.pid_ns)) {
            return Presence::Unknown;
        }
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            // No entry: ended, unless /proc hides other users' processes (`hidepid`) and
            // the process is there all the same.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if i32::try_from(self.pid).is_ok_and(crate::leftovers::gone) {
                    Presence::Gone
                } else {
                    Presence::Unknown
                }
            }
            Err(_) => Presence::Unknown,
            Ok(stat) => match stat_fields(&stat) {
                // A zombie has ended; only its parent has not read how.
                Some(("Z", _)) => Presence::Gone,
                Some((_, start)) if start == self.started => Presence::Running,
                // Its id is another process's now.
                Some(_) => Presence::Gone,
                None => Presence::Unknown,
            },
        }
    }
}

/// A boot id as the kernel writes it: hex digits and dashes, nothing a detail could not hold.
fn is_boot_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// The state and the start time of a `/proc/PID/stat` line (after the command, which may
/// hold spaces and parentheses, so read from its last `)`).
fn stat_fields(stat: &str) -> Option<(&str, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (the state) is the first after the command; field 22 the start time.
    Some((fields.first()?, fields.get(22 - 3)?.parse().ok()?))
}

fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat_fields(&stat)?.1)
}

fn boot() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    is_boot_id(id).then(|| id.to_string())
}

fn pid_ns() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(std::fs::metadata("/proc/self/ns/pid").ok()?.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_reads_back_from_a_detail_and_nothing_else_does() {
        let me = ProcessIdentity::of_this_process().expect("Linux has /proc");
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

    #[test]
    fn a_command_with_spaces_and_parentheses_does_not_move_the_fields() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987 1 1";
        assert_eq!(stat_fields(stat), Some(("S", 987)));
    }
}
