//! The lesson's narration panel: the step counter, what the step just did and why it
//! matters (its `say`), and each expectation as ✓ or ✗ once the step has run. What the
//! next `n` does is on the status strip; narration longer than the panel scrolls.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::styled;
use crate::ui::snapshot::{LessonView, QuestionView, RevealView};
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

/// The height the panel asks for on a screen `width` wide: its title and every line.
/// It has no bottom border: the pane below closes it.
pub fn want(l: &LessonView, t: &Theme, width: u16) -> u16 {
    lines(l, t, width.saturating_sub(2)).len() as u16 + 1
}

/// Joins the panel to the pane right below it: that pane's top corners become `├` and
/// `┤`, so the two read as one frame split in two rather than a box left open. Call it once
/// every pane is drawn.
pub fn join_below(frame: &mut Frame, area: Rect) {
    let y = area.y + area.height;
    if area.height == 0 || area.width < 2 || y >= frame.area().height {
        return;
    }
    let right = area.x + area.width - 1;
    let buf = frame.buffer_mut();
    for (x, corner, tee) in [(area.x, "┌", "├"), (right, "┐", "┤")] {
        if let Some(cell) = buf.cell_mut((x, y)) {
            if cell.symbol() == corner {
                cell.set_symbol(tee);
            }
        }
    }
}

/// Lines of the narration below the panel's bottom when `shown` fit.
pub fn hidden(l: &LessonView, t: &Theme, width: u16, shown: u16) -> u16 {
    (lines(l, t, width.saturating_sub(2)).len() as u16).saturating_sub(shown)
}

pub fn render(frame: &mut Frame, area: Rect, l: &LessonView, ui: &UiState, t: &Theme) {
    if area.height == 0 {
        return;
    }
    let kind = if l.story { "Story" } else { "Lesson" };
    // A question belongs to the step it asks about, as a recording's marker and --check
    // count it: the panel says so while it waits for the prediction.
    let title = match &l.question {
        Some(_) => format!(
            " {kind} step {}/{}: its question · {} ",
            l.done + 1,
            l.total,
            l.title
        ),
        None => format!(" {kind} step {}/{} · {} ", l.done, l.total, l.title),
    };
    let text = lines(l, t, area.width.saturating_sub(2));
    let shown = area.height.saturating_sub(1);
    let more = (text.len() as u16).saturating_sub(shown);
    let offset = ui.narration_scroll.min(more);
    let mut block = Block::new()
        .borders(Borders::TOP | Borders::LEFT | Borders::RIGHT)
        .border_style(t.border);
    let mut room = area.width.saturating_sub(4) as usize;
    if more > 0 {
        // Which way the rest is, and the keys that show it.
        let hint = match (offset > 0, offset < more) {
            (true, true) => format!(" ↑↓ {} more · PgUp/PgDn ", more),
            (false, _) => format!(" ↓ {} more · PgDn ", more - offset),
            (true, false) => " ↑ PgUp ".to_string(),
        };
        room = room.saturating_sub(hint.chars().count() + 1);
        block = block.title(Line::from(styled(hint, t.key)).right_aligned());
    }
    block = block.title(Line::from(styled(super::fit(&title, room), t.title)).left_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(text).scroll((offset, 0)), inner);
}

/// The panel's text, wrapped to `width`.
pub fn lines(l: &LessonView, t: &Theme, width: u16) -> Vec<Line<'static>> {
    let width = width.max(10) as usize;
    let mut out: Vec<Line> = Vec::new();
    // A question waiting for a prediction has the panel to itself.
    if let Some(q) = &l.question {
        return question_lines(q, t, width);
    }
    if let Some(r) = &l.reveal {
        out.extend(reveal_lines(r, t, width));
    }
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
    // A question's own check is the reveal line above.
    for c in report
        .checks
        .iter()
        .filter(|c| c.answer.is_none() || !c.passed)
    {
        if c.passed {
            items.push(styled(format!("✓ {}", c.text), t.good));
        } else {
            items.push(styled(format!("✗ {} ({})", c.text, c.detail), t.bad));
        }
    }
    // As many checks on a line as fit, two spaces apart.
    out.extend(super::pack(
        items.into_iter().map(|i| vec![i]).collect(),
        "  ",
        width,
    ));
    out
}

/// The question the next step answers, its choices numbered, the prediction marked.
fn question_lines(q: &QuestionView, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, text) in wrap(&format!("Predict: {}", q.ask), width)
        .into_iter()
        .enumerate()
    {
        out.push(Line::from(styled(
            text,
            if i == 0 { t.title } else { t.key },
        )));
    }
    for (i, c) in q.choices.iter().enumerate() {
        let chosen = q.prediction == Some(i);
        let mark = if chosen { "▶" } else { " " };
        for (j, text) in wrap(c, width.saturating_sub(4)).into_iter().enumerate() {
            let lead = if j == 0 {
                format!("{mark}{} ", i + 1)
            } else {
                "   ".to_string()
            };
            let style = if chosen { t.next_mover } else { t.dim };
            out.push(Line::from(vec![styled(lead, t.key), styled(text, style)]));
        }
    }
    let hint = match q.prediction {
        Some(p) => format!("you predict {}: n reveals", p + 1),
        None => format!("press 1-{} to predict, then n reveals", q.choices.len()),
    };
    out.push(Line::from(styled(hint, t.dim)));
    out
}

/// Whether the prediction was right, and the answer the engine shows.
fn reveal_lines(r: &RevealView, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let answer = match r.answer {
        Some(a) => format!("{}: {}", a + 1, r.answer_text),
        None => "none: no single choice held".to_string(),
    };
    let (text, style) = match (r.predicted, r.answer) {
        (Some(p), Some(a)) if p == a => (format!("✓ You predicted {answer}. Right."), t.good),
        (Some(p), _) => (
            format!("✗ You predicted {}; the answer is {answer}.", p + 1),
            t.bad,
        ),
        (None, _) => (format!("No prediction; the answer is {answer}."), t.title),
    };
    wrap(&text, width)
        .into_iter()
        .map(|l| Line::from(styled(l, style)))
        .collect()
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
