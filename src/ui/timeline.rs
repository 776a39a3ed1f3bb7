//! Who owned which message when: one lane per worker slot, folded from engine events, so a
//! reclaim after a crash can be drawn as a picture.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::events::{Event, EventKind};

/// Segments and marks kept per lane; the oldest fall off.
pub const LANE_CAPACITY: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// The worker holds a lease on the message.
    Lease,
    /// Leasing off: the worker works on the message without owning it.
    Unowned,
    /// The worker crashed; its lease still blocks others until it expires.
    DeadLease,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub id: i64,
    /// Shared, so the frame's snapshot copies a lane without copying its keys.
    pub key: Arc<str>,
    pub kind: SegmentKind,
    pub from_ms: i64,
    /// None while it lasts.
    pub to_ms: Option<i64>,
    /// A lease's expiry, moved on by heartbeats: a lease still open is drawn no further.
    pub until_ms: Option<i64>,
    /// How it ended, drawn just after it.
    pub end: Option<MarkKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Finalized,
    Rejected,
    Marked,
    Crashed,
    Blocked,
    Loaded,
    Restarted,
}

impl MarkKind {
    pub fn symbol(self) -> char {
        match self {
            MarkKind::Finalized => '✓',
            MarkKind::Rejected => '×',
            MarkKind::Marked => '✓',
            MarkKind::Crashed => '✗',
            MarkKind::Blocked => '!',
            MarkKind::Loaded => 'L',
            MarkKind::Restarted => '↻',
        }
    }
}

/// A moment on a lane that is not a stretch of ownership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub at_ms: i64,
    pub kind: MarkKind,
}

#[derive(Debug, Clone, Default)]
pub struct Lane {
    pub segments: VecDeque<Segment>,
    pub marks: VecDeque<Mark>,
    /// Leasing off: when the worker started on its next queued message (events only name
    /// the message at the provider call, after the processing time).
    unowned_since: Option<i64>,
}

impl Lane {
    fn open(&mut self, seg: Segment) {
        if self.segments.len() == LANE_CAPACITY {
            self.segments.pop_front();
        }
        self.segments.push_back(seg);
    }

    fn mark(&mut self, at_ms: i64, kind: MarkKind) {
        if self.marks.len() == LANE_CAPACITY {
            self.marks.pop_front();
        }
        self.marks.push_back(Mark { at_ms, kind });
    }

    /// End the running segment, if any; true when there was one. A lease that ran out
    /// before `at_ms` ends at its expiry, and `end` is marked apart at `at_ms`.
    fn close(&mut self, at_ms: i64, end: Option<MarkKind>) -> bool {
        let expired = match self.segments.back_mut() {
            Some(s) if s.to_ms.is_none() => {
                let expired = s.until_ms.filter(|u| *u < at_ms);
                s.to_ms = Some(expired.unwrap_or(at_ms).max(s.from_ms));
                s.end = if expired.is_some() { None } else { end };
                expired.is_some()
            }
            _ => return false,
        };
        if let (true, Some(end)) = (expired, end) {
            self.mark(at_ms, end);
        }
        true
    }

    fn current(&self) -> Option<&Segment> {
        self.segments.back().filter(|s| s.to_ms.is_none())
    }

    /// The running lease on message `id`, if this lane holds one.
    fn lease_on(&mut self, id: i64) -> Option<&mut Segment> {
        self.segments
            .back_mut()
            .filter(|s| s.to_ms.is_none() && s.kind == SegmentKind::Lease && s.id == id)
    }

    /// End the running lease on `id`, if this lane holds one (at its expiry if that came
    /// before `at_ms`).
    fn end_lease(&mut self, id: i64, at_ms: i64) {
        if self.lease_on(id).is_some() {
            self.close(at_ms, None);
        }
    }

    /// A copy of what happened from `ms` on: stretches still running or ending after it.
    pub fn since(&self, ms: i64) -> Lane {
        Lane {
            segments: self
                .segments
                .iter()
                .filter(|s| s.to_ms.is_none_or(|to| to >= ms))
                .cloned()
                .collect(),
            marks: self
                .marks
                .iter()
                .filter(|m| m.at_ms >= ms)
                .copied()
                .collect(),
            unowned_since: self.unowned_since,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub lanes: Vec<Lane>,
}

impl Timeline {
    pub fn clear(&mut self) {
        self.lanes.clear();
    }

    fn lane(&mut self, slot: usize) -> &mut Lane {
        if self.lanes.len() <= slot {
            self.lanes.resize_with(slot + 1, Lane::default);
        }
        &mut self.lanes[slot]
    }

    pub fn apply(&mut self, ev: &Event) {
        if matches!(ev.kind, EventKind::Seeded { .. }) {
            self.clear();
            return;
        }
        let Some(slot) = ev.slot else { return };
        let at = ev.at_ms;
        if let EventKind::Claimed { id, .. } = &ev.kind {
            // A takeover: the lease it replaces ended (at its expiry) in whatever lane.
            for (i, other) in self.lanes.iter_mut().enumerate() {
                if i != slot {
                    other.end_lease(*id, at);
                }
            }
        }
        self.lane(slot).apply(&ev.kind, at);
    }
}

impl Lane {
    /// One event of this lane's worker, at `at`.
    fn apply(&mut self, kind: &EventKind, at: i64) {
        match kind {
            EventKind::Claimed {
                id, key, until_ms, ..
            } => {
                self.unowned_since = None;
                self.close(at, None);
                self.open(Segment {
                    id: *id,
                    key: Arc::from(key.as_str()),
                    kind: SegmentKind::Lease,
                    from_ms: at,
                    to_ms: None,
                    until_ms: Some(*until_ms),
                    end: None,
                });
            }
            EventKind::Heartbeat { id, until_ms, .. } => {
                if let Some(seg) = self.lease_on(*id) {
                    seg.until_ms = Some(seg.until_ms.unwrap_or(*until_ms).max(*until_ms));
                }
            }
            EventKind::LeaseLost { id, .. } | EventKind::QueuedLeaseRanOut { id, .. } => {
                self.end_lease(*id, at)
            }
            EventKind::ProviderCalled { id, key, .. } => self.called(*id, key, at),
            EventKind::Finalized { .. } => {
                self.close(at, Some(MarkKind::Finalized));
            }
            // A lease taken over ended before: the refusal is a mark of its own.
            EventKind::FinalizeRejected { .. } => self.close_or_mark(at, MarkKind::Rejected),
            EventKind::Marked { .. } => {
                self.close_or_mark(at, MarkKind::Marked);
                self.unowned_since = Some(at);
            }
            EventKind::Crashed { holding, .. } => self.crashed(holding.as_ref(), at),
            EventKind::ClaimBlocked { .. } => self.mark(at, MarkKind::Blocked),
            EventKind::Loaded { count } if *count > 0 => {
                self.mark(at, MarkKind::Loaded);
                self.unowned_since = Some(at);
            }
            EventKind::Restarted { .. } => self.mark(at, MarkKind::Restarted),
            _ => {}
        }
    }

    /// End the running stretch with `end`, or, with none running, mark `end` alone.
    fn close_or_mark(&mut self, at: i64, end: MarkKind) {
        if !self.close(at, Some(end)) {
            self.mark(at, end);
        }
    }

    /// A provider call: without a lease on the message, an unowned stretch starts.
    fn called(&mut self, id: i64, key: &str, at: i64) {
        let owned = self
            .current()
            .is_some_and(|s| s.id == id && s.kind == SegmentKind::Lease);
        if !owned {
            self.close(at, None);
            let from_ms = self.unowned_since.take().unwrap_or(at).min(at);
            self.open(Segment {
                id,
                key: Arc::from(key),
                kind: SegmentKind::Unowned,
                from_ms,
                to_ms: None,
                until_ms: None,
                end: None,
            });
        }
    }

    /// A crash: the lease it held stays, dead, until it runs out.
    fn crashed(&mut self, holding: Option<&(i64, String, i64)>, at: i64) {
        self.unowned_since = None;
        self.close_or_mark(at, MarkKind::Crashed);
        if let Some((id, key, until)) = holding.filter(|h| h.2 > at) {
            self.open(Segment {
                id: *id,
                key: Arc::from(key.as_str()),
                kind: SegmentKind::DeadLease,
                from_ms: at,
                to_ms: Some((*until).max(at)),
                until_ms: None,
                end: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::provider::ProviderStatus;

    #[test]
    fn unowned_work_is_drawn_from_when_the_worker_started_on_it() {
        let mut t = Timeline::default();
        let called = |id: i64| EventKind::ProviderCalled {
            id,
            key: format!("PAY-00{id}"),
            status: ProviderStatus::Paid,
            effect: true,
        };
        let marked = |id: i64| EventKind::Marked {
            id,
            key: format!("PAY-00{id}"),
            status: ProviderStatus::Paid,
        };
        t.apply(&ev(0, 0, EventKind::Loaded { count: 2 }));
        t.apply(&ev(0, 1200, called(1)));
        t.apply(&ev(0, 1201, marked(1)));
        t.apply(&ev(0, 2400, called(2)));
        let lane = &t.lanes[0];
        assert_eq!(lane.segments[0].from_ms, 0);
        assert_eq!(lane.segments[0].to_ms, Some(1201));
        assert_eq!(lane.segments[1].from_ms, 1201);
        assert_eq!(lane.segments[1].kind, SegmentKind::Unowned);
    }

    fn ev(slot: usize, at_ms: i64, kind: EventKind) -> Event {
        Event {
            seq: 0,
            at_ms,
            slot: Some(slot),
            actor: format!("w{slot}"),
            kind,
            sql: None,
        }
    }

    #[test]
    fn a_crash_while_holding_leaves_a_dead_lease_until_expiry() {
        let mut t = Timeline::default();
        t.apply(&ev(
            0,
            100,
            EventKind::Claimed {
                id: 1,
                key: "PAY-001".into(),
                until_ms: 600,
                version: 1,
                reclaim: false,
                way: crate::engine::events::ClaimWay::Next,
                overlapped: None,
            },
        ));
        t.apply(&ev(
            0,
            200,
            EventKind::Crashed {
                holding: Some((1, "PAY-001".into(), 600)),
                panic: None,
                how: None,
            },
        ));
        let lane = &t.lanes[0];
        assert_eq!(lane.segments.len(), 2);
        assert_eq!(lane.segments[0].to_ms, Some(200));
        assert_eq!(lane.segments[0].end, Some(MarkKind::Crashed));
        assert_eq!(lane.segments[1].kind, SegmentKind::DeadLease);
        assert_eq!(lane.segments[1].to_ms, Some(600));
    }
}
