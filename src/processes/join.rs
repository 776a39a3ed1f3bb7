//! The command a student types to join a class's database, made from the teacher's URL:
//! the password (and every other option) left out, the address one every laptop reaches.

use std::path::Path;

use crate::engine::pg;

/// The command line a student types, for the database `db` they reach as `shown`.
pub fn command(shown: &str) -> String {
    format!("leaselab worker --db '{shown}' --name YOUR-NAME")
}

/// The join command for the database a dashboard watches (a SQLite file on this machine,
/// or a PostgreSQL URL), without a password; None when the URL cannot be read.
pub fn for_watch(db: &Path) -> Option<String> {
    let text = db.to_str()?;
    if !pg::is_url(text) {
        return Some(command(&text.replace('\'', "")));
    }
    let (url, _) = student_url(&pg::parse_url(text).ok()?);
    Some(command(&url))
}

/// What stands for the server's address when the URL names only this machine.
const THIS_MACHINE: &str = "THIS-MACHINE";

/// The URL students type: user, host, port and database of `config`, without its password
/// (and other options), each part percent-encoded. A socket or a loopback address reaches
/// only this machine: the address is then a placeholder, and the note says so.
pub fn student_url(config: &postgres::Config) -> (String, Option<String>) {
    use postgres::config::Host;
    let host = config.get_hosts().first();
    let (host, note) = match host {
        Some(Host::Tcp(h)) if !is_loopback(h) => (h.clone(), None),
        Some(Host::Tcp(h)) => (
            THIS_MACHINE.to_string(),
            Some(format!(
                "{h} is this machine to every laptop: put the address students reach in place of {THIS_MACHINE} (docs/class.md)"
            )),
        ),
        _ => (
            THIS_MACHINE.to_string(),
            Some(format!(
                "the URL reaches the server through a Unix socket, which only this machine can: put the address students reach in place of {THIS_MACHINE} and make the server listen there (docs/class.md)"
            )),
        ),
    };
    let host = if host.parse::<std::net::Ipv6Addr>().is_ok() {
        format!("[{host}]")
    } else {
        encode(&host)
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(encode).unwrap_or_default();
    let db = config.get_dbname().map(encode).unwrap_or_default();
    let at = if user.is_empty() { "" } else { "@" };
    (format!("postgres://{user}{at}{host}:{port}/{db}"), note)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Percent-encoding of everything but unreserved characters: the URL stays one shell word
/// between single quotes, whatever a name holds.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_of(s: &str) -> (String, Option<String>) {
        student_url(&pg::parse_url(s).unwrap())
    }

    #[test]
    fn the_join_url_leaves_the_password_out() {
        let (url, note) = url_of("postgres://teacher:s3cret@10.0.0.5:5433/class");
        assert_eq!(url, "postgres://teacher@10.0.0.5:5433/class");
        assert_eq!(note, None);
    }

    #[test]
    fn the_join_url_says_when_it_names_only_this_machine() {
        let (url, note) = url_of("postgres://t@localhost/class");
        assert_eq!(url, "postgres://t@THIS-MACHINE:5432/class");
        assert!(note.unwrap().contains("localhost is this machine"));
        let (url, note) = url_of("postgres://t@/class?host=/tmp/sock");
        assert_eq!(url, "postgres://t@THIS-MACHINE:5432/class");
        assert!(note.unwrap().contains("Unix socket"));
    }

    #[test]
    fn a_host_that_is_no_address_is_encoded_too() {
        let (url, _) = url_of("host=\"a:'b\" user=t dbname=d");
        assert_eq!(url, "postgres://t@%22a%3A%27b%22:5432/d");
        let (url, _) = url_of("host=fd00::5 user=t dbname=d password=x");
        assert_eq!(url, "postgres://t@[fd00::5]:5432/d");
    }

    #[test]
    fn the_join_url_stays_one_quoted_word() {
        let (url, _) = url_of("host=db.school user=o'neil dbname='a b' password=x");
        assert_eq!(url, "postgres://o%27neil@db.school:5432/a%20b");
    }
}
