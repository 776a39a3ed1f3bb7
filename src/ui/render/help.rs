//! The help overlay: every binding, grouped, from the same list as the footer.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, styled};
use crate::ui::keys::{self, Section};
use crate::ui::snapshot::Snapshot;
use crate::ui::theme::Theme;

const LABEL_W: usize = 10;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    let in_lesson = s.lesson.is_some();
    let mut lines = help_lines(t, in_lesson, true);
    if lines.len() as u16 + 2 > area.height {
        // A short terminal: drop the spacing and the footnote rather than bindings.
        lines = help_lines(t, in_lesson, false);
    }
    let width = lines.iter().map(|l| l.width()).max().unwrap_or(40) as u16 + 4;
    let height = lines.len() as u16 + 2;
    let popup = area.centered(
        Constraint::Length(width.min(area.width)),
        Constraint::Length(height.min(area.height)),
    );
    frame.render_widget(Clear, popup);
    let block = pane(" Keys (? or Esc closes; Esc never quits) ", t, true);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

fn help_lines(t: &Theme, in_lesson: bool, roomy: bool) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = Vec::new();
    for section in Section::ALL {
        if roomy && !lines.is_empty() {
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
    if roomy {
        lines.push(Line::raw(""));
        for text in [
            "The table is read from SQLite (read-only); ledgers, timeline and events come from the workers' events.",
            "Ver: the row's lease version in SQLite. ┊Runs: times the event ledger saw it processed (not in SQLite).",
            "Timeline: ━ lease ┄ no lease ░ dead lease ✗ crash ! blocked ✓ done × rejected L loaded ↻ restarted.",
            "Workers: `PAY-002 no lease +N`: a worker without leases holds N more loaded rows.",
        ] {
            lines.push(Line::from(styled(text, t.dim)));
        }
    }
    lines
}
