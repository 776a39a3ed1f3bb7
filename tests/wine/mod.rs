//! The Windows `leaselab.exe` run on Linux under Wine, for tests/windows_wine.rs.
//!
//! One Wine prefix per test binary run, made on first use in a temporary folder: `wineboot
//! -i` quietly (no display, no Mono or Gecko installers), then `bcryptprimitives.dll` into
//! its `system32`, built from `tests/wine/bcryptprimitives.c` with mingw-w64 (Wine 8 has no
//! such DLL, and Rust's standard library imports `ProcessPrng` from it). Built here rather
//! than by `.ci/run`: the test needs nothing beyond the `.exe`, the compile takes under a
//! second, and the DLL can never be older than its source. When the test binary exits, the
//! prefix's Wine processes are ended and the folder removed.
//!
//! `LEASELAB_WINE` names the Wine loader (default: `wine64`, Debian's
//! `/usr/lib/wine/wine64`, then `wine`); `LEASELAB_WINE=none` runs `LEASELAB_WINDOWS_EXE`
//! directly, which checks the tests themselves with a native binary in its place.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The Windows binary under test, built by `.ci/run`.
pub const EXE_ENV: &str = "LEASELAB_WINDOWS_EXE";
/// The Wine loader to use, or `none`.
pub const WINE_ENV: &str = "LEASELAB_WINE";

/// Making a prefix takes about ten seconds on an idle machine.
const PREFIX_DEADLINE: Duration = Duration::from_secs(180);
/// Any one command of a test, under Wine or not.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(120);

/// A Wine prefix of this test binary run.
pub struct Prefix {
    /// The temporary folder that holds it (removed at exit).
    dir: PathBuf,
    /// `WINEPREFIX`: `dir/wine` (Wine makes the last folder itself).
    prefix: PathBuf,
    loader: PathBuf,
    server: PathBuf,
}

/// How a test starts `leaselab`: the Linux binary, or the Windows one (under Wine unless
/// `LEASELAB_WINE=none`).
#[derive(Clone, Copy)]
pub enum Leaselab {
    Linux,
    Windows(&'static Windows),
}

/// The Windows binary and the prefix it runs in.
pub struct Windows {
    pub exe: PathBuf,
    pub wine: Option<Prefix>,
}

impl Leaselab {
    /// `leaselab` with nothing but its program set, colour off.
    pub fn command(self) -> Command {
        let mut cmd = match self {
            Leaselab::Linux => Command::new(env!("CARGO_BIN_EXE_leaselab")),
            Leaselab::Windows(w) => match &w.wine {
                Some(p) => {
                    let mut cmd = p.command(&p.loader);
                    cmd.arg(&w.exe);
                    cmd
                }
                None => Command::new(&w.exe),
            },
        };
        cmd.env("NO_COLOR", "1");
        cmd
    }

    pub fn name(self) -> &'static str {
        match self {
            Leaselab::Linux => "Linux",
            Leaselab::Windows(_) => "Windows",
        }
    }

    /// `leaselab ARGS` in `cwd`, to its end, at most [`COMMAND_DEADLINE`].
    pub fn run(self, args: &[&str], cwd: &Path) -> Output {
        let mut cmd = self.command();
        cmd.args(args).current_dir(cwd);
        bounded(
            cmd,
            COMMAND_DEADLINE,
            &format!("{} leaselab {args:?}", self.name()),
        )
    }
}

/// The Windows binary to test, once per run; None (after one line on stderr) when
/// `LEASELAB_WINDOWS_EXE` is not set outside CI. In CI a missing binary fails the test.
pub fn windows() -> Option<Leaselab> {
    // Made once; a failure is kept and given to every test, not tried again by each.
    static WINDOWS: OnceLock<Result<Option<Windows>, String>> = OnceLock::new();
    match WINDOWS.get_or_init(|| std::panic::catch_unwind(find_windows).map_err(panic_text)) {
        Ok(found) => found.as_ref().map(Leaselab::Windows),
        Err(why) => panic!("{why}"),
    }
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the Windows binary could not be made ready".to_string())
}

fn find_windows() -> Option<Windows> {
    let exe = std::env::var_os(EXE_ENV).filter(|v| !v.is_empty());
    let Some(exe) = exe else {
        if matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
            panic!(
                "CI=true but {EXE_ENV} is not set: .ci/run builds the Windows binary and sets it"
            );
        }
        say(&format!(
            "skipped: no Windows binary (set {EXE_ENV} to a leaselab.exe)"
        ));
        return None;
    };
    let exe = std::fs::canonicalize(&exe)
        .unwrap_or_else(|e| panic!("{EXE_ENV}={}: {e}", PathBuf::from(&exe).display()));
    let wine = match std::env::var_os(WINE_ENV) {
        Some(v) if v == "none" => {
            say(&format!(
                "{WINE_ENV}=none: {} runs without Wine",
                exe.display()
            ));
            None
        }
        chosen => Some(Prefix::make(chosen.map(PathBuf::from))),
    };
    Some(Windows { exe, wine })
}

/// One line straight to the stream: the harness hides what a passing test prints.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The first of `names` found on `PATH`, or as a path.
fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|name| {
        let name = Path::new(name);
        if name.is_absolute() {
            return name.is_file().then(|| name.to_path_buf());
        }
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

impl Prefix {
    /// A new prefix with the DLL in place, or a panic saying what is missing.
    fn make(loader: Option<PathBuf>) -> Prefix {
        let loader = loader
            .or_else(|| find_program(&["wine64", "/usr/lib/wine/wine64", "wine"]))
            .expect("no Wine found (apt-get install wine64, or set LEASELAB_WINE)");
        let server = find_program(&["wineserver", "/usr/lib/wine/wineserver64"])
            .expect("no wineserver found (apt-get install wine64)");
        let gcc = find_program(&["x86_64-w64-mingw32-gcc"])
            .expect("no x86_64-w64-mingw32-gcc to build the Wine shim (apt-get install mingw-w64)");
        let dir = tempfile::Builder::new()
            .prefix("leaselab-wine.")
            .tempdir()
            .expect("a temporary folder for the Wine prefix")
            .keep();
        let prefix = Prefix {
            prefix: dir.join("wine"),
            dir,
            loader,
            server,
        };
        prefix.remove_at_exit();
        let start = Instant::now();
        let mut boot = prefix.command(&prefix.loader);
        boot.args(["wineboot", "-i"]);
        checked(
            boot,
            PREFIX_DEADLINE,
            "wineboot -i (making the Wine prefix)",
        );
        // wineboot returns while the prefix's services still start and stop; the server
        // ends when they have.
        let mut wait = prefix.command(&prefix.server);
        wait.arg("-w");
        checked(wait, PREFIX_DEADLINE, "wineserver -w");
        let system32 = prefix.prefix.join("drive_c/windows/system32");
        assert!(system32.is_dir(), "wineboot made no {}", system32.display());
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wine/bcryptprimitives.c");
        let mut cc = Command::new(gcc);
        cc.args(["-shared", "-s", "-Wall", "-o"])
            .arg(system32.join("bcryptprimitives.dll"))
            .arg(&source)
            .arg("-ladvapi32");
        checked(cc, COMMAND_DEADLINE, "building bcryptprimitives.dll");
        say(&format!(
            "Wine prefix {} made in {:.1} s",
            prefix.prefix.display(),
            start.elapsed().as_secs_f64()
        ));
        prefix
    }

    /// `program` in this prefix: quiet but for DLLs that fail to load, no display, and no
    /// offer to install Mono or Gecko.
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all,err+module")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null());
        cmd
    }

    /// At the test binary's exit (passed or failed): end whatever still runs in the
    /// prefix, and remove its folder.
    fn remove_at_exit(&self) {
        static AT_EXIT: OnceLock<(PathBuf, PathBuf, PathBuf)> = OnceLock::new();
        extern "C" fn clean_up() {
            if let Some((server, prefix, dir)) = AT_EXIT.get() {
                let _ = Command::new(server)
                    .arg("-k")
                    .env("WINEPREFIX", prefix)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        if AT_EXIT
            .set((self.server.clone(), self.prefix.clone(), self.dir.clone()))
            .is_ok()
        {
            // SAFETY: registers a function that takes no arguments; it runs once at exit.
            unsafe { libc::atexit(clean_up) };
        }
    }
}

pub use crate::support::bounded;

/// [`bounded`], which must succeed.
fn checked(cmd: Command, deadline: Duration, what: &str) -> Output {
    let o = bounded(cmd, deadline, what);
    assert!(
        o.status.success(),
        "{what} failed ({}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}
