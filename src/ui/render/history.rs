//! The overlay of one message's own history (Enter on a table row): its claims, provider
//! calls, finalizes and rejections as the ledger folded them, newest last.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{fit, pane, styled};
use crate::engine::clock::hms;
use crate::ui::snapshot::MessageHistoryView;
use crate::ui::theme::Theme;

/// Widest the overlay grows: time, actor and the longest step line.
const MAX_W: u16 = 90;

pub fn render(frame: &mut Frame, area: Rect, h: &MessageHistoryView, t: &Theme) {
    let width = MAX_W.min(area.width);
    let inner_w = width.saturating_sub(2) as usize;
    // Header line, the steps, a blank line and the totals; the oldest steps go first.
    let room = area.height.saturating_sub(4 + 2) as usize;
    let hidden = h.lines.len().saturating_sub(room);
    let mut lines: Vec<Line> = Vec::new();
    let heading = if hidden > 0 {
        format!("{} earlier steps above; newest last", hidden)
    } else if h.lines.is_empty() {
        "no claim yet: still Pending, as seeded".to_string()
    } else {
        "from the ledger, in SQLite's commit order".to_string()
    };
    lines.push(Line::from(styled(fit(&heading, inner_w), t.dim)));
    for (at, actor, text) in h.lines.iter().skip(hidden) {
        let style = if text.starts_with("FINALIZED") {
            t.good
        } else if text.starts_with("FINALIZE REJECTED") || text.starts_with("took it") {
            t.bad
        } else if text.starts_with("RECLAIMED") || text.starts_with("MARKED") {
            t.warn
        } else {
            t.base
        };
        let line = format!("{} {} {text}", hms(*at), super::pad(actor, 10));
        lines.push(Line::from(styled(fit(&line, inner_w), style)));
    }
    lines.push(Line::raw(""));
    let totals = format!(
        "claims {} · provider calls {} · processed {} · rejected {}",
        h.claims, h.attempts, h.runs, h.rejected
    );
    let runs_style = if h.runs > 1 { t.duplicate } else { t.base };
    lines.push(Line::from(vec![
        Span::raw(""),
        styled(fit(&totals, inner_w), runs_style),
    ]));
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
    frame.render_widget(Clear, popup);
    let title = format!(" {} (message {}) · Esc closes ", h.key, h.id);
    frame.render_widget(Paragraph::new(lines).block(pane(title, t, true)), popup);
}
