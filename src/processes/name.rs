//! What a worker process may be called: a name the other workers and the dashboard can
//! tell apart from each other and from leaselab's own.

use crate::engine::worker_id::WorkerId;

use super::flags::CHILD_ENV;

/// Longest worker name: it is shown in a table column and written in every event row.
pub const MAX_NAME: usize = 32;

/// Why a name cannot be a worker process's, in the one line the user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("--name must not be empty")]
    Empty,
    #[error("--name '{0}' is longer than {max} characters", max = MAX_NAME)]
    TooLong(String),
    #[error("--name {0:?} holds a space or a control character; use letters, digits, - or _")]
    Unprintable(String),
    #[error("--name engine is taken by leaselab itself; choose another")]
    Engine,
    #[error("--name {0} is a label the dashboard's log gives its own lines; choose another")]
    Reserved(String),
    #[error(
        "--name {0} is the name of a leaselab worker thread, which a process would be confused with; choose another (laptop-1, proc-2, ...)"
    )]
    ThreadName(String),
}

/// A name other workers and the dashboard can tell apart, or why it cannot be one.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().count() > MAX_NAME {
        return Err(NameError::TooLong(name.to_string()));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(NameError::Unprintable(name.to_string()));
    }
    if name == crate::engine::events::ENGINE {
        return Err(NameError::Engine);
    }
    // The log's own lines are labelled so: a worker under one would read as the verdict.
    if ["history", "dashboard"]
        .iter()
        .any(|label| name.eq_ignore_ascii_case(label))
    {
        return Err(NameError::Reserved(name.to_string()));
    }
    // `Worker-A`, `Worker-B#2`, ... are the names of an engine's worker threads: a process
    // under one would read as that thread in every table, event and ledger. Only the
    // children of a `--processes` dashboard, which has no threads of its own, take them.
    let is_child = std::env::var_os(CHILD_ENV).is_some();
    if WorkerId::parse(name).is_some() && !is_child {
        return Err(NameError::ThreadName(name.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refused_name_says_why_in_the_words_the_user_sees() {
        let long = "x".repeat(MAX_NAME + 1);
        let cases = [
            ("  ", "--name must not be empty".to_string()),
            (
                long.as_str(),
                format!("--name '{long}' is longer than 32 characters"),
            ),
            (
                "lap\ttop",
                "--name \"lap\\ttop\" holds a space or a control character; use letters, digits, - or _"
                    .to_string(),
            ),
            (
                "engine",
                "--name engine is taken by leaselab itself; choose another".to_string(),
            ),
            (
                "history",
                "--name history is a label the dashboard's log gives its own lines; choose another"
                    .to_string(),
            ),
            (
                "Dashboard",
                "--name Dashboard is a label the dashboard's log gives its own lines; choose \
                 another"
                    .to_string(),
            ),
        ];
        for (name, said) in cases {
            assert_eq!(check_name(name).unwrap_err().to_string(), said, "{name:?}");
        }
        assert_eq!(check_name(&"y".repeat(MAX_NAME)), Ok(()));
        assert_eq!(check_name("laptop-1"), Ok(()));
        assert_eq!(check_name("李雷"), Ok(()));
    }
}
