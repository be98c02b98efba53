//! Lessons: the guided course.
//!
//! A lesson is a Markdown file with TOML front matter (the format is documented for course
//! authors in `lessons/README.md`). This module holds what a lesson *is*; its children do the
//! rest:
//!
//! - [`parse`] reads one file into a [`Lesson`], with errors that name the file and line;
//! - [`course`] finds the lessons of a course (the built-in one, or a folder) and resolves ids;
//! - [`check`] runs an exercise's check over its configurations, seeds and schedules (for
//!   `:check`, and for `replay/lesson.rs`, which walks a lesson without a learner);
//! - [`figures`] finds the figures a lesson's prose quotes, for `replay` and `dev check` to hold
//!   against what its blocks printed;
//! - [`lang`] shows a lesson in the learner's language: its Python twins or its CUDA C;
//! - [`progress`] remembers where the learner is, written atomically;
//! - [`guide`] is the guided mode's state behind `:lesson`, `:next`, `:hint`, `:check` ..., added
//!   to a session through its extension point ([`session`] makes one with them installed).

pub mod check;
pub mod course;
pub mod coverage;
pub mod figures;
pub mod guide;
pub mod handout;
pub mod lang;
pub mod mutants;
pub mod parse;
pub mod progress;

use std::fmt;

pub use crate::session::Lang;
pub use course::Course;
pub use guide::Lessons;

use crate::session::command::CommandSpec;
use crate::session::dispatch;

/// Every `:` command of a session with the lesson guide installed, in `:help`'s order: the
/// session's and the guide's. What the prompt completes and colours (the REPL always installs
/// the guide), what lesson prose colours, and what a lesson's blocks are checked against.
pub fn commands() -> Vec<&'static CommandSpec> {
    dispatch::listing(guide::COMMANDS)
}
pub use parse::parse;

/// A session with the lesson commands installed (`:lesson`, `:next`, `:check` ...), and the
/// guide `guide` open in it when given. Every session a learner or a course runs in is made here.
pub fn session(options: crate::session::Options, guide: Option<guide::Guide>) -> crate::session::Session {
    let mut session = crate::session::Session::new(options);
    session.install(Box::new(Lessons { guide }));
    session
}

/// One lesson of a course.
#[derive(Clone, Debug)]
pub struct Lesson {
    /// `03-one-thread-per-element`: the file name without `.md`.
    pub id: String,
    pub number: u32,
    /// `one-thread-per-element`.
    pub slug: String,
    /// Where it was read from, for messages (`lessons/03-one-thread-per-element.md`).
    pub path: String,
    pub meta: Meta,
    /// Markdown before the first step, shown with the first step.
    pub intro: String,
    pub steps: Vec<Step>,
}

/// The front matter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    pub title: String,
    pub summary: String,
    /// `summary_numba`: the summary in Python, where the CUDA C one names C (`__global__`).
    pub summary_numba: Option<String>,
    pub concepts: Vec<String>,
    /// The least a lesson needs to run: the simulator (every lesson of the built-in course), or
    /// a GPU.
    pub needs_gpu: bool,
}

/// A `##` section.
#[derive(Clone, Debug)]
pub struct Step {
    pub title: String,
    /// The code the heading quotes (`` ## `atomicAdd`: nothing lost ``), written plain in
    /// `title`: a Python learner reads it in Numba's words.
    pub code_in_title: Vec<String>,
    /// The line of the heading.
    pub line: u32,
    pub parts: Vec<Part>,
    /// The step's ` ```output ` blocks: what a block before each prints, shown to the learner as
    /// prose is (they stay in `parts` as Markdown) and compared with what gridlab really prints
    /// by `replay` and `dev check`.
    pub outputs: Vec<Shown>,
}

/// A ` ```output ` block: lines the `cuda` or `gridlab` block before it prints, in order, each
/// found in that block's output (spaces and line breaks aside; `...` stands for any text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    pub text: String,
    /// The file line of its first line.
    pub line: u32,
    /// The line of the first line of the block whose output it shows (its `Code::line`).
    pub after: u32,
}

/// A piece of a step, in the order the author wrote them.
#[derive(Clone, Debug)]
pub enum Part {
    /// Markdown, shown rendered (any fenced block that gridlab does not run is part of it).
    Prose(String),
    /// A ` ```cuda ` block: kernel source the step defines.
    Cuda(Code),
    /// A ` ```numba ` block: a Python kernel the step defines, the twin of the `cuda` block
    /// before it (its `lang` is `Some(Lang::Python)`; the twin's is `Some(Lang::Cuda)`).
    Python(Code),
    /// A ` ```gridlab ` block: statements and commands to run.
    Gridlab(Code),
    Exercise(Box<Exercise>),
}

/// The text of a fenced block and the file line of its first line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub text: String,
    pub line: u32,
    /// A ` ```gridlab error ` (or ` ```cuda error `) block: every input in it is one gridlab
    /// refuses, shown on purpose (a launch beyond the limits, a kernel that does not compile).
    pub refused: bool,
    /// The one language it is shown in, when it has a twin in the other (a `cuda` block and the
    /// `numba` block after it, a `gridlab` block and its `gridlab numba` twin); `None`: both.
    pub lang: Option<Lang>,
}

impl Code {
    /// The text behind as many blank lines as come before it in the file, so that inputs split
    /// from it, and errors in them, carry the file's own line numbers.
    pub fn padded(&self) -> String {
        format!("{}{}", "\n".repeat(self.line.saturating_sub(1) as usize), self.text)
    }
}

#[derive(Clone, Debug)]
pub struct Exercise {
    /// The task, in Markdown.
    pub task: String,
    pub line: u32,
    pub starter: Option<Code>,
    pub check: Check,
    pub solution: Code,
    /// Markdown, revealed one at a time.
    pub hints: Vec<String>,
    /// The exercise for learners who write Python: its `starter numba`, `solution numba` ...
    pub python: Option<Box<PythonExercise>>,
}

/// The Python side of an exercise, from its blocks tagged `numba` (` ```solution numba `).
/// What is not given is the exercise's own: the task, the check and the hints.
#[derive(Clone, Debug)]
pub struct PythonExercise {
    pub task: Option<String>,
    pub starter: Option<Code>,
    pub solution: Code,
    pub check: Option<Check>,
    pub hints: Vec<String>,
}

/// A ` ```check ` block: statements run once per configuration.
#[derive(Clone, Debug)]
pub struct Check {
    pub configs: Vec<Config>,
    /// The statements, with `config` lines blanked so that line numbers still match the file.
    pub body: Code,
    /// The kernels of the exercise's solution, by name, with their signatures as CUDA declares
    /// them (`__global__ void add_half(float *a, int n)`): what a learner who has not defined
    /// one yet is asked to write.
    pub kernels: Vec<(String, String)>,
}

/// One `config` line: names bound as scalars before the check's statements run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub line: u32,
    /// `(name, expression)` in the order written.
    pub bindings: Vec<(String, String)>,
}

impl Config {
    /// `n = 1000, threads = 256`: how a failure names the configuration.
    pub fn label(&self) -> String {
        self.bindings.iter().map(|(n, e)| format!("{n} = {e}")).collect::<Vec<_>>().join(", ")
    }
}

impl Shown {
    /// Whether `printed` (what the block printed, without colour) shows this block's lines, in
    /// order. Spaces and line breaks count as one space, so a line the terminal wrapped still
    /// matches; `...` stands for any text; words and numbers match whole (`4` is not found in
    /// `1024`, `4.8...` is not found in `4.90234375`). On failure, the first line not found.
    pub fn check(&self, printed: &str) -> Result<(), String> {
        let tidy = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let printed = tidy(printed);
        let mut from = 0;
        for line in self.text.lines().map(tidy).filter(|l| !l.is_empty()) {
            match find_shown(&printed, from, &line) {
                Some(end) => from = end,
                None => return Err(line),
            }
        }
        Ok(())
    }
}

/// Where `line` (with `...` for any text) ends in `text`, found at or after `from`. Its pieces
/// between `...`s are found in order, each as early as it can be (which finds them whenever they
/// are there), a piece matching whole words where no `...` is beside it.
fn find_shown(text: &str, from: usize, line: &str) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let pieces: Vec<&str> = line.split("...").map(str::trim).collect();
    let mut at = from;
    for (k, piece) in pieces.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
        let (open, close) = (k == 0, k + 1 == pieces.len());
        let mut search = at;
        at = loop {
            let i = search + text.get(search..)?.find(piece)?;
            let end = i + piece.len();
            let whole_start = !open || !word(piece.chars().next()) || !word(text[..i].chars().next_back());
            let whole_end = !close || !word(piece.chars().next_back()) || !word(text[end..].chars().next());
            if whole_start && whole_end {
                break end;
            }
            search = i + piece.chars().next().map_or(1, char::len_utf8);
        };
    }
    Some(at)
}

impl Lesson {
    pub fn title(&self) -> &str {
        &self.meta.title
    }

    /// The exercises, with the index of the step each is in.
    pub fn exercises(&self) -> impl Iterator<Item = (usize, &Exercise)> {
        self.steps.iter().enumerate().flat_map(|(i, s)| {
            s.parts.iter().filter_map(move |p| match p {
                Part::Exercise(e) => Some((i, e.as_ref())),
                _ => None,
            })
        })
    }
}

impl Step {
    pub fn exercise(&self) -> Option<&Exercise> {
        self.parts.iter().find_map(|p| match p {
            Part::Exercise(e) => Some(e.as_ref()),
            _ => None,
        })
    }
}

/// A lesson that cannot be read: the file, the line, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LessonError {
    pub path: String,
    /// 0 when the problem is with the file as a whole.
    pub line: u32,
    pub message: String,
}

impl fmt::Display for LessonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shown;

    fn shown(text: &str) -> Shown {
        Shown { text: text.into(), line: 1, after: 1 }
    }

    #[test]
    fn output_blocks_match_lines_in_order_whole_words_and_wrapped_lines() {
        let printed = "blocks = 4\nblocks * 256 = 1024\n(n + 255) / 256 = 4.90234375\nfinding: 24 threads read past the end of `a`\n  (length 1000): indices 1000..1023\n";
        assert_eq!(shown("blocks = 4\n\nblocks * 256 = 1024\n").check(printed), Ok(()));
        // Spaces and the line the terminal wrapped count as one space.
        assert_eq!(
            shown("finding: 24 threads read past the end of `a` (length 1000):   indices 1000..1023").check(printed),
            Ok(())
        );
        assert_eq!(shown("(n + 255) / 256 = 4.90...").check(printed), Ok(()));
        assert_eq!(shown("finding: ... indices 1000..1023").check(printed), Ok(()));
        // What a lesson once said, and numbers inside other numbers.
        assert_eq!(shown("(n + 255) / 256 = 4.8...").check(printed), Err("(n + 255) / 256 = 4.8...".into()));
        assert_eq!(shown("= 4.9").check(printed), Err("= 4.9".into()));
        assert_eq!(shown("256 = 102").check(printed), Err("256 = 102".into()));
        assert_eq!(shown("4 threads").check(printed), Err("4 threads".into()));
        // In order.
        assert_eq!(shown("blocks * 256 = 1024\nblocks = 4").check(printed), Err("blocks = 4".into()));
    }

    /// The bullet of the format README's "What a check can use" that starts with `label`: the
    /// names in backticks after its colon (`zeros(N)` gives `zeros`).
    fn listed(label: &str) -> Vec<String> {
        let readme = include_str!("../lessons/README.md");
        let section = readme.split("\n## What a check can use\n").nth(1).expect("the section is there");
        let section = section.split("\n## ").next().unwrap_or_default();
        let item = section
            .split("\n- ")
            .find(|item| item.starts_with(label))
            .unwrap_or_else(|| panic!("no `- {label}` item in the README's list"));
        // The names come after the item's label and its colon.
        let names = item.split_once(": ").map_or("", |(_, names)| names);
        names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|code| code.split(['(', ' ']).next().unwrap_or_default().to_string())
            .collect()
    }

    fn same(listed: Vec<String>, known: Vec<&str>, what: &str) {
        for name in &listed {
            assert!(
                known.contains(&name.as_str()),
                "lessons/README.md lists {what} `{name}`, which gridlab does not know"
            );
        }
        for name in known {
            assert!(listed.iter().any(|l| l == name), "lessons/README.md does not list {what} `{name}`");
        }
    }

    /// The format README lists what a check can use; gridlab's own tables are the truth.
    #[test]
    fn the_format_readme_lists_the_statement_language_as_gridlab_knows_it() {
        let mut functions = listed("Constructors");
        functions.extend(listed("Functions"));
        same(functions, crate::script::builtins::names().collect(), "the statement function");
        let dtypes = listed("Dtypes");
        for name in &dtypes {
            assert!(
                crate::dtype::DType::parse(name).is_some(),
                "lessons/README.md lists dtype `{name}`, which gridlab does not know"
            );
        }
        for dtype in crate::dtype::DType::ALL {
            assert!(
                dtypes.iter().any(|d| d == dtype.name()),
                "lessons/README.md does not list dtype `{}`",
                dtype.name()
            );
        }
        let kinds = crate::finding::FindingKind::ALL.iter().map(|k| k.name()).collect();
        same(listed("Finding kinds"), kinds, "the finding kind");
        let fields = crate::session::COST_FIELDS.iter().map(|(name, _)| *name).collect();
        same(listed("Cost fields"), fields, "the cost field");
    }
}
