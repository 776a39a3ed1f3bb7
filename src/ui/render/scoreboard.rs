//! The overlay of a class's scoreboard (`B` in the watch): one line per student, sorted
//! by done, then by the fewest rejected finalizes.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{fit, pad, pane, styled};
use crate::ui::snapshot::ScoreboardView;
use crate::ui::theme::Theme;

/// Widest the overlay grows: a name and six columns.
const MAX_W: u16 = 78;
/// Cells a name takes.
const NAME: usize = 16;

pub fn render(frame: &mut Frame, area: Rect, b: &ScoreboardView, t: &Theme) {
    let width = MAX_W.min(area.width);
    let inner_w = width.saturating_sub(2) as usize;
    let room = area.height.saturating_sub(2 + 2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    let heading = format!(
        "{} {:>5} {:>8} {:>5} {:>8} {:>5} {:>9}",
        pad("student", NAME),
        "done",
        "rejected",
        "lost",
        "reclaims",
        "dupl.",
        "unguarded"
    );
    lines.push(Line::from(styled(fit(&heading, inner_w), t.dim)));
    if let Some(e) = &b.error {
        lines.push(Line::from(styled(
            fit(&format!("not current: {e}"), inner_w),
            t.bad,
        )));
    }
    if b.scores.is_empty() {
        lines.push(Line::from(styled("nobody has claimed yet", t.dim)));
    }
    let hidden = b
        .scores
        .len()
        .saturating_sub(room.saturating_sub(lines.len()));
    for s in b.scores.iter().take(b.scores.len() - hidden) {
        let line = format!(
            "{} {:>5} {:>8} {:>5} {:>8} {:>5} {:>9}",
            pad(&s.name, NAME),
            s.done,
            s.rejected,
            s.lost,
            s.reclaims,
            s.duplicates,
            s.unguarded
        );
        let style = if s.duplicates > 0 || s.unguarded > 0 {
            t.bad
        } else if s.rejected > 0 || s.lost > 0 {
            t.warn
        } else {
            t.base
        };
        lines.push(Line::from(styled(fit(&line, inner_w), style)));
    }
    if hidden > 0 {
        lines.push(Line::from(styled(format!("{hidden} more below"), t.dim)));
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
    frame.render_widget(Clear, popup);
    let title = " scoreboard, every round · by done, then fewest rejected · B closes ";
    frame.render_widget(Paragraph::new(lines).block(pane(title, t, true)), popup);
}
