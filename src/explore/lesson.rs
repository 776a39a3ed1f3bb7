//! A counterexample as a lesson file: its schedule as lesson actions, the explorer's words
//! as narration, and expectations read from the engine itself by running the lesson once,
//! so `leaselab lesson FILE --check` holds by construction and the dashboard steps it.

use std::path::{Path, PathBuf};

use crate::engine::student::{Exercise, TxMode};
use crate::engine::text::printable;
use crate::engine::worker_id::WorkerId;
use crate::lesson::format::MAX_SQL_PATH;
use crate::lesson::runner::{figure, Session};
use crate::lesson::{Expect, Figure, MessageSel};

use super::check::Check;
use super::error::ExploreError;
use super::options::{ExploreOptions, Mode, LEASE_MS};
use super::report::{plural, Report, Told, Verdict};
use super::world::{Move, World, JUMP_MS};

/// Each actor's name in the engine along a schedule, before each step and after the last:
/// the explorer's names, except that the engine names a restart `Worker-A#2`. A
/// replacement starts under the name its stalled twin has then.
fn engine_names(workers: usize, steps: &[Told]) -> Vec<Vec<String>> {
    let mut names: Vec<String> = (0..workers)
        .map(|i| WorkerId::first(i).to_string())
        .collect();
    let mut out = vec![names.clone()];
    for t in steps {
        match t.mv {
            Move::Crash(i) => {
                let next = WorkerId::parse(&names[i])
                    .map(|id| WorkerId::new(id.slot, id.incarnation + 1).to_string());
                names[i] = next.unwrap_or_else(|| format!("{}#2", names[i]));
            }
            Move::Stall(i) => names.push(names[i].clone()),
            _ => {}
        }
        out.push(names.clone());
    }
    out
}

/// How a lesson action names actor `i` of `before`: its engine name, with `(stalled)` or
/// `(new)` once a stall has made two of that name.
fn named(before: &World, names: &[String], i: usize) -> String {
    let a = &before.actors[i];
    match (a.replacement, a.twin) {
        (true, _) => format!("{} (new)", names[i]),
        (false, Some(_)) => format!("{} (stalled)", names[i]),
        (false, None) => names[i].clone(),
    }
}

/// The lesson actions of one explorer move.
fn actions(t: &Told, names: &[String]) -> Vec<String> {
    let w = |i| named(&t.before, names, i);
    match t.mv {
        Move::Step(i) => vec![format!("act {}", w(i))],
        Move::Crash(i) => vec![format!("crash {}", w(i)), format!("restart {}", w(i))],
        Move::Jump => vec![format!("advance {JUMP_MS}")],
        Move::Tick(delta) => vec![format!("advance {delta}")],
        Move::Beat(i) => vec![format!("beat {}", w(i))],
        Move::Stall(i) => vec![format!("stall {}", w(i))],
        Move::Wake(i) => vec![format!("wake {}", w(i))],
    }
}

/// The explorer's sentence, in the engine's names: a restarted worker is `Worker-A#2`.
fn narrate(t: &Told, before: &[String], after: &[String]) -> String {
    // A student's step tells its statements a line each: one sentence here.
    let mut lines = t.text.lines().map(str::trim);
    let first = lines.next().unwrap_or_default().to_string();
    // The statement's text is in the SQL pane beside the narration: the narration names
    // its line, so that at 80x24 what the step did is still on screen.
    let rest: Vec<&str> = lines
        .map(|l| match l.split_once(": ") {
            Some((line, _)) if is_line_label(line) => line,
            _ => l,
        })
        .collect();
    let mut text = match rest.is_empty() {
        true => first,
        false => format!("{first}: {}", rest.join(" ")),
    };
    let moved = match t.mv {
        Move::Step(i) | Move::Crash(i) | Move::Beat(i) | Move::Stall(i) | Move::Wake(i) => Some(i),
        Move::Jump | Move::Tick(_) => None,
    };
    if let Some(i) = moved {
        let explorer = &t.before.actors[i].name;
        if *explorer != before[i] {
            text = text.replace(explorer.as_str(), &before[i]);
        }
        if matches!(t.mv, Move::Crash(_)) {
            text = text.replace(
                "restarts it with nothing in hand",
                &format!("restarts it, as {}, with nothing in hand", after[i]),
            );
        }
    }
    let mut s = text;
    if let Some(c) = s.get(..1) {
        s = c.to_uppercase() + &s[1..];
    }
    s + "."
}

/// `line 11`: a statement's label in a told step.
fn is_line_label(s: &str) -> bool {
    s.strip_prefix("line ")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
        out.push((format!("{key} payment"), Figure::Payment(sel())));
        out.push((
            format!("provider {key} calls"),
            Figure::ProviderCalls(Some(sel())),
        ));
        out.push((
            format!("provider {key} side effects"),
            Figure::ProviderEffects(Some(sel())),
        ));
    }
    for name in ["rejected", "violations", "duplicates"] {
        out.push((format!("ledger {name}"), Figure::Ledger(name)));
    }
    out
}

/// `# Found by: leaselab explore …`: the command that finds this schedule again.
fn found_by(o: &ExploreOptions, how: &str) -> String {
    let flag = |on: bool, text: &'static str| if on { text } else { "" };
    format!(
        "# Found by: leaselab explore {how} --workers {} --messages {}{}{} --faults {} --max-depth {}",
        o.workers,
        o.messages,
        flag(o.idempotent && o.sql.is_none(), " --idempotent"),
        flag(o.heartbeats, " --heartbeats"),
        o.faults.shown(),
        o.max_depth,
    )
}

/// The lesson's text without expectations.
/// `sql` names the exercise file from the lesson's folder, for a student's statements.
fn draft(
    report: &Report,
    v: &Verdict,
    (names, sql): (&[Vec<String>], Option<&str>),
    expects: &[Vec<String>],
) -> String {
    let o = &report.options;
    let (how, what, sql) = match (&o.sql, sql) {
        (Some(ex), Some(rel)) => (
            format!("--sql {}", toml_text(&ex.file)),
            format!("the statements of {}", toml_text(&ex.name)),
            format!("sql = \"{}\"\n", toml_text(rel)),
        ),
        _ => (
            format!("--mode {}", o.mode.name()),
            o.mode.name().to_string(),
            String::new(),
        ),
    };
    let mut t = format!(
        "{}\n\
         # A shortest schedule that breaks \"{}\", replayed on leaselab's engine.\n\
         format_version = 1\n\
         title = \"A schedule that breaks {} ({what})\"\n\
         summary = \"{}\"\n{sql}\n[setup]\nworkers = {}\nmessages = {}\nlease_ms = {LEASE_MS}\n\
         process_ms = 0\nleasing = {}\nidempotent_provider = {}\nheartbeats = {}\n",
        found_by(o, &how),
        v.check.name(),
        v.check.name(),
        summary(report, v),
        o.workers,
        o.messages,
        o.mode.leasing(),
        o.idempotent,
        o.heartbeats,
    );
    if o.mode == Mode::OwnerGuard {
        t.push_str("finalize_guard = \"owner\"\n");
    }
    for (i, told) in v.shortest.iter().enumerate() {
        let acts: Vec<String> = actions(told, &names[i])
            .into_iter()
            .map(|a| format!("\"{a}\""))
            .collect();
        let mut say = narrate(told, &names[i], &names[i + 1]);
        if i + 1 == v.shortest.len() {
            say.pop();
            say.push_str(&format!(": {}.", v.check.consequence(&v.about)));
        }
        t.push_str(&format!(
            "\n[[step]]\ndo = [{}]\nsay = \"\"\"\n{}\n\"\"\"\n",
            acts.join(", "),
            wrap(&toml_text(&say))
        ));
        if let Some(e) = expects.get(i).filter(|e| !e.is_empty()) {
            let quoted: Vec<String> = e.iter().map(|x| format!("\"{x}\"")).collect();
            t.push_str(&format!("expect = [{}]\n", quoted.join(", ")));
        }
    }
    t
}

fn summary(report: &Report, v: &Verdict) -> String {
    let o = &report.options;
    let ran = match &o.sql {
        Some(ex) => format!(
            "running the student's statements of {}",
            toml_text(&ex.file)
        ),
        None => format!("({})", o.mode.name()),
    };
    let mut s = format!(
        "The explorer ran every schedule of {} and {} {ran} on real SQLite; this is a \
         shortest one that breaks {}, step by step on leaselab's engine.",
        plural(o.workers as u64, "worker"),
        plural(o.messages, "message"),
        v.check.name()
    );
    if o.sql.is_some() {
        s.push_str(
            " Each act runs one step of a worker's claim or finalize: one statement outside \
             a transaction, or a whole transaction; the SQL pane shows what it ran.",
        );
    }
    if v.shortest.iter().any(|t| matches!(t.mv, Move::Stall(_))) {
        s.push_str(
            " A stalled worker's supervisor starts a new worker under its very name: the \
             steps call them Worker-A (stalled) and Worker-A (new), the rows see one name.",
        );
    }
    if o.mode == Mode::OwnerGuard {
        s.push_str(
            " As in the search, a finalize checks the owner's name only (finalize_guard = \
             owner), not the lease version.",
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
/// [`LESSON_ORDER`]), with expectations the engine itself shows: what each step changed,
/// and after the last the figures that show the check broken. None when nothing broke; an
/// error when the engine's replay does not break it.
///
/// `at` is where the lesson will be written: a lesson of a student's statements names
/// their exercise file from that folder, and is read back from there to be replayed.
pub fn save_lesson(report: &Report, at: &Path) -> Result<Option<String>, ExploreError> {
    let Some(v) = LESSON_ORDER.iter().find_map(|c| {
        report
            .verdicts
            .iter()
            .find(|v| v.check == *c && v.count > 0)
    }) else {
        return Ok(None);
    };
    let sql = match &report.options.sql {
        Some(ex) => {
            heartbeat_replayable(ex, v)?;
            Some(exercise_from(&ex.file, at)?)
        }
        None => None,
    };
    let names = engine_names(report.options.workers, &v.shortest);
    let text = draft(report, v, (&names, sql.as_deref()), &[]);
    let path = at.to_string_lossy();
    let lesson = crate::lesson::parse("explored", &path, &text).map_err(ExploreError::lesson)?;
    let mut session = Session::start(lesson).map_err(ExploreError::lesson)?;
    let figures = candidates(report.options.messages);
    let mut expects = vec![read_all(&session, &figures)?];
    for _ in 0..v.shortest.len() {
        let step = session.forward();
        if let Some(e) = step.error {
            return Err(ExploreError::Unreplayed(e.to_string()));
        }
        expects.push(read_all(&session, &figures)?);
    }
    let mut changed = trim(expects);
    changed.remove(0);
    let shown = read_all(&session, &proof(v.check, &v.about))?;
    if !breaks(v.check, &shown) {
        return Err(ExploreError::NotBroken {
            check: v.check.name(),
            shown: shown.join(", "),
        });
    }
    if let Some(last) = changed.last_mut() {
        for e in shown {
            if !last.contains(&e) {
                last.push(e);
            }
        }
    }
    Ok(Some(draft(report, v, (&names, sql.as_deref()), &changed)))
}

/// A lesson's `beat W` runs a heartbeat whole: a schedule that steps through a heartbeat
/// of several statements outside a transaction cannot be told as one.
fn heartbeat_replayable(ex: &Exercise, v: &Verdict) -> Result<(), ExploreError> {
    let stepped = ex
        .heartbeat
        .as_ref()
        .is_some_and(|h| h.transaction == TxMode::None && h.statements.len() > 1);
    if stepped && v.shortest.iter().any(|t| matches!(t.mv, Move::Beat(_))) {
        return Err(ExploreError::Unreplayed(
            "its heartbeat runs a statement at a time, and a lesson's beat runs a heartbeat \
             whole; put the heartbeat's statements in a transaction to save this schedule"
                .into(),
        ));
    }
    Ok(())
}

/// The exercise `file` as a lesson at `at` names it: a path from the lesson's folder.
fn exercise_from(file: &str, at: &Path) -> Result<String, ExploreError> {
    let refuse = |why: String| ExploreError::ExercisePath {
        file: printable(file).into_owned(),
        why,
    };
    let target = std::fs::canonicalize(file).map_err(|e| refuse(e.to_string()))?;
    let folder = match at.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let folder = std::fs::canonicalize(folder).map_err(|e| refuse(e.to_string()))?;
    let (t, f): (Vec<_>, Vec<_>) = (target.components().collect(), folder.components().collect());
    let common = t.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    rel.extend(&t[common..]);
    let rel = rel
        .to_str()
        .ok_or_else(|| refuse("its path is not UTF-8".into()))?
        .to_string();
    if rel.chars().any(char::is_control) || rel.chars().count() > MAX_SQL_PATH {
        return Err(refuse(format!(
            "a lesson names it in at most {MAX_SQL_PATH} characters, none a control character"
        )));
    }
    Ok(rel)
}

/// Text for a TOML basic string: one printable line, its backslashes and quotes escaped.
fn toml_text(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    printable(&line).replace('\\', "\\\\").replace('"', "\\\"")
}

/// The figures that show `check` broken on message `key`, as its lesson's last step
/// states them.
fn proof(check: Check, key: &str) -> Vec<(String, Figure)> {
    let id = key
        .strip_prefix("PAY-")
        .and_then(|n| n.parse::<i64>().ok())
        .unwrap_or(1);
    let sel = || MessageSel {
        id,
        key: key.to_string(),
    };
    let row = |what: &str, f: Figure| (format!("{key} {what}"), f);
    match check {
        Check::ProcessedTwice => vec![
            row("processed", Figure::Processed(sel())),
            ("ledger duplicates".into(), Figure::Ledger("duplicates")),
        ],
        Check::SideEffectTwice => vec![(
            format!("provider {key} side effects"),
            Figure::ProviderEffects(Some(sel())),
        )],
        Check::NonOwnerFinalize => vec![("ledger violations".into(), Figure::Ledger("violations"))],
        Check::Lost => vec![
            row("status", Figure::Status(sel())),
            row("payment", Figure::Payment(sel())),
        ],
        Check::LeaseExclusivity => vec![
            ("ledger overlaps".into(), Figure::Ledger("overlaps")),
            row("owner", Figure::Owner(sel())),
            row("lease", Figure::Lease(sel())),
        ],
        Check::Stuck => vec![
            row("status", Figure::Status(sel())),
            row("owner", Figure::Owner(sel())),
        ],
        Check::PaidWithoutCall => vec![
            row("payment", Figure::Payment(sel())),
            (
                format!("provider {key} side effects"),
                Figure::ProviderEffects(Some(sel())),
            ),
        ],
        Check::GaveUp => vec![row("status", Figure::Status(sel()))],
    }
}

/// Whether the figures of [`proof`], as read, show the check broken.
fn breaks(check: Check, shown: &[String]) -> bool {
    let value = |i: usize| {
        shown
            .get(i)
            .and_then(|e| e.rsplit(' ').next())
            .unwrap_or_default()
    };
    let at_least = |i: usize, n: u64| value(i).parse::<u64>().is_ok_and(|v| v >= n);
    match check {
        Check::ProcessedTwice => at_least(0, 2) && at_least(1, 1),
        Check::SideEffectTwice => at_least(0, 2),
        Check::NonOwnerFinalize => at_least(0, 1),
        Check::Lost => value(0) != "Pending" && value(0) != "Processing",
        Check::PaidWithoutCall => value(0) != "Pending" && value(1) == "0",
        Check::GaveUp => value(0) == "DeadLettered",
        // Two live leases at once is what leaselab's claim refuses: its engine shows one
        // only when its workers run a student's claim (the history check's overlaps).
        Check::LeaseExclusivity => at_least(0, 1),
        Check::Stuck => value(0) != "Processed",
    }
}

/// Each figure's value in the session right now, as an expectation's text.
fn read_all(s: &Session, figures: &[(String, Figure)]) -> Result<Vec<String>, ExploreError> {
    figures
        .iter()
        .map(|(text, f)| {
            let e = Expect {
                text: text.clone(),
                line: 0,
                figure: f.clone(),
                value: String::new(),
            };
            let value = figure(&s.engine, &s.ledger, &e).map_err(ExploreError::lesson)?;
            Ok(format!("{text} {value}"))
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
