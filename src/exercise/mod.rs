//! The built-in exercises (`assets/exercises`: a starter that is wrong in an instructive
//! way and a model solution each), reading a student's exercise file within bounds, and
//! each exercise's check (`check`): a short schedule of workers on a scratch database that
//! the starter fails and the solution passes.

pub mod check;

use std::path::Path;

use crate::engine::student::{Exercise, ExerciseError, MAX_FILE_BYTES};

/// A built-in exercise: its name, its starter file and its model solution.
pub struct BuiltIn {
    pub name: &'static str,
    pub start: &'static str,
    pub solution: &'static str,
}

/// The built-in exercises, in teaching order.
pub const BUILT_INS: [BuiltIn; 4] = [
    BuiltIn {
        name: "one-owner",
        start: include_str!("../../assets/exercises/one-owner.toml"),
        solution: include_str!("../../assets/exercises/one-owner.solution.toml"),
    },
    BuiltIn {
        name: "stale-finalize",
        start: include_str!("../../assets/exercises/stale-finalize.toml"),
        solution: include_str!("../../assets/exercises/stale-finalize.solution.toml"),
    },
    BuiltIn {
        name: "takeover",
        start: include_str!("../../assets/exercises/takeover.toml"),
        solution: include_str!("../../assets/exercises/takeover.solution.toml"),
    },
    BuiltIn {
        name: "heartbeat",
        start: include_str!("../../assets/exercises/heartbeat.toml"),
        solution: include_str!("../../assets/exercises/heartbeat.solution.toml"),
    },
];

/// The built-in exercise called `name`.
pub fn built_in(name: &str) -> Option<&'static BuiltIn> {
    BUILT_INS.iter().find(|b| b.name == name)
}

/// The built-in names, comma-separated (for an error that lists them).
pub fn names() -> String {
    BUILT_INS.map(|b| b.name).join(", ")
}

impl BuiltIn {
    /// The starter, parsed (named as its asset file).
    pub fn starter(&self) -> Exercise {
        let file = format!("assets/exercises/{}.toml", self.name);
        Exercise::parse(self.start, &file).expect("a built-in starter loads")
    }

    /// The model solution, parsed.
    pub fn model(&self) -> Exercise {
        let file = format!("assets/exercises/{}.solution.toml", self.name);
        Exercise::parse(self.solution, &file).expect("a built-in solution loads")
    }
}

/// Why a student's file was not loaded: one line each.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read the exercise: {cause}")]
    Unreadable {
        file: String,
        #[source]
        cause: std::io::Error,
    },
    #[error("{file}: not a regular file (an exercise is a TOML file)")]
    NotAFile { file: String },
    #[error("{file}: more than the {MAX_FILE_BYTES} bytes an exercise file may hold")]
    TooLarge { file: String },
    #[error("{file}: not UTF-8 text")]
    NotUtf8 { file: String },
    #[error(transparent)]
    Exercise(#[from] ExerciseError),
}

/// A student's exercise file: a regular file of at most [`MAX_FILE_BYTES`], parsed and
/// every statement checked under the sandbox. A fifo or a device is refused unread.
pub fn load_file(path: &Path) -> Result<Exercise, LoadError> {
    use std::io::Read;
    let file = crate::text::quoted(&path.display().to_string());
    let unreadable = |cause| LoadError::Unreadable {
        file: file.clone(),
        cause,
    };
    let opened = crate::engine::platform::files::open_to_read(path).map_err(unreadable)?;
    let meta = opened.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(LoadError::NotAFile { file });
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(LoadError::TooLarge { file });
    }
    let text = String::from_utf8(bytes).map_err(|_| LoadError::NotUtf8 { file: file.clone() })?;
    Ok(Exercise::parse(&text, &path.display().to_string())?)
}
