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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates/leaselab-engine/src"), &mut files);
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

/// The engine stands on its own: its crate depends on no terminal, progress-bar or
/// command-line library, so the compiler refuses any reach from it into the dashboard, the
/// lessons, the scenarios or the command line.
#[test]
fn the_engine_crate_has_no_terminal_or_command_line_dependency() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("crates/leaselab-engine/Cargo.toml")).unwrap();
    let manifest: toml::Table = manifest.parse().unwrap();
    let deps = manifest["dependencies"].as_table().unwrap();
    assert!(deps.contains_key("rusqlite"), "{deps:?}");
    for forbidden in ["ratatui", "crossterm", "clap", "indicatif", "leaselab"] {
        assert!(
            !deps.contains_key(forbidden),
            "the engine depends on {forbidden}"
        );
    }
    // The application's own manifest names the engine by path, so both build as one workspace.
    let app: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(app["dependencies"]
        .as_table()
        .unwrap()
        .contains_key("leaselab-engine"));
}

/// The module path of a source file under `src/` (`src/engine/store/mod.rs` is
/// `engine::store`; `lib.rs` and `main.rs` are the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths a source text names from `crate`, `super` or `self`, each as its module path
/// segments (a `{a, b::c}` group gives one path per item), test modules and comments left out.
fn module_paths(here: &[String], text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for (at, _) in code.match_indices("::") {
        // Only a path's first `::`, right after `crate`, `super` or `self`.
        let head_start = code[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let head = &code[head_start..at];
        if !matches!(head, "crate" | "super" | "self")
            || (head_start >= 2 && &bytes[head_start - 2..head_start] == b"::")
        {
            continue;
        }
        let mut base: Vec<String> = match head {
            "crate" => Vec::new(),
            "super" => here[..here.len().saturating_sub(1)].to_vec(),
            _ => here.to_vec(),
        };
        let mut rest = &code[at + 2..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let mut path = base;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                    let mut p = path.clone();
                    p.push(ident(item));
                    found.push(p);
                }
                break;
            }
            let name = ident(rest);
            if name.is_empty() {
                found.push(path);
                break;
            }
            rest = &rest[name.len()..];
            path.push(name);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => {
                    found.push(path);
                    break;
                }
            }
        }
    }
    found
}

/// Pairs of files that import each other, a module and its own parent aside (a parent
/// re-exports what its children define).
fn mutual_imports(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let file_of = |path: &[String]| -> Option<usize> {
        (1..=path.len())
            .rev()
            .find_map(|n| modules.iter().position(|m| m.as_slice() == &path[..n]))
    };
    let mut edges = std::collections::BTreeSet::new();
    for (i, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(f).unwrap();
        for path in module_paths(&modules[i], &text) {
            if let Some(j) = file_of(&path).filter(|&j| j != i) {
                edges.insert((i, j));
            }
        }
    }
    let parent = |a: &[String], b: &[String]| a.len() + 1 == b.len() && b.starts_with(a);
    edges
        .iter()
        .filter(|&&(a, b)| a < b && edges.contains(&(b, a)))
        .filter(|&&(a, b)| !parent(&modules[a], &modules[b]) && !parent(&modules[b], &modules[a]))
        .map(|&(a, b)| format!("{} <-> {}", files[a].display(), files[b].display()))
        .collect()
}

#[test]
fn no_two_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let pairs = mutual_imports(&src, &files);
    assert!(pairs.is_empty(), "{}", pairs.join("\n"));

    // The check finds a circle: two sibling files that name each other.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("src");
    std::fs::create_dir_all(fake.join("engine")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(fake.join(name), text).unwrap();
    write("lib.rs", "pub mod engine;\n");
    write("engine/mod.rs", "pub mod a;\npub mod b;\npub use a::A;\n");
    write("engine/a.rs", "use super::{b::B, Other};\npub struct A;\n");
    write(
        "engine/b.rs",
        "use crate::engine::a::A; // crate::engine::x\npub struct B;\n",
    );
    let mut fakes = Vec::new();
    rust_files(&fake, &mut fakes);
    fakes.sort();
    let found = mutual_imports(&fake, &fakes);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a.rs") && found[0].contains("b.rs"),
        "{found:?}"
    );
}

/// The paths a text names in backticks (`src/...`, `assets/...`), without what follows a
/// space or a parenthesis.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            ["src/", "assets/", "crates/"]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .map(|t| t.split([' ', '(']).next().unwrap_or(t).to_string())
        .collect()
}

/// The map of where each rule lives, and the README's tour of the code, name only files
/// that exist.
#[test]
fn the_rule_map_and_the_readme_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["docs/rules.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let paths = named_paths(&text);
        assert!(paths.len() > 10, "{doc}: {paths:?}");
        let missing: Vec<&String> = paths.iter().filter(|p| !root.join(p).exists()).collect();
        assert!(
            missing.is_empty(),
            "{doc} names files that do not exist: {missing:?}"
        );
    }
    assert_eq!(
        named_paths("see `src/a.rs` and `src/b/ (the folder)` but not `cargo test`"),
        ["src/a.rs", "src/b/"]
    );
}
