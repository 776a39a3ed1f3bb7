//! The rules against a student's statements: the model answers of the built-in exercises
//! (the takeover's claim, the stale-finalize's finalize, the heartbeat's heartbeat) run
//! through `StudentStore` on a real SQLite file. What an exercise does not define is
//! skipped, each rule with its reason, in [`SKIPPED`]; and each starter breaks a rule,
//! named in [`starters_break_their_rules`].

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use leaselab::engine::outbox::{DbOrigin, LeaseEventRow, Outbox, StoreShared};
use leaselab::engine::store::Store;
use leaselab::engine::student::{Exercise, StudentStore};
use leaselab::exercise;

use crate::backend::{Backend, EventTail, Fixture, Fresh};

/// The rules a student's outbox does not take part in, and why: the one place they are
/// said. Each name must be a rule of the suite (`skipped_rules_are_rules_of_the_suite`).
pub const SKIPPED: &[(&str, &str)] = &[
    (
        "an_expired_lease_on_an_older_message_is_claimed_before_a_newer_pending_one",
        "it claims by id; an exercise has no claim by id",
    ),
    (
        "claim_by_id_reports_blocked_with_owner_and_time_left",
        "it claims by id; an exercise has no claim by id",
    ),
    (
        "a_lease_from_before_a_reseed_fences_nothing_after_it",
        "an exercise's lease is its Id and LeaseVersion, not its seeding; and it fails attempts",
    ),
    (
        "naive_mark_writes_without_asking_who_owns_the_row",
        "the leasing-off relay is the lab's, not an exercise's",
    ),
    (
        "leasing_off_loads_every_pending_message_and_marks_it_unguarded",
        "the leasing-off relay is the lab's, not an exercise's",
    ),
    (
        "a_failed_attempt_waits_its_backoff_before_it_is_claimable_again",
        "an exercise defines no failed attempt",
    ),
    (
        "the_last_failed_attempt_dead_letters_the_message_until_a_redrive",
        "an exercise defines no failed attempt nor redrive",
    ),
    (
        "failed_attempts_back_off_then_dead_letter_until_a_redrive",
        "an exercise defines no failed attempt nor redrive",
    ),
    (
        "a_failure_reported_after_the_lease_was_lost_writes_nothing",
        "an exercise defines no failed attempt",
    ),
    (
        "batch_claims_and_the_naive_load_skip_backing_off_and_dead_lettered_rows",
        "it fails attempts and loads without leasing; an exercise does neither",
    ),
];

/// The model answers, as one exercise.
pub fn model() -> Exercise {
    let part = |name: &str| exercise::built_in(name).unwrap().model();
    Exercise {
        name: "model".into(),
        file: "assets/exercises/*.solution.toml".into(),
        claim: part("takeover").claim,
        finalize: part("stale-finalize").finalize,
        heartbeat: part("heartbeat").heartbeat,
        ..part("heartbeat")
    }
}

/// The model answers' outbox.
pub struct Student;

/// An exercise's outbox.
pub struct Answer(pub Arc<Exercise>);

struct File {
    _dir: tempfile::TempDir,
    path: PathBuf,
    shared: Arc<StoreShared>,
    exercise: Arc<Exercise>,
}

impl Backend for Student {
    fn fresh(&self, tag: &str) -> Option<Fresh> {
        static MODEL: OnceLock<Arc<Exercise>> = OnceLock::new();
        Answer(MODEL.get_or_init(|| Arc::new(model())).clone()).fresh(tag)
    }

    fn skips(&self, rule: &str) -> Option<&'static str> {
        SKIPPED
            .iter()
            .find(|(r, _)| *r == rule)
            .map(|(_, why)| *why)
    }
}

impl Backend for Answer {
    fn fresh(&self, _tag: &str) -> Option<Fresh> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let shared = Arc::new(StoreShared::default());
        let (store, origin) = Store::create(&path, shared.clone()).unwrap();
        assert_eq!(origin, DbOrigin::Created);
        let outbox = Box::new(StudentStore::new(store, self.0.clone()));
        let file = File {
            _dir: dir,
            path,
            shared,
            exercise: self.0.clone(),
        };
        Some((Box::new(file), outbox))
    }
}

impl Fixture for File {
    fn connect(&self) -> Box<dyn Outbox> {
        let store = Store::open(&self.path, self.shared.clone()).unwrap();
        Box::new(StudentStore::new(store, self.exercise.clone()))
    }

    fn events_after(&self, seq: u64) -> Vec<LeaseEventRow> {
        Store::open_read_only(&self.path)
            .unwrap()
            .events_after(seq, i64::MAX as u64)
            .unwrap()
    }

    fn tail(&self) -> Box<dyn EventTail> {
        Box::new(Tail {
            store: Store::open_read_only(&self.path).unwrap(),
            last: 0,
        })
    }
}

struct Tail {
    store: Store,
    last: u64,
}

impl EventTail for Tail {
    fn next_rows(&mut self) -> Vec<LeaseEventRow> {
        let rows = self.store.events_after(self.last, 1_000).unwrap();
        if let Some(row) = rows.last() {
            self.last = row.seq;
        }
        rows
    }

    fn last(&self) -> u64 {
        self.last
    }
}

every_rule!(crate::student::Student);

/// The model with `name`'s starter in place of the operation the exercise is about.
fn with_starter(name: &str) -> Answer {
    let starter = exercise::built_in(name).unwrap().starter();
    let mut e = model();
    match name {
        "stale-finalize" => e.finalize = starter.finalize,
        "heartbeat" => e.heartbeat = starter.heartbeat,
        _ => e.claim = starter.claim,
    }
    Answer(Arc::new(e))
}

/// One rule of the suite, as a function of a backend.
type Rule = fn(&dyn Backend);

/// Whether `rule` fails against `backend`.
fn fails(rule: Rule, backend: &dyn Backend) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rule(backend))).is_err()
}

/// Each starter breaks the rule its exercise teaches (one-owner's breaks it only when two
/// workers' statements interleave, which `tests/exercises.rs` schedules; every sequential
/// rule holds for it).
#[test]
fn starters_break_their_rules() {
    use crate::{claiming, finalizing, retries};
    let breaks: [(&str, Rule); 3] = [
        (
            "takeover",
            claiming::claim_takes_pending_oldest_first_and_an_expired_lease_only_after_its_expiry,
        ),
        (
            "stale-finalize",
            finalizing::finalize_with_a_stale_lease_version_is_rejected_even_under_the_same_name,
        ),
        (
            "heartbeat",
            retries::a_heartbeat_extends_only_the_holders_live_lease_and_never_shortens_it,
        ),
    ];
    for (name, rule) in breaks {
        assert!(
            fails(rule, &with_starter(name)),
            "{name}'s starter keeps the rule"
        );
        assert!(
            !fails(rule, &Answer(Arc::new(model()))),
            "the model breaks {name}'s rule"
        );
    }
    let one_owner = with_starter("one-owner");
    assert!(!fails(
        claiming::lease_version_increases_on_every_claim,
        &one_owner
    ));
}

/// Each built-in model answer's operations are the model's, so they pass what it passes.
#[test]
fn every_model_answer_is_part_of_the_model() {
    let m = model();
    for b in &exercise::BUILT_INS {
        let answer = b.model();
        assert_eq!(answer.claim, m.claim, "{}", b.name);
        assert_eq!(answer.finalize, m.finalize, "{}", b.name);
        if let Some(h) = answer.heartbeat {
            assert_eq!(Some(h), m.heartbeat, "{}", b.name);
        }
    }
}

/// A skip names a rule of the suite: a renamed rule cannot leave a stale skip behind.
#[test]
fn skipped_rules_are_rules_of_the_suite() {
    let suite = include_str!("main.rs");
    for (rule, why) in SKIPPED {
        assert!(
            suite.contains(&format!("{rule},")),
            "{rule} is no rule of the suite"
        );
        assert!(!why.is_empty());
    }
}
