//! A source file as the structure checks read it: every line, test modules and comments
//! aside, string and character literals blanked so that nothing inside them looks like code.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, in a stable order.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the folder is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments removed and the insides of string and character literals
/// blanked, line breaks kept so that line numbers still hold.
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let next = |n: usize| rest.get(n).copied();
        i += if rest.starts_with(&['/', '/']) {
            skip_line(rest)
        } else if rest.starts_with(&['/', '*']) {
            skip_block(rest, &mut out)
        } else if rest[0] == '"' || (rest[0] == 'b' && next(1) == Some('"')) {
            skip_string(rest, &mut out)
        } else if rest[0] == 'r' && matches!(next(1), Some('"' | '#')) && !ident_before(&chars, i) {
            skip_raw_string(rest, &mut out)
        } else if rest[0] == '\'' {
            skip_char(rest, &mut out)
        } else {
            out.push(rest[0]);
            1
        };
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

fn skip_line(rest: &[char]) -> usize {
    rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())
}

/// A block comment, nested ones included; its line breaks are kept.
fn skip_block(rest: &[char], out: &mut String) -> usize {
    let (mut depth, mut i) = (0usize, 0);
    while i < rest.len() {
        if rest[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if rest[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            if rest[i] == '\n' {
                out.push('\n');
            }
            i += 1;
        }
    }
    i
}

fn skip_string(rest: &[char], out: &mut String) -> usize {
    let mut i = if rest[0] == 'b' { 2 } else { 1 };
    while i < rest.len() && rest[i] != '"' {
        if rest[i] == '\n' {
            out.push('\n');
        }
        i += if rest[i] == '\\' { 2 } else { 1 };
    }
    out.push_str("\"\"");
    (i + 1).min(rest.len())
}

fn skip_raw_string(rest: &[char], out: &mut String) -> usize {
    let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
    if rest.get(1 + hashes) != Some(&'"') {
        out.push('r');
        return 1;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = 2 + hashes;
    let end = (body..rest.len())
        .find(|&i| rest[i..].starts_with(&close))
        .unwrap_or(rest.len());
    out.extend(rest[body..end].iter().filter(|&&c| c == '\n'));
    out.push_str("\"\"");
    (end + close.len()).min(rest.len())
}

/// A character literal (`'x'`, `'\n'`, `'\u{1F600}'`) is blanked; a lifetime is kept.
fn skip_char(rest: &[char], out: &mut String) -> usize {
    let len = if rest.get(1) == Some(&'\\') {
        rest[2..].iter().position(|&c| c == '\'').map(|p| p + 3)
    } else if rest.get(2) == Some(&'\'') {
        Some(3)
    } else {
        None
    };
    match len {
        Some(n) => {
            out.push_str("' '");
            n
        }
        None => {
            out.push('\'');
            1
        }
    }
}

/// The code's lines with each test module (`#[cfg(test)]` before `mod NAME {`) removed up
/// to its closing brace; any other `#[cfg(test)]` item is read like the rest.
pub fn without_test_modules(code: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    let mut kept = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let opens_test_module = lines[i].trim() == "#[cfg(test)]"
            && lines.get(i + 1).is_some_and(|l| {
                let t = l.trim_start();
                (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.ends_with('{')
            });
        if !opens_test_module {
            kept.push(lines[i].to_string());
            i += 1;
            continue;
        }
        let mut depth = 0i64;
        let mut j = i + 1;
        while j < lines.len() {
            depth += lines[j].matches('{').count() as i64 - lines[j].matches('}').count() as i64;
            j += 1;
            if depth <= 0 {
                break;
            }
        }
        kept.extend(std::iter::repeat_n(String::new(), j - i));
        i = j;
    }
    kept
}

/// A file's lines as the structure checks read them.
pub fn checked_lines(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("source file is readable");
    without_test_modules(&code_only(&text))
}

#[test]
fn comments_and_literals_are_blanked_and_lifetimes_kept() {
    let code = code_only(
        "let a = \"crate::x // y\"; // crate::z\nlet b = r#\"super::q\"#; /* self::w\n */ fn f<'a>(c: &'a str) -> char { '}' }\n",
    );
    assert!(!code.contains("crate::"), "{code}");
    assert!(
        !code.contains("super::") && !code.contains("self::"),
        "{code}"
    );
    assert!(code.contains("<'a>") && !code.contains("'}'"), "{code}");
    assert_eq!(code.lines().count(), 3, "{code}");
}

#[test]
fn a_test_module_is_left_out_but_a_test_field_is_read() {
    let lines = without_test_modules(
        "struct S {\n    #[cfg(test)]\n    probes: u8,\n}\nfn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { if x { } }\n}\nfn b() {}\n",
    );
    let text = lines.join("\n");
    assert!(text.contains("probes") && text.contains("fn a") && text.contains("fn b"));
    assert!(!text.contains("fn t"), "{text}");
    assert_eq!(lines.len(), 10);
}
