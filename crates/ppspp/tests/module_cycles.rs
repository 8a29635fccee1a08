//! The core's files import each other without cycles: read from the `use` lines and the
//! `crate::`/`super::` paths of `src/` (tests and comments left out), a file may name its
//! ancestors (a child uses what its parent defines) and any file that does not, through
//! others, name it back. A cycle means two concerns that cannot be read, tested or moved
//! apart; the failure names the files in it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`["engine", "timers"]`; the root is `[]`).
type ModPath = Vec<String>;

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without its unit tests (a trailing `#[cfg(test)] mod`) and comments.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            // A `//` inside a string ("https://…") cuts the line short, which only loses
            // paths after it on that line.
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path a use tree names, flattened: `a::{b::C, d}` gives `a::b::C` and `a::d`.
fn use_tree_paths(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        // Split at the commas of this level only.
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_tree_paths(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        use_tree_paths(&inner[start..], &base, out);
        return;
    }
    let name = tree.split(" as ").next().unwrap_or("").trim();
    if name.is_empty() {
        return;
    }
    let mut path = prefix.to_vec();
    path.extend(
        name.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_owned),
    );
    out.push(path);
}

/// The paths a file's code names: its `use` trees, and `crate::…`/`super::…` paths inline.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let starts_word = rest[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = &rest[i + 4..];
        match after.find(';') {
            Some(end) if starts_word => {
                use_tree_paths(&after[..end], &[], &mut out);
                rest = &after[end..];
            }
            _ => rest = after,
        }
    }
    for head in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(head).map(|i| i + from) {
            from = i + head.len();
            if code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| is_ident(c) || c == ':')
            {
                continue;
            }
            let end = code[i..]
                .find(|c: char| !(is_ident(c) || c == ':'))
                .map_or(code.len(), |e| i + e);
            out.push(code[i..end].split("::").map(str::to_owned).collect());
        }
    }
    out
}

/// The file a path names: the deepest module along it, from module `at`.
fn resolve(at: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let (mut base, rest): (ModPath, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (at.clone(), &path[1..]),
        Some("super") => {
            let mut base = at.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        // A path relative to this module: only its children are files.
        Some(_) => (at.clone(), path),
        None => return None,
    };
    let mut found = modules.contains(&base).then(|| base.clone());
    for segment in rest {
        base.push(segment.clone());
        if modules.contains(&base) {
            found = Some(base.clone());
        } else {
            break;
        }
    }
    found.filter(|m| m != at)
}

/// Strongly connected groups of more than one file (Tarjan).
fn cycles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let last = &w == v;
                group.push(w);
                if last {
                    break;
                }
            }
            if group.len() > 1 {
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn import_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut files = Vec::new();
    source_files(src, &mut files);
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &files {
        let at = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("source file");
        let targets = edges.entry(at.clone()).or_default();
        for path in named_paths(&code_of(&text)) {
            if let Some(to) = resolve(&at, &path, &modules)
                && !at.starts_with(&to)
            {
                targets.insert(to);
            }
        }
    }
    edges
}

#[test]
fn the_core_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = import_graph(&src);
    assert!(edges.len() > 50, "read only {} files", edges.len());
    let name = |m: &ModPath| match m.is_empty() {
        true => "lib".to_owned(),
        false => m.join("::"),
    };
    // Each cycle as the imports within it, so the one to break can be picked.
    let found: Vec<Vec<String>> = cycles(&edges)
        .iter()
        .map(|group| {
            let inside: BTreeSet<&ModPath> = group.iter().collect();
            let mut imports = Vec::new();
            for from in group {
                for to in edges.get(from).into_iter().flatten() {
                    if inside.contains(to) {
                        imports.push(format!("{} uses {}", name(from), name(to)));
                    }
                }
            }
            imports.sort();
            imports
        })
        .collect();
    assert!(found.is_empty(), "import cycles: {found:#?}");
}

#[test]
fn a_cycle_is_found_and_a_child_may_name_its_parent() {
    let m = |s: &str| -> ModPath { s.split('/').map(str::to_owned).collect() };
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    edges.entry(m("a/b")).or_default().insert(m("a/c"));
    edges.entry(m("a/c")).or_default().insert(m("a/d"));
    edges.entry(m("a/d")).or_default().insert(m("a/b"));
    edges.entry(m("e")).or_default().insert(m("a/b"));
    assert_eq!(cycles(&edges).len(), 1);
    assert_eq!(cycles(&edges)[0].len(), 3);

    let modules: BTreeSet<ModPath> = [vec![], m("engine"), m("engine/timers"), m("live")]
        .into_iter()
        .collect();
    let paths = named_paths(
        "use super::{Engine, timers::X};\nuse crate::live::{self, LiveInfo};\n\
         fn f() { crate::live::SIGN_ALL; }",
    );
    let at = m("engine/timers");
    let resolved: BTreeSet<ModPath> = paths
        .iter()
        .filter_map(|p| resolve(&at, p, &modules))
        .collect();
    assert!(resolved.contains(&m("live")));
    assert!(resolved.contains(&m("engine")), "{resolved:?}");
}
