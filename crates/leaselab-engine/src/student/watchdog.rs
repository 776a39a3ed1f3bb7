//! The wall clock of a student's statement. SQLite asks the progress handler only every
//! thousand steps of its virtual machine, and one step may be one long function call: a
//! thread of this module's own interrupts a statement still running at its deadline
//! (`sqlite3_interrupt`, obeyed at the next step), and every running statement when this
//! process is asked to stop or the engine that runs it quits. What one step may cost is
//! bounded by the sandbox's limits (`store::STUDENT_LIMITS`), so a statement ends a few
//! milliseconds after it is interrupted.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use rusqlite::InterruptHandle;

/// Why a statement was interrupted, as [`Reason`] keeps it.
pub const NOT_INTERRUPTED: u8 = 0;
/// It ran past its deadline.
pub const TIME: u8 = 1;
/// This process was asked to stop, or its engine quit.
pub const STOP: u8 = 2;

/// Why the statement running now (or last) was interrupted, shared with the watchdog.
pub type Reason = Arc<AtomicU8>;

/// Set once this process is asked to stop: every student statement running is interrupted,
/// and none starts again.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// A statement running under the watchdog.
struct Entry {
    id: u64,
    until: Instant,
    handle: InterruptHandle,
    /// Its engine's flag, set when the engine quits.
    quit: Arc<AtomicBool>,
    reason: Reason,
}

impl Entry {
    fn interrupt(&self, why: u8) {
        let _ =
            self.reason
                .compare_exchange(NOT_INTERRUPTED, why, Ordering::SeqCst, Ordering::SeqCst);
        self.handle.interrupt();
    }
}

#[derive(Default)]
struct Board {
    running: Vec<Entry>,
    next_id: u64,
    /// The thread that keeps the deadlines has been started.
    started: bool,
    /// When the thread wakes next, None while it waits for a statement: a statement whose
    /// deadline comes later need not wake it (every deadline is a second away, so the next
    /// statement's comes after the one the thread waits for).
    wakes_at: Option<Instant>,
}

#[derive(Default)]
struct Watchdog {
    board: Mutex<Board>,
    wake: Condvar,
}

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(Watchdog::default)
}

impl Watchdog {
    fn board(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Interrupt each statement whose deadline has passed; sleep until the next deadline,
    /// or until a statement starts. Every interrupt happens with the board locked, so none
    /// reaches a statement that has left it.
    fn keep(&'static self) {
        let mut board = self.board();
        loop {
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            for e in &board.running {
                if e.reason.load(Ordering::SeqCst) != NOT_INTERRUPTED {
                    continue;
                }
                if now >= e.until {
                    e.interrupt(TIME);
                } else {
                    next = Some(next.map_or(e.until, |n| n.min(e.until)));
                }
            }
            board.wakes_at = next;
            board = match next {
                Some(at) => {
                    let wait = at.saturating_duration_since(now);
                    match self.wake.wait_timeout(board, wait) {
                        Ok((b, _)) => b,
                        Err(p) => p.into_inner().0,
                    }
                }
                None => self
                    .wake
                    .wait(board)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

/// Whether a stop was asked of this process, or of the engine whose flag `quit` is.
pub fn stopped(quit: &AtomicBool) -> bool {
    STOPPING.load(Ordering::SeqCst) || quit.load(Ordering::SeqCst)
}

/// A statement on the watchdog's board from [`watch`] until this is dropped.
#[must_use]
pub struct Watched {
    id: u64,
}

impl Drop for Watched {
    fn drop(&mut self) {
        watchdog().board().running.retain(|e| e.id != self.id);
    }
}

/// Watch a statement of the connection `handle` interrupts, to be interrupted at `until`
/// or at a stop (its reason then in `reason`). None when a stop was already asked: the
/// statement must not run.
pub fn watch(
    handle: InterruptHandle,
    until: Instant,
    quit: &Arc<AtomicBool>,
    reason: &Reason,
) -> Option<Watched> {
    let w = watchdog();
    let mut board = w.board();
    // Asked with the board locked: a stop that comes after this finds the statement on it.
    if stopped(quit) {
        reason.store(STOP, Ordering::SeqCst);
        return None;
    }
    if !board.started {
        // Without the thread (the system would not start one) the progress handler still
        // keeps the deadline, only less often.
        board.started = std::thread::Builder::new()
            .name("sql-deadlines".into())
            .spawn(|| watchdog().keep())
            .is_ok();
    }
    board.next_id += 1;
    let id = board.next_id;
    board.running.push(Entry {
        id,
        until,
        handle,
        quit: quit.clone(),
        reason: reason.clone(),
    });
    if board.wakes_at.is_none_or(|at| until < at) {
        w.wake.notify_all();
    }
    Some(Watched { id })
}

/// This process is asked to stop: every student statement running is interrupted now, and
/// none starts again.
pub fn stop_all() {
    let board = watchdog().board();
    STOPPING.store(true, Ordering::SeqCst);
    for e in &board.running {
        e.interrupt(STOP);
    }
}

/// The engine whose flag `quit` is quits: its student statements running now are
/// interrupted, and none of its starts again.
pub fn quit(quit: &Arc<AtomicBool>) {
    let board = watchdog().board();
    quit.store(true, Ordering::SeqCst);
    for e in board.running.iter().filter(|e| Arc::ptr_eq(&e.quit, quit)) {
        e.interrupt(STOP);
    }
}
