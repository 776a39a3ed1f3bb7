//! What the real binary prints of text it did not write (a lesson file, a file name, a
//! flag's value): never a control character a terminal would obey, and never more than a
//! bounded prefix of an over-long value.

use std::path::Path;

mod support;

use leaselab::text::MAX_QUOTED;
use support::{leaselab, stderr, stdout};

/// The control characters in `text`, line breaks aside.
fn controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

/// A lesson whose every free text drives a terminal: its title retitles and clears it,
/// its summary colours it, a quiz answer writes the clipboard (OSC 52).
const HOSTILE_LESSON: &str = r#"format_version = 1
title = "Evil \u001b]0;pwned\u0007 \u001b[2J title"
summary = "s \u001b[31m red \u009b2J"
[setup]
workers = 2
messages = 1
[[step]]
ask = "Who owns it? \u001b[2J"
choices = [
  { answer = "Worker-A \u001b]52;c;aGVsbG8=\u0007", expect = "PAY-001 owner Worker-A" },
  { answer = "nobody", expect = "PAY-001 owner none" },
]
do = ["claim Worker-A PAY-001"]
say = "claimed \u001b[2J"
expect = ["PAY-001 status Processing"]
"#;

#[test]
fn a_lessons_title_and_quiz_answers_reach_the_check_without_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evil.toml"), HOSTILE_LESSON).unwrap();
    let o = leaselab(&["lesson", "evil.toml", "--check"], dir.path());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(controls(&out).is_empty(), "{:?}", out);
    // The text itself stays, minus the codes' introducers.
    assert!(out.contains("Evil ]0;pwned [2J title"), "{out}");
    assert!(out.contains("answer 1: Worker-A ]52;c;aGVsbG8="), "{out}");
}

#[test]
fn names_a_lesson_file_quotes_in_its_errors_reach_stderr_without_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let bad = "format_version = 1\ntitle = \"t\"\n[setup]\nmessages = 1\n[[step]]\n\
               do = [\"claim Worker-A \\u001b[2JPAY-001\", \"claim \\u001b]0;x\\u0007W\"]\n\
               say = \"x\"\nexpect = [\"ledger \\u001b[2Jfoo 1\"]\n";
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let o = leaselab(&["lesson", "bad.toml", "--check"], dir.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(controls(&err).is_empty(), "{err:?}");
    assert!(
        err.contains("bad.toml:6: '[2JPAY-001' is not a message"),
        "{err}"
    );
    // The TOML reader's own messages quote the file too.
    std::fs::write(dir.path().join("key.toml"), "\"a\\u001b[2Jb\" = 1\n").unwrap();
    let o = leaselab(&["lesson", "key.toml", "--check"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(controls(&stderr(&o)).is_empty(), "{:?}", stderr(&o));
}

#[test]
fn a_file_name_with_escape_codes_is_printed_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let name = "ev\u{1b}]0;x\u{7}il.toml";
    std::fs::write(dir.path().join(name), HOSTILE_LESSON).unwrap();
    for args in [
        vec!["lesson", name, "--check"],
        vec!["lesson", "lease-expiry", "--shot", "s\u{1b}[2J.svg"],
        vec![
            "explore",
            "--workers",
            "1",
            "--messages",
            "1",
            "--save-lesson",
            "s\u{1b}[2J.toml",
        ],
        vec!["run", "outbox-leasing", "--db", "r\u{1b}[2J.db"],
        vec!["replay", "gone\u{1b}[2J.db"],
    ] {
        let o = leaselab(&args, dir.path());
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(
            !out.is_empty() || !err.is_empty(),
            "{args:?} printed nothing"
        );
        assert!(controls(&out).is_empty(), "{args:?}: {out:?}");
        assert!(controls(&err).is_empty(), "{args:?}: {err:?}");
    }
}

/// The one line of an error that quotes a 100,000-character value: short, with the
/// value's prefix and an ellipsis.
fn assert_bounded_error(args: &[&str], dir: &Path, long: &str, code: i32) {
    let o = leaselab(args, dir);
    let err = stderr(&o);
    let shown: Vec<String> = args.iter().map(|a| a.chars().take(20).collect()).collect();
    assert_eq!(
        o.status.code(),
        Some(code),
        "{shown:?}: {}",
        &err[..err.len().min(300)]
    );
    assert_eq!(err.lines().count(), 1, "{shown:?}");
    assert!(err.len() < 600, "{shown:?}: {} bytes", err.len());
    // A prefix of the value, cut where the quote is bounded.
    let cut = err
        .find('…')
        .unwrap_or_else(|| panic!("{shown:?}: no ellipsis: {err}"));
    assert!(
        cut >= 60 && long[..MAX_QUOTED].contains(&err[cut - 60..cut]),
        "{shown:?}: {err}"
    );
}

#[test]
fn an_over_long_value_is_quoted_as_a_bounded_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(100_000);
    let d = dir.path();
    let db = d.join("w.db").display().to_string();
    let name_eq = format!("--name={long}");
    assert_bounded_error(&["worker", "--name", &long, "--db", &db], d, &long, 2);
    let o = leaselab(&["worker", "--name", &long, "--db", &db], d);
    let want = format!(
        "leaselab: --name '{}…' is longer than 32 characters\n",
        &long[..MAX_QUOTED]
    );
    assert_eq!(stderr(&o), want);
    assert_bounded_error(&["worker", &name_eq, "--db", &db], d, &long, 2);
    // Spaces and line breaks do not split the value, nor the error's one line.
    let spaced = "a b\n".repeat(25_000);
    let o = leaselab(&["worker", "--name", &spaced, "--db", &db], d);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{}", &err[..err.len().min(300)]);
    assert!(
        err.len() < 600 && err.contains("'a b a b") && err.contains('…'),
        "{err}"
    );
    assert_bounded_error(&["run", &long], d, &long, 2);
    assert_bounded_error(&["lesson", &long], d, &long, 2);
    assert_bounded_error(&["lesson", &long, "--print"], d, &long, 2);
    assert_bounded_error(&["run", "soak", "--workers", &long], d, &long, 2);
    assert_bounded_error(&["explore", "--mode", &long], d, &long, 2);
    let path = format!("/nonexistent/{long}");
    assert_bounded_error(&["replay", &path], d, &path, 2);
    assert_bounded_error(&["run", "soak", "--db", &path], d, &path, 2);
    // A word of a lesson file, and a key the TOML reader quotes.
    let action = format!("format_version = 1\ntitle = \"t\"\n[[step]]\ndo = [\"claim Worker-A {long}\"]\nsay = \"s\"\n");
    std::fs::write(d.join("long.toml"), action).unwrap();
    assert_bounded_error(&["lesson", "long.toml", "--check"], d, &long, 2);
    std::fs::write(d.join("key.toml"), format!("{long} = 1\n")).unwrap();
    assert_bounded_error(&["lesson", "key.toml", "--check"], d, &long, 2);
}

#[test]
fn a_picture_of_a_title_with_characters_xml_forbids_is_still_xml() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = HOSTILE_LESSON.replace(
        "Evil",
        "Evil \\uFFFE \\uFFFF \\u0001 \\u0008 \\uD7FF \\U0001F600",
    );
    std::fs::write(dir.path().join("xml.toml"), lesson).unwrap();
    let o = leaselab(
        &["lesson", "xml.toml", "--shot", "x.svg", "--step", "0"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("x.svg")).unwrap();
    if let Err(e) = roxmltree::Document::parse(&svg) {
        panic!("not XML: {e}");
    }
    // The title is there, each forbidden character in it shown as U+FFFD.
    assert!(svg.contains("Evil \u{FFFD} \u{FFFD}"), "{svg}");
    assert!(
        svg.contains('\u{D7FF}') && svg.contains('\u{1F600}'),
        "{svg}"
    );
}
