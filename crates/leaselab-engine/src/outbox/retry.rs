//! Failed attempts: when a message is tried again, and when it is dead-lettered. Both
//! databases write what [`RetryPolicy::after_failure`] decides.

use super::OutboxStatus;

/// When a failed message may be tried again, and how often before it is dead-lettered.
///
/// After failed attempt `n` (1-based) the message waits
/// `min(cap_ms, base_ms * 2^(n-1))` ms: base, 2·base, 4·base, … never more than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base_ms: i64,
    pub cap_ms: i64,
    /// Attempts (claims) a message gets; the failure of the last one dead-letters it.
    pub max_attempts: i64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            base_ms: 100,
            cap_ms: 2_000,
            max_attempts: 5,
        }
    }
}

/// How the error of a failed attempt written under [`RetryPolicy::RELEASE`] begins
/// (`released: SIGINT`): a lease given back, which a watcher tells apart from a failure.
pub const RELEASED: &str = "released: ";

impl RetryPolicy {
    /// A lease given back on purpose (a worker stopped while it held it): the message is
    /// Pending and claimable at once, and no number of them dead-letters it.
    pub const RELEASE: RetryPolicy = RetryPolicy {
        base_ms: 0,
        cap_ms: 0,
        max_attempts: i64::MAX,
    };

    /// A policy, or the one line that says why it cannot be one.
    pub fn new(base_ms: i64, cap_ms: i64, max_attempts: i64) -> std::result::Result<Self, String> {
        if max_attempts < 1 {
            return Err(format!(
                "max attempts must be at least 1 (got {max_attempts}): a message needs one attempt"
            ));
        }
        if base_ms < 0 || cap_ms < base_ms {
            return Err(format!(
                "retry backoff needs 0 <= base <= cap (got base {base_ms} ms, cap {cap_ms} ms)"
            ));
        }
        Ok(RetryPolicy {
            base_ms,
            cap_ms,
            max_attempts,
        })
    }

    /// What a failed attempt leaves, after `attempts` claims: the row's new status, the time
    /// from which it may be claimed, and the outcome as the worker reports it. The last
    /// attempt's failure dead-letters it; any earlier one backs off.
    pub fn after_failure(&self, attempts: i64, now: i64) -> (OutboxStatus, i64, FailOutcome) {
        if attempts >= self.max_attempts {
            let dead = FailOutcome::DeadLettered { attempts };
            return (OutboxStatus::DeadLettered, now, dead);
        }
        let at = now + self.backoff_ms(attempts);
        let retry = FailOutcome::Retry {
            attempt: attempts,
            available_at_ms: at,
        };
        (OutboxStatus::Pending, at, retry)
    }

    /// The wait after failed attempt `attempt` (1-based): `min(cap, base * 2^(attempt-1))`.
    pub fn backoff_ms(&self, attempt: i64) -> i64 {
        let doublings = (attempt.max(1) - 1).min(62) as u32;
        self.base_ms
            .saturating_mul(1i64 << doublings)
            .min(self.cap_ms)
    }
}

/// What became of a message whose attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to Pending, claimable again from `available_at_ms`.
    Retry { attempt: i64, available_at_ms: i64 },
    /// Its last attempt failed: DeadLettered, claimed by no one until a redrive.
    DeadLettered { attempts: i64 },
    /// This worker no longer held the lease: nothing was written.
    LeaseLost,
}
