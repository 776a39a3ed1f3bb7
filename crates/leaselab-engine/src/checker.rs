//! The history checker: from what the workers did (the ledger's per-message history, in
//! commit order) and what SQLite holds at the end, decide whether the outbox kept its
//! promises. In the spirit of the queue checkers of Jepsen: lost, duplicated, unexpected,
//! plus the lease rules this lab teaches.
//!
//! Lost and paid are judged from what happened, never from what the rows say:
//!
//! - A seeded message is **lost** unless a provider call was recorded for it and a
//!   finalize of it committed (with leasing off, the unguarded write of its result), or it
//!   waits dead-lettered for a redrive. A row marked Processed by a statement that is not
//!   the lab's finalize of that message (a student's claim, another message's finalize), or
//!   a row deleted, leaves its message lost, whatever the table shows.
//! - A payment whose row says Paid while no provider call was recorded for its message is
//!   a failure of its own: **paid without a provider call**.

use super::lease_walk::{Breach, Walk};
use super::ledger::{HistoryStep, Ledger};
use super::outbox::{MessageRow, OutboxStatus, PaymentStatus};
use super::provider::KeyCalls;

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

    /// The examples found, or `none` when there were none.
    pub fn detail(&self, none: &str) -> String {
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
    /// Seeded, not dead-lettered, and without both a recorded provider call and a committed
    /// finalize (or leasing-off mark): see the module's rule.
    pub lost: Finding,
    /// Payments whose row says Paid while no provider call was recorded for the message.
    pub paid_without_call: Finding,
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
    /// A result written while the message was dead-lettered (no redrive in between).
    pub processed_after_dead_letter: Finding,
    /// A heartbeat that extended a lease its worker no longer held.
    pub heartbeats_without_lease: Finding,
    /// A payment the provider did work for more than once (a crash after the call, with no
    /// idempotency): the outbox may be clean while the world saw the payment twice.
    pub duplicate_side_effects: Finding,
    /// Seeded messages dead-lettered at the end: kept for a redrive, so not lost.
    pub dead_lettered: u64,
}

impl HistoryCheck {
    pub fn passed(&self) -> bool {
        self.problems() == 0
    }

    /// Every finding's count added up: what the dashboard's verdict line shows.
    pub fn problems(&self) -> u64 {
        [
            &self.lost,
            &self.paid_without_call,
            &self.duplicated,
            &self.unexpected,
            &self.overlapping_leases,
            &self.non_owner_finalizes,
            &self.state_mismatches,
            &self.processed_after_dead_letter,
            &self.heartbeats_without_lease,
            &self.duplicate_side_effects,
        ]
        .iter()
        .map(|f| f.count)
        .sum()
    }

    /// Each finding there is, in a few words with its count: `6 duplicates`, the ledger's
    /// word for a message processed more than once.
    pub fn findings(&self) -> Vec<String> {
        let mut found: Vec<String> = [
            (&self.lost, "lost"),
            (&self.paid_without_call, "paid without a provider call"),
            (&self.duplicated, "duplicates"),
            (&self.unexpected, "unexpected"),
            (&self.overlapping_leases, "with overlapping leases"),
            (&self.non_owner_finalizes, "finalized by a non-owner"),
            (&self.state_mismatches, "rows unlike their history"),
            (
                &self.processed_after_dead_letter,
                "processed while dead-lettered",
            ),
            (
                &self.heartbeats_without_lease,
                "heartbeats without the lease",
            ),
        ]
        .iter()
        .filter(|(f, _)| f.count > 0)
        .map(|(f, what)| match (f.count, *what) {
            (1, "duplicates") => "1 duplicate".to_string(),
            (n, what) => format!("{n} {what}"),
        })
        .collect();
        // A payment the provider did work for twice, Paid or Failed: its side effects.
        match self.duplicate_side_effects.count {
            0 => {}
            1 => found.push("1 payment with side effects repeated".into()),
            n => found.push(format!("{n} payments with side effects repeated")),
        }
        found
    }

    /// Add what the provider counted: every key it did work for more than once is a
    /// duplicate side effect (`PAY-001: 2 side effects`).
    pub fn count_side_effects<'a>(
        &mut self,
        calls: impl IntoIterator<Item = (&'a String, &'a KeyCalls)>,
    ) {
        for (key, c) in calls {
            if c.side_effects > 1 {
                self.duplicate_side_effects
                    .add(format!("{key}: {} side effects", c.side_effects));
            }
        }
    }
}

impl HistoryCheck {
    /// Duplicate side effects as the ledger's events recorded them (each provider call says
    /// whether it did new work): for workers whose provider is out of this process's sight.
    pub fn count_recorded_side_effects(&mut self, ledger: &Ledger) {
        for m in ledger.messages.values().filter(|m| m.side_effects > 1) {
            self.duplicate_side_effects
                .add(format!("{}: {} side effects", m.key, m.side_effects));
        }
    }
}

/// Check a run's history against the final rows (all of them, in id order).
pub fn check(ledger: &Ledger, rows: &[MessageRow]) -> HistoryCheck {
    let mut c = HistoryCheck::default();
    count_seeded(&mut c, ledger, rows);
    count_paid_without_call(&mut c, ledger, rows);
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
        let mut walk = Walk::default();
        for (_, step) in &steps {
            walk.step(step, &mut |breach| record(&mut c, &m.key, breach));
        }
    }
    compare_rows(&mut c, ledger, rows);
    c
}

/// Every seeded message was called for and finalized, or waits in the dead letter;
/// otherwise it is lost, whatever its row says (the module's rule).
fn count_seeded(c: &mut HistoryCheck, ledger: &Ledger, rows: &[MessageRow]) {
    let seeded_ids = (1..=ledger.seeded_upto).chain(ledger.added.iter().copied());
    for id in seeded_ids {
        c.seeded += 1;
        let history = ledger.messages.get(&id);
        let called = history.is_some_and(|m| has_call(m));
        let finalized = history.is_some_and(|m| m.runs > 0);
        if ledger.dead.contains(&id) {
            c.dead_lettered += 1;
        } else if !(called && finalized) {
            let row = rows
                .binary_search_by_key(&id, |r| r.id)
                .ok()
                .map(|i| &rows[i]);
            c.lost.add(lost_because(
                id,
                history.map(|m| m.key.as_str()),
                row,
                called,
                finalized,
            ));
        }
    }
}

/// Whether the message's history holds a provider call.
fn has_call(m: &crate::ledger::MessageHistory) -> bool {
    m.steps
        .iter()
        .any(|(_, s)| matches!(s, HistoryStep::Call { .. }))
}

/// Why a lost message is lost, in a few words: `PAY-002: marked Processed by hand, never
/// called for or finalized`.
fn lost_because(
    id: i64,
    key: Option<&str>,
    row: Option<&MessageRow>,
    called: bool,
    finalized: bool,
) -> String {
    let key = key
        .filter(|k| !k.is_empty())
        .or(row.map(|r| r.key.as_str()))
        .map_or_else(|| format!("message {id}"), str::to_string);
    let what = match (called, finalized) {
        (false, true) => "finalized without a provider call",
        (true, false) => "called for but never finalized",
        _ => "never called for or finalized",
    };
    match row {
        None => format!("{key}: deleted, {what}"),
        Some(r) if r.status == OutboxStatus::Processed && !finalized => {
            format!("{key}: marked Processed by hand, {what}")
        }
        Some(r) => format!("{key}: {}, {what}", r.status),
    }
}

/// A payment Paid in the table for which no provider call was recorded.
fn count_paid_without_call(c: &mut HistoryCheck, ledger: &Ledger, rows: &[MessageRow]) {
    for row in rows {
        if row.payment_status != PaymentStatus::Paid {
            continue;
        }
        if !ledger.messages.get(&row.id).is_some_and(|m| has_call(m)) {
            c.paid_without_call.add(format!(
                "{}: Paid, and no provider call was recorded for it",
                row.key
            ));
        }
    }
}

/// A row someone deleted, or one that disagrees with its history.
fn compare_rows(c: &mut HistoryCheck, ledger: &Ledger, rows: &[MessageRow]) {
    let seeded_ids = (1..=ledger.seeded_upto).chain(ledger.added.iter().copied());
    for id in seeded_ids {
        if rows.binary_search_by_key(&id, |r| r.id).is_err() {
            let name = match ledger.messages.get(&id).map_or("", |m| &m.key) {
                "" => format!("message {id}"),
                key => format!("message {id} {key}"),
            };
            c.state_mismatches
                .add(format!("{name}: missing from the outbox table"));
        }
    }
    for row in rows {
        let wrong = row_mismatches(ledger, row);
        if !wrong.is_empty() {
            c.state_mismatches
                .add(format!("{}: {}", row.key, wrong.join(", ")));
        }
    }
}

/// One finding for each breach the walk through a message's steps met.
fn record(c: &mut HistoryCheck, key: &str, breach: Breach) {
    match breach {
        Breach::Overlap {
            owner,
            at_ms,
            holder,
            until_ms,
        } => c.overlapping_leases.add(format!(
            "{key}: {owner} claimed at {at_ms} while {holder} held it until {until_ms}"
        )),
        Breach::HeartbeatWithoutLease { owner, version } => c.heartbeats_without_lease.add(
            format!("{key}: {owner} extended lease v{version}, which it no longer held"),
        ),
        Breach::NonOwnerFinalize {
            owner,
            version,
            newest,
        } => c.non_owner_finalizes.add(format!(
            "{key}: {owner} finalized with lease v{version}, newest was v{newest}"
        )),
        Breach::WhileDead { owner, finalized } => {
            let did = if finalized { "finalized" } else { "marked" };
            c.processed_after_dead_letter.add(format!(
                "{key}: {owner} {did} it while it was dead-lettered"
            ));
        }
    }
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
    let dead = ledger.dead.contains(&row.id);
    if dead != (row.status == OutboxStatus::DeadLettered) {
        wrong.push(format!(
            "status {} but the history says {}dead-lettered",
            row.status,
            if dead { "" } else { "not " }
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, EventKind};
    use crate::provider::ProviderStatus;

    /// A ledger of one seeded message fed these (actor, event) pairs in commit order.
    fn history(events: Vec<(&str, EventKind)>) -> HistoryCheck {
        let mut l = Ledger::new();
        l.apply(&ev(0, "engine", EventKind::Seeded { messages: 1 }));
        for (i, (actor, kind)) in events.into_iter().enumerate() {
            l.apply(&ev(i as u64 + 1, actor, kind));
        }
        check(&l, &[])
    }

    fn ev(seq: u64, actor: &str, kind: EventKind) -> Event {
        Event {
            seq,
            at_ms: seq as i64 * 1_000,
            slot: None,
            actor: actor.into(),
            kind,
            sql: None,
        }
    }

    fn claimed(version: i64, at: i64) -> EventKind {
        EventKind::Claimed {
            id: 1,
            key: "PAY-001".into(),
            until_ms: at + 500,
            version,
            reclaim: version > 1,
            way: crate::events::ClaimWay::Next,
            overlapped: None,
        }
    }

    fn dead(version: i64) -> EventKind {
        EventKind::DeadLettered {
            id: 1,
            key: "PAY-001".into(),
            version,
            attempts: 1,
            error: "rejected".into(),
        }
    }

    fn finalized(version: i64) -> EventKind {
        EventKind::Finalized {
            id: 1,
            key: "PAY-001".into(),
            version,
            status: ProviderStatus::Paid,
        }
    }

    fn beat(version: i64) -> EventKind {
        EventKind::Heartbeat {
            id: 1,
            key: "PAY-001".into(),
            version,
            until_ms: 99_000,
        }
    }

    /// The row of message 1 (PAY-001) as the table would show it.
    fn row(status: OutboxStatus, payment: PaymentStatus) -> MessageRow {
        MessageRow {
            id: 1,
            key: "PAY-001".into(),
            status,
            locked_by: None,
            locked_until_ms: None,
            lease_version: 1,
            attempts: 1,
            processed_at_ms: None,
            payment_status: payment,
            available_at_ms: 0,
        }
    }

    /// A ledger of one seeded message fed these events, checked against `rows`.
    fn judged(events: Vec<(&str, EventKind)>, rows: &[MessageRow]) -> HistoryCheck {
        let mut l = Ledger::new();
        l.apply(&ev(0, "engine", EventKind::Seeded { messages: 1 }));
        for (i, (actor, kind)) in events.into_iter().enumerate() {
            l.apply(&ev(i as u64 + 1, actor, kind));
        }
        check(&l, rows)
    }

    fn called() -> EventKind {
        EventKind::ProviderCalled {
            id: 1,
            key: "PAY-001".into(),
            status: ProviderStatus::Paid,
            effect: true,
        }
    }

    #[test]
    fn lost_and_paid_are_judged_from_what_happened_not_from_the_rows() {
        use OutboxStatus::{Pending, Processed};
        use PaymentStatus::Paid;
        let done = [row(Processed, Paid)];
        // A provider call and a committed finalize: processed.
        let c = judged(
            vec![
                ("Worker-A", claimed(1, 1_000)),
                ("Worker-A", called()),
                ("Worker-A", finalized(1)),
            ],
            &done,
        );
        assert_eq!((c.lost.count, c.paid_without_call.count), (0, 0), "{c:?}");
        // The row says Processed and Paid, but nothing happened: lost, and paid unpaid.
        let c = judged(vec![], &done);
        assert_eq!(
            c.lost.examples,
            ["PAY-001: marked Processed by hand, never called for or finalized"]
        );
        assert_eq!(c.paid_without_call.count, 1, "{c:?}");
        // A finalize with no provider call is no processing either.
        let c = judged(
            vec![("Worker-A", claimed(1, 1_000)), ("Worker-A", finalized(1))],
            &done,
        );
        assert_eq!(
            c.lost.examples,
            ["PAY-001: Processed, finalized without a provider call"]
        );
        assert_eq!(c.paid_without_call.count, 1);
        // Called for, then the row deleted: lost, whatever else the table holds.
        let c = judged(
            vec![("Worker-A", claimed(1, 1_000)), ("Worker-A", called())],
            &[],
        );
        assert_eq!(
            c.lost.examples,
            ["PAY-001: deleted, called for but never finalized"]
        );
        // Never touched, and deleted: lost by its id.
        let c = judged(vec![], &[]);
        assert_eq!(
            c.lost.examples,
            ["message 1: deleted, never called for or finalized"]
        );
        let c = judged(vec![], &[row(Pending, PaymentStatus::Pending)]);
        assert_eq!(
            c.lost.examples,
            ["PAY-001: Pending, never called for or finalized"]
        );
        assert!(
            c.findings().contains(&"1 lost".to_string()),
            "{:?}",
            c.findings()
        );
        let c = judged(vec![], &done);
        assert!(c
            .findings()
            .contains(&"1 paid without a provider call".to_string()));
    }

    #[test]
    fn a_dead_letter_is_not_lost_but_a_message_never_processed_is() {
        let c = history(vec![("Worker-A", claimed(1, 1_000)), ("Worker-A", dead(1))]);
        assert_eq!((c.lost.count, c.dead_lettered), (0, 1));
        let c = history(vec![("Worker-A", claimed(1, 1_000))]);
        assert_eq!((c.lost.count, c.dead_lettered), (1, 0));
    }

    #[test]
    fn a_result_for_a_dead_letter_before_its_redrive_is_found() {
        let c = history(vec![
            ("Worker-A", claimed(1, 1_000)),
            ("Worker-A", dead(1)),
            ("Worker-A", finalized(1)),
        ]);
        assert_eq!(c.processed_after_dead_letter.count, 1);
        let redriven = EventKind::Redriven {
            key: Some("PAY-001".into()),
            count: 1,
        };
        let c = history(vec![
            ("Worker-A", claimed(1, 1_000)),
            ("Worker-A", dead(1)),
            ("engine", redriven),
            ("Worker-B", claimed(2, 4_000)),
            ("Worker-B", finalized(2)),
        ]);
        assert_eq!(c.processed_after_dead_letter.count, 0);
        assert_eq!(
            c.overlapping_leases.count, 0,
            "a released lease is no overlap"
        );
        assert!(c.passed() || c.state_mismatches.count > 0);
    }

    #[test]
    fn a_heartbeat_by_a_worker_that_lost_its_lease_is_found() {
        let c = history(vec![
            ("Worker-A", claimed(1, 1_000)),
            ("Worker-B", claimed(2, 2_000)),
            ("Worker-B", beat(2)),
            ("Worker-A", beat(1)),
        ]);
        assert_eq!(c.heartbeats_without_lease.count, 1);
        assert!(c.heartbeats_without_lease.examples[0].contains("Worker-A"));
        let c = history(vec![("Worker-A", claimed(1, 1_000)), ("Worker-A", beat(1))]);
        assert_eq!(c.heartbeats_without_lease.count, 0);
    }

    #[test]
    fn a_heartbeat_moves_the_lease_end_a_reclaim_must_wait_for() {
        // Worker-A's lease ran to 2_500, a beat moved it to 99_000: B's claim overlaps.
        let c = history(vec![
            ("Worker-A", claimed(1, 2_000)),
            ("Worker-A", beat(1)),
            ("Worker-B", claimed(2, 3_000)),
        ]);
        assert_eq!(c.overlapping_leases.count, 1);
    }
}
