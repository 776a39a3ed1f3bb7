//! The messages table: what SQLite holds right now, read through the dashboard's own
//! read-only connection, one window of rows at a time.

use ratatui::layout::{Constraint, Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Cell, HighlightSpacing, Row, Scrollbar, ScrollbarOrientation, ScrollbarState, Table,
    TableState,
};
use ratatui::Frame;

use super::{fit, ms_label, pane, styled};
use crate::engine::lease;
use crate::engine::outbox::{MessageRow, OutboxStatus, PaymentStatus};
use crate::ui::snapshot::Snapshot;
use crate::ui::state::{Focus, UiState};
use crate::ui::theme::Theme;

/// Rows of data a table pane of this size shows (borders and the header row excluded).
pub fn visible_rows(area: Rect) -> u16 {
    area.height.saturating_sub(3)
}

/// `Processing`; `DeadLettered` needs two cells more, taken only while one is shown.
const STATUS_W: u16 = 10;
const DEAD_LETTER_W: u16 = 12;
const OWNER_W: u16 = 10;
/// `Worker-A` without its incarnation: what LockedBy gives up so Ver keeps its place.
const OWNER_NARROW_W: u16 = 8;
const NUMBER_W: u16 = 7;
const VER_W: u16 = 3;
/// `Processed`, the title of the ledger's column.
const RUNS_W: u16 = 9;
const BAR_MAX: u16 = 12;

const PAYMENT_W: u16 = 7;
/// Sets the ledger's Processed apart from the columns SQLite holds.
const RUNS_SEP: &str = "┊";

/// Which optional columns fit (Id, Ver, the ledger's Processed, the countdown bar, Payment),
/// and how wide. Ver is a database column, so it outranks Processed, which SQLite does not hold.
struct Columns {
    id: u16,
    key: u16,
    status: u16,
    owner: u16,
    ver: bool,
    runs: bool,
    bar: u16,
    payment: bool,
}

impl Columns {
    fn fit(inner: u16, total: u64, status: u16) -> Columns {
        let wide = Columns::fit_with(inner, total, status, OWNER_W);
        if wide.ver || status == STATUS_W {
            return wide;
        }
        Columns::fit_with(inner, total, status, OWNER_NARROW_W)
    }

    fn fit_with(inner: u16, total: u64, status: u16, owner: u16) -> Columns {
        let digits = total.max(1).to_string().len() as u16;
        let key = 4 + digits.max(3);
        let base = key + status + owner + NUMBER_W + 3;
        let mut left = inner.saturating_sub(base);
        let ver = left > VER_W;
        if ver {
            left -= VER_W + 1;
        }
        // The ledger's column sits after a separator: one cell more than its width.
        let runs = left > RUNS_W + 1;
        if runs {
            left -= RUNS_W + 2;
        }
        let mut id = digits.max(2);
        if left > id {
            left -= id + 1;
        } else {
            id = 0;
        }
        // Payment only when a countdown bar of six cells still fits beside it.
        let payment = left >= PAYMENT_W + 1 + 7;
        if payment {
            left -= PAYMENT_W + 1;
        }
        let bar = if left >= 4 {
            (left - 1).min(BAR_MAX)
        } else {
            0
        };
        Columns {
            id,
            key,
            status,
            owner,
            ver,
            runs,
            bar,
            payment,
        }
    }

    fn widths(&self) -> Vec<Constraint> {
        let lease = if self.bar > 0 {
            self.bar + 1 + NUMBER_W
        } else {
            NUMBER_W
        };
        let mut w = Vec::new();
        if self.id > 0 {
            w.push(Constraint::Length(self.id));
        }
        w.extend([
            Constraint::Length(self.key),
            Constraint::Length(self.status),
            Constraint::Length(self.owner),
            Constraint::Length(lease),
        ]);
        if self.ver {
            w.push(Constraint::Length(VER_W));
        }
        if self.payment {
            w.push(Constraint::Length(PAYMENT_W));
        }
        if self.runs {
            w.push(Constraint::Length(RUNS_W + 1));
        }
        w
    }
}

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let db = &s.db;
    let block = table_block(s, ui, t, area.width);
    let inner = block.inner(area);
    // The row cursor, once a row key placed it, takes a column of its own for its `▶`.
    let cursor = ui
        .table_cursor
        .and_then(|c| c.checked_sub(ui.table_offset))
        .map(|i| i as usize)
        .filter(|i| *i < db.rows.len());
    let cursor_w = u16::from(ui.table_cursor.is_some());
    let status_w = if db
        .rows
        .iter()
        .any(|r| r.status == OutboxStatus::DeadLettered)
    {
        DEAD_LETTER_W
    } else {
        STATUS_W
    };
    let cols = Columns::fit(inner.width.saturating_sub(cursor_w), db.total, status_w);
    let rows = db
        .rows
        .iter()
        .zip(&db.runs)
        .map(|(r, runs)| row(r, *runs, s, t, &cols));
    let spacing = if cursor_w > 0 {
        HighlightSpacing::Always
    } else {
        HighlightSpacing::Never
    };
    let table = Table::new(rows, cols.widths())
        .header(header_row(&cols, t))
        .column_spacing(1)
        .highlight_symbol("▶")
        .highlight_spacing(spacing)
        .row_highlight_style(t.selected)
        .block(block);
    let mut state = TableState::default().with_selected(cursor);
    frame.render_stateful_widget(table, area, &mut state);
    scrollbar(frame, area, db.total, ui.table_offset);
}

/// The pane: which rows it shows above, the outbox counts (or a failed read) below. A
/// dead-letter count that does not fit below goes to the top right, never cut off.
fn table_block<'a>(s: &Snapshot, ui: &UiState, t: &Theme, width: u16) -> Block<'a> {
    let db = &s.db;
    let first = db.rows.first().map_or(0, |r| r.id);
    let last = db.rows.last().map_or(0, |r| r.id);
    let title = Line::from(vec![
        styled(" Messages ", t.title),
        Span::raw(format!("{first}-{last} of {} ", db.total)),
    ]);
    let counts = Line::from(vec![
        Span::raw(" "),
        styled(format!("{} pending", db.counts.pending), t.pending),
        Span::raw(" · "),
        styled(format!("{} processing", db.counts.processing), t.processing),
        Span::raw(" · "),
        styled(format!("{} processed", db.counts.processed), t.processed),
        Span::raw(" "),
    ]);
    let mut block = pane("", t, ui.focus == Focus::Table).title(title);
    let mut counts = counts;
    if db.counts.dead_lettered > 0 {
        let dead = styled(format!("{} dead-lettered", db.counts.dead_lettered), t.bad);
        // Two corners and the separator.
        if counts.width() + dead.width() + 3 + 2 <= width as usize {
            counts.spans.pop();
            counts
                .spans
                .extend([Span::raw(" · "), dead, Span::raw(" ")]);
        } else {
            block =
                block.title(Line::from(vec![Span::raw(" "), dead, Span::raw(" ")]).right_aligned());
        }
    }
    match &db.error {
        Some(e) => block.title_bottom(styled(format!(" read failed: {e} "), t.bad)),
        None => block.title_bottom(counts),
    }
}

/// The column titles that fit: database columns, then the ledger's Processed set apart.
fn header_row<'a>(cols: &Columns, t: &Theme) -> Row<'a> {
    let mut header = if cols.id > 0 { vec!["Id"] } else { vec![] };
    let lease = if cols.bar > 0 { "Lease left" } else { "Left" };
    header.extend(["Key", "Status", "LockedBy", lease]);
    if cols.ver {
        header.push("Ver");
    }
    if cols.payment {
        header.push("Payment");
    }
    let mut header: Vec<Cell> = header.into_iter().map(Cell::from).collect();
    if cols.runs {
        header.push(Cell::from(Line::from(vec![
            styled(RUNS_SEP, t.dim),
            styled("Processed", t.dim),
        ])));
    }
    Row::new(header).style(t.table_header)
}

/// A scrollbar on the right edge when the outbox has more rows than the pane.
fn scrollbar(frame: &mut Frame, area: Rect, total: u64, offset: u64) {
    let page = visible_rows(area) as u64;
    if total > page {
        let mut state =
            ScrollbarState::new(total.saturating_sub(page) as usize).position(offset as usize);
        frame.render_stateful_widget(
            Scrollbar::new(ScrollbarOrientation::VerticalRight),
            area.inner(Margin::new(0, 1)),
            &mut state,
        );
    }
}

fn row<'a>(r: &MessageRow, runs: u32, s: &Snapshot, t: &Theme, cols: &Columns) -> Row<'a> {
    let owner = r.locked_by.as_deref().unwrap_or("-");
    let mut cells = Vec::with_capacity(7);
    if cols.id > 0 {
        cells.push(Cell::from(Line::from(r.id.to_string()).right_aligned()));
    }
    cells.extend([
        Cell::from(r.key.clone()),
        Cell::from(styled(r.status.to_string(), t.status(r.status.as_str()))),
        Cell::from(fit(owner, cols.owner as usize)),
        Cell::from(countdown(r, s, t, cols.bar)),
    ]);
    if cols.ver {
        cells.push(Cell::from(
            Line::from(r.lease_version.to_string()).right_aligned(),
        ));
    }
    if cols.payment {
        let style = match r.payment_status {
            PaymentStatus::Paid => t.good,
            PaymentStatus::Failed => t.warn,
            PaymentStatus::Pending => t.dim,
        };
        cells.push(Cell::from(styled(r.payment_status.to_string(), style)));
    }
    if cols.runs {
        let runs_style = if runs > 1 { t.duplicate } else { t.dim };
        cells.push(Cell::from(Line::from(vec![
            styled(RUNS_SEP, t.dim),
            styled(format!("{runs:>w$}", w = RUNS_W as usize), runs_style),
        ])));
    }
    Row::new(cells)
}

/// `████▌░░░░░ 2250 ms` while a lease holds (up to its `until`); `expired` after it.
fn countdown<'a>(r: &MessageRow, s: &Snapshot, t: &Theme, bar: u16) -> Line<'a> {
    let until = match (r.status, r.locked_until_ms) {
        (OutboxStatus::Processing, Some(u)) => u,
        _ => return Line::from(styled("-", t.dim)),
    };
    let left = until - s.now_ms;
    let mut spans = Vec::new();
    let lease = s.lease_ms.max(1);
    // A lease taken with a longer setting may have more left than one lease: clamp.
    let ratio = (left as f64 / lease as f64).clamp(0.0, 1.0);
    if bar > 0 {
        let (full, empty) = bar_text(ratio, bar as usize);
        spans.push(styled(full, t.gauge_full));
        spans.push(styled(empty, t.gauge_empty));
        spans.push(Span::raw(" "));
    }
    if lease::is_live(until, s.now_ms) {
        spans.push(Span::raw(format!(
            "{:>w$}",
            ms_label(left),
            w = NUMBER_W as usize
        )));
    } else {
        spans.push(styled(
            format!("{:>w$}", "expired", w = NUMBER_W as usize),
            t.expired,
        ));
    }
    Line::from(spans)
}

/// The filled and empty parts of a bar `width` cells wide, in eighths of a cell.
pub(crate) fn bar_text(ratio: f64, width: usize) -> (String, String) {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = (ratio.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut full = "█".repeat(eighths / 8);
    let mut used = eighths / 8;
    if !eighths.is_multiple_of(8) && used < width {
        full.push(PARTS[eighths % 8]);
        used += 1;
    }
    (full, "░".repeat(width - used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_always_as_wide_as_asked_even_out_of_range() {
        for ratio in [-1.0, 0.0, 0.06, 0.5, 0.999, 1.0, 7.0] {
            let (a, b) = bar_text(ratio, 10);
            assert_eq!(a.chars().count() + b.chars().count(), 10, "{ratio}");
        }
        assert_eq!(bar_text(0.5, 4).0, "██");
    }

    #[test]
    fn narrow_tables_drop_the_bar_before_the_lease_number() {
        let narrow = Columns::fit(42, 6, STATUS_W);
        assert_eq!((narrow.id, narrow.bar, narrow.ver), (0, 0, true));
        assert!(
            !narrow.runs,
            "Ver, from SQLite, outranks the ledger's Processed"
        );
        let wide = Columns::fit(80, 6, STATUS_W);
        assert!(wide.ver && wide.runs && wide.bar == BAR_MAX);
    }

    #[test]
    fn a_dead_letter_gets_its_whole_word_and_ver_stays_at_80_columns() {
        // 80x24 with the row cursor: 41 cells inside the table.
        let cols = Columns::fit(41, 6, DEAD_LETTER_W);
        assert_eq!(cols.status as usize, "DeadLettered".len());
        assert!(cols.ver, "Ver, from SQLite, stays");
        assert_eq!(cols.owner, OWNER_NARROW_W);
        assert_eq!(Columns::fit(41, 6, STATUS_W).owner, OWNER_W);
    }
}
