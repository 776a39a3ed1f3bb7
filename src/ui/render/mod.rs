//! Drawing: one file per screen region, each `render(frame, area, snapshot, ui, theme)`
//! from the frame's plain-data [`Snapshot`] and the view's [`UiState`], nothing else.
//!
//! ```text
//!  header   leaselab  09:00:01.250  x1  RUNNING  LEASING ON  lease 3000 ms  outbox-leasing
//!  strip    PAUSED · n: Worker-B will call the provider for PAY-002     (HEADER_H + STRIP_H)
//! ┌ Messages ───────────────────────────────────┐┌ Workers ─────────────────────┐
//! │ Id Key     Status     LockedBy  Lease left  ││ ▶ Worker-A processing PAY-003│ workers_h
//! │  1 PAY-001 Processed  -         -           │└──────────────────────────────┘
//! │  2 PAY-002 Processing Worker-B  ████  2300ms││ Ledgers                      │ LEDGER_H
//! │                                 (fill)      ││ claims 5 ok · 3 empty · ...  │
//! └─────────────────────────────────────────────┘└──────────────────────────────┘
//! ┌ Timeline ────────────────────────────────────────────────────────────────────┐
//! │ Worker-A   ━━003━━━━✓ ━━005━━━✗░░░░░░░░░           lanes (at most MAX_LANES) │
//! └──────────────────────────────────────────────────────────────────────────────┘
//! ┌ Events ──────────────────────────────────────────────────────────────────────┐
//! │ 09:00:01.250 Worker-A   CLAIMED PAY-003 until 09:00:04.250 (LOG_MIN_H + extra)│
//! └──────────────────────────────────────────────────────────────────────────────┘
//!  footer   q quit  ? help  space pause  n step ...                        (FOOTER_H)
//! ```
//! Height left over is shared between the top row (TOP_SHARE) and the event log.
//! In a lesson, the narration panel sits below the top row, open at the bottom: it takes
//! its rows from the timeline first, then from the top row (whose ledger then shows the
//! lesson's figures first), never from the log's three lines; what still does not fit
//! scrolls (`Areas::compute`). The SQL pane (`s`) sits there too: in free play it takes the
//! timeline's rows, then the top row's spare ones; in a lesson whose narration it would
//! cut, it takes the log's place instead (`Want::rows`).

pub mod footer;
pub mod header;
pub mod help;
pub mod history;
pub mod join;
pub mod ledger;
pub mod log;
pub mod narration;
pub mod scoreboard;
pub mod sql;
pub mod table;
pub mod throughput;
pub mod timeline;
pub mod too_small;
pub mod workers;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType};
use ratatui::Frame;

use super::snapshot::Snapshot;
use super::state::UiState;
use super::theme::Theme;

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;
const HEADER_H: u16 = 1;
const STRIP_H: u16 = 1;
const FOOTER_H: u16 = 1;
/// Five ledger lines (figures in pairs) and the borders (the history check is in the
/// bottom one); more show when there is room.
const LEDGER_H: u16 = 7;
/// The ledger panel with every figure on a line of its own.
const LEDGER_FULL_H: u16 = LEDGER_H + 5;
/// In a lesson on a small screen: three lines of figures, those the lesson names first.
const LESSON_LEDGER_H: u16 = 5;
/// The narration's least height when it must scroll: its title and two lines.
const NARRATION_MIN_H: u16 = 3;
/// The workers pane's least height in a squeezed lesson: two lines, then it pages.
const WORKERS_MIN_H: u16 = 4;
const MAX_WORKER_LINES: u16 = 8;
const MAX_LANES: u16 = 8;
/// Three lines of events and the borders: the log never disappears.
pub(crate) const LOG_MIN_H: u16 = 5;
const TABLE_MIN_H: u16 = 6;
/// Of the spare height, the top row gets this many fifths; the log the rest.
const TOP_SHARE: u16 = 3;

/// Width of the Workers/Ledgers column for a terminal this wide.
fn side_width(width: u16) -> u16 {
    match width {
        ..=99 => 36,
        100..=139 => 54,
        _ => 64,
    }
}

/// Where each region goes.
#[derive(Debug, Clone, Copy)]
pub struct Areas {
    pub header: Rect,
    pub strip: Rect,
    pub table: Rect,
    pub workers: Rect,
    pub ledger: Rect,
    /// A lesson's narration, below the top row; empty without a lesson.
    pub narration: Rect,
    /// The SQL pane, below the narration; empty while it is hidden.
    pub sql: Rect,
    pub timeline: Rect,
    pub log: Rect,
    pub footer: Rect,
}

impl Areas {
    /// `messages` is the outbox's size: the top row grows no taller than its rows and the
    /// full ledger need, and the event log takes the rest. `narration` is the height a
    /// lesson's panel asks for (0 without a lesson): it is whole when the screen allows,
    /// the timeline gives way first, then the top row down to [`LESSON_LEDGER_H`], and the
    /// log keeps [`LOG_MIN_H`] rows.
    /// The SQL pane (`sql`, the height it asks for, 0 while hidden) shares the narration's
    /// rows: below the top row, in the timeline's place when the screen is small.
    pub fn compute(
        area: Rect,
        workers: usize,
        messages: u64,
        (narration, sql): (u16, u16),
        mode: crate::ui::keys::Mode,
    ) -> Areas {
        let footer_h = footer::height(area.width, area.height, mode).max(FOOTER_H);
        let body = area.height.saturating_sub(HEADER_H + STRIP_H + footer_h);
        let (worker_lines, ledger_h) = match narration + sql {
            0 => crowd(body, workers),
            _ => ((workers as u16).clamp(1, MAX_WORKER_LINES), LEDGER_H),
        };
        let workers_h = worker_lines + 2;
        let top_min = (workers_h + ledger_h).max(TABLE_MIN_H);
        let timeline_full = (workers as u16).clamp(1, MAX_LANES).min(worker_lines) + 2;
        let table_needs = (messages.min(u16::MAX as u64) as u16).saturating_add(3);
        let top_needs = table_needs.max(workers_h + LEDGER_FULL_H).max(top_min);
        let want = Want {
            top_min,
            top_needs,
            workers_h,
            timeline: timeline_full,
        };
        let rows = want.rows(body, narration, sql);
        let (top_h, narration_h, timeline_h, workers_h) = rows.heights;
        // The SQL pane in the log's place, or below the narration.
        let sql_h = if rows.sql_for_log { 0 } else { rows.sql };
        let [header, strip, top, narration, sql, timeline, log, footer] = Layout::vertical([
            Constraint::Length(HEADER_H),
            Constraint::Length(STRIP_H),
            Constraint::Length(top_h),
            Constraint::Length(narration_h),
            Constraint::Length(sql_h),
            Constraint::Length(timeline_h),
            Constraint::Fill(1),
            Constraint::Length(footer_h),
        ])
        .areas(area);
        let (sql, log) = if rows.sql_for_log {
            (log, Rect { height: 0, ..log })
        } else {
            (sql, log)
        };
        let [table, side] = Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Length(side_width(area.width)),
        ])
        .areas(top);
        let [workers, ledger] =
            Layout::vertical([Constraint::Length(workers_h), Constraint::Fill(1)]).areas(side);
        Areas {
            header,
            strip,
            table,
            workers,
            ledger,
            narration,
            sql,
            timeline,
            log,
            footer,
        }
    }
}

/// Without a narration or a SQL pane: the lines of the workers pane (a page of the crew,
/// and as many timeline lanes) and the ledger's height, in `body` rows. When the usual
/// heights would leave the log a single line of events, the pane and the timeline shrink
/// alike, and then the ledger packs its figures in three lines, so that the ledger and
/// the log keep theirs ([`LOG_MIN_H`]): a class of 30 at 80x24 sees pages of three.
fn crowd(body: u16, workers: usize) -> (u16, u16) {
    let lines = (workers as u16).clamp(1, MAX_WORKER_LINES);
    // Both panes' borders, the ledger and a log of one line of events.
    if (lines + 2) * 2 + LEDGER_H + 3 <= body {
        return (lines, LEDGER_H);
    }
    let fitting = |ledger: u16| body.saturating_sub(ledger + LOG_MIN_H + 4) / 2;
    if fitting(LEDGER_H) >= CROWD_MIN_LINES {
        return (fitting(LEDGER_H).min(lines), LEDGER_H);
    }
    (fitting(LESSON_LEDGER_H).clamp(1, lines), LESSON_LEDGER_H)
}

/// The fewest lines a crowded workers pane shows before the ledger packs its figures.
const CROWD_MIN_LINES: u16 = 3;

/// What the top row and the timeline need, for sharing the body's rows.
struct Want {
    top_min: u16,
    top_needs: u16,
    workers_h: u16,
    timeline: u16,
}

/// How the body's rows are shared: (top row, narration, timeline, workers pane), the SQL
/// pane's rows, and whether it takes the log's place.
struct Rows {
    heights: (u16, u16, u16, u16),
    sql: u16,
    sql_for_log: bool,
}

impl Want {
    /// The body's rows for a narration and a SQL pane asking for `narration` and `sql`
    /// (0: none). Without a narration the SQL pane takes the timeline's place and then
    /// the top row's spare rows; with one that would then not be whole, the narration
    /// keeps its rows and the SQL pane takes the log's place (`s` gives it back).
    fn rows(&self, body: u16, narration: u16, sql: u16) -> Rows {
        let below = |asked: u16| {
            lesson_rows(
                body,
                asked,
                self.top_min,
                self.top_needs,
                self.workers_h,
                self.timeline,
            )
        };
        if narration + sql == 0 {
            let rest = body.saturating_sub(self.timeline);
            let extra = rest.saturating_sub(self.top_min + LOG_MIN_H);
            let top_h = (self.top_min + extra * TOP_SHARE / 5).min(self.top_needs);
            return Rows {
                heights: (top_h, 0, self.timeline, self.workers_h),
                sql: 0,
                sql_for_log: false,
            };
        }
        let (top_h, below_h, timeline_h, workers_h) = below(narration + sql);
        let (narration_h, sql_h) = share_below(below_h, narration, sql);
        if narration == 0 || sql == 0 || narration_h >= narration {
            return Rows {
                heights: (top_h, narration_h, timeline_h, workers_h),
                sql: sql_h,
                sql_for_log: false,
            };
        }
        let (top_h, narration_h, timeline_h, workers_h) = below(narration);
        Rows {
            heights: (top_h, narration_h, timeline_h, workers_h),
            sql,
            sql_for_log: true,
        }
    }
}

/// `rows` below the top row shared by the narration and the SQL pane, which ask for
/// `narration` and `sql`: each whole when they fit, else the SQL pane keeps its least
/// height and the narration (which scrolls) the rest.
fn share_below(rows: u16, narration: u16, sql: u16) -> (u16, u16) {
    if sql == 0 || rows >= narration + sql {
        return (rows.min(narration), rows.saturating_sub(narration).min(sql));
    }
    if narration == 0 {
        return (0, rows);
    }
    let sql_h = rows
        .saturating_sub(narration)
        .max(sql::SQL_MIN_H)
        .min(sql)
        .min(rows.saturating_sub(narration.min(NARRATION_MIN_H)));
    (rows - sql_h, sql_h)
}

/// With a lesson: the heights of the top row, the narration, the timeline and the workers
/// pane in `body`.
fn lesson_rows(
    body: u16,
    narration: u16,
    top_min: u16,
    top_needs: u16,
    workers_h: u16,
    timeline: u16,
) -> (u16, u16, u16, u16) {
    let rest = body.saturating_sub(narration + timeline);
    if rest >= top_min + LOG_MIN_H {
        // Room for everything: the top row takes its share of what is left.
        let extra = rest - (top_min + LOG_MIN_H);
        let top_h = (top_min + extra * TOP_SHARE / 5).min(top_needs);
        return (top_h, narration, timeline, workers_h);
    }
    let lesson_min = (workers_h + LESSON_LEDGER_H).max(TABLE_MIN_H);
    let rest = body.saturating_sub(narration + LOG_MIN_H);
    let mut top_h = rest.clamp(lesson_min, top_min);
    // Many workers: their pane pages (`1-8 of 26`) before the narration or the log give way.
    let most = body.saturating_sub(narration.min(NARRATION_MIN_H) + LOG_MIN_H);
    let fewest = (workers_h.min(WORKERS_MIN_H) + LESSON_LEDGER_H).max(TABLE_MIN_H);
    if top_h > most {
        top_h = most.max(fewest);
    }
    let workers_h = workers_h.min(top_h.saturating_sub(LESSON_LEDGER_H));
    // Too little even so: the narration scrolls, keeping a few lines.
    let narration_h = body
        .saturating_sub(top_h + LOG_MIN_H)
        .clamp(narration.min(NARRATION_MIN_H), narration);
    (top_h, narration_h, 0, workers_h)
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// What a frame of this size shows: rows of the table and the log, and lines of the
/// lesson's narration (for the snapshot and the keys that scroll them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity {
    pub table: u16,
    pub log: u16,
    pub narration: u16,
    /// Workers a page of the workers pane shows.
    pub workers: u16,
}

pub fn capacity(
    area: Rect,
    workers: usize,
    messages: u64,
    below: (u16, u16),
    mode: crate::ui::keys::Mode,
) -> Capacity {
    if too_small(area) {
        return Capacity::default();
    }
    let a = Areas::compute(area, workers, messages, below, mode);
    Capacity {
        table: table::visible_rows(a.table),
        log: a.log.height.saturating_sub(2),
        narration: a.narration.height.saturating_sub(1),
        workers: a.workers.height.saturating_sub(2),
    }
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, s: &Snapshot, ui: &UiState, t: &Theme) {
    let area = frame.area();
    if too_small(area) {
        too_small::render(frame, area, t);
        return;
    }
    let want = s
        .lesson
        .as_ref()
        .map_or(0, |l| narration::want(l, t, area.width));
    let sql = sql::want(s, ui, t, area.width);
    let a = Areas::compute(area, s.workers.len(), s.db.total, (want, sql), s.mode);
    header::render(frame, a.header, s, t);
    match &s.throughput {
        Some(v) => {
            let w = throughput::width(a.strip.width).min(a.strip.width);
            let text = Rect {
                width: a.strip.width - w,
                ..a.strip
            };
            header::render_strip(frame, text, s, ui, t);
            let strip = Rect {
                x: text.x + text.width,
                width: w,
                ..a.strip
            };
            throughput::render(frame, strip, v, s.paused, t);
        }
        None => header::render_strip(frame, a.strip, s, ui, t),
    }
    table::render(frame, a.table, s, ui, t);
    workers::render(frame, a.workers, s, ui, t);
    ledger::render(frame, a.ledger, s, t);
    if a.timeline.height > 0 {
        let page = a.workers.height.saturating_sub(2) as usize;
        timeline::render(frame, a.timeline, s, (ui, page), t);
    }
    if a.log.height > 0 {
        log::render(frame, a.log, s, ui, t);
    }
    if let Some(join) = &s.join_command {
        // Below the top row: the timeline and the log, empty until somebody joins.
        let below = a.timeline.union(a.log);
        join::render(frame, below, join, t);
    }
    if let Some(l) = &s.lesson {
        narration::render(frame, a.narration, l, ui, t);
    }
    if a.sql.height > 0 {
        sql::render(frame, a.sql, s, ui, t);
    }
    if s.lesson.is_some() {
        narration::join_below(frame, a.narration);
    }
    footer::render(frame, a.footer, s, t);
    if let Some(h) = &s.message_history {
        history::render(frame, area, h, t);
    }
    if let Some(b) = &s.scoreboard {
        scoreboard::render(frame, area, b, t);
    }
    if ui.help {
        help::render(frame, area, s, ui, t);
    }
}

/// A bordered pane with a title; the focused one stands out.
pub(crate) fn pane<'a>(title: impl Into<Span<'a>>, t: &Theme, focused: bool) -> Block<'a> {
    let border = if focused { t.border_focused } else { t.border };
    Block::bordered()
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(border)
        .title(title.into().style(t.title))
}

/// Groups of spans side by side, `sep` apart, as many on a line as fit in `width`; a group
/// is never split.
pub(crate) fn pack<'a>(
    groups: Vec<Vec<Span<'a>>>,
    sep: &'static str,
    width: usize,
) -> Vec<Line<'a>> {
    let sep_w = sep.chars().count();
    let mut out = Vec::new();
    let mut line: Vec<Span> = Vec::new();
    let mut used = 0;
    for group in groups {
        let w: usize = group.iter().map(|s| s.content.chars().count()).sum();
        if used > 0 && used + sep_w + w > width {
            out.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        if used > 0 {
            line.push(Span::raw(sep));
            used += sep_w;
        }
        used += w;
        line.extend(group);
    }
    if !line.is_empty() {
        out.push(Line::from(line));
    }
    out
}

/// Shorten `s` to `width` terminal columns, marking the cut with `…`: measured by display
/// width, so a name in Chinese or Japanese (two columns a character) is cut where it fills
/// the room, not twice past it.
pub(crate) fn fit(s: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if s.width() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` cut to `width` columns and padded with spaces to fill them: a column of names lines
/// up whatever script the names are in (`format!("{:<10}")` counts characters).
pub(crate) fn pad(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut out = fit(s, width);
    let room = width.saturating_sub(out.width());
    out.extend(std::iter::repeat_n(' ', room));
    out
}

/// `1`, `0.25`, `8`: a speed without trailing zeros.
pub fn speed_label(speed: f64) -> String {
    let s = format!("{speed:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Milliseconds as the countdowns show them.
pub(crate) fn ms_label(ms: i64) -> String {
    if ms.abs() < 10_000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

pub(crate) fn styled<'a>(s: impl Into<String>, style: Style) -> Span<'a> {
    Span::styled(s.into(), style)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name in a script two columns wide is cut and padded by columns: `李雷` is four,
    /// and a long one ends in `…` within the room.
    #[test]
    fn names_are_cut_and_padded_by_display_width() {
        use unicode_width::UnicodeWidthStr;
        assert_eq!(pad("李雷", 10), "李雷      ");
        assert_eq!(pad("alice", 10).width(), 10);
        let long = "李雷李雷李雷李雷李雷";
        let cut = fit(long, 10);
        assert!(cut.ends_with('…'), "{cut}");
        assert!(cut.width() <= 10, "{cut} is {} wide", cut.width());
        assert_eq!(pad(long, 10).width(), 10);
        assert_eq!(fit("abcdefghijkl", 5), "abcd…");
        assert_eq!(fit("李", 1), "…");
    }
}
