//! Every style the dashboard uses, in one place. The NO_COLOR theme keeps each highlight
//! visible with bold, reverse, underline or dim instead of colour.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone)]
pub struct Theme {
    pub color: bool,
    pub base: Style,
    pub dim: Style,
    pub title: Style,
    pub border: Style,
    pub border_focused: Style,
    pub header: Style,
    pub running: Style,
    pub paused: Style,
    pub leasing_on: Style,
    pub leasing_off: Style,
    pub table_header: Style,
    pub pending: Style,
    pub processing: Style,
    pub processed: Style,
    pub dead_lettered: Style,
    pub expired: Style,
    pub gauge_full: Style,
    pub gauge_empty: Style,
    pub duplicate: Style,
    pub selected: Style,
    pub next_mover: Style,
    pub crashed: Style,
    pub good: Style,
    pub warn: Style,
    pub bad: Style,
    pub key: Style,
    pub notice: Style,
    pub lanes: [Style; 6],
    pub dead_lease: Style,
    pub unowned: Style,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to a non-empty value (https://no-color.org).
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if no_color {
            Theme::plain()
        } else {
            Theme::colored()
        }
    }

    pub fn colored() -> Theme {
        let bold = Modifier::BOLD;
        Theme {
            color: true,
            base: Style::new(),
            dim: Style::new().fg(Color::DarkGray),
            title: Style::new().fg(Color::Cyan).add_modifier(bold),
            border: Style::new().fg(Color::DarkGray),
            border_focused: Style::new().fg(Color::Cyan),
            header: Style::new().add_modifier(bold),
            running: Style::new()
                .fg(Color::Black)
                .bg(Color::Green)
                .add_modifier(bold),
            paused: Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(bold),
            leasing_on: Style::new().fg(Color::Green).add_modifier(bold),
            leasing_off: Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(bold),
            table_header: Style::new().fg(Color::Cyan).add_modifier(bold),
            pending: Style::new().fg(Color::Yellow),
            processing: Style::new().fg(Color::LightBlue).add_modifier(bold),
            processed: Style::new().fg(Color::Green),
            dead_lettered: Style::new()
                .fg(Color::Black)
                .bg(Color::Magenta)
                .add_modifier(bold),
            expired: Style::new().fg(Color::Red).add_modifier(bold),
            gauge_full: Style::new().fg(Color::LightBlue),
            gauge_empty: Style::new().fg(Color::DarkGray),
            duplicate: Style::new().fg(Color::Red).add_modifier(bold),
            selected: Style::new()
                .fg(Color::Cyan)
                .add_modifier(bold | Modifier::REVERSED),
            next_mover: Style::new().fg(Color::Yellow).add_modifier(bold),
            crashed: Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(bold),
            good: Style::new().fg(Color::Green),
            warn: Style::new().fg(Color::Yellow),
            bad: Style::new().fg(Color::Red).add_modifier(bold),
            key: Style::new().fg(Color::Cyan).add_modifier(bold),
            notice: Style::new().fg(Color::Black).bg(Color::Cyan),
            lanes: [
                Style::new().fg(Color::LightBlue),
                Style::new().fg(Color::LightMagenta),
                Style::new().fg(Color::LightGreen),
                Style::new().fg(Color::LightYellow),
                Style::new().fg(Color::LightCyan),
                Style::new().fg(Color::LightRed),
            ],
            dead_lease: Style::new().fg(Color::Red),
            unowned: Style::new().fg(Color::Magenta),
        }
    }

    /// No colour at all: state is carried by bold, reverse, underline and dim.
    pub fn plain() -> Theme {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let reverse = Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD);
        let plain = Style::new();
        Theme {
            color: false,
            base: plain,
            dim: Style::new().add_modifier(Modifier::DIM),
            title: bold,
            border: plain,
            border_focused: bold,
            header: bold,
            running: bold,
            paused: reverse,
            leasing_on: bold,
            leasing_off: reverse,
            table_header: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            pending: plain,
            processing: bold,
            processed: Style::new().add_modifier(Modifier::DIM),
            dead_lettered: Style::new().add_modifier(Modifier::REVERSED | Modifier::UNDERLINED),
            expired: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            gauge_full: bold,
            gauge_empty: Style::new().add_modifier(Modifier::DIM),
            duplicate: reverse,
            selected: reverse,
            next_mover: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            crashed: reverse,
            good: plain,
            warn: bold,
            bad: reverse,
            key: bold,
            notice: reverse,
            lanes: [bold, plain, bold, plain, bold, plain],
            dead_lease: Style::new().add_modifier(Modifier::DIM),
            unowned: Style::new().add_modifier(Modifier::ITALIC),
        }
    }

    /// The colour of a message's status, as SQLite holds it.
    pub fn status(&self, status: &str) -> Style {
        match status {
            "Pending" => self.pending,
            "Processing" => self.processing,
            "Processed" => self.processed,
            "DeadLettered" => self.dead_lettered,
            _ => self.base,
        }
    }

    /// A lane colour per message, so neighbouring segments differ.
    pub fn lane(&self, id: i64) -> Style {
        self.lanes[id.rem_euclid(self.lanes.len() as i64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Theme;
    use crate::engine::outbox::OutboxStatus;

    #[test]
    fn a_dead_letter_stands_out_from_every_other_status_in_both_themes() {
        for theme in [Theme::colored(), Theme::plain()] {
            let dead = theme.status(OutboxStatus::DeadLettered.as_str());
            assert_ne!(dead, theme.base);
            for other in OutboxStatus::ALL
                .iter()
                .filter(|s| **s != OutboxStatus::DeadLettered)
            {
                assert_ne!(dead, theme.status(other.as_str()), "{other}");
            }
        }
    }
}
