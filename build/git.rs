//! The commit a build is made from, as `leaselab --version` names it: asked of git, and only
//! when the source is a git checkout of its own. A source without one (a crate's archive, a
//! copied folder) has no commit to name, and one unpacked inside another repository (a home
//! folder kept in git) would name that repository's: both are unknown, never guessed.
//!
//! Shared by `build.rs` and the test that checks it (`tests/version.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files whose change makes the build's commit, or its tree's state, another: the
/// folders and files a build compiles.
pub const SOURCES: &[&str] = &[
    "src",
    "crates",
    "build",
    "build.rs",
    "Cargo.toml",
    "Cargo.lock",
];

/// What git says of the checkout at `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// `git rev-parse --short HEAD`, or None where `dir` is no checkout's top.
    pub commit: Option<String>,
    /// Whether the files a build compiles differ from the commit.
    pub modified: bool,
    /// The files whose change means asking again: where HEAD points, the branch it names,
    /// the index, and the sources (only files that exist: a missing one would make Cargo
    /// run the build script on every build).
    pub watch: Vec<PathBuf>,
}

impl Checkout {
    /// The commit as `--version` shows it: `f3fb608`, `f3fb608-modified`, or `unknown`.
    pub fn shown(&self) -> String {
        match (&self.commit, self.modified) {
            (Some(c), false) => c.clone(),
            (Some(c), true) => format!("{c}-modified"),
            (None, _) => "unknown".to_string(),
        }
    }
}

/// git's answer to `args` in `dir`, trimmed; None when git is missing or refuses.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The checkout whose top is `dir`, as git tells it.
pub fn checkout(dir: &Path) -> Checkout {
    let unknown = Checkout {
        commit: None,
        modified: false,
        watch: Vec::new(),
    };
    let Some(top) = git(dir, &["rev-parse", "--show-toplevel"]) else {
        return unknown;
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return unknown;
    }
    let Some(commit) = git(dir, &["rev-parse", "--short", "HEAD"]).filter(|c| is_hex(c)) else {
        return unknown;
    };
    let mut status = vec!["status", "--porcelain", "--"];
    status.extend(SOURCES);
    let modified = git(dir, &status).is_some_and(|s| !s.is_empty());
    // HEAD and the index are the worktree's own; a branch lives where the repository keeps
    // its references (a linked worktree's are in the main checkout's folder).
    let mut paths = vec![
        "HEAD".to_string(),
        "index".to_string(),
        "packed-refs".to_string(),
    ];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        paths.push(branch);
    }
    let mut watch: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| git(dir, &["rev-parse", "--git-path", p]))
        .map(|p| dir.join(p))
        .collect();
    watch.extend(SOURCES.iter().map(|s| dir.join(s)));
    watch.retain(|p| p.exists());
    Checkout {
        commit: Some(commit),
        modified,
        watch,
    }
}

fn is_hex(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit())
}
