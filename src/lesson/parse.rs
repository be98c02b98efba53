//! One lesson file into a [`Lesson`]: the `+++` TOML front matter, then Markdown whose `##`
//! headings are steps and whose fenced blocks tagged `cuda`, `numba`, `gridlab`, `exercise`,
//! `starter`, `check`, `solution` and `hint` are the runnable parts. A block with the word
//! `numba` after its tag (` ```solution numba `) is the Python twin of the one before it.
//!
//! The Markdown is read with pulldown-cmark (so a fence inside a list, a quote or an indented
//! block is understood as the author's Markdown viewer understands it); prose is kept as the
//! author's own Markdown source and rendered only when shown. Every error names the file and
//! the line.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde::Deserialize;

use super::{Check, Code, Config, Exercise, Lang, Lesson, LessonError, Meta, Part, PythonExercise, Shown, Step};
use crate::script::{self, InputKind};

/// The fenced-block tags gridlab gives a meaning to.
const TAGS: [&str; 8] = ["cuda", "numba", "gridlab", "exercise", "starter", "check", "solution", "hint"];
/// The word after a tag that makes a block the Python twin of the one before it.
const PYTHON: &str = "numba";
/// A block shown as prose is, and compared with what the block before it prints.
const OUTPUT: &str = "output";

/// Blocks shown as they are, never run: plain text and other languages. A tag close to one of
/// [`TAGS`] but not one of these is taken for a typo.
const SHOWN_LANGUAGES: &[&str] = &[
    "text", "txt", "plain", "python", "py", "c", "cpp", "c++", "cu", "sh", "bash", "shell", "console", "toml", "json",
    "yaml", "markdown", "md", "rust", "julia", "diff", "output",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    title: String,
    summary: String,
    /// The summary as a Python learner reads it, where it names CUDA C.
    summary_numba: Option<String>,
    #[serde(default)]
    concepts: Vec<String>,
    backend: Option<String>,
}

/// Split `NN-slug.md` (any folders before it) into its number and slug.
pub fn file_name(path: &str) -> Option<(u32, String)> {
    let name = path.rsplit(['/', '\\']).next()?;
    let stem = name.strip_suffix(".md")?;
    let (num, slug) = stem.split_once('-')?;
    let valid_slug = !slug.is_empty()
        && slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-');
    if num.len() != 2 || !num.chars().all(|c| c.is_ascii_digit()) || !valid_slug {
        return None;
    }
    Some((num.parse().ok()?, slug.to_string()))
}

/// Parse the lesson in `text`, read from `path` (a file named `NN-slug.md`).
pub fn parse(path: &str, text: &str) -> Result<Lesson, LessonError> {
    let err = |line: u32, message: String| LessonError { path: path.to_string(), line, message };
    let Some((number, slug)) = file_name(path) else {
        return Err(err(
            0,
            "a lesson file is named NN-slug.md: two digits, a dash, then lower-case letters, digits and dashes \
             (e.g. 03-one-thread-per-element.md)"
                .into(),
        ));
    };
    let lines = LineIndex::new(text);
    let (meta, body_start) = front_matter(text, &lines).map_err(|(line, m)| err(line, m))?;
    let mut builder = Builder { lines: &lines, path, intro: String::new(), steps: Vec::new(), exercise: None };
    builder.body(text, body_start)?;
    if builder.steps.is_empty() {
        return Err(err(0, "the lesson has no steps: each `## heading` starts one".into()));
    }
    let id = format!("{number:02}-{slug}");
    Ok(Lesson { id, number, slug, path: path.to_string(), meta, intro: builder.intro, steps: builder.steps })
}

/// Byte offsets to 1-based line numbers.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    fn line(&self, offset: usize) -> u32 {
        (self.starts.partition_point(|&s| s <= offset)) as u32
    }
}

fn front_matter(text: &str, lines: &LineIndex) -> Result<(Meta, usize), (u32, String)> {
    let text_start = text.strip_prefix('\u{feff}').map_or(0, |_| 3);
    let rest = &text[text_start..];
    let first = rest.lines().next().unwrap_or("");
    if first.trim_end() != "+++" {
        return Err((
            1,
            "a lesson starts with TOML front matter between two `+++` lines (title = \"...\", summary = \"...\")"
                .into(),
        ));
    }
    let open_end = text_start + first.len() + 1;
    let mut offset = open_end.min(text.len());
    let close = loop {
        if offset >= text.len() {
            return Err((1, "the front matter opened here is never closed: end it with a `+++` line".into()));
        }
        let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
        if text[offset..line_end].trim_end() == "+++" {
            break (offset, (line_end + 1).min(text.len()));
        }
        offset = line_end + 1;
    };
    let toml_text = &text[open_end.min(close.0)..close.0];
    let first_toml_line = lines.line(open_end.min(text.len().saturating_sub(1)));
    let fm: FrontMatter = toml::from_str(toml_text).map_err(|e| {
        let line =
            e.span().map_or(first_toml_line, |s| first_toml_line + toml_text[..s.start].matches('\n').count() as u32);
        (line, format!("front matter: {}", e.message().trim_end()))
    })?;
    if fm.title.trim().is_empty() {
        return Err((first_toml_line, "front matter: `title` is empty".into()));
    }
    let needs_gpu = match fm.backend.as_deref() {
        None | Some("sim") => false,
        Some("gpu") => true,
        Some(other) => {
            let line = first_toml_line + toml_text.lines().position(|l| l.contains("backend")).unwrap_or(0) as u32;
            return Err((line, format!("front matter: backend is \"sim\" or \"gpu\", not {other:?}")));
        }
    };
    Ok((
        Meta {
            title: fm.title,
            summary: fm.summary,
            summary_numba: fm.summary_numba,
            concepts: fm.concepts,
            needs_gpu,
        },
        close.1,
    ))
}

struct PendingExercise {
    task: String,
    line: u32,
    /// Where the `Part::Exercise` goes in the step's parts.
    slot: usize,
    starter: Option<Code>,
    check: Option<Check>,
    solution: Option<Code>,
    hints: Vec<String>,
    /// The `numba` blocks: the exercise for learners who write Python.
    python: PythonBlocks,
}

#[derive(Default)]
struct PythonBlocks {
    task: Option<String>,
    starter: Option<Code>,
    check: Option<Check>,
    solution: Option<Code>,
    hints: Vec<String>,
    /// The first of them, for a message when the solution is missing.
    line: Option<u32>,
}

struct Builder<'a> {
    lines: &'a LineIndex,
    path: &'a str,
    intro: String,
    steps: Vec<Step>,
    exercise: Option<PendingExercise>,
}

impl Builder<'_> {
    fn err(&self, line: u32, message: impl Into<String>) -> LessonError {
        LessonError { path: self.path.to_string(), line, message: message.into() }
    }

    fn body(&mut self, text: &str, start: usize) -> Result<(), LessonError> {
        let body = &text[start..];
        let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
        let mut events = Parser::new_ext(body, options).into_offset_iter().peekable();
        // Markdown not yet given to a step, from this offset (into `text`).
        let mut cursor = start;
        // Containers (quotes, lists) the parser is inside: runnable blocks must be at the top.
        let mut depth = 0usize;
        while let Some((event, range)) = events.next() {
            let range = range.start + start..range.end + start;
            match event {
                Event::Start(Tag::BlockQuote(_) | Tag::List(_) | Tag::Item | Tag::FootnoteDefinition(_)) => depth += 1,
                Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::Item | TagEnd::FootnoteDefinition) => {
                    depth = depth.saturating_sub(1)
                }
                Event::Start(Tag::Heading { level: HeadingLevel::H2, .. }) if depth == 0 => {
                    let mut title = String::new();
                    let mut code_in_title = Vec::new();
                    for (e, _) in events.by_ref() {
                        match e {
                            Event::End(TagEnd::Heading(_)) => break,
                            Event::Text(t) => title.push_str(&t),
                            Event::Code(t) => {
                                title.push_str(&t);
                                code_in_title.push(t.to_string());
                            }
                            _ => {}
                        }
                    }
                    self.prose(&text[cursor..range.start]);
                    self.finish_step()?;
                    let line = self.lines.line(range.start);
                    if title.trim().is_empty() {
                        return Err(self.err(line, "a step's `##` heading needs a title"));
                    }
                    self.steps.push(Step {
                        title: title.trim().to_string(),
                        code_in_title,
                        line,
                        parts: Vec::new(),
                        outputs: Vec::new(),
                    });
                    cursor = range.end;
                }
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                    let mut words = info.split_whitespace();
                    let tag = words.next().unwrap_or("").to_string();
                    if tag == OUTPUT {
                        // Shown as prose is; remembered to be compared.
                        let fence_line = self.lines.line(range.start);
                        let mut code = String::new();
                        for (e, _) in events.by_ref() {
                            match e {
                                Event::End(TagEnd::CodeBlock) => break,
                                Event::Text(t) => code.push_str(&t),
                                _ => {}
                            }
                        }
                        self.output(code, fence_line, depth)?;
                        continue;
                    }
                    if !TAGS.contains(&tag.as_str()) {
                        // A block only to show (```text, ```python) is fine; a slip of a
                        // gridlab tag (```hnit, ```soluton) would show the answer as plain text
                        // or never run, and is refused.
                        let shown_only = SHOWN_LANGUAGES.contains(&tag.to_ascii_lowercase().as_str());
                        if !shown_only && let Some(meant) = crate::diag::suggest::closest(&tag, TAGS) {
                            return Err(self.err(
                                self.lines.line(range.start),
                                format!(
                                    "```{tag} is not a block gridlab knows: did you mean ```{meant}? (a block only \
                                     to show, like ```text or ```python, takes a language's name)"
                                ),
                            ));
                        }
                        continue;
                    }
                    let modifiers: Vec<String> = words.map(str::to_string).collect();
                    let mut code = String::new();
                    for (e, _) in events.by_ref() {
                        match e {
                            Event::End(TagEnd::CodeBlock) => break,
                            Event::Text(t) => code.push_str(&t),
                            _ => {}
                        }
                    }
                    let fence_line = self.lines.line(range.start);
                    if depth > 0 {
                        return Err(self.err(
                            fence_line,
                            format!(
                                "a `{tag}` block inside a list or a quote is not run: move it to the top level \
                                 (or tag it `text` to only show it)"
                            ),
                        ));
                    }
                    let mut refused = false;
                    let mut python = tag == PYTHON;
                    for m in &modifiers {
                        match m.as_str() {
                            "error" if matches!(tag.as_str(), "cuda" | "numba" | "gridlab") && !refused => {
                                refused = true
                            }
                            PYTHON if tag != PYTHON && tag != "cuda" && !python => python = true,
                            _ => {
                                return Err(self.err(
                                    fence_line,
                                    format!(
                                        "`{tag} {}`: a block takes at most `error` after its tag (on `cuda`, `numba` and \
                                         `gridlab` blocks whose inputs gridlab refuses on purpose) and `numba` (on \
                                         `gridlab`, `exercise`, `starter`, `check`, `solution` and `hint` blocks: the \
                                         Python twin of the block before it)",
                                        modifiers.join(" ")
                                    ),
                                ));
                            }
                        }
                    }
                    self.prose(&text[cursor..range.start]);
                    cursor = range.end;
                    let code = Code { text: code, line: fence_line + 1, refused, lang: None };
                    self.block(&tag, python, code, fence_line)?;
                }
                _ => {}
            }
        }
        self.prose(&text[cursor..]);
        self.finish_step()
    }

    /// An `output` block: it shows what the `cuda` or `gridlab` block before it in the step prints.
    fn output(&mut self, text: String, fence_line: u32, depth: usize) -> Result<(), LessonError> {
        if depth > 0 {
            return Err(self.err(
                fence_line,
                "an `output` block inside a list or a quote is not compared: move it to the top level",
            ));
        }
        let last_code = self.steps.last().and_then(|step| {
            step.parts.iter().rev().find_map(|p| match p {
                Part::Cuda(c) | Part::Python(c) | Part::Gridlab(c) => Some(c.line),
                _ => None,
            })
        });
        // An exercise block since then would make the output the exercise's, which runs no block.
        let after_exercise = self.exercise.as_ref().is_some_and(|ex| last_code.is_none_or(|l| ex.line > l));
        let Some(after) = last_code.filter(|_| !after_exercise) else {
            return Err(self.err(
                fence_line,
                "an `output` block shows what the `cuda` or `gridlab` block before it prints: put one before it in this step",
            ));
        };
        if text.trim().is_empty() {
            return Err(self.err(fence_line, "the `output` block is empty: copy in the lines the block above prints"));
        }
        let step = self.steps.last_mut().expect("a code part is in a step");
        step.outputs.push(Shown { text, line: fence_line + 1, after });
        Ok(())
    }

    /// Markdown between runnable parts.
    fn prose(&mut self, md: &str) {
        if md.trim().is_empty() {
            return;
        }
        match self.steps.last_mut() {
            Some(step) => step.parts.push(Part::Prose(md.trim_matches('\n').to_string())),
            None => {
                self.intro.push_str(md.trim_matches('\n'));
                self.intro.push('\n');
            }
        }
    }

    fn block(&mut self, tag: &str, python: bool, mut code: Code, fence_line: u32) -> Result<(), LessonError> {
        let Some(step) = self.steps.last_mut() else {
            return Err(self.err(
                fence_line,
                format!("a `{tag}` block before the first step: start a step with a `## heading` above it"),
            ));
        };
        if tag != "exercise" && tag != "hint" {
            refuse_file_commands(self.path, &code)?;
        }
        let slot = step.parts.len();
        match (tag, python) {
            ("cuda", _) => step.parts.push(Part::Cuda(code)),
            ("gridlab", false) => step.parts.push(Part::Gridlab(code)),
            ("numba", _) | ("gridlab", true) => {
                // The twin of the last block of the other language not yet paired, in this step.
                let twin = step.parts.iter_mut().rev().find_map(|p| match (p, tag) {
                    (Part::Cuda(c), "numba") | (Part::Gridlab(c), "gridlab") if c.lang.is_none() => Some(c),
                    _ => None,
                });
                let Some(twin) = twin else {
                    let (what, other) = if tag == "numba" { ("numba", "cuda") } else { ("gridlab numba", "gridlab") };
                    return Err(self.err(
                        fence_line,
                        format!(
                            "a `{what}` block is the Python twin of the `{other}` block before it: put the `{other}` \
                             block first, in this step (each has at most one twin)"
                        ),
                    ));
                };
                twin.lang = Some(Lang::Cuda);
                code.lang = Some(Lang::Python);
                if tag == "numba" {
                    step.parts.push(Part::Python(code));
                } else {
                    step.parts.push(Part::Gridlab(code));
                }
            }
            ("exercise", false) => {
                if self.exercise.is_some() || step.exercise().is_some() {
                    return Err(
                        self.err(fence_line, "a step holds at most one exercise: start a new `##` step for this one")
                    );
                }
                if code.text.trim().is_empty() {
                    return Err(self.err(fence_line, "the exercise block is empty: say what the learner should write"));
                }
                self.exercise = Some(PendingExercise {
                    task: code.text.trim_end().to_string(),
                    line: fence_line,
                    slot,
                    starter: None,
                    check: None,
                    solution: None,
                    hints: Vec::new(),
                    python: PythonBlocks::default(),
                });
            }
            _ => {
                let Some(ex) = self.exercise.as_mut() else {
                    let tag = if python { format!("{tag} numba") } else { tag.to_string() };
                    return Err(self.err(
                        fence_line,
                        format!(
                            "a `{tag}` block belongs to an exercise: put an `exercise` block before it in this step"
                        ),
                    ));
                };
                if python {
                    ex.python.line.get_or_insert(fence_line);
                }
                let py = &mut ex.python;
                let duplicate = match (tag, python) {
                    ("exercise", true) => py.task.replace(code.text.trim_end().to_string()).is_some(),
                    ("starter", false) => ex.starter.replace(code).is_some(),
                    ("starter", true) => py.starter.replace(code).is_some(),
                    ("solution", false) => ex.solution.replace(code).is_some(),
                    ("solution", true) => py.solution.replace(code).is_some(),
                    ("hint", false) => {
                        ex.hints.push(code.text.trim_end().to_string());
                        false
                    }
                    ("hint", true) => {
                        py.hints.push(code.text.trim_end().to_string());
                        false
                    }
                    ("check", _) => {
                        let check = check(self.path, code)?;
                        let Some(ex) = self.exercise.as_mut() else { unreachable!("checked above") };
                        if python { ex.python.check.replace(check) } else { ex.check.replace(check) }.is_some()
                    }
                    _ => unreachable!("TAGS holds every tag"),
                };
                if duplicate {
                    let tag = if python { format!("{tag} numba") } else { tag.to_string() };
                    return Err(self.err(fence_line, format!("the exercise already has a `{tag}` block: keep one")));
                }
            }
        }
        Ok(())
    }

    /// The step ends: its exercise must be complete.
    fn finish_step(&mut self) -> Result<(), LessonError> {
        let Some(ex) = self.exercise.take() else { return Ok(()) };
        let missing = |what: &str| {
            self.err(ex.line, format!("the exercise has no `{what}` block: add one after it, in the same step"))
        };
        let mut check = ex.check.ok_or_else(|| missing("check"))?;
        let solution = ex.solution.ok_or_else(|| missing("solution"))?;
        check.kernels = kernel_signatures(&solution.text);
        let py = ex.python;
        let python = match py.solution {
            Some(solution) => {
                let mut check = py.check;
                if let Some(check) = check.as_mut() {
                    check.kernels = python_signatures(&solution.text);
                }
                Some(Box::new(PythonExercise { task: py.task, starter: py.starter, solution, check, hints: py.hints }))
            }
            None if py.line.is_some() => {
                return Err(self.err(
                    py.line.unwrap_or(ex.line),
                    "the exercise has `numba` blocks but no `solution numba`: add the Python solution, in the same step",
                ));
            }
            None => None,
        };
        let exercise =
            Exercise { task: ex.task, line: ex.line, starter: ex.starter, check, solution, hints: ex.hints, python };
        let step = self.steps.last_mut().expect("an exercise is only started inside a step");
        step.parts.insert(ex.slot.min(step.parts.len()), Part::Exercise(Box::new(exercise)));
        Ok(())
    }
}

/// Refuse the commands a lesson may not run, those that take a file (`Args::Path`: `:load`,
/// `:save`, `:export`): a course is someone else's, and the learner runs it on their own
/// machine, so its blocks (shown, replayed in CI, or run hidden as a check) never read or write
/// the learner's files. Refused when the lesson loads, at the line.
fn refuse_file_commands(path: &str, code: &Code) -> Result<(), LessonError> {
    for (i, line) in code.text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix(':') else { continue };
        let name = rest.split_whitespace().next().unwrap_or("");
        let takes_a_file = crate::session::command::find(&super::commands(), name)
            .is_some_and(|c| matches!(c.args, crate::session::command::Args::Path(_)));
        if takes_a_file {
            return Err(LessonError {
                path: path.to_string(),
                line: code.line + i as u32,
                message: format!(
                    "a lesson may not run `:{name}`: lessons never read or write the learner's files; describe it in the prose instead (a ```text block shows it without running it)"
                ),
            });
        }
    }
    Ok(())
}

/// A check block: `config` lines, then statements (no CUDA: checks use the learner's kernels).
fn check(path: &str, code: Code) -> Result<Check, LessonError> {
    let err = |line: u32, message: String| LessonError { path: path.to_string(), line, message };
    let mut configs = Vec::new();
    let mut body = String::new();
    for (i, raw) in code.text.lines().enumerate() {
        let line = code.line + i as u32;
        let trimmed = raw.trim_start();
        if let Some(rest) = trimmed.strip_prefix("config").filter(|r| r.starts_with(char::is_whitespace)) {
            configs.push(config(rest, line).map_err(|m| err(line, m))?);
            body.push('\n');
        } else {
            body.push_str(raw);
            body.push('\n');
        }
    }
    if let (Some(first), Some(other)) = (configs.first(), configs.iter().find(|c| !same_names(c, &configs[0]))) {
        let names = |c: &Config| c.bindings.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
        return Err(err(
            other.line,
            format!(
                "every config line binds the same names: line {} binds {}, this one {}",
                first.line,
                names(first),
                names(other)
            ),
        ));
    }
    let inputs = script::split_inputs(&body).map_err(|e| err(code.line, format!("check block: {}", e.diag.message)))?;
    if inputs.iter().all(|i| i.kind != InputKind::Statement) {
        return Err(err(
            code.line - 1,
            "the check block has no statements: launch the learner's kernel and `expect` the result".into(),
        ));
    }
    if let Some(cuda) = inputs.iter().find(|i| i.kind == InputKind::Cuda) {
        return Err(err(
            code.line + cuda.line - 1,
            "a check block cannot define CUDA: it runs the learner's kernels (put helpers in a `cuda` block of the step)".into(),
        ));
    }
    Ok(Check { configs, body: Code { text: body, line: code.line, refused: false, lang: None }, kernels: Vec::new() })
}

/// The kernels `cuda` defines, with their signatures (none when it does not compile: `dev check`
/// says so about a solution).
fn kernel_signatures(cuda: &str) -> Vec<(String, String)> {
    let mut module = crate::cuda::Module::new();
    if module.add(0, cuda).is_err() {
        return Vec::new();
    }
    module
        .program()
        .kernels()
        .map(|f| (f.name.clone(), format!("__global__ void {}", crate::render::signature(f))))
        .collect()
}

/// The kernels a Python solution defines, with their first lines (`@cuda.jit` and the `def`):
/// what a learner who has not defined one yet is asked to write.
pub fn python_signatures(python: &str) -> Vec<(String, String)> {
    let Ok(snippet) = crate::python::parse::read_snippet(0, python) else {
        return Vec::new();
    };
    snippet
        .functions
        .iter()
        .filter(|f| !f.device)
        .map(|f| {
            let params: Vec<&str> = f.params.iter().map(|(p, _)| p.as_str()).collect();
            (f.name.clone(), format!("@cuda.jit def {}({}):", f.name, params.join(", ")))
        })
        .collect()
}

fn same_names(a: &Config, b: &Config) -> bool {
    a.bindings.len() == b.bindings.len() && a.bindings.iter().zip(&b.bindings).all(|((x, _), (y, _))| x == y)
}

/// `n = 1000, threads = 256  # a comment`.
fn config(text: &str, line: u32) -> Result<Config, String> {
    let text = text.split_once('#').map_or(text, |(t, _)| t).trim();
    if text.is_empty() {
        return Err("a config line binds names: `config n = 1000, threads = 256`".into());
    }
    let mut bindings = Vec::new();
    for part in split_top_level(text) {
        let Some((name, expr)) = part.split_once('=') else {
            return Err(format!("`{}` in a config line: write `name = value`", part.trim()));
        };
        let (name, expr) = (name.trim(), expr.trim());
        let is_ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_ident {
            return Err(format!("`{name}` is not a name: config names are like `n` or `threads`"));
        }
        if expr.is_empty() {
            return Err(format!("`{name} =` has no value"));
        }
        // Parse it as the `let` it becomes, so a typo is reported here and not at check time.
        if let Err(d) = script::parse_statement(0, &format!("let {name} = {expr}")) {
            return Err(format!("`{name} = {expr}`: {}", d.message));
        }
        if bindings.iter().any(|(n, _): &(String, String)| n == name) {
            return Err(format!("`{name}` is bound twice in this config line"));
        }
        bindings.push((name.to_string(), expr.to_string()));
    }
    Ok(Config { line, bindings })
}

/// Split at commas outside parentheses, brackets and braces (`shape = (4, 4), n = 16`).
pub(super) use crate::python::words::split_top_level;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::Shown;

    const GOOD: &str = r#"+++
title = "Bounds"
summary = "Guard the tail."
concepts = ["bounds check"]
+++

Some intro with `code`.

## The problem

Prose *here*.

```cuda
__global__ void k(float *a) { a[threadIdx.x] = 1; }
```

```gridlab
let a = zeros(4)
k<<<1, 4>>>(a)
```

> **In Numba**
>
> ```python
> print("shown, not run")
> ```

## Your turn

```exercise
Write `add_half(float *a, int n)`.
```

```starter
__global__ void add_half(float *a, int n) { }
```

```hint
Use the global index.
```

```check
config n = 1000, threads = 256, blocks = 4   # ragged
config n = 1, threads = 32, blocks = 1
let a = zeros(n)
add_half<<<blocks, threads>>>(a, n)
expect a == 0.5
```

```solution
__global__ void add_half(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 0.5f;
}
```

```hint
`if (i < n)`.
```
"#;

    #[test]
    fn a_lesson_parses_into_steps_and_parts() {
        let l = parse("lessons/04-bounds.md", GOOD).unwrap();
        assert_eq!((l.number, l.slug.as_str(), l.id.as_str()), (4, "bounds", "04-bounds"));
        assert_eq!(l.meta.title, "Bounds");
        assert_eq!(l.meta.concepts, ["bounds check"]);
        assert!(l.intro.contains("Some intro"));
        assert_eq!(l.steps.len(), 2);
        let s = &l.steps[0];
        assert_eq!((s.title.as_str(), s.line), ("The problem", 9));
        assert!(matches!(&s.parts[0], Part::Prose(p) if p.contains("Prose *here*")));
        assert!(matches!(&s.parts[1], Part::Cuda(c) if c.line == 14 && c.text.starts_with("__global__")));
        assert!(matches!(&s.parts[2], Part::Gridlab(c) if c.line == 18));
        // A python block in a quote is prose.
        assert!(matches!(&s.parts[3], Part::Prose(p) if p.contains("print(\"shown, not run\")")));
        let ex = l.steps[1].exercise().unwrap();
        assert_eq!(ex.task, "Write `add_half(float *a, int n)`.");
        assert_eq!(ex.hints, ["Use the global index.", "`if (i < n)`."]);
        assert_eq!(ex.check.configs.len(), 2);
        assert_eq!(ex.check.configs[0].label(), "n = 1000, threads = 256, blocks = 4");
        assert_eq!(ex.check.configs[0].line, 43);
        // Config lines are blanked, so the body's lines are the file's lines.
        let body_lines: Vec<&str> = ex.check.body.text.lines().collect();
        assert_eq!(body_lines[3], "add_half<<<blocks, threads>>>(a, n)");
        assert_eq!(ex.check.body.line + 3, 46);
        assert!(ex.solution.text.contains("if (i < n)"));
        assert!(ex.starter.is_some());
    }

    fn error_of(text: &str) -> String {
        parse("lessons/01-x.md", text).unwrap_err().to_string()
    }

    #[test]
    fn output_blocks_are_shown_as_prose_and_kept_with_the_block_they_show() {
        let text = "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n\n```gridlab\nlet n = 3\nn\n```\n\nIt prints:\n\n```output\nn = 3\n```\n\n```exercise\nWrite `k(float *a, int n)`.\n```\n\n```check\nlet a = zeros(4)\nk<<<1, 4>>>(a, 4)\n```\n\n```solution\n__global__ void k(float *a, int n) { }\n__global__ void other(int *b) { }\n```\n";
        let l = parse("lessons/01-x.md", text).unwrap();
        let s = &l.steps[0];
        assert_eq!(s.outputs, vec![Shown { text: "n = 3\n".into(), line: 15, after: 8 }]);
        assert!(matches!(&s.parts[1], Part::Prose(p) if p.contains("```output\nn = 3\n```")));
        // The check knows the signatures the solution declares.
        let ex = s.exercise().unwrap();
        assert_eq!(
            ex.check.kernels,
            vec![
                ("k".to_string(), "__global__ void k(float *a, int n)".to_string()),
                ("other".to_string(), "__global__ void other(int *b)".to_string())
            ]
        );
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n\n```output\n4\n```\n");
        assert!(
            e.starts_with(
                "lessons/01-x.md:7: an `output` block shows what the `cuda` or `gridlab` block before it prints"
            ),
            "{e}"
        );
        let e = error_of(
            "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n\n```gridlab\nlet n = 3\n```\n\n```output\n```\n",
        );
        assert!(e.contains(":11: the `output` block is empty"), "{e}");
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_fix() {
        assert_eq!(
            error_of("# no front matter\n"),
            "lessons/01-x.md:1: a lesson starts with TOML front matter between two `+++` lines (title = \"...\", summary = \"...\")"
        );
        assert!(error_of("+++\ntitle = \"t\"\n").contains(":1: the front matter opened here is never closed"));
        let e = error_of("+++\ntitle = \"t\"\nsummary = 3\n+++\n## s\n");
        assert!(e.starts_with("lessons/01-x.md:3: front matter:"), "{e}");
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\ncolour = 1\n+++\n## s\n");
        assert!(e.starts_with("lessons/01-x.md:4: front matter: unknown field `colour`"), "{e}");
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n\n```check\nexpect 1 == 1\n```\n");
        assert_eq!(
            e,
            "lessons/01-x.md:7: a `check` block belongs to an exercise: put an `exercise` block before it in this step"
        );
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n\n```exercise\ndo it\n```\n\n## next\n");
        assert_eq!(e, "lessons/01-x.md:7: the exercise has no `check` block: add one after it, in the same step");
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n```cuda\n__global__ void k() {}\n```\n## s\n");
        assert!(e.starts_with("lessons/01-x.md:5: a `cuda` block before the first step"), "{e}");
        let e = error_of("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\nno steps\n");
        assert_eq!(e, "lessons/01-x.md: the lesson has no steps: each `## heading` starts one");
        let e = error_of(
            "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n- item\n\n  ```cuda\n  __global__ void k() {}\n  ```\n",
        );
        assert!(e.starts_with("lessons/01-x.md:8: a `cuda` block inside a list"), "{e}");
        assert!(parse("lessons/1-x.md", GOOD).unwrap_err().message.contains("NN-slug.md"));
        assert!(parse("lessons/01-X.md", GOOD).is_err());
    }

    #[test]
    fn config_lines_are_checked_when_the_lesson_loads() {
        let with_check = |check: &str| {
            format!(
                "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n```exercise\ndo\n```\n```solution\n__global__ void k() {{}}\n```\n```check\n{check}\n```\n"
            )
        };
        let e = error_of(&with_check("config n 4\nk<<<1, 1>>>()"));
        assert_eq!(e, "lessons/01-x.md:13: `n 4` in a config line: write `name = value`");
        let e = error_of(&with_check("config n = 4, 2x = 1\nk<<<1, 1>>>()"));
        assert!(e.contains(":13: `2x` is not a name"), "{e}");
        let e = error_of(&with_check("config n = (4 +\nk<<<1, 1>>>()"));
        assert!(e.contains(":13: `n = (4 +`"), "{e}");
        let e = error_of(&with_check("config n = 4\nconfig m = 4\nk<<<1, 1>>>()"));
        assert!(e.contains(":14: every config line binds the same names"), "{e}");
        let e = error_of(&with_check("config shape = (4, 4), n = 16\n__global__ void h() {}"));
        assert!(e.contains("no statements") || e.contains("cannot define CUDA"), "{e}");
        let ok = parse("lessons/01-x.md", &with_check("config shape = (4, 4), n = 16\nk<<<1, 1>>>()")).unwrap();
        let cfg = &ok.steps[0].exercise().unwrap().check.configs[0];
        assert_eq!(cfg.bindings, [("shape".to_string(), "(4, 4)".to_string()), ("n".to_string(), "16".to_string())]);
    }

    #[test]
    fn error_blocks_are_marked_and_other_words_refused() {
        let lesson = |fence: &str| {
            format!("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## s\n```{fence}\nk<<<1, 2048>>>()\n```\n")
        };
        let l = parse("lessons/01-x.md", &lesson("gridlab error")).unwrap();
        assert!(matches!(&l.steps[0].parts[0], Part::Gridlab(c) if c.refused));
        let l = parse("lessons/01-x.md", &lesson("gridlab")).unwrap();
        assert!(matches!(&l.steps[0].parts[0], Part::Gridlab(c) if !c.refused));
        let e = error_of(&lesson("gridlab eror"));
        assert!(e.starts_with("lessons/01-x.md:6: `gridlab eror`: a block takes at most `error`"), "{e}");
        assert!(error_of(&lesson("solution error")).contains("at most `error`"));
    }

    #[test]
    fn a_mistyped_block_tag_is_refused_and_a_language_is_shown() {
        let head = "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## one\n";
        for (tag, meant) in [("hnit", "hint"), ("gridlb", "gridlab"), ("soluton", "solution"), ("chek", "check")] {
            let e = error_of(&format!("{head}```{tag}\nx\n```\n"));
            assert!(e.contains(&format!("```{tag} is not a block gridlab knows: did you mean ```{meant}?")), "{e}");
            assert!(e.contains("01-x.md:6"), "names the line: {e}");
        }
        for tag in ["text", "python", "console", "cpp", "Python"] {
            assert!(super::parse("lessons/01-x.md", &format!("{head}```{tag}\nx\n```\n")).is_ok(), "{tag}");
        }
    }

    #[test]
    fn lessons_may_not_touch_files() {
        for (tag, cmd) in
            [("gridlab", ":save /tmp/x.gridlab"), ("check", ":load ../../etc/passwd"), ("solution", "  :export out.md")]
        {
            let lesson = if tag == "gridlab" {
                format!("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## one\n```gridlab\nlet a = zeros(4)\n{cmd}\n```\n")
            } else {
                format!(
                    "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## one\n```exercise\ndo it\n```\n```{tag}\nlet a = zeros(4)\n{cmd}\n```\n"
                )
            };
            let e = error_of(&lesson);
            assert!(e.contains("a lesson may not run `:"), "{tag}: {e}");
            assert!(e.contains(":8:") || e.contains(":11:"), "{tag}: names the line: {e}");
        }
        // In prose and in text blocks it is only words.
        let ok = "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## one\nType `:save my.gridlab`.\n```text\n:save my.gridlab\n```\n";
        assert!(super::parse("lessons/01-x.md", ok).is_ok());
    }

    #[test]
    fn file_names_give_number_and_slug() {
        assert_eq!(file_name("lessons/03-one-thread.md"), Some((3, "one-thread".into())));
        assert_eq!(file_name("README.md"), None);
        assert_eq!(file_name("03-.md"), None);
        assert_eq!(file_name("03-a_b.md"), None);
    }
}
