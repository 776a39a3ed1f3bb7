//! A corpus of student files, each with the verdict `explore --sql` must give it: for each
//! way the grader once called unsafe SQL safe (or misjudged it), a wrong file it passed and
//! a right file beside it that must pass. The searches run to their close, under the
//! default bounds, on 2 workers and 1 or 2 messages.

use leaselab::explore::{Check, Outcome};

use super::{file, grade, grade_with, write, CLAIMABLE, FENCED_FINALIZE, TAKE};

/// What a file must get.
#[derive(Debug)]
enum Want {
    /// The search closes and no check breaks.
    Safe,
    /// These checks break, among others.
    Broken(&'static [Check]),
    /// Nothing fails, and a message is told as given up on purpose, not stuck.
    GaveUp,
}

/// The takeover model answer's claim, its claimable condition as given.
fn takeover_claim(claimable: &str) -> Vec<String> {
    vec![
        format!("SELECT Id, LeaseVersion FROM OutboxMessages WHERE {claimable} ORDER BY Id LIMIT 1"),
        format!("{TAKE} WHERE Id = :id AND LeaseVersion = :version AND {claimable} RETURNING Id, LeaseVersion"),
    ]
}

/// A visibility timeout in `AvailableAtUtc` (a claim hides the message until its lease's
/// end), the retry's time compared as `cmp`.
fn visibility_claim(cmp: &str) -> Vec<String> {
    let due =
        format!("(Status = 'Pending' OR Status = 'Processing') AND AvailableAtUtc {cmp} :now");
    vec![
        format!("SELECT Id, LeaseVersion FROM OutboxMessages WHERE {due} ORDER BY Id LIMIT 1"),
        format!(
            "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, \
             LockedUntilUtc = :lease_until, AvailableAtUtc = :lease_until, \
             LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1 \
             WHERE Id = :id AND LeaseVersion = :version AND {due} RETURNING Id, LeaseVersion"
        ),
    ]
}

fn judged(name: &str, text: &str, messages: u64, want: Want) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, &format!("{name}.toml"), text);
    let r = grade(&path, 2, messages, 60);
    // Where each time stands among the instants an answer may change is all a state keeps
    // of it: the search that keeps each exact distance finds the same checks broken.
    if messages == 1 {
        let exact = grade_with(&path, 2, messages, 60, true);
        assert_eq!(
            exact.broken(),
            r.broken(),
            "{name}: {}\n{}",
            exact.text(),
            r.text()
        );
        assert!(
            exact.states >= r.states,
            "{name}: {} < {}",
            exact.states,
            r.states
        );
    }
    let failing: Vec<Check> = r.broken().into_iter().filter(|c| c.fails()).collect();
    match want {
        Want::Safe => {
            assert_eq!(r.outcome(), Outcome::Safe, "{name}: {}", r.text());
            assert!(!r.text().contains("note"), "{name}: {}", r.text());
        }
        Want::Broken(checks) => {
            assert_eq!(r.outcome(), Outcome::Broken, "{name}: {}", r.text());
            for c in checks {
                assert!(failing.contains(c), "{name}: {c:?}: {}", r.text());
            }
        }
        Want::GaveUp => {
            assert_eq!(r.outcome(), Outcome::Safe, "{name}: {}", r.text());
            assert!(r.broken().contains(&Check::GaveUp), "{name}: {}", r.text());
            assert!(r.text().contains("note  gave up"), "{name}: {}", r.text());
        }
    }
}

#[test]
fn a_claim_off_by_one_millisecond_at_a_leases_end_is_caught_and_the_right_one_passes() {
    let wrong = CLAIMABLE.replace("LockedUntilUtc < :now", "LockedUntilUtc <= :now");
    let text = |claimable: &str| {
        file(
            "immediate",
            &takeover_claim(claimable),
            FENCED_FINALIZE,
            None,
        )
    };
    judged(
        "at-the-end",
        &text(&wrong),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
    judged("after-the-end", &text(CLAIMABLE), 1, Want::Safe);
}

#[test]
fn a_claim_off_by_one_millisecond_at_a_retrys_time_is_caught_and_the_right_one_passes() {
    let text = |cmp: &str| file("immediate", &visibility_claim(cmp), FENCED_FINALIZE, None);
    judged(
        "due-at",
        &text("<="),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
    judged("due-after", &text("<"), 1, Want::Safe);
}

#[test]
fn a_claim_with_a_grace_period_is_not_stuck() {
    let grace = CLAIMABLE.replace("LockedUntilUtc < :now", "LockedUntilUtc < :now - 1000");
    let text = file("immediate", &takeover_claim(&grace), FENCED_FINALIZE, None);
    judged("grace", &text, 1, Want::Safe);
}

#[test]
fn a_claim_that_gives_a_message_up_after_its_attempts_is_told_as_given_up_not_stuck() {
    let once = CLAIMABLE.replace(
        "(Status = 'Processing' AND LockedUntilUtc < :now)",
        "(Status = 'Processing' AND LockedUntilUtc < :now AND Attempts < 1)",
    );
    let text = file("immediate", &takeover_claim(&once), FENCED_FINALIZE, None);
    judged("once", &text, 1, Want::GaveUp);
    // Without the attempts, a message left behind is stuck.
    let pending_only = "(Status = 'Pending' AND AvailableAtUtc <= :now)";
    let text = file(
        "immediate",
        &takeover_claim(pending_only),
        FENCED_FINALIZE,
        None,
    );
    judged("pending-only", &text, 1, Want::Broken(&[Check::Stuck]));
}

#[test]
fn a_file_that_pays_nobody_or_deletes_every_row_loses_its_messages() {
    let pays_nobody = vec![
        "UPDATE Payments SET PaymentStatus = 'Paid', TransactionId = 'tx-fake'".to_string(),
        "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, \
         LockedBy = NULL, LockedUntilUtc = NULL"
            .to_string(),
        "SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending' LIMIT 1".to_string(),
    ];
    // Each statement on its own: the marks commit, and the claim then finds nothing.
    let text = file("none", &pays_nobody, FENCED_FINALIZE, None);
    judged(
        "pays-nobody",
        &text,
        2,
        Want::Broken(&[Check::Lost, Check::PaidWithoutCall]),
    );
    let deletes = vec![
        "DELETE FROM OutboxMessages".to_string(),
        "SELECT Id, LeaseVersion FROM OutboxMessages LIMIT 1".to_string(),
    ];
    let text = file("none", &deletes, FENCED_FINALIZE, None);
    judged("deletes", &text, 2, Want::Broken(&[Check::Lost]));
}

#[test]
fn a_finalize_that_marks_the_other_message_processed_loses_it() {
    let other = "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, \
         LockedUntilUtc = NULL, LockedBy = NULL WHERE Id <> :id AND Status = 'Pending'";
    let claim = takeover_claim(CLAIMABLE);
    judged(
        "the-other",
        &file("immediate", &claim, other, None),
        2,
        Want::Broken(&[Check::Lost]),
    );
}

#[test]
fn a_lease_that_never_ends_leaves_its_message_stuck() {
    let claim: Vec<String> = takeover_claim(CLAIMABLE)
        .into_iter()
        .map(|s| {
            s.replace(
                "LockedUntilUtc = :lease_until",
                "LockedUntilUtc = 9223372036854775807",
            )
        })
        .collect();
    let text = file("immediate", &claim, FENCED_FINALIZE, None);
    judged("for-ever", &text, 1, Want::Broken(&[Check::Stuck]));
}

/// A finalize with no guard: the explanation names the stale finalize that first wrote the
/// row, and what the row was when the later one met it.
#[test]
fn an_explanation_names_the_step_that_first_broke_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let unguarded = "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, \
         LockedUntilUtc = NULL WHERE Id = :id";
    let path = write(
        &dir,
        "unguarded.toml",
        &file("immediate", &takeover_claim(CLAIMABLE), unguarded, None),
    );
    let r = grade(&path, 2, 1, 60);
    let text = r.text();
    assert!(
        text.contains(
            "accepted, though the row was already Processed by Worker-A's finalize under lease v1"
        ),
        "{text}"
    );
    assert!(
        text.contains("under lease v1 accepted, though the row was at lease v2 owned by Worker-B"),
        "{text}"
    );
}

/// The takeover model answer's claim with `expired` in place of `LockedUntilUtc < :now`.
fn takeover_with(expired: &str) -> String {
    let claimable = CLAIMABLE.replace("LockedUntilUtc < :now", expired);
    file(
        "immediate",
        &takeover_claim(&claimable),
        FENCED_FINALIZE,
        None,
    )
}

// A threshold the file computes (`30 * 1000`, `/ 1000 > 30`) is an instant at which the
// claim's answer changes, as much as one it writes as one number. A claim that also takes a
// message in flight for more than 30 s since it was created takes it from under a live
// lease: at 09:00:30.001 Worker-A claims PAY-001 (until 09:00:33.001), and Worker-B claims
// it at once. The same file with `30000` is caught.

#[test]
fn a_threshold_written_as_a_product_is_reached() {
    judged(
        "in-flight-30000",
        &takeover_with("(LockedUntilUtc < :now OR :now - CreatedAtUtc > 30000)"),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
    judged(
        "in-flight-30-x-1000",
        &takeover_with("(LockedUntilUtc < :now OR :now - CreatedAtUtc > 30 * 1000)"),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
}

#[test]
fn a_threshold_in_whole_seconds_is_reached() {
    judged(
        "in-flight-seconds",
        &takeover_with("(LockedUntilUtc < :now OR (:now - CreatedAtUtc) / 1000 > 30)"),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
}

// A grace period the file computes is reached too: the claim takes the expired lease 1 s
// (or 3 s) after its end, and no message is stuck.

#[test]
fn a_grace_period_written_as_a_product_is_not_stuck() {
    judged(
        "grace-2-x-500",
        &takeover_with("LockedUntilUtc < :now - 2 * 500"),
        1,
        Want::Safe,
    );
}

#[test]
fn a_grace_period_in_whole_seconds_is_not_stuck() {
    judged(
        "grace-seconds",
        &takeover_with("(:now - LockedUntilUtc) / 1000 > 2"),
        1,
        Want::Safe,
    );
}

/// A lease the claim writes in whole seconds (`:now / 1000 + 3`) and compares in seconds
/// ends after the worker's own (its 3000 ms from the claim): a takeover waits for the
/// fourth second. The search cannot know every instant such a file compares at: it does not
/// call a message stuck, nor the file safe; it says why, and exits as not a pass.
#[test]
fn a_lease_kept_in_seconds_is_neither_stuck_nor_safe() {
    let claim: Vec<String> =
        takeover_claim(&CLAIMABLE.replace("LockedUntilUtc < :now", "LockedUntilUtc < :now / 1000"))
            .into_iter()
            .map(|s| {
                s.replace(
                    "LockedUntilUtc = :lease_until",
                    "LockedUntilUtc = :now / 1000 + 3",
                )
            })
            .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "seconds-lease.toml",
        &file("immediate", &claim, FENCED_FINALIZE, None),
    );
    let r = grade(&path, 2, 1, 60);
    assert_eq!(r.outcome(), Outcome::Unfinished, "{}", r.text());
    assert_eq!(r.broken(), [], "{}", r.text());
    assert!(
        r.text()
            .contains("stuck: not judged: the file multiplies or divides :now"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("NOT A PASS"), "{}", r.text());
}

/// Offsets on the column's side, differences, and numbers hidden from a plain reading (a
/// hex literal, a comment, a string): each says when a lease has ended; each off by one
/// is caught, each right one passes.
#[test]
fn a_leases_end_written_every_way_is_judged_at_its_last_millisecond() {
    for (name, expired, safe) in [
        ("column-plus", "LockedUntilUtc + 100 < :now", true),
        ("column-minus", "LockedUntilUtc - 100 < :now", false),
        ("difference", ":now - LockedUntilUtc > 0", true),
        ("difference-at", ":now - LockedUntilUtc >= 0", false),
        (
            "lease-less-3001",
            "LockedUntilUtc < :lease_until - 3001",
            true,
        ),
        (
            "lease-less-2999",
            "LockedUntilUtc < :lease_until - 2999",
            false,
        ),
        ("hex", "LockedUntilUtc < :now + 0x1", false),
        ("comment", "LockedUntilUtc < :now /* + 1 */ + 1", false),
        ("string", "LockedUntilUtc < :now + '1'", false),
    ] {
        let want = match safe {
            true => Want::Safe,
            false => Want::Broken(&[Check::LeaseExclusivity]),
        };
        judged(name, &takeover_with(expired), 1, want);
    }
}

/// One `UPDATE ... WHERE Id = (SELECT ...)` is atomic even outside a transaction.
#[test]
fn a_claim_in_one_statement_with_a_subquery_is_judged_by_its_condition() {
    let one = |claimable: &str| {
        vec![format!(
            "{TAKE} WHERE Id = (SELECT Id FROM OutboxMessages WHERE {claimable} ORDER BY Id \
             LIMIT 1) RETURNING Id, LeaseVersion"
        )]
    };
    let at_end = CLAIMABLE.replace("LockedUntilUtc < :now", "LockedUntilUtc <= :now");
    judged(
        "subquery",
        &file("none", &one(CLAIMABLE), FENCED_FINALIZE, None),
        1,
        Want::Safe,
    );
    judged(
        "subquery-at-end",
        &file("none", &one(&at_end), FENCED_FINALIZE, None),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
}

/// A deferred read-then-write whose update has no guard: the second writer's snapshot is
/// stale, SQLite refuses it the write lock, and it starts again; no two owners.
#[test]
fn a_deferred_claim_without_a_guard_is_kept_safe_by_the_busy_refusal() {
    let claim = vec![
        format!(
            "SELECT Id, LeaseVersion FROM OutboxMessages WHERE {CLAIMABLE} ORDER BY Id LIMIT 1"
        ),
        format!("{TAKE} WHERE Id = :id RETURNING Id, LeaseVersion"),
    ];
    judged(
        "deferred-unguarded",
        &file("deferred", &claim, FENCED_FINALIZE, None),
        1,
        Want::Safe,
    );
    judged(
        "none-unguarded",
        &file("none", &claim, FENCED_FINALIZE, None),
        1,
        Want::Broken(&[Check::LeaseExclusivity]),
    );
}

/// A rescue folded into the claim: every statement on its own, the first puts each expired
/// lease back to Pending with a second's backoff, the last takes a Pending row; the
/// finalize fences on the owner's name alone. A stalled worker's replacement runs under the
/// same name: it takes the message back after the lease ran out, and the stalled one's
/// finalize is accepted. The shortest schedule is 17 steps at 2 messages.
#[test]
fn a_rescue_race_longer_than_twelve_steps_is_found_at_two_messages() {
    let expired = "Status = 'Processing' AND LockedUntilUtc < :now";
    let rescue = format!(
        "UPDATE OutboxMessages SET \
         LockedBy = CASE WHEN {expired} THEN NULL ELSE LockedBy END, \
         LockedUntilUtc = CASE WHEN {expired} THEN NULL ELSE LockedUntilUtc END, \
         AvailableAtUtc = CASE WHEN {expired} THEN :now + 1000 ELSE AvailableAtUtc END, \
         Status = CASE WHEN {expired} THEN 'Pending' ELSE Status END \
         WHERE ProcessedAtUtc IS NULL"
    );
    let claim = vec![
        rescue,
        "SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending' \
         AND AvailableAtUtc <= :now ORDER BY Id LIMIT 1"
            .to_string(),
        format!("{TAKE} WHERE Id = :id AND Status = 'Pending' RETURNING Id, LeaseVersion"),
    ];
    let by_owner = "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, \
         LockedUntilUtc = NULL WHERE Id = :id AND LockedBy = :worker";
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "rescue.toml", &file("none", &claim, by_owner, None));
    let r = grade(&path, 2, 2, 60);
    assert_eq!(r.outcome(), Outcome::Broken, "{}", r.text());
    let v = r
        .verdicts
        .iter()
        .find(|v| v.check == Check::NonOwnerFinalize)
        .expect("a verdict on finalize by a non-owner");
    assert!(v.shortest.len() > 12, "{}", r.text());
    // A worker stalled between two statements of its claim holds no lease: it is not told
    // as holding one.
    assert!(!r.text().contains("holding ;"), "{}", r.text());
}
