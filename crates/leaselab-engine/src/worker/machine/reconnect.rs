//! A worker whose connection went away (the server stopped or restarted) opens a new one,
//! waiting longer between attempts, and goes on where it was. Only a worker whose settings
//! say so (a worker process on a shared server); a thread of a dashboard stops as before.

use std::time::{Duration, Instant};

use crate::reconnect::{shown, wait_before};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::events::EventKind;

use super::*;

impl Worker {
    /// After `error`: a worker that reconnects and whose connection went away opens a new
    /// one, saying so a line an attempt, then `reconnected`. Ok(None) goes on where it was
    /// (a lease it held meets the fencing token at its finalize, as any would); Ok(Some)
    /// when it was told to stop meanwhile; the error when it is not one a new connection
    /// mends, or the server now refuses for good (a password changed, the database gone).
    pub(super) fn recover(
        &mut self,
        error: WorkerError,
        rx: &Receiver<Control>,
    ) -> Result<Option<Exit>, WorkerError> {
        let lost = matches!(&error, WorkerError::Outbox(e) if e.may_heal());
        if !lost || !self.ctx.settings.reconnects() {
            return Err(error);
        }
        self.emit(EventKind::Note {
            text: format!("connection lost: {error}"),
        });
        for attempt in 1u32.. {
            let wait = wait_before(attempt);
            self.emit(EventKind::Note {
                text: format!("reconnecting (attempt {attempt}, next in {})", shown(wait)),
            });
            if let Some(exit) = wait_for_stop(rx, wait) {
                return Ok(Some(exit));
            }
            match crate::worker::handle::open_store(&self.ctx) {
                Ok(store) => {
                    self.store = store;
                    self.emit(EventKind::Note {
                        text: "reconnected".to_string(),
                    });
                    return Ok(None);
                }
                Err(e) if e.may_heal() => {}
                Err(e) => return Err(WorkerError::Open(e)),
            }
        }
        unreachable!("the attempts never run out")
    }
}

/// Wait `wait`, unless told to stop first. Other commands wait for the connection: they
/// are dropped, as a worker process is sent none.
fn wait_for_stop(rx: &Receiver<Control>, wait: Duration) -> Option<Exit> {
    let until = Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Control::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                return Some(Exit::Shutdown)
            }
            Ok(Control::Crash) => return Some(Exit::Crash),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => return None,
        }
    }
}
