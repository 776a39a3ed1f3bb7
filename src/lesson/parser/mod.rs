//! Reads a lesson file into a [`Lesson`]. Every error names the file and the line, so a
//! teacher can fix a lesson without reading Rust.

mod action;
mod ctx;
mod error;
mod expect;
mod raw;
mod setup;
mod source;
mod step;
mod student;
mod words;
mod workers;

use crate::lesson::format::Lesson;

use ctx::Ctx;
use raw::RawLesson;
use source::Parser;

pub use error::{Mistake, ParseError};

/// Read a lesson. `name` is how it is called; `path` names the file in errors.
pub fn parse(name: &str, path: &str, text: &str) -> Result<Lesson, ParseError> {
    parse_with(&Parser::new(path, text), name)
}

fn parse_with(p: &Parser, name: &str) -> Result<Lesson, ParseError> {
    let (path, text) = (p.path, p.text);
    let raw: RawLesson = toml::from_str(text).map_err(|e| ParseError::Toml {
        path: path.to_string(),
        line: e.span().map(|s| p.line_of(s.start)).unwrap_or(1),
        cause: e,
    })?;
    p.format_version(&raw.format_version)?;
    let title = raw
        .title
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| p.err(0..0, "title is missing"))?;
    let summary = raw.summary.unwrap_or_default();
    let mut setup = p.setup(&raw.setup)?;
    setup.exercise = p.exercise(&raw.sql)?;
    if let Some(exercise) = setup.exercise.clone() {
        p.setup_for_exercise(&mut setup, &exercise, &raw.sql)?;
    }
    if raw.step.is_empty() {
        return Err(p
            .err(text.len()..text.len(), "the lesson has no [[step]]")
            .into());
    }
    let ctx = Ctx {
        p,
        workers: setup.workers,
        messages: p.lesson_messages(&raw.step, setup.messages)?,
        beat_ms: setup.reliability.heartbeat_for(setup.lease_ms).max(1),
        stalls: Default::default(),
        crew_change: Default::default(),
        exercise: setup.exercise.as_deref(),
    };
    // Every mistake in the steps is reported in one run, each on its own line.
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    for s in raw.step {
        match ctx.step(s) {
            Ok(step) => steps.push(step),
            Err(e) => errors.extend(e),
        }
    }
    errors.extend(ctx.crew_and_stalls());
    if !errors.is_empty() {
        return Err(ParseError::Mistakes(errors));
    }
    Ok(Lesson {
        name: name.to_string(),
        path: path.to_string(),
        title,
        summary,
        setup,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::outbox::{OutboxStatus, PaymentStatus};
    use crate::lesson::format::{Action, Figure};

    const GOOD: &str = r#"format_version = 1
title = "t"
summary = "s"
[setup]
workers = 2
[[step]]
do = ["claim Worker-A PAY-001", "advance 100"]
say = "x"
expect = ["PAY-001 owner Worker-A", "ledger claims 1", "provider PAY-001 calls 0"]
"#;

    /// A lesson of `steps` steps, each with one action and two expectations.
    pub(super) fn many_steps(steps: usize) -> String {
        let step = "[[step]]\ndo = [\"advance 1\"]\nsay = \"x\"\nexpect = [\"ledger claims 0\", \"PAY-001 lease 0\"]\n";
        format!("format_version = 1\ntitle = \"t\"\n{}", step.repeat(steps))
    }

    #[test]
    pub(super) fn the_lines_of_a_long_lesson_are_found_without_rescanning_it() {
        for steps in [1_000, 20_000] {
            let text = many_steps(steps);
            let p = Parser::new("t.toml", &text);
            let l = parse_with(&p, "t").unwrap();
            assert_eq!(l.steps.len(), steps);
            assert_eq!(l.steps[steps - 1].expects[1].line, 2 + 4 * steps);
            // Each expectation's line is a binary search over the line starts: about
            // log2(lines) comparisons, where a scan from the top would touch every byte
            // before it (the work growing with the square of the steps).
            let lookups = 2 * steps;
            let per_lookup = p.lines.probes.get() / lookups;
            assert!(per_lookup <= 20, "{per_lookup} comparisons per line lookup");
        }
    }

    #[test]
    pub(super) fn every_amount_has_a_maximum_refused_at_its_line() {
        for (action, says) in [
            (
                "work 9223372036854775807",
                "work 9223372036854775807 is outside 0-86400000",
            ),
            (
                "work 1000001",
                "work 1000001 is 1001 heartbeat intervals of 1000 ms, more than 1000 in one step",
            ),
            ("advance 86400001", "advance 86400001 is outside 0-86400000"),
            (
                "advance 18446744073709551616",
                "bad number '18446744073709551616' for advance",
            ),
            ("add-payment 1001", "add-payment 1001 is outside 1-1000"),
            ("add-payment 0", "add-payment 0 is outside 1-1000"),
            ("workers 27", "workers 27 is outside 1-26"),
            ("batch 101", "batch 101 is outside 1-100"),
            ("advance +5", "bad number '+5' for advance"),
        ] {
            let bad = GOOD.replace("advance 100", action);
            let e = parse("t", "t.toml", &bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("t.toml:7: {says}")), "{action}: {e}");
        }
        // At the maximum the amounts are taken.
        let ok = GOOD.replace("advance 100", "advance 86400000\", \"work 1000000");
        assert!(parse("t", "t.toml", &ok).is_ok());
        let bad = GOOD.replace("ledger claims 1", "ledger claims 1000000001");
        let e = parse("t", "t.toml", &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("t.toml:9: claims 1000000001 is outside 0-1000000000"),
            "{e}"
        );
        // A shorter heartbeat interval makes fewer milliseconds one step's most.
        let short = GOOD
            .replace("workers = 2", "lease_ms = 30")
            .replace("advance 100", "work 10001");
        let e = parse("t", "t.toml", &short).unwrap_err().to_string();
        assert!(
            e.starts_with("t.toml:7: work 10001 is 1001 heartbeat intervals of 10 ms"),
            "{e}"
        );
    }

    #[test]
    pub(super) fn the_payments_a_lesson_adds_are_capped_in_all() {
        let adds = ["\"add-payment 1000\""; 9].join(", ") + ", \"add-payment 994\"";
        let ok = GOOD.replace("\"advance 100\"", &adds);
        assert_eq!(
            parse("t", "t.toml", &ok).unwrap().steps[0].actions.len(),
            11
        );
        // The seeded 6 and ten thousand added pass the most a lesson may hold.
        let adds = ["\"add-payment 1000\""; 10].join(", ");
        let e = parse("t", "t.toml", &GOOD.replace("\"advance 100\"", &adds))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.toml:7: add-payment 1000 brings the lesson to 10006 payments, more than 10000"
        );
        // Counts that would overflow a sum are refused one by one, never added.
        let huge = ["\"add-payment 18446744073709551615\""; 2].join(", ");
        let e = parse("t", "t.toml", &GOOD.replace("\"advance 100\"", &huge))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml:7: bad number '18446744073709551615' for add-payment"),
            "{e}"
        );
    }

    #[test]
    pub(super) fn reads_actions_and_expectations() {
        let l = parse("t", "t.toml", GOOD).unwrap();
        assert_eq!(l.steps.len(), 1);
        assert_eq!(l.steps[0].actions[1], Action::Advance { ms: 100 });
        assert_eq!(l.steps[0].expects[2].line, 9);
        assert_eq!(l.steps[0].expects[0].value, "Worker-A");
    }

    #[test]
    pub(super) fn statuses_are_the_schemas_own() {
        let l = GOOD.replace(
            "\"ledger claims 1\"",
            "\"outbox deadlettered 0\", \"payments Paid 0\"",
        );
        let l = parse("t", "t.toml", &l).unwrap();
        assert_eq!(
            l.steps[0].expects[1].figure,
            Figure::Outbox(OutboxStatus::DeadLettered)
        );
        assert_eq!(
            l.steps[0].expects[2].figure,
            Figure::Payments(PaymentStatus::Paid)
        );
        let bad = GOOD.replace("\"ledger claims 1\"", "\"payments Refunded 0\"");
        let e = parse("t", "t.toml", &bad).unwrap_err().to_string();
        assert!(
            e.ends_with("'Refunded' is not a status (one of Pending, Paid, Failed)"),
            "{e}"
        );
    }

    #[test]
    pub(super) fn errors_name_the_line() {
        let bad = GOOD.replace("advance 100", "advance soon");
        let e = parse("t", "t.toml", &bad).unwrap_err().to_string();
        assert!(e.starts_with("t.toml:7: bad number 'soon'"), "{e}");
        let bad = GOOD.replace("workers = 2", "workers = 0");
        assert!(parse("t", "t.toml", &bad)
            .unwrap_err()
            .to_string()
            .starts_with("t.toml:5: workers = 0"));
        let bad = GOOD.replace("claim Worker-A", "claim Worker-C");
        assert!(parse("t", "t.toml", &bad)
            .unwrap_err()
            .to_string()
            .starts_with("t.toml:7: unknown worker 'Worker-C'"));
    }

    #[test]
    pub(super) fn a_heartbeat_not_shorter_than_the_lease_is_refused_at_its_line() {
        let bad = GOOD.replace("workers = 2", "lease_ms = 900\nheartbeat_ms = 900");
        let e = parse("t", "t.toml", &bad).unwrap_err().to_string();
        assert!(e.starts_with("t.toml:6: heartbeat interval 900 ms"), "{e}");
        let ok = GOOD.replace("workers = 2", "heartbeat = false\nheartbeat_ms = 100");
        let l = parse("t", "t.toml", &ok).unwrap();
        assert!(!l.setup.reliability.heartbeats);
        assert_eq!(l.setup.reliability.heartbeat_ms, Some(100));
        let work = GOOD.replace("advance 100", "work 400");
        assert_eq!(
            parse("t", "t.toml", &work).unwrap().steps[0].actions[1],
            Action::Work { ms: 400 }
        );
    }
}
