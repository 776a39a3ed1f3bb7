//! The footer: key hints from the one list of bindings, every one of them; on a narrow
//! screen they wrap onto a second line rather than drop off the end.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::styled;
use crate::ui::keys;
use crate::ui::snapshot::Snapshot;
use crate::ui::theme::Theme;

/// Width of one hint as drawn: ` label hint`.
fn hint_width(b: &keys::Binding, hint: &str) -> usize {
    1 + b.label.chars().count() + 1 + hint.chars().count()
}

/// Below this height a lesson's footer keeps to one line, so the narration and three
/// event lines fit (the help lists every key).
const TWO_LINES_FROM: u16 = 30;

/// Lines the footer takes on a screen this size, counting the widest case (a lesson,
/// paused): one when every hint fits or a lesson's screen is short, else two.
pub fn height(width: u16, height: u16, lesson: bool) -> u16 {
    if lesson && height < TWO_LINES_FROM {
        return 1;
    }
    let all: usize = keys::footer_entries()
        .map(|b| {
            let hint = if b.action == keys::Action::TogglePause {
                "run"
            } else {
                b.hint
            };
            hint_width(b, hint)
        })
        .sum();
    if all <= width as usize {
        1
    } else {
        2
    }
}

/// A replay's keys: it moves through the recording and changes nothing.
const REPLAY_KEYS: [(&str, &str); 7] = [
    ("q", "quit"),
    ("?", "help"),
    ("←/→", "event"),
    ("[/]", "mark"),
    ("Home/End", "ends"),
    ("↑/↓ j/k", "row"),
    ("⏎", "history"),
];

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    if s.replay.is_some() {
        let mut spans: Vec<Span> = Vec::new();
        for (label, hint) in REPLAY_KEYS {
            spans.push(Span::raw(" "));
            spans.push(styled(label, t.key));
            spans.push(Span::raw(format!(" {hint}")));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let mut lines: Vec<Line> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0usize;
    for b in keys::footer_entries() {
        // Stepping back exists only in a lesson.
        if b.action == keys::Action::StepBack && s.lesson.is_none() {
            continue;
        }
        let hint = if b.action == keys::Action::TogglePause && s.paused {
            "run"
        } else {
            b.hint
        };
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
