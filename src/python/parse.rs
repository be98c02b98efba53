//! Reading Python text: which functions are Numba kernels or device functions, and what the
//! imports call `cuda`, `numpy` and `math`.
//!
//! RustPython's parser gives the syntax tree; this module keeps the parts a kernel needs and
//! turns parse errors into diagnostics at the learner's line.

use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::{Parse, text_size::TextRange};

use crate::diag::{Diagnostic, SourceId, Span};

/// A function under `@cuda.jit`, as written.
#[derive(Clone, Debug)]
pub struct PyFunction {
    pub name: String,
    pub name_span: Span,
    pub params: Vec<(String, Span)>,
    /// Each parameter's default value (`scale=1.0`), for a device function's callers.
    pub defaults: Vec<Option<ast::Expr>>,
    pub body: Vec<ast::Stmt>,
    /// `@cuda.jit(device=True)`: called from kernels, not launched.
    pub device: bool,
    /// `fastmath=True`: math functions may use the fast intrinsics.
    pub fastmath: bool,
    /// The source the spans index into.
    pub source: SourceId,
    /// The span of the whole definition, decorators included.
    pub span: Span,
}

/// What the imports of a piece of Python call the modules a kernel uses. Names are resolved
/// to canonical dotted paths: `nb.cuda.grid` and `cuda.grid` are both `cuda.grid`.
#[derive(Clone, Debug)]
pub struct Imports {
    aliases: Vec<(String, String)>,
}

impl Default for Imports {
    fn default() -> Imports {
        // What tutorials import, under the names they use, so a kernel typed at the prompt
        // without its imports still reads as the learner means.
        let base = [("cuda", "cuda"), ("numba", "numba"), ("np", "np"), ("numpy", "np"), ("math", "math")];
        Imports { aliases: base.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect() }
    }
}

impl Imports {
    /// Record the names an `import` statement binds.
    pub fn add(&mut self, stmt: &ast::Stmt) {
        match stmt {
            ast::Stmt::Import(i) => {
                for alias in &i.names {
                    let path = canonical_module(alias.name.as_str());
                    match &alias.asname {
                        Some(asname) => self.bind(asname.as_str(), &path),
                        None => {
                            let root = alias.name.as_str().split('.').next().unwrap_or_default();
                            self.bind(root, &canonical_module(root));
                        }
                    }
                }
            }
            ast::Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| canonical_module(m.as_str())).unwrap_or_default();
                for alias in &i.names {
                    let full = if module.is_empty() {
                        alias.name.to_string()
                    } else {
                        format!("{module}.{}", alias.name.as_str())
                    };
                    let local = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.bind(local.as_str(), &canonical_module(&full));
                }
            }
            _ => {}
        }
    }

    /// Take the names another piece of Python's imports bound (later ones win).
    pub fn merge(&mut self, other: &Imports) {
        for (local, path) in &other.aliases {
            self.bind(local, path);
        }
    }

    /// Bind `local` to the module or function at canonical `path`.
    pub fn bind(&mut self, local: &str, path: &str) {
        self.aliases.retain(|(a, _)| a != local);
        self.aliases.push((local.to_string(), path.to_string()));
    }

    /// The canonical dotted path a name refers to, if an import bound it.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        self.aliases.iter().rev().find(|(a, _)| a == name).map(|(_, p)| p.as_str())
    }
}

/// `numba.cuda.x` → `cuda.x`, `numpy.x` → `np.x`; other paths unchanged.
pub fn canonical_module(path: &str) -> String {
    for (long, short) in [("numba.cuda", "cuda"), ("numpy", "np")] {
        if path == long {
            return short.to_string();
        }
        if let Some(rest) = path.strip_prefix(long).and_then(|r| r.strip_prefix('.')) {
            return format!("{short}.{rest}");
        }
    }
    path.to_string()
}

/// Whether typed text starts a piece of Python gridlab reads as Python: a decorator, a `def`,
/// or an import.
pub fn starts_python(first_line: &str) -> bool {
    let t = first_line.trim_start();
    t.starts_with('@')
        || t.starts_with("def ")
        || t.starts_with("import ")
        || (t.starts_with("from ") && t.contains(" import "))
        || starts_compound(t)
        || ["assert ", "del ", "global ", "raise "].iter().any(|w| t.starts_with(w))
}

/// A Python statement that is whole on its line (more while a bracket is open): an import,
/// an `assert`, a `del`. Python's REPL runs it at once.
pub fn is_simple_statement(t: &str) -> bool {
    ["import ", "assert ", "del ", "global ", "raise "].iter().any(|w| t.starts_with(w))
        || (t.starts_with("from ") && t.contains(" import "))
}

/// A Python compound statement's header (`for i in range(n):`, `if x > 0:`, `try:`,
/// `class P:`), told apart from C's `for (...) {` and `if (x) y = 1;` by its colon.
fn starts_compound(t: &str) -> bool {
    let word: String = t.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    if !matches!(word.as_str(), "for" | "while" | "if" | "with" | "try" | "class" | "async") {
        return false;
    }
    let rest = &t[word.len()..];
    if !rest.starts_with([' ', '(', ':']) {
        return false;
    }
    let code = t.split_once('#').map_or(t, |(c, _)| c).trim_end();
    code.contains(':') && !code.contains('{') && !code.ends_with(';')
}

/// A line that continues the compound statement above it at the same indentation: `else:`,
/// `elif x:`, `except ValueError:`, `finally:`.
pub fn continues_compound(line: &str) -> bool {
    let t = line.trim_start();
    let word: String = t.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    matches!(word.as_str(), "else" | "elif" | "except" | "finally") && t[word.len()..].starts_with([' ', ':', '('])
}

/// Whether `text` is Python that parses.
pub fn parses(text: &str) -> bool {
    ast::Suite::parse(text, "<input>").is_ok()
}

/// Whether `text` parses as Python and holds host code: anything at its top level but
/// imports, `@cuda.jit` functions and docstrings (a loop, a plain function, a print).
pub fn is_host_code(text: &str) -> bool {
    let Ok(suite) = ast::Suite::parse(text, "<input>") else { return false };
    let imports = Imports::default();
    suite.iter().any(|stmt| match stmt {
        ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => false,
        ast::Stmt::FunctionDef(f) => !matches!(jit_options(f, &imports), Some(Ok(_))),
        ast::Stmt::Expr(e) => !matches!(&*e.value, ast::Expr::Constant(_)),
        _ => true,
    })
}

/// The functions the text defines at its top level, each with whether it is `@cuda.jit`.
fn top_level_functions(text: &str) -> Vec<(String, bool)> {
    let Ok(suite) = ast::Suite::parse(text, "<input>") else { return Vec::new() };
    let imports = Imports::default();
    suite
        .iter()
        .filter_map(|stmt| match stmt {
            ast::Stmt::FunctionDef(f) => Some((f.name.to_string(), matches!(jit_options(f, &imports), Some(Ok(_))))),
            _ => None,
        })
        .collect()
}

/// The plain (not `@cuda.jit`) functions host code defines at its top level: names a kernel
/// cannot call, which gridlab then names as host functions.
pub fn host_functions(text: &str) -> Vec<String> {
    top_level_functions(text).into_iter().filter(|(_, jit)| !jit).map(|(n, _)| n).collect()
}

/// The `@cuda.jit` functions (kernels and device functions) the text defines at its top level,
/// alone or beside host code.
pub fn jit_function_names(text: &str) -> Vec<String> {
    top_level_functions(text).into_iter().filter(|(_, jit)| *jit).map(|(n, _)| n).collect()
}

/// In text Python could not parse, a block opened by a line ending in `:` (`def k(a):`,
/// `if i < n:`) whose next line is not indented more: Python's parser says "expected an
/// indented block" or "unindent does not match" somewhere after; this says which line and how
/// to write it. Typed at a prompt without
/// an editor that indents, it is the first thing a Python learner meets.
fn unindented_body(source: SourceId, text: &str) -> Option<Diagnostic> {
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let mut offset = 0;
    let mut opener: Option<(&str, usize)> = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let code = bare.split_once('#').map_or(bare, |(c, _)| c).trim_end();
        if !code.trim().is_empty() {
            if let Some((head, depth)) = opener.take()
                && indent(bare) <= depth
            {
                let body = bare.trim_start();
                let at = offset + indent(bare);
                let pad = " ".repeat(depth + 4);
                return Some(
                    Diagnostic::error(format!("the block under `{}` is not indented", head.trim()))
                        .at(Span::new(source, at, at + body.len()))
                        .label("indent this line")
                        .help(format!(
                            "Python marks a block by indenting it: write `{pad}{body}` ({} spaces), and indent each line of the block alike",
                            depth + 4
                        )),
                );
            }
            if code.ends_with(':') && !code.trim_start().starts_with('@') {
                opener = Some((code, indent(bare)));
            }
        }
        offset += line.len();
    }
    // A block opened on the last line, with nothing under it.
    let (head, _) = opener?;
    let at = text.find(head.trim()).unwrap_or(0);
    Some(
        Diagnostic::error(format!("the block under `{}` is empty", head.trim()))
            .at(Span::new(source, at, at + head.trim().len()))
            .label("its lines go below, indented")
            .help("Python marks a block by indenting it: put its lines under this one, each indented by 4 spaces more"),
    )
}

/// What only a kernel's body can hold: a `return`, or the thread's place in the grid and the
/// block's tools (`cuda.grid(1)`, `cuda.syncthreads()`, `cuda.shared.array`). On a line that
/// is not indented, right under a `def`, it was meant for the function's body.
pub fn holds_kernel_only_code(line: &str) -> bool {
    let t = line.trim_start();
    let code = t.split_once('#').map_or(t, |(c, _)| c);
    code == "return"
        || code.starts_with("return ")
        || code.contains(": return")
        || [
            "cuda.grid(",
            "cuda.threadIdx",
            "cuda.blockIdx",
            "cuda.blockDim",
            "cuda.syncthreads",
            "cuda.shared.",
            "cuda.local.",
            "cuda.atomic.",
        ]
        .iter()
        .any(|w| code.contains(w))
}

/// A function whose body ends too soon: the line right under its last body line is not
/// indented, yet it (or a line of its block) holds what only a kernel can (`return`,
/// `cuda.grid(1)`), as when `if i >= n:` is typed at the start of the line. Python would say
/// "'return' outside function" at a line that is not the mistake; this names the line that
/// lost its indentation and says how far to indent it.
pub fn dedented_body(source: SourceId, text: &str) -> Option<Diagnostic> {
    let suite = ast::Suite::parse(text, "<input>").ok()?;
    let line_of = |at: usize| text[..at].matches('\n').count();
    for pair in suite.windows(2) {
        let (ast::Stmt::FunctionDef(f), next) = (&pair[0], &pair[1]) else { continue };
        if matches!(next, ast::Stmt::FunctionDef(_) | ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_)) {
            continue;
        }
        let end = f.range.end().to_usize();
        let start = next.range().start().to_usize();
        // Right under the function, with no blank line between.
        if line_of(start) != line_of(end) + 1 {
            continue;
        }
        let chunk = &text[start..next.range().end().to_usize()];
        if !chunk.lines().any(holds_kernel_only_code) {
            continue;
        }
        let last = f.body.last()?;
        let body_line_start = text[..last.range().start().to_usize()].rfind('\n').map_or(0, |i| i + 1);
        let depth = last.range().start().to_usize() - body_line_start;
        let head = text[start..].lines().next().unwrap_or("").trim_end();
        let above = text[body_line_start..].lines().next().unwrap_or("").trim();
        return Some(
            Diagnostic::error(format!("`{head}` is outside `def {}`: it is not indented", f.name))
                .at(Span::new(source, start, start + head.len()))
                .label("this line ends the function")
                .help(format!(
                    "a function's body is every line indented under its `def`: indent this line and the ones under it by {depth} more spaces, to line up with `{above}`"
                )),
        );
    }
    None
}

/// A span in `source` from a RustPython range.
pub fn span(source: SourceId, range: TextRange) -> Span {
    Span::new(source, range.start().to_usize(), range.end().to_usize())
}

/// The kernels, device functions and imports of a piece of Python text.
#[derive(Clone, Debug, Default)]
pub struct Snippet {
    pub functions: Vec<PyFunction>,
    pub imports: Imports,
}

/// Parse `text` (registered as `source`) and keep its `@cuda.jit` functions and imports.
/// Anything else at the top level is refused with a message: host code belongs to the
/// statement language at the prompt, or to a `.py` file.
pub fn read_snippet(source: SourceId, text: &str) -> Result<Snippet, Vec<Diagnostic>> {
    let suite = ast::Suite::parse(text, "<input>").map_err(|e| {
        // Python's own words for a block typed without its indentation name the wrong line.
        if let Some(d) = unindented_body(source, text) {
            return vec![d];
        }
        let at = (e.offset.to_usize()).min(text.len());
        let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
        vec![
            Diagnostic::error(format!("this Python does not parse: {}", e.error))
                .at(Span::new(source, at, end))
                .help("check the indentation and the brackets; Python's own syntax applies in kernels"),
        ]
    })?;
    let mut snippet = Snippet::default();
    let mut errors = Vec::new();
    for stmt in &suite {
        match stmt {
            ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => snippet.imports.add(stmt),
            ast::Stmt::FunctionDef(f) => match jit_options(f, &snippet.imports) {
                Some(Ok(options)) => snippet.functions.push(function(source, f, options)),
                Some(Err(d)) => errors.push(d.at(span(source, f.range))),
                None => errors.push(
                    Diagnostic::error(format!("`{}` is a plain Python function", f.name))
                        .at(span(source, f.range))
                        .label("no `@cuda.jit` above it")
                        .help("gridlab runs kernels: put `@cuda.jit` above a kernel, `@cuda.jit(device=True)` above a function kernels call; host code goes in a .py file (`gridlab run file.py`)"),
                ),
            },
            ast::Stmt::Expr(e) if matches!(&*e.value, ast::Expr::Constant(_)) => {}
            other => errors.push(
                Diagnostic::error("host Python is not run at the prompt")
                    .at(span(source, other.range()))
                    .help("at the prompt, give arrays with `a = np.zeros(1024, np.float32)` on a line of its own and launch with `kernel[blocks, threads](a)`; a whole program goes in a .py file (`gridlab run file.py`)"),
            ),
        }
    }
    if errors.is_empty() { Ok(snippet) } else { Err(errors) }
}

#[derive(Clone, Copy, Debug, Default)]
struct JitOptions {
    device: bool,
    fastmath: bool,
}

/// The `@cuda.jit` options of a function, `None` when it has no such decorator.
fn jit_options(f: &ast::StmtFunctionDef, imports: &Imports) -> Option<Result<JitOptions, Diagnostic>> {
    for dec in &f.decorator_list {
        let (target, call) = match dec {
            ast::Expr::Call(c) => (&*c.func, Some(c)),
            other => (other, None),
        };
        let Some(path) = dotted(target, imports) else { continue };
        if !matches!(path.as_str(), "cuda.jit" | "numba.jit" | "jit" | "numba.njit" | "njit") {
            continue;
        }
        if path.ends_with("njit") || path == "numba.jit" {
            return Some(Err(Diagnostic::error(format!("`@{path}` compiles for the CPU"))
                .help("a GPU kernel is marked `@cuda.jit` (with `from numba import cuda`)")));
        }
        let mut options = JitOptions::default();
        if let Some(call) = call {
            for kw in &call.keywords {
                let value = matches!(&kw.value, ast::Expr::Constant(c) if matches!(c.value, ast::Constant::Bool(true)));
                match kw.arg.as_ref().map(|a| a.as_str()) {
                    Some("device") => options.device = value,
                    Some("fastmath") => options.fastmath = value,
                    // Compilation switches that change nothing in what a kernel computes.
                    Some("debug" | "opt" | "lineinfo" | "cache" | "inline" | "link" | "max_registers") => {}
                    Some(other) => {
                        return Some(Err(Diagnostic::error(format!(
                            "`@cuda.jit` has no option `{other}` gridlab knows"
                        ))
                        .help("gridlab reads `device=True`, `fastmath=True` and a signature string")));
                    }
                    None => {}
                }
            }
            // A signature (`"void(float32[:])"`) fixes types Numba would infer; gridlab infers
            // them from each launch's arguments, as Numba does without one.
        }
        return Some(Ok(options));
    }
    None
}

fn function(source: SourceId, f: &ast::StmtFunctionDef, options: JitOptions) -> PyFunction {
    let params = f
        .args
        .args
        .iter()
        .chain(&f.args.posonlyargs)
        .map(|a| (a.def.arg.to_string(), span(source, a.def.range)))
        .collect();
    let defaults = f.args.args.iter().chain(&f.args.posonlyargs).map(|a| a.default.as_deref().cloned()).collect();
    // The name's span: the text after `def `.
    let def_span = span(source, f.range);
    PyFunction {
        name: f.name.to_string(),
        name_span: def_span,
        params,
        defaults,
        body: f.body.clone(),
        device: options.device,
        fastmath: options.fastmath,
        source,
        span: def_span,
    }
}

/// `a.b.c` as a canonical dotted path, resolving the first name through the imports.
pub fn dotted(e: &ast::Expr, imports: &Imports) -> Option<String> {
    raw_dotted(e, imports).map(|p| canonical_module(&p))
}

fn raw_dotted(e: &ast::Expr, imports: &Imports) -> Option<String> {
    match e {
        ast::Expr::Name(n) => Some(imports.resolve(n.id.as_str()).map_or_else(|| n.id.to_string(), str::to_string)),
        ast::Expr::Attribute(a) => Some(format!("{}.{}", raw_dotted(&a.value, imports)?, a.attr.as_str())),
        _ => None,
    }
}
