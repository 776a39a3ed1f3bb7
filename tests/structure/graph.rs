//! The import graph between a crate's files, and the cycles in it. A file imports another
//! when its code names a path (`crate::`, `super::`, `self::`, or one of its own child
//! modules) into that file's module. A file is part of every module that encloses it, so
//! a name of an enclosing module is followed to where it stands for: an item that module
//! defines is the file's own, and one it re-exports (`pub use child::Y`) is an import of
//! the file that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::source::{checked_lines, rust_files};

/// One crate's files, their module paths, what each re-exports and whom each imports.
pub struct Graph {
    pub files: Vec<PathBuf>,
    modules: Vec<Vec<String>>,
    /// Per file: an exported name and the path it stands for (None: outside the crate).
    reexports: Vec<BTreeMap<String, Option<Vec<String>>>>,
    pub edges: BTreeSet<(usize, usize)>,
}

/// The module path of a source file under `src` (`src/store/mod.rs` is `store`;
/// `lib.rs` and `main.rs` are the root).
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A use tree's leaves from `at`: each leaf's segments and the name it is bound to.
fn use_leaves(code: &[char], mut at: usize, prefix: &[String]) -> Vec<(Vec<String>, String)> {
    let mut path = prefix.to_vec();
    loop {
        while code.get(at).is_some_and(|c| c.is_whitespace()) {
            at += 1;
        }
        match code.get(at) {
            Some('{') => return group(code, at + 1, &path),
            Some('*') => return vec![(path, "*".into())],
            _ => {}
        }
        let start = at;
        while code.get(at).copied().is_some_and(is_ident) {
            at += 1;
        }
        let name: String = code[start..at].iter().collect();
        if name.is_empty() {
            return vec![(path.clone(), path.last().cloned().unwrap_or_default())];
        }
        if code[at..].starts_with(&[':', ':']) {
            path.push(name);
            at += 2;
            continue;
        }
        let bound = alias(code, at).unwrap_or_else(|| name.clone());
        if name != "self" {
            path.push(name);
        }
        return vec![(path, bound)];
    }
}

/// The leaves of a `{a, b::c}` group opened just before `at`.
fn group(code: &[char], at: usize, prefix: &[String]) -> Vec<(Vec<String>, String)> {
    let mut leaves = Vec::new();
    let (mut depth, mut item_start) = (0usize, at);
    for i in at..code.len() {
        match code[i] {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => {
                if code[item_start..i].iter().any(|&c| is_ident(c) || c == '*') {
                    leaves.extend(use_leaves(code, item_start, prefix));
                }
                if code[i] == '}' {
                    break;
                }
                item_start = i + 1;
            }
            _ => {}
        }
    }
    leaves
}

/// `as NAME` after a leaf.
fn alias(code: &[char], at: usize) -> Option<String> {
    let rest: String = code[at..code.len().min(at + 80)].iter().collect();
    let rest = rest.trim_start().strip_prefix("as ")?;
    Some(
        rest.trim_start()
            .chars()
            .take_while(|&c| is_ident(c))
            .collect(),
    )
}

/// Where the use tree of each `pub use ...;` statement starts.
fn reexport_trees(code: &[char]) -> Vec<usize> {
    let text: String = code.iter().collect();
    let mut spans = Vec::new();
    for (byte, _) in text.match_indices("pub") {
        let at = text[..byte].chars().count();
        if at > 0 && is_ident(code[at - 1]) {
            continue;
        }
        let mut i = at + 3;
        if code.get(i) == Some(&'(') {
            i += code[i..]
                .iter()
                .position(|&c| c == ')')
                .map_or(0, |p| p + 1);
        }
        while code.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if code[i..].starts_with(&['u', 's', 'e', ' ']) {
            spans.push(i + 4);
        }
    }
    spans
}

impl Graph {
    /// The graph of the crate whose source folder is `src`.
    pub fn of(src: &Path) -> Graph {
        let files = rust_files(src);
        let modules = files.iter().map(|f| module_of(src, f)).collect();
        let mut graph = Graph {
            reexports: vec![BTreeMap::new(); files.len()],
            files,
            modules,
            edges: BTreeSet::new(),
        };
        let codes: Vec<Vec<char>> = graph
            .files
            .iter()
            .map(|f| checked_lines(f).join("\n").chars().collect())
            .collect();
        for (i, code) in codes.iter().enumerate() {
            for tree in reexport_trees(code) {
                for (path, bound) in use_leaves(code, tree, &[]) {
                    let target = graph.absolute(i, &path);
                    graph.reexports[i].insert(bound, target);
                }
            }
        }
        for (i, code) in codes.iter().enumerate() {
            for path in graph.paths_in(i, code) {
                if let Some(j) = graph.resolve(i, &path, 0).filter(|&j| j != i) {
                    graph.edges.insert((i, j));
                }
            }
        }
        graph
    }

    fn file_of(&self, module: &[String]) -> Option<usize> {
        self.modules.iter().position(|m| m.as_slice() == module)
    }

    fn is_child(&self, file: usize, name: &str) -> bool {
        let mut child = self.modules[file].clone();
        child.push(name.to_string());
        self.file_of(&child).is_some()
    }

    /// A path as written in `file`, made absolute from the crate root; None when it starts
    /// outside the crate (another crate, or a name brought in by a `use`).
    fn absolute(&self, file: usize, path: &[String]) -> Option<Vec<String>> {
        let here = &self.modules[file];
        let (head, rest) = path.split_first()?;
        let mut base = match head.as_str() {
            "crate" => Vec::new(),
            "self" => here.clone(),
            "super" => here[..here.len().saturating_sub(1)].to_vec(),
            child if self.is_child(file, child) => {
                let mut m = here.clone();
                m.push(child.to_string());
                m
            }
            _ => return None,
        };
        let mut rest = rest;
        while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
            base.pop();
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// True when `outer`'s module encloses `inner`'s (or is it).
    fn encloses(&self, outer: usize, inner: usize) -> bool {
        self.modules[inner].starts_with(&self.modules[outer])
    }

    /// The file an absolute path named in `from` imports: the module file the path lands
    /// in, or, when that module encloses `from`, the file its re-export of the next name
    /// stands for (None: an item of the enclosing module itself, or of another crate).
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<usize> {
        let n = (0..=path.len())
            .rev()
            .find(|&n| self.file_of(&path[..n]).is_some())?;
        let file = self.file_of(&path[..n])?;
        if !self.encloses(file, from) {
            return Some(file);
        }
        match path.get(n).and_then(|next| self.reexports[file].get(next)) {
            Some(Some(target)) if depth < 16 => {
                let mut full = target.clone();
                full.extend(path[n + 1..].iter().cloned());
                self.resolve(from, &full, depth + 1)
            }
            _ => None,
        }
    }

    /// Every path the code of `file` names, made absolute.
    fn paths_in(&self, file: usize, code: &[char]) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        let text: String = code.iter().collect();
        let char_at: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        for (byte, _) in text.match_indices("::") {
            let at = char_at.partition_point(|&b| b < byte);
            let start = (0..at)
                .rev()
                .find(|&k| !is_ident(code[k]))
                .map_or(0, |k| k + 1);
            if start == at || (start >= 2 && code[start - 2..start] == [':', ':']) {
                continue;
            }
            let head: String = code[start..at].iter().collect();
            let relative =
                matches!(head.as_str(), "crate" | "super" | "self") || self.is_child(file, &head);
            if !relative {
                continue;
            }
            for (path, _) in use_leaves(code, start, &[]) {
                if let Some(abs) = self.absolute(file, &path) {
                    found.push(abs);
                }
            }
        }
        found
    }

    /// The groups of two or more files that reach each other (Tarjan's strongly connected
    /// components), each as its files' paths.
    pub fn cycles(&self) -> Vec<Vec<PathBuf>> {
        let n = self.files.len();
        let mut tarjan = Tarjan {
            next: vec![Vec::new(); n],
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            found: Vec::new(),
        };
        for &(a, b) in &self.edges {
            tarjan.next[a].push(b);
        }
        for v in 0..n {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        tarjan
            .found
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| c.into_iter().map(|i| self.files[i].clone()).collect())
            .collect()
    }
}

struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.next[v].clone() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort();
            self.found.push(component);
        }
    }
}
