//! What killed leaselabs leave behind is removed by the next one, and only that: a
//! half-made database beside `--db` and a temporary database folder whose maker is gone
//! go; those of a live process stay.

use std::path::Path;
use std::process::Command;

mod support;

/// The pid of a process that has ended (and been reaped).
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_new_database_removes_half_made_ones_of_dead_makers_only() {
    let dir = tempfile::tempdir().unwrap();
    let (dead, live) = (dead_pid(), std::process::id());
    for name in [
        format!(".leaselab-new-{dead}-abcdef"),
        format!(".leaselab-new-{dead}-abcdef-wal"),
        format!(".leaselab-new-{dead}-abcdef-shm"),
        format!(".leaselab-new-{live}-keepme"),
        "notes.txt".to_string(),
    ] {
        std::fs::write(dir.path().join(name), "x").unwrap();
    }
    let o = support::leaselab(&["run", "lease-expiry", "--db", "new.db"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let left = names(dir.path());
    assert!(
        !left.iter().any(|n| n.contains(&format!("-{dead}-"))),
        "{left:?}"
    );
    assert!(
        left.contains(&format!(".leaselab-new-{live}-keepme")),
        "{left:?}"
    );
    assert!(left.contains(&"notes.txt".to_string()), "{left:?}");
    assert!(
        !left
            .iter()
            .any(|n| n.starts_with(".leaselab-new-") && !n.contains("keepme")),
        "{left:?}"
    );
}

#[test]
fn a_temporary_database_removes_folders_of_dead_makers_only() {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dead, live) = (dead_pid(), std::process::id());
    for name in [
        format!("leaselab-{dead}-abcdef"),
        format!("leaselab-{live}-keepme"),
    ] {
        std::fs::create_dir(tmp.path().join(&name)).unwrap();
        std::fs::write(tmp.path().join(name).join("outbox.db"), "x").unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["run", "lease-expiry"])
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The dead maker's folder went, the live one's stayed, and the run removed its own.
    assert_eq!(names(tmp.path()), [format!("leaselab-{live}-keepme")]);
}
