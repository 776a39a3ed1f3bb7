//! `leaselab explore`: the search with a progress line on stderr, its report on stdout (or
//! JSON), the shortest counterexample saved as a lesson when asked, and exit 1 when a
//! check breaks.

use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use leaselab::exercise;
use leaselab::explore::{self, ExploreOptions, Mode};

use crate::cli::commands::{ExploreArgs, ExploreMode};
use crate::cli::{runtime_error, usage_error, Out};

/// The longest schedule a `--sql` search runs unless asked: enough for the built-in
/// exercises' searches to close under their bounds.
const SQL_DEPTH: usize = 60;

fn options(a: &ExploreArgs) -> Result<ExploreOptions, ExitCode> {
    let sql = match a.sql.as_deref().map(exercise::load_file).transpose() {
        Ok(sql) => sql.map(std::sync::Arc::new),
        Err(e) => return Err(usage_error(e)),
    };
    // An exercise with a heartbeat is graded with it; one without cannot be asked for one.
    let beats = sql.as_ref().map(|ex| ex.heartbeat.is_some());
    if a.heartbeats && beats == Some(false) {
        return Err(usage_error(
            "--heartbeats: the exercise defines no [heartbeat] to run",
        ));
    }
    Ok(ExploreOptions {
        workers: a.workers as usize,
        messages: a.messages as u64,
        mode: match a.mode {
            ExploreMode::NoLeasing => Mode::NoLeasing,
            ExploreMode::OwnerGuard => Mode::OwnerGuard,
            ExploreMode::FencingToken => Mode::FencingToken,
        },
        // A student's SQL cannot make the provider do a payment once: the graded world's
        // provider honours the idempotency key, so the checks judge the SQL alone.
        idempotent: a.idempotent || sql.is_some(),
        faults: a.faults,
        max_depth: a
            .max_depth
            .map_or(if sql.is_some() { SQL_DEPTH } else { 12 }, |d| d as usize),
        max_states: a.max_states as usize,
        max_memory_mib: a.max_memory as usize,
        max_seconds: a.max_seconds as u64,
        max_expiries: a.max_expiries as u8,
        exact_clock: false,
        max_faults: a.max_faults as u8,
        max_beats: a.max_beats as u8,
        heartbeats: a.heartbeats || beats == Some(true),
        broken_claim: false,
        forget_answer: false,
        sql,
        cores: 0,
        reduction: !a.no_reduction,
    })
}

/// A spinner with the search's figures, on a terminal only.
fn spinner() -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{spinner} explore: {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b
    })
}

/// `--save-lesson FILE` refused before the search, which may take minutes: a folder that
/// is not there, or without `--force` a file or symlink that is.
fn refused_lesson_path(a: &ExploreArgs) -> Result<(), ExitCode> {
    // A name from the command line reaches the terminal bounded and without control
    // characters.
    let quoted = |p: &std::path::Path| leaselab::engine::text::quoted(&p.to_string_lossy());
    if let Some(path) = a.save_lesson.as_deref() {
        // A file in a folder that is not there cannot be written, forced or not.
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(f) = folder.filter(|f| !f.is_dir()) {
            return Err(usage_error(format!(
                "--save-lesson {}: there is no folder {} to write it in",
                quoted(path),
                quoted(f)
            )));
        }
    }
    if let Some(path) = a.save_lesson.as_deref().filter(|_| !a.force) {
        // Asked of the name itself: a symlink, even a dangling one, would have its target
        // written.
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            let what = if meta.is_symlink() {
                "is a symlink; add --force to write its target"
            } else {
                "exists; add --force to replace it"
            };
            return Err(usage_error(format!(
                "--save-lesson {} {what}",
                quoted(path)
            )));
        }
    }
    Ok(())
}

pub(crate) fn explore(a: &ExploreArgs) -> ExitCode {
    if let Err(code) = refused_lesson_path(a) {
        return code;
    }
    let opts = match options(a) {
        Ok(opts) => opts,
        Err(code) => return code,
    };
    let signals = match leaselab::signals::watch() {
        Ok(rx) => rx,
        Err(e) => return runtime_error(e),
    };
    let bar = spinner();
    let mut stopped_by = None;
    let result = explore::explore(&opts, &mut |p| {
        if let Some(b) = &bar {
            let memory = p
                .memory_mib
                .map(|mib| format!(" · {mib} of {} MiB", opts.max_memory_mib))
                .unwrap_or_default();
            b.set_message(format!(
                "{} states · {} schedules · depth {}{memory}",
                p.states, p.schedules, p.depth
            ));
            b.tick();
        }
        stopped_by = signals.try_recv().ok();
        stopped_by.is_none()
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // A stop that interrupted a student's statement ends the search with an error, before
    // the next progress report would have heard it.
    if let Some(signo) = stopped_by.or_else(|| signals.try_recv().ok()) {
        return super::interrupted(signo, "the search stopped; nothing was saved");
    }
    let report = match result {
        Ok(r) => r,
        // The student's file is at fault, not the search: the user's to fix.
        Err(explore::ExploreError::Student(e)) if e.is_students() => return usage_error(e),
        Err(e) => return runtime_error(format!("explore: {e}")),
    };
    let mut out = Out::new();
    if a.json {
        out.print(&format!("{:#}\n", report.json()));
    } else {
        out.print(&report.text());
    }
    if let Some(path) = &a.save_lesson {
        if let Err(code) = save(&report, path, a.force, a.json, &mut out) {
            return code;
        }
    }
    out.finish(ExitCode::from(report.outcome().exit_code()))
}

/// `--save-lesson FILE`: the shortest counterexample as a lesson file.
fn save(
    report: &explore::Report,
    path: &std::path::Path,
    force: bool,
    json: bool,
    out: &mut Out,
) -> Result<(), ExitCode> {
    match explore::save_lesson(report, path) {
        Ok(Some(text)) => {
            write_new(path, &text, force)
                .map_err(|e| runtime_error(format!("cannot write {}: {e}", path.display())))?;
            if !json {
                out.line(&format!(
                    "saved the shortest counterexample as a lesson: leaselab lesson {}",
                    path.display()
                ));
            }
            Ok(())
        }
        Ok(None) => {
            if !json {
                out.line("nothing broke, so no lesson was saved");
            }
            Ok(())
        }
        Err(e) => Err(runtime_error(format!("cannot save the lesson: {e}"))),
    }
}

/// `text` into a file made for it, or with `force` over what is there: a file that appeared
/// during the search is not replaced either.
fn write_new(path: &std::path::Path, text: &str, force: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .create_new(!force)
        .truncate(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}
