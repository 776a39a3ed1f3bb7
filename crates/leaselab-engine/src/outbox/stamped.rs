//! What every write of the outbox returns: its outcome with the engine's commit stamp.

/// A write's outcome and the engine's stamp of its commit, taken while the write still held
/// its locks (SQLite's write lock, or on PostgreSQL the event row's Seq drawn under the row
/// lock), so stamps order each message's history as the database committed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamped<T> {
    pub value: T,
    /// The commit stamp: the `seq` of the engine events this write produces.
    pub seq: u64,
}

impl<T> Stamped<T> {
    pub fn new(value: T, seq: u64) -> Stamped<T> {
        Stamped { value, seq }
    }

    /// The same stamp on another outcome.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Stamped<U> {
        Stamped {
            value: f(self.value),
            seq: self.seq,
        }
    }
}
