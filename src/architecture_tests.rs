//! The house's rule, as a test: modules use only the layers below them (and their own), so the
//! top floors cannot knot into a circle again. `docs/architecture.md` explains each layer.
//!
//! The test reads every source file and finds each `crate::MODULE` path (in `use` lines and in
//! code); a path to a higher layer fails with the file, the line and what it may use instead.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use its own layer and those below it.
const LAYERS: &[(&str, &[&str])] = &[
    ("diagnostics", &["diag"]),
    ("data", &["dtype", "buffer", "value", "finding", "cost", "launch"]),
    ("CUDA front end", &["cuda", "python"]),
    ("views", &["render"]),
    ("engines", &["backend", "script"]),
    ("session", &["session"]),
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

/// The top-level module a file belongs to: `src/session/cost.rs` -> `session`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src/");
    let first = rel.components().next().expect("a file").as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// The modules a line names as `crate::MODULE` (comments skipped). In a top-level file
/// (`src/render.rs`), `super::MODULE` is the same path and counts too.
fn named_modules(line: &str, top_level: bool) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    let next = |s: &str| {
        let c = s.find("crate::").map(|i| (i, "crate::".len()));
        let p = if top_level { s.find("super::").map(|i| (i, "super::".len())) } else { None };
        match (c, p) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    };
    while let Some((at, len)) = next(rest) {
        let after = &rest[at + len..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.push(name);
        }
        rest = after;
    }
    out
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        // The crate root and the test itself name every module.
        if matches!(module.as_str(), "lib" | "main" | "architecture_tests") {
            continue;
        }
        let Some(own) = layer_of(&module) else {
            problems.push(format!("{}: module `{module}` has no layer in LAYERS", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("source is readable");
        let top_level = file.parent() == Some(src.as_path());
        for (n, line) in text.lines().enumerate() {
            for used in named_modules(line, top_level) {
                let Some(theirs) = layer_of(&used) else { continue };
                if theirs > own {
                    problems.push(format!(
                        "{}:{}: `{module}` ({}) uses `crate::{used}` ({}), a layer above it; move the shared part down or add an extension point (see docs/architecture.md)",
                        file.strip_prefix(&src).unwrap_or(file).display(),
                        n + 1,
                        LAYERS[own].0,
                        LAYERS[theirs].0
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "upward imports:\n{}", problems.join("\n"));
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        if matches!(module.as_str(), "lib" | "main" | "architecture_tests") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("source is readable");
        let top_level = file.parent() == Some(src.as_path());
        for used in text.lines().flat_map(|l| named_modules(l, top_level)) {
            if used != module && layer_of(&used).is_some() {
                edges.entry(module.clone()).or_default().insert(used);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        if let Some(cycle) = visit(m, &edges, &mut Vec::new(), &mut done) {
            panic!("modules import each other in a circle: {}", cycle.join(" -> "));
        }
    }
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
fn the_scanner_finds_paths_in_uses_and_code() {
    assert_eq!(named_modules("use crate::session::{Session, Status};", false), vec!["session"]);
    assert_eq!(
        named_modules("    let x = crate::lesson::guide::f(crate::diag::Span::new());", false),
        vec!["lesson", "diag"]
    );
    assert_eq!(named_modules("use super::replay::Case; // crate::app", true), vec!["replay"]);
    assert!(named_modules("use super::text::thousands;", false).is_empty());
}
