//! The fake payment provider: one in-process gateway shared by every worker.
//!
//! It counts every call per key, because a call counter is where a duplicate side effect
//! becomes visible: the final database rows look the same whether a status check ran once
//! or twice.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ProviderStatus {
    Paid,
    Failed,
}

impl ProviderStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderStatus::Paid => "Paid",
            ProviderStatus::Failed => "Failed",
        }
    }
}

/// What a status check answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StatusCheck {
    pub status: ProviderStatus,
    /// Issued by the provider, only for Paid.
    pub transaction_id: Option<String>,
}

/// Failures the provider is told to serve (a lesson's or the command line's): the first N
/// status checks of a key fail, or every one does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFaults {
    pub fail_first: BTreeMap<String, u64>,
    pub fail_always: std::collections::BTreeSet<String>,
}

impl ProviderFaults {
    pub fn is_empty(&self) -> bool {
        self.fail_first.is_empty() && self.fail_always.is_empty()
    }
}

#[derive(Debug, Default, Clone)]
pub struct KeyCalls {
    pub creations: u64,
    pub creations_by_workers: u64,
    pub status_checks: u64,
    /// Status checks that did work at the provider; a repeat answered from the
    /// idempotency record does not count.
    pub side_effects: u64,
    pub said_paid: bool,
    /// Status checks that failed (a served fault).
    pub failures: u64,
    /// The first answer for this key, replayed when the provider is idempotent.
    first: Option<StatusCheck>,
}

/// Everything the provider has been asked and answered, to put back later (the explorer
/// returns to earlier states).
#[derive(Debug, Default, Clone)]
pub struct ProviderState(Inner);

#[derive(Debug, Default, Clone)]
struct Inner {
    keys: BTreeMap<String, KeyCalls>,
    issued: HashSet<String>,
    // Running totals, so a screen can show them every frame without walking every key.
    status_checks: u64,
    side_effects: u64,
    creations: u64,
    creations_by_workers: u64,
    failures: u64,
}

#[derive(Debug, Default)]
pub struct Provider {
    inner: Mutex<Inner>,
    /// Honour the payment's idempotency key; kept apart from `inner` so a reset keeps it.
    idempotent: AtomicBool,
    /// Failures to serve; like the switch above, a reset keeps them.
    faults: Mutex<ProviderFaults>,
}

thread_local! {
    /// Set on a worker's thread: a creation call made here is a worker's.
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as a worker's while it lives, so the provider can tell who
/// makes a creation call: seeding creates payments, workers only check them.
pub struct WorkerThread {
    before: bool,
}

impl WorkerThread {
    pub fn enter() -> WorkerThread {
        WorkerThread {
            before: IN_WORKER.with(|w| w.replace(true)),
        }
    }
}

impl Drop for WorkerThread {
    fn drop(&mut self) {
        IN_WORKER.with(|w| w.set(self.before));
    }
}

/// Hears of each payment created at the gateway while seeding (the provider keeps the
/// creation log; a store only says when).
pub trait CreationLog {
    fn created(&self, key: &str);
}

impl<T: CreationLog + ?Sized> CreationLog for std::sync::Arc<T> {
    fn created(&self, key: &str) {
        (**self).created(key);
    }
}

/// Seeding records each gateway creation call here.
impl CreationLog for Provider {
    fn created(&self, key: &str) {
        self.create_payment(key);
    }
}

impl Provider {
    pub fn new() -> Provider {
        Provider::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The gateway creation call, made once per key when a payment is created. A call from
    /// a worker's thread is counted apart: workers must never create payments.
    pub fn create_payment(&self, key: &str) {
        let by_worker = IN_WORKER.with(|w| w.get());
        let mut guard = self.lock();
        let inner = &mut *guard;
        let calls = inner.keys.entry(key.to_string()).or_default();
        calls.creations += 1;
        if by_worker {
            calls.creations_by_workers += 1;
            inner.creations_by_workers += 1;
        }
        inner.creations += 1;
    }

    /// Switch idempotency on or off: when on, a second call for the same key returns the
    /// first result and causes no new side effect.
    pub fn set_idempotent(&self, on: bool) {
        self.idempotent.store(on, Ordering::SeqCst);
    }

    pub fn is_idempotent(&self) -> bool {
        self.idempotent.load(Ordering::SeqCst)
    }

    pub fn set_faults(&self, faults: ProviderFaults) {
        *self.faults.lock().unwrap_or_else(|p| p.into_inner()) = faults;
    }

    pub fn faults(&self) -> ProviderFaults {
        self.faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The status check as a worker meets it: a served fault fails the call (it counts as a
    /// call, with no side effect), otherwise [`Provider::check_status`].
    pub fn try_check_status(&self, key: &str) -> Result<StatusCheck, String> {
        self.try_call(key).map(|(check, _)| check)
    }

    /// [`Provider::try_check_status`], and whether the call did new work at the provider (a
    /// side effect) rather than replay its first answer for the idempotency key.
    pub fn try_call(&self, key: &str) -> Result<(StatusCheck, bool), String> {
        let failing = {
            let faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
            let always = faults.fail_always.contains(key);
            let first = faults.fail_first.get(key).copied().unwrap_or(0);
            let mut guard = self.lock();
            let inner = &mut *guard;
            let calls = inner.keys.entry(key.to_string()).or_default();
            let fails = always || calls.failures < first;
            if fails {
                calls.status_checks += 1;
                calls.failures += 1;
                inner.status_checks += 1;
                inner.failures += 1;
            }
            fails.then(|| {
                if always {
                    "provider rejects this payment".to_string()
                } else {
                    format!(
                        "provider unavailable (failure {} of {first})",
                        calls.failures
                    )
                }
            })
        };
        match failing {
            Some(error) => Err(error),
            None => Ok(self.call(key)),
        }
    }

    /// Stop serving failures for `key` (or for every key): the fault was fixed.
    pub fn heal(&self, key: Option<&str>) {
        let mut f = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        match key {
            Some(k) => {
                f.fail_first.remove(k);
                f.fail_always.remove(k);
            }
            None => *f = ProviderFaults::default(),
        }
    }

    /// Failed status checks, over every key.
    pub fn failures_total(&self) -> u64 {
        self.lock().failures
    }

    /// The status check a worker makes to reconcile a payment. Deterministic: a key whose
    /// number is a multiple of three fails (PAY-003, PAY-006), every other key is paid.
    pub fn check_status(&self, key: &str) -> StatusCheck {
        self.call(key).0
    }

    /// [`Provider::check_status`], and whether it did new work (a side effect) rather than
    /// replay its first answer for the idempotency key.
    pub fn call(&self, key: &str) -> (StatusCheck, bool) {
        let idempotent = self.is_idempotent();
        let mut guard = self.lock();
        let inner = &mut *guard;
        let calls = inner.keys.entry(key.to_string()).or_default();
        calls.status_checks += 1;
        let nth = calls.status_checks;
        inner.status_checks += 1;
        if idempotent {
            if let Some(first) = &calls.first {
                return (first.clone(), false);
            }
        }
        calls.side_effects += 1;
        inner.side_effects += 1;
        let status = outcome_for(key);
        let transaction_id = match status {
            ProviderStatus::Paid => {
                calls.said_paid = true;
                let id = format!("TX-{key}-{nth}");
                inner.issued.insert(id.clone());
                Some(id)
            }
            ProviderStatus::Failed => None,
        };
        let check = StatusCheck {
            status,
            transaction_id,
        };
        if calls.first.is_none() {
            calls.first = Some(check.clone());
        }
        (check, true)
    }

    /// What the provider has been asked and answered so far.
    pub fn state(&self) -> ProviderState {
        ProviderState(self.lock().clone())
    }

    /// Back to what [`Provider::state`] saw; the idempotency switch and faults stay.
    pub fn set_state(&self, state: &ProviderState) {
        *self.lock() = state.0.clone();
    }

    pub fn calls(&self) -> BTreeMap<String, KeyCalls> {
        self.lock().keys.clone()
    }

    pub fn status_checks_total(&self) -> u64 {
        self.lock().status_checks
    }

    /// Status checks that did work at the provider, over every key.
    pub fn side_effects_total(&self) -> u64 {
        self.lock().side_effects
    }

    pub fn creations_total(&self) -> u64 {
        self.lock().creations
    }

    pub fn creations_by_workers(&self) -> u64 {
        self.lock().creations_by_workers
    }

    /// Did this provider issue this transaction id?
    pub fn issued(&self, transaction_id: &str) -> bool {
        self.lock().issued.contains(transaction_id)
    }

    /// Did the provider ever answer Paid for this key?
    pub fn said_paid(&self, key: &str) -> bool {
        self.lock().keys.get(key).is_some_and(|c| c.said_paid)
    }

    /// Forget every call (the dashboard's reset).
    pub fn clear(&self) {
        let mut inner = self.lock();
        *inner = Inner::default();
    }
}

/// Outcome rule: the trailing number of the key; multiples of three fail.
pub fn outcome_for(key: &str) -> ProviderStatus {
    let digits: String = key
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    match digits.parse::<u64>() {
        Ok(n) if n % 3 == 0 => ProviderStatus::Failed,
        _ => ProviderStatus::Paid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_creation_call_from_a_worker_thread_is_counted_as_a_worker_s() {
        let p = Provider::new();
        p.create_payment("PAY-001");
        std::thread::scope(|s| {
            s.spawn(|| {
                let _worker = WorkerThread::enter();
                p.create_payment("PAY-002");
            });
        });
        p.create_payment("PAY-003");
        assert_eq!((p.creations_total(), p.creations_by_workers()), (3, 1));
        assert_eq!(p.calls()["PAY-002"].creations_by_workers, 1);
    }

    #[test]
    fn six_article_payments_end_four_paid_two_failed() {
        let p = Provider::new();
        let paid = (1..=6)
            .map(|i| p.check_status(&format!("PAY-{i:03}")))
            .filter(|c| c.status == ProviderStatus::Paid)
            .count();
        assert_eq!(paid, 4);
        assert_eq!(p.status_checks_total(), 6);
    }

    #[test]
    fn counts_every_call_and_issues_distinct_ids() {
        let p = Provider::new();
        let a = p.check_status("PAY-001").transaction_id.unwrap();
        let b = p.check_status("PAY-001").transaction_id.unwrap();
        assert_ne!(a, b);
        assert!(p.issued(&a) && p.issued(&b) && !p.issued("TX-forged"));
        assert_eq!(p.calls()["PAY-001"].status_checks, 2);
        assert!(p.check_status("PAY-003").transaction_id.is_none());
        assert_eq!(p.calls()["PAY-001"].side_effects, 2);
    }

    #[test]
    fn a_fault_fails_the_first_calls_of_a_key_or_every_one() {
        let p = Provider::new();
        p.set_faults(ProviderFaults {
            fail_first: [("PAY-001".to_string(), 2)].into(),
            fail_always: ["PAY-002".to_string()].into(),
        });
        assert!(p.try_check_status("PAY-001").is_err());
        assert!(p.try_check_status("PAY-001").is_err());
        assert_eq!(
            p.try_check_status("PAY-001").unwrap().status,
            ProviderStatus::Paid
        );
        for _ in 0..5 {
            assert!(p.try_check_status("PAY-002").is_err());
        }
        assert!(p.try_check_status("PAY-004").is_ok());
        assert_eq!((p.failures_total(), p.status_checks_total()), (7, 9));
        assert_eq!(
            p.side_effects_total(),
            2,
            "a failed call has no side effect"
        );
        p.clear();
        assert!(
            p.try_check_status("PAY-001").is_err(),
            "a reset serves them again"
        );
    }

    #[test]
    fn an_idempotent_provider_replays_the_first_answer_without_a_new_side_effect() {
        let p = Provider::new();
        p.set_idempotent(true);
        let a = p.check_status("PAY-001");
        let b = p.check_status("PAY-001");
        assert_eq!(a, b);
        let calls = &p.calls()["PAY-001"];
        assert_eq!((calls.status_checks, calls.side_effects), (2, 1));
        assert_eq!((p.status_checks_total(), p.side_effects_total()), (2, 1));
        p.check_status("PAY-002");
        assert_eq!(p.side_effects_total(), 2);
        p.clear();
        assert!(p.is_idempotent(), "a reset keeps the switch");
    }
}
