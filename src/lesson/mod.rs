//! Lessons as data: a TOML file sets up an outbox, then walks through it step by step.
//! Each step does a few things to the engine (`do`), explains them (`say`) and states what
//! must hold afterwards (`expect`). The same file is stepped in the dashboard and checked
//! headless, so a lesson's narration is proven true in CI.

pub mod format;
pub mod runner;

use std::path::Path;

pub use format::{parse, Action, Condition, Expect, Figure, Lesson, MessageSel, Setup, Step};
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

/// A built-in name or a path to a lesson file. The error is one line: `FILE:LINE: what`
/// for a bad file, or what was not found.
pub fn load(name_or_path: &str) -> Result<Lesson, String> {
    if let Some(l) = built_in(name_or_path) {
        return Ok(l);
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        let names: Vec<&str> = BUILT_INS.iter().map(|b| b.name).collect();
        return Err(format!(
            "unknown lesson '{name_or_path}'; built-in lessons: {} (or give the path of a lesson file)",
            names.join(", ")
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{name_or_path}: cannot read the lesson: {e}"))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name_or_path.to_string());
    parse(&name, name_or_path, &text)
}
