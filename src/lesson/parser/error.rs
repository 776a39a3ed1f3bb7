//! Why a lesson file could not be read: the TOML reader's refusal, or every mistake the
//! checks found, each at its line. A teacher sees `FILE:LINE: what`, one mistake a line.

use std::fmt;

use crate::engine::text;
use crate::lesson::format::MAX_REPORTED_ERRORS;

/// One mistake in a lesson file: where it is and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: {what}")]
pub struct Mistake {
    /// The file as the user named it.
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub what: String,
}

/// A lesson file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not TOML, or a key or table the format does not have.
    #[error("{path}:{line}: {}", toml_message(cause.message()))]
    Toml {
        path: String,
        line: usize,
        #[source]
        cause: toml::de::Error,
    },
    /// What the checks found wrong, in file order; never empty.
    #[error("{}", Reported(.0))]
    Mistakes(Vec<Mistake>),
}

impl ParseError {
    /// The line of the first thing wrong.
    pub fn line(&self) -> usize {
        match self {
            ParseError::Toml { line, .. } => *line,
            ParseError::Mistakes(m) => m.first().map_or(1, |m| m.line),
        }
    }

    /// Every mistake the checks found (none for a file that is not TOML).
    pub fn mistakes(&self) -> &[Mistake] {
        match self {
            ParseError::Toml { .. } => &[],
            ParseError::Mistakes(m) => m,
        }
    }
}

impl From<Mistake> for ParseError {
    fn from(m: Mistake) -> Self {
        ParseError::Mistakes(vec![m])
    }
}

/// The TOML reader's message on one line, each value it quotes (a key, a string of the
/// file) cut to a prefix: the file may hold a megabyte on one line.
fn toml_message(msg: &str) -> String {
    let words: Vec<String> = text::printable(msg.trim())
        .split(' ')
        .map(|w| text::bounded(w, text::MAX_QUOTED).into_owned())
        .collect();
    text::bounded(&words.join(" "), 4 * text::MAX_QUOTED).into_owned()
}

/// Mistakes, one per line, at most [`MAX_REPORTED_ERRORS`] of them; the rest are counted.
struct Reported<'a>(&'a [Mistake]);

impl fmt::Display for Reported<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.0[..self.0.len().min(MAX_REPORTED_ERRORS)];
        for (i, m) in shown.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{m}")?;
        }
        if self.0.len() > MAX_REPORTED_ERRORS {
            let more = self.0.len() - MAX_REPORTED_ERRORS;
            write!(f, "\n... and {more} more mistakes")?;
        }
        Ok(())
    }
}
