//! What killed leaselabs leave behind: a half-made database beside `--db`
//! (`.leaselab-new-PID-XXXXXX`, with its `-wal` and `-shm`), a temporary database folder
//! (`leaselab-PID-XXXXXX` in the temporary folder) and a bench's folder of databases
//! (`leaselab-bench-PID-XXXXXX` there). Each name carries the pid of its maker;
//! a new leaselab removes those whose maker is gone, and only those.

use std::path::Path;

/// `PREFIX` for this process: its pid and a dash; the rest of the name is random.
pub fn prefix(kind: &str) -> String {
    format!("{kind}{}-", std::process::id())
}

/// The pid in `name` when it is `KIND` + digits + `-` + the rest.
fn maker(name: &str, kind: &str) -> Option<u32> {
    let rest = name.strip_prefix(kind)?;
    let (digits, _) = rest.split_once('-')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|pid| *pid > 0 && i32::try_from(*pid).is_ok())
}

/// Remove every entry of `dir` named `KIND` + PID + `-...` whose PID is gone: a file with
/// its SQLite siblings, or a folder with what it holds. Best effort: what cannot be read or
/// removed stays.
pub fn sweep(dir: &Path, kind: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = maker(name, kind) else {
            continue;
        };
        if !crate::platform::process::gone(pid) {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                let _ = std::fs::remove_dir_all(&path);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pid_then_a_dash_names_a_maker() {
        assert_eq!(maker(".leaselab-new-123-abc", ".leaselab-new-"), Some(123));
        assert_eq!(
            maker(".leaselab-new-123-abc-wal", ".leaselab-new-"),
            Some(123)
        );
        for other in [
            ".leaselab-new-abc",
            ".leaselab-new--1-x",
            "leaselab-new-1-x",
            ".leaselab-new-12",
        ] {
            assert_eq!(maker(other, ".leaselab-new-"), None, "{other}");
        }
    }
}
