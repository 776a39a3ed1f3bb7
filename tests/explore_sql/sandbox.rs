//! What the sandbox refuses before a search starts (the computer's clock, chance, a
//! change of a row's Id, a row the lab did not seed), and a stop that ends a search inside a
//! student's statement.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::support::{self, leaselab, stderr};
use super::{file, safe_claim, write, CLAIMABLE, FENCED_FINALIZE, TAKE};

/// `explore --sql` of `text`: refused in one line with exit 2, holding each of `needles`.
fn refused(name: &str, text: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, name, text);
    let o = leaselab(
        &[
            "explore",
            "--sql",
            path.to_str().unwrap(),
            "--max-depth",
            "6",
        ],
        dir.path(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    assert_eq!(err.lines().count(), 1, "{name}: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
}

#[test]
fn a_claim_that_changes_an_id_or_takes_a_row_it_added_is_refused_without_a_panic() {
    // Both once made the search panic (index out of bounds) with exit 101.
    let moved = vec![
        format!(
            "SELECT Id, LeaseVersion FROM OutboxMessages WHERE {CLAIMABLE} ORDER BY Id LIMIT 1"
        ),
        format!("{TAKE}, Id = Id + 10 WHERE Id = :id AND {CLAIMABLE} RETURNING Id, LeaseVersion"),
    ];
    refused(
        "moved.toml",
        &file("immediate", &moved, FENCED_FINALIZE, None),
        &["moved.toml:9: the claim's statement 2 (UPDATE OutboxMessages SE…) may not change OutboxMessages.Id"],
    );
    let added = vec![
        "INSERT INTO Payments (IdempotencyKey, Amount, CreatedAtUtc) VALUES ('PAY-900', 1, 0)".to_string(),
        "INSERT INTO OutboxMessages (Id, PaymentKey, Status, LockedBy, LockedUntilUtc, CreatedAtUtc) \
         VALUES (900, 'PAY-900', 'Processing', :worker, :lease_until, 0) RETURNING Id, LeaseVersion"
            .to_string(),
    ];
    refused(
        "added.toml",
        &file("immediate", &added, FENCED_FINALIZE, None),
        &["added.toml:8: the claim's statement 1 (INSERT INTO Payments (Id…) may not insert into Payments: the lab seeds the messages and their payments"],
    );
}

#[test]
fn the_computers_clock_and_chance_are_refused_before_the_search() {
    // random() made the search give up with exit 3; the clock read the computer's time.
    for (name, condition, why) in [
        (
            "random.toml",
            "random() <> 0",
            "calls random(), which is chance",
        ),
        (
            "clock.toml",
            "datetime('now') > ''",
            "calls datetime(), which reads this computer's clock",
        ),
        (
            "now.toml",
            "unixepoch() * 1000 >= :now",
            "calls unixepoch(), which reads",
        ),
        (
            "stamp.toml",
            "CURRENT_TIMESTAMP > ''",
            "uses CURRENT_TIMESTAMP, which reads",
        ),
    ] {
        let claim: Vec<String> = safe_claim()
            .into_iter()
            .map(|q| q.replacen(" WHERE ", &format!(" WHERE {condition} AND "), 1))
            .collect();
        refused(
            name,
            &file("immediate", &claim, FENCED_FINALIZE, None),
            &[
                &format!("{name}:8: the claim's statement 1 (SELECT Id, LeaseVersion …) "),
                why,
            ],
        );
    }
}

#[test]
fn ctrl_c_stops_the_search_inside_a_students_statement() {
    // The statement may run ten minutes; Ctrl-C ends the search at once, with its own line.
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "endless.toml", &support::endless_claim());
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["explore", "--sql", path.to_str().unwrap()])
        .current_dir(dir.path())
        .env(support::LONG_STATEMENTS.0, support::LONG_STATEMENTS.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_until_catching(child.id(), libc::SIGINT);
    // Inside the statement: the search uses a few milliseconds before it.
    support::wait_until_busy(child.id(), Duration::from_millis(300));
    let start = Instant::now();
    let o = support::signal_and_wait(child, libc::SIGINT, "explore --sql");
    let took = start.elapsed();
    assert_eq!(
        stderr(&o),
        "leaselab: interrupted by SIGINT; the search stopped; nothing was saved\n"
    );
    assert_eq!(o.status.code(), Some(130));
    assert!(took < Duration::from_secs(10), "{took:?}");
}
