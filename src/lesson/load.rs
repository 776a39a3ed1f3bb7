//! Finding a lesson by its built-in name or its file's path, and reading that file within
//! bounds: a fifo, a device, a folder or an endless file is refused without waiting on it.

use std::path::Path;

use super::parser::{parse, ParseError};
use super::{built_in, Lesson, BUILT_INS};

/// The largest lesson file leaselab reads, in bytes (the built-ins are under 4 KiB).
pub const MAX_LESSON_BYTES: u64 = 1024 * 1024;

/// Why no lesson was loaded. Each is one line but a bad file's mistakes, one a line.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A name with a folder or a `.toml` ending names a file that is not there.
    #[error("{0}: no such file")]
    NoSuchFile(String),
    /// Neither a built-in lesson's name nor a file.
    #[error(
        "unknown lesson '{name}'; built-in lessons: {} (or give the path of a lesson file)",
        built_in_names()
    )]
    Unknown { name: String },
    #[error("{name}: cannot read the lesson: {cause}")]
    Unreadable {
        name: String,
        #[source]
        cause: ReadError,
    },
    #[error("{0}")]
    Parse(#[from] ParseError),
}

/// Why a lesson file's text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file (a lesson is a TOML file)")]
    NotAFile,
    #[error("{0} bytes, more than the {MAX_LESSON_BYTES} a lesson may hold")]
    TooLarge(u64),
    /// The file grew past the limit while it was read.
    #[error("more than the {MAX_LESSON_BYTES} bytes a lesson may hold")]
    Grew,
    #[error("not UTF-8 text")]
    NotUtf8(#[from] std::string::FromUtf8Error),
}

fn built_in_names() -> String {
    let names: Vec<&str> = BUILT_INS.iter().map(|b| b.name).collect();
    names.join(", ")
}

/// A built-in name or a path to a lesson file. The error is one line: `FILE:LINE: what`
/// for a bad file, or what was not found.
pub fn load(name_or_path: &str) -> Result<Lesson, LoadError> {
    if let Some(l) = built_in(name_or_path) {
        return Ok(l);
    }
    let path = Path::new(name_or_path);
    // A name with a folder or an extension is a file the user meant, not a lesson name.
    let looks_like_a_file = name_or_path.contains('/') || name_or_path.ends_with(".toml");
    if looks_like_a_file && !path.exists() {
        return Err(LoadError::NoSuchFile(name_or_path.to_string()));
    }
    if !path.exists() {
        return Err(LoadError::Unknown {
            name: name_or_path.to_string(),
        });
    }
    let text = read_lesson_file(path).map_err(|cause| LoadError::Unreadable {
        name: name_or_path.to_string(),
        cause,
    })?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name_or_path.to_string());
    Ok(parse(&name, name_or_path, &text)?)
}

/// The text of a lesson file: a regular file (a symlink is followed) of at most
/// [`MAX_LESSON_BYTES`]. A fifo, a device or a folder is refused without waiting on it.
fn read_lesson_file(path: &Path) -> Result<String, ReadError> {
    use std::io::Read;
    // Opened without blocking, so a fifo with no writer cannot hold the open; what the
    // descriptor is, is then asked of the descriptor itself, not of the name.
    let file = crate::engine::platform::files::open_to_read(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > MAX_LESSON_BYTES {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    // A file that grows while it is read still stops at the limit.
    file.take(MAX_LESSON_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_LESSON_BYTES {
        return Err(ReadError::Grew);
    }
    Ok(String::from_utf8(bytes)?)
}
