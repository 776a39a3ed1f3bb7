//! What reading a lesson's steps needs to know: the file, the crew, the payments, and the
//! stalls and crew changes read so far.

use super::source::Parser;

/// Reading the steps of one lesson file.
pub(super) struct Ctx<'a> {
    pub(super) p: &'a Parser<'a>,
    pub(super) workers: usize,
    pub(super) messages: u64,
    /// The heartbeat interval a `work` step moves the clock by.
    pub(super) beat_ms: i64,
    /// Each `stall` read so far, in file order: the stalled worker's slot, the slot of the
    /// new worker started under its name, and the line.
    pub(super) stalls: std::cell::RefCell<Vec<(usize, usize, usize)>>,
    /// The line of the first `workers N`, if any.
    pub(super) crew_change: std::cell::Cell<Option<usize>>,
    /// The exercise whose statements the workers run (`sql`), if any.
    pub(super) exercise: Option<&'a crate::engine::student::Exercise>,
}
