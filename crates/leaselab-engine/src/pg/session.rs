//! Who is connected now: each worker process's PostgreSQL sessions carry its name as
//! their `application_name`, which `pg_stat_activity` shows to every role. The server
//! keeps at most 63 bytes of printable ASCII there, so a name is written in a form that
//! fits and that names cannot share: a plain name (letters, digits, `-`, `_`, `.`) as it
//! is, any other with `?` for each other character and a hash of the whole name.

use std::sync::OnceLock;

/// What every worker session's `application_name` starts with.
pub const SESSION_PREFIX: &str = "leaselab:";

/// The `application_name` of this process's connections, once it is a named worker.
static SESSION_NAME: OnceLock<String> = OnceLock::new();

/// Name every PostgreSQL connection this process opens from now on after `worker`, with a
/// tag of this process after an `@` (a name never holds one): a connection this process
/// closed a moment ago may still be listed by the server, and is not another worker. Only
/// the first call counts: a process is one worker.
pub fn name_sessions(worker: &str) {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tag = fnv1a(&format!("{}:{since}", std::process::id()));
    let _ = SESSION_NAME.set(format!("{}@{tag:08x}", session_name(worker)));
}

/// The worker a session's `application_name` names, without its process's tag.
pub fn named_in(application_name: &str) -> &str {
    application_name
        .rsplit_once('@')
        .map_or(application_name, |(name, _)| name)
}

/// Whether a session is one of this process's own.
pub fn is_this_process(application_name: &str) -> bool {
    this_session() == Some(application_name)
}

/// The `application_name` this process's connections carry, if it is a named worker.
pub(crate) fn this_session() -> Option<&'static str> {
    SESSION_NAME.get().map(String::as_str)
}

/// Longest readable part kept of a name.
const READABLE: usize = 32;

/// The `application_name` of worker `name`'s sessions before its process's tag: bounded
/// (at most 50 bytes, 59 with the tag) and printable ASCII, the same for the same name on
/// every machine.
pub fn session_name(name: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let readable: String = name
        .chars()
        .take(READABLE)
        .map(|c| if plain(c) { c } else { '?' })
        .collect();
    if name.chars().count() <= READABLE && name.chars().all(plain) {
        return format!("{SESSION_PREFIX}{readable}");
    }
    format!("{SESSION_PREFIX}{readable}#{:08x}", fnv1a(name))
}

/// 32-bit FNV-1a of `s`'s bytes: stable across builds and machines, unlike std's hasher.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_becomes_a_bounded_printable_session_name_no_other_name_shares() {
        assert_eq!(session_name("sam"), "leaselab:sam");
        let lei = session_name("李雷");
        assert!(lei.starts_with("leaselab:??#"), "{lei}");
        assert_ne!(lei, session_name("韩梅"));
        // A plain name cannot pass for the hashed form of another.
        assert_ne!(session_name("??#1234abcd"), "leaselab:??#1234abcd");
        let long = session_name(&"た".repeat(32));
        assert!(long.len() <= 63, "{}", long.len());
        assert!(long.bytes().all(|b| b.is_ascii_graphic()), "{long}");
        assert!(long.len() + 9 <= 63, "{}", long.len());
        assert_eq!(named_in(&format!("{long}@0123abcd")), long);
        assert_eq!(named_in("leaselab:sam"), "leaselab:sam");
    }
}
