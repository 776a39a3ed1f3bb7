//! `explore --sql FILE --save-lesson OUT`: the shortest counterexample as a lesson that
//! names the student's file and, run headless, breaks what the search found broken, a
//! statement a step where the search took one.

use std::path::Path;

use leaselab::exercise::built_in;

use crate::support::{leaselab, stderr, stdout};

/// Grade the built-in starter `name` with `faults`, save its counterexample in `lessons/`
/// beside `exercises/`, and return the lesson's text.
fn saved(dir: &Path, name: &str, faults: &str) -> String {
    std::fs::create_dir_all(dir.join("exercises")).unwrap();
    std::fs::create_dir_all(dir.join("lessons")).unwrap();
    let file = format!("exercises/{name}.toml");
    std::fs::write(dir.join(&file), built_in(name).unwrap().start).unwrap();
    let out = format!("lessons/{name}.toml");
    let args = [
        "explore",
        "--sql",
        &file,
        "--workers",
        "2",
        "--messages",
        "1",
        "--faults",
        faults,
        "--save-lesson",
        &out,
    ];
    let run = leaselab(&args, dir);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(
        stdout(&run).contains(&format!("leaselab lesson {out}")),
        "{}",
        stdout(&run)
    );
    std::fs::read_to_string(dir.join(&out)).unwrap()
}

/// `leaselab lesson FILE --check` from `cwd`: every step passes.
fn replays(lesson: &Path, cwd: &Path) -> String {
    let run = leaselab(&["lesson", lesson.to_str().unwrap(), "--check"], cwd);
    let text = stdout(&run);
    assert_eq!(run.status.code(), Some(0), "{text}{}", stderr(&run));
    text
}

#[test]
fn the_naive_claims_race_is_saved_a_statement_a_step_and_replays_its_break() {
    let dir = tempfile::tempdir().unwrap();
    let text = saved(dir.path(), "one-owner", "none");
    assert!(
        text.contains("\nsql = \"../exercises/one-owner.toml\"\n"),
        "{text}"
    );
    // SELECT, SELECT, UPDATE, UPDATE: each worker's claim in two steps.
    let acts: Vec<&str> = text.lines().filter(|l| l.starts_with("do = ")).collect();
    assert_eq!(
        acts,
        [
            "do = [\"act Worker-A\"]",
            "do = [\"act Worker-B\"]",
            "do = [\"act Worker-A\"]",
            "do = [\"act Worker-B\"]"
        ]
    );
    // The narration names each statement's line and what it did; its text is in the SQL
    // pane beside it, so the step's conclusion is not pushed off an 80x24 screen.
    let words = text.replace("\\\n", " ");
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "statement 1 of 2: line 10 with :now = 1768467600000 (09:00:00.000) → returned Id = 1"
        ),
        "{text}"
    );
    assert!(!words.contains("SELECT Id"), "{text}");
    let last_step = words.rsplit("[[step]]").next().unwrap();
    assert!(
        last_step.contains("two workers held a live lease on PAY-001"),
        "{last_step}"
    );
    let last = text
        .lines()
        .rev()
        .find(|l| l.starts_with("expect = "))
        .unwrap();
    assert!(last.contains("\"ledger overlaps 1\""), "{last}");
    // Run from elsewhere: the lesson finds the exercise beside itself.
    let report = replays(&dir.path().join("lessons/one-owner.toml"), Path::new("/"));
    assert!(report.contains("4 of 4 steps passed"), "{report}");
}

#[test]
fn each_starters_counterexample_replays_as_a_lesson() {
    for (name, faults, broken) in [
        ("stale-finalize", "jump,pause", "ledger violations 1"),
        ("takeover", "crash", "PAY-001 status Processing"),
        ("heartbeat", "jump", "ledger overlaps 1"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let text = saved(dir.path(), name, faults);
        let last = text
            .lines()
            .rev()
            .find(|l| l.starts_with("expect = "))
            .unwrap();
        assert!(last.contains(broken), "{name}: {last}");
        replays(&dir.path().join(format!("lessons/{name}.toml")), dir.path());
    }
}

#[test]
fn a_model_answer_saves_no_lesson() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.toml"),
        built_in("one-owner").unwrap().solution,
    )
    .unwrap();
    let args = [
        "explore",
        "--sql",
        "s.toml",
        "--workers",
        "2",
        "--messages",
        "1",
        "--faults",
        "none",
        "--save-lesson",
        "out.toml",
    ];
    let run = leaselab(&args, dir.path());
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(stdout(&run).contains("nothing broke, so no lesson was saved"));
    assert!(!dir.path().join("out.toml").exists());
}
