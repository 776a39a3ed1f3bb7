//! The footer: key hints from the one list of bindings, as many as fit.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::styled;
use crate::ui::keys;
use crate::ui::snapshot::Snapshot;
use crate::ui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0usize;
    for b in keys::footer_entries() {
        // Stepping back exists only in a lesson.
        if b.action == keys::Action::StepBack && s.lesson.is_none() {
            continue;
        }
        let hint = if b.action == keys::Action::TogglePause && s.paused {
            "resume"
        } else {
            b.hint
        };
        let width = 1 + b.label.chars().count() + 1 + hint.len();
        if used + width > area.width as usize {
            break;
        }
        used += width;
        spans.push(Span::raw(" "));
        spans.push(styled(b.label, t.key));
        spans.push(Span::raw(format!(" {hint}")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
