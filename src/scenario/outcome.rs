//! What a run leaves for its checks and report, captured before its engine went away.

use std::time::Duration;

use crate::engine::checker::HistoryCheck;
use crate::engine::events::Event;
use crate::engine::ledger::Ledger;
use crate::engine::outbox::{DbOrigin, OutboxCounts, PaymentCounts, PaymentRow, RowsPerKey};

use super::catalog::Scenario;
use super::proof::StoryProof;
use super::soak;

/// Everything a report needs, captured before the engine (and its database) went away.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub scenario: Scenario,
    pub leasing: bool,
    pub workers: usize,
    pub seed: Option<u64>,
    pub faults: Option<soak::FaultTally>,
    pub messages: u64,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub db_path: String,
    /// `SQLite` or `PostgreSQL`.
    pub db_engine: &'static str,
    pub db_kept: bool,
    pub db_origin: DbOrigin,
    /// The leaselab that held the database last and ended without releasing it, if any.
    pub db_recovered: Option<String>,
    /// The schema as the database file holds it.
    pub schema: Vec<String>,
    /// The first events of the timeline (the story among them); the ledger saw them all.
    pub events: Vec<Event>,
    /// How many events the timeline had in all.
    pub timeline_events: u64,
    pub ledger: Ledger,
    pub story: Option<StoryProof>,
    pub outbox: OutboxCounts,
    pub payments: PaymentCounts,
    pub payment_rows: Vec<PaymentRow>,
    pub max_rows_per_key: RowsPerKey,
    pub orphans: u64,
    pub provider_status_checks: u64,
    /// The provider answered a repeated status check from its first answer, with no new
    /// side effect (the soak: its pauses and clock jumps let a lease run out mid-call).
    pub provider_idempotent: bool,
    pub gateway_creation_calls: u64,
    pub creations_by_workers: u64,
    pub max_creations_per_key: u64,
    pub keys_created: u64,
    pub txids_not_issued: u64,
    pub paid_without_provider: u64,
    pub busy_met: u64,
    pub first_rows: Vec<crate::engine::outbox::MessageRow>,
    /// The history checker's verdict over events and the final rows.
    pub history: HistoryCheck,
    pub elapsed: Duration,
}
