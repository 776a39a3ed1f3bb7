//! Linux: `/proc` tells a process's start time and state, the boot and the pid namespace.

use super::Found;

pub(super) use super::unix::gone;

/// The state and the start time of a `/proc/PID/stat` line (after the command, which may
/// hold spaces and parentheses, so read from its last `)`).
fn stat_fields(stat: &str) -> Option<(&str, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (the state) is the first after the command; field 22 the start time.
    Some((fields.first()?, fields.get(22 - 3)?.parse().ok()?))
}

pub(super) fn look_up(pid: u32) -> Found {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // No entry: ended, unless /proc hides other users' processes (`hidepid`) and the
        // process is there all the same.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if gone(pid) {
                Found::Ended
            } else {
                Found::Unreadable
            }
        }
        Err(_) => Found::Unreadable,
        Ok(stat) => match stat_fields(&stat) {
            // A zombie has ended; only its parent has not read how.
            Some(("Z", _)) => Found::Ended,
            Some((_, started)) => Found::Running { started },
            None => Found::Unreadable,
        },
    }
}

pub(super) fn boot() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    super::is_boot_id(id).then(|| id.to_string())
}

pub(super) fn pid_ns() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(std::fs::metadata("/proc/self/ns/pid").ok()?.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_with_spaces_and_parentheses_does_not_move_the_fields() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987 1 1";
        assert_eq!(stat_fields(stat), Some(("S", 987)));
    }
}
