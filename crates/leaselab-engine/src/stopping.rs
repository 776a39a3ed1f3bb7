//! A stop asked of this process (a signal, a closed terminal, a dashboard gone), as the
//! engine's waits hear it.

use crate::{pg, store, student};

/// A stopping signal arrived: every wait for a locked SQLite file gives up at once, every
/// student's statement running in this process is interrupted (and none starts again), and
/// every statement running on a PostgreSQL connection of this process is cancelled.
pub fn stop_waiting() {
    store::stop_waiting_for_the_lock();
    student::stop_all();
    pg::cancel_all();
}

/// The work that a stop ended has ended: the few writes of leaving (a lease given back, a
/// `Left` row) wait for a locked SQLite file again, until the next stop.
pub fn wait_again() {
    store::wait_for_the_lock_again();
}
