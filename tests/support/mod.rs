//! What the test binaries share: the real binary run headless, the real binary in a
//! pseudo-terminal read back through a vt100 parser, and the dashboard's `App` driven by
//! keys and drawn into a `TestBackend`. Every wait is on output, with a deadline.
#![allow(dead_code)]

pub mod processes;

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::ui::{self, App, DashboardOptions, Theme};
use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, PtySize};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// How long any wait on a child may take on a busy machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The dashboard's terminal unless a test asks for another.
pub const ROWS: u16 = 40;
pub const COLS: u16 = 120;

/// Run the real binary to its end in `cwd`, without colour.
pub fn leaselab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run leaselab")
}

/// Run the real binary like [`leaselab`], but kill it and fail if it has not ended by the
/// deadline: for input that once made it block or read forever.
pub fn leaselab_bounded(args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(args).current_dir(cwd).env("NO_COLOR", "1");
    bounded(cmd, DEADLINE, &format!("leaselab {args:?}"))
}

/// Run `cmd` to its end with no input, killing it and failing (naming `what`) if it has not
/// ended by `deadline`. Its output goes to files, so however much it writes it never waits
/// on a reader.
pub fn bounded(mut cmd: Command, deadline: Duration, what: &str) -> Output {
    use std::io::Seek;
    let mut out = tempfile::tempfile().expect("a file for stdout");
    let mut err = tempfile::tempfile().expect("a file for stderr");
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} was still running after {deadline:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |f: &mut std::fs::File| {
        let mut bytes = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut bytes).unwrap();
        bytes
    };
    Output {
        status,
        stdout: read(&mut out),
        stderr: read(&mut err),
    }
}

/// Send `signo` to `child`, then wait for it to end (at most 30 s): its output. One that
/// does not stop is killed, and the test fails naming `what`.
pub fn signal_and_wait(child: std::process::Child, signo: i32, what: &str) -> Output {
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) on the caller's own child's pid.
    assert_eq!(unsafe { libc::kill(pid, signo) }, 0, "{what}: kill");
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(o) => o.expect("the child ends"),
        Err(_) => {
            // SAFETY: as above; it ignored the signal, so end it for good.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: did not stop");
        }
    }
}

/// Wait (bounded, 30 s) until process `pid` is gone or a zombie: a SIGKILL is delivered at
/// once, but the kernel finishes the process a moment later.
pub fn wait_until_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let gone = state.as_deref().is_none_or(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        });
        if gone {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A stand-in for the effectum reference program: a shell script running `body` (the real
/// program is measured by `leaselab bench`; the tests check what the bench does with its
/// answer).
pub fn stand_in(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A stand-in's body answering as the reference program does when called as
/// `--db FILE --messages N --workers W`: W workers of N/W jobs each, all succeeded.
pub const EFFECTUM_ANSWER: &str = r#"share=$(($4 / $6)); list=$share; i=1
while [ $i -lt $6 ]; do list="$list,$share"; i=$((i + 1)); done
echo "{\"jobs_per_s\":2000.0,\"per_worker\":[$list],\"all_succeeded\":true}""#;

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A child on a pseudo-terminal: its output arrives on `output` as it is written, its exit
/// status on `exited`.
pub struct PtyChild {
    pub output: Receiver<Vec<u8>>,
    pub input: Box<dyn Write + Send>,
    pub exited: Receiver<std::io::Result<ExitStatus>>,
    pub killer: Box<dyn portable_pty::ChildKiller + Send + Sync>,
    pub pid: u32,
    /// Held open for the child's lifetime; also how a test reads the terminal's mode.
    pub master: Box<dyn portable_pty::MasterPty + Send>,
}

impl PtyChild {
    pub fn spawn(cmd: CommandBuilder, rows: u16, cols: u16) -> PtyChild {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut child: Box<dyn Child + Send + Sync> =
            pty.slave.spawn_command(cmd).expect("spawn on the pty");
        // Our copy of the slave end must close, or the reader never sees the child leave.
        drop(pty.slave);
        let killer = child.clone_killer();
        let pid = child.process_id().expect("child pid");
        let (done_tx, exited) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait());
        });
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let (tx, output) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let input = pty.master.take_writer().expect("pty writer");
        PtyChild {
            output,
            input,
            exited,
            killer,
            pid,
            master: pty.master,
        }
    }
}

/// The real dashboard in a pseudo-terminal, read back through a vt100 parser.
pub struct Dashboard {
    pub parser: vt100::Parser,
    /// Every byte the child wrote so far.
    pub raw: Vec<u8>,
    pub child: PtyChild,
    pub pid: u32,
}

impl Dashboard {
    /// At 120x40 in the project's folder.
    pub fn open(args: &[&str]) -> Dashboard {
        Dashboard::open_with(args, &[])
    }

    pub fn open_with(args: &[&str], env: &[(&str, &Path)]) -> Dashboard {
        let cwd = Path::new(env!("CARGO_MANIFEST_DIR"));
        Dashboard::spawn(ROWS, COLS, args, cwd, env)
    }

    /// At 120x40 in `cwd`.
    pub fn open_in(args: &[&str], cwd: &Path) -> Dashboard {
        Dashboard::spawn(ROWS, COLS, args, cwd, &[])
    }

    pub fn spawn(
        rows: u16,
        cols: u16,
        args: &[&str],
        cwd: &Path,
        env: &[(&str, &Path)],
    ) -> Dashboard {
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_leaselab"));
        cmd.args(args);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(cwd);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = PtyChild::spawn(cmd, rows, cols);
        Dashboard {
            parser: vt100::Parser::new(
                NonZeroU16::new(rows).unwrap(),
                NonZeroU16::new(cols).unwrap(),
                0,
            ),
            raw: Vec::new(),
            pid: child.pid,
            child,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.raw.extend_from_slice(bytes);
    }

    /// Raw mode as the child left the terminal: neither line editing nor echo.
    pub fn raw_mode(&self) -> bool {
        let fd = self.child.master.as_raw_fd().expect("pty fd");
        // SAFETY: a zeroed termios is a valid out-parameter and fd is our open pty master.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(fd, &mut t) }, 0, "tcgetattr");
        t.c_lflag & (libc::ICANON | libc::ECHO) == 0
    }

    pub fn signal(&self, signo: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, signo) };
        assert_eq!(rc, 0, "kill {signo}");
    }

    pub fn screen(&self) -> String {
        self.parser.screen().contents()
    }

    /// Read output until the screen satisfies `done`.
    pub fn wait_for(&mut self, what: &str, done: impl Fn(&vt100::Screen) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if done(self.parser.screen()) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.child.output.recv_timeout(left) {
                Ok(bytes) => self.take(&bytes),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.killer.kill();
                    panic!("timed out waiting for {what}; screen:\n{}", self.screen());
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "leaselab ended while waiting for {what}; screen:\n{}",
                        self.screen()
                    )
                }
            }
        }
    }

    pub fn wait_for_text(&mut self, text: &str) {
        let t = text.to_string();
        self.wait_for(text, move |s| s.contents().contains(&t));
    }

    pub fn press(&mut self, keys: &str) {
        self.child.input.write_all(keys.as_bytes()).expect("type");
        self.child.input.flush().expect("flush");
    }

    /// Quit with `q` and return the exit status, with every byte the child wrote.
    pub fn quit(mut self) -> (ExitStatus, vt100::Parser) {
        self.press("q");
        let status = self.wait_for_exit();
        (status, self.parser)
    }

    /// Everything the process wrote until it ended, and how it ended.
    pub fn wait_exit(mut self) -> (ExitStatus, String) {
        let status = self.wait_for_exit();
        (status, String::from_utf8_lossy(&self.raw).into_owned())
    }

    /// Read the output to its end (the child closed the terminal), then reap the child.
    pub fn wait_for_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.child.output.recv_timeout(left) {
                Ok(b) => self.take(&b),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.killer.kill();
                    panic!("leaselab did not end; screen:\n{}", self.screen());
                }
            }
        }
        match self.child.exited.recv_timeout(DEADLINE) {
            Ok(st) => st.expect("exit status"),
            Err(_) => {
                let _ = self.child.killer.kill();
                panic!("leaselab closed its terminal but did not exit");
            }
        }
    }
}

/// The dashboard's `App` on a fresh temporary database, drawn without colour.
pub fn app(opts: DashboardOptions) -> App {
    App::new(opts, Theme::plain()).expect("dashboard app")
}

/// A watching dashboard on `db` (`--watch`), made with `messages` payments when missing.
pub fn watcher(db: &Path, messages: u64) -> App {
    let opts = DashboardOptions {
        db: Some(db.to_path_buf()),
        messages: Some(messages),
        watch: true,
        ..DashboardOptions::default()
    };
    App::external(leaselab::ui::app::ExternalMode::Watch, opts, Theme::plain()).unwrap()
}

/// The dashboard's `App` stepping a built-in lesson, drawn without colour.
pub fn lesson_app(name: &str) -> App {
    App::for_lesson(
        leaselab::lesson::built_in(name).unwrap(),
        DashboardOptions::default(),
        Theme::plain(),
    )
    .expect("lesson app")
}

pub fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

pub fn press(app: &mut App, c: char) {
    key(app, KeyCode::Char(c));
}

/// A lesson's next step, as a teacher takes it: `n`, and at a question (which the first
/// `n` puts on screen) `n` again, revealing without a prediction.
pub fn next(app: &mut App) {
    press(app, 'n');
    if app.stage().lesson().is_some_and(|l| l.asked) {
        press(app, 'n');
    }
}

/// One frame of `app` drawn at `width` x `height`.
pub fn frame(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    ui::draw(&mut t, app).unwrap();
    t
}

/// The rows of one frame, as text.
pub fn frame_lines(app: &mut App, width: u16, height: u16) -> Vec<String> {
    let t = frame(app, width, height);
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

/// Take in what arrived and draw `app` at 120x40 until `done` holds of its lines (at most
/// the worker processes' deadline, polling): those lines.
pub fn draw_until(app: &mut App, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    processes::wait_for(what, || {
        app.absorb_events();
        let lines = frame_lines(app, COLS, ROWS);
        done(&lines).then_some(lines)
    })
}

/// Wait (bounded, 30 s) until process `pid` catches `signo`: its handler is installed, so
/// the signal asks it to stop rather than ending it where it stands. Fails if it is gone.
pub fn wait_until_catching(pid: u32, signo: i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_else(|_| panic!("process {pid} is gone"));
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << (signo - 1)) != 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never caught signal {signo}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A student's exercise file (takeover's model answer) whose claim never ends: its SELECT
/// waits on a recursive query without an end. Run it with [`LONG_STATEMENTS`] so that only
/// a stop can end it.
pub fn endless_claim() -> String {
    let model = leaselab::exercise::built_in("takeover").unwrap().solution;
    let select = "SELECT Id FROM OutboxMessages WHERE ";
    assert!(model.contains(select));
    model.replacen(
        select,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) \
         SELECT Id FROM OutboxMessages WHERE (SELECT n FROM r WHERE n < 0) IS NULL AND ",
        1,
    )
}

/// The environment under which a student's statement may run ten minutes.
pub const LONG_STATEMENTS: (&str, &str) = ("LEASELAB_STATEMENT_LIMIT_MS", "600000");

/// Wait (bounded, 30 s) until process `pid` has used `cpu` of processor time: a child that
/// has reached a statement that never ends, when it uses little before. Fails if it is gone.
pub fn wait_until_busy(pid: u32, cpu: Duration) {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u128;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_else(|_| panic!("process {pid} is gone"));
        // After the name in parentheses: state is field 3, utime and stime fields 14, 15.
        let rest: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert!(
            rest.first().is_none_or(|s| *s != "Z"),
            "process {pid} ended"
        );
        let used: u128 = rest
            .get(11..13)
            .map_or(0, |t| t.iter().filter_map(|v| v.parse::<u128>().ok()).sum());
        if used * 1000 / ticks >= cpu.as_millis() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never used {cpu:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
