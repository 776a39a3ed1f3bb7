//! A lesson's screens outside the terminal: drawn into a buffer as the dashboard draws them,
//! then written as an asciicast v2 recording (one marker per screen), each frame as it is
//! drawn, or as an SVG picture.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;

use super::app::App;
use super::theme::Theme;
use super::DashboardOptions;
use crate::lesson::Lesson;

/// Seconds each step stays on screen in a recording.
const STEP_SECONDS: f64 = 4.0;
/// Pixels of one cell in a picture.
const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;

/// The smallest and largest screens an export draws.
pub const MIN_SIZE: (u16, u16) = (80, 24);
pub const MAX_SIZE: (u16, u16) = (400, 200);

/// One drawn screen: the lesson before its first step (`step` 0), after step `step`, or,
/// with `question`, step `step`'s question as the dashboard asks it before the step runs.
pub struct Screen<'a> {
    pub step: usize,
    pub question: bool,
    pub buffer: &'a Buffer,
}

/// Why an export stopped: the lesson could not be drawn, or a screen could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("--step {last}: the lesson has {total} step{}", if *total == 1 { "" } else { "s" })]
    NoSuchStep { last: usize, total: usize },
    #[error(transparent)]
    Draw(#[from] super::DashboardError),
    #[error("{0}")]
    Write(#[from] std::io::Error),
}

/// Draw the screens of `lesson` at `cols` x `rows`, from its start through step `upto`
/// (every step when None), as the dashboard shows them after each `n`, and hand each to
/// `each` as it is drawn: only one screen is held at a time, however long the lesson.
/// At a question the first `n` asks it: that screen comes before the step's own.
pub fn walk(
    lesson: Lesson,
    (cols, rows): (u16, u16),
    upto: Option<usize>,
    each: &mut dyn FnMut(&Screen) -> std::io::Result<()>,
) -> Result<(), ExportError> {
    let total = lesson.steps.len();
    let last = upto.unwrap_or(total);
    if last > total {
        return Err(ExportError::NoSuchStep { last, total });
    }
    let mut app = App::for_lesson(lesson, DashboardOptions::default(), Theme::colored())?;
    let mut terminal = Terminal::new(TestBackend::new(cols, rows))
        .map_err(|e| super::DashboardError::Draw(std::io::Error::other(e)))?;
    let done = |app: &App| app.stage().lesson().map_or(0, |l| l.runner.done);
    let mut show = |app: &mut App, step: usize, question: bool| -> Result<(), ExportError> {
        super::draw(&mut terminal, app)?;
        let buffer = terminal.backend().buffer();
        Ok(each(&Screen {
            step,
            question,
            buffer,
        })?)
    };
    show(&mut app, 0, false)?;
    for step in 1..=last {
        // `n`, as a teacher steps the lesson.
        let before = done(&app);
        app.handle_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE));
        if done(&app) == before {
            // A question: on screen now; the second `n` reveals without a prediction.
            show(&mut app, step, true)?;
            app.handle_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE));
        }
        show(&mut app, step, false)?;
    }
    Ok(())
}

/// The one screen a picture shows: after step `step` (the last when None), or with
/// `question` that step's question, before it runs. None when that step asks nothing.
/// `stopped` is asked after each screen drawn: a reason it gives ends the walk with it.
pub fn shot(
    lesson: Lesson,
    size: (u16, u16),
    (step, question): (Option<usize>, bool),
    stopped: &dyn Fn() -> Option<String>,
) -> Result<Option<Buffer>, ExportError> {
    let want = step.unwrap_or(lesson.steps.len());
    let mut kept = None;
    let walked = walk(lesson, size, Some(want), &mut |s| {
        if let Some(why) = stopped() {
            return Err(std::io::Error::other(why));
        }
        if s.step == want && s.question == question {
            kept = Some(s.buffer.clone());
        }
        Ok(())
    });
    walked.map(|()| kept)
}

/// The lesson as an asciicast v2 recording written to `out` as it is drawn: the header
/// line, then each screen as output and a marker naming it, [`STEP_SECONDS`] apart.
pub fn cast(
    lesson: Lesson,
    (cols, rows): (u16, u16),
    out: &mut dyn std::io::Write,
) -> Result<(), ExportError> {
    let header = serde_json::json!({
        "version": 2,
        "width": cols,
        "height": rows,
        "title": format!("leaselab lesson {}: {}", lesson.name, lesson.title),
        "env": {"TERM": "xterm-256color"},
    });
    writeln!(out, "{header}")?;
    let (name, total) = (lesson.name.clone(), lesson.steps.len());
    let mut frames = 0u32;
    walk(lesson, (cols, rows), None, &mut |screen| {
        let at = f64::from(frames) * STEP_SECONDS;
        frames += 1;
        let label = match (screen.step, screen.question) {
            (0, _) => format!("{name}: before the first step"),
            (n, true) => format!("step {n} of {total}: question"),
            (n, false) => format!("step {n} of {total}"),
        };
        let output = format!("\x1b[H\x1b[2J{}", ansi(screen.buffer));
        serde_json::to_writer(&mut *out, &serde_json::json!([at, "o", output]))?;
        out.write_all(b"\n")?;
        serde_json::to_writer(&mut *out, &serde_json::json!([at, "m", label]))?;
        out.write_all(b"\n")
    })?;
    out.flush()?;
    Ok(())
}

/// The buffer as terminal output: each row's cells with their colors and weights.
pub fn ansi(buffer: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut current = String::new();
        for x in 0..buffer.area.width {
            let cell = &buffer[(x, y)];
            let sgr = sgr(cell.fg, cell.bg, cell.modifier);
            if sgr != current {
                out += "\x1b[0m";
                out += &sgr;
                current = sgr;
            }
            out += cell.symbol();
        }
        out += "\x1b[0m";
        if y + 1 < buffer.area.height {
            out += "\r\n";
        }
    }
    out
}

/// The SGR sequence for a cell's style (empty for the terminal's defaults).
fn sgr(fg: Color, bg: Color, modifier: Modifier) -> String {
    let mut codes: Vec<String> = Vec::new();
    if modifier.contains(Modifier::BOLD) {
        codes.push("1".into());
    }
    if modifier.contains(Modifier::DIM) {
        codes.push("2".into());
    }
    if modifier.contains(Modifier::REVERSED) {
        codes.push("7".into());
    }
    if let Some((r, g, b)) = rgb(fg) {
        codes.push(format!("38;2;{r};{g};{b}"));
    }
    if let Some((r, g, b)) = rgb(bg) {
        codes.push(format!("48;2;{r};{g};{b}"));
    }
    if codes.is_empty() {
        String::new()
    } else {
        format!("\x1b[{}m", codes.join(";"))
    }
}

/// A color as red, green and blue (None for the terminal's default), with the xterm
/// palette for named and indexed colors.
fn rgb(c: Color) -> Option<(u8, u8, u8)> {
    const BASE: [(u8, u8, u8); 16] = [
        (0, 0, 0),
        (205, 49, 49),
        (13, 188, 121),
        (229, 229, 16),
        (36, 114, 200),
        (188, 63, 188),
        (17, 168, 205),
        (229, 229, 229),
        (102, 102, 102),
        (241, 76, 76),
        (35, 209, 139),
        (245, 245, 67),
        (59, 142, 234),
        (214, 112, 214),
        (41, 184, 219),
        (255, 255, 255),
    ];
    let indexed = |i: u8| -> (u8, u8, u8) {
        match i {
            0..=15 => BASE[i as usize],
            16..=231 => {
                let i = i - 16;
                let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
                (level(i / 36), level((i / 6) % 6), level(i % 6))
            }
            _ => {
                let v = 8 + (i - 232) * 10;
                (v, v, v)
            }
        }
    };
    Some(match c {
        Color::Reset => return None,
        Color::Black => BASE[0],
        Color::Red => BASE[1],
        Color::Green => BASE[2],
        Color::Yellow => BASE[3],
        Color::Blue => BASE[4],
        Color::Magenta => BASE[5],
        Color::Cyan => BASE[6],
        Color::Gray => BASE[7],
        Color::DarkGray => BASE[8],
        Color::LightRed => BASE[9],
        Color::LightGreen => BASE[10],
        Color::LightYellow => BASE[11],
        Color::LightBlue => BASE[12],
        Color::LightMagenta => BASE[13],
        Color::LightCyan => BASE[14],
        Color::White => BASE[15],
        Color::Indexed(i) => indexed(i),
        Color::Rgb(r, g, b) => (r, g, b),
    })
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Text for an SVG text node: markup escaped, and each character XML 1.0 does not allow
/// (a C0 control but tab and line breaks, U+FFFE, U+FFFF), which a lesson's text may hold
/// and for which a parser refuses the whole picture, replaced by U+FFFD.
fn escape(s: &str) -> String {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
            || c >= '\u{10000}'
    };
    s.chars()
        .map(|c| if allowed(c) { c } else { '\u{FFFD}' })
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The buffer as an SVG picture: a dark background, each cell's background, and each run
/// of cells with one style as one text element.
pub fn svg(buffer: &Buffer) -> String {
    let (w, h) = (buffer.area.width, buffer.area.height);
    let (fg0, bg0) = ((229, 229, 229), (24, 24, 27));
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" \
         font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"14\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"{}\"/>\n",
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H,
        hex(bg0)
    );
    for y in 0..h {
        let top = f64::from(y) * CELL_H;
        let mut x = 0;
        while x < w {
            let cell = &buffer[(x, y)];
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (rgb(cell.fg), rgb(cell.bg));
            if reversed {
                (fg, bg) = (bg.or(Some(bg0)), fg.or(Some(fg0)));
            }
            let bold = cell.modifier.contains(Modifier::BOLD);
            // The run of cells that share this style.
            let mut end = x + 1;
            let same = |c: &ratatui::buffer::Cell| {
                c.fg == cell.fg && c.bg == cell.bg && c.modifier == cell.modifier
            };
            while end < w && same(&buffer[(end, y)]) {
                end += 1;
            }
            let left = f64::from(x) * CELL_W;
            let width = f64::from(end - x) * CELL_W;
            if let Some(bg) = bg {
                out += &format!(
                    "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{width:.1}\" height=\"{CELL_H:.1}\" fill=\"{}\"/>\n",
                    hex(bg)
                );
            }
            let text: String = (x..end).map(|i| buffer[(i, y)].symbol()).collect();
            if !text.trim().is_empty() {
                out += &format!(
                    "<text x=\"{left:.1}\" y=\"{:.1}\" fill=\"{}\"{} xml:space=\"preserve\" textLength=\"{width:.1}\">{}</text>\n",
                    top + CELL_H * 0.78,
                    hex(fg.unwrap_or(fg0)),
                    if bold { " font-weight=\"bold\"" } else { "" },
                    escape(&text)
                );
            }
            x = end;
        }
    }
    out += "</svg>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    #[test]
    fn colors_map_to_the_xterm_palette() {
        assert_eq!(rgb(Color::Reset), None);
        assert_eq!(rgb(Color::Indexed(16)), Some((0, 0, 0)));
        assert_eq!(rgb(Color::Indexed(231)), Some((255, 255, 255)));
        assert_eq!(rgb(Color::Indexed(232)), Some((8, 8, 8)));
        assert_eq!(rgb(Color::Rgb(1, 2, 3)), Some((1, 2, 3)));
    }

    #[test]
    fn a_styled_run_is_one_text_element_and_markup_is_escaped() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 1));
        buf.set_string(0, 0, "a<b", Style::default().fg(Color::Red));
        buf.set_string(3, 0, "&c", Style::default());
        let svg = svg(&buf);
        assert!(svg.contains(">a&lt;b</text>"), "{svg}");
        assert!(svg.contains(">&amp;c </text>"), "{svg}");
        assert!(svg.contains("fill=\"#cd3131\""), "{svg}");
        let ansi = ansi(&buf);
        assert!(ansi.contains("\x1b[38;2;205;49;49ma<b"), "{ansi:?}");
    }
}
