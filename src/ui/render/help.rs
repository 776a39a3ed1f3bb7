//! The help overlay: every binding, grouped, from the same list as the footer.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, styled};
use crate::ui::keys::{self, Section};
use crate::ui::snapshot::Snapshot;
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

const LABEL_W: usize = 10;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let lines = help_lines(t, s.lesson.is_some());
    let total = lines.len() as u16;
    let width = lines.iter().map(|l| l.width()).max().unwrap_or(40) as u16 + 4;
    let height = (total + 2).min(area.height);
    let shown = height.saturating_sub(2);
    let offset = ui.help_offset.min(total.saturating_sub(shown));
    let popup = area.centered(
        Constraint::Length(width.min(area.width)),
        Constraint::Length(height),
    );
    frame.render_widget(Clear, popup);
    let title = if shown < total {
        format!(
            " Keys {}-{} of {total} · ↑/↓ PgUp/PgDn scroll · ? or Esc closes ",
            offset + 1,
            offset + shown
        )
    } else {
        " Keys (? or Esc closes; Esc never quits) ".to_string()
    };
    let block = pane(title, t, true);
    frame.render_widget(
        Paragraph::new(lines).block(block).scroll((offset, 0)),
        popup,
    );
}

/// Lines the help holds, so a key can scroll it no further than its end.
pub fn line_count(in_lesson: bool) -> usize {
    help_lines(&Theme::plain(), in_lesson).len()
}

fn help_lines(t: &Theme, in_lesson: bool) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = Vec::new();
    for section in Section::ALL {
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        lines.push(Line::from(styled(section.title(), t.title)));
        for b in keys::help_entries().filter(|b| b.section == section) {
            // A lesson's step back shares the line of its step forward.
            let (label, help) = match b.action {
                keys::Action::StepBack
                | keys::Action::ToggleHeartbeats
                | keys::Action::Redrive
                | keys::Action::Restart => continue,
                keys::Action::Crash => (
                    "c / r",
                    "crash the selected worker (its lease stays) / restart it as #2",
                ),
                // Pairs share a line so the overlay still fits 80x24.
                keys::Action::ToggleLeasing => (
                    "l / h",
                    "switch leasing / heartbeats on or off (at the next worker cycle)",
                ),
                keys::Action::AddPayment => (
                    "p / D",
                    "add a payment and its outbox row / redrive every dead letter",
                ),
                keys::Action::Step if in_lesson => (
                    "n / b",
                    "one lesson step forward / back (back reseeds and replays)",
                ),
                _ => (b.label, b.help),
            };
            lines.push(Line::from(vec![
                Span::raw("  "),
                styled(format!("{label:<LABEL_W$}"), t.key),
                Span::raw(help),
            ]));
        }
    }
    lines.push(Line::raw(""));
    for text in [
        "The table is read from SQLite (read-only); ledgers, timeline and events",
        "come from the workers' events.",
        "Ver: the row's lease version in SQLite. ┊Runs: times the event ledger saw",
        "it processed (not in SQLite).",
        "Timeline: ━ lease ┄ no lease ░ dead lease ✗ crash ! blocked ✓ done",
        "× rejected L loaded ↻ restarted.",
        "Workers: `PAY-002 no lease +N`: a worker without leases holds N more",
        "loaded rows.",
    ] {
        lines.push(Line::from(styled(text, t.dim)));
    }
    lines
}
