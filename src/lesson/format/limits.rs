//! The bounds a lesson file is held to: its format version, how many choices a question
//! offers, and the largest amounts its actions and expectations may name.

/// The only format this build reads.
pub const FORMAT_VERSION: i64 = 1;

/// Fewest and most choices a question may offer (keys 1-9 pick one).
pub const CHOICES: std::ops::RangeInclusive<usize> = 2..=9;

/// Longest a `work` or `advance` step may move the clock: one day, in milliseconds.
pub const MAX_CLOCK_MS: i64 = 86_400_000;
/// Most heartbeat intervals one `work` step may cover: each is a round of heartbeats.
pub const MAX_WORK_BEATS: i64 = 1_000;
/// Most payments one `add-payment N` adds.
pub const MAX_ADD_PAYMENT: i64 = 1_000;
/// Most payments a lesson may have in all: its seeded ones and every one it adds.
pub const MAX_LESSON_MESSAGES: u64 = 10_000;
/// The largest figure an `expect` may state.
pub const MAX_EXPECTED: i64 = 1_000_000_000;

/// Most mistakes one run reports; the rest are counted.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// The longest exercise path a lesson's `sql` may name, in characters.
pub const MAX_SQL_PATH: usize = 1_024;
