//! Text that came from outside (a database row, a server's session list) made safe to show:
//! no control character reaches a terminal, and no value is longer than its place.

/// Bidirectional controls, which reorder what a terminal shows without being seen.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// True when `c` may be shown as it is.
pub fn is_printable(c: char) -> bool {
    !c.is_control() && !is_bidi_control(c)
}

/// `s` with every control character dropped, cut to `max` characters (the last one then
/// `…`).
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().filter(|c| is_printable(*c)).enumerate() {
        if n + 1 > max {
            out.pop();
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_dropped_and_long_text_is_cut() {
        assert_eq!(printable("\u{1b}[2JPAY\u{7}-001\u{9b}", 20), "[2JPAY-001");
        assert_eq!(printable("abc\u{202e}def", 20), "abcdef");
        assert_eq!(printable("abcdef", 4), "abc…");
        assert_eq!(printable("abcd", 4), "abcd");
        assert_eq!(printable("", 4), "");
    }
}
