//! A `--db` file that another program holds in a write transaction: before the dashboard
//! starts, a screen says what it waits for, `q`, Esc or Ctrl-C end the wait at once, and it
//! goes on by itself when the lock is released (or gives up after the busy limit).

use super::DashboardError;
use std::path::Path;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::Ended;
use crate::engine::store::{busy_give_up, write_locked};

/// How often the lock is asked about again.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Wait while the SQLite file `db` is write-locked by someone else. None: go on (not
/// locked, or released); Some: the user or a signal ended the wait.
pub(super) fn wait_out(
    db: Option<&Path>,
    interrupts: &Receiver<i32>,
) -> Result<Option<Ended>, DashboardError> {
    let Some(path) = db.filter(|p| p.is_file()) else {
        return Ok(None);
    };
    if !write_locked(path) {
        return Ok(None);
    }
    let mut terminal = super::open_terminal()?;
    let result = wait_on_screen(&mut terminal, path, interrupts);
    super::restore_terminal();
    // A terminal that went away cannot show the cursor again: its Drop would then report
    // that with eprintln!, which panics when stderr is that terminal too.
    if terminal.show_cursor().is_err() {
        std::mem::forget(terminal);
    }
    result
}

fn wait_on_screen(
    terminal: &mut ratatui::DefaultTerminal,
    path: &Path,
    interrupts: &Receiver<i32>,
) -> Result<Option<Ended>, DashboardError> {
    // Keys are read on a thread of their own, as the dashboard reads them: a terminal that
    // went away can keep a read from returning, and the wait must still hear its signals.
    let input = super::InputThread::spawn();
    let result = wait_loop(terminal, path, interrupts, &input.keys);
    input.stop();
    result
}

fn wait_loop(
    terminal: &mut ratatui::DefaultTerminal,
    path: &Path,
    interrupts: &Receiver<i32>,
    keys: &Receiver<super::Input>,
) -> Result<Option<Ended>, DashboardError> {
    let start = Instant::now();
    while write_locked(path) {
        let waited = start.elapsed();
        if waited > busy_give_up() {
            return Ok(Some(Ended::Failed(format!(
                "{}: another program held its write lock for more than {} s; try again when it is done",
                path.display(),
                busy_give_up().as_secs()
            ))));
        }
        draw_wait(terminal, path, waited)?;
        crossbeam_channel::select! {
            recv(interrupts) -> signo => {
                return Ok(Some(Ended::Interrupted(signo.unwrap_or(crate::signals::TERMINATE))));
            },
            recv(keys) -> input => match input {
                Ok(super::Input::Key(k)) if quits(&k) => return Ok(Some(Ended::Quit)),
                Ok(super::Input::Failed(e)) => return Err(DashboardError::Keyboard(e)),
                Err(_) => return Err(DashboardError::KeyboardEnded),
                Ok(_) => {}
            },
            default(LOOK_EVERY) => {},
        }
    }
    Ok(None)
}

/// q, Esc or Ctrl-C.
fn quits(k: &KeyEvent) -> bool {
    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
    matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c
}

/// The waiting screen.
fn draw_wait(
    terminal: &mut ratatui::DefaultTerminal,
    path: &Path,
    waited: Duration,
) -> Result<(), DashboardError> {
    let text = format!(
        "{} is locked: another program is in a write transaction on it.\n\n\
         Waiting for it to finish ({} s so far, at most {} s).\n\n\
         q, Esc or Ctrl-C stops waiting.",
        path.display(),
        waited.as_secs(),
        busy_give_up().as_secs()
    );
    terminal
        .draw(|f| {
            let [area] = Layout::vertical([Constraint::Length(9)])
                .flex(ratatui::layout::Flex::Center)
                .areas(f.area());
            let block = Block::bordered().title(" leaselab: waiting for the database ");
            f.render_widget(
                Paragraph::new(text).wrap(Wrap { trim: true }).block(block),
                area,
            );
        })
        .map(|_| ())
        .map_err(DashboardError::Draw)
}
