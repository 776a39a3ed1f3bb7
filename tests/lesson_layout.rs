//! The lesson layer's shape, read from every line of `src/lesson`: files of one job each,
//! short functions, and no circle of imports between its files, of any length.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file this long does more than one job (its test module aside).
const MAX_FILE_LINES: usize = 700;
/// A function this long does more than one job.
const MAX_FN_LINES: usize = 80;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the folder is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a file up to its test module: a `#[cfg(test)]` on the line before a `mod`.
/// A `#[cfg(test)]` on a field or a statement cuts nothing.
fn code_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines
                    .get(i + 1)
                    .is_some_and(|l| l.trim_start().starts_with("mod "))
        })
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// Each function of the lines, as its name and length from `fn` to its closing brace.
fn functions(lines: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(at) = trimmed.find("fn ") else {
            continue;
        };
        let head = trimmed[..at]
            .split_whitespace()
            .all(|w| matches!(w, "pub" | "const" | "unsafe" | "async") || w.starts_with("pub("));
        if !head || trimmed.starts_with("//") || line.trim_end().ends_with('}') {
            continue;
        }
        let close = format!("{}}}", &line[..line.len() - trimmed.len()]);
        let opens = lines[i..]
            .iter()
            .map(|l| l.trim_end())
            .find(|l| l.ends_with('{') || l.ends_with(';'))
            .is_some_and(|l| l.ends_with('{'));
        if let Some(end) = lines[i + 1..]
            .iter()
            .position(|l| *l == close)
            .filter(|_| opens)
        {
            let name: String = trimmed[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((name, end + 2));
        }
    }
    found
}

/// The module path of a file under `src/` (`lesson/format/mod.rs` is `lesson::format`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The module paths a file's code names from `crate::`, `super::` or `self::`, one per
/// item of a `{...}` group, comments left out.
fn named_paths(here: &[String], lines: &[&str]) -> Vec<Vec<String>> {
    let code: String = lines
        .iter()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("::") {
        let start = code[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let head = &code[start..at];
        if !matches!(head, "crate" | "super" | "self") || code[..start].ends_with("::") {
            continue;
        }
        let mut path: Vec<String> = match head {
            "crate" => Vec::new(),
            "super" => here[..here.len().saturating_sub(1)].to_vec(),
            _ => here.to_vec(),
        };
        let mut rest = &code[at + 2..];
        while let Some(r) = rest.strip_prefix("super::") {
            path.pop();
            rest = r;
        }
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                    let mut p = path.clone();
                    p.extend(item.split("::").map(ident));
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

/// What a folder's `mod.rs` re-exports from its children: a name -> the child's name.
fn re_exports(lines: &[&str]) -> BTreeMap<String, String> {
    let text = lines.join("\n");
    let mut out = BTreeMap::new();
    for stmt in text.split(';') {
        let Some(body) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let body = body.strip_prefix("self::").unwrap_or(body);
        let child = ident(body);
        let items = body[child.len()..].trim_start_matches("::");
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            out.insert(
                ident(item.rsplit("::").next().unwrap_or(item)),
                child.clone(),
            );
        }
    }
    out
}

/// Which file imports which: a path resolves to the deepest file whose module it names,
/// and a name a `mod.rs` only re-exports, to the child that defines it. A `mod.rs`
/// declaring or re-exporting its own children imports nothing by it.
fn import_graph(src: &Path, files: &[PathBuf]) -> BTreeSet<(usize, usize)> {
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let is_mod = |i: usize| files[i].file_name().is_some_and(|n| n == "mod.rs");
    let exports: Vec<_> = texts.iter().map(|t| re_exports(&code_lines(t))).collect();
    let position = |m: &[String]| modules.iter().position(|x| x.as_slice() == m);
    let resolve = |path: &[String]| -> Option<usize> {
        let n = (1..=path.len())
            .rev()
            .find(|&n| position(&path[..n]).is_some())?;
        let file = position(&path[..n])?;
        let child = path
            .get(n)
            .and_then(|name| exports[file].get(name))
            .and_then(|c| position(&[&path[..n], std::slice::from_ref(c)].concat()));
        Some(child.unwrap_or(file))
    };
    let mut edges = BTreeSet::new();
    for (i, text) in texts.iter().enumerate() {
        for path in named_paths(&modules[i], &code_lines(text)) {
            let Some(j) = resolve(&path).filter(|&j| j != i) else {
                continue;
            };
            let own_child = is_mod(i) && modules[j].starts_with(&modules[i]);
            if !own_child {
                edges.insert((i, j));
            }
        }
    }
    edges
}

/// Each file that can reach itself through imports, with the circle it lies on.
fn circles(files: &[PathBuf], edges: &BTreeSet<(usize, usize)>) -> Vec<String> {
    let reach = |from: usize| -> Vec<Option<usize>> {
        // Breadth first, keeping each file's predecessor, so a circle can be spelled out.
        let mut came = vec![None; files.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(a) = queue.pop_front() {
            for &(_, b) in edges.range((a, 0)..(a + 1, 0)) {
                if came[b].is_none() {
                    came[b] = Some(a);
                    queue.push_back(b);
                }
            }
        }
        came
    };
    let name = |i: usize| files[i].display().to_string();
    let mut found = Vec::new();
    for start in 0..files.len() {
        let came = reach(start);
        let Some(mut at) = came[start] else { continue };
        let mut circle = vec![name(start)];
        while at != start {
            circle.push(name(at));
            at = came[at].expect("on the way back to the start");
        }
        circle.push(name(start));
        circle.reverse();
        found.push(circle.join(" -> "));
    }
    found
}

fn lesson_files() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("lesson"), &mut files);
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    (src, files)
}

#[test]
fn every_lesson_file_is_short_and_so_is_every_function_in_it() {
    let (_, files) = lesson_files();
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines = code_lines(&text);
        if lines.len() > MAX_FILE_LINES {
            problems.push(format!("{}: {} lines", f.display(), lines.len()));
        }
        for (name, n) in functions(&lines) {
            if n >= MAX_FN_LINES {
                problems.push(format!("{}: fn {name} is {n} lines", f.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reading_counts_past_a_field_marked_for_tests() {
    let long_fn = format!("fn long() {{\n{}}}\n", "    let x = 1;\n".repeat(90));
    let text = format!(
        "struct S {{\n    #[cfg(test)]\n    probes: u32,\n}}\n{long_fn}#[cfg(test)]\nmod tests {{\n{long_fn}}}\n"
    );
    let lines = code_lines(&text);
    assert_eq!(lines.len(), 4 + 92);
    assert_eq!(functions(&lines), [("long".to_string(), 92)]);
}

#[test]
fn no_lesson_file_imports_itself_round_a_circle() {
    let (src, files) = lesson_files();
    let edges = import_graph(&src, &files);
    assert!(edges.len() >= 4, "too few imports found: {edges:?}");
    let found = circles(&files, &edges);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_circle_of_three_files_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("lesson/format")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write(
        "lesson/mod.rs",
        "pub mod a;\npub mod c;\npub mod format;\npub use c::C;\npub use format::F;\n",
    );
    write(
        "lesson/a.rs",
        "use super::format::F; // crate::lesson::b\npub struct A;\n",
    );
    write(
        "lesson/format/mod.rs",
        "mod b;\npub use b::{F, G};\npub use self::b::H;\n",
    );
    write("lesson/format/b.rs", "pub struct F(crate::lesson::C);\n");
    write("lesson/c.rs", "pub struct C(super::a::A);\n");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let edges = import_graph(&src, &files);
    let found = circles(&files, &edges);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found[0].contains("a.rs -> ") && found[0].contains("b.rs") && found[0].contains("c.rs"),
        "{found:?}"
    );
    // Without the last link there is no circle; a mod.rs naming its own child is none.
    write("lesson/c.rs", "pub struct C;\n");
    assert!(circles(&files, &import_graph(&src, &files)).is_empty());
}
