//! A PostgreSQL host as the driver knows it: a name or address on every system, and on
//! Unix also a folder holding the server's socket (Windows has no such host).

use postgres::config::Host;

/// The host as one would write it: `localhost`, or `/tmp/x/socket`.
pub fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(name) => name.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string(),
    }
}
