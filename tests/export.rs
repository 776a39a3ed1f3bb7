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
    let steps = leaselab::lesson::built_in("lease-expiry")
        .unwrap()
        .steps
        .len();
    let (mut outputs, mut markers, mut last_time) = (0, Vec::new(), -1.0);
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let e = event.as_array().expect("an event is an array");
        assert_eq!(e.len(), 3, "{line}");
        let at = e[0].as_f64().expect("a time");
        assert!(at >= last_time, "times never go back: {line}");
        last_time = at;
        match e[1].as_str() {
            Some("o") => {
                outputs += 1;
                assert!(
                    e[2].as_str().unwrap().contains("Worker-A"),
                    "a whole screen"
                );
            }
            Some("m") => markers.push(e[2].as_str().unwrap().to_string()),
            other => panic!("unknown event type {other:?}"),
        }
    }
    assert_eq!(outputs, steps + 1, "the start and every step");
    assert_eq!(markers.len(), steps + 1);
    assert_eq!(markers[3], format!("step 3 of {steps}"));
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
