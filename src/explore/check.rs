//! What every schedule must keep: the checks, and what breaking each means.

use super::options::Mode;

/// What every schedule must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// A message is done with, Processed or its row gone, with no finalize accepted for it
    /// (so no answer of the provider written for it), or Processed with no answer written.
    Lost,
    /// A payment has an answer written (Paid, Failed, a transaction) for which the provider
    /// was never called (`explore --sql`).
    PaidWithoutCall,
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
    /// A message given up on purpose: dead-lettered, or left unclaimed because of its
    /// attempts. Told as its own outcome; not a failure (`explore --sql`).
    GaveUp,
}

impl Check {
    pub const ALL: [Check; 8] = [
        Check::Lost,
        Check::PaidWithoutCall,
        Check::ProcessedTwice,
        Check::SideEffectTwice,
        Check::NonOwnerFinalize,
        Check::LeaseExclusivity,
        Check::Stuck,
        Check::GaveUp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Lost => "lost",
            Check::ProcessedTwice => "processed twice",
            Check::SideEffectTwice => "provider side effect twice",
            Check::NonOwnerFinalize => "finalize by a non-owner",
            Check::LeaseExclusivity => "lease exclusivity",
            Check::Stuck => "stuck",
            Check::PaidWithoutCall => "paid without a provider call",
            Check::GaveUp => "gave up",
        }
    }

    /// Whether breaking it fails the grade; a message given up on purpose does not.
    pub fn fails(self) -> bool {
        self != Check::GaveUp
    }

    /// Ownership has no meaning without leases; a payment answered without a call and a
    /// message given up are a student's statements' doing (`sql`).
    pub fn applies(self, mode: Mode, sql: bool) -> bool {
        let owned =
            mode.leasing() || !matches!(self, Check::NonOwnerFinalize | Check::LeaseExclusivity);
        owned && (sql || !matches!(self, Check::PaidWithoutCall | Check::GaveUp))
    }

    /// What breaking it means, after a counterexample's last step.
    pub(crate) fn consequence(self, key: &str) -> String {
        match self {
            Check::Lost => format!(
                "so {key} was lost: done with (Processed, or its row gone) with no finalize of \
                 it accepted after a provider call, or with its answer unwritten"
            ),
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
            Check::PaidWithoutCall => {
                format!("so {key}'s payment holds an answer the provider never gave")
            }
            Check::GaveUp => format!("so {key} was given up, on purpose"),
        }
    }
}
