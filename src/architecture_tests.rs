//! The house's rules, as tests: modules use only the layers below them (and their own), and no
//! two modules, and no two files, import each other in a circle. `docs/architecture.md`
//! explains each layer.
//!
//! The scanner reads every source file with its comments and the insides of its string and
//! character literals blanked, and finds each path that starts at `crate::`, `super::` or
//! `self::`, in `use` lines and in code, grouped ones (`use crate::{a::b, c::{d, e}}`) taken
//! apart. It resolves each to the module it names (`super::super::ast` in
//! `src/script/eval/expect.rs` is `script::ast`; `super` inside an inline `mod tests { ... }`
//! is the file's own module), and to the file that module is written in, so an import is
//! judged by where it lands, however it is spelt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use its own layer and those below it.
const LAYERS: &[(&str, &[&str])] = &[
    ("diagnostics", &["diag"]),
    ("data", &["dtype", "buffer", "value", "finding", "cost", "launch"]),
    ("CUDA front end", &["cuda", "python"]),
    ("engines", &["backend", "script"]),
    ("views", &["render"]),
    ("session", &["session"]),
    ("input runner", &["runner"]),
    ("course", &["lesson"]),
    ("runners", &["replay"]),
    ("prompt", &["repl"]),
    ("program", &["app", "cli", "doctor"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("src/ entries are readable").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The module a file holds: `src/session/cost.rs` -> `session::cost`, `src/session.rs` ->
/// `session`, `src/lib.rs` -> the crate root (no segments).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src/");
    let mut path: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
    let last = path.pop().expect("a file");
    let stem = last.trim_end_matches(".rs");
    let root = path.is_empty() && matches!(stem, "lib" | "main");
    if stem != "mod" && !root {
        path.push(stem.to_string());
    }
    path
}

/// The files the scanner judges: all but the crate root, which names every module, and this
/// test, which names them all in its examples.
fn judged(src: &Path) -> Vec<(PathBuf, Vec<String>, String)> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let name = f.strip_prefix(src).unwrap_or(f).to_string_lossy().to_string();
            !matches!(name.as_str(), "lib.rs" | "main.rs" | "architecture_tests.rs")
        })
        .map(|f| {
            let module = module_path(src, &f);
            let text = std::fs::read_to_string(&f).expect("source is readable");
            (f, module, text)
        })
        .collect()
}

/// The modules that have a file of their own, to tell a path to a child module (`lexer::lex`)
/// from a path to a crate (`std::fmt`).
fn file_modules(all: &[(PathBuf, Vec<String>, String)]) -> BTreeSet<Vec<String>> {
    all.iter().map(|(_, m, _)| m.clone()).collect()
}

/// `text` with comments and the insides of string and character literals turned to spaces
/// (newlines kept, so line numbers still hold): what is left is code.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let keep_lines = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        match c[i] {
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < c.len() && c[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let mut depth = 0usize;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        keep_lines(&mut out, c[i]);
                        i += 1;
                    }
                }
            }
            // A raw string: `r"..."`, `r#"..."#`, `br"..."`.
            'r' if (!prev_ident || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
                && matches!(c.get(i + 1), Some('"' | '#')) =>
            {
                let mut j = i + 1;
                while c.get(j) == Some(&'#') {
                    j += 1;
                }
                if c.get(j) != Some(&'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let hashes = j - i - 1;
                out.push('r');
                out.push('"');
                i = j + 1;
                while i < c.len() {
                    if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                        out.push('"');
                        i += 1 + hashes;
                        break;
                    }
                    keep_lines(&mut out, c[i]);
                    i += 1;
                }
            }
            '"' => {
                out.push('"');
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        out.push(' ');
                        i += 1;
                    }
                    if i < c.len() {
                        keep_lines(&mut out, c[i]);
                        i += 1;
                    }
                }
                out.push('"');
                i += 1;
            }
            // A character literal (`'{'`, `'\n'`, `'\u{1b}'`), not a lifetime (`'a`).
            '\'' if c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'') => {
                out.push('\'');
                i += 1;
                if c.get(i) == Some(&'\\') {
                    // The backslash and the character it escapes (which may be a quote).
                    out.push_str("  ");
                    i += 2;
                }
                while i < c.len() && c[i] != '\'' {
                    out.push(' ');
                    i += 1;
                }
                out.push('\'');
                i += 1;
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// One path a file names, resolved from the crate root, and the line it is on.
#[derive(Debug, PartialEq)]
struct Named {
    line: usize,
    path: Vec<String>,
}

/// Every path in `code` (already [`blank`]ed) that starts at `crate::`, `super::` or `self::`,
/// or at a child module of the one it is written in (`lexer::lex` in `src/cuda.rs`, which
/// `is_module` says is a module), resolved from the crate root, for a file holding module
/// `module`. Grouped imports give one path each; `super` and `self` count from the inline
/// module they are written in.
fn named_paths(module: &[String], code: &str, is_module: &dyn Fn(&[String]) -> bool) -> Vec<Named> {
    let c: Vec<char> = code.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let word_at = |i: usize| -> String { c[i..].iter().take_while(|&&ch| ident(ch)).collect() };
    let mut found = Vec::new();
    // Inline modules open here: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\n' => line += 1,
            '{' => depth += 1,
            '}' => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            ch if ident(ch) && (i == 0 || !ident(c[i - 1])) && c.get(i.wrapping_sub(1)) != Some(&'$') => {
                let word = word_at(i);
                let after = i + word.chars().count();
                if word == "mod" {
                    // `mod name {` opens an inline module; `mod name;` is a file of its own.
                    let mut j = after;
                    while c.get(j).is_some_and(|ch| ch.is_whitespace()) {
                        j += 1;
                    }
                    let name = word_at(j.min(c.len()));
                    let mut k = j + name.chars().count();
                    while c.get(k).is_some_and(|ch| ch.is_whitespace()) {
                        k += 1;
                    }
                    if !name.is_empty() && c.get(k) == Some(&'{') {
                        inline.push((name, depth + 1));
                    }
                } else if c.get(after) == Some(&':')
                    && c.get(after + 1) == Some(&':')
                    && !(i >= 2 && c[i - 2] == ':' && c[i - 1] == ':')
                    && (matches!(word.as_str(), "crate" | "super" | "self") || {
                        let mut child: Vec<String> = module.to_vec();
                        child.extend(inline.iter().map(|(n, _)| n.clone()));
                        child.push(word.clone());
                        is_module(&child)
                    })
                {
                    let mut here: Vec<String> = module.to_vec();
                    here.extend(inline.iter().map(|(n, _)| n.clone()));
                    let mut raw = Vec::new();
                    let mut j = i;
                    tree(&c, &mut j, Vec::new(), &mut raw);
                    for r in raw {
                        found.push(Named { line, path: resolve(&here, &r) });
                    }
                    line += c[i..j.max(i)].iter().filter(|&&ch| ch == '\n').count();
                    i = j.max(i + 1);
                    continue;
                }
                i = after;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Read one path, or one tree of paths (`a::{b, c::{d, e}}`), from `c[*i..]` into `out`, each
/// as written (`super`, `self` and `crate` not yet resolved).
fn tree(c: &[char], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let skip_space = |i: &mut usize| {
        while c.get(*i).is_some_and(|ch| ch.is_whitespace()) {
            *i += 1;
        }
    };
    loop {
        skip_space(i);
        match c.get(*i) {
            Some('{') => {
                *i += 1;
                loop {
                    skip_space(i);
                    match c.get(*i) {
                        None => return,
                        Some('}') => {
                            *i += 1;
                            return;
                        }
                        Some(',') => *i += 1,
                        _ => {
                            tree(c, i, prefix.clone(), out);
                            // `as name` after a path: skip to the next item.
                            while c.get(*i).is_some_and(|&ch| ch != ',' && ch != '}') {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            Some('*') => {
                *i += 1;
                prefix.push("*".into());
                out.push(prefix);
                return;
            }
            Some(&ch) if ident(ch) => {
                let word: String = c[*i..].iter().take_while(|&&ch| ident(ch)).collect();
                *i += word.chars().count();
                prefix.push(word);
                let more = c.get(*i) == Some(&':') && c.get(*i + 1) == Some(&':');
                if !more || c.get(*i + 2) == Some(&'<') {
                    out.push(prefix);
                    return;
                }
                *i += 2;
            }
            _ => {
                if !prefix.is_empty() {
                    out.push(prefix);
                }
                return;
            }
        }
    }
}

/// A path as written, from inside module `here`, as a path from the crate root.
fn resolve(here: &[String], raw: &[String]) -> Vec<String> {
    let mut path: Vec<String> = here.to_vec();
    for (n, seg) in raw.iter().enumerate() {
        match seg.as_str() {
            "crate" if n == 0 => path.clear(),
            "super" => {
                path.pop();
            }
            "self" => {}
            _ => path.push(seg.clone()),
        }
    }
    path
}

/// The file a resolved path lands in: the longest front part of it that is a file's module.
fn file_of<'a>(path: &[String], files: &'a BTreeMap<Vec<String>, PathBuf>) -> Option<&'a PathBuf> {
    (1..=path.len()).rev().find_map(|k| files.get(&path[..k]))
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    let all = judged(&src);
    let modules = file_modules(&all);
    for (file, module, text) in &all {
        let top = module.first().cloned().unwrap_or_default();
        let Some(own) = layer_of(&top) else {
            problems.push(format!("{}: module `{top}` has no layer in LAYERS", file.display()));
            continue;
        };
        for named in named_paths(module, &blank(text), &|m| modules.contains(m)) {
            let Some(used) = named.path.first() else { continue };
            let Some(theirs) = layer_of(used) else { continue };
            if theirs > own {
                problems.push(format!(
                    "{}:{}: `{top}` ({}) uses `crate::{}` ({}), a layer above it; move the shared part down or add an extension point (see docs/architecture.md)",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    named.line,
                    LAYERS[own].0,
                    named.path.join("::"),
                    LAYERS[theirs].0
                ));
            }
        }
    }
    assert!(problems.is_empty(), "upward imports:\n{}", problems.join("\n"));
}

/// A circle in `edges`, if there is one: its nodes in order, the first repeated at the end.
fn circle<T: Ord + Clone>(edges: &BTreeMap<T, BTreeSet<T>>) -> Option<Vec<T>> {
    fn visit<T: Ord + Clone>(
        m: &T,
        edges: &BTreeMap<T, BTreeSet<T>>,
        path: &mut Vec<T>,
        done: &mut BTreeSet<T>,
    ) -> Option<Vec<T>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.clone());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.clone());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.clone());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let all = judged(&src);
    let modules = file_modules(&all);
    for (_, module, text) in &all {
        let top = module.first().cloned().unwrap_or_default();
        for named in named_paths(module, &blank(text), &|m| modules.contains(m)) {
            if let Some(used) = named.path.first()
                && *used != top
                && layer_of(used).is_some()
            {
                edges.entry(top.clone()).or_default().insert(used.clone());
            }
        }
    }
    if let Some(cycle) = circle(&edges) {
        panic!("modules import each other in a circle: {}", cycle.join(" -> "));
    }
}

/// Two files that import each other, even inside one module, are one file split in two: a
/// change to either needs the other. A module's own file is the one exception on one side: it
/// declares its children and may use and re-export what they define (`session.rs` and
/// `session/cost.rs`), so its arrows down to them are not counted; theirs up to it, and every
/// arrow between siblings or across modules, are.
#[test]
fn no_two_files_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = judged(&src);
    let files: BTreeMap<Vec<String>, PathBuf> =
        all.iter().map(|(f, m, _)| (m.clone(), f.strip_prefix(&src).unwrap_or(f).to_path_buf())).collect();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut why: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (file, module, text) in &all {
        let from = file.strip_prefix(&src).unwrap_or(file).to_path_buf();
        for named in named_paths(module, &blank(text), &|m| files.contains_key(m)) {
            let down = named.path.starts_with(module) && named.path.len() > module.len();
            if let Some(to) = file_of(&named.path, &files)
                && *to != from
                && !down
            {
                edges.entry(from.clone()).or_default().insert(to.clone());
                why.entry((from.clone(), to.clone())).or_default().insert(named.path.join("::"));
            }
        }
    }
    // Every circle, not just the first: take one arrow of each found out and look again.
    let mut circles = Vec::new();
    while let Some(cycle) = circle(&edges) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let names: Vec<String> =
                    why.get(&(w[0].clone(), w[1].clone())).into_iter().flatten().cloned().collect();
                format!("  {} -> {}: {}", w[0].display(), w[1].display(), names.join(", "))
            })
            .collect();
        circles.push(steps.join("\n"));
        let (from, to) = (&cycle[cycle.len() - 2], &cycle[cycle.len() - 1]);
        edges.get_mut(from).expect("an arrow of the circle").remove(to);
    }
    assert!(
        circles.is_empty(),
        "files import each other in a circle; move what both need into a file of its own below them:\n{}",
        circles.join("\n\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs is readable");
    for line in lib.lines() {
        if let Some(name) = line.strip_prefix("pub mod ").and_then(|l| l.strip_suffix(';')) {
            assert!(layer_of(name).is_some(), "`{name}` is not in LAYERS: give it a layer");
        }
    }
}

#[test]
fn the_scanner_resolves_paths_however_they_are_spelt() {
    let m = |s: &str| -> Vec<String> { s.split("::").filter(|s| !s.is_empty()).map(String::from).collect() };
    let paths = |module: &str, code: &str| -> Vec<String> {
        let children = [m("cuda::lexer")];
        named_paths(&m(module), &blank(code), &|p| children.iter().any(|c| c == p))
            .into_iter()
            .map(|n| n.path.join("::"))
            .collect()
    };
    assert_eq!(paths("session", "use crate::session::{Session, Status};"), ["session::Session", "session::Status"]);
    assert_eq!(
        paths("lesson::guide", "    let x = crate::lesson::guide::f(crate::diag::Span::new());"),
        ["lesson::guide::f", "diag::Span::new"]
    );
    // Comments and strings are not code.
    assert_eq!(paths("replay", "use super::replay::Case; // crate::app\nlet s = \"crate::repl\";"), ["replay::Case"]);
    // Grouped imports, nested, with `self` and renames.
    assert_eq!(
        paths("script", "use crate::{\n    diag::Span,\n    render::{self, Style as S, text::*},\n};"),
        ["diag::Span", "render", "render::Style", "render::text::*"]
    );
    // `super::super` from a nested file, and `super` inside an inline module.
    assert_eq!(
        paths("script::eval::expect", "use super::super::ast::{BinOp, Expr};"),
        ["script::ast::BinOp", "script::ast::Expr"]
    );
    assert_eq!(
        paths(
            "session::launch",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::super::Session;\n}\nuse super::x;"
        ),
        ["session::Session", "session::x"]
    );
    // A child module's path needs no `self::`; a crate's path is not a module of ours.
    assert_eq!(
        paths("cuda", "use lexer::Token;\nlet t = lexer::lex(0, s);\nuse std::fmt;\nstd::lexer::x();"),
        ["cuda::lexer::Token", "cuda::lexer::lex"]
    );
    // Lines are counted past multi-line groups, character literals and raw strings.
    let code = "let b = '{';\nlet s = r#\"\n}\n\"#;\nuse crate::{\n  a,\n};\ncrate::b::c();";
    let lines: Vec<usize> = named_paths(&m("x"), &blank(code), &|_| false).into_iter().map(|n| n.line).collect();
    assert_eq!(lines, [5, 8]);
    // A file's module, and the file a path lands in.
    let src = Path::new("/s");
    assert_eq!(module_path(src, Path::new("/s/script/eval/expect.rs")), m("script::eval::expect"));
    assert_eq!(module_path(src, Path::new("/s/render.rs")), m("render"));
    let files: BTreeMap<Vec<String>, PathBuf> =
        [(m("render"), PathBuf::from("render.rs")), (m("render::text"), PathBuf::from("render/text.rs"))].into();
    assert_eq!(file_of(&m("render::text::strip_ansi"), &files), Some(&PathBuf::from("render/text.rs")));
    assert_eq!(file_of(&m("render::Style"), &files), Some(&PathBuf::from("render.rs")));
}

/// `docs/architecture.md` is how a newcomer finds their way: its table of layers is `LAYERS`,
/// row for row, and every source file it names is there, so the page cannot drift from the
/// code as files move.
#[test]
fn the_architecture_page_draws_the_layers_and_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md is readable");
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(String::from).collect() };
    let table = page.split("## The layers, lowest first").nth(1).expect("the page has its table of layers");
    let rows: Vec<(String, Vec<String>)> = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let mut modules = ticked(cells[2]);
            modules.sort();
            (cells[1].to_string(), modules)
        })
        .collect();
    let layers: Vec<(String, Vec<String>)> = LAYERS
        .iter()
        .map(|(name, mods)| {
            let mut modules: Vec<String> = mods.iter().map(|m| m.to_string()).collect();
            modules.sort();
            (name.to_string(), modules)
        })
        .collect();
    assert_eq!(rows, layers, "the page's table of layers is not LAYERS");
    let mut missing = Vec::new();
    for name in ticked(&page) {
        let name = name.trim_end_matches('/');
        let is_path = name.ends_with(".rs") || name.starts_with("cuda/") || name.starts_with("backend/");
        if !is_path || name.contains(' ') {
            continue;
        }
        let path = name.strip_prefix("src/").unwrap_or(name);
        if !root.join("src").join(path).exists() {
            missing.push(name.to_string());
        }
    }
    assert!(missing.is_empty(), "docs/architecture.md names files that are not in src/: {missing:?}");
}
