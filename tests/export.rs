//! `leaselab lesson NAME --cast FILE` and `--shot FILE`: the lesson's screens as an
//! asciicast v2 recording and as an SVG picture, and the README's picture made that way.

mod support;

use std::path::Path;

use support::{leaselab, stderr};

#[test]
fn a_cast_is_asciicast_v2_with_a_screen_and_a_marker_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &[
            "lesson",
            "lease-expiry",
            "--cast",
            "le.cast",
            "--size",
            "100x30",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("le.cast")).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["version"], 2);
    assert_eq!(
        (header["width"].as_u64(), header["height"].as_u64()),
        (Some(100), Some(30))
    );
    let lesson = leaselab::lesson::built_in("lease-expiry").unwrap();
    let steps = lesson.steps.len();
    let asking = lesson.steps.iter().filter(|s| s.quiz.is_some()).count();
    assert_eq!(asking, 1, "lease-expiry asks at step 3");
    let (mut screens, mut markers, mut last_time) = (Vec::new(), Vec::new(), -1.0);
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let e = event.as_array().expect("an event is an array");
        assert_eq!(e.len(), 3, "{line}");
        let at = e[0].as_f64().expect("a time");
        assert!(at >= last_time, "times never go back: {line}");
        last_time = at;
        match e[1].as_str() {
            Some("o") => {
                let screen = e[2].as_str().unwrap().to_string();
                assert!(screen.contains("Worker-A"), "a whole screen");
                screens.push(screen);
            }
            Some("m") => markers.push(e[2].as_str().unwrap().to_string()),
            other => panic!("unknown event type {other:?}"),
        }
    }
    assert_eq!(
        screens.len(),
        steps + 1 + asking,
        "the start, every step, the question"
    );
    assert_eq!(markers.len(), screens.len());
    // The question comes before its step's reveal, with a marker of its own.
    assert_eq!(markers[2], format!("step 2 of {steps}"));
    assert_eq!(markers[3], format!("step 3 of {steps}: question"));
    assert_eq!(markers[4], format!("step 3 of {steps}"));
    let plain = |s: &str| {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                // An escape sequence runs up to its final letter.
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    };
    let (question, reveal) = (plain(&screens[3]), plain(&screens[4]));
    assert!(
        question.contains("Predict: Worker-A is dead, but its lease runs"),
        "{question}"
    );
    assert!(
        question.contains("Worker-B takes PAY-001: its owner has crashed"),
        "{question}"
    );
    assert!(
        question.contains("Worker-B is refused until the lease runs out"),
        "{question}"
    );
    assert!(!question.contains("the answer is"), "{question}");
    assert!(reveal.contains("the answer is 2"), "{reveal}");
}

#[test]
fn a_shot_is_an_svg_of_the_screen_after_the_step_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &["lesson", "lease-expiry", "--shot", "s.svg", "--step", "2"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("s.svg")).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    // After step 2 Worker-A has crashed; Worker-B has not yet tried.
    assert!(
        svg.contains("LESSON 2/6") || svg.contains("2/6"),
        "the step shown"
    );
    assert!(svg.contains("crash"), "{}", &svg[..400]);
    let o = leaselab(
        &["lesson", "lease-expiry", "--shot", "s.svg", "--step", "7"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("has 6 steps"), "{}", stderr(&o));
}

#[test]
fn the_readme_picture_is_what_the_binary_draws_today() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kept = "docs/pictures/lease-expiry-step-5.svg";
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("]({kept})")),
        "the README shows {kept}"
    );
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &["lesson", "lease-expiry", "--shot", "now.svg", "--step", "5"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let now = std::fs::read_to_string(dir.path().join("now.svg")).unwrap();
    let was = std::fs::read_to_string(root.join(kept)).unwrap();
    assert!(
        now == was,
        "{kept} is out of date: leaselab lesson lease-expiry --shot {kept} --step 5"
    );
}

/// The recording of a lesson without questions, byte for byte as it was made when every
/// frame was kept in memory before the file was written: writing each frame as it is
/// drawn changes nothing in the file.
#[test]
fn a_cast_written_frame_by_frame_is_the_recording_it_always_was() {
    let dir = tempfile::tempdir().unwrap();
    let o = leaselab(
        &[
            "lesson",
            "atomic-claim",
            "--cast",
            "ac.cast",
            "--size",
            "80x24",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("ac.cast")).unwrap();
    insta::assert_snapshot!("atomic_claim_cast_80x24", text);
}

/// A lesson file of `steps` steps, each moving the clock one millisecond.
fn long_lesson(dir: &Path, steps: usize) -> std::path::PathBuf {
    let step = "[[step]]\ndo = [\"advance 1\"]\nsay = \"The clock moves one millisecond.\"\n";
    let text = format!(
        "format_version = 1\ntitle = \"Long\"\n[setup]\nworkers = 2\nmessages = 2\n{}",
        step.repeat(steps)
    );
    let path = dir.join("long.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_recording_that_cannot_be_written_is_one_line_and_leaves_no_half_file() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["lesson", "lease-expiry", "--cast", "/dev/full"][..],
        &["lesson", "lease-expiry", "--shot", "/dev/full"][..],
    ] {
        let o = leaselab(args, dir.path());
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "leaselab: cannot write /dev/full: No space left on device (os error 28)\n"
        );
    }
    // A fifo nobody reads is refused at once, never waited on.
    let fifo = dir.path().join("ff");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = support::leaselab_bounded(&["lesson", "lease-expiry", "--cast", "ff"], dir.path());
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "leaselab: cannot write ff: a fifo nobody reads\n"
    );
    std::fs::remove_file(&fifo).unwrap();
    // A file that runs out of room midway (the process may write 1 MiB per file, as on a
    // full disk): the file the name held before is left as it was, and nothing else.
    let lesson = long_lesson(dir.path(), 60);
    std::fs::write(dir.path().join("rec.cast"), "before\n").unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(["lesson", lesson.to_str().unwrap(), "--cast", "rec.cast"])
        .args(["--size", "200x100"])
        .current_dir(dir.path())
        .env("TMPDIR", dir.path());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let limit = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            // A write past the limit then fails with EFBIG instead of killing the process.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "leaselab: cannot write rec.cast: File too large (os error 27)\n"
    );
    let before = std::fs::read_to_string(dir.path().join("rec.cast")).unwrap();
    assert_eq!(before, "before\n");
    assert_eq!(names_in(dir.path()), ["long.toml", "rec.cast"]);
}

#[test]
fn a_stopping_signal_ends_a_recording_with_its_file_unwritten() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = long_lesson(dir.path(), 1000);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["lesson", lesson.to_str().unwrap(), "--cast", "rec.cast"])
        .args(["--size", "400x200"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The recording is under way once its temporary file holds a frame.
    let deadline = std::time::Instant::now() + support::DEADLINE;
    while !names_in(dir.path())
        .iter()
        .any(|n| n.ends_with(".tmp") && dir.path().join(n).metadata().unwrap().len() > 0)
    {
        assert!(std::time::Instant::now() < deadline, "no recording began");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = support::signal_and_wait(child, libc::SIGINT, "the recording");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "leaselab: interrupted by SIGINT; rec.cast was not written\n"
    );
    assert_eq!(names_in(dir.path()), ["long.toml"]);
}

#[test]
fn a_shot_draws_a_question_as_the_dashboard_asks_it() {
    let dir = tempfile::tempdir().unwrap();
    let shot = |extra: &[&str]| {
        let mut args = vec!["lesson", "lease-expiry", "--shot", "q.svg"];
        args.extend_from_slice(extra);
        leaselab(&args, dir.path())
    };
    let o = shot(&["--step", "3", "--question"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("q.svg")).unwrap();
    assert!(svg.contains("Predict: Worker-A is dead"), "{svg}");
    assert!(
        svg.contains("Worker-B is refused until the lease runs out"),
        "{svg}"
    );
    assert!(!svg.contains("the answer is"), "{svg}");
    // After the step, its answer.
    let o = shot(&["--step", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("q.svg")).unwrap();
    assert!(svg.contains("the answer is 2"), "{svg}");
    for (extra, says) in [
        (
            &["--step", "2", "--question"][..],
            "leaselab: --question: step 2 asks no question (the steps of lesson lease-expiry \
             that ask one: 3)\n",
        ),
        (
            &["--question"][..],
            "leaselab: --question needs --step N, the step whose question to draw (the steps \
             of lesson lease-expiry that ask one: 3)\n",
        ),
    ] {
        let o = shot(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert_eq!(stderr(&o), says);
    }
}
