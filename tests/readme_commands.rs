//! Every `leaselab run`, `lesson`, `lessons`, `list`, `explore`, `bench`, `completions` and
//! `man` line in the code blocks of the README and of the pages in `docs/` runs and exits as
//! its page says: 1 where its comment says the checks fail, 4 where it says a search is not a
//! pass, 0 otherwise. A lesson a page
//! opens in the dashboard is checked headless (`--check`), and the lesson file of
//! docs/lesson-authoring.md stands in for `my-lesson.toml`. The dashboard's own lines (`--watch`, `replay`, `worker`) are driven in
//! a terminal by `tests/ui_pty.rs`, `tests/processes.rs` and `tests/replay.rs`.

use std::path::Path;

#[allow(dead_code)]
mod pg_support;
mod support;

use support::{leaselab, stand_in, stderr, stdout, EFFECTUM_ANSWER};

/// The most messages a README line is run with here: the figures are the README's, the
/// size is cut so the test suite stays quick in a debug build.
const MOST_MESSAGES: u64 = 2_000;

/// The most messages a README `bench` line measures here: the bench runs every worker
/// count, mode and ceiling burst the line asks for, on an outbox this small.
const BENCH_MESSAGES: u64 = 300;

/// The largest outbox a README `bench --scale` line compares with 1,000 messages here.
const BENCH_SCALE: u64 = 2_000;

/// The longest schedule an `explore` line searches here (the README's run 12 steps); seven
/// still finds each mode's first counterexample.
const MOST_DEPTH: &str = "7";

/// The lines of every fenced code block, with the block's first line.
fn code_blocks(readme: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(Vec::new()),
            }
        } else if let Some(b) = current.as_mut() {
            b.push(line.to_string());
        }
    }
    blocks
}

/// A README command: its words (quotes removed) and its comment.
struct Line {
    words: Vec<String>,
    comment: String,
}

fn commands(readme: &str) -> Vec<Line> {
    code_blocks(readme)
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let (cmd, comment) = l.split_once('#').unwrap_or((&l, ""));
            // What a shell redirects is not an argument.
            let cmd = cmd.split_once('>').map_or(cmd, |(c, _)| c);
            let words: Vec<String> = cmd
                .split_whitespace()
                .map(|w| w.trim_matches('"').to_string())
                .collect();
            let is_ours = words.first().is_some_and(|w| w == "leaselab")
                && words.get(1).is_some_and(|w| {
                    [
                        "run",
                        "lesson",
                        "lessons",
                        "exercise",
                        "exercises",
                        "list",
                        "completions",
                        "man",
                        "explore",
                        "bench",
                        "class",
                    ]
                    .contains(&w.as_str())
                });
            is_ours.then(|| Line {
                words: words[1..].to_vec(),
                comment: comment.trim().to_string(),
            })
        })
        .collect()
}

/// The example lesson file of docs/lesson-authoring.md: the code block that starts a TOML
/// lesson.
fn example_lesson(page: &str) -> String {
    code_blocks(page)
        .into_iter()
        .find(|b| b.iter().any(|l| l.starts_with("format_version")))
        .expect("docs/lesson-authoring.md shows a lesson file")
        .join("\n")
}

/// The words to run, or None when the line needs what this machine lacks (PostgreSQL).
/// `effectum` is the reference program the README builds first, or a stand-in for it.
fn runnable(words: &[String], pg: Option<&str>, effectum: &Path) -> Option<Vec<String>> {
    let bench = words[0] == "bench";
    let most = if bench { BENCH_MESSAGES } else { MOST_MESSAGES };
    let mut out = Vec::new();
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        if w == "$LEASELAB_PG_URL" {
            out.push(pg?.to_string());
        } else if w == "--messages" || w == "--scale" {
            let n: u64 = it.next().expect("a number").parse().expect("a number");
            let cap = if w == "--scale" { BENCH_SCALE } else { most };
            out.push(w.clone());
            out.push(n.min(cap).to_string());
        } else if w == "--effectum" {
            it.next().expect("a program");
            out.push(w.clone());
            out.push(effectum.to_str().expect("a UTF-8 path").to_string());
        } else {
            out.push(w.clone());
        }
    }
    if bench && !out.iter().any(|w| w == "--messages") {
        out.extend(["--messages".to_string(), BENCH_MESSAGES.to_string()]);
    }
    // A search of the engine's own outbox is cut short here; one of a student's statements
    // runs to its close, as the page's verdict needs.
    let sql = out.iter().any(|w| w == "--sql");
    if out[0] == "explore" && !sql && !out.iter().any(|w| w == "--max-depth") {
        out.extend(["--max-depth".to_string(), MOST_DEPTH.to_string()]);
    }
    // A lesson opened in the dashboard is checked headless instead.
    let headless = ["--check", "--print", "--cast", "--shot"];
    if out[0] == "lesson" && !out.iter().any(|w| headless.contains(&w.as_str())) {
        out.push("--check".into());
    }
    Some(out)
}

/// The effectum reference program the README builds, or where it is not built (its build
/// fetches and compiles a crate of its own, a minute or more), a stand-in that answers as
/// it does. In CI (`CI` is `true` or `1`, as for the PostgreSQL tests), where `.ci/run`
/// builds it with the README's command, the program must be there: the README's build line
/// and its bench line run for real.
fn effectum_program(dir: &Path) -> std::path::PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("reference/effectum/target/release/effectum-reference");
    if built.is_file() {
        return built;
    }
    assert!(
        !matches!(std::env::var("CI").ok().as_deref(), Some("true" | "1")),
        "{} is not built: in CI docs/performance.md's `cargo build --release --manifest-path \
         reference/effectum/Cargo.toml` must have made it",
        built.display()
    );
    stand_in(dir, "effectum-stand-in", EFFECTUM_ANSWER)
}

/// The files a page's commands read that its text makes: the authoring page's lesson for
/// `my-lesson.toml`, the starter `exercise one-owner --start > mine.toml` writes, and the
/// two tries docs/teaching-sql.md has a student make of it, each as the page says.
fn page_files(dir: &Path, authoring: &str) {
    std::fs::write(dir.join("my-lesson.toml"), example_lesson(authoring)).unwrap();
    let starter = leaselab::exercise::built_in("one-owner").unwrap().start;
    std::fs::write(dir.join("mine.toml"), starter).unwrap();
    let take = " WHERE Id = :id RETURNING Id, LeaseVersion";
    assert!(
        starter.contains(take),
        "the starter's take is as the page shows it"
    );
    let first = " WHERE Id = :id AND Status = 'Pending' RETURNING Id, LeaseVersion";
    std::fs::write(dir.join("first-try.toml"), starter.replace(take, first)).unwrap();
    let second = " WHERE Id = :id AND ((Status = 'Pending' AND AvailableAtUtc <= :now) \
                  OR (Status = 'Processing' AND LockedUntilUtc < :now)) RETURNING Id, LeaseVersion";
    std::fs::write(dir.join("second-try.toml"), starter.replace(take, second)).unwrap();
}

/// The README and the pages in `docs/` that took over its sections: their commands are
/// run as the README's are.
const PAGES: &[&str] = &[
    "README.md",
    "docs/teachers-guide.md",
    "docs/worker-processes.md",
    "docs/exercises.md",
    "docs/lesson-authoring.md",
    "docs/scenarios.md",
    "docs/postgresql.md",
    "docs/performance.md",
    "docs/how-it-works.md",
];

/// Run the command lines of the README and its pages that `pick` chooses, each as its page
/// says it exits; returns how many ran.
fn run_readme_lines(pick: impl Fn(&Line) -> bool + Copy) -> usize {
    PAGES.iter().map(|page| run_page_lines(page, pick)).sum()
}

/// Run the command lines of `page` (a path from the repository's root) that `pick`
/// chooses, each as the page says it exits; returns how many ran.
fn run_page_lines(page: &str, pick: impl Fn(&Line) -> bool) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let authoring = std::fs::read_to_string(root.join("docs/lesson-authoring.md"))
        .expect("docs/lesson-authoring.md");
    let text = std::fs::read_to_string(root.join(page)).expect("the page");
    let dir = tempfile::tempdir().unwrap();
    page_files(dir.path(), &authoring);
    let effectum = effectum_program(dir.path());
    // `$LEASELAB_PG_URL` stands for a database made for this test and dropped after it.
    let scratch = pg_support::scratch("readme");
    let pg = scratch.as_ref().map(|db| db.url.clone());
    let mut ran = 0;
    for line in commands(&text).iter().filter(|l| pick(l)) {
        let Some(words) = runnable(&line.words, pg.as_deref(), &effectum) else {
            continue;
        };
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = leaselab(&args, dir.path());
        let want = if line.comment.contains("checks fail") {
            1
        } else if line.comment.contains("not a pass") {
            4
        } else {
            0
        };
        assert_eq!(
            o.status.code(),
            Some(want),
            "leaselab {} ({page}: {:?})\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            line.comment,
            stdout(&o),
            stderr(&o)
        );
        ran += 1;
    }
    ran
}

#[test]
fn every_run_and_lesson_line_in_the_readme_exits_as_the_readme_says() {
    let ran = run_readme_lines(|l| l.words[0] != "bench");
    assert!(ran >= 20, "ran only {ran} README lines");
}

/// The bench's lines, beside the others: they take the longest (ceiling bursts around
/// every run), so they run in a test of their own.
#[test]
fn every_bench_line_in_the_readme_exits_as_the_readme_says() {
    let ran = run_readme_lines(|l| l.words[0] == "bench");
    // bench; --sync full; --scale --json; --effectum; and with PostgreSQL --db.
    assert!(ran >= 4, "ran only {ran} README bench lines");
}

#[test]
fn the_readme_lines_include_the_retry_and_dead_letter_examples() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines: Vec<String> = commands(&readme)
        .iter()
        .map(|l| l.words.join(" "))
        .collect();
    for want in [
        "run outbox-leasing --fail-always PAY-005",
        "run outbox-leasing --fail-first PAY-002=4",
        "lesson zombie-worker --check",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want} not in {lines:?}");
    }
}

/// Every page in `docs/` that shows a command is one whose commands a test runs.
#[test]
fn every_page_with_commands_is_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run_elsewhere = ["docs/class.md", "docs/teaching-sql.md"];
    let mut pages = 0;
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let name = format!("docs/{}", path.file_name().unwrap().to_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        if commands(&text).is_empty() {
            continue;
        }
        pages += 1;
        assert!(
            PAGES.contains(&name.as_str()) || run_elsewhere.contains(&name.as_str()),
            "{name} shows leaselab commands that no test runs"
        );
    }
    assert!(pages >= 6, "only {pages} pages with commands");
}

#[test]
fn every_class_command_on_the_class_page_exits_as_the_page_says() {
    let ran = run_page_lines("docs/class.md", |_| true);
    // Without PostgreSQL the page's lines (all on $LEASELAB_PG_URL) are skipped.
    if pg_support::scratch("class_page_probe").is_some() {
        assert!(ran >= 12, "ran only {ran} lines of docs/class.md");
    }
}

#[test]
fn every_command_on_the_teachers_page_exits_as_the_page_says() {
    let ran = run_page_lines("docs/teaching-sql.md", |_| true);
    assert!(ran >= 9, "ran only {ran} lines of docs/teaching-sql.md");
}
