//! The ledgers: the same fold over engine events that the reports print.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane, styled};
use crate::ui::snapshot::{all_passed, LedgerFigures, Snapshot};
use crate::ui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    let l = &s.figures;
    let block = pane(" Ledgers ", t, false).title_bottom(verdict_title(s, t));
    let inner = block.inner(area);
    let width = inner.width as usize;
    let mut lines = vec![claims_line(l, t, width >= 44)];
    lines.extend(figure_lines(l, t, width, inner.height as usize));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The history checker's verdict once the outbox has drained, as the reports give it;
/// it sits in the bottom border so the figures keep every row.
fn verdict_title(s: &Snapshot, t: &Theme) -> Line<'static> {
    let (verdict, style) = match &s.history {
        None => ("after the drain".to_string(), t.dim),
        Some(_) if all_passed(&s.checks) => ("clean".to_string(), t.good),
        Some(h) if h.problems() == 1 => ("1 problem".to_string(), t.bad),
        Some(h) => (format!("{} problems", h.problems()), t.bad),
    };
    Line::from(vec![
        Span::raw(" history check "),
        styled(verdict, style),
        Span::raw(" "),
    ])
    .right_aligned()
}

/// A figure as shown: `-` when the dashboard cannot know it.
fn shown(n: u64, unknown: bool) -> String {
    if unknown {
        "-".to_string()
    } else {
        n.to_string()
    }
}

fn claims_line(l: &LedgerFigures, t: &Theme, wide: bool) -> Line<'static> {
    let unknown = l.unknown.claims;
    let mut line = Line::from(vec![
        Span::raw(if wide { "claims  ok " } else { "claims ok " }),
        styled(l.claims_ok.to_string(), t.good),
        Span::raw(" · empty "),
        Span::raw(shown(l.claims_empty, unknown)),
        Span::raw(" · blocked "),
        styled(
            shown(l.claims_blocked, unknown),
            if l.claims_blocked > 0 { t.warn } else { t.base },
        ),
    ]);
    if wide && l.idle_polls > 0 && !unknown {
        line.push_span(styled(format!(" · idle {}", l.idle_polls), t.dim));
    }
    line
}

/// The processing figures, one a line, with how the story got here when `rows` allow.
fn figure_lines(l: &LedgerFigures, t: &Theme, width: usize, rows: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let bad_if = |n: u64| if n > 0 { t.bad } else { t.base };
    let mut figures = vec![
        ("processing attempts", l.processing_attempts, t.base),
        ("provider status checks", l.provider_checks, t.base),
        ("duplicates", l.duplicates, bad_if(l.duplicates)),
        (
            "rejected finalizes",
            l.rejected_finalizes,
            bad_if(l.rejected_finalizes),
        ),
        (
            "ownership violations",
            l.ownership_violations,
            bad_if(l.ownership_violations),
        ),
    ];
    // Extra lines for taller screens: how the story got here.
    let extra = [
        ("reclaims after expiry", l.reclaims, t.warn),
        ("results written", l.results_written, t.base),
        ("crashes", l.crashes, t.base),
        ("restarts", l.restarts, t.base),
    ];
    let news = reliability_lines(l, t);
    let room = rows.saturating_sub(6 + news.len());
    let short = room < extra.len();
    if short {
        // Attempts and provider checks share a line so the reclaims line fits too.
        figures.drain(..2);
        lines.push(attempts_line(l));
    }
    if rows < 6 {
        // A projector's 80x24: duplicates and rejections share a line, so the log gets rows.
        lines.extend(paired_safety_lines(l, t));
        figures.clear();
    }
    figures.extend(extra.into_iter().take(if short { 0 } else { room }));
    for (label, n, style) in figures {
        let unknown = l.unknown.crashes && matches!(label, "crashes" | "restarts");
        let mut number = shown(n, unknown);
        let mut label = label;
        // An idempotent provider answers repeats without a new side effect: show both.
        if label == "provider status checks" && l.provider_idempotent {
            label = "provider calls / effects";
            number = format!("{n} / {}", l.provider_effects);
        }
        lines.push(figure(label, number, style, width));
    }
    lines.extend(news);
    // Too few rows for a line each: how the story got here still shows, on one line.
    if short {
        lines.push(story_line(l, t));
    }
    lines
}

/// Retries, dead letters and heartbeats: a line each once they happened.
fn reliability_lines(l: &LedgerFigures, t: &Theme) -> Vec<Line<'static>> {
    let mut news = Vec::new();
    if l.retries + l.dead_letters > 0 {
        news.push(Line::from(vec![
            Span::raw(format!("retries {} · dead letters ", l.retries)),
            styled(
                format!("{} ({} now)", l.dead_letters, l.dead_now),
                if l.dead_now > 0 { t.bad } else { t.base },
            ),
        ]));
    }
    if l.heartbeats + l.leases_lost > 0 {
        news.push(Line::from(vec![
            Span::raw(format!("heartbeats {} · leases lost ", l.heartbeats)),
            styled(
                l.leases_lost.to_string(),
                if l.leases_lost > 0 { t.bad } else { t.base },
            ),
        ]));
    }
    news
}

/// Attempts and provider checks on one line.
fn attempts_line(l: &LedgerFigures) -> Line<'static> {
    let provider = if l.provider_idempotent {
        format!(
            " · calls {} / effects {}",
            l.provider_checks, l.provider_effects
        )
    } else {
        format!(" · provider checks {}", l.provider_checks)
    };
    Line::from(vec![
        Span::raw(format!("attempts {}", l.processing_attempts)),
        Span::raw(provider),
    ])
}

/// Ownership violations on a line, duplicates and rejected finalizes paired on the next.
fn paired_safety_lines(l: &LedgerFigures, t: &Theme) -> [Line<'static>; 2] {
    let bad_if = |n: u64| if n > 0 { t.bad } else { t.base };
    [
        Line::from(vec![
            Span::raw("ownership violations "),
            styled(
                l.ownership_violations.to_string(),
                bad_if(l.ownership_violations),
            ),
        ]),
        Line::from(vec![
            Span::raw("duplicates "),
            styled(l.duplicates.to_string(), bad_if(l.duplicates)),
            Span::raw(" · rejected "),
            styled(
                l.rejected_finalizes.to_string(),
                bad_if(l.rejected_finalizes),
            ),
        ]),
    ]
}

/// Reclaims, crashes and restarts on one line.
fn story_line(l: &LedgerFigures, t: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::raw("reclaims "),
        styled(
            l.reclaims.to_string(),
            if l.reclaims > 0 { t.warn } else { t.base },
        ),
        Span::raw(", crashes "),
        Span::raw(shown(l.crashes, l.unknown.crashes)),
        Span::raw(", restarts "),
        Span::raw(shown(l.restarts, l.unknown.crashes)),
    ])
}

/// A label on the left and its value on the right edge of a `width` wide line.
fn figure(label: &str, value: String, style: Style, width: usize) -> Line<'static> {
    let pad = width.saturating_sub(label.len() + value.len()).max(1);
    Line::from(vec![
        Span::raw(label.to_string()),
        Span::raw(" ".repeat(pad)),
        styled(value, style),
    ])
}
