//! Which leaselab a worker process runs, and on what system, so that a teacher sees who
//! runs what: its version, the commit it was built from and the target it was built for,
//! written into its `Joined` row after its settings (`leaselab=0.1.0 commit=f3fb608
//! target=aarch64-apple-darwin`).
//!
//! A row is untrusted: anyone with the class's password can write one. Read back, each
//! value must look like what a build writes (a bounded length, letters, digits and a few
//! marks: nothing a terminal obeys, no space), and one that does not is unknown, as is one
//! an older leaselab did not write. Nothing is guessed.

use crate::text::{bounded, printable};

/// The keys of a `Joined` row's detail that hold the software.
pub const VERSION_KEY: &str = "leaselab";
pub const COMMIT_KEY: &str = "commit";
pub const TARGET_KEY: &str = "target";

/// The longest value read back: a version, a commit or a target triple is shorter.
const MAX_VALUE: usize = 64;

/// What a worker said of its leaselab when it joined; each part None when unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Software {
    /// `0.1.0`.
    pub version: Option<String>,
    /// `f3fb608`, or `f3fb608-modified` for a build from a changed checkout.
    pub commit: Option<String>,
    /// `aarch64-apple-darwin`.
    pub target: Option<String>,
}

impl Software {
    /// The software as a build names it; a part it cannot name (`unknown`, or a value no
    /// reader would accept) is left unknown.
    pub fn of_build(version: &str, commit: &str, target: &str) -> Software {
        let known = |v: &str| (v != "unknown" && is_value(v)).then(|| v.to_string());
        Software {
            version: known(version),
            commit: known(commit),
            target: known(target),
        }
    }

    /// The detail's pairs, each known part once: `leaselab=0.1.0 commit=f3fb608
    /// target=x86_64-unknown-linux-gnu`. Empty when nothing is known.
    pub fn detail(&self) -> String {
        [
            (VERSION_KEY, &self.version),
            (COMMIT_KEY, &self.commit),
            (TARGET_KEY, &self.target),
        ]
        .iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", v.as_ref()?)))
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// The software a `Joined` row's detail names: each part that is there once and looks
    /// like a build's value; anything else is unknown.
    pub fn in_detail(detail: &str) -> Software {
        let value = |key: &str| -> Option<String> {
            let mut found = detail
                .split(' ')
                .filter_map(|pair| pair.strip_prefix(key)?.strip_prefix('='));
            let v = found.next()?;
            // Named twice: which is true cannot be told.
            (found.next().is_none() && is_value(v)).then(|| v.to_string())
        };
        Software {
            version: value(VERSION_KEY),
            commit: value(COMMIT_KEY),
            target: value(TARGET_KEY),
        }
    }

    /// Whether the key is one of the software's (a reader of settings passes over them).
    pub fn is_key(key: &str) -> bool {
        [VERSION_KEY, COMMIT_KEY, TARGET_KEY].contains(&key)
    }

    /// The version as shown: `0.1.0`, or `unknown`.
    pub fn version_shown(&self) -> String {
        shown(&self.version)
    }

    /// The commit as shown: `f3fb608`, or `unknown`.
    pub fn commit_shown(&self) -> String {
        shown(&self.commit)
    }

    /// The system as a person names it, from the target: `macOS aarch64`, `Linux x86_64`,
    /// `Windows x86_64`; another target as it is; `unknown` when none was recorded.
    pub fn system(&self) -> String {
        let Some(target) = &self.target else {
            return "unknown".to_string();
        };
        let arch = target.split('-').next().unwrap_or(target);
        let os = if target.contains("-apple-darwin") {
            "macOS"
        } else if target.contains("-windows") {
            "Windows"
        } else if target.contains("-linux") {
            "Linux"
        } else {
            return shown(&self.target);
        };
        format!("{os} {arch}")
    }

    /// `leaselab 0.1.0 (f3fb608) on macOS aarch64`, each unknown part said so.
    pub fn line(&self) -> String {
        format!(
            "leaselab {} ({}) on {}",
            self.version_shown(),
            self.commit_shown(),
            self.system()
        )
    }
}

/// A part as shown: checked when read, and made printable and bounded once more here, so
/// that a value set by hand can never reach a terminal as anything but plain text.
fn shown(v: &Option<String>) -> String {
    match v {
        Some(v) => bounded(&printable(v), MAX_VALUE).into_owned(),
        None => "unknown".to_string(),
    }
}

/// A value a build writes: 1 to 64 ASCII letters, digits, `.`, `_`, `+` and `-`.
fn is_value(v: &str) -> bool {
    (1..=MAX_VALUE).contains(&v.len())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_reads_back_what_it_wrote_after_the_settings() {
        let s = Software::of_build("0.1.0", "f3fb608-modified", "aarch64-apple-darwin");
        let detail = format!(
            "lease_ms=5 process_ms=0 {} process=42:7:0a-1b:4026531836",
            s.detail()
        );
        assert_eq!(Software::in_detail(&detail), s);
        assert_eq!(s.system(), "macOS aarch64");
        assert_eq!(
            s.line(),
            "leaselab 0.1.0 (f3fb608-modified) on macOS aarch64"
        );
        let unknown = Software::of_build("0.1.0", "unknown", "x86_64-pc-windows-gnu");
        assert_eq!(
            unknown.detail(),
            "leaselab=0.1.0 target=x86_64-pc-windows-gnu"
        );
        assert_eq!(unknown.system(), "Windows x86_64");
        assert_eq!(unknown.commit_shown(), "unknown");
    }

    #[test]
    fn what_an_older_worker_did_not_write_is_unknown() {
        let old = Software::in_detail("lease_ms=5 process_ms=0 leasing=on");
        assert_eq!(old, Software::default());
        assert_eq!(old.line(), "leaselab unknown (unknown) on unknown");
    }

    #[test]
    fn a_value_no_build_writes_is_unknown_never_shown() {
        for bad in [
            "leaselab=0.1.0\u{1b}]0;pwned\u{7}",
            "leaselab=",
            "leaselab=0.1.0 leaselab=9.9.9",
            "leaselab=\u{202e}0.1.0",
            "leaselab=0.1.0;rm",
        ] {
            assert_eq!(Software::in_detail(bad).version, None, "{bad:?}");
        }
        let long = format!("target={}", "x".repeat(MAX_VALUE + 1));
        assert_eq!(Software::in_detail(&long).target, None);
        assert_eq!(
            Software::in_detail("target=riscv64gc-unknown-freebsd").system(),
            "riscv64gc-unknown-freebsd"
        );
    }
}
