//! What the database and the provider hold in one state, read once after a move that
//! wrote: the rows and payments the checks read, the provider's counts, and for a student's
//! statements every cell of the two tables they may read.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{MessageRow, OutboxStatus, PaymentRow, PaymentStatus};
use crate::engine::provider::{KeyCalls, Provider};
use crate::engine::store::{Cell, Store, TableCells};

use super::clock::{TimeModel, Use};
use super::error::ExploreError;
use super::oracle::holds_live_lease;

/// More rows than the explorer's world ever has.
const ALL_ROWS: u64 = 1_000;

/// What the database and the provider hold in one state, read once.
#[derive(Debug, Clone)]
pub struct Seen {
    pub rows: Arc<Vec<MessageRow>>,
    pub payments: Arc<Vec<PaymentRow>>,
    pub calls: BTreeMap<String, KeyCalls>,
    /// Every cell a student's statement may read (`explore --sql` only).
    pub cells: Option<Arc<Vec<TableCells>>>,
}

impl Seen {
    pub fn read(store: &Store, provider: &Provider, sql: bool) -> Result<Seen, ExploreError> {
        if sql {
            // Every cell, read once: the rows and payments the checks read are among them.
            let cells = store.student_cells()?;
            let (rows, payments) = rows_of(&cells);
            return Ok(Seen {
                rows: Arc::new(rows),
                payments: Arc::new(payments),
                calls: provider.calls(),
                cells: Some(Arc::new(cells)),
            });
        }
        Ok(Seen {
            rows: Arc::new(store.messages(0, ALL_ROWS)?),
            payments: Arc::new(store.payments()?),
            calls: provider.calls(),
            cells: None,
        })
    }

    /// Every time a state's comparisons may meet: each time cell a statement may read,
    /// and each lease's end.
    /// With `every`, each time column counts, however the statements use it (the exact
    /// clock's test).
    pub fn times<'a>(
        &'a self,
        model: &'a TimeModel,
        every: bool,
    ) -> impl Iterator<Item = i64> + 'a {
        let tables = self.cells.as_deref().map_or(&[][..], Vec::as_slice);
        let classes = model.classes(tables);
        let cells = tables.iter().zip(classes).flat_map(move |(t, classes)| {
            let columns: Vec<usize> = (0..t.columns.len())
                .filter(|&c| match every {
                    true => classes[c].is_some(),
                    false => classes[c] == Some(Use::Compared),
                })
                .collect();
            t.rows.iter().flat_map(move |row| {
                columns
                    .clone()
                    .into_iter()
                    .filter_map(move |c| match row[c] {
                        Cell::Integer(n) => Some(n),
                        _ => None,
                    })
            })
        });
        let leases = self.rows.iter().filter_map(|r| r.locked_until_ms);
        cells.chain(leases)
    }

    /// Whether any row holds a lease that a clock jump would end.
    pub fn live_lease(&self, now: i64) -> bool {
        self.rows.iter().any(|r| holds_live_lease(r, now))
    }

    /// Every message done with: Processed, given up (dead-lettered) or gone.
    pub fn finished(&self) -> bool {
        self.rows.iter().all(|r| done_with(r.status))
    }
}

/// A message is done with: Processed, or given up as a dead letter.
pub(super) fn done_with(status: OutboxStatus) -> bool {
    matches!(status, OutboxStatus::Processed | OutboxStatus::DeadLettered)
}

/// The outbox's rows (each with its payment's status) and the payments, as the checks read
/// them, from every cell of the two tables (`Store::messages` and `Store::payments` read
/// the same from the database).
fn rows_of(cells: &[TableCells]) -> (Vec<MessageRow>, Vec<PaymentRow>) {
    let table = |name: &str| cells.iter().find(|t| t.table == name);
    let at = |t: &TableCells, column: &str| t.columns.iter().position(|c| c == column);
    let int = |row: &[Cell], i: Option<usize>| match i.map(|i| &row[i]) {
        Some(Cell::Integer(n)) => Some(*n),
        _ => None,
    };
    let text = |row: &[Cell], i: Option<usize>| match i.map(|i| &row[i]) {
        Some(Cell::Text(t)) => Some(t.clone()),
        _ => None,
    };
    let mut payments = Vec::new();
    if let Some(p) = table("Payments") {
        let (key, status, tx) = (
            at(p, "IdempotencyKey"),
            at(p, "PaymentStatus"),
            at(p, "TransactionId"),
        );
        for row in &p.rows {
            let status = text(row, status).and_then(|s| PaymentStatus::parse(&s));
            payments.push(PaymentRow {
                key: text(row, key).unwrap_or_default(),
                status: status.unwrap_or(PaymentStatus::Pending),
                transaction_id: text(row, tx),
            });
        }
    }
    let mut rows = Vec::new();
    if let Some(o) = table("OutboxMessages") {
        let c = |name| at(o, name);
        for row in &o.rows {
            let key = text(row, c("PaymentKey")).unwrap_or_default();
            let paid = payments.iter().find(|p| p.key == key).map(|p| p.status);
            rows.push(MessageRow {
                id: int(row, c("Id")).unwrap_or(0),
                status: text(row, c("Status"))
                    .and_then(|s| OutboxStatus::parse(&s))
                    .unwrap_or(OutboxStatus::Pending),
                locked_by: text(row, c("LockedBy")),
                locked_until_ms: int(row, c("LockedUntilUtc")),
                lease_version: int(row, c("LeaseVersion")).unwrap_or(0),
                attempts: int(row, c("Attempts")).unwrap_or(0),
                processed_at_ms: int(row, c("ProcessedAtUtc")),
                payment_status: paid.unwrap_or(PaymentStatus::Pending),
                available_at_ms: int(row, c("AvailableAtUtc")).unwrap_or(0),
                key,
            });
        }
    }
    (rows, payments)
}
