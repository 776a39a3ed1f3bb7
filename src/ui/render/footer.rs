//! The footer: key hints from the one list of bindings, every one of the screen's own; on a
//! narrow screen they wrap onto a second line rather than drop off the end.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::styled;
use crate::ui::keys::{self, Mode};
use crate::ui::snapshot::Snapshot;
use crate::ui::theme::Theme;

/// Width of one hint as drawn: ` label hint`.
fn hint_width(b: &keys::Binding, hint: &str) -> usize {
    1 + b.label.chars().count() + 1 + hint.chars().count()
}

/// Below this height a lesson's footer keeps to one line, so the narration and three
/// event lines fit (the help lists every key).
const TWO_LINES_FROM: u16 = 30;

/// The hint of `b` as the footer shows it now: space says `run` while paused, and `start`
/// while worker processes are held.
fn hint(b: &keys::Binding, mode: Mode, paused: bool, held: bool) -> &'static str {
    match (b.action == keys::Action::TogglePause, mode) {
        (true, Mode::Processes) if held => "start",
        (true, Mode::Free | Mode::Lesson) if paused => "run",
        _ => b.hint_in(mode),
    }
}

/// Lines the footer takes on a screen this size, counting the widest case (paused): one
/// when every hint of the mode fits or a lesson's screen is short, else two.
pub fn height(width: u16, height: u16, mode: Mode) -> u16 {
    if mode == Mode::Lesson && height < TWO_LINES_FROM {
        return 1;
    }
    let all: usize = keys::footer_entries(mode)
        .map(|b| hint_width(b, hint(b, mode, true, true)))
        .sum();
    if all <= width as usize {
        1
    } else {
        2
    }
}

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    let mut lines: Vec<Line> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0usize;
    for b in keys::footer_entries(s.mode) {
        let hint = hint(b, s.mode, s.paused, s.held);
        let width = hint_width(b, hint);
        if used + width > area.width as usize {
            if lines.len() + 1 >= area.height as usize {
                break;
            }
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        used += width;
        spans.push(Span::raw(" "));
        spans.push(styled(b.label, t.key));
        spans.push(Span::raw(format!(" {hint}")));
    }
    lines.push(Line::from(spans));
    frame.render_widget(Paragraph::new(lines), area);
}
