//! The scenarios a run or the dashboard opens: their names, what each tells, and the
//! setup each needs.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    CompetingNoClaim,
    OutboxLeasing,
    LeaseExpiry,
    Soak,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::CompetingNoClaim,
        Scenario::OutboxLeasing,
        Scenario::LeaseExpiry,
        Scenario::Soak,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::CompetingNoClaim => "competing-no-claim",
            Scenario::OutboxLeasing => "outbox-leasing",
            Scenario::LeaseExpiry => "lease-expiry",
            Scenario::Soak => "soak",
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            Scenario::CompetingNoClaim => {
                "BEFORE: workers load every pending row and all process them (duplicates)"
            }
            Scenario::OutboxLeasing => {
                "AFTER: lease-expiry recovery on PAY-001, then workers claim the rest, once each"
            }
            Scenario::LeaseExpiry => {
                "the recovery story alone: claim, crash, blocked, expire, reclaim, finalize"
            }
            Scenario::Soak => {
                "random crashes, restarts, pauses and clock jumps from --seed; still once each"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn names() -> String {
        Scenario::ALL.map(|s| s.name()).join(", ")
    }

    pub fn default_messages(self) -> u64 {
        match self {
            Scenario::LeaseExpiry => 1,
            Scenario::Soak => 100_000,
            _ => 6,
        }
    }

    pub fn default_workers(self) -> usize {
        match self {
            Scenario::Soak => 16,
            _ => 2,
        }
    }

    /// Does this story run with leasing on?
    pub fn leasing(self) -> bool {
        !matches!(self, Scenario::CompetingNoClaim)
    }

    /// Refuse a setup that cannot tell this story: lease-expiry needs leases, and the
    /// recovery story (`story`) needs Worker-A and Worker-B.
    pub fn check_setup(self, leasing: bool, workers: usize, story: bool) -> Result<(), SetupError> {
        if self == Scenario::LeaseExpiry && !leasing {
            return Err(SetupError::NeedsLeasing);
        }
        if story && workers < 2 {
            return Err(SetupError::NeedsTwoWorkers(self));
        }
        Ok(())
    }

    /// Does it open with the lease-expiry recovery?
    pub fn has_story(self) -> bool {
        matches!(self, Scenario::OutboxLeasing | Scenario::LeaseExpiry)
    }
}

/// A setup that cannot tell its scenario's story.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("lease-expiry is a story about leases; it cannot run with --no-leasing")]
    NeedsLeasing,
    #[error("{} needs at least 2 workers (the story has Worker-A and Worker-B)", .0.name())]
    NeedsTwoWorkers(Scenario),
}
