//! What every schedule must keep: the checks, and what breaking each means.

use super::options::Mode;

/// What every schedule must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// A message is Processed with no answer from the provider written.
    Lost,
    /// A message is finalized (or marked) Processed twice.
    ProcessedTwice,
    /// The provider did the work for one payment twice.
    SideEffectTwice,
    /// A finalize committed by a worker whose lease was not the row's newest.
    NonOwnerFinalize,
    /// A claim took a message under another worker's live lease.
    LeaseExclusivity,
    /// A message is unfinished and no step can change anything.
    Stuck,
}

impl Check {
    pub const ALL: [Check; 6] = [
        Check::Lost,
        Check::ProcessedTwice,
        Check::SideEffectTwice,
        Check::NonOwnerFinalize,
        Check::LeaseExclusivity,
        Check::Stuck,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Lost => "lost",
            Check::ProcessedTwice => "processed twice",
            Check::SideEffectTwice => "provider side effect twice",
            Check::NonOwnerFinalize => "finalize by a non-owner",
            Check::LeaseExclusivity => "lease exclusivity",
            Check::Stuck => "stuck",
        }
    }

    /// Ownership has no meaning without leases.
    pub fn applies(self, mode: Mode) -> bool {
        mode.leasing() || !matches!(self, Check::NonOwnerFinalize | Check::LeaseExclusivity)
    }

    /// What breaking it means, after a counterexample's last step.
    pub(crate) fn consequence(self, key: &str) -> String {
        match self {
            Check::Lost => format!("so {key} was marked Processed with its answer lost"),
            Check::ProcessedTwice => format!("so {key} was processed twice"),
            Check::SideEffectTwice => {
                format!("so the provider did the work for {key} twice")
            }
            Check::NonOwnerFinalize => {
                format!("so {key} was finalized by a worker that no longer owned it")
            }
            Check::LeaseExclusivity => {
                format!("so two workers held a live lease on {key} at once")
            }
            Check::Stuck => format!("so {key} is stuck: no worker's step can move it"),
        }
    }
}
