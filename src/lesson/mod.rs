//! Lessons as data: a TOML file sets up an outbox, then walks through it step by step.
//! Each step does a few things to the engine (`do`), explains them (`say`) and states what
//! must hold afterwards (`expect`). The same file is stepped in the dashboard and checked
//! headless, so a lesson's narration is proven true in CI.

pub mod format;
pub mod parser;
pub mod perform;
pub mod reference;
pub mod runner;

use std::path::Path;

pub use format::{
    Action, Choice, Condition, Expect, Figure, Lesson, MessageSel, Quiz, Setup, Step,
};
pub use parser::parse;
pub use perform::Performer;
pub use runner::{check_lesson, Check, LessonRunner, Session, StepReport};

/// A lesson shipped inside the binary: its name, the file it came from and its text.
pub struct BuiltIn {
    pub name: &'static str,
    pub path: &'static str,
    pub text: &'static str,
}

/// The built-in lessons, in teaching order.
pub const BUILT_INS: &[BuiltIn] = &[
    BuiltIn {
        name: "no-claim",
        path: "assets/lessons/no-claim.toml",
        text: include_str!("../../assets/lessons/no-claim.toml"),
    },
    BuiltIn {
        name: "atomic-claim",
        path: "assets/lessons/atomic-claim.toml",
        text: include_str!("../../assets/lessons/atomic-claim.toml"),
    },
    BuiltIn {
        name: "lease-expiry",
        path: "assets/lessons/lease-expiry.toml",
        text: include_str!("../../assets/lessons/lease-expiry.toml"),
    },
    BuiltIn {
        name: "zombie-worker",
        path: "assets/lessons/zombie-worker.toml",
        text: include_str!("../../assets/lessons/zombie-worker.toml"),
    },
    BuiltIn {
        name: "slow-job",
        path: "assets/lessons/slow-job.toml",
        text: include_str!("../../assets/lessons/slow-job.toml"),
    },
    BuiltIn {
        name: "poison-message",
        path: "assets/lessons/poison-message.toml",
        text: include_str!("../../assets/lessons/poison-message.toml"),
    },
    BuiltIn {
        name: "one-writer",
        path: "assets/lessons/one-writer.toml",
        text: include_str!("../../assets/lessons/one-writer.toml"),
    },
];

/// The lesson `leaselab` opens with no arguments.
pub const DEFAULT_LESSON: &str = "atomic-claim";

/// A built-in lesson by name.
pub fn built_in(name: &str) -> Option<Lesson> {
    let b = BUILT_INS.iter().find(|b| b.name == name)?;
    // Built-ins are checked by the tests; a broken one is a bug, not bad input.
    Some(parse(b.name, b.path, b.text).unwrap_or_else(|e| panic!("{e}")))
}

/// A built-in lesson's file, as shipped: what `lesson NAME --print` writes.
pub fn built_in_text(name: &str) -> Option<&'static str> {
    BUILT_INS.iter().find(|b| b.name == name).map(|b| b.text)
}

/// Where a lesson came from, as a user can find it: `built in`, or the file's path.
pub fn source(lesson: &Lesson) -> String {
    let built_in = BUILT_INS
        .iter()
        .any(|b| b.name == lesson.name && b.path == lesson.path);
    if built_in {
        "built in".to_string()
    } else {
        lesson.path.clone()
    }
}

/// The largest lesson file leaselab reads, in bytes (the built-ins are under 4 KiB).
pub const MAX_LESSON_BYTES: u64 = 1024 * 1024;

/// A built-in name or a path to a lesson file. The error is one line: `FILE:LINE: what`
/// for a bad file, or what was not found.
pub fn load(name_or_path: &str) -> Result<Lesson, String> {
    if let Some(l) = built_in(name_or_path) {
        return Ok(l);
    }
    let path = Path::new(name_or_path);
    // A name with a folder or an extension is a file the user meant, not a lesson name.
    let looks_like_a_file = name_or_path.contains('/') || name_or_path.ends_with(".toml");
    if looks_like_a_file && !path.exists() {
        return Err(format!("{name_or_path}: no such file"));
    }
    if !path.exists() {
        let names: Vec<&str> = BUILT_INS.iter().map(|b| b.name).collect();
        return Err(format!(
            "unknown lesson '{name_or_path}'; built-in lessons: {} (or give the path of a lesson file)",
            names.join(", ")
        ));
    }
    let text = read_lesson_file(path)
        .map_err(|e| format!("{name_or_path}: cannot read the lesson: {e}"))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name_or_path.to_string());
    parse(&name, name_or_path, &text)
}

/// The text of a lesson file: a regular file (a symlink is followed) of at most
/// [`MAX_LESSON_BYTES`]. A fifo, a device or a folder is refused without waiting on it.
fn read_lesson_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Opened without blocking, so a fifo with no writer cannot hold the open; what the
    // descriptor is, is then asked of the descriptor itself, not of the name.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a lesson is a TOML file)".into());
    }
    if meta.len() > MAX_LESSON_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_LESSON_BYTES} a lesson may hold",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    // A file that grows while it is read still stops at the limit.
    file.take(MAX_LESSON_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_LESSON_BYTES {
        return Err(format!(
            "more than the {MAX_LESSON_BYTES} bytes a lesson may hold"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}
