//! The event log: newest last; scrolled back, it stays where the reader left it.

use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};
use ratatui::Frame;

use super::{pane, styled};
use crate::engine::clock::hms;
use crate::ui::log::{LogLine, Tone};
use crate::ui::snapshot::Snapshot;
use crate::ui::state::{Focus, UiState};
use crate::ui::theme::Theme;

/// Columns before a line's text: its time, its actor and two spaces.
const LEAD: usize = 12 + 1 + 10 + 1;

/// One log line as rows: the time and actor, then its text wrapped to `width` under itself,
/// in `most` rows at the most (the last then ends in `…`).
fn entry(l: &LogLine, width: usize, most: usize, t: &Theme) -> Vec<Line<'static>> {
    let style = match l.tone {
        Tone::Plain => t.base,
        Tone::Good => t.good,
        Tone::Warn => t.warn,
        Tone::Bad => t.bad,
        Tone::Dim => t.dim,
        Tone::Teacher => t.key,
    };
    let mut text = l.text.clone();
    if l.repeat > 1 {
        text.push_str(&format!(" (x{})", l.repeat));
    }
    let mut parts = if width >= 12 {
        super::sql::wrap(&text, width)
    } else {
        vec![text]
    };
    if parts.len() > most {
        parts.truncate(most);
        if let Some(last) = parts.last_mut() {
            *last = super::fit(&format!("{last} …"), width);
        }
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let lead = if i == 0 {
                vec![
                    styled(hms(l.at_ms), t.dim),
                    Span::raw(" "),
                    styled(super::pad(&l.actor, 10), t.header),
                    Span::raw(" "),
                ]
            } else {
                vec![Span::raw(" ".repeat(LEAD))]
            };
            let mut spans = lead;
            spans.push(styled(part, style));
            Line::from(spans)
        })
        .collect()
}

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
    let inner = block.inner(area);
    let rows = inner.height as usize;
    let end = total.saturating_sub(log.back);
    let first = end.saturating_sub(rows);
    // Newest last, each line whole: a long one wraps under its own text, and the oldest
    // of the page gives way to it. Only a line taller than the pane is cut.
    let text_w = (inner.width as usize).saturating_sub(LEAD);
    // One line takes at most half the pane (two rows at least), so one long verdict
    // does not hide the lines before it.
    let most = (rows / 2).max(2);
    let mut lines: Vec<Line> = Vec::new();
    for l in log.lines.iter().rev() {
        let room = rows.saturating_sub(lines.len());
        if room == 0 {
            break;
        }
        // An older line that does not fit whole shows its start, cut in the rows left.
        lines.splice(0..0, entry(l, text_w, most.min(room), t));
    }
    lines.truncate(rows);
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
