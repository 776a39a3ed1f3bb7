//! Lesson files that are not what they claim to be: a fifo, a device behind a symlink, a
//! file past the size limit. Each is refused in one line, at once, without reading it;
//! a lesson at the size limit, with as many steps as fit, is read.

mod support;

use std::path::Path;

use leaselab::lesson::{self, MAX_LESSON_BYTES};
use support::{leaselab_bounded, stderr, stdout};

/// `lesson FILE --check` and the dashboard's `lesson FILE` refuse `file` in one line,
/// exit 2, and say why.
fn refused(dir: &Path, file: &Path, says: &str) {
    let file = file.to_str().unwrap();
    for args in [vec!["lesson", file, "--check"], vec!["lesson", file]] {
        let o = leaselab_bounded(&args, dir);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.starts_with(&format!("{file}: ")), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("lesson.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    refused(dir.path(), &fifo, "not a regular file");
}

#[test]
fn a_symlink_to_a_device_is_followed_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, target) in [("zero.toml", "/dev/zero"), ("null.toml", "/dev/null")] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(target, &link).unwrap();
        refused(dir.path(), &link, "not a regular file");
    }
    // A folder is not a lesson either.
    let folder = dir.path().join("folder.toml");
    std::fs::create_dir(&folder).unwrap();
    refused(dir.path(), &folder, "not a regular file");
}

/// A lesson of as many steps as fit in `bytes`, each one action and one expectation.
fn lesson_of_size(bytes: u64) -> (String, usize) {
    let head = "format_version = 1\ntitle = \"many\"\n";
    let step = "[[step]]\ndo = [\"advance 1\"]\nsay = \"x\"\nexpect = [\"ledger claims 0\"]\n";
    let steps = (bytes as usize - head.len()) / step.len();
    let mut text = format!("{head}{}", step.repeat(steps));
    // Padded with a comment to the exact size.
    let pad = bytes as usize - text.len();
    if pad > 0 {
        text.push_str(&format!("#{}", "-".repeat(pad - 1)));
    }
    assert_eq!(text.len() as u64, bytes);
    (text, steps)
}

#[test]
fn a_file_past_the_size_limit_is_refused_before_it_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::write(&big, lesson_of_size(MAX_LESSON_BYTES + 1).0).unwrap();
    refused(
        dir.path(),
        &big,
        &format!(
            "{} bytes, more than the {MAX_LESSON_BYTES}",
            MAX_LESSON_BYTES + 1
        ),
    );
}

#[test]
fn a_lesson_at_the_size_limit_with_every_step_it_holds_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.toml");
    let (text, steps) = lesson_of_size(MAX_LESSON_BYTES);
    std::fs::write(&full, text).unwrap();
    let l = lesson::load(full.to_str().unwrap()).expect("a lesson at the limit");
    assert!(steps > 15_000, "{steps}");
    assert_eq!(l.steps.len(), steps);
    // The last expectation's line is right: found by the line index, not a count.
    assert_eq!(l.steps[steps - 1].expects[0].line, 2 + 4 * steps);
}

/// Each refusal of a lesson file is a type that keeps its cause, and still one line: what
/// the file is not, the bytes that are not text, the TOML reader's own error, or the
/// mistakes the checks found, each with its line.
#[test]
fn a_refused_lesson_file_keeps_its_cause() {
    use lesson::{LoadError, ParseError, ReadError};
    use std::error::Error;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::create_dir(at("folder.toml")).unwrap();
    let e = lesson::load(&at("folder.toml")).unwrap_err();
    assert!(
        matches!(
            &e,
            LoadError::Unreadable {
                cause: ReadError::NotAFile,
                ..
            }
        ),
        "{e:?}"
    );

    std::fs::write(at("latin1.toml"), b"title = \"caf\xe9\"\n").unwrap();
    let e = lesson::load(&at("latin1.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: cannot read the lesson: not UTF-8 text",
            at("latin1.toml")
        )
    );
    let utf8 = e
        .source()
        .and_then(Error::source)
        .map(|c| c.is::<std::string::FromUtf8Error>());
    assert_eq!(utf8, Some(true), "{e:?}");

    std::fs::write(at("broken.toml"), "format_version = 1\ntitle = \n").unwrap();
    let e = lesson::load(&at("broken.toml")).unwrap_err();
    let parse = e.source().and_then(|c| c.downcast_ref::<ParseError>());
    assert_eq!(parse.map(ParseError::line), Some(2), "{e:?}");
    let toml = parse
        .and_then(Error::source)
        .map(|c| c.is::<toml::de::Error>());
    assert_eq!(toml, Some(true), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}:2: ", at("broken.toml"))),
        "{e}"
    );

    let text =
        "format_version = 1\ntitle = \"t\"\n[[step]]\ndo = [\"advance soon\"]\nsay = \"x\"\n\
                [[step]]\ndo = [\"explode\"]\nsay = \"y\"\n";
    let e = lesson::parse("t", "t.toml", text).unwrap_err();
    let found: Vec<(usize, &str)> = e
        .mistakes()
        .iter()
        .map(|m| (m.line, m.what.as_str()))
        .collect();
    assert_eq!(found.len(), 2, "{e}");
    assert_eq!(found[0].0, 4);
    assert!(
        found[0].1.starts_with("bad number 'soon' for advance"),
        "{e}"
    );
    assert_eq!(found[1].0, 7);
    assert_eq!(e.to_string().lines().count(), 2, "{e}");
}
