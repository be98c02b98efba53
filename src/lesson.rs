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
//! - [`progress`] remembers where the learner is, written atomically;
//! - [`prose`] renders Markdown for the terminal;
//! - [`guide`] is the guided mode's state behind `:lesson`, `:next`, `:hint`, `:check` ..., added
//!   to a session through its extension point ([`session`] makes one with them installed).

pub mod check;
pub mod course;
pub mod guide;
pub mod parse;
pub mod progress;
pub mod prose;

use std::fmt;

pub use course::Course;
pub use guide::{Lessons, guide_of};
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
    pub concepts: Vec<String>,
    /// The least a lesson needs to run: the simulator (every lesson of the built-in course), or
    /// a GPU.
    pub needs_gpu: bool,
}

/// A `##` section.
#[derive(Clone, Debug)]
pub struct Step {
    pub title: String,
    /// The line of the heading.
    pub line: u32,
    pub parts: Vec<Part>,
}

/// A piece of a step, in the order the author wrote them.
#[derive(Clone, Debug)]
pub enum Part {
    /// Markdown, shown rendered (any fenced block that gridlab does not run is part of it).
    Prose(String),
    /// A ` ```cuda ` block: kernel source the step defines.
    Cuda(Code),
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
}

/// A ` ```check ` block: statements run once per configuration.
#[derive(Clone, Debug)]
pub struct Check {
    pub configs: Vec<Config>,
    /// The statements, with `config` lines blanked so that line numbers still match the file.
    pub body: Code,
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
