//! Every check leaselab makes, as one table of data: the headless report lists the ones
//! that apply to its run, the dashboard the history checker's own, and tests read both.

use super::catalog::Scenario;
use super::outcome::RunOutcome;
use super::proof::StoryProof;
use crate::engine::checker::HistoryCheck;
use crate::engine::outbox::RowsPerKey;
use crate::engine::worker_id::WorkerId;

/// A check as made: its name, whether it passed, and what it found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// Which runs a check is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AppliesTo {
    Every,
    /// The BEFORE story (leasing off, competing loads): the problem must be reproduced.
    Reproduction,
    /// Every other story: safety must hold.
    Safety,
    /// Safety with leasing on: ownership exists to be violated.
    Leasing,
    /// Runs that told the lease-expiry story.
    Story,
}

impl AppliesTo {
    fn holds(self, o: &RunOutcome) -> bool {
        let reproduction = o.scenario == Scenario::CompetingNoClaim;
        match self {
            AppliesTo::Every => true,
            AppliesTo::Reproduction => reproduction,
            AppliesTo::Safety => !reproduction,
            AppliesTo::Leasing => !reproduction && o.leasing,
            AppliesTo::Story => o.story.is_some(),
        }
    }
}

/// One check as data: its name, the runs it is made for, its verdict and its detail line.
pub struct CheckDef {
    pub name: &'static str,
    applies: AppliesTo,
    judge: Judge,
}

/// What a check looks at, and how it decides.
enum Judge {
    /// The whole headless run.
    Run {
        passed: fn(&RunOutcome) -> bool,
        detail: fn(&RunOutcome) -> String,
    },
    /// The history checker's findings alone, which the dashboard has too.
    History {
        passed: fn(&HistoryCheck) -> bool,
        detail: fn(&HistoryCheck) -> String,
    },
}

/// Every check a report makes, in the order it prints them.
pub const CHECKS: &[CheckDef] = &[
    CheckDef {
        name: "every worker loaded the full pending snapshot",
        applies: AppliesTo::Reproduction,
        judge: Judge::Run {
            passed: |o| {
                (0..o.workers)
                    .map(|s| WorkerId::first(s).to_string())
                    .all(|w| o.ledger.loaded_by_worker.get(&w).copied().unwrap_or(0) >= o.messages)
            },
            detail: loaded_detail,
        },
    },
    CheckDef {
        name: "duplicate processing reproduced",
        applies: AppliesTo::Reproduction,
        judge: Judge::Run {
            passed: |o| {
                let l = &o.ledger;
                o.workers > 1
                    && l.processed_more_than_once() == o.messages
                    && l.processing_attempts == o.workers as u64 * o.messages
            },
            detail: |o| {
                let l = &o.ledger;
                format!(
                    "{} processing attempts for {} unique messages, {} processed more than once",
                    l.processing_attempts,
                    l.unique_processed(),
                    l.processed_more_than_once()
                )
            },
        },
    },
    CheckDef {
        name: "the final table still looks perfect",
        applies: AppliesTo::Reproduction,
        judge: Judge::Run {
            passed: |o| {
                o.outbox.processed == o.messages
                    && o.outbox.drained()
                    && o.payments.pending == 0
                    && o.max_rows_per_key
                        == RowsPerKey {
                            payments: 1,
                            outbox: 1,
                        }
            },
            detail: |o| {
                format!(
                "outbox {} Processed / {} Pending / {} Processing; at most {} payment and {} outbox row per key",
                o.outbox.processed, o.outbox.pending, o.outbox.processing, o.max_rows_per_key.payments, o.max_rows_per_key.outbox
            )
            },
        },
    },
    CheckDef {
        name: "each message processed exactly once",
        applies: AppliesTo::Safety,
        judge: Judge::Run {
            passed: |o| o.ledger.exactly_once(o.messages),
            detail: |o| {
                let l = &o.ledger;
                format!(
                    "{} of {} unique, {} processed more than once, {} dead-lettered",
                    l.unique_processed(),
                    o.messages,
                    l.processed_more_than_once(),
                    l.dead.len()
                )
            },
        },
    },
    CheckDef {
        name: "zero ownership violations",
        applies: AppliesTo::Leasing,
        judge: Judge::Run {
            passed: |o| o.ledger.ownership_violations == 0,
            detail: |o| {
                format!(
                    "{} violations, {} finalizes rejected for a lost lease",
                    o.ledger.ownership_violations, o.ledger.rejected_finalizes
                )
            },
        },
    },
    CheckDef {
        name: "nothing left Pending or Processing",
        applies: AppliesTo::Safety,
        judge: Judge::Run {
            // A dead letter's payment stays Pending until someone redrives it.
            passed: |o| o.outbox.drained() && o.payments.pending == o.outbox.dead_lettered,
            detail: |o| {
                format!(
                    "outbox {} Processed / {} Pending / {} Processing / {} DeadLettered; payments {} Pending",
                    o.outbox.processed,
                    o.outbox.pending,
                    o.outbox.processing,
                    o.outbox.dead_lettered,
                    o.payments.pending
                )
            },
        },
    },
    CheckDef {
        name: "at most one payment row and one outbox row per key",
        applies: AppliesTo::Safety,
        judge: Judge::Run {
            passed: |o| o.max_rows_per_key.none_duplicated() && o.orphans == 0,
            detail: |o| {
                format!(
                    "max {} payment / {} outbox rows per key, {} orphans",
                    o.max_rows_per_key.payments, o.max_rows_per_key.outbox, o.orphans
                )
            },
        },
    },
    CheckDef {
        name: "one gateway creation call per key, none from workers",
        applies: AppliesTo::Every,
        judge: Judge::Run {
            passed: |o| {
                o.keys_created == o.messages
                    && o.max_creations_per_key == 1
                    && o.creations_by_workers == 0
            },
            detail: |o| {
                format!(
                    "{} creation calls for {} keys, {} from workers",
                    o.gateway_creation_calls, o.keys_created, o.creations_by_workers
                )
            },
        },
    },
    CheckDef {
        name: "transaction ids only from the provider, only on Paid",
        applies: AppliesTo::Every,
        judge: Judge::Run {
            passed: |o| {
                o.txids_not_issued == 0
                    && o.payments.failed_with_txid == 0
                    && o.payments.paid_with_txid == o.payments.paid
            },
            detail: |o| {
                format!(
                    "{} Paid with an id, {} Failed with an id, {} ids the provider never issued",
                    o.payments.paid_with_txid, o.payments.failed_with_txid, o.txids_not_issued
                )
            },
        },
    },
    CheckDef {
        name: "no Paid without the provider saying so",
        applies: AppliesTo::Every,
        judge: Judge::Run {
            passed: |o| o.paid_without_provider == 0,
            detail: |o| {
                format!(
                    "{} Paid payments the provider never confirmed",
                    o.paid_without_provider
                )
            },
        },
    },
    CheckDef {
        name: "processing ledger agrees with the provider",
        applies: AppliesTo::Every,
        judge: Judge::Run {
            passed: |o| o.ledger.processing_attempts == o.provider_status_checks,
            detail: |o| {
                format!(
                    "{} attempts in the ledger, {} calls counted by the provider",
                    o.ledger.processing_attempts, o.provider_status_checks
                )
            },
        },
    },
    CheckDef {
        name: "no worker failed",
        applies: AppliesTo::Every,
        judge: Judge::Run {
            passed: |o| o.ledger.failures == 0 && o.ledger.panics == 0,
            detail: |o| {
                format!(
                    "{} database failures, {} panics",
                    o.ledger.failures, o.ledger.panics
                )
            },
        },
    },
    // The checker must be able to fail: here it has to catch the duplicates.
    CheckDef {
        name: "the history checker catches the duplicates",
        applies: AppliesTo::Reproduction,
        judge: Judge::Run {
            passed: |o| o.history.duplicated.count > 0,
            detail: |o| format!("{} duplicated messages found", o.history.duplicated.count),
        },
    },
    // The history checker's rules: the dashboard shows these same entries.
    CheckDef {
        name: "history: nothing lost",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.lost.count == 0,
            detail: |h| {
                h.lost.detail(&if h.dead_lettered == 0 {
                    format!("all {} seeded messages processed", h.seeded)
                } else {
                    format!(
                        "all {} seeded messages processed or dead-lettered ({} dead letter{})",
                        h.seeded,
                        h.dead_lettered,
                        if h.dead_lettered == 1 { "" } else { "s" }
                    )
                })
            },
        },
    },
    CheckDef {
        name: "history: no payment Paid without a provider call",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.paid_without_call.count == 0,
            detail: |h| {
                h.paid_without_call
                    .detail("every Paid payment had a provider call recorded for it")
            },
        },
    },
    CheckDef {
        name: "history: nothing duplicated",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.duplicated.count == 0,
            detail: |h| h.duplicated.detail("no message processed twice"),
        },
    },
    CheckDef {
        name: "history: nothing unexpected",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.unexpected.count == 0,
            detail: |h| h.unexpected.detail("every processed message was seeded"),
        },
    },
    CheckDef {
        name: "history: leases never overlap",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.overlapping_leases.count == 0,
            detail: |h| {
                h.overlapping_leases
                    .detail("each reclaim came after the previous lease expired")
            },
        },
    },
    CheckDef {
        name: "history: no finalize by a non-owner",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.non_owner_finalizes.count == 0,
            detail: |h| {
                h.non_owner_finalizes
                    .detail("every committed finalize held the newest lease")
            },
        },
    },
    CheckDef {
        name: "history: nothing processed while dead-lettered",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.processed_after_dead_letter.count == 0,
            detail: |h| {
                h.processed_after_dead_letter
                    .detail("no result written for a dead letter before its redrive")
            },
        },
    },
    CheckDef {
        name: "history: one side effect per payment at the provider",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.duplicate_side_effects.count == 0,
            detail: |h| {
                h.duplicate_side_effects
                    .detail("the provider did the work of each payment at most once")
            },
        },
    },
    CheckDef {
        name: "history: heartbeats only by the lease holder",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.heartbeats_without_lease.count == 0,
            detail: |h| {
                h.heartbeats_without_lease
                    .detail("every heartbeat extended a lease its worker still held")
            },
        },
    },
    CheckDef {
        name: "history: final state agrees with history",
        applies: AppliesTo::Safety,
        judge: Judge::History {
            passed: |h| h.state_mismatches.count == 0,
            detail: |h| {
                h.state_mismatches
                    .detail("every row matches what its history says")
            },
        },
    },
    CheckDef {
        name: "lease-expiry: Worker-A crashed holding PAY-001",
        applies: AppliesTo::Story,
        judge: Judge::Run {
            passed: |o| {
                o.story
                    .as_ref()
                    .is_some_and(|p| p.a_claimed && p.a_crashed_holding)
            },
            detail: |o| {
                o.story.as_ref().map_or_else(String::new, |p| {
                    format!(
                        "claimed {}, crashed holding it {}",
                        p.a_claimed, p.a_crashed_holding
                    )
                })
            },
        },
    },
    CheckDef {
        name: "lease-expiry: Worker-B blocked before expiry",
        applies: AppliesTo::Story,
        judge: Judge::Run {
            passed: |o| story_shows(o, |p| p.b_blocked_before_expiry),
            detail: |o| story_shows(o, |p| p.b_blocked_before_expiry).to_string(),
        },
    },
    CheckDef {
        name: "lease-expiry: Worker-B reclaimed after expiry",
        applies: AppliesTo::Story,
        judge: Judge::Run {
            passed: |o| story_shows(o, |p| p.b_reclaimed_after_expiry),
            detail: |o| story_shows(o, |p| p.b_reclaimed_after_expiry).to_string(),
        },
    },
    CheckDef {
        name: "lease-expiry: reclaimed message processed once",
        applies: AppliesTo::Story,
        judge: Judge::Run {
            passed: |o| story_shows(o, |p| p.reclaimed_processed_once),
            detail: |o| story_shows(o, |p| p.reclaimed_processed_once).to_string(),
        },
    },
];

/// Whether the run told the lease-expiry story and it showed `fact`.
fn story_shows(o: &RunOutcome, fact: fn(&StoryProof) -> bool) -> bool {
    o.story.as_ref().is_some_and(fact)
}

/// How many messages each first-incarnation worker loaded, as the BEFORE story shows it.
pub(crate) fn loaded_detail(o: &RunOutcome) -> String {
    (0..o.workers)
        .map(|s| {
            let w = WorkerId::first(s).to_string();
            let n = o.ledger.loaded_by_worker.get(&w).copied().unwrap_or(0);
            format!("{w} loaded {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl CheckDef {
    /// Whether this check is about the story a scenario tells, not about safety.
    fn is_story(&self) -> bool {
        self.applies == AppliesTo::Story
    }

    /// Whether this check judges the history checker's findings alone.
    pub fn of_history(&self) -> bool {
        matches!(self.judge, Judge::History { .. })
    }

    fn make(&self, o: &RunOutcome) -> Check {
        let (passed, detail) = match self.judge {
            Judge::Run { passed, detail } => (passed(o), detail(o)),
            Judge::History { passed, detail } => (passed(&o.history), detail(&o.history)),
        };
        Check {
            name: self.name.to_string(),
            passed,
            detail,
        }
    }
}

/// The checks of a run, read from [`CHECKS`]. With leasing on they assert safety; for the
/// BEFORE story they assert that the problem was reproduced.
/// Whether the check named `name` is about a scenario's story rather than safety.
pub fn is_story(name: &str) -> bool {
    CHECKS.iter().any(|d| d.name == name && d.is_story())
}

pub fn of_run(o: &RunOutcome) -> Vec<Check> {
    CHECKS
        .iter()
        .filter(|d| d.applies.holds(o))
        .map(|d| d.make(o))
        .collect()
}

/// The history checker's rules from [`CHECKS`], judged on its findings: what the dashboard
/// shows once the outbox drains, with or without leases.
pub fn of_history(h: &HistoryCheck) -> Vec<Check> {
    CHECKS
        .iter()
        .filter_map(|d| match d.judge {
            Judge::History { passed, detail } => Some(Check {
                name: d.name.to_string(),
                passed: passed(h),
                detail: detail(h),
            }),
            Judge::Run { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::checker::Finding;

    #[test]
    fn every_history_check_passes_on_no_finding_and_fails_on_one() {
        let clean = HistoryCheck::default();
        let checks = of_history(&clean);
        assert_eq!(
            checks.len(),
            CHECKS.iter().filter(|d| d.of_history()).count()
        );
        assert!(checks.len() >= 6);
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");
        let one = Finding {
            count: 1,
            examples: vec!["PAY-001".into()],
        };
        let dirty = HistoryCheck {
            lost: one.clone(),
            paid_without_call: one.clone(),
            duplicated: one.clone(),
            unexpected: one.clone(),
            overlapping_leases: one.clone(),
            non_owner_finalizes: one.clone(),
            processed_after_dead_letter: one.clone(),
            heartbeats_without_lease: one.clone(),
            duplicate_side_effects: one.clone(),
            state_mismatches: one,
            ..HistoryCheck::default()
        };
        for c in of_history(&dirty) {
            assert!(!c.passed, "{} cannot fail", c.name);
            assert_eq!(c.detail, "1: PAY-001");
        }
    }

    #[test]
    fn every_check_has_a_name_of_its_own() {
        let mut names: Vec<&str> = CHECKS.iter().map(|d| d.name).collect();
        assert!(names.iter().all(|n| !n.trim().is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
    }
}
