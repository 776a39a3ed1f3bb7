//! The throughput strip: messages per second now, and a sparkline of the last minute.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};
use ratatui::Frame;

use super::styled;
use crate::ui::snapshot::ThroughputView;
use crate::ui::theme::Theme;
use crate::ui::throughput::buckets;

/// How wide the strip is on a screen this wide.
pub fn width(screen: u16) -> u16 {
    (screen / 3).clamp(20, 40)
}

pub fn render(frame: &mut Frame, area: Rect, v: &ThroughputView, paused: bool, t: &Theme) {
    // Paused, a step moves no wall time: a rate would mean nothing.
    let label = if paused {
        " paused ".to_string()
    } else {
        format!(" {} msg/s ", v.rate)
    };
    let line = Line::from(vec![
        styled(label, t.title),
        Span::raw(format!("w{} b{} ", v.workers, v.batch)),
    ]);
    let text_w = (line.width() as u16).min(area.width);
    frame.render_widget(
        Paragraph::new(line),
        Rect {
            width: text_w,
            ..area
        },
    );
    let bars = area.width.saturating_sub(text_w);
    if bars == 0 {
        return;
    }
    let data = buckets(&v.minute, bars as usize);
    let spark = Sparkline::default().data(&data).style(t.good);
    frame.render_widget(
        spark,
        Rect {
            x: area.x + text_w,
            width: bars,
            ..area
        },
    );
}
