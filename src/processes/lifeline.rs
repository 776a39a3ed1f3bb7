//! The pipe a dashboard keeps open to each worker process it starts (`--processes`), the
//! same on every system: the child reads its standard input, where a byte says "start" to
//! a child started held, and the end of the input says its dashboard is gone, however it
//! ended (a quit, a panic, `kill -9`). The child then stops as a hang-up stops it: it gives
//! its lease back and ends. A frozen child cannot read; what ends it then is
//! `platform::children`'s.

use std::io::Read;
use std::time::Duration;

use crossbeam_channel::Receiver;

/// How long a worker whose dashboard is gone has to stop cleanly before it ends anyway: its
/// two last writes may each wait 5 s for the lock.
const GRACE: Duration = Duration::from_secs(15);

/// The byte that starts a held child.
pub const START: u8 = b'\n';

/// Watch this process's standard input from now on: each byte arrives on the channel; its
/// end stops the process as [`crate::signals::DASHBOARD_GONE`].
pub fn watch() -> Receiver<()> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let spawned = std::thread::Builder::new()
        .name("lifeline".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut byte = [0u8; 1];
            // A read that fails is a pipe that is gone, as its end is.
            while let Ok(1) = stdin.read(&mut byte) {
                let _ = tx.send(());
            }
            crate::signals::stop_from_within(crate::signals::DASHBOARD_GONE);
            std::thread::sleep(GRACE);
            std::process::exit(i32::from(crate::signals::exit_code(
                crate::signals::DASHBOARD_GONE,
            )));
        });
    if spawned.is_err() {
        // No thread to watch with: stop now rather than outlive the dashboard unwatched.
        crate::signals::stop_from_within(crate::signals::DASHBOARD_GONE);
    }
    rx
}
