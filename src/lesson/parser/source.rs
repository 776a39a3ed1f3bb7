//! A lesson file's text and where each of its lines starts: what every error quotes.

use std::ops::Range;

use super::error::Mistake;

/// Where each line of a text starts, so a byte offset's line is a binary search, not a
/// scan from the top (a lesson names the line of every step and expectation).
pub(super) struct LineIndex {
    starts: Vec<usize>,
    /// Line starts compared so far (the tests hold the parse to a bound on them).
    #[cfg(test)]
    pub(super) probes: std::cell::Cell<usize>,
}

impl LineIndex {
    pub(super) fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        LineIndex {
            starts,
            #[cfg(test)]
            probes: std::cell::Cell::new(0),
        }
    }

    /// The 1-based line holding byte `offset` (the last line for an offset past the end).
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|s| {
                #[cfg(test)]
                self.probes.set(self.probes.get() + 1);
                *s <= offset
            })
            .max(1)
    }
}

/// A lesson file being read: its path and text, and where its lines start.
pub(super) struct Parser<'a> {
    pub(super) path: &'a str,
    pub(super) text: &'a str,
    pub(super) lines: LineIndex,
}

impl<'a> Parser<'a> {
    pub(super) fn new(path: &'a str, text: &'a str) -> Parser<'a> {
        Parser {
            path,
            text,
            lines: LineIndex::new(text),
        }
    }

    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.lines.line_of(offset)
    }

    /// A mistake at the line of `span`.
    pub(super) fn err(&self, span: Range<usize>, msg: &str) -> Mistake {
        self.mistake(self.line_of(span.start), msg.to_string())
    }

    pub(super) fn mistake(&self, line: usize, what: String) -> Mistake {
        Mistake {
            path: self.path.to_string(),
            line,
            what,
        }
    }
}
