//! The history checker: from what the workers did (the ledger's per-message history, in
//! commit order) and what SQLite holds at the end, decide whether the outbox kept its
//! promises. In the spirit of the queue checkers of Jepsen: lost, duplicated, unexpected,
//! plus the lease rules this lab teaches.

use super::ledger::{HistoryStep, Ledger};
use super::store::{MessageRow, OutboxStatus};

/// At most this many example ids are kept per finding.
const EXAMPLES: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub count: u64,
    /// A few of the messages concerned, with a word on each.
    pub examples: Vec<String>,
}

impl Finding {
    fn add(&mut self, what: String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(what);
        }
    }

    fn detail(&self, none: &str) -> String {
        if self.count == 0 {
            none.to_string()
        } else {
            format!("{}: {}", self.count, self.examples.join("; "))
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HistoryCheck {
    pub seeded: u64,
    pub processed: u64,
    /// Seeded but never processed.
    pub lost: Finding,
    /// Processed more than once.
    pub duplicated: Finding,
    /// Processed but never seeded.
    pub unexpected: Finding,
    /// Two successful claims of one message whose leases overlap.
    pub overlapping_leases: Finding,
    /// A committed finalize that did not carry the message's newest lease version.
    pub non_owner_finalizes: Finding,
    /// The final database disagrees with the history.
    pub state_mismatches: Finding,
}

impl HistoryCheck {
    pub fn passed(&self) -> bool {
        self.problems() == 0
    }

    /// Every finding's count added up: what the dashboard's verdict line shows.
    pub fn problems(&self) -> u64 {
        [
            &self.lost,
            &self.duplicated,
            &self.unexpected,
            &self.overlapping_leases,
            &self.non_owner_finalizes,
            &self.state_mismatches,
        ]
        .iter()
        .map(|f| f.count)
        .sum()
    }

    /// (name, passed, detail) for each rule, as the reports list them.
    pub fn rules(&self) -> Vec<(&'static str, bool, String)> {
        vec![
            (
                "history: nothing lost",
                self.lost.count == 0,
                self.lost
                    .detail(&format!("all {} seeded messages processed", self.seeded)),
            ),
            (
                "history: nothing duplicated",
                self.duplicated.count == 0,
                self.duplicated.detail("no message processed twice"),
            ),
            (
                "history: nothing unexpected",
                self.unexpected.count == 0,
                self.unexpected.detail("every processed message was seeded"),
            ),
            (
                "history: leases never overlap",
                self.overlapping_leases.count == 0,
                self.overlapping_leases
                    .detail("each reclaim came after the previous lease expired"),
            ),
            (
                "history: no finalize by a non-owner",
                self.non_owner_finalizes.count == 0,
                self.non_owner_finalizes
                    .detail("every committed finalize held the newest lease"),
            ),
            (
                "history: final state agrees with history",
                self.state_mismatches.count == 0,
                self.state_mismatches
                    .detail("every row matches what its history says"),
            ),
        ]
    }
}

/// Check a run's history against the final rows (all of them, in id order).
pub fn check(ledger: &Ledger, rows: &[MessageRow]) -> HistoryCheck {
    let mut c = HistoryCheck::default();
    let seeded_ids = (1..=ledger.seeded_upto).chain(ledger.added.iter().copied());
    for id in seeded_ids {
        c.seeded += 1;
        let runs = ledger.messages.get(&id).map_or(0, |m| m.runs);
        if runs == 0 {
            c.lost.add(format!("message {id}"));
        }
    }
    for (id, m) in &ledger.messages {
        if m.runs > 0 {
            c.processed += 1;
        }
        if m.runs > 1 {
            c.duplicated.add(format!("{} x{}", m.key, m.runs));
        }
        if m.runs > 0 && !ledger.was_seeded(*id) {
            c.unexpected.add(m.key.clone());
        }
        let mut steps = m.steps.clone();
        steps.sort_by_key(|(seq, _)| *seq);
        let mut previous: Option<(std::sync::Arc<str>, i64)> = None;
        let mut newest: Option<i64> = None;
        for (_, step) in &steps {
            match step {
                HistoryStep::Claim {
                    owner,
                    version,
                    at_ms,
                    until_ms,
                } => {
                    // A reclaim is only allowed once the previous lease has run out.
                    if let Some((prev_owner, prev_until)) = &previous {
                        if *at_ms <= *prev_until {
                            c.overlapping_leases.add(format!(
                                "{}: {owner} claimed at {at_ms} while {prev_owner} held it until {prev_until}",
                                m.key
                            ));
                        }
                    }
                    previous = Some((owner.clone(), *until_ms));
                    newest = Some(*version);
                }
                HistoryStep::Finalize { owner, version, .. } => {
                    if newest != Some(*version) {
                        c.non_owner_finalizes.add(format!(
                            "{}: {owner} finalized with lease v{version}, newest was v{}",
                            m.key,
                            newest.unwrap_or(0)
                        ));
                    }
                    // Processed: a later claim of it would be an overlap of its own kind.
                    previous = Some((owner.clone(), i64::MAX));
                }
                _ => {}
            }
        }
    }
    // A row someone deleted disagrees with a history that seeded it.
    let seeded_ids = (1..=ledger.seeded_upto).chain(ledger.added.iter().copied());
    for id in seeded_ids {
        if rows.binary_search_by_key(&id, |r| r.id).is_err() {
            let key = ledger.messages.get(&id).map_or("", |m| &m.key);
            c.state_mismatches
                .add(format!("message {id} {key}: missing from the outbox table"));
        }
    }
    for row in rows {
        let wrong = row_mismatches(ledger, row);
        if !wrong.is_empty() {
            c.state_mismatches
                .add(format!("{}: {}", row.key, wrong.join(", ")));
        }
    }
    c
}

/// How one final row disagrees with its history (empty when it agrees).
fn row_mismatches(ledger: &Ledger, row: &MessageRow) -> Vec<String> {
    let h = ledger.messages.get(&row.id);
    let runs = h.map_or(0, |m| m.runs);
    let mut steps = h.map(|m| m.steps.clone()).unwrap_or_default();
    steps.sort_by_key(|(seq, _)| *seq);
    let newest_claim = steps.iter().rev().find_map(|(_, s)| match s {
        HistoryStep::Claim { owner, version, .. } => Some((owner.clone(), *version)),
        _ => None,
    });
    let last_result = steps.iter().rev().find_map(|(_, s)| match s {
        HistoryStep::Finalize { status, .. } | HistoryStep::Mark { status, .. } => {
            Some(status.as_str())
        }
        _ => None,
    });
    let mut wrong = Vec::new();
    if (runs > 0) != (row.status == OutboxStatus::Processed) {
        wrong.push(format!("status {} after {runs} results", row.status));
    }
    let version = newest_claim.as_ref().map_or(0, |(_, v)| *v);
    if row.lease_version != version {
        wrong.push(format!(
            "lease v{} in the table, v{version} in history",
            row.lease_version
        ));
    }
    if row.status == OutboxStatus::Processing {
        let owner = newest_claim.as_ref().map(|(o, _)| &**o);
        if row.locked_by.as_deref() != owner {
            wrong.push(format!(
                "locked by {:?}, newest claim by {owner:?}",
                row.locked_by
            ));
        }
    }
    let expected_payment = last_result.unwrap_or("Pending");
    if row.payment_status.as_str() != expected_payment {
        wrong.push(format!(
            "payment {} but history wrote {expected_payment}",
            row.payment_status
        ));
    }
    wrong
}
