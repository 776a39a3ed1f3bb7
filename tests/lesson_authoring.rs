//! Writing a lesson: `--print` gives a working file, every mistake is reported in one run,
//! one name works for one thing, and the authors' reference is the parser's own tables.

mod support;

use std::path::Path;

use leaselab::lesson::{self, reference};
use support::{leaselab, stderr, stdout};

fn manifest(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn a_printed_lesson_with_three_mistakes_gets_all_three_reported_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["lesson", "lease-expiry", "--print"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text, lesson::built_in_text("lease-expiry").unwrap());
    // Three mistakes in three steps: a worker that does not exist, an unknown action and
    // an unknown ledger figure.
    let broken = text
        .replacen("claim Worker-A PAY-001", "claim Worker-Q PAY-001", 1)
        .replacen("crash Worker-A", "explode Worker-A", 1)
        .replacen("ledger reclaims 1", "ledger reclaimz 1", 1);
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, &broken).unwrap();
    let o = leaselab(&["lesson", "mine.toml", "--check"], dir.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("mine.toml:") && lines[0].contains("unknown worker 'Worker-Q'"),
        "{err}"
    );
    assert!(lines[1].contains("unknown action 'explode'"), "{err}");
    assert!(
        lines[2].contains("unknown ledger figure 'reclaimz'"),
        "{err}"
    );
    // Each names its own line.
    let line_of = |needle: &str| broken.lines().position(|l| l.contains(needle)).unwrap() + 1;
    assert!(
        lines[0].starts_with(&format!("mine.toml:{}:", line_of("Worker-Q"))),
        "{err}"
    );
    assert!(
        lines[1].starts_with(&format!("mine.toml:{}:", line_of("explode"))),
        "{err}"
    );
    assert!(
        lines[2].starts_with(&format!("mine.toml:{}:", line_of("reclaimz"))),
        "{err}"
    );
}

#[test]
fn print_takes_only_a_built_in_and_check_names_a_built_in_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["lesson", "my-own", "--print"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'my-own' is not one"), "{}", stderr(&o));
    let o = leaselab(&["lesson", "zombie-worker", "--check"], dir.path());
    let out = stdout(&o);
    assert!(
        out.starts_with("lesson zombie-worker (built in): "),
        "{out}"
    );
    assert!(!out.contains("assets/"), "{out}");
    let o = leaselab(&["lesson", "lessons/mine.toml", "--check"], dir.path());
    assert_eq!(
        stderr(&o).trim(),
        "leaselab: lessons/mine.toml: no such file"
    );
    let o = leaselab(&["lesson", "zombie", "--check"], dir.path());
    assert!(
        stderr(&o).contains("unknown lesson 'zombie'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn heartbeats_is_one_name_and_a_restarted_worker_is_a_target() {
    let text = r#"format_version = 1
title = "names"
[setup]
heartbeats = false
[[step]]
do = ["claim Worker-A", "crash Worker-A", "restart Worker-A", "claim Worker-A#2 PAY-002", "heartbeat on", "heartbeats off"]
say = "s"
expect = ["PAY-002 owner Worker-A#2"]
"#;
    let l = lesson::parse("names", "names.toml", text).expect("parses");
    assert!(!l.setup.reliability.heartbeats);
    assert_eq!(l.steps[0].actions.len(), 6);
    // The older spelling of the setup key is still read.
    let old = text.replace("heartbeats = false", "heartbeat = false");
    assert!(
        !lesson::parse("names", "names.toml", &old)
            .unwrap()
            .setup
            .reliability
            .heartbeats
    );
}

#[test]
fn the_reference_file_is_the_parsers_own_tables() {
    let file = std::fs::read_to_string(manifest("docs/lesson-reference.md")).unwrap();
    assert_eq!(
        file,
        reference::reference(),
        "docs/lesson-reference.md is out of date: leaselab lessons --reference > docs/lesson-reference.md"
    );
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["lessons", "--reference"], dir.path());
    assert_eq!(stdout(&o), file);
}

/// A lesson of three workers and six payments around one setup line, action and
/// expectation.
fn one(setup: &str, action: &str, expect: &str) -> String {
    format!(
        "format_version = 1\ntitle = \"t\"\n[setup]\nworkers = 3\n{setup}\n[[step]]\ndo = [{}]\nsay = \"s\"\nexpect = [{}]\n",
        if action.is_empty() { String::new() } else { format!("{action:?}") },
        if expect.is_empty() { String::new() } else { format!("{expect:?}") },
    )
}

#[test]
fn every_example_in_the_reference_parses() {
    for e in reference::SETUP_KEYS {
        let text = one(e.example, "", "").replacen("workers = 3\nworkers", "workers", 1);
        lesson::parse("x", "x.toml", &text).unwrap_or_else(|err| panic!("{}: {err}", e.example));
        assert!(e.example.starts_with(e.form), "{}", e.example);
    }
    for e in reference::ACTIONS {
        let text = one("", e.example, "");
        let l = lesson::parse("x", "x.toml", &text)
            .unwrap_or_else(|err| panic!("{}: {err}", e.example));
        assert_eq!(l.steps[0].actions.len(), 1, "{}", e.example);
    }
    for e in reference::EXPECTATIONS {
        let text = one("", "", e.example);
        let l = lesson::parse("x", "x.toml", &text)
            .unwrap_or_else(|err| panic!("{}: {err}", e.example));
        assert_eq!(l.steps[0].expects.len(), 1, "{}", e.example);
    }
}

#[test]
fn the_parser_reads_no_setup_key_or_action_the_reference_leaves_out() {
    // The setup keys serde knows, as its refusal of an unknown one lists them.
    let err = lesson::parse("x", "x.toml", &one("colour = 1", "", ""))
        .unwrap_err()
        .to_string();
    let known: Vec<&str> = err
        .split("expected one of")
        .nth(1)
        .unwrap_or_else(|| panic!("{err}"))
        .split('`')
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !w.is_empty())
        .collect();
    let table: Vec<&str> = reference::SETUP_KEYS.iter().map(|e| e.form).collect();
    for k in &known {
        assert!(
            table.contains(k) || *k == "heartbeat",
            "setup key {k} is not in the reference"
        );
    }
    for k in &table {
        assert!(
            known.contains(k),
            "the reference's {k} is not a setup key: {err}"
        );
    }
    // The parser names its actions from the reference.
    let err = lesson::parse("x", "x.toml", &one("", "explode Worker-A", ""))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&reference::action_verbs().join(", ")), "{err}");
    // Every ledger figure is in the reference.
    let doc = reference::reference();
    for f in lesson::LEDGER_FIGURES {
        assert!(doc.contains(&format!("| `{}`", f.name)), "{}", f.name);
        assert!(doc.contains(&format!("| `{}` |", f.json)), "{}", f.json);
    }
}

#[test]
fn every_ledger_figure_is_in_the_json_report_under_its_key_and_read_by_its_older_word() {
    let dir = tempfile::tempdir().unwrap();
    let out = leaselab(&["run", "lease-expiry", "--json"], dir.path());
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("a JSON report");
    for f in lesson::LEDGER_FIGURES {
        assert!(
            report.get(f.json).is_some_and(|v| v.is_u64()),
            "{}: no {}",
            f.name,
            f.json
        );
        // An expectation names it by its name, or by the one word older files used.
        for words in std::iter::once(f.name).chain(f.older) {
            let text = one("", "claim Worker-A", &format!("ledger {words} 0"));
            let parsed = lesson::parse("x", "x.toml", &text);
            let figure = parsed.map(|l| l.steps[0].expects[0].figure.clone());
            assert_eq!(figure.ok(), Some(lesson::Figure::Ledger(f.name)), "{words}");
        }
    }
    // The story's figures, under the keys the table gives them.
    assert_eq!(report["reclaims"], 1);
    assert_eq!(report["crashes"], 1);
}

#[test]
fn a_ledger_figure_of_many_words_is_said_to_be_unknown_with_the_names_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let text = lesson::built_in_text("lease-expiry").unwrap().replacen(
        "ledger reclaims 1",
        "ledger reclaims after the lease ran out 1",
        1,
    );
    std::fs::write(dir.path().join("mine.toml"), text).unwrap();
    let o = leaselab(&["lesson", "mine.toml", "--check"], dir.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown ledger figure 'reclaims after the lease ran out' (known: claims,"),
        "{err}"
    );
    assert!(
        err.contains("leases lost") && err.contains("dead letters"),
        "{err}"
    );
}

/// A lesson of one step whose one expectation is `expect`, written as a TOML basic string
/// as it stands (its escapes are TOML's: `\u0085`).
fn expecting(expect: &str) -> String {
    format!(
        "format_version = 1\ntitle = \"t\"\n[setup]\nworkers = 2\n[[step]]\n\
         do = [\"claim Worker-A\"]\nsay = \"s\"\nexpect = [\"{expect}\"]\n"
    )
}

#[test]
fn a_ledger_figure_of_two_words_without_its_number_is_said_to_miss_it() {
    for (expect, name) in [
        ("ledger dead letters", "dead letters"),
        ("ledger leases lost", "leases lost"),
        ("ledger claim transactions", "claim transactions"),
        ("ledger   leases \\t lost", "leases lost"),
        ("ledger dead", "dead letters"),
    ] {
        let err = lesson::parse("x", "x.toml", &expecting(expect))
            .expect_err(expect)
            .to_string();
        assert!(
            err.contains(&format!("{name} is missing")),
            "{expect}: {err}"
        );
        assert!(
            !err.contains("unknown") && !err.contains("bad number"),
            "{err}"
        );
    }
}

#[test]
fn a_look_alike_letter_in_a_ledger_figure_is_named_by_its_code() {
    // A Cyrillic е (U+0435) and a zero-width space: each looks like the name it is not.
    for (expect, code) in [
        ("ledger l\\u0435ases lost 0", "U+0435"),
        ("ledger leases\\u200blost 0", "U+200B"),
    ] {
        let err = lesson::parse("x", "x.toml", &expecting(expect))
            .expect_err(expect)
            .to_string();
        assert!(err.contains("unknown ledger figure"), "{err}");
        assert!(err.contains(code), "{expect}: {err}");
    }
}

#[test]
fn an_expectation_is_shown_as_its_words_whatever_spaces_them() {
    // Each of these counts as a space where the words are split; none may reach a screen,
    // and the words must read as they were parsed.
    for (expect, shown) in [
        ("ledger claims\\u0085\\u000b 0", "ledger claims 0"),
        (
            "ledger\\rleases\\u2028lost\\u2029 0",
            "ledger leases lost 0",
        ),
        (
            "provider PAY-001 side\\u0085effects 0",
            "provider PAY-001 side effects 0",
        ),
        (
            "  PAY-001\\t\\tstatus \\u00a0Pending  ",
            "PAY-001 status Pending",
        ),
    ] {
        let l = lesson::parse("x", "x.toml", &expecting(expect))
            .unwrap_or_else(|e| panic!("{expect}: {e}"));
        let text = &l.steps[0].expects[0].text;
        assert_eq!(text, shown, "{expect}");
        assert!(!text.chars().any(char::is_control), "{text:?}");
    }
}
