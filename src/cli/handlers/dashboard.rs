//! The dashboard: free play on the command line's outbox, or a lesson (`leaselab lesson`).

use std::process::ExitCode;
use std::sync::Arc;

use leaselab::engine::backend::Db;
use leaselab::engine::student::Exercise;
use leaselab::engine::worker::STUDENT_ON_SQLITE;

use leaselab::scenario::Scenario;
use leaselab::setup::Timing;
use leaselab::ui::{self, DashboardOptions};

use super::interrupted;
use super::run::scenario_named;
use crate::cli::output::{line_and_exit, write_file, USAGE};
use crate::cli::{runtime_error, usage_error, DashboardArgs, LessonArgs, Out};

pub(crate) fn dashboard(d: &DashboardArgs) -> ExitCode {
    if d.watch && d.db.is_none() {
        return usage_error("--watch needs --db PATH: the database the workers use");
    }
    // Resolved once, here: the dashboard gets the values, never the defaults' Options.
    let t = Timing::DASHBOARD.resolve(d.timing.lease_ms, d.timing.process_ms, d.threads.speed);
    if d.processes {
        let outlives = t.check_lease_outlives_processing(
            !d.reliability.no_heartbeat,
            "every worker process would lose its lease mid-message",
        );
        if let Err(e) = outlives {
            return usage_error(e);
        }
    }
    let scenario = match d.open_scenario.as_deref().map(scenario_named).transpose() {
        Ok(s) => s.unwrap_or(Scenario::OutboxLeasing),
        Err(e) => return usage_error(e),
    };
    let reliability = match d.reliability.reliability(t.lease_ms) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let sql = match student_sql(d) {
        Ok(sql) => sql,
        Err(code) => return code,
    };
    let opts = DashboardOptions {
        sql,
        reliability,
        scenario,
        workers: d.threads.workers().unwrap_or(scenario.default_workers()),
        messages: d.outbox.messages(),
        timing: t,
        db: d.db.clone(),
        no_leasing: d.outbox.no_leasing,
        watch: d.watch,
        processes: d.processes,
    };
    match ui::run(opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Ok(ui::Ended::Failed(e)) => runtime_error(e),
        Err(e) => usage_error(e),
    }
}

/// `--sql FILE`, read and checked before the terminal is taken: a bad file is one line,
/// `FILE:LINE: what`; what the exercise cannot run with is refused in one line too.
fn student_sql(d: &DashboardArgs) -> Result<Option<Arc<Exercise>>, ExitCode> {
    let Some(path) = &d.sql else {
        return Ok(None);
    };
    if d.db
        .as_deref()
        .is_some_and(|db| Db::parse(db).is_postgres())
    {
        return Err(usage_error(format!("--sql: {STUDENT_ON_SQLITE}")));
    }
    let exercise =
        leaselab::exercise::load_file(path).map_err(|e| line_and_exit(&e.to_string(), USAGE))?;
    let r = &d.reliability;
    if !r.fail_first.is_empty() || !r.fail_always.is_empty() {
        return Err(usage_error(
            "--sql: the exercise defines no failed attempt, so its provider cannot be made to fail",
        ));
    }
    if exercise.heartbeat.is_none() && r.heartbeat_ms.is_some() {
        return Err(usage_error(
            "--heartbeat-ms: the exercise defines no [heartbeat]",
        ));
    }
    Ok(Some(Arc::new(exercise)))
}

pub(crate) fn lesson_command(a: &LessonArgs) -> ExitCode {
    if let Some(why) = unused_flag(a) {
        return usage_error(why);
    }
    if a.print {
        let Some(text) = leaselab::lesson::built_in_text(&a.lesson) else {
            return usage_error(format!(
                "--print writes a built-in lesson; '{}' is not one (see leaselab lessons)",
                a.lesson
            ));
        };
        let mut out = Out::new();
        out.print(text);
        return out.finish(ExitCode::SUCCESS);
    }
    let lesson = match leaselab::lesson::load(&a.lesson) {
        Ok(l) => l,
        // A bad lesson file is reported as FILE:LINE: what, alone on its line.
        Err(e) if std::path::Path::new(&a.lesson).exists() => {
            return line_and_exit(&e.to_string(), USAGE)
        }
        Err(e) => return usage_error(e),
    };
    if a.cast.is_some() || a.shot.is_some() {
        return lesson_export(a, lesson);
    }
    if !a.check {
        return lesson_dashboard(a, lesson);
    }
    let total = lesson.steps.len();
    let mut out = Out::new();
    out.line(&format!(
        "lesson {} ({}): {}",
        lesson.name,
        leaselab::lesson::source(&lesson),
        lesson.title
    ));
    let reports = match leaselab::lesson::runner::check_lesson_in(lesson, a.db.clone()) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    for r in &reports {
        out.line(&r.line(total));
        if let Some(answer) = r.answer_line() {
            out.line(&format!("    {answer}"));
        }
    }
    let passed = reports.iter().filter(|r| r.passed()).count();
    out.line(&format!("{passed} of {total} steps passed"));
    out.finish(if passed == total {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A flag the rest of the command line gives nothing to do, refused rather than ignored:
/// each of a lesson's flags belongs to one way of taking it.
fn unused_flag(a: &LessonArgs) -> Option<String> {
    let export = match (&a.shot, &a.cast) {
        (Some(_), _) => Some("--shot"),
        (None, Some(_)) => Some("--cast"),
        (None, None) => None,
    };
    if a.size.is_some() && export.is_none() {
        return Some("--size is the screen size of --cast and --shot; give one of them".into());
    }
    if let (Some(flag), Some(_)) = (export, &a.db) {
        return Some(format!(
            "--db does not apply to {flag}: its screens are drawn on a database of their own"
        ));
    }
    // A device or a fifo (/dev/stdout) takes the picture as it is; a file is named for it.
    let device =
        |p: &std::path::Path| std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir());
    if let Some(shot) = a.shot.as_deref().filter(|p| !is_svg(p) && !device(p)) {
        return Some(format!(
            "--shot writes an SVG picture; name the file .svg (or a device such as /dev/stdout), not {}",
            shot.display()
        ));
    }
    if a.print && (a.db.is_some() || a.speed.is_some()) {
        return Some("--print only writes the lesson's file; --db and --speed do not apply".into());
    }
    match export.or(a.check.then_some("--check")) {
        Some(way) if a.speed.is_some() => Some(format!(
            "--speed is the dashboard's free-play clock; it does not apply to {way}"
        )),
        _ => None,
    }
}

/// A file name that ends in `.svg` (`X.SVG` and a bare `.svg` too).
fn is_svg(path: &std::path::Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".svg"))
}

pub(crate) fn lesson_dashboard(a: &LessonArgs, lesson: leaselab::lesson::Lesson) -> ExitCode {
    let opts = DashboardOptions {
        timing: Timing::DASHBOARD.resolve(None, None, a.speed),
        db: a.db.clone(),
        ..DashboardOptions::default()
    };
    match ui::run_lesson(lesson, opts) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Ok(ui::Ended::Failed(e)) => runtime_error(e),
        Err(e) => usage_error(e),
    }
}

/// `leaselab replay DB`: the dashboard over a recorded run.
pub(crate) fn replay(db: &std::path::Path) -> ExitCode {
    match ui::run_replay(db.to_path_buf()) {
        Ok(ui::Ended::Quit) => ExitCode::SUCCESS,
        Ok(ui::Ended::Interrupted(signo)) => interrupted(signo, "the dashboard closed"),
        Ok(ui::Ended::Failed(e)) => runtime_error(e),
        Err(e) => usage_error(e),
    }
}

/// `--cast FILE` and `--shot FILE`: the lesson's screens written to files, not a terminal.
fn lesson_export(a: &LessonArgs, lesson: leaselab::lesson::Lesson) -> ExitCode {
    use leaselab::ui::export::{self, ExportError};
    let size = a.size.unwrap_or((120, 40));
    let total = lesson.steps.len();
    if let Some(n) = a.step.filter(|n| *n as usize > total) {
        return usage_error(format!(
            "--step {n}: lesson {} has {total} steps (0 is before the first)",
            lesson.name
        ));
    }
    if let Err(e) = question_asked(a, &lesson) {
        return usage_error(e);
    }
    // A stopping signal ends a long recording between two writes, its file unwritten.
    let _signals = leaselab::signals::watch();
    let mut out = Out::new();
    if let Some(path) = &a.cast {
        let written = write_file(path, |w| {
            export::cast(lesson.clone(), size, &mut StopsOnSignal(w))
        });
        match written {
            Ok(()) => out.line(&format!("wrote {}", path.display())),
            Err(e @ (ExportError::Draw(_) | ExportError::NoSuchStep { .. })) => {
                return usage_error(e)
            }
            Err(ExportError::Write(_)) if leaselab::signals::received().is_some() => {
                let signo = leaselab::signals::received().unwrap_or(2);
                let what = format!("{} was not written", path.display());
                return interrupted(signo, &what);
            }
            Err(ExportError::Write(e)) => {
                return runtime_error(format!("cannot write {}: {e}", path.display()))
            }
        }
    }
    if let Some(path) = &a.shot {
        let step = a.step.map(|n| n as usize);
        let stopped = || leaselab::signals::received().map(leaselab::signals::name);
        let buffer = match export::shot(lesson, size, (step, a.question), &stopped) {
            Ok(Some(b)) => b,
            Ok(None) => return usage_error("--question: that step asks no question"),
            Err(_) if leaselab::signals::received().is_some() => {
                let signo = leaselab::signals::received().unwrap_or(2);
                return interrupted(signo, &format!("{} was not written", path.display()));
            }
            Err(e) => return usage_error(e),
        };
        let svg = export::svg(&buffer);
        if let Err(e) = write_file(path, |w| w.write_all(svg.as_bytes())) {
            return runtime_error(format!("cannot write {}: {e}", path.display()));
        }
        out.line(&format!("wrote {}", path.display()));
    }
    out.finish(ExitCode::SUCCESS)
}

/// `--question` draws the question of the step `--step` names, which must ask one.
fn question_asked(a: &LessonArgs, lesson: &leaselab::lesson::Lesson) -> Result<(), String> {
    if !a.question {
        return Ok(());
    }
    let asking: Vec<String> = (1..=lesson.steps.len())
        .filter(|n| lesson.steps[n - 1].quiz.is_some())
        .map(|n| n.to_string())
        .collect();
    let asks = match asking.as_slice() {
        [] => format!("lesson {} asks no question", lesson.name),
        steps => format!(
            "the steps of lesson {} that ask one: {}",
            lesson.name,
            steps.join(", ")
        ),
    };
    match a.step {
        None => Err(format!(
            "--question needs --step N, the step whose question to draw ({asks})"
        )),
        Some(n) if n >= 1 && lesson.steps[n as usize - 1].quiz.is_some() => Ok(()),
        Some(n) => Err(format!("--question: step {n} asks no question ({asks})")),
    }
}

/// A writer that fails once a stopping signal has arrived, so a recording stops at its next
/// write and its temporary file is removed.
struct StopsOnSignal<'a>(&'a mut dyn std::io::Write);

impl std::io::Write for StopsOnSignal<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(signo) = leaselab::signals::received() {
            let name = leaselab::signals::name(signo);
            return Err(std::io::Error::other(format!("stopped by {name}")));
        }
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
