//! The code's shape: no function reaches 80 lines, no file 700, no import cycle between
//! files, the engine a crate without terminal or command line, few errors that are strings.

mod graph;
mod source;

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
    let files = all_files();
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

/// The source folders of the workspace's crates.
fn source_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![root.join("src"), root.join("crates/leaselab-engine/src")]
}

/// Every source file of every crate.
fn all_files() -> Vec<PathBuf> {
    source_roots()
        .iter()
        .flat_map(|r| source::rust_files(r))
        .collect()
}

#[test]
fn no_import_cycle_between_files() {
    let mut cycles = Vec::new();
    for src in source_roots() {
        let graph = graph::Graph::of(&src);
        assert!(
            graph.edges.len() > 40,
            "{}: the scan found too few imports ({})",
            src.display(),
            graph.edges.len()
        );
        cycles.extend(graph.cycles().iter().map(|c| {
            let names: Vec<String> = c.iter().map(|f| f.display().to_string()).collect();
            names.join(" <-> ")
        }));
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// A small tree written to a temporary folder, as `(path, text)` pairs under `src/`.
fn fake_tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (name, text) in files {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (dir, src)
}

#[test]
fn the_cycle_check_finds_a_cycle_of_three_files_and_no_false_one() {
    let (_dir, src) = fake_tree(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B(super::c::C);\n"),
        (
            "c.rs",
            "pub fn f() -> crate::a::A { crate::a::A }\npub struct C;\n",
        ),
    ]);
    let cycles = graph::Graph::of(&src).cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].len(), 3, "{cycles:?}");

    // The same names through a parent's re-exports, a test module, a comment and a string
    // make no cycle: `c` reaches `a` only in its tests.
    let (_dir, src) = fake_tree(&[
        ("lib.rs", "pub mod m;\n"),
        ("m/mod.rs", "mod a;\nmod b;\npub use a::A;\npub use b::{B, self as bee};\nuse a::helper;\n"),
        ("m/a.rs", "pub struct A(super::B);\npub fn helper() {}\n"),
        ("m/b.rs", "// super::A\npub struct B;\nconst S: &str = \"crate::m::a::A\";\n#[cfg(test)]\nmod tests {\n    use super::super::A;\n}\n"),
    ]);
    let graph = graph::Graph::of(&src);
    assert!(graph.cycles().is_empty(), "{:?}", graph.cycles());
    // m -> a, m -> b (its own children) and a -> b (through the parent's re-export of B).
    assert_eq!(graph.edges.len(), 3, "{:?}", graph.edges);

    // A cycle through a parent's re-export is one: b names a, a names b as `super::B`.
    let (_dir, src) = fake_tree(&[
        (
            "lib.rs",
            "pub mod m;
",
        ),
        (
            "m/mod.rs",
            "mod a;
mod b;
pub use b::B;
",
        ),
        (
            "m/a.rs",
            "pub struct A(super::B);
",
        ),
        (
            "m/b.rs",
            "pub struct B;
fn f(_: super::a::A) {}
",
        ),
    ]);
    assert_eq!(graph::Graph::of(&src).cycles().len(), 1);

    // A module naming another's interface imports that module's file: outbox -> provider ->
    // store (the re-export in store's mod.rs) -> outbox is a cycle.
    let (_dir, src) = fake_tree(&[
        (
            "lib.rs",
            "pub mod outbox;
pub mod provider;
pub mod store;
",
        ),
        (
            "outbox/mod.rs",
            "mod error;
pub use error::Failure;
pub trait T { fn f(&self, p: &super::provider::Provider); }
",
        ),
        (
            "outbox/error.rs",
            "pub struct Failure;
",
        ),
        (
            "provider.rs",
            "use super::store::Log;
pub struct Provider;
",
        ),
        (
            "store/mod.rs",
            "mod seed;
pub use seed::Log;
use super::outbox::Failure;
",
        ),
        (
            "store/seed.rs",
            "pub trait Log {}
",
        ),
    ]);
    assert_eq!(graph::Graph::of(&src).cycles().len(), 1);

    // A file whose first `#[cfg(test)]` marks a field is still read below it.
    let (_dir, src) = fake_tree(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a.rs",
            "pub struct A {\n    #[cfg(test)]\n    n: u8,\n}\nfn f() { crate::b::g() }\n",
        ),
        ("b.rs", "pub fn g() { let _ = super::a::A; }\n"),
    ]);
    assert_eq!(graph::Graph::of(&src).cycles().len(), 1);
}

/// A file this long holds more than one job.
const MAX_FILE_LINES: usize = 700;

#[test]
fn no_source_file_is_over_seven_hundred_lines_test_modules_aside() {
    let files = all_files();
    assert!(files.len() > 100, "{}", files.len());
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, source::checked_lines(f)))
        .map(|(f, lines)| {
            let last = lines
                .iter()
                .rposition(|l| !l.trim().is_empty())
                .map_or(0, |i| i + 1);
            (f, last)
        })
        .filter(|&(_, n)| n > MAX_FILE_LINES)
        .map(|(f, n)| format!("{} ({n} lines)", f.display()))
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// How many times `Result<..., String>` is written in a text: a result whose error is a
/// bare string.
fn string_results(code: &str) -> usize {
    let chars: Vec<char> = code.chars().collect();
    let mut count = 0;
    for (byte, _) in code.match_indices("Result<") {
        let start = code[..byte].chars().count() + "Result<".len();
        let (mut depth, mut last_arg) = (0i32, start);
        for (i, &c) in chars.iter().enumerate().skip(start) {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth > 0 => depth -= 1,
                ',' if depth == 0 => last_arg = i + 1,
                '>' => {
                    let arg: String = chars[last_arg..i].iter().collect();
                    count += usize::from(last_arg > start && arg.trim() == "String");
                    break;
                }
                _ => {}
            }
        }
    }
    count
}

/// Errors are types above the engine too: few results keep their error as a bare string.
#[test]
fn at_most_twenty_results_have_a_string_for_their_error() {
    assert_eq!(
        string_results("fn a() -> Result<Vec<(u8, i64)>, String> {}\nfn b() -> Result<u8, Error> {}\ntype R = std::result::Result<String, String>;\nResult<String>"),
        2
    );
    let mut found = Vec::new();
    for f in all_files() {
        for (i, line) in source::checked_lines(&f).iter().enumerate() {
            for _ in 0..string_results(line) {
                found.push(format!("{}:{}", f.display(), i + 1));
            }
        }
    }
    eprintln!(
        "{} results with a string error:\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        found.len() <= 20,
        "{} results with a string error (at most 20)",
        found.len()
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

/// The map of where each rule lives, and the tour of the code in docs/how-it-works.md, name only files
/// that exist.
#[test]
fn the_rule_map_and_the_tour_of_the_code_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["docs/rules.md", "docs/how-it-works.md"] {
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
