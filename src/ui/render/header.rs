//! The header (clock, speed, run state, leasing, lease length, scenario) and the status
//! strip beneath it, which always says how to go on when the screen is paused.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{speed_label, styled};
use crate::engine::clock::hms;
use crate::ui::keys::Mode;
use crate::ui::snapshot::{Setting, Snapshot};
use crate::ui::state::UiState;
use crate::ui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    let mut spans = header_spans(s, t, false);
    let mut used: usize = spans.iter().map(|s| s.width()).sum();
    if used > area.width as usize {
        // Narrow terminal: drop the labels, keep every value.
        spans = header_spans(s, t, true);
        used = spans.iter().map(|s| s.width()).sum();
    }
    // Still too wide: whole items go from the end (the scenario's name first), never a
    // part of one.
    while used > area.width as usize && spans.len() > 1 {
        let gone = spans.pop().map_or(0, |s| s.width());
        used -= gone;
    }
    // Extras only where they fit, so the scenario name is never the part cut off.
    let mut extras = vec![Span::raw(format!(
        "  process {}",
        shown(s.settings.process_ms, |ms| format!("{ms} ms"))
    ))];
    if let Some(db) = &s.db_file {
        extras.push(styled(format!("  db {db}"), t.dim));
    }
    for extra in extras {
        if used + extra.width() <= area.width as usize {
            used += extra.width();
            spans.push(extra);
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn header_spans(s: &Snapshot, t: &Theme, compact: bool) -> Vec<Span<'static>> {
    let gap = if compact { " " } else { "  " };
    let mut spans = vec![
        styled(" leaselab ", t.title),
        Span::raw(if compact { " " } else { " clock " }),
        styled(format!("{}Z", hms(s.now_ms)), t.header),
    ];
    // Only the dashboard's own clock has a speed: a replay stands still, processes keep
    // the wall clock.
    spans.push(Span::raw(match s.mode {
        Mode::Free | Mode::Lesson => format!("{gap}x{}{gap}", speed_label(s.speed)),
        _ => gap.to_string(),
    }));
    spans.push(run_state(s, t));
    spans.push(Span::raw(gap));
    let set = &s.settings;
    spans.push(match set.leasing {
        Setting::Is(true) => styled("LEASING ON", t.leasing_on),
        Setting::Is(false) => styled(" LEASING OFF ", t.leasing_off),
        other => styled(
            format!("leasing {}", shown(other, |_| String::new())),
            t.warn,
        ),
    });
    let lease = shown(set.lease_ms, |ms| format!("{ms} ms"));
    spans.push(Span::raw(format!("{gap}lease {lease}{gap}")));
    // Heartbeats matter only to a lease: said beside it, whether they are on.
    if set.leasing != Setting::Is(false) {
        let beats = match (compact, set.heartbeats) {
            (false, Setting::Is(true)) => "heartbeats on".to_string(),
            (false, Setting::Is(false)) => "heartbeats OFF".to_string(),
            (true, Setting::Is(true)) => "♥on".to_string(),
            (true, Setting::Is(false)) => "♥OFF".to_string(),
            (false, other) => format!("heartbeats {}", shown(other, |_| String::new())),
            (true, other) => format!("♥{}", shown(other, |_| String::new())),
        };
        let style = if set.heartbeats == Setting::Is(true) {
            t.base
        } else {
            t.warn
        };
        spans.push(styled(beats, style));
        spans.push(Span::raw(gap));
        // The weaker guard is news: a stale finalize of a worker's namesake passes it.
        if s.owner_only_finalize {
            let guard = if compact {
                "guard:owner"
            } else {
                "owner-only guard"
            };
            spans.push(styled(guard, t.bad));
            spans.push(Span::raw(gap));
        }
    }
    let (label, name) = s.setting.clone();
    if !compact {
        spans.push(Span::raw(label));
    }
    spans.push(styled(name, t.header));
    spans
}

/// A setting's value, `-` where nothing recorded says it, `mixed` where workers differ.
fn shown<T: Copy>(v: Setting<T>, value: impl Fn(T) -> String) -> String {
    match v {
        Setting::Is(x) => value(x),
        Setting::Unknown => "-".to_string(),
        Setting::Mixed => "mixed".to_string(),
    }
}

/// Whether anything moves: a stale view first (nothing shown is current), then worker
/// processes held before their start (or the screen held), then the class the teacher
/// holds, then paused or running.
fn run_state(s: &Snapshot, t: &Theme) -> Span<'static> {
    if let Some(since) = s.stale_since {
        return styled(format!(" STALE since {} ", hms(since)), t.bad);
    }
    if s.held {
        return styled(" HELD ", t.paused);
    }
    if s.class_held {
        return styled(" CLASS HELD ", t.paused);
    }
    if s.paused {
        styled(" PAUSED ", t.paused)
    } else {
        styled(" RUNNING ", t.running)
    }
}

/// What the teacher should know right now: paused and what moves next, the story step,
/// a drained outbox, or the answer to the last key.
pub fn render_strip(frame: &mut Frame, area: Rect, s: &Snapshot, ui: &UiState, t: &Theme) {
    let mut spans: Vec<Span> = Vec::new();
    // The answer to the last key comes first: it is what the teacher is looking for; only a
    // view that is no longer current says so before it.
    if let Some(n) = ui.notice.as_ref().filter(|_| s.stale_since.is_none()) {
        spans.push(styled(format!(" {n} "), t.notice));
        spans.push(Span::raw("  "));
    }
    if let Some(since) = s.stale_since {
        let what = match (&s.stale_why, s.reconnecting) {
            (_, true) => format!("CONNECTION LOST at {}, reconnecting", hms(since)),
            (Some(why), false) => format!("STOPPED at {}: {why}", hms(since)),
            (None, false) => format!("CONNECTION LOST at {}", hms(since)),
        };
        spans.push(styled(
            format!(" {what}: the view is as it stood then and nothing counts down "),
            t.bad,
        ));
        spans.push(Span::raw(" the workers may go on · q quits"));
    } else if s.class_held && s.join_command.is_none() {
        // Until the first worker joins, the strip shows what the students type instead.
        spans.push(styled(" CLASS HELD by the teacher ", t.paused));
        spans.push(Span::raw(
            " the workers claim nothing until `leaselab class go` · ? help",
        ));
    } else if let Some(r) = &s.replay {
        replay_spans(&mut spans, r, area.width, t);
    } else if let Some(l) = &s.lesson {
        lesson_spans(&mut spans, l, t);
    } else if s.drained && ui.notice.is_none() {
        // The end of the run: say what happened before what could move next.
        match &s.history {
            Some(h) => spans.push(styled(
                format!(" {} ", crate::ui::snapshot::verdict_line(h, &s.checks)),
                if crate::ui::snapshot::all_passed(&s.checks) {
                    t.good
                } else {
                    t.bad
                },
            )),
            None => spans.push(styled(" outbox drained ", t.notice)),
        }
        spans.push(Span::raw(match s.mode {
            Mode::Watch | Mode::Processes => " p adds a payment · events list each check",
            _ => " R reseeds · p adds a payment · events list each check",
        }));
    } else if s.paused {
        spans.push(styled(" PAUSED ", t.paused));
        // What moves next comes before the keys: on a narrow screen the keys give way.
        match s.next_mover.and_then(|slot| s.workers.get(slot)) {
            Some(w) => spans.push(styled(
                format!(" next: {} will {}", w.status.name, w.status.next.describe()),
                t.next_mover,
            )),
            None => spans.push(styled(" no worker can move: r restarts one", t.warn)),
        }
        spans.push(Span::raw(" · space runs · n steps · - slows"));
    }
    if spans.is_empty() {
        // Nothing else to say: explain what is happening and where to start.
        if let Some(text) = outside_workers(s) {
            spans.push(styled(text, t.dim));
        } else if s.settings.leasing != Setting::Is(false) {
            spans.push(styled(
                " workers claim a lease, call the provider, finalize; space pauses, - slows down, c crashes, ? help ",
                t.dim,
            ));
        } else {
            spans.push(styled(
                " LEASING OFF: every worker loads all Pending rows and processes them: duplicates ",
                t.bad,
            ));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(fit(spans, area.width))), area);
}

/// What the strip says, with nothing else to say, of workers that are processes.
fn outside_workers(s: &Snapshot) -> Option<String> {
    if let Some(join) = &s.join_command {
        // Until the first worker joins: what the students type.
        return Some(format!(" students join with: {join} "));
    }
    let text = match s.mode {
        Mode::Processes if s.held => {
            Some(" HELD: the worker processes wait before touching the database; space starts them all ")
        }
        Mode::Processes => Some(
            " worker processes at work: space stops or wakes the selected one, c kills it, r starts a new one, ? help ",
        ),
        Mode::Watch => Some(
            " watching worker processes: each runs on its own settings; stop them where they run; ? help ",
        ),
        _ => None,
    };
    text.map(str::to_string)
}

/// A replay's position: the count, a bar with the marks on it, and the mark here or the
/// keys.
fn replay_spans(
    spans: &mut Vec<Span<'static>>,
    r: &crate::ui::snapshot::ReplayView,
    width: u16,
    t: &Theme,
) {
    spans.push(styled(
        format!(" REPLAY {}/{} ", r.position, r.total),
        t.paused,
    ));
    let cells = (width as usize / 4).clamp(10, 40);
    // The first event on the first cell, the last on the last.
    let cell_of = |p: usize| match r.total {
        0 | 1 => 0,
        total => p.clamp(1, total).saturating_sub(1) * (cells - 1) / (total - 1),
    };
    let here = cell_of(r.position);
    let bar: String = (0..cells)
        .map(|c| match c {
            c if c == here => '●',
            c if r.marks.iter().any(|m| cell_of(*m) == c) => '◆',
            c if c < here => '━',
            _ => '─',
        })
        .collect();
    spans.push(Span::raw(" "));
    spans.push(styled(bar, t.next_mover));
    spans.push(Span::raw(" "));
    match &r.mark {
        Some(m) => spans.push(styled(m.clone(), t.warn)),
        None => spans.push(Span::raw("←/→ event · [/] mark · Home/End")),
    }
}

/// A lesson's (or the story's) place in the strip: the step, what `n` does next, the keys.
fn lesson_spans(spans: &mut Vec<Span<'static>>, l: &crate::ui::snapshot::LessonView, t: &Theme) {
    if l.story && !l.off_script {
        spans.push(styled(format!(" STORY {}/{} ", l.done, l.total), t.paused));
        // One item, so that a narrow strip leaves it out whole rather than keep `n:` alone.
        if let Some(next) = &l.next_actions {
            spans.push(styled(format!(" n: {next}"), t.next_mover));
        }
        if l.done > 0 {
            spans.push(Span::raw(" · b back"));
        }
    } else if l.off_script {
        spans.push(styled(" OFF SCRIPT ", t.warn));
        spans.push(Span::raw(
            " n or b puts the lesson back (reseed and replay)",
        ));
    } else if l.finished {
        spans.push(styled(
            format!(" LESSON DONE {}/{} ", l.done, l.total),
            t.paused,
        ));
        spans.push(Span::raw(" b back · R from the start · space free play"));
    } else {
        spans.push(styled(format!(" LESSON {}/{} ", l.done, l.total), t.paused));
        // What the next `n` does comes first: the keys give way on a narrow screen.
        match &l.next_actions {
            Some(next) => spans.push(styled(format!(" n: {next}"), t.next_mover)),
            None => spans.push(Span::raw(" n next step")),
        }
        spans.push(Span::raw(" · b back · space free play"));
    }
}

/// The strip's spans cut to `width` without cutting words: the hints between ` · ` go
/// from the end first, and a span still too long ends in `…` at a word's end.
fn fit(spans: Vec<Span<'static>>, width: u16) -> Vec<Span<'static>> {
    let width = width as usize;
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = span.width();
        if used + w <= width {
            used += w;
            out.push(span);
            continue;
        }
        let room = width.saturating_sub(used);
        // Whole hints of an item may go, and a sentence may end early at a word; an item
        // cut to a stub (`b…` of `b back`) is left out whole instead.
        let first = out.iter().all(|s| s.content.trim().is_empty());
        let cut = shorten(&span.content, room)
            .filter(|c| first || !c.ends_with('…') || c.split_whitespace().count() >= 3);
        if let Some(cut) = cut {
            out.push(Span::styled(cut, span.style));
        }
        break;
    }
    out
}

/// The longest start of `text` made of whole `sep`-separated parts, `end` after it, that
/// fits `room` and is `enough` to show: whole hints (` · `) or whole actions (`, `).
fn whole_parts(
    text: &str,
    (sep, end): (&str, &str),
    room: usize,
    enough: impl Fn(&str) -> bool,
) -> Option<String> {
    let width = |s: &str| Span::raw(s.to_string()).width();
    let parts: Vec<&str> = text.split(sep).collect();
    (1..parts.len())
        .rev()
        .map(|n| format!("{}{end}", parts[..n].join(sep)))
        .find(|head| width(head) <= room && enough(head))
}

/// The longest start of `text` that fits `room`: whole ` · `-separated hints if any fit,
/// then whole `, `-separated actions, otherwise whole words and `…`. None when not even
/// one word fits.
fn shorten(text: &str, room: usize) -> Option<String> {
    let width = |s: &str| Span::raw(s.to_string()).width();
    let hints = whole_parts(text, (" · ", ""), room, |h| !h.trim().is_empty());
    // A step's actions end in `, …`, and at least one whole action shows.
    let actions = || {
        whole_parts(text, (", ", ", …"), room, |h| {
            h.split_whitespace().count() >= 3
        })
    };
    if let Some(head) = hints.or_else(actions) {
        return Some(head);
    }
    let mut head = String::new();
    for word in text.split(' ') {
        let next = if head.is_empty() {
            word.to_string()
        } else {
            format!("{head} {word}")
        };
        if width(&next) + 1 > room {
            break;
        }
        head = next;
    }
    (!head.trim().is_empty()).then(|| format!("{head}…"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_later_item_is_left_out_whole_rather_than_cut_to_a_stub() {
        let spans = || {
            vec![
                Span::raw(" LESSON DONE 11/11 "),
                Span::raw(" b back · space free play"),
            ]
        };
        // Room for `b back` but not the next hint: the hint goes whole.
        assert_eq!(text(&fit(spans(), 27)), " LESSON DONE 11/11  b back");
        // Room for `b` and not `back`: nothing of the item.
        assert_eq!(text(&fit(spans(), 22)), " LESSON DONE 11/11 ");
        // The first item is a sentence: it may end early at a word.
        let first = vec![Span::raw(
            " watching worker processes: each runs on its own",
        )];
        assert_eq!(text(&fit(first, 30)), "watching worker processes:…");
        // A later sentence keeps its start when three words or more of it fit.
        let later = vec![
            Span::raw(" PAUSED "),
            Span::raw(" next: Worker-A will claim the oldest claimable message"),
        ];
        assert_eq!(text(&fit(later, 36)), " PAUSED next: Worker-A will claim…");
        // A step's actions go whole: no action is cut to its verb.
        let step = vec![
            Span::raw(" LESSON 6/8 "),
            Span::raw(" n: freeze Worker-A, advance 3100, claim Worker-B PAY-002, act Worker-B"),
        ];
        assert_eq!(
            text(&fit(step, 73)),
            " LESSON 6/8  n: freeze Worker-A, advance 3100, claim Worker-B PAY-002, …"
        );
    }
}
