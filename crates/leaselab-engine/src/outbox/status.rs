//! The states a row can be in, as the schema's CHECK constraints spell them.

use std::fmt;

/// An enum stored as the text its variant is named, one of a CHECK constraint's strings.
macro_rules! text_state {
    ($(#[$doc:meta])* $name:ident { $($variant:ident),+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant)),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|s| s.as_str() == text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

text_state!(
    /// `OutboxMessages.Status`.
    OutboxStatus { Pending, Processing, Processed, DeadLettered }
);

text_state!(
    /// `Payments.PaymentStatus`.
    PaymentStatus { Pending, Paid, Failed }
);

text_state!(
    /// `LeaseEvents.Kind`: what a row says happened. The first eleven are written by the
    /// transaction that made the change; the rest record what the lab did to a worker or
    /// what a worker did outside the database, each in a transaction of its own when it
    /// happened: a crash, a freeze and its end, a restart, a provider call with its answer,
    /// the settings a run used, a worker process joining and leaving.
    LeaseEventKind {
        Seeded, Added, Claimed, Heartbeat, Finalized, FinalizeRejected, Marked, Retry,
        DeadLettered, LeaseLost, Redriven, Crashed, Paused, Resumed, Restarted, Checked,
        Settings, Joined, Left
    }
);
