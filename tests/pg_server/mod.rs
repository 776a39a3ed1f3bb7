//! A PostgreSQL server of a test's own, for what must not touch the shared one: a restart
//! (`pg_ctl restart -m immediate` cuts every connection), or a server that listens on
//! 127.0.0.1 with password authentication as a class's does. Started with
//! `.ci/pg-start.sh`, stopped and removed with `.ci/pg-stop.sh` when dropped; it runs where
//! the other PostgreSQL tests run (`LEASELAB_PG_URL` set, or CI): a test binary with this
//! module has `pg_support` too.

use std::process::{Child, Command, Stdio};

/// A private server: its folder and its URL (`postgres://leaselab@.../leaselab`, without
/// any password).
pub struct PgServer {
    pub dir: String,
    pub url: String,
}

/// `.ci/` beside this crate.
fn script(name: &str) -> String {
    format!("{}/.ci/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A value `printf %q` wrote: its backslashes dropped (the paths here have no quotes).
fn unquoted(v: &str) -> String {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

impl PgServer {
    /// A server reached through a Unix socket in its folder, without a password; None
    /// (after the skip line) where the PostgreSQL tests do not run.
    pub fn start() -> Option<PgServer> {
        PgServer::start_with(&[])
    }

    /// A server as a class's: listening on 127.0.0.1 on a free port, every connection
    /// needing `password` (given in `PGPASSWORD`, never in the URL).
    pub fn on_tcp_with_password(password: &str) -> Option<PgServer> {
        // A port nobody listens on now (the server takes it a moment later).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        PgServer::start_with(&[
            ("LEASELAB_PG_PORT", port.as_str()),
            ("LEASELAB_PG_PASSWORD", password),
        ])
    }

    fn start_with(env: &[(&str, &str)]) -> Option<PgServer> {
        let var = |k: &str| std::env::var(k).ok();
        match crate::pg_support::decide(var(crate::pg_support::URL_ENV), var("CI")) {
            Ok(Some(_)) => {}
            Ok(None) => {
                eprintln!("{}", crate::pg_support::SKIP_LINE);
                return None;
            }
            Err(why) => panic!("{why}"),
        }
        let out = Command::new("bash")
            .arg(script("pg-start.sh"))
            .env_remove("LEASELAB_PG_PORT")
            .env_remove("LEASELAB_PG_PASSWORD")
            .envs(env.iter().copied())
            .output()
            .expect("run pg-start.sh");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "pg-start.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value = |name: &str| {
            said.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(unquoted)
                .unwrap_or_else(|| panic!("pg-start.sh printed no {name}: {said}"))
        };
        Some(PgServer {
            dir: value("LEASELAB_PG_DIR"),
            url: value("LEASELAB_PG_URL"),
        })
    }

    /// `pg_ctl restart -m immediate`, running while the test goes on; its stderr piped.
    pub fn restart(&self) -> Child {
        Command::new("bash")
            .arg(script("pg-restart.sh"))
            .args([&self.dir, "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run pg-restart.sh")
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script("pg-stop.sh"))
            .arg(&self.dir)
            .stderr(Stdio::null())
            .status();
    }
}
