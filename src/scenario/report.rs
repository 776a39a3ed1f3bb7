//! Checks, verdict, and the text and JSON reports of a headless run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::catalog::Scenario;
use super::checks::loaded_detail;
pub use super::checks::Check;
use super::outcome::RunOutcome;
use crate::engine::clock::{hms, iso, SCENARIO_START_MS};
use crate::engine::outbox::DbOrigin;
use crate::engine::worker_id::WorkerId;

/// Rows of the timeline and the ownership table a report prints before it summarises.
const TIMELINE_LINES: usize = 120;
const TABLE_ROWS: usize = 20;

pub struct Report {
    pub scenario: Scenario,
    pub checks: Vec<Check>,
    pub passed: bool,
    pub verdict: String,
    pub json: Value,
    pub text: String,
}

fn verdict(o: &RunOutcome, checks: &[Check]) -> String {
    let passed = checks.iter().all(|c| c.passed);
    let dup = o.ledger.processed_more_than_once();
    match (o.scenario, passed) {
        (Scenario::CompetingNoClaim, true) => format!(
            "DURABLE BUT SHARED: {} workers each processed the same {} messages; only the ledgers show it",
            o.workers, o.messages
        ),
        (Scenario::CompetingNoClaim, false) => {
            "NOT REPRODUCED: the race did not produce the expected duplicates".to_string()
        }
        (_, true) => format!(
            "ONE OWNER AT A TIME: {}{}{}",
            match o.ledger.unique_processed() {
                1 => "1 message processed once".to_string(),
                n => format!("{n} messages processed once each"),
            },
            match o.ledger.dead.len() {
                0 => String::new(),
                n => format!(", {n} dead-lettered"),
            },
            if o.story.is_some() {
                "; the crashed owner's lease expired and its message was recovered"
            } else {
                ""
            }
        ),
        (_, false) if !o.leasing => format!(
            "LEASING OFF: {dup} messages were processed more than once"
        ),
        (_, false) => failed_verdict(checks),
    }
}

/// Which checks failed, in their own names: a story that did not play out as told is not
/// a safety failure, and says so.
fn failed_verdict(checks: &[Check]) -> String {
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.passed).collect();
    let (story, safety): (Vec<&Check>, Vec<&Check>) = failed
        .iter()
        .partition(|c| super::checks::is_story(&c.name));
    let names = |cs: &[&Check]| {
        cs.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if safety.is_empty() {
        format!(
            "THE STORY DID NOT PLAY OUT AS TOLD (every safety check passed): {}",
            names(&story)
        )
    } else {
        let noun = if safety.len() == 1 { "CHECK" } else { "CHECKS" };
        format!("{} SAFETY {noun} FAILED: {}", safety.len(), names(&safety))
    }
}

impl Report {
    pub fn build(o: &RunOutcome) -> Report {
        let checks = super::checks::of_run(o);
        let passed = checks.iter().all(|c| c.passed);
        let verdict = verdict(o, &checks);
        let json = to_json(o, &checks, passed, &verdict);
        let text = to_text(o, &checks, passed, &verdict);
        Report {
            scenario: o.scenario,
            checks,
            passed,
            verdict,
            json,
            text,
        }
    }

    pub fn json_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.json).unwrap_or_default()
    }
}

fn per_worker(o: &RunOutcome) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = (0..o.workers)
        .map(|s| (WorkerId::first(s).to_string(), 0))
        .collect();
    for (w, n) in &o.ledger.per_worker {
        m.insert(w.clone(), *n);
    }
    m
}

fn to_json(o: &RunOutcome, checks: &[Check], passed: bool, verdict: &str) -> Value {
    let l = &o.ledger;
    let mut v = json!({
        "scenario": o.scenario.name(),
        "leasing": o.leasing,
        "workers": o.workers,
        "messages": o.messages,
        "lease_ms": o.lease_ms,
        "process_ms": o.process_ms,
        "claims_ok": l.claims_ok,
        "claims_empty": l.claims_empty,
        "claims_blocked": l.claims_blocked,
        "reclaims": l.reclaims,
        "loads": l.loads,
        "processing_attempts": l.processing_attempts,
        "unique_processed": l.unique_processed(),
        "processed_more_than_once": l.processed_more_than_once(),
        "runs_histogram": l.runs_histogram().iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
        "provider_status_checks": o.provider_status_checks,
        "provider_idempotent": o.provider_idempotent,
        "gateway_creation_calls": o.gateway_creation_calls,
        "payment_creation_calls_in_workers": o.creations_by_workers,
        "ownership_violations": if o.leasing { json!(l.ownership_violations) } else { Value::Null },
        "rejected_finalizes": l.rejected_finalizes,
        "outbox": o.outbox,
        "payments": o.payments,
        "duplicate_rows": { "payments": o.max_rows_per_key.payments.saturating_sub(1), "outbox": o.max_rows_per_key.outbox.saturating_sub(1) },
        "per_worker": per_worker(o),
        "loaded_per_worker": l.loaded_by_worker,
        "lease_expiry": o.story.as_ref().map(|p| json!({
            "worker_a_claimed": p.a_claimed,
            "worker_a_crashed_holding": p.a_crashed_holding,
            "worker_b_blocked_before_expiry": p.b_blocked_before_expiry,
            "worker_b_reclaimed_after_expiry": p.b_reclaimed_after_expiry,
            "reclaimed_processed_once": p.reclaimed_processed_once,
        })),
        "history": o.history,
        "seed": o.seed,
        "faults": o.faults,
        "sqlite_busy_absorbed": o.busy_met,
        "database": {
            "path": o.db_path,
            "engine": o.db_engine,
            "kept": o.db_kept,
            "reused": o.db_origin == DbOrigin::Reused,
            "recovered_from": o.db_recovered,
        },
        "db_recovered": o.db_recovered.is_some(),
        "elapsed_ms": o.elapsed.as_millis() as u64,
        "checks": checks,
        "verdict": verdict,
        "passed": passed,
    });
    // Retries, dead letters, heartbeats and the other ledger figures a lesson names, as
    // top-level keys beside the rest (`lesson::LEDGER_FIGURES` names each one's key).
    if let Some(m) = v.as_object_mut() {
        for (key, n) in [
            ("retries", l.retries),
            ("dead_letters", l.dead_letters),
            ("dead_lettered_now", l.dead.len() as u64),
            ("redriven", l.redriven),
            ("heartbeats", l.heartbeats),
            ("leases_lost", l.leases_lost),
            ("crashes", l.crashes),
            ("claim_transactions", l.claim_transactions),
            ("writes", l.writes()),
            ("results_written", l.results_written()),
            (
                "overlaps",
                o.history.overlapping_leases.count + o.history.heartbeats_without_lease.count,
            ),
        ] {
            m.insert(key.to_string(), json!(n));
        }
    }
    v
}

fn to_text(o: &RunOutcome, checks: &[Check], passed: bool, verdict: &str) -> String {
    let mut t = String::new();
    text_header(&mut t, o);
    text_schema(&mut t, o);
    text_recovery(&mut t, o);
    text_timeline(&mut t, o);
    text_ownership(&mut t, o);
    text_claim_ledger(&mut t, o);
    text_processing_ledger(&mut t, o);
    text_final_state(&mut t, o);
    text_checks_and_verdict(&mut t, checks, passed, verdict);
    t
}

/// The run's setup: story, leasing, workers, messages, database, clock, seed, faults.
fn text_header(t: &mut String, o: &RunOutcome) {
    let title = format!("leaselab report: {}", o.scenario.name());
    let _ = writeln!(t, "{title}\n{}", "=".repeat(title.len()));
    let _ = writeln!(t, "story      {}", o.scenario.summary());
    let _ = writeln!(
        t,
        "leasing    {}",
        if o.leasing {
            format!(
                "ON, lease {} ms, processing {} ms",
                o.lease_ms, o.process_ms
            )
        } else {
            "OFF (workers load every Pending row and write results unguarded)".to_string()
        }
    );
    let names: Vec<String> = (0..o.workers)
        .map(|s| WorkerId::first(s).to_string())
        .collect();
    let _ = writeln!(
        t,
        "workers    {} ({}), each an OS thread with its own {} connection",
        o.workers,
        names.join(", "),
        o.db_engine
    );
    let _ = writeln!(
        t,
        "messages   {} payments, each with one outbox row",
        o.messages
    );
    let _ = writeln!(
        t,
        "database   {} ({})",
        o.db_path,
        match (o.db_kept, o.db_origin) {
            (false, _) => "temporary, removed after the run",
            (true, DbOrigin::Created) => "created and kept",
            (true, DbOrigin::Reused) => "an earlier leaselab database, emptied, reseeded and kept",
        }
    );
    if let Some(holder) = &o.db_recovered {
        let _ = writeln!(
            t,
            "recovered  from {holder}, which ended without releasing the database"
        );
    }
    let _ = writeln!(t, "clock      starts {}", iso(SCENARIO_START_MS));
    if let Some(seed) = o.seed {
        let _ = writeln!(
            t,
            "seed       {seed} (repeat the fault schedule with --seed {seed})"
        );
    }
    if o.provider_idempotent {
        let _ = writeln!(
            t,
            "provider   idempotent: a repeated status check is answered from the first, with no new side effect"
        );
    }
    if let Some(f) = &o.faults {
        let _ = writeln!(
            t,
            "faults     {} crashes ({} holding a lease), {} restarts, {} pauses, {} resumes, {} clock jumps ({} ms)",
            f.crashes, f.crashes_holding_a_lease, f.restarts, f.pauses, f.resumes, f.clock_jumps, f.clock_jumped_ms
        );
    }
}

/// The schema as the database file holds it.
fn text_schema(t: &mut String, o: &RunOutcome) {
    let _ = writeln!(t, "\nSchema (as the database file holds it)");
    for statement in &o.schema {
        for line in format!("{statement};").lines() {
            let _ = writeln!(t, "  {line}");
        }
    }
}

/// The lease-expiry story, when the run told it.
fn text_recovery(t: &mut String, o: &RunOutcome) {
    if let Some(p) = &o.story {
        let _ = writeln!(t, "\nLease-expiry recovery");
        for line in &p.lines {
            let _ = writeln!(t, "  {line}");
        }
        let _ = writeln!(
            t,
            "  blocked before expiry: {}   reclaimed after expiry: {}   processed once: {}",
            p.b_blocked_before_expiry, p.b_reclaimed_after_expiry, p.reclaimed_processed_once
        );
    }
}

/// The first events in commit order.
fn text_timeline(t: &mut String, o: &RunOutcome) {
    let _ = writeln!(
        t,
        "\nTimeline ({} events; empty claims counted in the claim ledger)",
        o.timeline_events
    );
    for e in o.events.iter().take(TIMELINE_LINES) {
        let _ = writeln!(t, "  {}  {:<11} {}", hms(e.at_ms), e.actor, e.describe());
    }
    if o.timeline_events > TIMELINE_LINES as u64 {
        let _ = writeln!(
            t,
            "  ... {} more",
            o.timeline_events - TIMELINE_LINES as u64
        );
    }
}

/// The first rows of the outbox with who processed each.
fn text_ownership(t: &mut String, o: &RunOutcome) {
    let l = &o.ledger;
    let _ = writeln!(t, "\nPer-message ownership");
    let _ = writeln!(
        t,
        "  {:>6}  {:<10} {:<10} {:<7} {:>6} {:>5} {:>9}  processed by",
        "Id", "Key", "Outbox", "Payment", "Claims", "Lease", "Processed"
    );
    for row in o.first_rows.iter().take(TABLE_ROWS) {
        let h = l.messages.get(&row.id);
        let _ = writeln!(
            t,
            "  {:>6}  {:<10} {:<10} {:<7} {:>6} {:>5} {:>9}  {}",
            row.id,
            row.key,
            row.status,
            row.payment_status,
            h.map_or(0, |m| m.claims),
            format!("v{}", row.lease_version),
            h.map_or(0, |m| m.runs),
            h.map_or(String::new(), |m| m.processed_by().join(", "))
        );
    }
    if o.messages as usize > TABLE_ROWS {
        let _ = writeln!(t, "  ... {} more rows", o.messages as usize - TABLE_ROWS);
    }
}

/// Claims (leasing on) or bulk loads (leasing off).
fn text_claim_ledger(t: &mut String, o: &RunOutcome) {
    let l = &o.ledger;
    let _ = writeln!(t, "\nClaim ledger");
    if o.leasing {
        let _ = writeln!(
            t,
            "  claims {}   empty {}   blocked {}   reclaims {} (after expiry)",
            l.claims_ok, l.claims_empty, l.claims_blocked, l.reclaims
        );
    } else {
        let _ = writeln!(
            t,
            "  no claims: {} bulk loads read {} rows ({})",
            l.loads,
            l.loaded_rows,
            loaded_detail(o)
        );
    }
}

/// Processing attempts, duplicates, rejected finalizes and the split per worker.
fn text_processing_ledger(t: &mut String, o: &RunOutcome) {
    let l = &o.ledger;
    let _ = writeln!(t, "\nProcessing ledger");
    let _ = writeln!(
        t,
        "  attempts {}   provider calls {}   unique {}   duplicates {} (processed more than once)",
        l.processing_attempts,
        o.provider_status_checks,
        l.unique_processed(),
        l.processed_more_than_once()
    );
    let hist = l
        .runs_histogram()
        .iter()
        .map(|(runs, n)| format!("{n} x {runs}"))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(t, "  messages by times processed: {hist}");
    if l.rejected_finalizes > 0 {
        let _ = writeln!(
            t,
            "  {} provider calls ran for a worker whose lease had already been taken over; the guard rejected their results",
            l.rejected_finalizes
        );
    }
    let _ = writeln!(
        t,
        "  rejected {}   violations {}",
        l.rejected_finalizes,
        if o.leasing {
            l.ownership_violations.to_string()
        } else {
            "n/a (no ownership)".into()
        }
    );
    let split = per_worker(o)
        .iter()
        .map(|(w, n)| format!("{w} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(t, "  results written per worker: {split}");
    let _ = writeln!(
        t,
        "  retries {}   dead letters {} ({} still dead-lettered)   redriven {}   heartbeats {}   leases lost {}",
        l.retries,
        l.dead_letters,
        l.dead.len(),
        l.redriven,
        l.heartbeats,
        l.leases_lost
    );
    if l.restarts > 0 {
        let _ = writeln!(
            t,
            "  crashes {}   restarts {} (a restart is a new identity, e.g. Worker-A#2)",
            l.crashes, l.restarts
        );
    }
}

/// Outbox and payment counts as the database holds them at the end.
fn text_final_state(t: &mut String, o: &RunOutcome) {
    let _ = writeln!(t, "\nFinal state (read from {})", o.db_engine);
    let _ = writeln!(
        t,
        "  outbox   Processed {}  Pending {}  Processing {}",
        o.outbox.processed, o.outbox.pending, o.outbox.processing
    );
    let _ = writeln!(
        t,
        "  payments Paid {}  Failed {}  Pending {}   (Paid with transaction id {}, Failed with id {})",
        o.payments.paid, o.payments.failed, o.payments.pending, o.payments.paid_with_txid, o.payments.failed_with_txid
    );
    // PostgreSQL locks rows, not the database: it has no busy waits to count.
    let busy = match o.db_engine {
        "SQLite" => format!("   SQLITE_BUSY met and absorbed {}", o.busy_met),
        _ => String::new(),
    };
    let _ = writeln!(
        t,
        "  gateway creation calls {} (in workers {}){busy}",
        o.gateway_creation_calls, o.creations_by_workers
    );
}

/// Every check, the verdict and the exit code it leads to.
fn text_checks_and_verdict(t: &mut String, checks: &[Check], passed: bool, verdict: &str) {
    let _ = writeln!(t, "\nChecks");
    for c in checks {
        let _ = writeln!(
            t,
            "  [{}] {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    let _ = writeln!(t, "\nVerdict: {verdict}");
    let _ = writeln!(
        t,
        "{}",
        if passed {
            "All checks passed (exit 0)."
        } else {
            "Some checks failed (exit 1)."
        }
    );
}
