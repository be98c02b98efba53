//! A lesson in the learner's language. A course is written once, in CUDA C, with Python twins
//! where the languages differ: a ` ```numba ` block after a ` ```cuda ` block, `starter numba`
//! and `solution numba` for an exercise (`lessons/README.md`). [`Lesson::in_lang`] picks one
//! side, so the guide, the checks, `replay`, `dev check`, demos and handouts each see a plain
//! lesson in one language and need not know there were two.
//!
//! In Python, a kernel's CUDA C is shown beside it (a quote after the Python block), so the two
//! languages can be read side by side; statements keep gridlab's statement language, with
//! launches in Numba's brackets (`k[blocks, threads](a)`), which the prompt takes for either
//! language's kernels.

use super::{Course, Exercise, Lang, Lesson, Part, Step};
use crate::python::words;

impl Course {
    /// The course as a learner of `lang` sees it.
    pub fn in_lang(&self, lang: Lang) -> Course {
        Course { name: self.name.clone(), lessons: self.lessons.iter().map(|l| l.in_lang(lang)).collect() }
    }
}

impl Lesson {
    /// Whether any block of the lesson has a Python twin: shown in Python, it differs.
    pub fn has_python(&self) -> bool {
        self.steps.iter().flat_map(|s| &s.parts).any(|p| match p {
            Part::Python(_) => true,
            Part::Exercise(ex) => ex.python.is_some(),
            _ => false,
        })
    }

    /// Whether every kernel and exercise of the lesson has its Python twin.
    pub fn fully_in_python(&self) -> Result<(), (u32, &'static str)> {
        for part in self.steps.iter().flat_map(|s| &s.parts) {
            match part {
                Part::Cuda(code) if code.lang.is_none() && !code.refused => {
                    return Err((code.line.saturating_sub(1), "this `cuda` block has no `numba` twin after it"));
                }
                Part::Exercise(ex) if ex.python.is_none() => {
                    return Err((ex.line, "this exercise has no `solution numba` (and `starter numba`)"));
                }
                Part::Exercise(ex)
                    if ex.starter.is_some() && ex.python.as_ref().is_some_and(|p| p.starter.is_none()) =>
                {
                    return Err((ex.line, "this exercise has a `starter` but no `starter numba`"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The lesson with only the blocks of `lang`.
    pub fn in_lang(&self, lang: Lang) -> Lesson {
        let mut lesson = self.clone();
        lesson.intro = prose_in(&lesson.intro, lang);
        if lang == Lang::Python
            && let Some(summary) = lesson.meta.summary_numba.clone()
        {
            lesson.meta.summary = summary;
        }
        if lang == Lang::Python {
            // `__syncthreads` is `cuda.syncthreads` in the course's list of what a lesson covers.
            lesson.meta.concepts = lesson.meta.concepts.iter().map(|c| words::words(c)).collect();
        }
        for step in &mut lesson.steps {
            project_step(step, lang);
        }
        lesson
    }
}

fn project_step(step: &mut Step, lang: Lang) {
    if lang == Lang::Python {
        // A title's quoted code too: "atomicAdd: nothing lost" reads "cuda.atomic.add: ...".
        for code in std::mem::take(&mut step.code_in_title) {
            step.title = step.title.replacen(&code, &words::code(&code), 1);
        }
    }
    let parts = std::mem::take(&mut step.parts);
    let mut pending_c: Option<super::Code> = None;
    for part in parts {
        match part {
            Part::Cuda(code) if code.lang == Some(Lang::Cuda) && lang == Lang::Python => pending_c = Some(code),
            Part::Python(_) if lang == Lang::Cuda => {}
            Part::Python(code) => {
                let c = pending_c.take();
                step.parts.push(Part::Python(code));
                if let Some(c) = c {
                    step.parts.push(Part::Prose(beside(&c.text)));
                }
            }
            Part::Gridlab(code) if code.lang.is_some_and(|l| l != lang) => {}
            Part::Gridlab(mut code) => {
                if code.lang.is_none() && lang == Lang::Python {
                    code.text = words::launches(&code.text);
                }
                step.parts.push(Part::Gridlab(code));
            }
            Part::Exercise(ex) => step.parts.push(Part::Exercise(Box::new(exercise_in(*ex, lang)))),
            Part::Prose(md) => step.parts.push(Part::Prose(prose_in(&md, lang))),
            other => step.parts.push(other),
        }
    }
    // An `output` block quotes what the CUDA C printed, with launches named `k<<<g, b>>>`; a
    // Python kernel's launch is reported `k[g, b]`. Shown and compared that way in Python, so
    // an author writes counts that differ between the two (a Python kernel's 64-bit integers
    // take more warp steps) as `...`.
    if lang == Lang::Python {
        for shown in &mut step.outputs {
            shown.text = words::launches(&shown.text);
        }
    }
}

/// Prose as a learner of `lang` reads it: a ` ```md cuda ` block's Markdown is part of the prose
/// in CUDA C and left out in Python, a ` ```md numba ` block's the other way round
/// (`lessons/README.md`). A block that holds fenced code is fenced with four backticks.
///
/// Prose both languages share is written in CUDA C's words; in Python, its quoted code
/// (`threadIdx.x`, `__syncthreads()`, `k<<<g, b>>>`) is said in Numba's (`crate::python::words`),
/// except in a sidebar headed **In Numba**, which compares the two on purpose.
fn prose_in(md: &str, lang: Lang) -> String {
    let mut out = String::with_capacity(md.len());
    // The open twin block: its fence's length, and whether it is the learner's language.
    let mut open: Option<(usize, bool)> = None;
    let mut shared = SharedProse::default();
    for line in md.split_inclusive('\n') {
        let t = line.trim();
        let ticks = t.len() - t.trim_start_matches('`').len();
        match open {
            Some((n, _)) if ticks >= n && t.trim_start_matches('`').is_empty() => open = None,
            Some((_, keep)) => {
                if keep {
                    out.push_str(line);
                }
            }
            None if ticks >= 3 && twin_of(&t[ticks..]).is_some() => {
                open = twin_of(&t[ticks..]).map(|of| (ticks, of == lang));
            }
            None if lang == Lang::Python => out.push_str(&shared.in_python(line)),
            None => out.push_str(line),
        }
    }
    out
}

/// Where a line of shared prose stands, to say its quoted code in Numba's words.
#[derive(Default)]
struct SharedProse {
    /// Inside a fenced block: its kind, and its fence's length.
    fence: Option<(Fence, usize)>,
    /// Inside a blockquote headed **In Numba**.
    numba_sidebar: bool,
}

/// A fenced block in shared prose, as a Python learner reads it.
#[derive(Clone, Copy, PartialEq)]
enum Fence {
    /// ` ```text `: quoted code, said in Numba's words.
    Text,
    /// ` ```output `: what gridlab printed, whose launches a Python kernel's report writes
    /// `k[g, b]`.
    Output,
    /// Any other: left as written.
    Other,
}

impl SharedProse {
    fn in_python(&mut self, line: &str) -> String {
        let t = line.trim_start_matches(['>', ' ']).trim_end();
        let quoted = line.trim_start().starts_with('>');
        if !quoted {
            self.numba_sidebar = false;
        } else if t.starts_with("**In Numba**") {
            self.numba_sidebar = true;
        }
        let ticks = t.len() - t.trim_start_matches('`').len();
        if ticks >= 3 {
            match self.fence {
                Some((_, n)) if ticks >= n && t[ticks..].is_empty() => self.fence = None,
                Some(_) => {}
                None => {
                    let kind = match t[ticks..].split_whitespace().next() {
                        Some("text") => Fence::Text,
                        Some("output") => Fence::Output,
                        _ => Fence::Other,
                    };
                    self.fence = Some((kind, ticks));
                }
            }
            return line.to_string();
        }
        match self.fence {
            Some((Fence::Output, _)) => words::launches(line),
            _ if self.numba_sidebar => line.to_string(),
            Some((Fence::Text, _)) => words::words(line),
            Some((Fence::Other, _)) => line.to_string(),
            None => code_spans_in_python(line),
        }
    }
}

/// Each `code span` of a line of prose in Numba's words.
fn code_spans_in_python(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else { break };
        let span = &rest[open + 1..open + 1 + len];
        out.push_str(&rest[..open]);
        out.push('`');
        out.push_str(&words::code(span));
        out.push('`');
        rest = &rest[open + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The language a fence's info (`md numba`, `markdown cuda`) gives its Markdown to.
fn twin_of(info: &str) -> Option<Lang> {
    let mut words = info.split_whitespace();
    if !matches!(words.next(), Some("md" | "markdown")) {
        return None;
    }
    let lang = match words.next()? {
        "cuda" => Lang::Cuda,
        "numba" => Lang::Python,
        _ => return None,
    };
    words.next().is_none().then_some(lang)
}

/// The quote after a Python kernel that shows the CUDA C it stands for.
fn beside(c: &str) -> String {
    let mut md = String::from("> **In CUDA C** (`:cuda NAME` shows what gridlab makes of yours)\n>\n> ```cuda\n");
    for line in c.trim_end().lines() {
        md.push_str(if line.is_empty() { ">" } else { "> " });
        md.push_str(line);
        md.push('\n');
    }
    md.push_str("> ```");
    md
}

fn exercise_in(ex: Exercise, lang: Lang) -> Exercise {
    match (lang, ex.python) {
        (Lang::Python, Some(py)) => {
            let mut check = py.check.unwrap_or(ex.check);
            check.kernels = super::parse::python_signatures(&py.solution.text);
            // A failed check quotes its launch: in the brackets the learner writes.
            check.body.text = words::launches(&check.body.text);
            Exercise {
                task: py.task.unwrap_or_else(|| prose_in(&ex.task, lang)),
                line: ex.line,
                starter: py.starter,
                check,
                solution: py.solution,
                hints: if py.hints.is_empty() {
                    ex.hints.iter().map(|h| prose_in(h, lang)).collect()
                } else {
                    py.hints
                },
                python: None,
            }
        }
        (_, _) => Exercise { python: None, ..ex },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prose_quotes_code_in_numbas_words_for_python() {
        let md = "Each thread reads `threadIdx.x`, then `__syncthreads()`; launch `k<<<g, 256>>>`.\n\n```text\ni = blockIdx.x * blockDim.x + threadIdx.x\n```\n\n```cuda\nint i = threadIdx.x;\n```\n\n> **In Numba**\n>\n> `cuda.grid(1)` is `blockIdx.x * blockDim.x + threadIdx.x`.\n\nAfter: `atomicAdd(&t[0], v)` and `a[i] += 0.5f`.\n\n```md numba\nTwin: `__global__` kept.\n```\n";
        let py = prose_in(md, Lang::Python);
        assert!(py.contains("reads `cuda.threadIdx.x`, then `cuda.syncthreads()`; launch `k[g, 256]`."), "{py}");
        assert!(py.contains("```text\ni = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n```"), "{py}");
        assert!(py.contains("```cuda\nint i = threadIdx.x;\n```"), "code blocks are code, not prose: {py}");
        assert!(
            py.contains("> `cuda.grid(1)` is `blockIdx.x * blockDim.x + threadIdx.x`."),
            "the sidebar compares: {py}"
        );
        assert!(py.contains("After: `cuda.atomic.add(t, 0, v)` and `a[i] += 0.5`."), "{py}");
        assert!(py.contains("Twin: `__global__` kept."), "a twin is written for its language: {py}");
        let out = prose_in("```output\nk<<<4, 256>>>: 1,024 threads, `threadIdx.x` kept\n```\n", Lang::Python);
        assert_eq!(
            out, "```output\nk[4, 256]: 1,024 threads, `threadIdx.x` kept\n```\n",
            "output is what gridlab printed"
        );
        assert_eq!(prose_in(md, Lang::Cuda).matches("threadIdx.x`").count(), 2, "CUDA C reads it as written");
    }

    #[test]
    fn step_titles_quote_code_in_the_learners_language() {
        let step = || Step {
            title: "atomicAdd: nothing lost; if (i < n) and :race".into(),
            code_in_title: vec!["atomicAdd".into(), "if (i < n)".into(), ":race".into()],
            line: 1,
            parts: vec![],
            outputs: vec![],
        };
        let mut py = step();
        project_step(&mut py, Lang::Python);
        assert_eq!(py.title, "cuda.atomic.add: nothing lost; if i < n: and :race");
        let mut c = step();
        project_step(&mut c, Lang::Cuda);
        assert_eq!(c.title, "atomicAdd: nothing lost; if (i < n) and :race");
    }

    #[test]
    fn prose_twins_show_one_language() {
        let md = "Shared.\n\n```md cuda\n`float *a` is a pointer.\n```\n\n````md numba\n`a` is an array:\n\n```python\na.size\n```\n````\nAfter.\n\n```text\nkept\n```\n";
        let c = prose_in(md, Lang::Cuda);
        assert!(c.contains("`float *a` is a pointer.") && !c.contains("is an array") && !c.contains("md "), "{c}");
        let py = prose_in(md, Lang::Python);
        assert!(py.contains("`a` is an array:\n\n```python\na.size\n```\n") && !py.contains("pointer"), "{py}");
        for shown in [&c, &py] {
            assert!(shown.starts_with("Shared.") && shown.contains("After.") && shown.contains("```text\nkept\n```"));
        }
    }
}

#[cfg(test)]
mod course_tests {
    use super::*;
    use crate::lesson::parse;

    #[test]
    fn every_built_in_lesson_is_in_both_languages() {
        let course = Course::builtin().expect("the built-in course parses");
        for lesson in &course.lessons {
            if let Err((line, why)) = lesson.fully_in_python() {
                panic!("{}:{line}: {why}", lesson.path);
            }
        }
    }

    #[test]
    fn in_python_a_lesson_shows_the_python_twins_with_the_c_beside() {
        let course = Course::builtin().unwrap();
        let lesson = course.lessons.iter().find(|l| l.number == 3).unwrap();
        let py = lesson.in_lang(Lang::Python);
        let parts: Vec<&Part> = py.steps.iter().flat_map(|s| &s.parts).collect();
        assert!(!parts.iter().any(|p| matches!(p, Part::Cuda(_))), "no CUDA C kernel is left to define");
        let python = parts.iter().filter(|p| matches!(p, Part::Python(_))).count();
        assert_eq!(python, 2);
        assert!(parts.iter().any(
            |p| matches!(p, Part::Prose(md) if md.contains("**In CUDA C**") && md.contains("__global__ void who_am_i"))
        ));
        // Launches are written in Numba's brackets.
        let gridlab: Vec<&str> =
            parts.iter().filter_map(|p| if let Part::Gridlab(c) = p { Some(c.text.as_str()) } else { None }).collect();
        assert!(gridlab.iter().any(|t| t.contains("who_am_i[3, 4](blk, thr, idx, grd)")), "{gridlab:?}");
        assert!(!gridlab.iter().any(|t| t.contains("<<<")));
        let (_, ex) = py.exercises().next().unwrap();
        assert!(ex.starter.as_ref().unwrap().text.starts_with("@cuda.jit"));
        assert!(ex.solution.text.contains("cuda.grid(1)"));
        assert_eq!(ex.check.kernels, vec![("add_vectors".into(), "@cuda.jit def add_vectors(x, y, out):".into())]);
        assert!(ex.task.contains("add_vectors(x, y, out)"));
        // The concepts it lists are said in Numba's words.
        let shared = course.lessons.iter().find(|l| l.meta.concepts.iter().any(|c| c == "__syncthreads")).unwrap();
        assert!(shared.in_lang(Lang::Python).meta.concepts.iter().any(|c| c == "cuda.syncthreads"));
        // And in CUDA C, nothing of the Python is left.
        let c = lesson.in_lang(Lang::Cuda);
        assert!(!c.steps.iter().flat_map(|s| &s.parts).any(|p| matches!(p, Part::Python(_))));
        let (_, ex) = c.exercises().next().unwrap();
        assert!(ex.solution.text.starts_with("__global__"));
        assert!(ex.python.is_none());
    }

    fn lesson(body: &str) -> Result<Lesson, crate::lesson::LessonError> {
        parse("01-t.md", &format!("+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n\n## Step\n\n{body}"))
    }

    #[test]
    fn python_twins_are_refused_where_they_have_nothing_to_pair_with() {
        let e = lesson("```numba\n@cuda.jit\ndef k(a):\n    pass\n```\n").unwrap_err();
        assert!(e.message.contains("Python twin of the `cuda` block before it"), "{e}");
        assert_eq!(e.line, 8);
        let e = lesson("```gridlab numba\nk[1, 1](a)\n```\n").unwrap_err();
        assert!(e.message.contains("`gridlab numba`"), "{e}");
        let e = lesson("```cuda numba\n__global__ void k() {}\n```\n").unwrap_err();
        assert!(e.message.contains("at most `error`"), "{e}");
        // An exercise with Python blocks needs a Python solution.
        let ex = "```exercise\nDo it.\n```\n\n```check\nk<<<1, 1>>>()\n```\n\n```solution\n__global__ void k() {}\n```\n\n```starter numba\n@cuda.jit\ndef k():\n    pass\n```\n";
        let e = lesson(ex).unwrap_err();
        assert!(e.message.contains("no `solution numba`"), "{e}");
        let ok = format!("{ex}\n```solution numba\n@cuda.jit\ndef k():\n    return\n```\n");
        let l = lesson(&ok).unwrap();
        assert!(l.has_python());
        let e = lesson(&format!("{ok}\n```solution numba\n@cuda.jit\ndef k():\n    return\n```\n")).unwrap_err();
        assert!(e.message.contains("already has a `solution numba`"), "{e}");
    }
}
