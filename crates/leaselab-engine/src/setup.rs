//! The timing a run, the dashboard or a lesson starts with, resolved once from the command
//! line over the defaults written here. The dashboard's defaults are slower than a headless
//! run's on purpose: a person watches its leases run out.

use crate::outbox::RetryPolicy;
use crate::provider::ProviderFaults;

/// Lease length, processing time and clock speed, in scenario milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub lease_ms: i64,
    pub process_ms: i64,
    /// Scenario seconds per wall second.
    pub speed: f64,
}

impl Timing {
    /// `leaselab run` and the engine's own default: short leases, no processing time.
    pub const HEADLESS: Timing = Timing {
        lease_ms: 500,
        process_ms: 0,
        speed: 1.0,
    };

    /// The dashboard and a lesson's setup: slow enough to watch a lease run out.
    pub const DASHBOARD: Timing = Timing {
        lease_ms: 3_000,
        process_ms: 1_200,
        speed: 1.0,
    };

    /// Scenario time a worker waits after finding nothing to claim.
    pub fn idle_ms(&self) -> i64 {
        idle_ms(self.process_ms)
    }

    /// Without heartbeats a lease must outlive the processing: one that runs out
    /// mid-message is taken over and its finalize rejected. `what` says what that means
    /// where it is asked; the refusal is one line.
    pub fn check_lease_outlives_processing(
        &self,
        heartbeats: bool,
        what: &str,
    ) -> Result<(), String> {
        if heartbeats || self.process_ms < self.lease_ms {
            return Ok(());
        }
        Err(format!(
            "--process-ms {} needs a longer --lease-ms (now {}) without heartbeats: {what}",
            self.process_ms, self.lease_ms
        ))
    }

    /// These defaults with whatever the command line set put over them.
    pub fn resolve(
        self,
        lease_ms: Option<i64>,
        process_ms: Option<i64>,
        speed: Option<f64>,
    ) -> Timing {
        Timing {
            lease_ms: lease_ms.unwrap_or(self.lease_ms),
            process_ms: process_ms.unwrap_or(self.process_ms),
            speed: speed.unwrap_or(self.speed),
        }
    }
}

/// An idle worker asks again a few times per processing time, and at least every
/// `MAX_IDLE_MS`, so a watched dashboard never waits long; on a frozen clock it waits for
/// the next jump whatever this says.
pub fn idle_ms(process_ms: i64) -> i64 {
    (process_ms / 4).clamp(1, MAX_IDLE_MS)
}

/// The longest an idle worker waits before it asks again, in scenario milliseconds.
pub const MAX_IDLE_MS: i64 = 250;
/// The heartbeat interval when none is set: a third of the lease, so two beats can be
/// missed before the lease runs out.
pub fn default_heartbeat_ms(lease_ms: i64) -> i64 {
    (lease_ms / 3).max(1)
}

/// Refuse a heartbeat interval that cannot keep a lease alive.
pub fn check_heartbeat(heartbeat_ms: i64, lease_ms: i64) -> Result<(), String> {
    if heartbeat_ms < 1 || heartbeat_ms >= lease_ms {
        return Err(format!(
            "heartbeat interval {heartbeat_ms} ms must be at least 1 and shorter than the lease \
             ({lease_ms} ms): a beat after the lease ran out cannot keep it"
        ));
    }
    Ok(())
}

/// How workers keep leases alive and treat failed attempts: heartbeats, retries with
/// backoff and the dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reliability {
    /// Workers extend the lease of a message they process while this is on.
    pub heartbeats: bool,
    /// The heartbeat interval; None means a third of the lease.
    pub heartbeat_ms: Option<i64>,
    pub retry: RetryPolicy,
    /// Provider failures to serve (none by default).
    pub faults: ProviderFaults,
}

impl Default for Reliability {
    fn default() -> Self {
        Reliability {
            heartbeats: true,
            heartbeat_ms: None,
            retry: RetryPolicy::default(),
            faults: ProviderFaults::default(),
        }
    }
}

impl Reliability {
    /// The interval in use for a lease of `lease_ms`.
    pub fn heartbeat_for(&self, lease_ms: i64) -> i64 {
        self.heartbeat_ms
            .unwrap_or_else(|| default_heartbeat_ms(lease_ms))
    }

    /// Refuse an interval that cannot keep a lease of `lease_ms` alive (one line).
    pub fn check(&self, lease_ms: i64) -> Result<(), String> {
        match self.heartbeat_ms {
            Some(ms) if self.heartbeats => check_heartbeat(ms, lease_ms),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_over_each_default_on_its_own() {
        let t = Timing::DASHBOARD.resolve(Some(800), None, Some(4.0));
        assert_eq!((t.lease_ms, t.process_ms, t.speed), (800, 1_200, 4.0));
        assert_eq!(Timing::HEADLESS.resolve(None, None, None), Timing::HEADLESS);
    }

    #[test]
    fn one_idle_rule_keeps_each_default_wait() {
        assert_eq!(Timing::HEADLESS.idle_ms(), 1);
        assert_eq!(Timing::DASHBOARD.idle_ms(), 250);
        assert_eq!(idle_ms(200), 50);
        assert_eq!(idle_ms(600_000), MAX_IDLE_MS);
    }

    #[test]
    fn without_heartbeats_a_lease_must_outlive_the_processing() {
        let t = Timing::DASHBOARD.resolve(Some(1_000), Some(1_000), None);
        let e = t
            .check_lease_outlives_processing(false, "it is lost")
            .unwrap_err();
        assert_eq!(
            e,
            "--process-ms 1000 needs a longer --lease-ms (now 1000) without heartbeats: it is lost"
        );
        assert!(t.check_lease_outlives_processing(true, "x").is_ok());
        let t = Timing::DASHBOARD.resolve(Some(1_001), Some(1_000), None);
        assert!(t.check_lease_outlives_processing(false, "x").is_ok());
        assert!(Timing::HEADLESS
            .check_lease_outlives_processing(false, "x")
            .is_ok());
    }
}
