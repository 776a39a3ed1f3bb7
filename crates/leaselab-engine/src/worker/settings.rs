//! The settings every worker reads at the start of each cycle, shared through atomics so a
//! change applies live.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::outbox::{FinalizeGuard, RetryPolicy, RunSettings};

/// Settings every worker reads at the start of each cycle, so a change applies live.
#[derive(Debug)]
pub struct Settings {
    pub leasing: AtomicBool,
    pub lease_ms: AtomicI64,
    pub process_ms: AtomicI64,
    /// After an empty claim, wait this long (scenario time) before asking again.
    pub idle_ms: AtomicI64,
    /// A worker processing a message extends its lease every `heartbeat_ms` while this is on.
    pub heartbeats: AtomicBool,
    pub heartbeat_ms: AtomicI64,
    /// The retry policy, one number each so a change applies live.
    pub backoff_ms: AtomicI64,
    pub backoff_cap_ms: AtomicI64,
    pub max_attempts: AtomicI64,
    /// Messages a worker claims per transaction (1: one at a time). The rest of a batch
    /// waits, leased, until the worker is done with the one before.
    pub batch: AtomicI64,
    /// A finalize checks the owner's name only, not the fencing token: the weaker guard a
    /// lesson may show failing (`finalize_guard = "owner"`). Off: leaselab's own guard.
    pub owner_only_finalize: AtomicBool,
    /// A lost connection is opened again (a worker process on a shared server) rather than
    /// ending the worker (a dashboard's thread, whose dashboard says the database failed).
    pub reconnects: AtomicBool,
    /// Before each claim, read whether the teacher holds the class (a worker process on a
    /// shared server, `leaselab class hold`), and claim nothing while so.
    pub follows_teacher: AtomicBool,
}

impl Settings {
    pub fn new(leasing: bool, lease_ms: i64, process_ms: i64, idle_ms: i64) -> Settings {
        Settings {
            leasing: AtomicBool::new(leasing),
            lease_ms: AtomicI64::new(lease_ms),
            process_ms: AtomicI64::new(process_ms),
            idle_ms: AtomicI64::new(idle_ms),
            heartbeats: AtomicBool::new(true),
            heartbeat_ms: AtomicI64::new(crate::setup::default_heartbeat_ms(lease_ms)),
            backoff_ms: AtomicI64::new(RetryPolicy::default().base_ms),
            backoff_cap_ms: AtomicI64::new(RetryPolicy::default().cap_ms),
            max_attempts: AtomicI64::new(RetryPolicy::default().max_attempts),
            batch: AtomicI64::new(1),
            owner_only_finalize: AtomicBool::new(false),
            reconnects: AtomicBool::new(false),
            follows_teacher: AtomicBool::new(false),
        }
    }
    /// Take over heartbeats and retries from a setup.
    pub fn apply(&self, r: &crate::setup::Reliability, lease_ms: i64) {
        self.heartbeats.store(r.heartbeats, Ordering::SeqCst);
        self.heartbeat_ms
            .store(r.heartbeat_for(lease_ms), Ordering::SeqCst);
        self.backoff_ms.store(r.retry.base_ms, Ordering::SeqCst);
        self.backoff_cap_ms.store(r.retry.cap_ms, Ordering::SeqCst);
        self.max_attempts
            .store(r.retry.max_attempts, Ordering::SeqCst);
    }
    pub fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            base_ms: self.backoff_ms.load(Ordering::SeqCst),
            cap_ms: self.backoff_cap_ms.load(Ordering::SeqCst),
            max_attempts: self.max_attempts.load(Ordering::SeqCst).max(1),
        }
    }
    pub fn heartbeats(&self) -> bool {
        self.heartbeats.load(Ordering::SeqCst)
    }
    pub fn heartbeat_ms(&self) -> i64 {
        self.heartbeat_ms.load(Ordering::SeqCst).max(1)
    }
    pub fn leasing(&self) -> bool {
        self.leasing.load(Ordering::SeqCst)
    }
    pub fn lease_ms(&self) -> i64 {
        self.lease_ms.load(Ordering::SeqCst)
    }
    pub fn process_ms(&self) -> i64 {
        self.process_ms.load(Ordering::SeqCst)
    }
    pub fn idle_ms(&self) -> i64 {
        self.idle_ms.load(Ordering::SeqCst)
    }
    pub fn finalize_guard(&self) -> FinalizeGuard {
        if self.owner_only_finalize.load(Ordering::SeqCst) {
            FinalizeGuard::OwnerOnly
        } else {
            FinalizeGuard::FencingToken
        }
    }
    pub fn follows_teacher(&self) -> bool {
        self.follows_teacher.load(Ordering::SeqCst)
    }

    pub fn reconnects(&self) -> bool {
        self.reconnects.load(Ordering::SeqCst)
    }
    pub fn batch(&self) -> usize {
        self.batch.load(Ordering::SeqCst).clamp(1, MAX_BATCH as i64) as usize
    }
    /// What a `Settings` or `Joined` row records of these settings now.
    pub fn recorded(&self) -> RunSettings {
        RunSettings {
            lease_ms: self.lease_ms(),
            process_ms: self.process_ms(),
            leasing: self.leasing(),
            heartbeats: self.heartbeats(),
            heartbeat_ms: self.heartbeat_ms(),
            batch: self.batch() as i64,
            owner_only: self.finalize_guard() == FinalizeGuard::OwnerOnly,
            // The engine says whether its workers run an exercise (`Engine::run_settings`).
            student: false,
        }
    }
}

/// The most messages one batch claim takes.
pub const MAX_BATCH: usize = 100;
