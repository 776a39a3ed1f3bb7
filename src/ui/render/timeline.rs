//! The timeline: one lane per worker, scenario time running left to right, the right part
//! a little into the future so a dead worker's lease can be seen running out.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit, pane, styled};
use crate::engine::clock::hms;
use crate::ui::snapshot::Snapshot;
use crate::ui::state::UiState;
use crate::ui::theme::Theme;
use crate::ui::timeline::{Lane, MarkKind, Segment, SegmentKind};

const LABEL_W: usize = 11;
/// Roughly how many leases the visible window spans.
const LEASES_SHOWN: i64 = 4;
/// Cell lengths to choose from, so the scale reads as a round number.
const STEPS_MS: [i64; 14] = [
    10, 20, 25, 50, 100, 200, 250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000,
];

/// Milliseconds per cell for a lane this wide.
pub fn ms_per_cell(lease_ms: i64, cells: usize) -> i64 {
    let want = lease_ms * LEASES_SHOWN / cells.max(1) as i64;
    STEPS_MS
        .iter()
        .copied()
        .find(|s| *s >= want)
        .unwrap_or(STEPS_MS[STEPS_MS.len() - 1])
}

/// Scenario time from which a timeline pane `width` columns wide (borders included) can
/// show anything: the snapshot copies only what comes after it.
pub fn shown_from(width: u16, lease_ms: i64, now_ms: i64) -> i64 {
    let w = Window::new(lease_ms, now_ms, width.saturating_sub(2));
    // A stretch ending one cell before the window still draws its end mark in the first.
    w.start - w.mpc
}

/// The lanes of the workers pane's page (`page` workers a page) that holds the selected
/// worker, and the selected one always.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    s: &Snapshot,
    (ui, page): (&UiState, usize),
    t: &Theme,
) {
    let block = pane(" Timeline ", t, false);
    let inner = block.inner(area);
    let n = s.workers.len();
    let lanes = inner.height as usize;
    let first = first_lane(ui.selected, page, lanes);
    let block = if n > lanes {
        let last = (first + lanes).min(n);
        block.title(styled(
            format!(" {}-{last} of {n} workers ", first + 1),
            t.warn,
        ))
    } else {
        block
    };
    let window = Window::new(s.lease_ms, s.now_ms, inner.width);
    let legend = legend(window.start, s.now_ms, window.mpc, inner.width as usize);
    let block = block.title_bottom(styled(legend, t.dim));
    let lines: Vec<Line> = s
        .workers
        .iter()
        .skip(first)
        .take(lanes)
        .map(|w| {
            let name = super::pad(&fit(&w.label(true), LABEL_W - 1), LABEL_W);
            let name_style = if w.slot == ui.selected {
                t.selected
            } else {
                t.header
            };
            let mut spans = vec![styled(name, name_style)];
            spans.extend(lane_spans(s.lanes.get(w.slot), &window, t));
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The first lane shown: the selected worker's page's first, moved on as far as the
/// selected worker needs when the page has more workers than `lanes`.
fn first_lane(selected: usize, page: usize, lanes: usize) -> usize {
    let first = selected / page.max(1) * page.max(1);
    first.max((selected + 1).saturating_sub(lanes.max(1)))
}

/// The marks the lanes use, most needed first.
const LEGEND: [&str; 9] = [
    "━ lease",
    "┄ no lease",
    "░ dead lease",
    "✗ crash",
    "! blocked",
    "✓ done",
    "× rejected",
    "L loaded",
    "↻ restarted",
];

/// The bottom line: the time shown, the scale and the marks. When it cannot all fit, the
/// time range goes first, then whole marks from the end (the help lists every one).
pub(crate) fn legend(start_ms: i64, now_ms: i64, mpc: i64, width: usize) -> String {
    let range = format!(" {} .. now {} ·", hms(start_ms), hms(now_ms));
    let scale = format!(" cell {mpc} ms ·");
    let fits = |s: &str| s.chars().count() <= width;
    for head in [format!("{range}{scale}"), scale.clone()] {
        let full = format!("{head} {} ", LEGEND.join(" "));
        if fits(&full) {
            return full;
        }
    }
    let mut out = scale.clone();
    for item in LEGEND {
        let next = format!("{out} {item}");
        if !fits(&format!("{next} ")) {
            break;
        }
        out = next;
    }
    out.push(' ');
    fit(&out, width)
}

/// The stretch of scenario time the lanes show.
#[derive(Clone, Copy)]
struct Window {
    /// Scenario time of the first cell.
    start: i64,
    mpc: i64,
    cells: usize,
    now_col: usize,
    now_ms: i64,
}

impl Window {
    /// The window for lanes `inner_width` wide, a fifth of it in the future.
    fn new(lease_ms: i64, now_ms: i64, inner_width: u16) -> Window {
        let cells = (inner_width as usize).saturating_sub(LABEL_W);
        let mpc = ms_per_cell(lease_ms, cells);
        let future = (cells / 5) as i64;
        // Align the window to whole cells so the picture does not shimmer as time runs.
        let now_cell = now_ms.div_euclid(mpc);
        let first_cell = now_cell + future + 1 - cells as i64;
        Window {
            start: first_cell * mpc,
            mpc,
            cells,
            now_col: (now_cell - first_cell) as usize,
            now_ms,
        }
    }

    fn col(&self, ms: i64) -> i64 {
        (ms - self.start).div_euclid(self.mpc)
    }

    /// First and last column of a stretch; one still running ends now, or at the expiry of
    /// its lease if that has passed.
    fn cols(&self, seg: &Segment) -> (i64, i64) {
        let from = self.col(seg.from_ms);
        let open_end = seg.until_ms.map_or(self.now_ms, |u| u.min(self.now_ms));
        (from, self.col(seg.to_ms.unwrap_or(open_end)).max(from))
    }
}

/// One lane's cells while it is being drawn.
struct Grid {
    cells: Vec<(char, Style)>,
}

impl Grid {
    fn put(&mut self, c: i64, ch: char, style: Style) {
        if (0..self.cells.len() as i64).contains(&c) {
            self.cells[c as usize] = (ch, style);
        }
    }

    fn stretch(&mut self, seg: &Segment, w: &Window, t: &Theme) {
        let (from_c, to_c) = w.cols(seg);
        let (ch, style) = match seg.kind {
            SegmentKind::Lease => ('━', t.lane(seg.id)),
            SegmentKind::Unowned => ('┄', t.unowned),
            SegmentKind::DeadLease => ('░', t.dead_lease),
        };
        for c in from_c..=to_c {
            self.put(c, ch, style);
        }
        // Label the stretch with the message number when it is long enough to read.
        let label = seg.key.rsplit('-').next().unwrap_or(&seg.key);
        let len = (to_c - from_c + 1) as usize;
        if seg.kind != SegmentKind::DeadLease && len >= label.len() + 2 {
            for (i, ch) in label.chars().enumerate() {
                self.put(from_c + 1 + i as i64, ch, style);
            }
        }
    }

    /// Merge neighbouring cells of one style into one span.
    fn spans<'a>(self) -> Vec<Span<'a>> {
        let mut spans: Vec<Span> = Vec::new();
        let mut run = String::new();
        let mut run_style = None;
        for (ch, style) in self.cells {
            if run_style != Some(style) && !run.is_empty() {
                spans.push(Span::styled(
                    std::mem::take(&mut run),
                    run_style.unwrap_or_default(),
                ));
            }
            run_style = Some(style);
            run.push(ch);
        }
        if !run.is_empty() {
            spans.push(Span::styled(run, run_style.unwrap_or_default()));
        }
        spans
    }
}

/// Draw one lane into `cells` characters starting at scenario time `start`.
fn lane_spans<'a>(lane: Option<&Lane>, w: &Window, t: &Theme) -> Vec<Span<'a>> {
    let mut grid = Grid {
        cells: vec![(' ', t.base); w.cells],
    };
    grid.put(w.now_col as i64, '┊', t.dim);
    let Some(lane) = lane else {
        return grid.spans();
    };
    let visible = |seg: &&Segment| {
        let (from, to) = w.cols(seg);
        to >= 0 && from < w.cells as i64
    };
    // Dead leases first: the stretch that led to the crash stays visible on top.
    let mut order: Vec<_> = lane.segments.iter().filter(visible).collect();
    order.sort_by_key(|s| s.kind != SegmentKind::DeadLease);
    for seg in order {
        grid.stretch(seg, w, t);
    }
    // Ends go on top of every stretch, so a crash is not hidden under its dead lease.
    for seg in &lane.segments {
        if let Some(end) = seg.end {
            let style = match end {
                MarkKind::Finalized => t.good,
                MarkKind::Marked => t.warn,
                _ => t.bad,
            };
            grid.put(w.cols(seg).1 + 1, end.symbol(), style);
        }
    }
    for m in &lane.marks {
        grid.put(w.col(m.at_ms), m.kind.symbol(), t.warn);
    }
    grid.spans()
}

#[cfg(test)]
mod legend_tests {
    use super::*;

    #[test]
    fn the_legend_drops_whole_marks_never_a_cut_word() {
        let wide = legend(0, 1_000, 200, 200);
        assert!(
            wide.contains(" .. now ") && wide.contains("↻ restarted"),
            "{wide}"
        );
        let narrow = legend(0, 1_000, 200, 78);
        assert!(
            !narrow.contains('…') && !narrow.contains(".. now"),
            "{narrow}"
        );
        assert!(narrow.chars().count() <= 78, "{narrow}");
        assert!(narrow.contains("! blocked"), "{narrow}");
        for item in LEGEND {
            let word = item.split(' ').nth(1).unwrap();
            assert_eq!(narrow.contains(word), narrow.contains(item), "{narrow}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_spans_about_four_leases_in_round_steps() {
        assert_eq!(ms_per_cell(3_000, 100), 200);
        assert_eq!(ms_per_cell(500, 60), 50);
        assert_eq!(ms_per_cell(3_600_000, 10), 60_000);
    }
}
