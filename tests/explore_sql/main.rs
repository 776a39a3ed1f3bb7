//! `leaselab explore --sql FILE`: a student's statements graded against every interleaving
//! on real SQLite. A safe claim and finalize pass; each classic mistake is caught as the
//! check it breaks, with a shortest schedule that shows the statements; a file that cannot
//! be run is refused with exit 2, a statement that runs too long is stopped.

mod built_in;
mod corpus;
#[path = "../support/mod.rs"]
mod support;

mod lesson;
mod sandbox;

use std::path::{Path, PathBuf};

use leaselab::exercise::load_file;
use leaselab::explore::{explore, Check, ExploreOptions, Report};
use support::{leaselab, stderr, stdout};

/// The claimable test, as a student writes it: Pending and due, or Processing with a lease
/// that has run out (a lease holds up to and including its end).
const CLAIMABLE: &str = "((Status = 'Pending' AND AvailableAtUtc <= :now) \
     OR (Status = 'Processing' AND LockedUntilUtc < :now))";

const TAKE: &str = "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, \
     LockedUntilUtc = :lease_until, LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1";

const FENCED_FINALIZE: &str = "UPDATE OutboxMessages SET Status = 'Processed', \
     ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Id = :id AND Status = 'Processing' \
     AND LockedBy = :worker AND LeaseVersion = :version";

fn file(claim_tx: &str, claim: &[String], finalize: &str, heartbeat: Option<&str>) -> String {
    let list = |s: &[String]| {
        s.iter()
            .map(|q| format!("  \"\"\"{q}\"\"\","))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut text = format!(
        "name = \"t\"\ntitle = \"A test\"\ntask = \"Claim and finalize.\"\n\n\
         [claim]\ntransaction = \"{claim_tx}\"\nstatements = [\n{}\n]\n\n\
         [finalize]\ntransaction = \"immediate\"\nstatements = [\"\"\"{finalize}\"\"\"]\n",
        list(claim)
    );
    if let Some(beat) = heartbeat {
        text.push_str(&format!(
            "\n[heartbeat]\ntransaction = \"immediate\"\nstatements = [\"\"\"{beat}\"\"\"]\n"
        ));
    }
    text
}

/// A claim that reads and takes the row in one transaction, asking the test again.
fn safe_claim() -> Vec<String> {
    vec![
        format!("SELECT Id, LeaseVersion FROM OutboxMessages WHERE {CLAIMABLE} ORDER BY Id LIMIT 1"),
        format!("{TAKE} WHERE Id = :id AND LeaseVersion = :version AND {CLAIMABLE} RETURNING Id, LeaseVersion"),
    ]
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the exercise");
    path
}

fn grade(path: &Path, workers: usize, messages: u64, depth: usize) -> Report {
    grade_with(path, workers, messages, depth, false)
}

/// As [`grade`]; `exact_clock` keeps each time's exact distance from the clock.
fn grade_with(
    path: &Path,
    workers: usize,
    messages: u64,
    depth: usize,
    exact_clock: bool,
) -> Report {
    let opts = ExploreOptions {
        exact_clock,
        workers,
        messages,
        max_depth: depth,
        heartbeats: false,
        // As `explore --sql` grades: the provider honours the idempotency key.
        idempotent: true,
        sql: Some(std::sync::Arc::new(
            load_file(path).expect("the file loads"),
        )),
        ..ExploreOptions::default()
    };
    let heartbeats = opts.sql.as_ref().is_some_and(|e| e.heartbeat.is_some());
    explore(&ExploreOptions { heartbeats, ..opts }, &mut |_| true).expect("the search runs")
}

#[test]
fn a_claim_in_one_transaction_and_a_fenced_finalize_pass_every_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "safe.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(r.exhaustive, "{}", r.text());
    assert_eq!(r.broken(), [], "{}", r.text());
    assert!(r.states > 100, "the search went somewhere: {}", r.text());
}

#[test]
fn the_safe_files_verdicts_agree_with_the_engines_own_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "safe.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, None),
    );
    let student = grade(&path, 2, 1, 9);
    let engine = explore(
        &ExploreOptions {
            workers: 2,
            messages: 1,
            max_depth: 9,
            idempotent: true,
            ..ExploreOptions::default()
        },
        &mut |_| true,
    )
    .expect("the engine's search");
    assert_eq!(student.broken(), engine.broken());
}

#[test]
fn a_select_then_an_update_each_on_its_own_lets_two_workers_take_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let naive = vec![
        "SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending' ORDER BY Id LIMIT 1"
            .to_string(),
        format!("{TAKE} WHERE Id = :id RETURNING Id, LeaseVersion"),
    ];
    let path = write(
        &dir,
        "naive.toml",
        &file("none", &naive, FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(
        r.broken().contains(&Check::LeaseExclusivity),
        "{}",
        r.text()
    );
    let v = r
        .verdicts
        .iter()
        .find(|v| v.check == Check::LeaseExclusivity)
        .unwrap();
    // Both read the Pending row before either takes it: four statements, one a step.
    assert_eq!(v.shortest.len(), 4, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains("runs its claim, statement 1 of 2")
            && text
                .contains("SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending'")
            && text.contains(":worker = 'Worker-B'")
            && text.contains("line "),
        "{text}"
    );
}

#[test]
fn a_finalize_without_the_version_guard_is_caught_as_a_finalize_by_a_non_owner() {
    let dir = tempfile::tempdir().unwrap();
    let unfenced = FENCED_FINALIZE.replace(" AND LeaseVersion = :version", "");
    let path = write(
        &dir,
        "unfenced.toml",
        &file("immediate", &safe_claim(), &unfenced, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(
        r.broken().contains(&Check::NonOwnerFinalize),
        "{}",
        r.text()
    );
}

#[test]
fn a_claim_of_pending_rows_only_leaves_a_crashed_workers_message_stuck() {
    let dir = tempfile::tempdir().unwrap();
    let pending_only = vec![format!(
        "{TAKE} WHERE Id = (SELECT Id FROM OutboxMessages WHERE Status = 'Pending' \
         ORDER BY Id LIMIT 1) RETURNING Id, LeaseVersion"
    )];
    let path = write(
        &dir,
        "pending.toml",
        &file("immediate", &pending_only, FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(r.broken().contains(&Check::Stuck), "{}", r.text());
}

/// A claim that finds an expired lease but whose take asks for Pending only goes round for
/// ever: it reads the crashed worker's message, fails to take it, and reads it again. No
/// move leaves that state alone, yet none gets anywhere: stuck all the same.
#[test]
fn a_claim_that_reads_an_expired_lease_but_cannot_take_it_goes_round_and_is_stuck() {
    let dir = tempfile::tempdir().unwrap();
    let round = vec![
        format!(
            "SELECT Id, LeaseVersion FROM OutboxMessages WHERE {CLAIMABLE} ORDER BY Id LIMIT 1"
        ),
        format!("{TAKE} WHERE Id = :id AND Status = 'Pending' RETURNING Id, LeaseVersion"),
    ];
    let path = write(
        &dir,
        "round.toml",
        &file("none", &round, FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert_eq!(r.broken(), [Check::Stuck], "{}", r.text());
    let v = r.verdicts.iter().find(|v| v.check == Check::Stuck).unwrap();
    // Claim (two statements), crash: the shortest way there; then told on past the
    // lease's end (three moves of the clock: before, at, after it), each worker's claim
    // reading the message and failing to take it.
    assert_eq!(v.shortest.len(), 10, "{}", r.text());
    let steps = v.steps();
    assert!(steps[2].contains("crashes holding PAY-001"), "{steps:#?}");
    assert!(steps[5].contains("has run out"), "{steps:#?}");
    assert!(
        steps[9].contains("Worker-B runs its claim, statement 2 of 2"),
        "{steps:#?}"
    );
    assert_eq!(v.about, "PAY-001", "{}", r.text());
}

#[test]
fn a_heartbeat_that_extends_any_lease_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let blind = "UPDATE OutboxMessages SET LockedUntilUtc = :lease_until WHERE Id = :id";
    let path = write(
        &dir,
        "beat.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, Some(blind)),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(
        r.broken().contains(&Check::LeaseExclusivity),
        "{}",
        r.text()
    );
    let guarded = format!("{blind} AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version AND LockedUntilUtc >= :now");
    let path = write(
        &dir,
        "beat-safe.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, Some(&guarded)),
    );
    let r = grade(&path, 2, 1, 60);
    assert_eq!(r.broken(), [], "{}", r.text());
}

#[test]
fn the_command_exits_0_for_a_safe_file_and_1_with_the_statements_for_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let safe = write(
        &dir,
        "safe.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, None),
    );
    let args = ["--workers", "2", "--messages", "1", "--max-depth", "60"];
    let sql = safe.to_str().unwrap();
    let o = leaselab(
        &[&["explore", "--sql", sql][..], &args].concat(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let unfenced = FENCED_FINALIZE.replace(" AND LeaseVersion = :version", "");
    let bad = write(
        &dir,
        "bad.toml",
        &file("immediate", &safe_claim(), &unfenced, None),
    );
    let bad = bad.to_str().unwrap();
    let o = leaselab(
        &[&["explore", "--sql", bad][..], &args].concat(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("FAIL  finalize by a non-owner") && out.contains("runs its finalize"),
        "{out}"
    );
}

#[test]
fn a_file_that_cannot_be_run_exits_2_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "drop.toml",
            file(
                "none",
                &["DROP TABLE Payments".to_string()],
                FENCED_FINALIZE,
                None,
            ),
        ),
        (
            "syntax.toml",
            file(
                "none",
                &["SELEC Id FROM OutboxMessages".to_string()],
                FENCED_FINALIZE,
                None,
            ),
        ),
        ("notoml.toml", "this is [not toml".to_string()),
    ];
    for (name, text) in cases {
        let path = write(&dir, name, &text);
        let o = leaselab(&["explore", "--sql", path.to_str().unwrap()], dir.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
    }
    let o = leaselab(&["explore", "--sql", "no-such-file.toml"], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = leaselab(
        &["explore", "--sql", dir.path().to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

#[test]
fn a_claim_that_never_ends_is_stopped_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let endless = vec![format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
         {TAKE} WHERE Id = (SELECT Id FROM OutboxMessages WHERE Id = (SELECT max(i) FROM n) \
         OR Status = 'Pending' ORDER BY Id LIMIT 1) RETURNING Id, LeaseVersion"
    )];
    let path = write(
        &dir,
        "endless.toml",
        &file("immediate", &endless, FENCED_FINALIZE, None),
    );
    let o = leaselab(
        &[
            "explore",
            "--sql",
            path.to_str().unwrap(),
            "--faults",
            "none",
        ],
        dir.path(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("endless.toml"), "{err}");
}

#[test]
fn heartbeats_asked_of_a_file_without_one_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "safe.toml",
        &file("immediate", &safe_claim(), FENCED_FINALIZE, None),
    );
    let o = leaselab(
        &["explore", "--sql", path.to_str().unwrap(), "--heartbeats"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("[heartbeat]"), "{}", stderr(&o));
}

/// A claim that sets the fencing token to the same value every time, with a finalize that
/// asks for owner and token: the row cannot tell a stalled Worker-A from its replacement,
/// but the grader knows whose claim came last.
#[test]
fn a_claim_that_never_moves_the_fencing_token_is_caught_as_a_finalize_by_a_non_owner() {
    let dir = tempfile::tempdir().unwrap();
    let claim: Vec<String> = safe_claim()
        .into_iter()
        .map(|q| q.replace("LeaseVersion = LeaseVersion + 1", "LeaseVersion = 1"))
        .collect();
    assert!(claim[1].contains("LeaseVersion = 1,"), "the token is fixed");
    let path = write(
        &dir,
        "fixed-token.toml",
        &file("immediate", &claim, FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert!(
        r.broken().contains(&Check::NonOwnerFinalize),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains("claimed since by the new Worker-A"),
        "{}",
        r.text()
    );
}

/// The states of a round are expanded on every core, each on its own copy of the database,
/// and merged in the order one core finds them: one core or three, the same report, the
/// same shortest schedules, word for word.
#[test]
fn the_report_is_the_same_on_one_core_and_on_three() {
    let starter = leaselab::exercise::built_in("one-owner").unwrap().starter();
    let on = |cores: usize| {
        let opts = ExploreOptions {
            workers: 2,
            messages: 1,
            max_depth: 9,
            idempotent: true,
            sql: Some(std::sync::Arc::new(starter.clone())),
            cores,
            ..ExploreOptions::default()
        };
        explore(&opts, &mut |_| true).expect("the search runs")
    };
    let (one, three) = (on(1), on(3));
    assert!(!one.broken().is_empty(), "{}", one.text());
    let without_time = |r: &Report| r.text().lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!((one.states, one.schedules), (three.states, three.schedules));
    assert_eq!(without_time(&one), without_time(&three));
}
