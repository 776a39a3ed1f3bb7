//! Lessons as data: a TOML file sets up an outbox, then walks through it step by step.
//! Each step does a few things to the engine (`do`), explains them (`say`) and states what
//! must hold afterwards (`expect`). The same file is stepped in the dashboard and checked
//! headless, so a lesson's narration is proven true in CI.

pub mod error;
pub mod format;
mod load;
pub mod parser;
pub mod perform;
pub mod reference;
pub mod runner;

pub use error::{ActionError, FigureError, RunError};
pub use format::{
    ledger_figure, Action, Choice, Condition, Expect, Figure, LedgerFigure, Lesson, MessageSel,
    Pane, Quiz, Setup, Step, LEDGER_FIGURES, PROCESSED, PROVIDER_CALLS, SIDE_EFFECTS,
};
pub use load::{load, LoadError, ReadError, MAX_LESSON_BYTES};
pub use parser::{parse, Mistake, ParseError};
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
