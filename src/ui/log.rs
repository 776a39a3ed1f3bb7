//! The event log the dashboard shows: one line per engine event, newest last, bounded.

use std::collections::{HashMap, VecDeque};

use crate::engine::events::{Event, EventKind};

/// Lines kept; older ones fall off the top.
pub const LOG_CAPACITY: usize = 5_000;

/// How a line is highlighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
    Dim,
    /// Something the teacher did from the dashboard.
    Teacher,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at_ms: i64,
    pub actor: String,
    pub text: String,
    pub tone: Tone,
    /// Identical idle lines are folded into one, counted here.
    pub repeat: u32,
    /// Lines with the same fold key from the same actor fold into one (idle polls, and
    /// repeated blocked claims on one lease, whose newest time left the line shows).
    fold: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct EventLog {
    lines: VecDeque<LogLine>,
    /// Each held lease's version and expiry, from its claim and heartbeats: a finalize
    /// accepted after its lease ran out says why it was accepted.
    leases: HashMap<i64, (i64, i64)>,
}

impl EventLog {
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn lines(&self) -> &VecDeque<LogLine> {
        &self.lines
    }

    pub fn last(&self) -> Option<&LogLine> {
        self.lines.back()
    }

    /// True when some line's text contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.lines.iter().any(|l| l.text.contains(needle))
    }

    /// Log an engine event. True when a new line was added (not for a fold or a skip).
    pub fn push_event(&mut self, ev: &Event) -> bool {
        self.push_event_of(ev, None)
    }

    /// Log an engine event of one of two workers of one name, told apart by `tag`
    /// (`stalled`, `new`) before what it did.
    pub fn push_event_of(&mut self, ev: &Event, tag: Option<&str>) -> bool {
        let tone = match &ev.kind {
            // Each worker reports these; the dashboard logs the pause itself, once.
            EventKind::Paused | EventKind::Resumed => return false,
            // Taken while another lease held: two owners at once.
            EventKind::Claimed {
                overlapped: Some(_),
                ..
            } => Tone::Bad,
            EventKind::Claimed { reclaim: true, .. } => Tone::Warn,
            EventKind::Claimed { .. } | EventKind::Finalized { .. } => Tone::Good,
            EventKind::ClaimBlocked { .. } | EventKind::Loaded { .. } => Tone::Warn,
            EventKind::BusyRetry { .. } | EventKind::QueuedLeaseRanOut { .. } => Tone::Warn,
            EventKind::Marked { .. } => Tone::Warn,
            EventKind::FinalizeRejected { .. }
            | EventKind::Crashed { .. }
            | EventKind::Failed { .. } => Tone::Bad,
            EventKind::ClaimEmpty => Tone::Dim,
            EventKind::LeasingChanged { on: false } => Tone::Bad,
            EventKind::ProviderCalled { .. } => Tone::Plain,
            _ => Tone::Teacher,
        };
        let mut text = match tag {
            Some(tag) => format!("({tag}) {}", ev.describe()),
            None => ev.describe(),
        };
        if let Some(why) = self.follow_lease(ev) {
            text.push_str(&why);
        }
        let fold = match &ev.kind {
            EventKind::ClaimEmpty | EventKind::Loaded { count: 0 } => Some(text.clone()),
            EventKind::ClaimBlocked { key, owner, .. } => Some(format!("blocked {key} {owner}")),
            _ => None,
        };
        // A reseed starts the clock again: lines of the old run would sit after newer ones.
        if matches!(ev.kind, EventKind::Seeded { .. }) {
            self.lines.clear();
        }
        if let Some(fold) = &fold {
            if self.fold_idle(ev, fold, &text) {
                return false;
            }
        }
        self.push(LogLine {
            at_ms: ev.at_ms,
            actor: ev.actor.clone(),
            text,
            tone,
            repeat: 1,
            fold,
        });
        true
    }

    /// Keeps each lease's expiry; for a finalize accepted after its lease ran out, what
    /// the line adds: nobody took the message over, and the guard checks the owner and the
    /// lease version, not the time.
    fn follow_lease(&mut self, ev: &Event) -> Option<String> {
        match &ev.kind {
            EventKind::Seeded { .. } => self.leases.clear(),
            EventKind::Claimed {
                id,
                version,
                until_ms,
                ..
            }
            | EventKind::Heartbeat {
                id,
                version,
                until_ms,
                ..
            } => {
                self.leases.insert(*id, (*version, *until_ms));
            }
            EventKind::Finalized { id, version, .. } => {
                let (held, until) = self.leases.remove(id)?;
                return (held == *version && ev.at_ms > until).then(|| {
                    format!(
                        ": its lease ran out at {}, but nobody took it over, and the guard \
                         checks owner and lease version, not the time",
                        crate::engine::clock::hms(until)
                    )
                });
            }
            EventKind::FinalizeRejected { id, .. } => {
                self.leases.remove(id);
            }
            _ => {}
        }
        None
    }

    /// Workers polling an empty outbox would flood the log: count repeats on their last line.
    fn fold_idle(&mut self, ev: &Event, fold: &str, text: &str) -> bool {
        let n = self.lines.len();
        for i in (0..n).rev() {
            let line = &self.lines[i];
            let Some(key) = &line.fold else {
                return false;
            };
            if line.actor == ev.actor && key == fold {
                // Its time moves on, so it moves down past the lines it is now newer than.
                let mut line = self.lines.remove(i).expect("index in range");
                line.repeat += 1;
                line.text = text.to_string();
                line.at_ms = line.at_ms.max(ev.at_ms);
                self.push(line);
                return true;
            }
        }
        false
    }

    /// A line written by the dashboard itself (pause, step, reset...).
    pub fn note(&mut self, at_ms: i64, text: impl Into<String>) {
        self.push(LogLine {
            at_ms,
            actor: "dashboard".into(),
            text: text.into(),
            tone: Tone::Teacher,
            repeat: 1,
            fold: None,
        });
    }

    /// A line of the history checker's verdict, red when a check failed.
    pub fn verdict(&mut self, at_ms: i64, text: impl Into<String>, passed: bool) {
        self.push(LogLine {
            at_ms,
            actor: "history".into(),
            text: text.into(),
            tone: if passed { Tone::Good } else { Tone::Bad },
            repeat: 1,
            fold: None,
        });
    }

    /// Lines stay in time order: one that arrives late (a stopped worker's last event
    /// after a reset's note) goes in above the newer ones.
    fn push(&mut self, line: LogLine) {
        if self.lines.len() == LOG_CAPACITY {
            self.lines.pop_front();
        }
        let at = self
            .lines
            .iter()
            .rposition(|l| l.at_ms <= line.at_ms)
            .map_or(0, |i| i + 1);
        self.lines.insert(at, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(actor: &str, kind: EventKind) -> Event {
        Event {
            seq: 0,
            at_ms: 0,
            slot: Some(0),
            actor: actor.into(),
            kind,
            sql: None,
        }
    }

    /// `PAY-001` claimed at 0 under lease `version` until 3000, then finalized at `at`.
    fn finalized_at(at: i64, version: i64, beat_until: Option<i64>) -> String {
        let mut log = EventLog::default();
        let claim = EventKind::Claimed {
            id: 1,
            key: "PAY-001".into(),
            until_ms: 3000,
            version: 1,
            reclaim: false,
            way: crate::engine::events::ClaimWay::Next,
            overlapped: None,
        };
        log.push_event(&ev("Worker-A", claim));
        if let Some(until_ms) = beat_until {
            let beat = EventKind::Heartbeat {
                id: 1,
                key: "PAY-001".into(),
                version: 1,
                until_ms,
            };
            log.push_event(&Event {
                at_ms: 2000,
                ..ev("Worker-A", beat)
            });
        }
        let done = EventKind::Finalized {
            id: 1,
            key: "PAY-001".into(),
            version,
            status: crate::engine::provider::ProviderStatus::Paid,
        };
        log.push_event(&Event {
            at_ms: at,
            ..ev("Worker-A", done)
        });
        log.last().unwrap().text.clone()
    }

    #[test]
    fn a_finalize_accepted_after_its_lease_ran_out_says_why() {
        let late = finalized_at(3500, 1, None);
        assert!(
            late.starts_with("FINALIZED PAY-001 Paid (lease v1)"),
            "{late}"
        );
        assert!(
            late.contains("its lease ran out at ") && late.contains("nobody took it over"),
            "{late}"
        );
        // In time, or kept alive by a heartbeat: nothing to explain.
        for text in [
            finalized_at(2500, 1, None),
            finalized_at(3500, 1, Some(5000)),
        ] {
            assert_eq!(text, "FINALIZED PAY-001 Paid (lease v1)");
        }
        // Another lease's finalize is not this lease's.
        assert_eq!(
            finalized_at(3500, 2, None),
            "FINALIZED PAY-001 Paid (lease v2)"
        );
    }

    #[test]
    fn idle_claims_of_each_worker_fold_into_one_line_each() {
        let mut log = EventLog::default();
        for _ in 0..5 {
            log.push_event(&ev("Worker-A", EventKind::ClaimEmpty));
            log.push_event(&ev("Worker-B", EventKind::ClaimEmpty));
        }
        assert_eq!(log.len(), 2);
        assert_eq!(log.lines()[0].repeat, 5);
        log.push_event(&ev("Worker-A", EventKind::LeasingChanged { on: true }));
        log.push_event(&ev("Worker-A", EventKind::ClaimEmpty));
        assert_eq!(log.len(), 4);
    }

    fn at(actor: &str, at_ms: i64, kind: EventKind) -> Event {
        Event {
            at_ms,
            ..ev(actor, kind)
        }
    }

    #[test]
    fn the_log_never_goes_back_in_time() {
        let mut log = EventLog::default();
        log.push_event(&at("Worker-A", 965, EventKind::ClaimEmpty));
        log.push_event(&at("Worker-B", 965, EventKind::ClaimEmpty));
        // Worker-A polls again: its folded line is now the newer of the pair.
        log.push_event(&at("Worker-A", 967, EventKind::ClaimEmpty));
        log.note(2_000, "RESET: outbox reseeded, workers restarted");
        // A stopped worker's last event arrives after the reset's note.
        log.push_event(&at(
            "Worker-B",
            1_500,
            EventKind::Crashed {
                holding: None,
                panic: None,
                how: None,
            },
        ));
        let times: Vec<i64> = log.lines().iter().map(|l| l.at_ms).collect();
        assert_eq!(times, [965, 967, 1_500, 2_000]);
        assert_eq!(log.lines()[1].actor, "Worker-A");
        assert_eq!(log.lines()[1].repeat, 2);
        // A reseed sets the clock back to the start: the log starts again with it.
        log.push_event(&at("engine", 0, EventKind::Seeded { messages: 6 }));
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn blocked_claims_on_one_lease_fold_into_one_line_with_the_newest_time_left() {
        let blocked = |left_ms| EventKind::ClaimBlocked {
            id: 1,
            key: "PAY-001".into(),
            owner: "Worker-A".into(),
            left_ms,
            way: crate::engine::events::ClaimWay::Next,
        };
        let mut log = EventLog::default();
        log.push_event(&at("Worker-B", 600, blocked(2_400)));
        log.push_event(&at("Worker-B", 900, blocked(2_100)));
        log.push_event(&at("Worker-B", 1_200, blocked(1_800)));
        assert_eq!(log.len(), 1);
        let line = &log.lines()[0];
        assert_eq!(line.text, "BLOCKED on PAY-001 by Worker-A, 1800 ms left");
        assert_eq!((line.repeat, line.at_ms, line.tone), (3, 1_200, Tone::Warn));
        // Another message's lease is news.
        log.push_event(&at(
            "Worker-B",
            1_300,
            EventKind::ClaimBlocked {
                id: 2,
                key: "PAY-002".into(),
                owner: "Worker-A".into(),
                left_ms: 100,
                way: crate::engine::events::ClaimWay::Next,
            },
        ));
        assert_eq!(log.len(), 2);
    }

    #[test]
    fn the_log_is_bounded() {
        let mut log = EventLog::default();
        for i in 0..LOG_CAPACITY + 10 {
            log.note(i as i64, format!("line {i}"));
        }
        assert_eq!(log.len(), LOG_CAPACITY);
        assert_eq!(log.lines()[0].text, "line 10");
    }
}
