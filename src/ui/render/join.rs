//! The command students type to join, whole, in a box over the bottom of the watch until
//! the first worker joins: at 80 columns the strip above has room for its start only.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, sql::wrap, styled};
use crate::ui::theme::Theme;

/// What the box says under the command.
const PASSWORD: &str = "the password goes in PGPASSWORD (export PGPASSWORD=...), never in the URL";

/// Draws the box at the bottom of `area` (the rows below the table), as tall as the
/// command needs wrapped to its width; nothing where the whole command has no room.
pub fn render(frame: &mut Frame, area: Rect, command: &str, t: &Theme) {
    let inner_w = area.width.saturating_sub(2) as usize;
    if inner_w < 20 {
        return;
    }
    let command = wrap(command, inner_w);
    let password = wrap(PASSWORD, inner_w);
    let room = area.height.saturating_sub(2) as usize;
    if command.len() > room {
        return;
    }
    let mut lines: Vec<Line> = command
        .into_iter()
        .map(|l| Line::from(styled(l, t.next_mover)))
        .collect();
    if lines.len() + password.len() <= room {
        lines.extend(password.into_iter().map(|l| Line::from(styled(l, t.dim))));
    }
    let height = lines.len() as u16 + 2;
    let at = Rect {
        y: area.y + area.height - height,
        height,
        ..area
    };
    frame.render_widget(Clear, at);
    frame.render_widget(
        Paragraph::new(lines).block(pane(" students join with ", t, true)),
        at,
    );
}
