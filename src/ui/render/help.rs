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
/// A binding's words per line: with its indent and label, 76 columns, which an 80-column
/// overlay holds inside its borders.
const HELP_W: usize = 76 - 2 - LABEL_W;

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

/// The help of `mode` as plain text, a line each, as the overlay holds it.
pub fn text(mode: Mode) -> String {
    let lines = help_lines(&Theme::plain(), mode);
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    text.join("\n")
}

/// The label and line of a binding in `mode`'s help; None for the second of a pair, which
/// shares the line of the first (so the overlay still fits 80x24).
fn entry(b: &keys::Binding, mode: Mode) -> Option<(&'static str, &'static str)> {
    use keys::Action::*;
    Some(match b.action {
        StepBack | ToggleHeartbeats | Redrive | Restart => return None,
        Crash if mode == Mode::Processes => (
            "c / r",
            concat!(
                crate::platform::children::kill_word!(),
                " the selected worker process (its lease stays) / start a new one"
            ),
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
            // Wrapped under itself, so that no line is wider than an 80-column overlay.
            for (i, part) in super::sql::wrap(help, HELP_W).into_iter().enumerate() {
                let label = if i == 0 { label } else { "" };
                lines.push(Line::from(vec![
                    Span::raw("  "),
                    styled(format!("{label:<LABEL_W$}"), t.key),
                    Span::raw(part),
                ]));
            }
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
        "Header: x1 the clock's speed; ♥on / ♥OFF heartbeats on or off.",
        "Ledgers: each figure as lesson files name it (leaselab lessons",
        "--reference lists them); empty: a claim that found nothing while work",
        "remained; idle: claims after the outbox drained.",
        "Ver: the row's lease version in the database. ┊Processed: times the",
        "event ledger saw it processed (not in the database).",
        "Timeline: ━ lease ┄ no lease ░ dead lease ✗ crash ! blocked ✓ done",
        "× rejected L loaded ↻ restarted.",
    ];
    for text in source
        .iter()
        .chain(legend.iter())
        .chain(workers_legend(mode).iter())
    {
        lines.push(Line::from(styled(*text, t.dim)));
    }
    lines
}

/// What the workers pane's marks and words mean on this screen: every one it can draw
/// there (`tests/ui_class.rs` draws them all and looks each up here).
fn workers_legend(mode: Mode) -> Vec<&'static str> {
    let states: &[&str] = match mode {
        Mode::Free | Mode::Lesson => &[
            "Workers: ▶ the selected worker; → the one the next n moves.",
            "  idle, claiming, processing, finalizing: where it is in its cycle;",
            "  paused: stopped with the clock; BLOCKED: found nothing to claim but a",
            "  message under another's live lease; FROZEN: frozen holding what it",
            "  holds (z, a lesson's freeze); CRASHED: crashed, its lease left behind;",
            "  stopped: W stopped it. (stalled) / (new): a worker that stalled, and",
            "  the new one under its name. `PAY-002 ♥300 ms ago`: the age of its",
            "  last heartbeat. `PAY-002 by Worker-A 900 ms left`: the lease it is",
            "  blocked by. `PAY-002 no lease +2`: leasing off, 2 more loaded rows.",
        ],
        Mode::Replay | Mode::Watch => &[
            "Workers, as their rows recorded them: ▶ the selected worker.",
            "  idle, processing: at work, as far as its rows say; CRASHED: a crash",
            concat!(
                "  was recorded; FROZEN: a freeze was (z, a lesson's freeze, ",
                crate::platform::children::stop_word!(),
                ");"
            ),
            "  left: stopped between actions (Ctrl-C); unknown: its lease ran out",
            "  or was taken, and nothing recorded says why.",
        ],
        Mode::Processes => &[
            "Workers: ▶ the selected worker. held: waits for the first space;",
            concat!(
                "  idle, processing: at work; FROZEN: stopped with ",
                crate::platform::children::stop_word!(),
                ", holding its"
            ),
            "  lease; CRASHED: killed, or ended on its own; left: stopped between",
            "  actions (Ctrl-C); unknown: its lease ran out or was taken, and",
            "  nothing recorded says why.",
        ],
    };
    let owns = [
        "  `PAY-002 1200 ms left`: its lease. `held PAY-002 900 ms`,",
        "  `held PAY-002 expired`: what a crashed or frozen worker still holds",
        "  (with heartbeats on, a frozen one shows its last heartbeat's age).",
        "  `taken by Worker-B`, `→ Worker-B`, `→B`: another worker took that",
        "  lease over. `-`: it holds nothing. `4 done`: results written under",
        "  its name. Narrow, the columns are state · owns · done.",
    ];
    states.iter().chain(owns.iter()).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn no_line_of_any_help_is_wider_than_an_80_column_overlay_holds() {
        for mode in [
            Mode::Free,
            Mode::Lesson,
            Mode::Replay,
            Mode::Watch,
            Mode::Processes,
        ] {
            for line in text(mode).lines() {
                assert!(
                    line.width() <= 76,
                    "{mode:?}, {} wide: {line}",
                    line.width()
                );
            }
        }
    }
}
