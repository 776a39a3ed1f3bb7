//! The code's shape: no function in `src/` reaches 80 lines.

use std::path::{Path, PathBuf};

/// A function this long does more than one job.
const MAX_FN_LINES: usize = 80;

#[derive(Debug)]
struct FnSpan {
    file: PathBuf,
    name: String,
    first: usize,
    lines: usize,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The name after `fn ` when the line opens a function with a body.
fn fn_name(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return None;
    }
    let at = trimmed.find("fn ")?;
    let before = &trimmed[..at];
    let is_head = before.is_empty()
        || before.split_whitespace().all(|w| {
            matches!(w, "pub" | "const" | "unsafe" | "async" | "extern") || w.starts_with("pub(")
        });
    if !is_head {
        return None;
    }
    let rest = &trimmed[at + 3..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Every function from its `fn` line to the closing brace at the same indentation.
fn spans(file: &Path) -> Vec<FnSpan> {
    let text = std::fs::read_to_string(file).expect("source file is readable");
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let indent = line.len() - line.trim_start().len();
        let close = format!("{}}}", " ".repeat(indent));
        // A declaration without a body (trait item) ends in `;` before any `{`.
        let body_opens = lines[i..]
            .iter()
            .map(|l| l.trim_end())
            .find(|l| l.ends_with('{') || l.ends_with(';'))
            .is_some_and(|l| l.ends_with('{'));
        if !body_opens || line.trim_end().ends_with('}') {
            continue;
        }
        if let Some(end) = lines[i + 1..].iter().position(|l| l.trim_end() == close) {
            found.push(FnSpan {
                file: file.to_path_buf(),
                name: name.to_string(),
                first: i + 1,
                lines: end + 2,
            });
        }
    }
    found
}

fn all_spans() -> Vec<FnSpan> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut all: Vec<FnSpan> = files.iter().flat_map(|f| spans(f)).collect();
    all.sort_by_key(|s| std::cmp::Reverse(s.lines));
    all
}

#[test]
fn no_function_in_src_reaches_eighty_lines() {
    let all = all_spans();
    assert!(
        all.len() > 100,
        "the scan found too few functions: {}",
        all.len()
    );
    let longest = &all[0];
    eprintln!(
        "longest function: {} ({}:{}) {} lines",
        longest.name,
        longest.file.display(),
        longest.first,
        longest.lines
    );
    let too_long: Vec<String> = all
        .iter()
        .filter(|s| s.lines >= MAX_FN_LINES)
        .map(|s| {
            format!(
                "{}:{} {} ({} lines)",
                s.file.display(),
                s.first,
                s.name,
                s.lines
            )
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "functions of {MAX_FN_LINES} lines or more:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn the_scan_measures_a_function_from_fn_to_its_closing_brace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sample.rs");
    let body = "    let x = 1;\n".repeat(5);
    std::fs::write(
        &file,
        format!("pub fn outer() {{\n{body}}}\n\nimpl T {{\n    fn inner(&self) {{\n{body}    }}\n    fn decl(&self);\n}}\n"),
    )
    .unwrap();
    let found = spans(&file);
    let by_name = |n: &str| found.iter().find(|s| s.name == n).map(|s| s.lines);
    assert_eq!(by_name("outer"), Some(7));
    assert_eq!(by_name("inner"), Some(7));
    assert_eq!(by_name("decl"), None);
}

/// The `crate::NAME` paths a source text reaches for, comments left out.
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

/// The engine stands on its own: nothing under `src/engine` reaches the dashboard, the
/// lessons, the scenarios or the command line.
#[test]
fn no_module_of_the_engine_imports_anything_outside_it() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine"),
        &mut files,
    );
    assert!(files.len() > 20, "{files:?}");
    let mut outside = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for name in crate_paths(&text) {
            if name != "engine" {
                outside.push(format!("{}: crate::{name}", f.display()));
            }
        }
    }
    assert!(outside.is_empty(), "{}", outside.join("\n"));
    // The check reads what it should: a path outside the engine is found.
    assert_eq!(crate_paths("use crate::ui::App; // crate::x"), ["ui"]);
}
