//! What the dashboard itself is doing, apart from the engine: where the teacher looks
//! (focus, scroll offsets, help, selected worker), the answer to the last key, and the
//! lease-expiry story's progress.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Table,
    Log,
}

/// The view's own state: changed by keys, read by the renderers.
#[derive(Debug, Clone)]
pub struct UiState {
    pub focus: Focus,
    pub selected: usize,
    /// First table row shown.
    pub table_offset: u64,
    /// The table keeps the rows being worked on in view until the reader scrolls it.
    pub table_follows: bool,
    /// The table's row cursor, as a position in the whole outbox; None until a row key.
    pub table_cursor: Option<u64>,
    /// The message whose own history the overlay shows (Enter opens it, Esc closes it).
    pub history: Option<i64>,
    /// Lines scrolled back from the newest log line; 0 follows the newest.
    pub log_back: usize,
    /// Rows the table and the log showed in the last frame (a page for PgUp/PgDn).
    pub table_page: u16,
    pub log_page: u16,
    /// Width and height of the last frame; 0 before the first.
    pub width: u16,
    pub height: u16,
    pub help: bool,
    /// Help lines scrolled past (the help scrolls when the terminal is short).
    pub help_offset: u16,
    pub quit: bool,
    /// Ctrl-Z asked to give the terminal back and stop: the main loop, which holds the
    /// terminal, does it and clears this.
    pub suspend: bool,
    /// The last frame was the "terminal too small" screen.
    pub too_small: bool,
    /// Feedback on the last key press, shown in the status strip.
    pub notice: Option<String>,
    /// Narration lines scrolled past, and those the last frame could not show; the step
    /// the scroll belongs to (a new step starts at the top).
    pub narration_scroll: u16,
    pub narration_more: u16,
    pub narration_step: usize,
    /// Show the throughput strip (on once workers are added or removed, or a lesson
    /// changes the crew or the batch size).
    pub throughput: bool,
    /// Show the SQL pane: each worker's last statements (`s`, or a lesson step's
    /// `show = "sql"`).
    pub sql: bool,
    /// Show a class's scoreboard (`B` in the watch).
    pub scoreboard: bool,
    /// The workers pane shows which leaselab each worker runs (`V` in the watch).
    pub who_runs_what: bool,
    /// Workers a page of the workers pane showed in the last frame.
    pub worker_page: u16,
    /// The watch's screen is held (`space`): the frame stands as it was while the rows
    /// keep arriving underneath.
    pub held: bool,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            focus: Focus::Table,
            selected: 0,
            table_offset: 0,
            table_follows: true,
            table_cursor: None,
            history: None,
            log_back: 0,
            table_page: 10,
            log_page: 5,
            width: 0,
            height: 0,
            help: false,
            help_offset: 0,
            quit: false,
            suspend: false,
            too_small: false,
            notice: None,
            throughput: false,
            sql: false,
            scoreboard: false,
            who_runs_what: false,
            worker_page: 8,
            held: false,
            narration_scroll: 0,
            narration_more: 0,
            narration_step: 0,
        }
    }
}

impl UiState {
    pub fn say(&mut self, notice: impl Into<String>) {
        self.notice = Some(notice.into());
    }

    /// A worker that stopped on its own says why where it is read first (its row in the
    /// workers pane keeps saying so).
    pub fn tell_a_stop(&mut self, ev: &crate::engine::events::Event) {
        use crate::engine::events::EventKind;
        if let (Some(_), EventKind::Failed { error }) = (ev.slot, &ev.kind) {
            let error = crate::text::printable(error);
            self.say(format!("{} stopped: {error}", ev.actor));
        }
    }

    pub fn toggle_focus(&mut self) {
        self.focus = match self.focus {
            Focus::Table => Focus::Log,
            Focus::Log => Focus::Table,
        }
    }

    /// Rows a page key moves in the focused pane.
    pub fn page(&self) -> u16 {
        match self.focus {
            Focus::Table => self.table_page,
            Focus::Log => self.log_page,
        }
    }

    /// Move the focused pane: positive is towards the end (newer log lines, higher ids).
    pub fn scroll(&mut self, by: i64, table_rows: u64, log_lines: usize) {
        match self.focus {
            Focus::Table => {
                let page = self.table_page as i64;
                let max = table_rows.saturating_sub(page as u64) as i64;
                let offset = self.table_offset as i64;
                // Home puts the table back on the work; any other move holds it still.
                self.table_follows = by == i64::MIN / 2;
                if self.table_follows || table_rows == 0 {
                    self.table_offset = offset.saturating_add(by).clamp(0, max) as u64;
                    self.table_cursor = None;
                    return;
                }
                // The cursor moves; the window moves a page with it, or just enough to show it.
                let last = table_rows as i64 - 1;
                let from = self.table_cursor.map_or(offset, |c| c as i64);
                let cursor = from.saturating_add(by).clamp(0, last);
                let offset = if by.abs() >= page && by.abs() < i64::MAX / 4 {
                    offset.saturating_add(by)
                } else {
                    offset
                };
                let offset = offset.clamp(cursor - page + 1, cursor).clamp(0, max);
                self.table_offset = offset as u64;
                self.table_cursor = Some(cursor as u64);
            }
            Focus::Log => {
                let max = log_lines.saturating_sub(self.log_page as usize) as i64;
                self.log_back = (self.log_back as i64).saturating_sub(by).clamp(0, max) as usize;
            }
        }
    }

    /// Keep the offsets inside what there is to show.
    pub fn clamp_to(&mut self, table_rows: u64, log_lines: usize) {
        self.table_offset = self
            .table_offset
            .min(table_rows.saturating_sub(self.table_page as u64));
        self.table_cursor = self
            .table_cursor
            .map(|c| c.min(table_rows.saturating_sub(1)));
        self.log_back = self
            .log_back
            .min(log_lines.saturating_sub(self.log_page as usize));
    }
}
