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
    let t = &app.theme;
    let mut spans = vec![
        styled(" leaselab ", t.title),
        Span::raw(" clock "),
        styled(format!("{}Z", hms(app.now_ms)), t.header),
        Span::raw(format!("  x{}  ", speed_label(app.speed))),
    ];
    if app.paused {
        spans.push(styled(" PAUSED ", t.paused));
    } else {
        spans.push(styled(" RUNNING ", t.running));
    }
    spans.push(Span::raw("  "));
    if app.leasing() {
        spans.push(styled("LEASING ON", t.leasing_on));
    } else {
        spans.push(styled(" LEASING OFF: NO CLAIM, DUPLICATES ", t.leasing_off));
    }
    spans.push(Span::raw(format!("  lease {} ms", app.lease_ms())));
    let wide = area.width >= 110;
    if wide {
        spans.push(Span::raw(format!(
            "  process {} ms",
            app.engine.settings.process_ms()
        )));
    }
    spans.push(Span::raw("  scenario "));
    spans.push(styled(app.scenario.name(), t.header));
    if wide && !app.engine.is_temporary() {
        spans.push(styled(
            format!("  db {}", app.engine.db_path().display()),
            t.dim,
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What the teacher should know right now: paused and what moves next, the story step,
/// a drained outbox, or the answer to the last key.
pub fn render_strip(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let mut spans: Vec<Span> = Vec::new();
    if let Some(step) = app.next_story_step() {
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
    }
    if let Some(n) = &app.notice {
        if !spans.is_empty() {
            spans.push(Span::raw("  "));
        }
        spans.push(styled(format!(" {n} "), t.notice));
    } else if app.drained() && !app.is_story() {
        if !spans.is_empty() {
            spans.push(Span::raw("  "));
        }
        spans.push(styled(
            " outbox drained: R reseeds, p adds a payment ",
            t.notice,
        ));
    }
    if spans.is_empty() && !app.leasing() {
        spans.push(styled(
            " workers load every Pending row and all of them process it ",
            t.bad,
        ));
    }
    // A line too long for the terminal is clipped at the right edge.
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
