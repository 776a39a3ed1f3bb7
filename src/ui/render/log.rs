//! The event log: newest last; scrolled back, it stays where the reader left it.

use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};
use ratatui::Frame;

use super::{pane, styled};
use crate::engine::clock::hms;
use crate::ui::log::Tone;
use crate::ui::snapshot::Snapshot;
use crate::ui::state::{Focus, UiState};
use crate::ui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let log = &s.log;
    let total = log.total;
    let title = if log.back > 0 {
        let lines = if log.back == 1 { "line" } else { "lines" };
        format!(" Events (scrolled back {} {lines}, End follows) ", log.back)
    } else {
        " Events ".to_string()
    };
    let block = pane(title, t, ui.focus == Focus::Log);
    let rows = block.inner(area).height as usize;
    let end = total.saturating_sub(log.back);
    let first = end.saturating_sub(rows);
    // The snapshot holds the page ending at `end`; this pane may show fewer of them.
    let shown = log.lines.len().min(rows);
    let lines: Vec<Line> = log.lines[log.lines.len() - shown..]
        .iter()
        .map(|l| {
            let style = match l.tone {
                Tone::Plain => t.base,
                Tone::Good => t.good,
                Tone::Warn => t.warn,
                Tone::Bad => t.bad,
                Tone::Dim => t.dim,
                Tone::Teacher => t.key,
            };
            let mut spans = vec![
                styled(hms(l.at_ms), t.dim),
                Span::raw(" "),
                styled(super::pad(&l.actor, 10), t.header),
                Span::raw(" "),
                styled(l.text.clone(), style),
            ];
            if l.repeat > 1 {
                spans.push(styled(format!(" (x{})", l.repeat), t.dim));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
    if total > rows {
        let mut state = ScrollbarState::new(total.saturating_sub(rows)).position(first);
        frame.render_stateful_widget(
            Scrollbar::new(ScrollbarOrientation::VerticalRight),
            area.inner(Margin::new(0, 1)),
            &mut state,
        );
    }
}
