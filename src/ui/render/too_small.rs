//! Below the minimum size the dashboard says so instead of drawing a garbled screen.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{MIN_HEIGHT, MIN_WIDTH};
use crate::ui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, t: &Theme) {
    let text = format!(
        "terminal too small (need {MIN_WIDTH} x {MIN_HEIGHT}, have {} x {})",
        area.width, area.height
    );
    let lines = vec![
        Line::from(text).style(t.bad).centered(),
        Line::from("enlarge the window, or press q to quit").centered(),
    ];
    let middle = area.centered_vertically(Constraint::Length(3));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), middle);
}
