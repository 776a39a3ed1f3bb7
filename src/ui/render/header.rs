//! The header (clock, speed, run state, leasing, lease length, scenario) and the status
//! strip beneath it, which always says how to go on when the screen is paused.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::styled;
use crate::engine::clock::hms;
use crate::ui::app::{speed_label, App};

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let mut spans = header_spans(app, false);
    let mut used: usize = spans.iter().map(|s| s.width()).sum();
    if used > area.width as usize {
        // Narrow terminal: drop the labels, keep every value.
        spans = header_spans(app, true);
        used = spans.iter().map(|s| s.width()).sum();
    }
    let t = &app.theme;
    // Extras only where they fit, so the scenario name is never the part cut off.
    let mut extras = vec![Span::raw(format!(
        "  process {} ms",
        app.engine.settings.process_ms()
    ))];
    if !app.engine.is_temporary() {
        extras.push(styled(
            format!("  db {}", app.engine.db_path().display()),
            t.dim,
        ));
    }
    for extra in extras {
        if used + extra.width() <= area.width as usize {
            used += extra.width();
            spans.push(extra);
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn header_spans(app: &App, compact: bool) -> Vec<Span<'static>> {
    let t = &app.theme;
    let gap = if compact { " " } else { "  " };
    let mut spans = vec![
        styled(" leaselab ", t.title),
        Span::raw(if compact { " " } else { " clock " }),
        styled(format!("{}Z", hms(app.now_ms)), t.header),
        Span::raw(format!("{gap}x{}{gap}", speed_label(app.speed))),
    ];
    if app.paused {
        spans.push(styled(" PAUSED ", t.paused));
    } else {
        spans.push(styled(" RUNNING ", t.running));
    }
    spans.push(Span::raw(gap));
    if app.leasing() {
        spans.push(styled("LEASING ON", t.leasing_on));
    } else {
        spans.push(styled(" LEASING OFF ", t.leasing_off));
    }
    spans.push(Span::raw(format!("{gap}lease {} ms{gap}", app.lease_ms())));
    let (label, name) = app.setting_label();
    if !compact {
        spans.push(Span::raw(label));
    }
    spans.push(styled(name, t.header));
    spans
}

/// What the teacher should know right now: paused and what moves next, the story step,
/// a drained outbox, or the answer to the last key.
pub fn render_strip(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let mut spans: Vec<Span> = Vec::new();
    // The answer to the last key comes first: it is what the teacher is looking for.
    if let Some(n) = &app.notice {
        spans.push(styled(format!(" {n} "), t.notice));
        spans.push(Span::raw("  "));
    }
    if let Some(l) = &app.lesson {
        let r = &l.runner;
        if l.left_script(app.now_ms) {
            spans.push(styled(" OFF SCRIPT ", t.warn));
            spans.push(Span::raw(
                " n or b puts the lesson back (reseed and replay)",
            ));
        } else if r.finished() {
            spans.push(styled(
                format!(" LESSON DONE {}/{} ", r.done, r.total()),
                t.paused,
            ));
            spans.push(Span::raw(" b back · R from the start · space free play"));
        } else {
            spans.push(styled(
                format!(" LESSON {}/{} ", r.done, r.total()),
                t.paused,
            ));
            spans.push(Span::raw(" n next step · b back · space free play"));
        }
    } else if let Some(step) = app.next_story_step() {
        spans.push(styled(
            format!(" STORY {}/{} ", app.story_at + 1, app.story.len()),
            t.paused,
        ));
        spans.push(Span::raw(" n: "));
        spans.push(styled(step.describe(), t.next_mover));
    } else if app.paused {
        spans.push(styled(" PAUSED ", t.paused));
        spans.push(Span::raw(" space resumes · n steps · "));
        match app.next_mover().and_then(|s| app.workers.get(s)) {
            Some(w) => spans.push(styled(
                format!("next: {} will {}", w.status.name, w.status.next.describe()),
                t.next_mover,
            )),
            None => spans.push(styled("no worker can move: r restarts one", t.warn)),
        }
    } else if app.drained() && app.notice.is_none() {
        spans.push(styled(
            " outbox drained: R reseeds, p adds a payment ",
            t.notice,
        ));
    }
    if spans.is_empty() {
        // Nothing else to say: explain what is happening and where to start.
        if app.leasing() {
            spans.push(styled(
                " workers claim a lease, call the provider, finalize; space pauses, c crashes the selected worker, ? help ",
                t.dim,
            ));
        } else {
            spans.push(styled(
                " LEASING OFF: every worker loads all Pending rows and processes them: duplicates ",
                t.bad,
            ));
        }
    }
    // A line too long for the terminal is clipped at the right edge.
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
