//! The SQL pane (`s`): for each worker, the statements its store ran for its last write,
//! the very text executed, its parameters as bound, and what each did. Every worker's are
//! shown whole when there is room; else one worker's (in a lesson the step's, elsewhere the
//! selected one's) and the others' on a line each; on a small screen each statement is cut
//! to a line and its effect (`squeezed`).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit, pack, pane, styled};
use crate::engine::clock::hms;
use crate::engine::statements::ShownStatement;
use crate::engine::text::printable;
use crate::ui::keys::Mode;
use crate::ui::snapshot::{Snapshot, SqlView};
use crate::ui::sql::LastSql;
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

/// The pane's least height when it must share: its borders and three lines.
pub const SQL_MIN_H: u16 = 5;
/// The most it asks for.
const SQL_MAX_H: u16 = 22;

/// A statement's text on one line: the store's constant with its runs of white space
/// (its own line breaks and indentation) as single spaces.
pub fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A statement's one line where it does not fit `width`: an UPDATE's SET list and a
/// SELECT's columns give way to `…`, so that what decides which rows it touches (FROM and
/// WHERE) comes first; the caller cuts what is still too long.
pub(super) fn elided(sql: &str, width: usize) -> String {
    if sql.chars().count() <= width {
        return sql.to_string();
    }
    let between = |verb: &str, from: &str, to: &str| -> Option<String> {
        let rest = sql.strip_prefix(verb)?;
        let start = rest.find(from)? + from.len();
        let end = start + rest[start..].find(to)?;
        Some(format!("{verb}{}… {}", &rest[..start], &rest[end + 1..]))
    };
    between("UPDATE ", " SET ", " WHERE ")
        .or_else(|| between("SELECT ", "", " FROM "))
        .unwrap_or_else(|| sql.to_string())
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word is cut).
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let (n, w) = (line.chars().count(), word.chars().count());
        if n > 0 && n + 1 + w > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let head: String = line.chars().take(width).collect();
            line = line.chars().skip(width).collect();
            out.push(head);
        }
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// `text`'s first wrapped line at `width`, ending in `…` when more of it follows: a cut
/// effect reads as cut, not as a sentence that ends early.
fn one_row(text: &str, width: usize) -> String {
    let lines = wrap(text, width);
    if lines.len() <= 1 {
        return lines.into_iter().next().unwrap_or_default();
    }
    let mut head = lines[0].clone();
    while head.chars().count() + 1 > width.max(8) {
        match head.rfind(' ') {
            Some(i) => head.truncate(i),
            None => return fit(&head, width),
        }
    }
    format!("{}…", head.trim_end_matches([',', ':', ';']))
}

/// Which worker's statements are shown whole: in a lesson the last writer's (the step's),
/// elsewhere the selected worker's, or else the last writer's.
fn expanded(v: &SqlView, selected: usize, mode: Mode) -> Option<usize> {
    if mode != Mode::Lesson && v.last.get(selected).is_some_and(Option::is_some) {
        return Some(selected);
    }
    (0..v.last.len())
        .filter(|i| v.last[*i].is_some())
        .max_by_key(|i| v.last[*i].as_ref().map(|l| l.order))
}

/// One statement whole: its text, its parameters, its effect.
fn statement<'a>(st: &ShownStatement, width: usize, t: &Theme) -> Vec<Line<'a>> {
    let mut out: Vec<Line> = wrap(&one_line(&st.sql), width.saturating_sub(2))
        .into_iter()
        .map(|l| Line::from(vec![Span::raw("  "), styled(l, t.title)]))
        .collect();
    let groups: Vec<Vec<Span>> = st
        .params
        .iter()
        .map(|(name, value)| {
            vec![
                styled(name.to_string(), t.dim),
                Span::raw(" = "),
                Span::raw(printable(value).into_owned()),
            ]
        })
        .collect();
    for l in pack(groups, "  ", width.saturating_sub(4)) {
        let mut spans = vec![Span::raw("    ")];
        spans.extend(l.spans);
        out.push(Line::from(spans));
    }
    for (i, l) in wrap(&st.effect, width.saturating_sub(6))
        .into_iter()
        .enumerate()
    {
        let lead = if i == 0 { "    ⇒ " } else { "      " };
        out.push(Line::from(vec![Span::raw(lead), styled(l, t.warn)]));
    }
    out
}

fn heading<'a>(name: &str, last: &LastSql, t: &Theme) -> Line<'a> {
    Line::from(vec![
        styled(printable(name).into_owned(), t.title),
        Span::raw(format!("  {}", hms(last.at_ms))),
    ])
}

/// A worker's last statements whole.
fn whole<'a>(name: &str, last: &LastSql, width: usize, t: &Theme) -> Vec<Line<'a>> {
    let mut out = vec![heading(name, last, t)];
    for st in &last.shown.statements {
        out.extend(statement(st, width, t));
    }
    if let Some(note) = last.shown.note {
        for l in wrap(note, width.saturating_sub(2)) {
            out.push(Line::from(vec![Span::raw("  "), styled(l, t.dim)]));
        }
    }
    out
}

/// A worker's last statements on one line: the last one's start and its effect.
fn brief<'a>(name: &str, last: &LastSql, width: usize, t: &Theme) -> Line<'a> {
    let text = match last.shown.statements.last() {
        // One line holds little of a statement: always its WHERE before its SET list.
        Some(st) => format!("{} ⇒ {}", elided(&one_line(&st.sql), 0), st.effect),
        None => last.shown.note.unwrap_or_default().to_string(),
    };
    let head = format!("{}  {}  ", printable(name), hms(last.at_ms));
    let room = width.saturating_sub(head.chars().count());
    Line::from(vec![styled(head, t.dim), Span::raw(fit(&text, room))])
}

/// One statement in three lines or so: its text cut to one line, its parameters, its effect.
fn tight<'a>(st: &ShownStatement, width: usize, t: &Theme) -> Vec<Line<'a>> {
    // Its effect before its parameters, which may wrap past the pane's bottom.
    let mut whole = statement(st, width, t);
    let text = wrap(&one_line(&st.sql), width.saturating_sub(2)).len();
    let effect = wrap(&st.effect, width.saturating_sub(6)).len();
    let params: Vec<Line> = whole.drain(text..whole.len() - effect).collect();
    let room = width.saturating_sub(2);
    let cut = fit(&elided(&one_line(&st.sql), room), room);
    let mut out = vec![Line::from(vec![Span::raw("  "), styled(cut, t.title)])];
    out.extend(whole.drain(text..));
    out.extend(params);
    out
}

/// The pane's lines at `width` (inside its borders), as many as `height` holds: every
/// worker's statements whole when they fit; else one worker's whole (the selected one's,
/// or the last writer's) and the others' on a line each; else that worker's each cut to a
/// line, the earliest left out first.
pub fn lines<'a>(s: &Snapshot, ui: &UiState, width: u16, height: u16, t: &Theme) -> Vec<Line<'a>> {
    let Some(v) = &s.sql else {
        return Vec::new();
    };
    let (width, height) = (width as usize, height as usize);
    let shown: Vec<(usize, String, &LastSql)> = (0..v.last.len())
        .filter_map(|i| Some((i, v.last[i].as_ref()?)))
        .map(|(i, l)| {
            let name = s
                .workers
                .iter()
                .find(|w| w.slot == i)
                .map(|w| w.label(false));
            (i, name.unwrap_or_else(|| l.actor.clone()), l)
        })
        .collect();
    if shown.is_empty() {
        return vec![Line::from(styled(
            "no statement yet: each worker's last write shows here",
            t.dim,
        ))];
    }
    let whole_all: Vec<Line> = shown
        .iter()
        .flat_map(|(_, n, l)| whole(n, l, width, t))
        .collect();
    if whole_all.len() <= height {
        return whole_all;
    }
    let open = expanded(v, ui.selected, s.mode);
    let briefs: Vec<Line> = shown
        .iter()
        .filter(|(i, _, _)| Some(*i) != open)
        .map(|(_, n, l)| brief(n, l, width, t))
        .collect();
    let Some((_, name, last)) = shown.iter().find(|(i, _, _)| Some(*i) == open) else {
        return briefs;
    };
    let mut out = whole(name, last, width, t);
    if out.len() >= height && out.len() + briefs.len() > height {
        return squeezed(name, last, briefs, (width, height), t);
    }
    // The others' lines as many as fit, the last one saying how many did not.
    let room = height - out.len();
    let more = briefs.len().saturating_sub(room);
    let shown = if more > 0 { room - 1 } else { briefs.len() };
    out.extend(briefs.into_iter().take(shown));
    if more > 0 {
        let n = more + 1;
        let line = format!("and {n} more workers: tab or 1-9 shows one whole");
        out.push(Line::from(styled(line, t.dim)));
    }
    out
}

/// One worker's statements where they do not fit whole: each cut to a line, then (while
/// they still do not fit) without their parameters, without the other workers' lines,
/// without the worker's heading (its name goes before the first statement), and at last
/// without the earliest statements.
fn squeezed<'a>(
    name: &str,
    last: &LastSql,
    mut briefs: Vec<Line<'a>>,
    (width, height): (usize, usize),
    t: &Theme,
) -> Vec<Line<'a>> {
    let mut statements: Vec<Vec<Line>> = last
        .shown
        .statements
        .iter()
        .map(|st| tight(st, width, t))
        .collect();
    let total = |s: &Vec<Vec<Line>>| s.iter().map(Vec::len).sum::<usize>();
    if total(&statements) + 1 + briefs.len() > height {
        // The text's line and its effect on one line, ending in `…` where it goes on.
        for (lines, st) in statements.iter_mut().zip(&last.shown.statements) {
            lines.truncate(1);
            let effect = one_row(&st.effect, width.saturating_sub(6));
            lines.push(Line::from(vec![
                Span::raw("    ⇒ "),
                styled(effect, t.warn),
            ]));
        }
    }
    if total(&statements) + 1 + briefs.len() > height {
        briefs.clear();
    }
    let mut left_out = 0;
    // All of them without the heading beat fewer with it.
    while statements.len() > 1 && total(&statements) > height {
        statements.remove(0);
        left_out += 1;
    }
    while left_out > 0 && statements.len() > 1 && total(&statements) >= height {
        statements.remove(0);
        left_out += 1;
    }
    let headed = total(&statements) < height;
    let before = match left_out {
        0 => String::new(),
        n => format!("(and {n} before: a taller terminal shows it) "),
    };
    let mut out = Vec::new();
    if headed {
        let mut head = heading(name, last, t);
        head.spans.push(styled(format!("  {before}"), t.dim));
        out.push(head);
    } else if let Some(first) = statements.first_mut().and_then(|st| st.first_mut()) {
        // No room for the heading: the name leads the first statement's line.
        let lead = format!("{} {before}", printable(name));
        let room = width.saturating_sub(lead.chars().count());
        let text: String = first.spans.iter().map(|s| s.content.trim()).collect();
        *first = Line::from(vec![styled(lead, t.dim), styled(fit(&text, room), t.title)]);
    }
    out.extend(statements.into_iter().flatten());
    out.extend(briefs);
    out
}

/// The height the pane asks for at `width`: all of its lines and its borders, at most
/// [`SQL_MAX_H`]; 0 while it is hidden.
pub fn want(s: &Snapshot, ui: &UiState, t: &Theme, width: u16) -> u16 {
    if !ui.sql || s.sql.is_none() {
        return 0;
    }
    let n = lines(s, ui, width.saturating_sub(2), SQL_MAX_H, t).len() as u16;
    (n + 2).clamp(SQL_MIN_H, SQL_MAX_H)
}

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let Some(v) = &s.sql else {
        return;
    };
    if area.height == 0 {
        return;
    }
    let title = match &v.student {
        Some(file) => format!(
            " SQL · {} · the statements of {} each worker ran last · s hides ",
            v.dialect.name(),
            printable(file)
        ),
        None => format!(
            " SQL · {} · the statements each worker ran last · s hides ",
            v.dialect.name()
        ),
    };
    let block = pane(fit(&title, area.width.saturating_sub(2) as usize), t, false);
    let inner = (area.width.saturating_sub(2), area.height.saturating_sub(2));
    let text = lines(s, ui, inner.0, inner.1, t);
    frame.render_widget(Paragraph::new(text).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_too_long_for_its_line_keeps_its_where_before_its_set_list() {
        let finalize = one_line(crate::engine::store::sql::GUARDED_FINALIZE_SQL);
        let cut = elided(&finalize, 76);
        assert!(
            cut.starts_with("UPDATE OutboxMessages SET … WHERE Id = ?2 AND "),
            "{cut}"
        );
        let select =
            "SELECT Id, PaymentKey, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending'";
        assert_eq!(
            elided(select, 40),
            "SELECT … FROM OutboxMessages WHERE Status = 'Pending'"
        );
        // What fits is left whole, and a statement of another shape too.
        assert_eq!(elided(select, 200), select);
        assert_eq!(
            elided("DELETE FROM OutboxMessages WHERE Id = 1", 10),
            "DELETE FROM OutboxMessages WHERE Id = 1"
        );
    }
}
