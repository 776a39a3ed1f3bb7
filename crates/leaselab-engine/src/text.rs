//! Text the lab did not write (a file, a database row, a flag, a lock file) made fit to
//! print: no control characters, and an over-long value cut to a prefix.

use std::borrow::Cow;

/// Most characters of one value an error or a line quotes (a deep path still fits); a
/// longer one is cut to a prefix and `…`.
pub const MAX_QUOTED: usize = 160;

/// `s` without the control characters a terminal would obey (`ESC]0;…` retitles it,
/// `ESC[2J` clears it, `ESC]52;…` writes the clipboard): a tab, a line break or a carriage
/// return becomes a space, so words stay apart; every other one is dropped, as the
/// dashboard's cells drop them. The result is one line.
pub fn printable(s: &str) -> Cow<'_, str> {
    if s.chars().all(is_printable) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .filter_map(|c| match c {
                '\t' | '\n' | '\r' => Some(' '),
                c if !is_printable(c) => None,
                c => Some(c),
            })
            .collect(),
    )
}

/// Bidirectional controls, which reorder what a terminal shows without being seen.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// True when `c` may be shown as it is: no control character, no bidirectional control.
pub fn is_printable(c: char) -> bool {
    !c.is_control() && !is_bidi_control(c)
}

/// `s` cut to its first `max` characters and `…` when it is longer.
pub fn bounded(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", &s[..at])),
        None => Cow::Borrowed(s),
    }
}

/// A value as an error quotes it: printable, and at most [`MAX_QUOTED`] characters.
pub fn quoted(s: &str) -> String {
    bounded(&printable(s), MAX_QUOTED).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_dropped_and_line_breaks_become_spaces() {
        let hostile = "Evil \u{1b}]0;pwned\u{7} \u{1b}[2J\u{9b}31m title\nnext\tcol\r";
        assert_eq!(printable(hostile), "Evil ]0;pwned [2J31m title next col ");
        assert!(matches!(printable("plain ✓ text"), Cow::Borrowed(_)));
        assert_eq!(printable("abc\u{202e}def"), "abcdef");
    }

    #[test]
    fn a_long_value_is_cut_to_a_prefix_with_an_ellipsis() {
        let long = "é".repeat(MAX_QUOTED + 1);
        let q = quoted(&long);
        assert_eq!(q.chars().count(), MAX_QUOTED + 1);
        assert!(q.ends_with("é…"), "{q}");
        assert_eq!(quoted(&"é".repeat(MAX_QUOTED)), "é".repeat(MAX_QUOTED));
        assert_eq!(bounded("abc", 0), "…");
    }
}
