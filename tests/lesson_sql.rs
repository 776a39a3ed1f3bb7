//! A lesson that names an exercise file (`sql = "stale.toml"`): its workers run the
//! student's statements, so a teacher narrates the student's own SQL.

mod support;

use std::path::Path;

use leaselab::exercise::built_in;
use leaselab::lesson::runner::check_lesson;
use leaselab::lesson::{load, StepReport};
use leaselab::ui::app::App;
use leaselab::ui::{DashboardOptions, Theme};
use support::{leaselab, next, stderr};

/// A stalled worker's finalize, after a namesake took its message over: the exercise's
/// finalize decides whether it is accepted.
const STALE: &str = r#"format_version = 1
title = "The student's finalize against a stale owner"
sql = "stale.toml"

[setup]
workers = 1
messages = 1
lease_ms = 3000

[[step]]
do = ["act Worker-A", "act Worker-A"]
say = "Worker-A claims PAY-001 with the student's claim and calls the provider."
expect = ["PAY-001 owner Worker-A", "PAY-001 lease 1"]
show = "sql"

[[step]]
do = ["stall Worker-A", "advance 3100", "act Worker-A (new)"]
say = "Worker-A stalls; its supervisor starts a new Worker-A, which takes the expired lease."
expect = ["PAY-001 owner Worker-A", "PAY-001 lease 2"]

[[step]]
do = ["resume Worker-A (stalled)", "act Worker-A (stalled)"]
say = "The stalled Worker-A wakes and finalizes with its old lease."
expect = ["ledger violations 1"]
"#;

/// The lesson beside the exercise `file` (a built-in's `text`), loaded.
fn lesson_with(dir: &Path, lesson: &str, exercise: &str) -> leaselab::lesson::Lesson {
    std::fs::write(dir.join("stale.toml"), exercise).unwrap();
    let path = dir.join("lesson.toml");
    std::fs::write(&path, lesson).unwrap();
    load(path.to_str().unwrap()).expect("the lesson loads")
}

fn passed(reports: &[StepReport]) -> Vec<bool> {
    reports.iter().map(StepReport::passed).collect()
}

#[test]
fn the_lesson_runs_the_students_finalize_and_the_starter_lets_the_stale_owner_through() {
    let dir = tempfile::tempdir().unwrap();
    let ex = built_in("stale-finalize").unwrap();
    let lesson = lesson_with(dir.path(), STALE, ex.start);
    let exercise = lesson
        .setup
        .exercise
        .clone()
        .expect("the lesson names its exercise");
    assert_eq!(exercise.name, "stale-finalize");
    assert_eq!(passed(&check_lesson(lesson).unwrap()), [true, true, true]);
    // The model answer fences the stale owner: the same lesson's last step fails.
    let dir = tempfile::tempdir().unwrap();
    let lesson = lesson_with(dir.path(), STALE, ex.solution);
    assert_eq!(passed(&check_lesson(lesson).unwrap()), [true, true, false]);
}

#[test]
fn the_lesson_in_the_dashboard_shows_the_students_statements() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = lesson_with(dir.path(), STALE, built_in("stale-finalize").unwrap().start);
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    assert!(app.ui.sql);
    next(&mut app);
    next(&mut app);
    next(&mut app);
    let last = app.sql.last[0]
        .clone()
        .expect("the stalled worker's finalize");
    let st = &last.shown.statements[0];
    assert!(st.sql.contains("AND LockedBy = :worker"), "{st:?}");
    assert!(
        !st.sql.contains(":version"),
        "the starter's finalize, not the lab's"
    );
    assert_eq!(st.effect, "line 16: 1 row changed");
}

/// The race a saved `explore --sql` lesson steps through: both claims' SELECTs read
/// PAY-001, then both UPDATEs take it; the last step expects `ledger overlaps 1`.
const RACE: &str = r#"format_version = 1
title = "Two owners of PAY-001"
sql = "stale.toml"

[setup]
workers = 2
messages = 1
lease_ms = 3000
idempotent_provider = true

[[step]]
do = ["act Worker-A", "act Worker-B"]
say = "Both claims read PAY-001."

[[step]]
do = ["act Worker-A"]
say = "Worker-A's UPDATE takes PAY-001."
expect = ["PAY-001 owner Worker-A", "ledger overlaps 0"]

[[step]]
do = ["act Worker-B"]
say = "Worker-B's UPDATE takes it again while Worker-A's lease holds."
expect = ["PAY-001 owner Worker-B", "ledger overlaps 1"]
"#;

/// The figure a lesson expects is on the Ledgers panel, `overlaps` included, and the log
/// names the overlapping claim for what it is.
#[test]
fn the_race_lessons_overlap_is_on_the_ledgers_panel() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = lesson_with(dir.path(), RACE, built_in("one-owner").unwrap().start);
    assert_eq!(passed(&check_lesson(lesson.clone()).unwrap()), [true; 3]);
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::plain()).unwrap();
    next(&mut app);
    next(&mut app);
    assert!(
        ledgers(&mut app).contains("overlaps 0"),
        "{}",
        ledgers(&mut app)
    );
    next(&mut app);
    let panel = ledgers(&mut app);
    assert!(panel.contains("overlaps 1"), "{panel}");
    assert!(app.log.contains("took PAY-001 while Worker-A's lease held"));
    assert!(!app.log.contains("RECLAIMED"));
    insta::assert_snapshot!("race_ledgers_80x24", panel);
}

/// The Ledgers panel of an 80x24 frame, its borders included.
fn ledgers(app: &mut App) -> String {
    let lines = support::frame_lines(app, 80, 24);
    let top = lines
        .iter()
        .position(|l| l.contains("┌ Ledgers"))
        .expect("a Ledgers panel");
    let left = lines[top].chars().position(|c| c == '┌').unwrap();
    let column = |l: &String| l.chars().skip(left).collect::<String>();
    let mut panel = Vec::new();
    for l in &lines[top..] {
        panel.push(column(l));
        if l.chars().nth(left) == Some('└') {
            break;
        }
    }
    panel.join("\n")
}

#[test]
fn what_the_exercise_does_not_define_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let start = built_in("stale-finalize").unwrap().start;
    std::fs::write(dir.path().join("stale.toml"), start).unwrap();
    let cases = [
        (
            STALE.replace("lease_ms = 3000", "leasing = false"),
            3,
            "runs its own claim, so leasing stays on",
        ),
        (
            STALE.replace("lease_ms = 3000", "finalize_guard = \"owner\""),
            3,
            "own statements",
        ),
        (
            STALE.replace("lease_ms = 3000", "batch = 2"),
            3,
            "one message at a time",
        ),
        (
            STALE.replace(
                "\"act Worker-A\", \"act Worker-A\"",
                "\"claim Worker-A PAY-001\"",
            ),
            11,
            "by its Id",
        ),
        (
            STALE.replace("\"advance 3100\"", "\"beat Worker-A (new)\""),
            17,
            "no [heartbeat]",
        ),
        (
            STALE.replace("\"stale.toml\"", "\"/etc/stale.toml\""),
            3,
            "not a path relative",
        ),
        (
            STALE.replace("\"stale.toml\"", "\"gone.toml\""),
            3,
            "gone.toml",
        ),
        (
            STALE.replace("\"stale.toml\"", "\"stale\\u001b[2J.toml\""),
            3,
            "control character",
        ),
    ];
    for (text, line, words) in cases {
        let path = dir.path().join("lesson.toml");
        std::fs::write(&path, &text).unwrap();
        let out = leaselab(&["lesson", path.to_str().unwrap(), "--check"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{words}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("{}:{line}:", path.display())),
            "{err}"
        );
        assert!(err.contains(words), "{words}: {err}");
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
}

#[test]
fn a_bad_exercise_names_the_lesson_line_and_the_exercise_line() {
    let dir = tempfile::tempdir().unwrap();
    let start = built_in("stale-finalize").unwrap().start;
    let bad = start.replace(
        "SELECT Id FROM OutboxMessages",
        "SELECT Id FROM sqlite_master",
    );
    std::fs::write(dir.path().join("stale.toml"), bad).unwrap();
    let path = dir.path().join("lesson.toml");
    std::fs::write(&path, STALE).unwrap();
    let out = leaselab(&["lesson", path.to_str().unwrap(), "--check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("{}:3: sql = 'stale.toml': ", path.display())),
        "{err}"
    );
    assert!(err.contains("stale.toml:"), "{err}");
}
