//! The workers panel: one line per worker with its state, what it owns, how many it
//! finished. `▶` marks the selected worker, `→` the one a single step moves next.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit, ms_label, pane, styled};
use crate::engine::ledger::HistoryStep;
use crate::engine::worker::{base_name, WorkerState};
use crate::ui::app::{App, WorkerView};

/// Inner width from which a line has room for countdowns and words.
const WIDE: u16 = 50;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let block = pane(" Workers ", app, false);
    let inner = block.inner(area);
    let wide = inner.width >= WIDE;
    let block = if wide {
        block
    } else {
        block.title(styled(" state · owns · done ", app.theme.dim))
    };
    let rows = inner.height as usize;
    // Keep the selected worker in view when there are more workers than lines.
    let first = app.selected.saturating_sub(rows.saturating_sub(1));
    let next = if app.paused { app.next_mover() } else { None };
    let lines: Vec<Line> = app
        .workers
        .iter()
        .skip(first)
        .take(rows)
        .map(|w| line(w, app, inner.width as usize, wide, next == Some(w.slot)))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn line<'a>(w: &WorkerView, app: &App, width: usize, wide: bool, next: bool) -> Line<'a> {
    let t = &app.theme;
    let selected = w.slot == app.selected;
    let s = &w.status;
    let state_style = match s.state {
        WorkerState::Crashed | WorkerState::Stopped => t.crashed,
        WorkerState::Paused => t.dim,
        WorkerState::Idle => t.base,
        _ => t.processing,
    };
    // A worker a lesson froze (a long pause) is not just waiting for a step.
    let frozen = app
        .lesson
        .as_ref()
        .is_some_and(|l| l.runner.frozen.contains(&w.slot) && w.alive());
    let (state_label, state_style) = if frozen {
        ("FROZEN", t.warn)
    } else {
        (s.state.label(), state_style)
    };
    let done = app
        .ledger
        .per_worker
        .get(base_name(&s.name))
        .copied()
        .unwrap_or(0);
    let done = if wide {
        format!("{done} done")
    } else {
        format!("{done}")
    };
    let owns_w = width.saturating_sub(24 + done.len() + 1);
    let (owns, owns_style) = owns(w, app, wide);
    let name_style = if selected { t.selected } else { t.header };
    Line::from(vec![
        styled(if selected { "▶" } else { " " }, t.selected),
        styled(if next { "→" } else { " " }, t.next_mover),
        styled(format!("{:<10}", fit(&s.name, 10)), name_style),
        Span::raw(" "),
        styled(format!("{:<10}", state_label), state_style),
        Span::raw(" "),
        styled(format!("{:<owns_w$}", fit(&owns, owns_w)), owns_style),
        Span::raw(" "),
        Span::raw(done),
    ])
}

/// What the worker owns, or works on without owning, or left behind when it crashed.
fn owns(w: &WorkerView, app: &App, wide: bool) -> (String, ratatui::style::Style) {
    let t = &app.theme;
    let s = &w.status;
    let crashed = matches!(s.state, WorkerState::Crashed);
    if let Some(lease) = &s.lease {
        let left = lease.until_ms - app.now_ms;
        if !crashed {
            let text = if wide {
                format!("{} {} left", lease.key, ms_label(left.max(0)))
            } else {
                lease.key.clone()
            };
            return (text, t.base);
        }
        let taken_by = app.ledger.messages.get(&lease.id).and_then(|m| {
            m.steps.iter().rev().find_map(|(_, step)| match step {
                HistoryStep::Claim { owner, version, .. } if *version > lease.version => {
                    Some(owner.clone())
                }
                _ => None,
            })
        });
        let text = match (wide, taken_by, left > 0) {
            (false, _, _) => lease.key.clone(),
            (true, Some(by), _) => format!("{} → {by}", lease.key),
            (true, None, true) => format!("held {} {}", lease.key, ms_label(left)),
            (true, None, false) => format!("held {} expired", lease.key),
        };
        return (text, t.bad);
    }
    if let Some(m) = &s.working_on {
        let text = if wide {
            format!("{} no lease +{}", m.key, s.queued)
        } else {
            m.key.clone()
        };
        return (text, t.unowned);
    }
    ("-".into(), t.dim)
}
