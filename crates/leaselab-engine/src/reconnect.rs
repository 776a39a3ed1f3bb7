//! How long a process whose connection went away (a server restart, a network blip)
//! waits before it tries a new one: a worker process and a watching dashboard alike.

use std::time::Duration;

/// The first wait before a new connection is tried.
pub const FIRST_WAIT: Duration = Duration::from_millis(250);
/// The longest wait between two attempts. There is no limit on their number: the worker
/// tries until the server is back or it is stopped (a signal, its terminal closing).
pub const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// The wait before attempt `attempt` (1 first): 0.25 s doubling, at most 5 s.
pub fn wait_before(attempt: u32) -> Duration {
    let doubled = FIRST_WAIT.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    doubled.min(LONGEST_WAIT)
}

/// `250 ms`, `2 s`: a wait as a line says it.
pub fn shown(wait: Duration) -> String {
    if wait.subsec_millis() == 0 {
        format!("{} s", wait.as_secs())
    } else if wait < Duration::from_secs(1) {
        format!("{} ms", wait.as_millis())
    } else {
        format!("{:.1} s", wait.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_a_quarter_second_up_to_five() {
        let waits: Vec<_> = (1..=8).map(|n| shown(wait_before(n))).collect();
        assert_eq!(
            waits,
            ["250 ms", "500 ms", "1 s", "2 s", "4 s", "5 s", "5 s", "5 s"]
        );
        assert_eq!(wait_before(u32::MAX), LONGEST_WAIT);
    }
}
