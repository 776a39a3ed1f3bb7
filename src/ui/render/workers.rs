//! The workers panel: one line per worker with its state, what it owns, how many it
//! finished; or, in the watch after `V`, which leaselab it runs on which system. `▶` marks
//! the selected worker, `→` the one a single step moves next.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit, ms_label, pane, styled};
use crate::engine::software::Software;
use crate::engine::worker::WorkerState;
use crate::ui::snapshot::{Snapshot, WorkerView};
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

/// Inner width from which a line has room for countdowns and words.
const WIDE: u16 = 50;
/// The name column's usual width.
const NAME_W: usize = 10;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let block = pane(" Workers ", t, false);
    let inner = block.inner(area);
    let wide = inner.width >= WIDE;
    let rows = inner.height as usize;
    // Narrow, the columns are named unless the page must be: the help names them too.
    let who = ui.who_runs_what;
    let block = if who && s.workers.len() <= rows {
        block.title(styled(" leaselab · system ", t.dim))
    } else if wide || who || s.workers.len() > rows {
        block
    } else {
        block.title(styled(" state · owns · done ", t.dim))
    };
    // More workers than lines: the pane pages, the selected worker's page in view.
    let first = ui.selected / rows.max(1) * rows.max(1);
    let n = s.workers.len();
    let block = if n > rows {
        let last = (first + rows).min(n);
        let (page, pages) = (first / rows.max(1) + 1, n.div_ceil(rows.max(1)));
        let range = if wide {
            format!(" {}-{last} of {n} ·", first + 1)
        } else {
            String::new()
        };
        block.title(styled(format!("{range} page {page}/{pages} > "), t.warn))
    } else {
        block
    };
    // Two workers of one name are told apart: a wide column makes room for `(stalled)`.
    let name_w = s
        .workers
        .iter()
        .map(|w| unicode_width::UnicodeWidthStr::width(w.label(!wide).as_str()))
        .max()
        .unwrap_or(0);
    // Who runs what needs the room for its words: the names take no more than they need,
    // and give way (cut with `…`) to a version and a system.
    let name_w = if who {
        let words = s
            .workers
            .iter()
            .map(|w| short_software(w).chars().count())
            .max()
            .unwrap_or(0);
        let room = (inner.width as usize).saturating_sub(2 + 1 + words);
        name_w.min(room).clamp(4, NAME_W + 8)
    } else {
        name_w.clamp(NAME_W, NAME_W + 8)
    };
    let view = View {
        now_ms: s.now_ms,
        selected: ui.selected,
        wide,
        name_w,
        t,
    };
    let lines: Vec<Line> = s
        .workers
        .iter()
        .skip(first)
        .take(rows)
        .map(|w| match who {
            true => view.software(w, inner.width as usize),
            false => view.line(w, inner.width as usize, s.next_mover == Some(w.slot)),
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Drop trailing words until `s` fits, so a line never ends inside a number or a unit.
fn whole_fields(s: &str, width: usize) -> String {
    let mut words: Vec<&str> = s.split(' ').collect();
    while words.len() > 1 && words.join(" ").chars().count() > width {
        words.pop();
    }
    // A number with its unit goes as a pair: "2847 ms", never "2847".
    if words.len() > 1
        && words.len() < s.split(' ').count()
        && words.last().is_some_and(|w| w.parse::<f64>().is_ok())
    {
        words.pop();
    }
    fit(&words.join(" "), width)
}

/// A student's error without the `FILE:LINE: ` it starts with: the row has room for what
/// went wrong, and the log's line names the file.
fn without_place(why: &str) -> &str {
    let Some((place, rest)) = why.split_once(": ") else {
        return why;
    };
    match place.rsplit_once(':') {
        Some((_, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => why,
    }
}

/// What every line of the panel needs besides its worker.
struct View<'t> {
    now_ms: i64,
    selected: usize,
    wide: bool,
    /// The name column: wider when two workers of one name need `(stalled)` and `(new)`.
    name_w: usize,
    t: &'t Theme,
}

/// Which leaselab a worker runs, as much as `width` has room for: its version, commit and
/// system, then without the commit, then the version alone. A part its row did not record
/// is `unknown`; a worker that recorded no joining at all is `unknown` whole.
fn software_text(w: &WorkerView, width: usize) -> String {
    let Some(sw) = w.software.as_ref().filter(|s| **s != Software::default()) else {
        return "unknown".to_string();
    };
    let version = sw.version_shown();
    [
        format!("{version} ({}) {}", sw.commit_shown(), sw.system()),
        short_software(w),
    ]
    .into_iter()
    .find(|c| c.chars().count() <= width)
    .unwrap_or_else(|| fit(&version, width))
}

/// The version and the system, without the commit: what the pane keeps room for.
fn short_software(w: &WorkerView) -> String {
    match w.software.as_ref().filter(|s| **s != Software::default()) {
        Some(sw) => format!("{} {}", sw.version_shown(), sw.system()),
        None => "unknown".to_string(),
    }
}

impl View<'_> {
    /// A worker's line in the watch after `V`: its name, then which leaselab it runs.
    fn software<'a>(&self, w: &WorkerView, width: usize) -> Line<'a> {
        let t = self.t;
        let selected = w.slot == self.selected;
        let name_style = if selected { t.selected } else { t.header };
        let room = width.saturating_sub(2 + self.name_w + 1);
        let text = software_text(w, room);
        let style = if text == "unknown" { t.dim } else { t.base };
        Line::from(vec![
            styled(if selected { "▶" } else { " " }, t.selected),
            Span::raw(" "),
            styled(super::pad(&w.label(!self.wide), self.name_w), name_style),
            Span::raw(" "),
            styled(text, style),
        ])
    }

    fn line<'a>(&self, w: &WorkerView, width: usize, next: bool) -> Line<'a> {
        let (t, wide) = (self.t, self.wide);
        let selected = w.slot == self.selected;
        let s = &w.status;
        let state_style = match s.state {
            WorkerState::Crashed | WorkerState::Stopped => t.crashed,
            WorkerState::Blocked | WorkerState::Unknown => t.warn,
            WorkerState::Paused | WorkerState::Held | WorkerState::Left => t.dim,
            WorkerState::Idle => t.base,
            _ => t.processing,
        };
        // A worker frozen (a lesson's long pause, `z`, SIGSTOP) is not just waiting for a step.
        let (state_label, state_style) = if w.frozen {
            ("FROZEN", t.warn)
        } else {
            (s.state.label(), state_style)
        };
        let done = if wide {
            format!("{} done", w.done)
        } else {
            format!("{}", w.done)
        };
        let name_w = self.name_w;
        let name_style = if selected { t.selected } else { t.header };
        let mut spans = vec![
            styled(if selected { "▶" } else { " " }, t.selected),
            styled(if next { "→" } else { " " }, t.next_mover),
            styled(super::pad(&w.label(!wide), name_w), name_style),
            Span::raw(" "),
        ];
        if let (WorkerState::Stopped, Some(why)) = (s.state, &s.stopped_why) {
            // Why it stopped, the whole row long, for as long as it stays stopped: the
            // log's line scrolls away, and what it held is in the table.
            let why = format!("stopped: {}", crate::text::printable(without_place(why)));
            let room = width.saturating_sub(3 + name_w);
            spans.push(styled(whole_fields(&why, room), t.bad));
            return Line::from(spans);
        }
        let owns_w = width.saturating_sub(24 + (name_w - NAME_W) + done.len() + 1);
        let (owns, owns_style) = self.owns(w, owns_w);
        spans.extend([
            styled(format!("{:<10}", state_label), state_style),
            Span::raw(" "),
            styled(
                format!("{:<owns_w$}", whole_fields(&owns, owns_w)),
                owns_style,
            ),
            Span::raw(" "),
            Span::raw(done),
        ]);
        Line::from(spans)
    }

    /// What the worker owns, or works on without owning, or left behind when it crashed.
    fn owns(&self, w: &WorkerView, room: usize) -> (String, ratatui::style::Style) {
        let (t, wide) = (self.t, self.wide);
        let s = &w.status;
        // A worker that no longer works on its lease (crashed, gone, or frozen past its
        // end), or whose lease another worker took: what matters is what became of it.
        let crashed = w.taken_by.is_some()
            || matches!(
                s.state,
                WorkerState::Crashed | WorkerState::Left | WorkerState::Unknown
            );
        if let Some(lease) = &s.lease {
            let left = lease.until_ms - self.now_ms;
            let crashed = crashed || (w.frozen && !lease.is_live(self.now_ms));
            if !crashed {
                let text = match (wide, s.last_beat_ms) {
                    // The table shows the lease left; a beating worker shows its pulse.
                    (true, Some(at)) => {
                        format!("{} ♥{} ago", lease.key, ms_label((self.now_ms - at).max(0)))
                    }
                    (true, None) => format!("{} {} left", lease.key, ms_label(left.max(0))),
                    (false, _) => lease.key.clone(),
                };
                return (text, t.base);
            }
            // What is true now: a lease another worker has taken is no longer held.
            let text = match (wide, w.taken_by.clone(), lease.is_live(self.now_ms)) {
                (_, Some(by), _) => {
                    let short = by.strip_prefix("Worker-").unwrap_or(&by).to_string();
                    let key = &lease.key;
                    [
                        format!("{key} lease taken by {by}"),
                        format!("{key} taken by {by}"),
                        format!("taken by {by}"),
                        format!("→ {by}"),
                    ]
                    .into_iter()
                    .find(|c| c.chars().count() <= room)
                    .unwrap_or(format!("→{short}"))
                }
                (false, _, _) => lease.key.clone(),
                (true, None, true) => format!("held {} {}", lease.key, ms_label(left)),
                (true, None, false) => format!("held {} expired", lease.key),
            };
            return (text, t.bad);
        }
        if let Some(b) = &s.blocked_on {
            // Paused or not, the countdown it waits for is what a class watches.
            let left = (b.until_ms - self.now_ms).max(0);
            let text = if wide {
                format!("{} by {} {} left", b.key, b.owner, ms_label(left))
            } else {
                format!("{} {}", b.key, ms_label(left))
            };
            return (text, t.warn);
        }
        if let Some(m) = &s.working_on {
            let text = if wide {
                format!("{} no lease +{}", m.key, s.queued)
            } else {
                m.key.clone()
            };
            return (text, t.unowned);
        }
        ("-".into(), t.dim)
    }
}
