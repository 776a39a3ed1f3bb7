//! The ledgers: the same fold over engine events that the reports print. With room, a
//! figure a line; on a small screen the figures pack side by side under short labels, and
//! what the lesson names goes first, so a step's figures are on screen at 80x24.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane, styled};
use crate::lesson::{PROVIDER_CALLS, SIDE_EFFECTS};
use crate::ui::keys::Mode;
use crate::ui::snapshot::{all_passed, LedgerFigures, Setting, Snapshot, Spot};
use crate::ui::theme::Theme;

/// Every figure the panel can show, by the one name lessons, narration and docs use for it
/// (`lesson::LEDGER_FIGURES` says what each ledger figure counts).
pub const NAMES: &[&str] = &[
    "claims",
    "empty",
    "blocked",
    "attempts",
    PROVIDER_CALLS,
    SIDE_EFFECTS,
    "duplicates",
    "rejected",
    "violations",
    "overlaps",
    "reclaims",
    "results",
    "crashes",
    "restarts",
    "retries",
    "dead letters",
    "heartbeats",
    "leases lost",
    "claim transactions",
    "writes",
    "unique",
    "payments Paid",
    "payments Failed",
    "payments Pending",
];

/// The figures that say something went wrong, first in a packed panel of worker processes.
const TROUBLE: &[&str] = &[
    "duplicates",
    "rejected",
    "reclaims",
    "violations",
    "leases lost",
    "crashes",
];

/// From this many lines inside the panel, a figure a line; fewer, and they pack.
const ROOMY: usize = 8;

/// One figure as drawn.
struct Item {
    name: &'static str,
    value: String,
    style: Style,
}

pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot, t: &Theme) {
    // A provider that honours the idempotency key makes a repeated call harmless, which
    // changes what the checks can find: said where its calls are counted, as `explore`
    // says it.
    let title = if s.figures.provider_idempotent {
        " Ledgers · idempotent provider "
    } else {
        " Ledgers "
    };
    let block = pane(title, t, false).title_bottom(verdict_title(s, t));
    let inner = block.inner(area);
    let (named, spots): (&[&str], &[Spot]) = match &s.lesson {
        Some(l) => (&l.named, &l.spots),
        // A class's workers: what went wrong comes first when the figures pack.
        None if matches!(s.mode, Mode::Watch | Mode::Processes) => (TROUBLE, &[]),
        None => (&[], &[]),
    };
    // Leasing off, nobody owns a message: no violation of ownership can be counted, so a
    // zero says not applicable rather than none (one counted before it went off stays).
    let no_owners = s.settings.leasing == Setting::Is(false);
    let items = items(&s.figures, named, no_owners, t);
    let lines = lines(&s.figures, items, named, spots, t, inner);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The panel's lines for an `inner` area: with [`ROOMY`] lines or more a figure a line
/// (what the lesson names first when not all fit), with fewer packed side by side.
fn lines(
    l: &LedgerFigures,
    items: Vec<Item>,
    named: &[&str],
    spots: &[Spot],
    t: &Theme,
    inner: Rect,
) -> Vec<Line<'static>> {
    let width = inner.width as usize;
    let rows = inner.height as usize;
    let mut out: Vec<Line> = spots.iter().flat_map(|s| spot_lines(s, t, width)).collect();
    // The claims trio shares the first line either way.
    let (claims, mut rest): (Vec<Item>, Vec<Item>) = items
        .into_iter()
        .partition(|i| matches!(i.name, "claims" | "empty" | "blocked"));
    let first_named = |items: &mut Vec<Item>| {
        // What the lesson names comes first, the step's own before the others.
        items.sort_by_key(|i| {
            named
                .iter()
                .position(|n| *n == i.name)
                .unwrap_or(usize::MAX)
        });
    };
    // With room, a figure a line (what the lesson names first), and those that do not
    // fit so packed side by side on the last lines; a figure is left off only when even
    // packing cannot hold it.
    let room = rows.saturating_sub(out.len() + 1);
    let singles = (0..=rest.len().min(room))
        .rev()
        .find(|&k| k == rest.len() || k + pack(&rest[k..], width).len() <= room);
    if let Some(k) = singles.filter(|_| rows >= ROOMY) {
        if k < rest.len() {
            first_named(&mut rest);
        }
        out.push(claims_line(l, &claims, t, width >= 44));
        out.extend(rest[..k].iter().map(|i| figure(i, width)));
        out.extend(pack(&rest[k..], width));
    } else {
        let mut all = claims;
        all.extend(rest);
        first_named(&mut all);
        out.extend(pack(&all, width));
    }
    out.truncate(rows);
    out
}

/// The figures in the order the panel lists them; those in `named` come first when packed.
fn items(l: &LedgerFigures, named: &[&str], no_owners: bool, t: &Theme) -> Vec<Item> {
    let bad_if = |n: u64| if n > 0 { t.bad } else { t.base };
    let warn_if = |n: u64| if n > 0 { t.warn } else { t.base };
    let claims = |n: u64| shown(n, l.unknown.claims);
    let crashes = |n: u64| shown(n, l.unknown.crashes);
    let wanted = |name: &str| named.contains(&name);
    let mut v: Vec<(&'static str, String, Style)> = vec![
        ("claims", l.claims_ok.to_string(), t.good),
        ("empty", claims(l.claims_empty), t.base),
        (
            "blocked",
            claims(l.claims_blocked),
            warn_if(l.claims_blocked),
        ),
        ("attempts", l.processing_attempts.to_string(), t.base),
        (PROVIDER_CALLS, l.provider_checks.to_string(), t.base),
    ];
    if l.provider_idempotent || wanted(SIDE_EFFECTS) {
        v.push((SIDE_EFFECTS, l.provider_effects.to_string(), t.base));
    }
    v.extend([
        ("duplicates", l.duplicates.to_string(), bad_if(l.duplicates)),
        (
            "rejected",
            l.rejected_finalizes.to_string(),
            bad_if(l.rejected_finalizes),
        ),
        (
            "violations",
            match l.ownership_violations {
                0 if no_owners => "n/a".to_string(),
                n => n.to_string(),
            },
            bad_if(l.ownership_violations),
        ),
    ]);
    // Two live leases at once: shown once one happened, or where the lesson names it.
    if l.overlaps > 0 || wanted("overlaps") {
        v.push(("overlaps", l.overlaps.to_string(), bad_if(l.overlaps)));
    }
    v.extend([
        ("reclaims", l.reclaims.to_string(), warn_if(l.reclaims)),
        ("results", l.results_written.to_string(), t.base),
        ("crashes", crashes(l.crashes), t.base),
        ("restarts", crashes(l.restarts), t.base),
    ]);
    if l.retries + l.dead_letters > 0 || wanted("retries") || wanted("dead letters") {
        v.push(("retries", l.retries.to_string(), t.base));
        let dead = format!("{} ({} now)", l.dead_letters, l.dead_now);
        v.push(("dead letters", dead, bad_if(l.dead_now)));
    }
    if l.heartbeats + l.leases_lost > 0 || wanted("heartbeats") || wanted("leases lost") {
        v.push(("heartbeats", l.heartbeats.to_string(), t.base));
        v.push((
            "leases lost",
            l.leases_lost.to_string(),
            bad_if(l.leases_lost),
        ));
    }
    for (name, n) in [
        ("claim transactions", l.transactions),
        ("writes", l.writes),
        ("unique", l.unique),
        ("payments Paid", l.payments.paid),
        ("payments Failed", l.payments.failed),
        ("payments Pending", l.payments.pending),
    ] {
        if wanted(name) {
            v.push((name, n.to_string(), t.base));
        }
    }
    v.into_iter()
        .map(|(name, value, style)| Item { name, value, style })
        .collect()
}

/// The claims trio on one line, with the idle polls when wide.
fn claims_line(l: &LedgerFigures, claims: &[Item], t: &Theme, wide: bool) -> Line<'static> {
    let mut spans = Vec::new();
    for (n, i) in claims.iter().enumerate() {
        if n > 0 {
            spans.push(Span::raw(" · "));
        }
        spans.push(Span::raw(format!("{} ", i.name)));
        spans.push(styled(i.value.clone(), i.style));
    }
    if wide && l.idle_polls > 0 && !l.unknown.claims {
        spans.push(styled(format!(" · idle {}", l.idle_polls), t.dim));
    }
    Line::from(spans)
}

/// Items side by side under their names, ` · ` apart, as many a line as fit.
fn pack(items: &[Item], width: usize) -> Vec<Line<'static>> {
    let groups = items
        .iter()
        .map(|i| {
            vec![
                Span::raw(format!("{} ", i.name)),
                styled(i.value.clone(), i.style),
            ]
        })
        .collect();
    super::pack(groups, " · ", width)
}

/// A message the step talks about: `PAY-001 processed 1, provider calls 2`, wrapped under its key.
fn spot_lines(s: &Spot, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut line: Vec<Span> = vec![styled(s.key.clone(), t.title)];
    let mut used = s.key.chars().count();
    let mut first = true;
    for (label, value) in &s.figures {
        let w = label.chars().count() + 1 + value.chars().count();
        let sep = if first { 1 } else { 2 };
        if used + sep + w > width && line.len() > 1 {
            out.push(Line::from(std::mem::take(&mut line)));
            line.push(Span::raw("  "));
            used = 2;
        } else if first {
            line.push(Span::raw(" "));
            used += 1;
        } else {
            line.push(Span::raw(", "));
            used += 2;
        }
        first = false;
        line.push(Span::raw(format!("{label} ")));
        line.push(styled(value.clone(), t.key));
        used += w;
    }
    out.push(Line::from(line));
    out
}

/// The history checker's verdict once the outbox has drained, as the reports give it;
/// it sits in the bottom border so the figures keep every row.
fn verdict_title(s: &Snapshot, t: &Theme) -> Line<'static> {
    let (verdict, style) = match &s.history {
        None => ("after the drain".to_string(), t.dim),
        Some(_) if all_passed(&s.checks) => ("clean".to_string(), t.good),
        Some(h) if h.problems() == 1 => ("1 problem".to_string(), t.bad),
        Some(h) => (format!("{} problems", h.problems()), t.bad),
    };
    Line::from(vec![
        Span::raw(" history check "),
        styled(verdict, style),
        Span::raw(" "),
    ])
    .right_aligned()
}

/// A figure as shown: `-` when the dashboard cannot know it.
fn shown(n: u64, unknown: bool) -> String {
    if unknown {
        "-".to_string()
    } else {
        n.to_string()
    }
}

/// A label on the left and its value on the right edge of a `width` wide line.
fn figure(i: &Item, width: usize) -> Line<'static> {
    let pad = width
        .saturating_sub(i.name.chars().count() + i.value.chars().count())
        .max(1);
    Line::from(vec![
        Span::raw(i.name.to_string()),
        Span::raw(" ".repeat(pad)),
        styled(i.value.clone(), i.style),
    ])
}
