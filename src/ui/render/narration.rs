//! The lesson's narration panel: the step counter, what the step just did and why it
//! matters (its `say`), and each expectation as ✓ or ✗ once the step has run.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane, styled, Areas, LOG_MIN_H};
use crate::ui::snapshot::LessonView;
use crate::ui::theme::Theme;

/// Below this the panel would not hold a sentence and a row of checks.
const MIN_H: u16 = 5;

/// Take the panel's room from below the top row: first from the event log, then the
/// timeline, so the narration is always whole when the screen is big enough.
pub fn carve(a: &mut Areas, l: &LessonView, t: &Theme) -> Rect {
    let lower = Rect {
        height: a.timeline.height + a.log.height,
        ..a.timeline
    };
    let want = (lines(l, t, lower.width.saturating_sub(2)).len() as u16 + 2).max(MIN_H);
    let mut panel = Rect {
        height: want.min(lower.height),
        ..lower
    };
    // Rows too few for a log go to the panel rather than stay blank.
    if lower.height - panel.height < LOG_MIN_H {
        panel.height = lower.height;
    }
    let rest_y = panel.y + panel.height;
    let rest_h = lower.height - panel.height;
    if rest_h >= a.timeline.height + LOG_MIN_H {
        a.timeline.y = rest_y;
        a.log = Rect {
            y: rest_y + a.timeline.height,
            height: rest_h - a.timeline.height,
            ..a.log
        };
    } else {
        a.timeline.height = 0;
        a.log = Rect {
            y: rest_y,
            height: if rest_h >= LOG_MIN_H { rest_h } else { 0 },
            ..a.log
        };
    }
    panel
}

pub fn render(frame: &mut Frame, area: Rect, l: &LessonView, t: &Theme) {
    let title = format!(" Lesson step {}/{} · {} ", l.done, l.total, l.title);
    let mut block = pane(
        super::fit(&title, area.width.saturating_sub(4) as usize),
        t,
        false,
    );
    let bottom = if l.off_script {
        Some(styled(
            " the state has left the script: n or b replays it ",
            t.warn,
        ))
    } else {
        l.next_actions.as_ref().map(|next| {
            styled(
                super::fit(
                    &format!(" n: {next} "),
                    area.width.saturating_sub(4) as usize,
                ),
                t.key,
            )
        })
    };
    if let Some(b) = bottom {
        block = block.title_bottom(Line::from(b));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines(l, t, inner.width)), inner);
}

/// The panel's text, wrapped to `width`.
pub fn lines(l: &LessonView, t: &Theme, width: u16) -> Vec<Line<'static>> {
    let width = width.max(10) as usize;
    let mut out: Vec<Line> = Vec::new();
    for text in wrap(&l.say, width) {
        out.push(Line::from(text));
    }
    let Some(report) = &l.report else {
        return out;
    };
    let mut items: Vec<Span> = Vec::new();
    if let Some(e) = &report.error {
        items.push(styled(format!("✗ {e}"), t.bad));
    }
    for c in &report.checks {
        if c.passed {
            items.push(styled(format!("✓ {}", c.text), t.good));
        } else {
            items.push(styled(format!("✗ {} ({})", c.text, c.detail), t.bad));
        }
    }
    // As many checks on a line as fit, two spaces apart.
    let mut line: Vec<Span> = Vec::new();
    let mut used = 0;
    for item in items {
        let w = item.content.chars().count();
        if used > 0 && used + 2 + w > width {
            out.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        if used > 0 {
            line.push(Span::raw("  "));
            used += 2;
        }
        used += w;
        line.push(item);
    }
    if !line.is_empty() {
        out.push(Line::from(line));
    }
    out
}

/// Greedy word wrap; a word longer than the line is cut.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let n = line.chars().count();
        if n > 0 && n + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}
