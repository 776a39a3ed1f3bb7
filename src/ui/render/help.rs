//! The help overlay: every binding of the screen's mode, grouped, from the same list as the
//! footer, and what the screen's marks and words mean.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, styled};
use crate::ui::keys::{self, Mode, Section};
use crate::ui::snapshot::Snapshot;
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

const LABEL_W: usize = 10;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let lines = help_lines(t, s.mode);
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

/// Lines the help of `mode` holds, so a key can scroll it no further than its end.
pub fn line_count(mode: Mode) -> usize {
    help_lines(&Theme::plain(), mode).len()
}

/// The label and line of a binding in `mode`'s help; None for the second of a pair, which
/// shares the line of the first (so the overlay still fits 80x24).
fn entry(b: &keys::Binding, mode: Mode) -> Option<(&'static str, &'static str)> {
    use keys::Action::*;
    Some(match b.action {
        StepBack | ToggleHeartbeats | Redrive | Restart => return None,
        Crash if mode == Mode::Processes => (
            "c / r",
            "SIGKILL the selected worker process (its lease stays) / start a new one",
        ),
        Crash => (
            "c / r",
            "crash the selected worker (its lease stays) / restart it as #2",
        ),
        ToggleLeasing => (
            "l / h",
            "switch leasing / heartbeats on or off (at the next worker cycle)",
        ),
        AddPayment => (
            "p / D",
            "add a payment and its outbox row / redrive every dead letter",
        ),
        Step if mode == Mode::Lesson => (
            "n / b",
            "one lesson step forward / back (back reseeds and replays)",
        ),
        _ => (b.label, b.help_in(mode)),
    })
}

fn help_lines(t: &Theme, mode: Mode) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = Vec::new();
    for section in Section::ALL {
        let entries: Vec<_> = keys::help_entries(mode)
            .filter(|b| b.section == section)
            .filter_map(|b| entry(b, mode))
            .collect();
        if entries.is_empty() {
            continue;
        }
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        lines.push(Line::from(styled(section.title(), t.title)));
        for (label, help) in entries {
            lines.push(Line::from(vec![
                Span::raw("  "),
                styled(format!("{label:<LABEL_W$}"), t.key),
                Span::raw(help),
            ]));
        }
    }
    lines.push(Line::raw(""));
    let source: &[&str] = match mode {
        Mode::Replay => &[
            "The table is rebuilt from the recorded events up to this one; so are",
            "the ledgers, timeline and log. Nothing a row did not record is shown.",
        ],
        _ => &[
            "The table is read from the database (read-only); ledgers, timeline and",
            "events come from the workers' events.",
        ],
    };
    let legend = [
        "Ver: the row's lease version in the database. ┊Runs: times the event",
        "ledger saw it processed (not in the database).",
        "Timeline: ━ lease ┄ no lease ░ dead lease ✗ crash ! blocked ✓ done",
        "× rejected L loaded ↻ restarted.",
    ];
    for text in source
        .iter()
        .chain(legend.iter())
        .chain(workers_legend(mode))
    {
        lines.push(Line::from(styled(*text, t.dim)));
    }
    lines
}

/// What the workers pane's marks and words mean on this screen.
fn workers_legend(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Free | Mode::Lesson => &[
            "Workers: ▶ selected, → moves at the next n. CRASHED: crashed holding",
            "what it held. FROZEN: frozen holding its lease. `PAY-002 no lease +N`:",
            "a worker without leases holds N more loaded rows.",
        ],
        Mode::Replay | Mode::Watch => &[
            "Workers (as their rows recorded them): ▶ selected. CRASHED: a crash was",
            "recorded. FROZEN: a freeze was. left: stopped between actions (Ctrl-C).",
            "unknown: its lease ran out or was taken, and nothing recorded says why.",
        ],
        Mode::Processes => &[
            "Workers: ▶ selected. held: waits for the first space. FROZEN: stopped",
            "with SIGSTOP. CRASHED: killed, or ended on its own. unknown: its lease",
            "ran out or was taken, and nothing recorded says why.",
        ],
    }
}
