//! A counterexample as a lesson file: its schedule as lesson actions, the explorer's words
//! as narration, and expectations read from the engine itself by running the lesson once,
//! so `leaselab lesson FILE --check` holds by construction and the dashboard steps it.

use crate::lesson::runner::{figure, Session};
use crate::lesson::{Expect, Figure, MessageSel};

use super::{Check, Mode, Move, Report, Told, Verdict, JUMP_MS, LEASE_MS};

/// The engine's slot for each actor of the explorer: the first workers keep theirs, and
/// each replacement (the new worker a supervisor starts under a stalled one's name) gets
/// a worker of its own after them, since the engine's workers have names of their own.
fn slot_names(workers: usize, steps: &[Told]) -> Vec<String> {
    let last = steps.last().map(|t| {
        let mut w = t.before.clone();
        if let Move::Stall(i) = t.mv {
            w.actors[i].stalled = true;
            w.actors.push(w.actors[i].clone());
        }
        w
    });
    let actors = last.map_or(workers, |w| w.actors.len());
    (0..actors)
        .map(|i| crate::engine::worker_id::WorkerId::first(i).to_string())
        .collect()
}

/// The lesson actions of one explorer move.
fn actions(mv: Move, names: &[String]) -> Vec<String> {
    match mv {
        Move::Step(i) => vec![format!("act {}", names[i])],
        Move::Crash(i) => vec![
            format!("crash {}", names[i]),
            format!("restart {}", names[i]),
        ],
        Move::Jump => vec![format!("advance {JUMP_MS}")],
        Move::Beat(i) => vec![format!("beat {}", names[i])],
        Move::Stall(i) => vec![format!("pause {}", names[i])],
        Move::Wake(i) => vec![format!("resume {}", names[i])],
    }
}

/// The explorer's sentence, with each replacement called by its engine name.
fn narrate(t: &Told, names: &[String], mode: Mode) -> String {
    let mut text = t.text.clone();
    let after = match t.mv {
        Move::Stall(_) => t.before.actors.len(),
        _ => usize::MAX,
    };
    let replaced = t
        .before
        .actors
        .iter()
        .enumerate()
        .filter(|(_, a)| a.replacement)
        .map(|(i, a)| (i, a.name.clone()))
        .chain((after < names.len()).then(|| (after, stalled_name(t))));
    for (i, name) in replaced {
        text = text.replace(
            &format!("the new {name}"),
            &format!("{} (standing in for the new {name})", names[i]),
        );
        text = text.replace(
            &format!("starts a new {name}"),
            &format!("starts a new {name}: here {}", names[i]),
        );
    }
    if let Some((done, _)) = text
        .split_once(": accepted, though")
        .filter(|_| mode == Mode::OwnerGuard)
    {
        let row = text
            .split("row was at lease ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .unwrap_or("a newer lease");
        text = format!(
            "{done}. A guard that checks only the owner's name accepts it, though the row is \
             at lease {row}: a finalize by a worker that no longer owns the message. leaselab's \
             own finalize also checks the lease version, so here the database refuses it \
             (ledger rejected)"
        );
    }
    let mut s = text;
    if let Some(c) = s.get(..1) {
        s = c.to_uppercase() + &s[1..];
    }
    s + "."
}

fn stalled_name(t: &Told) -> String {
    match t.mv {
        Move::Stall(i) => t.before.actors[i].name.clone(),
        _ => String::new(),
    }
}

/// Figures worth expecting after a step: each message's row and provider counts, and the
/// ledger's verdict figures.
fn candidates(messages: u64) -> Vec<(String, Figure)> {
    let mut out = Vec::new();
    for id in 1..=messages as i64 {
        let key = crate::engine::store::payment_key(id as u64);
        let sel = || MessageSel {
            id,
            key: key.clone(),
        };
        out.push((format!("{key} status"), Figure::Status(sel())));
        out.push((format!("{key} owner"), Figure::Owner(sel())));
        out.push((format!("{key} lease"), Figure::Lease(sel())));
        out.push((format!("{key} processed"), Figure::Processed(sel())));
        out.push((
            format!("provider {key} calls"),
            Figure::ProviderCalls(Some(sel())),
        ));
        out.push((
            format!("provider {key} effects"),
            Figure::ProviderEffects(Some(sel())),
        ));
    }
    for name in ["rejected", "violations", "duplicates"] {
        out.push((format!("ledger {name}"), Figure::Ledger(name)));
    }
    out
}

/// The lesson's text without expectations.
fn draft(report: &Report, v: &Verdict, names: &[String], expects: &[Vec<String>]) -> String {
    let o = &report.options;
    let mut t = format!(
        "# Found by: leaselab explore --workers {} --messages {} --mode {}{} --faults {}\n\
         # A shortest schedule that breaks \"{}\", replayed on leaselab's engine.\n\
         format_version = 1\n\
         title = \"A schedule that breaks {} ({})\"\n\
         summary = \"{}\"\n\n[setup]\nworkers = {}\nmessages = {}\nlease_ms = {LEASE_MS}\n\
         process_ms = 0\nleasing = {}\nidempotent_provider = {}\nheartbeats = {}\n",
        o.workers,
        o.messages,
        o.mode.name(),
        if o.idempotent { " --idempotent" } else { "" },
        o.faults.shown(),
        v.check.name(),
        v.check.name(),
        o.mode.name(),
        summary(report, v, names),
        names.len(),
        o.messages,
        o.mode.leasing(),
        o.idempotent,
        o.heartbeats,
    );
    for (i, told) in v.shortest.iter().enumerate() {
        let acts: Vec<String> = actions(told.mv, names)
            .into_iter()
            .map(|a| format!("\"{a}\""))
            .collect();
        let mut say = narrate(told, names, o.mode);
        if i + 1 == v.shortest.len() && !say.contains("(ledger rejected)") {
            say.pop();
            say.push_str(&format!(": {}.", v.check.consequence(&v.about)));
        }
        t.push_str(&format!(
            "\n[[step]]\ndo = [{}]\nsay = \"\"\"\n{}\n\"\"\"\n",
            acts.join(", "),
            wrap(&say.replace('\\', "\\\\").replace('"', "\\\""))
        ));
        if let Some(e) = expects.get(i).filter(|e| !e.is_empty()) {
            let quoted: Vec<String> = e.iter().map(|x| format!("\"{x}\"")).collect();
            t.push_str(&format!("expect = [{}]\n", quoted.join(", ")));
        }
    }
    t
}

fn summary(report: &Report, v: &Verdict, names: &[String]) -> String {
    let o = &report.options;
    let mut s = format!(
        "The explorer ran every schedule of {} and {} ({}) on real SQLite; this is a \
         shortest one that breaks {}.",
        super::plural(o.workers as u64, "worker"),
        super::plural(o.messages, "message"),
        o.mode.name(),
        v.check.name()
    );
    if names.len() > o.workers {
        s.push_str(&format!(
            " Workers after {} stand in for replacements started under a stalled worker's name.",
            names[o.workers - 1]
        ));
    }
    if o.mode == Mode::OwnerGuard {
        s.push_str(
            " It was found with a finalize that checks the owner's name only; the engine here \
             also checks the lease version.",
        );
    }
    s
}

/// Lines of at most about 88 characters, each but the last ending in a backslash (a TOML
/// line continuation), as the built-in lessons are written.
fn wrap(text: &str) -> String {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.len() + word.len() + 1 > 86 {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join(" \\\n")
}

/// The order in which a broken check is chosen for the lesson: what the outbox's rules
/// must prevent first, the provider's duplicate work (which needs its idempotency key,
/// not the outbox) last.
const LESSON_ORDER: [Check; 6] = [
    Check::ProcessedTwice,
    Check::NonOwnerFinalize,
    Check::LeaseExclusivity,
    Check::Lost,
    Check::Stuck,
    Check::SideEffectTwice,
];

/// The lesson of a shortest counterexample in `report` (of the first broken check in
/// [`LESSON_ORDER`]), with expectations the engine itself shows. None when nothing broke.
pub fn save_lesson(report: &Report) -> Result<Option<String>, String> {
    let Some(v) = LESSON_ORDER.iter().find_map(|c| {
        report
            .verdicts
            .iter()
            .find(|v| v.check == *c && v.count > 0)
    }) else {
        return Ok(None);
    };
    let names = slot_names(report.options.workers, &v.shortest);
    let text = draft(report, v, &names, &[]);
    let lesson = crate::lesson::parse("explored", "explored.toml", &text)?;
    let mut session = Session::start(lesson)?;
    let figures = candidates(report.options.messages);
    let mut expects = vec![read_all(&session, &figures)?];
    for _ in 0..v.shortest.len() {
        let step = session.forward();
        if let Some(e) = step.error {
            return Err(format!("the engine could not replay the schedule: {e}"));
        }
        expects.push(read_all(&session, &figures)?);
    }
    let mut changed = trim(expects);
    changed.remove(0);
    Ok(Some(draft(report, v, &names, &changed)))
}

/// Each figure's value in the session right now, as an expectation's text.
fn read_all(s: &Session, figures: &[(String, Figure)]) -> Result<Vec<String>, String> {
    figures
        .iter()
        .map(|(text, f)| {
            let e = Expect {
                text: text.clone(),
                line: 0,
                figure: f.clone(),
                value: String::new(),
            };
            Ok(format!("{text} {}", figure(&s.engine, &s.ledger, &e)?))
        })
        .collect()
}

/// Each state keeps only the figures that changed since the one before: what a step did.
fn trim(all: Vec<Vec<String>>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut before: Vec<String> = Vec::new();
    for now in all {
        let changed: Vec<String> = now
            .iter()
            .filter(|x| !before.contains(x))
            .cloned()
            .collect();
        out.push(changed);
        before = now;
    }
    out
}
