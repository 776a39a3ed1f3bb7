//! The outbox's rows as they stood after some events of a recording, and the dashboard's
//! reader over them. A seeding of N payments costs nothing until a row is touched: a row no
//! event has changed is the seeding's Pending row, made when it is read, so a recording
//! that seeds a million payments folds as fast as one that seeds six.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{
    BatchClaiming, ClaimOutcome, Fact, FailOutcome, FinalizeOutcome, Lease, MessageRef, MessageRow,
    OutboxCounts, OutboxError, OutboxStatus, PaymentCounts, PaymentRow, PaymentStatus, Result,
    RetryPolicy, RowsPerKey, Stamped,
};
use crate::engine::provider::{Provider, StatusCheck};
use crate::engine::store::{LeaseEventKind, LeaseEventRow};

/// The rows after some events.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Payments the seeding made (ids 1 to `seeded`).
    seeded: i64,
    seeded_at: Option<i64>,
    /// Ids added after the seeding, in order.
    added: Vec<i64>,
    /// Every row an event has made or changed, by id; shared with the copies a replay keeps
    /// until one of them changes it.
    rows: HashMap<i64, Arc<MessageRow>>,
    outbox: OutboxCounts,
    payments: PaymentCounts,
}

impl Table {
    /// The row of `id` as it stands: changed by an event, or as its seeding made it.
    fn row(&self, id: i64) -> Option<MessageRow> {
        if let Some(r) = self.rows.get(&id) {
            return Some(MessageRow::clone(r));
        }
        (1..=self.seeded).contains(&id).then(|| MessageRow {
            id,
            key: crate::engine::store::payment_key(id as u64),
            ..pending(id, String::new(), self.seeded_at.unwrap_or(0))
        })
    }

    /// Ids in the table's order: the seeding's, then those added.
    fn id_at(&self, i: u64) -> Option<i64> {
        let i = i64::try_from(i).ok()?;
        if i < self.seeded {
            return Some(i + 1);
        }
        self.added
            .get(usize::try_from(i - self.seeded).ok()?)
            .copied()
    }

    fn len(&self) -> u64 {
        self.seeded as u64 + self.added.len() as u64
    }

    /// Take in one event (a recording's rows were checked when it was read).
    pub fn apply(&mut self, r: &LeaseEventRow) {
        match r.kind {
            LeaseEventKind::Seeded => {
                let n: i64 = r
                    .detail
                    .as_deref()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0);
                *self = Table {
                    seeded: n,
                    seeded_at: Some(r.at_ms),
                    outbox: OutboxCounts {
                        pending: n as u64,
                        ..OutboxCounts::default()
                    },
                    payments: PaymentCounts {
                        pending: n as u64,
                        ..PaymentCounts::default()
                    },
                    ..Table::default()
                };
            }
            LeaseEventKind::Added => {
                if let (Some(id), Some(key)) = (r.id, r.key.clone()) {
                    self.added.push(id);
                    self.rows.insert(id, Arc::new(pending(id, key, r.at_ms)));
                    self.outbox.pending += 1;
                    self.payments.pending += 1;
                }
            }
            _ => self.change(r),
        }
    }

    /// What a worker's event did to its message's row, with the counts kept in step.
    fn change(&mut self, r: &LeaseEventRow) {
        let Some(id) = r.id else { return };
        if !self.rows.contains_key(&id) {
            let Some(m) = self.row(id) else { return };
            self.rows.insert(id, Arc::new(m));
        }
        let Some(m) = self.rows.get_mut(&id).map(Arc::make_mut) else {
            return;
        };
        count(&mut self.outbox, &mut self.payments, m, false);
        change_row(m, r);
        count(&mut self.outbox, &mut self.payments, m, true);
    }
}

/// A message as its seeding or its adding made it.
fn pending(id: i64, key: String, at_ms: i64) -> MessageRow {
    MessageRow {
        id,
        key,
        status: OutboxStatus::Pending,
        locked_by: None,
        locked_until_ms: None,
        lease_version: 0,
        attempts: 0,
        processed_at_ms: None,
        payment_status: PaymentStatus::Pending,
        available_at_ms: at_ms,
    }
}

/// Count `m` in (or out of) the status counts.
fn count(outbox: &mut OutboxCounts, payments: &mut PaymentCounts, m: &MessageRow, add: bool) {
    let by = |n: &mut u64| *n = if add { *n + 1 } else { n.saturating_sub(1) };
    match m.status {
        OutboxStatus::Pending => by(&mut outbox.pending),
        OutboxStatus::Processing => by(&mut outbox.processing),
        OutboxStatus::Processed => by(&mut outbox.processed),
        OutboxStatus::DeadLettered => by(&mut outbox.dead_lettered),
    }
    match m.payment_status {
        PaymentStatus::Pending => by(&mut payments.pending),
        PaymentStatus::Paid => by(&mut payments.paid),
        PaymentStatus::Failed => by(&mut payments.failed),
    }
}

/// How an event changes a row of the rebuilt table.
fn change_row(m: &mut MessageRow, r: &LeaseEventRow) {
    match r.kind {
        LeaseEventKind::Claimed => {
            m.status = OutboxStatus::Processing;
            m.locked_by = Some(r.worker.clone());
            m.locked_until_ms = r.until_ms;
            m.lease_version = r.version.unwrap_or(m.lease_version + 1);
            m.attempts += 1;
        }
        LeaseEventKind::Heartbeat => m.locked_until_ms = r.until_ms.or(m.locked_until_ms),
        LeaseEventKind::Finalized | LeaseEventKind::Marked => {
            m.status = OutboxStatus::Processed;
            m.processed_at_ms = Some(r.at_ms);
            m.locked_until_ms = None;
            if r.kind == LeaseEventKind::Marked {
                m.locked_by = None;
            }
            m.payment_status = match r.detail.as_deref() {
                Some("Failed") => PaymentStatus::Failed,
                _ => PaymentStatus::Paid,
            };
        }
        LeaseEventKind::Retry => {
            m.status = OutboxStatus::Pending;
            m.locked_by = None;
            m.locked_until_ms = None;
        }
        LeaseEventKind::DeadLettered => {
            m.status = OutboxStatus::DeadLettered;
            m.locked_by = None;
            m.locked_until_ms = None;
        }
        LeaseEventKind::Redriven => {
            m.status = OutboxStatus::Pending;
            m.attempts = 0;
            m.available_at_ms = r.at_ms;
        }
        _ => {}
    }
}

/// The dashboard's reader during a replay: the rebuilt table. It only reads: the writes of
/// the interface answer that a replay changes nothing.
pub struct ReplayOutbox {
    pub table: Arc<Mutex<Table>>,
}

impl ReplayOutbox {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn read_only<T>() -> Result<T> {
    Err(OutboxError::Database {
        failure: crate::engine::outbox::Failure::Other,
        message: "a replay only reads".into(),
        cause: None,
    })
}

impl Claiming for ReplayOutbox {
    fn claim_next(&mut self, _: &str, _: i64, _: i64) -> Result<Stamped<ClaimOutcome>> {
        read_only()
    }
    fn blocked_by(&self, _: &str, _: i64) -> Result<Option<ClaimOutcome>> {
        Ok(None)
    }
    fn claim_id(&mut self, _: i64, _: &str, _: i64, _: i64) -> Result<Stamped<ClaimOutcome>> {
        read_only()
    }
}

impl BatchClaiming for ReplayOutbox {}

impl Finalizing for ReplayOutbox {
    fn finalize(&mut self, _: &Lease, _: &StatusCheck, _: i64) -> Result<Stamped<FinalizeOutcome>> {
        read_only()
    }
}

impl Unleased for ReplayOutbox {
    fn load_pending(&self, _: i64) -> Result<Vec<MessageRef>> {
        Ok(Vec::new())
    }
    fn mark_processed(&mut self, _: &MessageRef, _: &StatusCheck, _: i64) -> Result<Stamped<()>> {
        read_only()
    }
    fn mark_processed_by(
        &mut self,
        _: &str,
        _: &MessageRef,
        _: &StatusCheck,
        _: i64,
    ) -> Result<Stamped<()>> {
        read_only()
    }
}

impl Upkeep for ReplayOutbox {
    fn heartbeat(&mut self, _: &Lease, _: i64, _: i64) -> Result<Stamped<Option<i64>>> {
        read_only()
    }
    fn fail_attempt(
        &mut self,
        _: &Lease,
        _: &str,
        _: i64,
        _: &RetryPolicy,
    ) -> Result<Stamped<FailOutcome>> {
        read_only()
    }
    fn redrive(&mut self, _: Option<&str>, _: i64) -> Result<Stamped<u64>> {
        read_only()
    }
    fn last_error(&self, _: &str) -> Result<Option<String>> {
        Ok(None)
    }
}

impl Seeding for ReplayOutbox {
    fn empty(&mut self) -> Result<()> {
        read_only()
    }
    fn seed(&mut self, _: &Provider, _: u64, _: i64) -> Result<()> {
        read_only()
    }
    fn add_payment(&mut self, _: &Provider, _: &str, _: i64, _: i64) -> Result<MessageRef> {
        read_only()
    }
    fn next_payment_number(&self) -> Result<u64> {
        Ok(self.table().len() + 1)
    }
}

impl Recording for ReplayOutbox {
    fn record(&mut self, _: &Fact) -> Result<Stamped<()>> {
        read_only()
    }
}

impl Reading for ReplayOutbox {
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        Ok(self.table().outbox.clone())
    }
    fn payment_counts(&self) -> Result<PaymentCounts> {
        Ok(self.table().payments.clone())
    }
    fn message_count(&self) -> Result<u64> {
        Ok(self.table().len())
    }
    fn seeded_at(&self) -> Result<Option<i64>> {
        Ok(self.table().seeded_at)
    }
    fn owner(&self) -> Result<Option<String>> {
        Ok(None)
    }
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        let t = self.table();
        let to = offset.saturating_add(limit).min(t.len());
        Ok((offset..to)
            .filter_map(|i| t.id_at(i).and_then(|id| t.row(id)))
            .collect())
    }
    fn payments(&self) -> Result<Vec<PaymentRow>> {
        let t = self.table();
        Ok((0..t.len())
            .filter_map(|i| t.id_at(i).and_then(|id| t.row(id)))
            .map(|r| PaymentRow {
                key: r.key,
                status: r.payment_status,
                transaction_id: None,
            })
            .collect())
    }
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
        Ok(RowsPerKey::default())
    }
    fn orphans(&self) -> Result<u64> {
        Ok(0)
    }
    fn schema(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}
