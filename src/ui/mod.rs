//! The live dashboard: engine events and key presses in, a ratatui screen out.
//!
//! Data flows one way: engine -> events -> [`App`] -> screen. The main loop blocks on a
//! crossbeam `select!` over key presses (read on one thread), engine events, stop signals
//! and a frame tick, and draws at most once per tick unless a key was pressed. While the
//! clock is frozen and nothing changed, the tick is off and the loop sleeps until news arrives.

pub mod app;
mod error;
pub mod export;
pub mod keys;
mod lock_wait;
pub mod log;
pub mod render;
pub mod snapshot;
pub mod sql;
pub mod state;
pub mod theme;
pub mod throughput;
pub mod timeline;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{select, Receiver};
use crossterm::event::{self, KeyEvent, KeyEventKind};
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;

pub use app::App;
pub use error::DashboardError;
pub use theme::Theme;

use crate::scenario::Scenario;

/// Settings the dashboard starts with (from the command line).
#[derive(Debug, Clone)]
pub struct DashboardOptions {
    pub scenario: Scenario,
    pub workers: usize,
    pub messages: Option<u64>,
    /// Lease, processing time and clock speed, resolved over the defaults by the caller.
    pub timing: crate::setup::Timing,
    pub db: Option<PathBuf>,
    pub no_leasing: bool,
    /// Show a database that worker processes use, started elsewhere (`--watch`).
    pub watch: bool,
    /// Start the workers as `leaselab worker` processes (`--processes`).
    pub processes: bool,
    /// Heartbeats, retries and the dead letter.
    pub reliability: crate::setup::Reliability,
    /// The workers run this exercise's statements (`--sql FILE`), the SQL pane on.
    pub sql: Option<std::sync::Arc<crate::engine::student::Exercise>>,
}

impl Default for DashboardOptions {
    /// The article's setup: 2 workers, 6 payments, leasing on.
    fn default() -> Self {
        DashboardOptions {
            scenario: Scenario::OutboxLeasing,
            workers: 2,
            messages: None,
            timing: crate::setup::Timing::DASHBOARD,
            db: None,
            no_leasing: false,
            watch: false,
            processes: false,
            reliability: Default::default(),
            sql: None,
        }
    }
}

/// The running clock needs a redraw this often for its countdowns; also the frame cap.
pub const FRAME: Duration = Duration::from_millis(50);
/// How often the input thread looks at its stop flag between key presses.
const INPUT_POLL: Duration = Duration::from_millis(100);

/// How the dashboard ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Quit,
    /// SIGTERM, SIGHUP or SIGINT (its number) ended it, as cleanly as a quit.
    Interrupted(i32),
    /// It could not go on (a database locked past the busy limit): one line, exit 3.
    Failed(String),
}

/// Open the dashboard; returns when the user quits or a signal arrives. Errors are one line.
pub fn run(opts: DashboardOptions) -> Result<Ended, DashboardError> {
    let mode = match (opts.watch, opts.processes) {
        (true, _) => Some(app::ExternalMode::Watch),
        (false, true) => Some(app::ExternalMode::Processes),
        (false, false) => None,
    };
    let db = opts.db.clone();
    match mode {
        Some(mode) => run_app(db, || App::external(mode, opts, Theme::from_env())),
        None => run_app(db, || App::new(opts, Theme::from_env())),
    }
}

/// Open the dashboard on the run recorded in `db`'s events.
pub fn run_replay(db: PathBuf) -> Result<Ended, DashboardError> {
    let at = crate::engine::backend::Db::parse(&db);
    // A database that cannot be replayed is refused before the terminal is looked at.
    let recording = app::Recording::load(&at)?;
    let lock_path = (!at.is_postgres()).then(|| db.clone());
    run_app(lock_path, || {
        Ok(App::replay_of(at, recording, Theme::from_env())?)
    })
}

/// Open the dashboard paused on a lesson, with its narration panel.
pub fn run_lesson(
    lesson: crate::lesson::Lesson,
    opts: DashboardOptions,
) -> Result<Ended, DashboardError> {
    let db = opts.db.clone();
    run_app(db, || App::for_lesson(lesson, opts, Theme::from_env()))
}

fn run_app(
    db: Option<PathBuf>,
    make_app: impl FnOnce() -> Result<App, DashboardError>,
) -> Result<Ended, DashboardError> {
    if std::env::var_os("TERM").is_some_and(|t| t == "dumb") {
        return Err(DashboardError::DumbTerminal);
    }
    if !std::io::stdout().is_terminal() {
        return Err(DashboardError::NotATerminal);
    }
    // Watch before the temporary database exists, so no signal can leave it behind.
    let interrupts = crate::signals::watch()?;
    // Another program's write transaction on the file: say so, and let q end the wait.
    match lock_wait::wait_out(db.as_deref(), &interrupts) {
        Ok(Some(ended)) => return Ok(ended),
        Ok(None) => {}
        Err(e) => return hung_up_or(e, &interrupts),
    }
    // Start the engine before touching the terminal, so its errors print on a sane screen.
    // A signal while it waits for a locked database ends the wait, and the dashboard.
    let mut app = match make_app() {
        Ok(app) => app,
        Err(_) if crate::signals::received().is_some() => {
            return Ok(Ended::Interrupted(crate::signals::received().unwrap_or(2)));
        }
        Err(e) => return Err(e),
    };
    let signals = Signals {
        stopping: interrupts,
        job: crate::signals::watch_job_control()?,
    };
    let previous_hook = install_panic_hook();
    let result = open_terminal().and_then(|mut terminal| {
        let input = InputThread::spawn();
        // Free play opens paused too: a class sees the seeded outbox until space runs it.
        let result = draw(&mut terminal, &mut app)
            .and_then(|()| run_loop(&mut terminal, &mut app, &input.keys, &signals));
        restore_terminal();
        // A terminal that went away cannot show the cursor again: its Drop would then
        // report that with eprintln!, which panics when stderr is that terminal too.
        if terminal.show_cursor().is_err() {
            std::mem::forget(terminal);
        }
        input.stop();
        result
    });
    std::panic::set_hook(Box::new(move |info| previous_hook(info)));
    let result = result.or_else(|e| hung_up_or(e, &signals.stopping));
    // Dropping the app stops and joins the workers and removes a temporary database.
    drop(app);
    result
}

/// A terminal that went away fails the next draw or read a moment before its SIGHUP is taken
/// in: the hang-up is what happened, so wait for it briefly; else the error stands.
fn hung_up_or(e: DashboardError, interrupts: &Receiver<i32>) -> Result<Ended, DashboardError> {
    match crate::signals::received().or_else(|| interrupts.recv_timeout(HANGUP_GRACE).ok()) {
        Some(signo) => Ok(Ended::Interrupted(signo)),
        None => Err(e),
    }
}

/// A backend's error as the I/O error it is (or carries).
fn io_error(e: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(e)
}

/// How long a failed terminal waits for the signal that may explain it.
const HANGUP_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

type PanicHook = Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync>;

/// A panic on the UI thread restores the terminal before its message prints. A worker's
/// panic is contained by the engine and shown in the event log, so it leaves the screen be.
fn install_panic_hook() -> PanicHook {
    let ui_thread = std::thread::current().id();
    let previous: PanicHook = Arc::from(std::panic::take_hook());
    let chained = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            restore_terminal();
            chained(info);
        }
    }));
    previous
}

fn open_terminal() -> Result<ratatui::DefaultTerminal, DashboardError> {
    let setup = || -> std::io::Result<ratatui::DefaultTerminal> {
        take_terminal()?;
        Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))
    };
    setup().map_err(|e| {
        restore_terminal();
        DashboardError::SetUp(e)
    })
}

/// Raw mode on and the alternate screen, at the start and again after a suspension.
fn take_terminal() -> std::io::Result<()> {
    crossterm::terminal::enable_raw_mode()?;
    crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen)
}

/// Ctrl-Z (a key in raw mode) or SIGTSTP: the terminal is given back as the shell had it
/// (main screen, line mode, cursor shown) and the process stops, its scenario clock held,
/// until continued. Then, and on any SIGCONT (after a SIGSTOP, which nobody can catch, the
/// shell may have written over the screen), the terminal is taken again and drawn whole.
fn job_control<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    job: crate::signals::Job,
) -> Result<(), DashboardError>
where
    B::Error: Send + Sync + 'static,
{
    if job == crate::signals::Job::Suspend {
        let held = app.hold_clock();
        restore_terminal();
        crate::signals::stop_this_process();
        if held {
            app.engine.clock.resume();
        }
    }
    take_terminal().map_err(DashboardError::TakeAgain)?;
    // The screen cleared and both buffers emptied, so the next frame is drawn whole, not as
    // the difference from the last one (`Terminal::clear` would ask the terminal where its
    // cursor is, and the answer would race the input thread).
    terminal
        .backend_mut()
        .clear()
        .map_err(|e| DashboardError::Draw(io_error(e)))?;
    terminal.swap_buffers();
    Ok(())
}

/// Raw mode off, the main screen back and the cursor shown, whatever ended the dashboard.
fn restore_terminal() {
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Take this frame's snapshot and draw it.
pub fn draw<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> Result<(), DashboardError>
where
    B::Error: Send + Sync + 'static,
{
    let size = terminal
        .size()
        .map_err(|e| DashboardError::Draw(io_error(e)))?;
    let area = Rect::new(0, 0, size.width, size.height);
    app.ui.too_small = render::too_small(area);
    app.ui.width = area.width;
    app.ui.height = area.height;
    // The layout follows the outbox's size and the narration's length: take the frame's
    // data with the last frame's, and again if what it read moved the layout.
    let mut fits = capacity(app, area);
    app.refresh(fits.table, fits.log);
    let again = capacity(app, area);
    if again != fits {
        app.refresh(again.table, again.log);
        fits = again;
    }
    app.ui.worker_page = fits.workers;
    app.ui.narration_more = app.snapshot().lesson.as_ref().map_or(0, |l| {
        render::narration::hidden(l, &app.theme, area.width, fits.narration)
    });
    terminal
        .draw(|frame| render::draw(frame, app.snapshot(), &app.ui, &app.theme))
        .map_err(|e| DashboardError::Draw(io_error(e)))?;
    Ok(())
}

/// What a frame of `area` shows of the table, the log and the narration, from the
/// snapshot `app` holds.
fn capacity(app: &App, area: Rect) -> render::Capacity {
    let s = app.snapshot();
    let narration = s
        .lesson
        .as_ref()
        .map_or(0, |l| render::narration::want(l, &app.theme, area.width));
    let sql = render::sql::want(s, &app.ui, &app.theme, area.width);
    render::capacity(
        area,
        app.worker_count(),
        s.db.total,
        (narration, sql),
        s.mode,
    )
}

/// The signals the main loop listens to.
struct Signals {
    /// SIGTERM, SIGHUP, SIGINT: end the dashboard as a quit does.
    stopping: Receiver<i32>,
    /// SIGTSTP and SIGCONT: give the terminal back and stop, take it again.
    job: Receiver<crate::signals::Job>,
}

fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    input: &Receiver<Input>,
    signals: &Signals,
) -> Result<Ended, DashboardError>
where
    B::Error: Send + Sync + 'static,
{
    let events = app.engine.events().clone();
    let ticker = crossbeam_channel::tick(FRAME);
    let stopped = crossbeam_channel::never();
    let mut dirty = true;
    let mut changed = false;
    while !app.ui.quit {
        if dirty {
            draw(terminal, app)?;
            dirty = false;
            changed = false;
        }
        // A frozen clock with nothing new leaves the screen as it is: wait without a tick.
        let tick = if changed || app.engine.clock.is_running() {
            &ticker
        } else {
            &stopped
        };
        select! {
            recv(input) -> msg => match msg {
                Ok(Input::Key(key)) => {
                    app.handle_key(key);
                    if std::mem::take(&mut app.ui.suspend) {
                        if crate::signals::CAN_SUSPEND {
                            job_control(terminal, app, crate::signals::Job::Suspend)?;
                        } else {
                            app.ui.say(crate::signals::NO_SUSPEND);
                        }
                    }
                    dirty = true;
                }
                Ok(Input::Resize) => dirty = true,
                Ok(Input::Failed(e)) => return Err(DashboardError::Keyboard(e)),
                Err(_) => return Err(DashboardError::KeyboardGone),
            },
            recv(events) -> ev => {
                if let Ok(ev) = ev {
                    app.apply_event(&ev);
                }
                // Fold everything waiting, so the channel never grows while we draw.
                app.absorb_events();
                changed = true;
            },
            recv(signals.stopping) -> signo => {
                if let Ok(signo) = signo {
                    return Ok(Ended::Interrupted(signo));
                }
            },
            recv(signals.job) -> job => {
                if let Ok(job) = job {
                    job_control(terminal, app, job)?;
                    dirty = true;
                }
            },
            recv(tick) -> _ => {
                // A running clock moves the countdowns; a paused screen redraws only on news.
                dirty = changed || app.engine.clock.is_running();
            },
        }
    }
    Ok(Ended::Quit)
}

/// What the input thread reports.
enum Input {
    Key(KeyEvent),
    Resize,
    Failed(std::io::Error),
}

/// The only reader of the terminal's input.
struct InputThread {
    keys: Receiver<Input>,
    stop: Arc<AtomicBool>,
    /// Closed when the thread ends.
    ended: Receiver<()>,
    join: JoinHandle<()>,
}

/// How long ending the dashboard waits for the input thread before leaving it behind: a
/// terminal that went away can keep a read from returning, and must not keep us.
const INPUT_STOP_WAIT: Duration = Duration::from_millis(300);

impl InputThread {
    fn spawn() -> InputThread {
        let (tx, keys) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ended_tx, ended) = crossbeam_channel::bounded::<()>(0);
        let join = std::thread::Builder::new()
            .name("input".into())
            .spawn(move || {
                let _ended = ended_tx;
                while !flag.load(Ordering::Relaxed) {
                    let msg = match event::poll(INPUT_POLL) {
                        Ok(false) => continue,
                        Ok(true) => match event::read() {
                            // Only presses: terminals that report releases would double keys.
                            Ok(event::Event::Key(k)) if k.kind == KeyEventKind::Press => {
                                Input::Key(k)
                            }
                            Ok(event::Event::Resize(..)) => Input::Resize,
                            Ok(_) => continue,
                            Err(e) => Input::Failed(e),
                        },
                        Err(e) => Input::Failed(e),
                    };
                    let failed = matches!(msg, Input::Failed(_));
                    if tx.send(msg).is_err() || failed {
                        break;
                    }
                }
            })
            .expect("spawn the input thread");
        InputThread {
            keys,
            stop,
            ended,
            join,
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        // Joined when it ends in time; otherwise left to end with the process.
        if let Err(crossbeam_channel::RecvTimeoutError::Disconnected) =
            self.ended.recv_timeout(INPUT_STOP_WAIT)
        {
            let _ = self.join.join();
        }
    }
}
