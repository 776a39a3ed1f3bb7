//! The live `--sql` dashboard judges a student's file as `explore --sql` does: lost and paid
//! from what happened, not from what the rows say, with the provider that honours the
//! idempotency key.

mod support;

use std::sync::Arc;

use leaselab::engine::checker::HistoryCheck;
use leaselab::engine::student::Exercise;
use leaselab::exercise::built_in;
use leaselab::ui::app::App;
use leaselab::ui::DashboardOptions;
use support::{app, frame_lines, press};

/// The model answer's claim: one IMMEDIATE transaction that reads and takes.
const CLAIM: &str = r#"[claim]
transaction = "immediate"
statements = [
  "SELECT Id FROM OutboxMessages WHERE ((Status = 'Pending' AND AvailableAtUtc <= :now) OR (Status = 'Processing' AND LockedUntilUtc < :now)) ORDER BY CreatedAtUtc, Id LIMIT 1",
  "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, LockedUntilUtc = :lease_until, LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1 WHERE Id = :id AND ((Status = 'Pending' AND AvailableAtUtc <= :now) OR (Status = 'Processing' AND LockedUntilUtc < :now)) RETURNING Id, LeaseVersion",
]
"#;

/// The model answer's finalize: fenced on the owner and the lease version.
const FINALIZE: &str = r#"[finalize]
transaction = "immediate"
statements = ["UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version"]
"#;

/// A claim that marks every payment Paid and every row Processed, then selects nothing.
const PAYS_NOBODY: &str = r#"[claim]
transaction = "none"
statements = [
  "UPDATE Payments SET PaymentStatus = 'Paid' WHERE PaymentStatus = 'Pending'",
  "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Status = 'Pending'",
  "SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending' LIMIT 1",
]
"#;

/// A claim that deletes every row.
const DELETES_ALL: &str = r#"[claim]
transaction = "none"
statements = [
  "DELETE FROM OutboxMessages",
  "SELECT Id, LeaseVersion FROM OutboxMessages LIMIT 1",
]
"#;

/// A finalize that marks every Pending message Processed beside its own.
const MARKS_THE_OTHERS: &str = r#"[finalize]
transaction = "immediate"
statements = [
  "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Status = 'Pending' OR Id = :id",
  "UPDATE OutboxMessages SET LockedUntilUtc = NULL WHERE Id = :id AND LockedBy = :worker AND LeaseVersion = :version",
]
"#;

/// An exercise file of this claim and finalize, parsed.
fn exercise(claim: &str, finalize: &str) -> Arc<Exercise> {
    let text = format!(
        "name = \"probe\"\ntitle = \"Probe\"\ntask = \"Probe the verdict.\"\n\n{claim}\n{finalize}"
    );
    Arc::new(Exercise::parse(&text, "probe.toml").expect("the file loads"))
}

/// Free play with two workers running `exercise` on three payments.
fn live(exercise: Arc<Exercise>) -> App {
    app(DashboardOptions {
        messages: Some(3),
        sql: Some(exercise),
        ..DashboardOptions::default()
    })
}

/// The verdict on `exercise`, run live from the start.
fn verdict(exercise: Arc<Exercise>) -> HistoryCheck {
    judged(&mut live(exercise))
}

/// Step the paused dashboard until its outbox has drained, then the history check's
/// verdict (which waits, a few frames, for events that explain the rows it read).
fn judged(app: &mut App) -> HistoryCheck {
    for _ in 0..200 {
        app.refresh(20, 10);
        if app.drained() {
            break;
        }
        press(app, 'n');
        // Time moves only when told, so a worker waiting on nothing still gets its turn.
        if !app.drained() && app.next_mover().is_none() {
            press(app, 'A');
        }
    }
    assert!(app.drained(), "the outbox did not drain");
    support::processes::wait_for("the history check's verdict", || {
        app.refresh(20, 10);
        app.snapshot().history.clone()
    })
}

#[test]
fn the_model_answer_loses_nothing_and_pays_nobody_without_a_call() {
    let h = verdict(exercise(CLAIM, FINALIZE));
    assert!(h.passed(), "{:?}", h.findings());
    assert_eq!((h.seeded, h.processed), (3, 3));
}

#[test]
fn a_claim_that_marks_everything_paid_and_processed_loses_every_message() {
    let h = verdict(exercise(PAYS_NOBODY, FINALIZE));
    assert_eq!(h.lost.count, 3, "{h:?}");
    assert!(
        h.lost.examples[0].starts_with("PAY-001: marked Processed by hand"),
        "{h:?}"
    );
    // Its own failure: Paid, and the provider never asked.
    assert_eq!(h.paid_without_call.count, 3, "{h:?}");
    assert!(h
        .findings()
        .contains(&"3 paid without a provider call".to_string()));
}

#[test]
fn a_claim_that_deletes_every_row_loses_every_message() {
    // With no row left the outbox holds no work: the verdict comes, and says lost.
    let h = verdict(exercise(DELETES_ALL, FINALIZE));
    assert_eq!(h.lost.count, 3, "{h:?}");
    assert!(h.lost.examples[0].contains("deleted"), "{h:?}");
    assert_eq!(h.paid_without_call.count, 0);
}

#[test]
fn a_finalize_that_marks_the_other_messages_processed_loses_them() {
    let h = verdict(exercise(CLAIM, MARKS_THE_OTHERS));
    // Worker-A and Worker-B take PAY-001 and PAY-002; the first finalize marks PAY-003.
    assert_eq!(h.lost.count, 1, "{h:?}");
    assert_eq!(
        h.lost.examples,
        ["PAY-003: marked Processed by hand, never called for or finalized"]
    );
    assert_eq!(h.paid_without_call.count, 0, "its payment stays Pending");
}

/// `explore --sql` grades with the provider that honours the idempotency key; so does the
/// live dashboard, and it says so: the naive claim's race is judged an overlap, as the
/// explorer judges it, not a payment made twice.
#[test]
fn the_live_dashboard_grades_with_the_idempotent_provider_as_explore_does_and_says_so() {
    let starter = Arc::new(built_in("one-owner").unwrap().starter());
    let mut app = live(starter);
    assert!(app.engine.provider.is_idempotent());
    let screen = frame_lines(&mut app, 80, 24).join("\n");
    assert!(screen.contains("Ledgers · idempotent provider"), "{screen}");
    assert!(app.log.contains(leaselab::ui::app::IDEMPOTENT_FOR_SQL));
    let h = judged(&mut app);
    // Both workers took PAY-001 and both called the provider, which did the work once.
    let p = &app.engine.provider;
    assert!(
        p.status_checks_total() > p.side_effects_total(),
        "{} calls, {} side effects",
        p.status_checks_total(),
        p.side_effects_total()
    );
    assert!(h.overlapping_leases.count > 0, "{h:?}");
    assert_eq!(h.duplicate_side_effects.count, 0, "{h:?}");
    // Free play without a student's file keeps the provider that does every call's work.
    let plain = app_without_sql();
    assert!(!plain.engine.provider.is_idempotent());
}

fn app_without_sql() -> App {
    app(DashboardOptions::default())
}
