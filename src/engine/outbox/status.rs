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
