//! Exercises: every built-in starter fails its check and every model answer passes it; a
//! student's file that reaches outside the sandbox, runs without end, does not parse or
//! returns the wrong shape is refused by the real binary in one line with exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use leaselab::exercise::{self, check};

mod support;

fn leaselab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run leaselab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The one-owner model answer with the claim's statements replaced by `claim` (each a
/// TOML string, written as it stands in the file): its transaction is on line 6, its
/// first statement on line 8.
fn with_claim(claim: &[&str]) -> String {
    let list: Vec<String> = claim.iter().map(|s| format!("  {s},\n")).collect();
    format!(
        "name = \"probe\"\ntitle = \"Probe\"\ntask = \"Probe the sandbox.\"\n\n\
         [claim]\ntransaction = \"immediate\"\nstatements = [\n{}]\n\n[finalize]\n\
         transaction = \"immediate\"\nstatements = [\"UPDATE OutboxMessages SET Status = \
         'Processed', ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Id = :id AND \
         LockedBy = :worker AND LeaseVersion = :version\"]\n",
        list.concat()
    )
}

/// Check `text` as the one-owner exercise: exit 2, one line on stderr, each of `needles`.
fn refused(text: &str, needles: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, text).unwrap();
    let o = leaselab(
        &["exercise", "one-owner", "--check", "mine.toml"],
        dir.path(),
    );
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stderr: {err} stdout: {}",
        stdout(&o)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    err
}

const TAKE: &str = "\"UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, \
     LockedUntilUtc = :lease_until, LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1 \
     WHERE Id = :id RETURNING Id, LeaseVersion\"";

#[test]
fn schema_changes_are_refused_before_anything_runs() {
    for (sql, why) in [
        ("DROP TABLE OutboxMessages", "may not drop a table"),
        ("CREATE TABLE Mine (x INTEGER)", "may not create a table"),
        (
            "ALTER TABLE Payments ADD COLUMN x INTEGER",
            "may not alter a table",
        ),
        (
            "CREATE INDEX Mine ON Payments (Amount)",
            "may not change the schema",
        ),
    ] {
        let line = format!("\"{sql}\"");
        let err = refused(
            &with_claim(&[&line, TAKE]),
            &[
                "mine.toml:8: the claim's statement 1 (",
                why,
                "OutboxMessages and Payments only",
            ],
        );
        assert!(err.contains(&sql[..10]), "{err}");
    }
}

#[test]
fn attach_pragma_other_tables_extensions_and_transactions_are_refused() {
    for (sql, why) in [
        (
            "ATTACH DATABASE 'other.db' AS other",
            "may not attach a database",
        ),
        ("PRAGMA journal_mode", "may not run a PRAGMA"),
        (
            "SELECT Seq AS Id, Seq AS LeaseVersion FROM LeaseEvents",
            "may not read LeaseEvents",
        ),
        (
            "SELECT 1 AS Id, 1 AS LeaseVersion FROM sqlite_master",
            "may not read sqlite_master",
        ),
        (
            "SELECT 1 AS Id, 1 AS LeaseVersion FROM Seedings",
            "may not read Seedings",
        ),
        (
            "SELECT load_extension('x') AS Id, 1 AS LeaseVersion",
            "may not call load_extension",
        ),
        ("BEGIN", "may not begin, commit or roll back"),
        ("COMMIT", "may not begin, commit or roll back"),
        ("SAVEPOINT mine", "may not begin, commit or roll back"),
        ("DELETE FROM sqlite_master", "sqlite_master"),
        (
            "INSERT INTO LeaseEvents (AtUtc, Worker, Kind) VALUES (0, 'x', 'Claimed')",
            "may not insert into LeaseEvents",
        ),
        // The pages of the database itself, which the explorer writes to return to a state.
        (
            "SELECT pgno AS Id, 1 AS LeaseVersion FROM sqlite_dbpage",
            "may not read sqlite_dbpage",
        ),
        (
            "INSERT INTO sqlite_dbpage (pgno, data) VALUES (1, NULL)",
            "may not insert into sqlite_dbpage",
        ),
    ] {
        let line = format!("\"{sql}\"");
        refused(
            &with_claim(&[&line, TAKE]),
            &["mine.toml:8: the claim's statement 1", why],
        );
    }
}

#[test]
fn two_statements_in_one_string_are_refused() {
    refused(
        &with_claim(&["\"SELECT Id, LeaseVersion FROM OutboxMessages LIMIT 1; SELECT 1\""]),
        &["mine.toml:8:", "more than one statement"],
    );
    // A forbidden second statement is refused for what it is, before anything runs.
    refused(
        &with_claim(&[
            "\"SELECT Id, LeaseVersion FROM OutboxMessages LIMIT 1; DROP TABLE Payments\"",
        ]),
        &["mine.toml:8:", "may not drop a table"],
    );
}

#[test]
fn an_endless_recursive_query_is_stopped_with_a_clear_message() {
    let endless = "\"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) \
                   SELECT n AS Id, n AS LeaseVersion FROM r WHERE n < 0 LIMIT 1\"";
    refused(
        &with_claim(&[endless]),
        &[
            "mine.toml:8: the claim's statement 1",
            "was stopped",
            "WITH RECURSIVE",
        ],
    );
}

/// The one-owner model answer, whose claim and finalize pass its check.
fn model() -> String {
    exercise::built_in("one-owner")
        .unwrap()
        .solution
        .to_string()
}

/// The model answer with `extra` added to the claim's SELECT as a condition (line 9).
fn model_claim_also(extra: &str) -> String {
    let text = model();
    let select = "SELECT Id FROM OutboxMessages WHERE ";
    assert!(text.contains(select));
    text.replacen(select, &format!("{select}{extra} AND "), 1)
}

/// The model answer with `statement` run before its finalize, each on its own (line 15).
fn model_finalize_after(statement: &str) -> String {
    let text = model();
    let finalize = "[finalize]\ntransaction = \"immediate\"\nstatements = [";
    assert!(text.contains(finalize));
    text.replacen(
        finalize,
        &format!("[finalize]\ntransaction = \"none\"\nstatements = [\"{statement}\", "),
        1,
    )
}

/// Check `text` as the one-owner exercise through the real binary, bounded: its output and
/// how long it took.
fn checked(text: &str) -> (Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.toml"), text).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(["exercise", "one-owner", "--check", "mine.toml"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1");
    let start = Instant::now();
    let o = support::bounded(cmd, support::DEADLINE, "exercise --check");
    (o, start.elapsed())
}

#[test]
fn a_file_that_reads_no_clock_and_draws_no_chance_still_passes() {
    // The functions a claim may well use, on the rows alone.
    let text = model_claim_also(
        "PaymentKey LIKE 'PAY-%' AND PaymentKey GLOB 'PAY-*' AND instr(PaymentKey, '-') = 4 \
         AND length(coalesce(LockedBy, '')) >= 0 AND abs(max(Attempts, 0)) >= 0",
    );
    let (o, _) = checked(&text);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("PASSED"), "{}", stdout(&o));
}

#[test]
fn the_computers_clock_chance_and_the_connections_history_are_refused_as_the_file_loads() {
    let at = "mine.toml:9: the claim's statement 1 (SELECT Id FROM";
    for (call, why) in [
        (
            "datetime('now') > ''",
            "calls datetime(), which reads this computer's clock",
        ),
        (
            "date('now') > ''",
            "calls date(), which reads this computer's clock",
        ),
        (
            "time('now') > ''",
            "calls time(), which reads this computer's clock",
        ),
        ("julianday('now') > 0", "calls julianday(), which reads"),
        ("unixepoch() > 0", "calls unixepoch(), which reads"),
        (
            "strftime('%s', 'now') > ''",
            "calls strftime(), which reads",
        ),
        (
            "timediff('now', '2000-01-01') > ''",
            "calls timediff(), which reads",
        ),
        // A time given reads no clock, but a lab time is never a date: refused too.
        ("datetime(0, 'unixepoch') > ''", "calls datetime()"),
        (
            "CURRENT_TIMESTAMP > ''",
            "uses CURRENT_TIMESTAMP, which reads this computer's clock",
        ),
        ("CURRENT_DATE > ''", "uses CURRENT_DATE"),
        ("CURRENT_TIME > ''", "uses CURRENT_TIME"),
    ] {
        let err = refused(
            &model_claim_also(call),
            &[
                at,
                why,
                "; the lab's times are integer milliseconds on the scenario clock: use :now\n",
            ],
        );
        assert!(!err.contains("OutboxMessages and Payments only"), "{err}");
    }
    for (call, why) in [
        ("random() <> 0", "calls random(), which is chance"),
        (
            "length(randomblob(4)) = 4",
            "calls randomblob(), which is chance",
        ),
        (
            "changes() >= 0",
            "calls changes(), whose value is what ran before on this connection",
        ),
        (
            "total_changes() >= 0",
            "calls total_changes(), whose value is what ran before",
        ),
        (
            "last_insert_rowid() >= 0",
            "calls last_insert_rowid(), whose value is what ran",
        ),
    ] {
        refused(&model_claim_also(call), &[at, why]);
    }
}

#[test]
fn vacuum_is_refused_as_the_file_loads() {
    // A VACUUM asks the authorizer nothing until it runs (then it attaches a database): a
    // finalize that was one passed the load and the check.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    let into = format!("VACUUM INTO '{}'", copy.display());
    for sql in ["VACUUM", "/* tidy */ vacuum main", into.as_str()] {
        refused(
            &model_finalize_after(sql),
            &[
                "mine.toml:15: the finalize's statement 1 (",
                ") is a VACUUM, which rewrites the whole database file",
            ],
        );
        let line = format!("\"{sql}\"");
        let text = with_claim(&[&line, TAKE]).replace("\"immediate\"", "\"none\"");
        refused(
            &text,
            &["mine.toml:8: the claim's statement 1 (", "is a VACUUM"],
        );
    }
    assert!(!copy.exists());
}

#[test]
fn a_nul_in_a_statement_is_refused_as_the_file_loads() {
    // SQLite would read the statement up to the NUL only: the DELETE was shown, never run.
    let text = model_finalize_after(
        "UPDATE OutboxMessages SET Attempts = Attempts WHERE Id = :id\\u0000; DELETE FROM Payments",
    );
    refused(
        &text,
        &["mine.toml:15: the finalize's statement 1 holds a NUL character (at character 61 of the statement), where SQLite would stop reading it"],
    );
    let text = with_claim(&["\"SELECT Id, LeaseVersion FROM OutboxMessages\\nLIMIT 1\\u0000\""]);
    refused(
        &text,
        &["mine.toml:9: the claim's statement 1 holds a NUL character (at character 52 of the statement)"],
    );
}

#[test]
fn a_statement_may_not_change_what_a_row_is_nor_add_a_row() {
    let take = |set: &str| {
        model().replacen(
            "SET Status = 'Processing'",
            &format!("SET {set}, Status = 'Processing'"),
            1,
        )
    };
    for (set, why) in [
        (
            "Id = Id + 10",
            "may not change OutboxMessages.Id, the message's Id, which the lab knows it by",
        ),
        ("rowid = rowid + 10", "may not change OutboxMessages.ROWID"),
        (
            "PaymentKey = 'PAY-999'",
            "may not change OutboxMessages.PaymentKey",
        ),
        (
            "Seeding = Seeding + 1",
            "may not change OutboxMessages.Seeding",
        ),
    ] {
        refused(
            &take(set),
            &[
                "mine.toml:10: the claim's statement 2 (UPDATE OutboxMessages",
                why,
            ],
        );
    }
    for (sql, why) in [
        (
            "UPDATE Payments SET IdempotencyKey = 'X' WHERE 0",
            "may not change Payments.IdempotencyKey",
        ),
        (
            "INSERT INTO OutboxMessages (Id, PaymentKey, CreatedAtUtc) VALUES (9, 'PAY-001', 0)",
            "may not insert into OutboxMessages: the lab seeds the messages and their payments",
        ),
        (
            "INSERT INTO Payments (IdempotencyKey, Amount, CreatedAtUtc) VALUES ('X', 1, 0)",
            "may not insert into Payments: the lab seeds",
        ),
        (
            "REPLACE INTO OutboxMessages (Id, PaymentKey, CreatedAtUtc) VALUES (1, 'PAY-001', 0)",
            "may not insert into OutboxMessages",
        ),
    ] {
        let line = format!("\"{sql}\"");
        refused(
            &with_claim(&[&line, TAKE]),
            &["mine.toml:8: the claim's statement 1 (", why],
        );
    }
    // A DELETE is the student's to make (a message deleted is lost, not refused).
    let (o, _) = checked(&model_finalize_after(
        "DELETE FROM OutboxMessages WHERE Id = :id + 100",
    ));
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn quadratic_string_functions_over_long_strings_end_at_once_naming_the_value() {
    // Each took from 10 s to minutes in one step of SQLite's machine, which neither the
    // progress handler nor Ctrl-C could stop.
    for (call, why) in [
        (
            "hex(zeroblob(500000)) NOT LIKE '%' || hex(zeroblob(20000)) || 'x%'",
            "made a string, blob or row of more than 4096 bytes",
        ),
        (
            "hex(zeroblob(500000)) NOT GLOB '*' || hex(zeroblob(20000)) || 'x*'",
            "made a string, blob or row of more than 4096 bytes",
        ),
        (
            "instr(hex(zeroblob(520000)), hex(zeroblob(260000)) || 'x') = 0",
            "made a string, blob or row of more than 4096 bytes",
        ),
        (
            "PaymentKey NOT LIKE '%' || hex(zeroblob(101)) || '%'",
            "has a LIKE or GLOB pattern of more than 200 bytes",
        ),
    ] {
        let (o, took) = checked(&model_claim_also(call));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{call}: {err}{}", stdout(&o));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("mine.toml:9: the claim's statement 1 (SELECT Id FROM"),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
        assert!(took < Duration::from_secs(10), "{call}: {took:?}");
    }
}

#[test]
fn a_wide_row_is_refused_naming_what_is_too_big() {
    // The same megabyte 200 times in one row: 200 MiB before, its columns refused now.
    let columns = ", x".repeat(200);
    let wide = format!("\"WITH b(x) AS (SELECT zeroblob(1048576)) SELECT Id, LeaseVersion{columns} FROM b, OutboxMessages LIMIT 1\"");
    refused(
        &with_claim(&[&wide]),
        &[
            "mine.toml:8: the claim's statement 1 (WITH b(x) AS",
            "has more than 64 columns",
        ],
    );
    // 30 values of 4000 bytes: each fits, the row does not, sorted or returned.
    let columns = ", x".repeat(30);
    for (order, why) in [
        (
            "LeaseVersion",
            "(WITH b(x) AS (SELECT zer…) made a string, blob or row of more than 4096 bytes",
        ),
        (
            "Id",
            "returned a row of 120016 bytes, more than the 4096 a row of an exercise may hold",
        ),
    ] {
        let heavy = format!("\"WITH b(x) AS (SELECT zeroblob(4000)) SELECT Id, LeaseVersion{columns} FROM b, OutboxMessages ORDER BY {order} LIMIT 1\"");
        refused(
            &with_claim(&[&heavy]),
            &["mine.toml:8: the claim's statement 1 ", why],
        );
    }
}

#[test]
fn a_slow_statement_is_said_to_be_slow_and_not_blamed_on_recursion() {
    // Ten subqueries of ten rows each, joined: no recursion, and slow.
    let ten: Vec<String> = (1..=10).map(|i| format!("SELECT {i}")).collect();
    let ten = format!("({})", ten.join(" UNION ALL "));
    let joined: Vec<String> = (0..10).map(|i| format!("{ten} t{i}")).collect();
    let slow = format!(
        "\"SELECT Id, LeaseVersion FROM OutboxMessages WHERE (SELECT count(*) FROM {}) > 0 LIMIT 1\"",
        joined.join(", ")
    );
    let (o, took) = checked(&with_claim(&[&slow]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.ends_with("mine.toml:8: the claim's statement 1 (SELECT Id, LeaseVersion …) ran longer than 1 s and was stopped\n"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_statement_may_not_make_a_gigabyte() {
    refused(
        &with_claim(&["\"SELECT length(zeroblob(900000000)) AS Id, 1 AS LeaseVersion\""]),
        &[
            "mine.toml:8: the claim's statement 1",
            "more than 4096 bytes",
        ],
    );
}

#[test]
fn a_syntax_error_names_the_file_the_line_and_the_place() {
    refused(
        &with_claim(&[TAKE, "\"SELECT Id, LeaseVersion FRM OutboxMessages\""]),
        &[
            "mine.toml:9: the claim's statement 2",
            "syntax error",
            "at character 29",
            "'OutboxMessages'",
        ],
    );
}

#[test]
fn results_of_the_wrong_shape_are_refused_in_words() {
    refused(
        &with_claim(&["\"SELECT Id, LeaseVersion FROM OutboxMessages UNION ALL SELECT Id, LeaseVersion FROM OutboxMessages\""]),
        &["mine.toml:8: the claim's statement 1 returned 2 rows; a claim takes one message"],
    );
    refused(
        &with_claim(&["\"SELECT LeaseVersion FROM OutboxMessages LIMIT 1\""]),
        &[
            "mine.toml:8: the claim's statement 1 is the claim's last that returns rows",
            "Id and LeaseVersion",
        ],
    );
    refused(
        &with_claim(&["\"SELECT 'abc' AS Id, LeaseVersion FROM OutboxMessages LIMIT 1\""]),
        &["mine.toml:8: the claim's statement 1 returned Id = 'abc' (text); Id is an integer"],
    );
    refused(
        &with_claim(&["\"SELECT 99 AS Id, 1 AS LeaseVersion\""]),
        &["the claim returned Id = 99, which is no message"],
    );
}

#[test]
fn an_unknown_parameter_is_refused_with_its_name() {
    refused(
        &with_claim(&["\"SELECT Id FROM OutboxMessages LIMIT 1\"", "\"UPDATE OutboxMessages SET LockedBy = :foo WHERE Id = :id RETURNING Id, LeaseVersion\""]),
        &["mine.toml:9: unknown parameter :foo in the claim's statement 2"],
    );
    refused(
        &with_claim(&["\"SELECT Id, LeaseVersion FROM OutboxMessages WHERE Id = :id\""]),
        &["mine.toml:8: the claim's statement 1 uses :id before"],
    );
}

#[test]
fn control_characters_in_the_file_are_printed_stripped() {
    let hostile = "\"SELECT Id, LeaseVersion FROM `\\u001b]0;pwned\\u0007\\u001b[2JPayments`\"";
    let err = refused(
        &with_claim(&[hostile]),
        &["mine.toml:8: the claim's statement 1", "pwned"],
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    // The title, the task and a bad transaction are text from the file too.
    let text = with_claim(&[TAKE]).replace("\"immediate\"", "\"imm\\u001b[31mediate\"");
    let err = refused(&text, &["mine.toml:6: the claim's transaction"]);
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn bad_files_and_unknown_names_are_one_line_with_exit_2() {
    refused("name = \"x\"\n[claim\n", &["mine.toml:2:"]);
    refused(&"#".repeat(70_000), &["bytes"]);
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["exercise", "nope", "--start"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown exercise 'nope'; built-in exercises: one-owner, stale-finalize, takeover, heartbeat"), "{err}");
    let o = leaselab(
        &["exercise", "one-owner", "--check", "missing.toml"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.toml: cannot read the exercise"));
}

#[test]
fn every_starter_fails_its_check_and_every_solution_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    for b in &exercise::BUILT_INS {
        let starter = b.starter();
        let model = b.model();
        assert_eq!(
            (starter.name.as_str(), model.name.as_str()),
            (b.name, b.name)
        );
        let failed = check::check(b.name, &starter).unwrap().unwrap();
        assert!(
            failed.broken.is_some(),
            "{}'s starter passed: {:?}",
            b.name,
            failed.lines
        );
        let passed = check::check(b.name, &model).unwrap().unwrap();
        assert_eq!(passed.broken, None, "{}: {:?}", b.name, passed.lines);
        // The same through the binary: the printed files, checked.
        for (flag, code) in [("--start", 1), ("--solution", 0)] {
            let printed = leaselab(&["exercise", b.name, flag], dir.path());
            assert_eq!(printed.status.code(), Some(0));
            let file: PathBuf = dir.path().join(format!("{}{flag}.toml", b.name));
            std::fs::write(&file, &printed.stdout).unwrap();
            let o = leaselab(
                &["exercise", b.name, "--check", file.to_str().unwrap()],
                dir.path(),
            );
            assert_eq!(
                o.status.code(),
                Some(code),
                "{} {flag}: {}{}",
                b.name,
                stdout(&o),
                stderr(&o)
            );
        }
    }
}

#[test]
fn each_starter_breaks_the_rule_its_exercise_teaches() {
    let broken = |name: &str| {
        let b = exercise::built_in(name).unwrap();
        check::check(name, &b.starter())
            .unwrap()
            .unwrap()
            .broken
            .unwrap()
    };
    assert!(broken("one-owner").contains("both claimed PAY-001"));
    assert!(broken("stale-finalize").contains("the stale lease (v1) was accepted"));
    assert!(broken("takeover").contains("stays Processing under Worker-A's expired lease"));
    assert!(broken("heartbeat").contains("extended the lease Worker-B holds"));
}

/// The verdict says it ran one schedule and names `explore --sql FILE`, the search of
/// every schedule; its lines speak the explorer's units (payment keys, the scenario clock).
#[test]
fn the_verdict_says_it_ran_one_schedule_in_the_explorers_units() {
    let dir = tempfile::tempdir().unwrap();
    let b = exercise::built_in("one-owner").unwrap();
    for (text, code) in [(b.start, 1), (b.solution, 0)] {
        std::fs::write(dir.path().join("mine.toml"), text).unwrap();
        let o = leaselab(
            &["exercise", "one-owner", "--check", "mine.toml"],
            dir.path(),
        );
        assert_eq!(o.status.code(), Some(code), "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        let verdict = out.lines().last().unwrap_or_default();
        let expected = if code == 1 {
            "BROKEN on the one schedule this check runs: one owner per message: Worker-A and \
             Worker-B both claimed PAY-001 (explore --sql mine.toml tries every schedule)"
        } else {
            "PASSED on the one schedule this check runs; explore --sql mine.toml tries every schedule"
        };
        assert_eq!(verdict, expected, "{out}");
        // Times on the scenario clock with the lessons' lease, messages by key.
        assert!(
            out.contains("claims PAY-001 (lease v1, until 09:00:03.000)"),
            "{out}"
        );
        assert!(
            out.contains("at 09:00:00.000 Worker-A and Worker-B"),
            "{out}"
        );
        assert!(
            !out.contains("message 1") && !out.contains("until 500"),
            "{out}"
        );
    }
    // Every exercise's lines: no unit of the old check's clock.
    for b in &exercise::BUILT_INS {
        for ex in [b.starter(), b.model()] {
            let v = check::check(b.name, &ex).unwrap().unwrap();
            let all = format!("{:?} {:?}", v.lines, v.broken);
            assert!(all.contains("09:00:0"), "{}: {all}", b.name);
            for old in [
                "message 1",
                "until 500",
                "to 700",
                "past 700",
                "LeaseVersion 1)",
            ] {
                assert!(!all.contains(old), "{}: {old:?} in {all}", b.name);
            }
        }
    }
}

#[test]
fn a_model_finalize_without_the_version_guard_accepts_a_stale_owners_finalize() {
    let b = exercise::built_in("stale-finalize").unwrap();
    let guarded = " AND LeaseVersion = :version";
    assert!(b.solution.contains(guarded));
    let text = b.solution.replace(guarded, "");
    let weakened = leaselab::engine::student::Exercise::parse(&text, "weak.toml").unwrap();
    let verdict = check::stale_finalize(&weakened).unwrap();
    assert!(
        verdict
            .broken
            .as_deref()
            .is_some_and(|r| r.contains("stale lease")),
        "{verdict:?}"
    );
}

#[test]
fn the_list_and_the_reference_match_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(&["exercises"], dir.path());
    assert_eq!(o.status.code(), Some(0));
    let list = stdout(&o);
    assert!(
        list.starts_with("1 one-owner       One owner per message\n"),
        "{list}"
    );
    assert_eq!(list.lines().count(), exercise::BUILT_INS.len());
    let o = leaselab(&["exercises", "--reference"], dir.path());
    let file = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exercise-reference.md"),
    )
    .unwrap();
    assert_eq!(
        stdout(&o),
        file,
        "docs/exercise-reference.md is out of date: leaselab exercises --reference > docs/exercise-reference.md"
    );
}
