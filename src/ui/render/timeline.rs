//! The timeline: one lane per worker, scenario time running left to right, the right part
//! a little into the future so a dead worker's lease can be seen running out.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit, pane, styled};
use crate::engine::clock::hms;
use crate::ui::app::App;
use crate::ui::timeline::{Lane, MarkKind, SegmentKind};

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

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let block = pane(" Timeline ", app, false);
    let inner = block.inner(area);
    let cells = (inner.width as usize).saturating_sub(LABEL_W);
    let mpc = ms_per_cell(app.lease_ms(), cells);
    let future = (cells / 5) as i64;
    // Align the window to whole cells so the picture does not shimmer as time runs.
    let now_cell = app.now_ms.div_euclid(mpc);
    let first_cell = now_cell + future + 1 - cells as i64;
    let start = first_cell * mpc;
    let legend = format!(
        " {} .. now {} · cell {} ms · ━ lease ┄ no lease ░ dead lease ✗ crash ! blocked ✓ done × rejected ",
        hms(start),
        hms(app.now_ms),
        mpc
    );
    let block = block.title_bottom(styled(fit(&legend, inner.width as usize), t.dim));
    let lines: Vec<Line> = app
        .workers
        .iter()
        .take(inner.height as usize)
        .map(|w| {
            let name = format!("{:<w$}", fit(&w.status.name, LABEL_W - 1), w = LABEL_W);
            let name_style = if w.slot == app.selected {
                t.selected
            } else {
                t.header
            };
            let mut spans = vec![styled(name, name_style)];
            let lane = app.timeline.lanes.get(w.slot);
            let now_col = (now_cell - first_cell) as usize;
            spans.extend(lane_spans(lane, app, start, mpc, cells, now_col));
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Draw one lane into `cells` characters starting at scenario time `start`.
fn lane_spans<'a>(
    lane: Option<&Lane>,
    app: &App,
    start: i64,
    mpc: i64,
    cells: usize,
    now_col: usize,
) -> Vec<Span<'a>> {
    let t = &app.theme;
    let mut grid: Vec<(char, Style)> = vec![(' ', t.base); cells];
    if now_col < cells {
        grid[now_col] = ('┊', t.dim);
    }
    let col = |ms: i64| (ms - start).div_euclid(mpc);
    let put = |grid: &mut Vec<(char, Style)>, c: i64, ch: char, style: Style| {
        if (0..cells as i64).contains(&c) {
            grid[c as usize] = (ch, style);
        }
    };
    if let Some(lane) = lane {
        // Dead leases first: the stretch that led to the crash stays visible on top.
        let visible = |seg: &&crate::ui::timeline::Segment| {
            let to = seg.to_ms.unwrap_or(app.now_ms);
            col(to).max(col(seg.from_ms)) >= 0 && col(seg.from_ms) < cells as i64
        };
        let mut order: Vec<_> = lane.segments.iter().filter(visible).collect();
        order.sort_by_key(|s| s.kind != SegmentKind::DeadLease);
        for seg in order {
            let to = seg.to_ms.unwrap_or(app.now_ms);
            let (from_c, to_c) = (col(seg.from_ms), col(to).max(col(seg.from_ms)));
            let (ch, style) = match seg.kind {
                SegmentKind::Lease => ('━', t.lane(seg.id)),
                SegmentKind::Unowned => ('┄', t.unowned),
                SegmentKind::DeadLease => ('░', t.dead_lease),
            };
            for c in from_c..=to_c {
                put(&mut grid, c, ch, style);
            }
            // Label the stretch with the message number when it is long enough to read.
            let label = seg.key.rsplit('-').next().unwrap_or(&seg.key);
            let len = (to_c - from_c + 1) as usize;
            if seg.kind != SegmentKind::DeadLease && len >= label.len() + 2 {
                for (i, ch) in label.chars().enumerate() {
                    put(&mut grid, from_c + 1 + i as i64, ch, style);
                }
            }
        }
        // Ends go on top of every stretch, so a crash is not hidden under its dead lease.
        for seg in &lane.segments {
            if let Some(end) = seg.end {
                let to = seg.to_ms.unwrap_or(app.now_ms);
                let style = match end {
                    MarkKind::Finalized => t.good,
                    MarkKind::Marked => t.warn,
                    _ => t.bad,
                };
                put(
                    &mut grid,
                    col(to).max(col(seg.from_ms)) + 1,
                    end.symbol(),
                    style,
                );
            }
        }
        for m in &lane.marks {
            put(&mut grid, col(m.at_ms), m.kind.symbol(), t.warn);
        }
    }
    // Merge neighbouring cells of one style into one span.
    let mut spans: Vec<Span> = Vec::new();
    let mut run = String::new();
    let mut run_style = None;
    for (ch, style) in grid {
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
