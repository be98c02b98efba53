//! The handout of a lesson: what `:export` writes after a demo or a lesson, a document that
//! reads on its own. The lesson gives its title, introduction, step headings and prose; the
//! session's transcript gives what really ran and what it printed, placed under the step whose
//! block it came from. An exercise shows its task, then the starter (labelled as the wrong
//! version), attempts, the solution and what `:check` said of each, in the order they ran.

use super::{Lesson, Part};
use crate::render::handout::{Block, Document, Ran};
use crate::session::files::is_cuda;

/// Commands that move about the lesson: what they print is the lesson itself, which the
/// handout has already.
const NAVIGATION: &[&str] =
    &["next", "back", "step", "lesson", "lessons", "hint", "solution", "export", "help", "save", "quit", "q"];

/// What the learner could have run for a part: its inputs (an exercise's starter and
/// solution, and `:check`).
fn inputs_of(part: &Part) -> Vec<String> {
    let norm = |s: &str| s.trim().to_string();
    match part {
        Part::Prose(_) => Vec::new(),
        Part::Cuda(code) | Part::Python(code) => vec![norm(&code.text)],
        Part::Gridlab(code) => crate::script::split_inputs(&code.text)
            .map(|inputs| inputs.iter().map(|i| norm(&i.text)).collect())
            .unwrap_or_default(),
        Part::Exercise(ex) => {
            let mut v: Vec<String> = ex.starter.iter().map(|s| norm(&s.text)).collect();
            v.push(norm(&super::mutants::without_markers(&ex.solution.text)));
            v.push(":check".into());
            v
        }
    }
}

/// The handout of `lesson` (number `number` of a course) up to and including step `upto`,
/// with the `transcript` of what ran.
pub fn document(lesson: &Lesson, upto: usize, transcript: &[Ran]) -> Document {
    let mut doc = Document::new(format!("Lesson {}: {}", lesson.number, lesson.title()));
    doc.blocks.push(Block::Prose(format!("*{}*", lesson.meta.summary.trim())));
    if !lesson.intro.trim().is_empty() {
        doc.blocks.push(Block::Prose(lesson.intro.clone()));
    }
    // Every part of the steps shown, in order, with the inputs that belong to it.
    let parts: Vec<(usize, &Part)> = lesson
        .steps
        .iter()
        .enumerate()
        .take(upto + 1)
        .flat_map(|(i, step)| step.parts.iter().map(move |p| (i, p)))
        .collect();
    let inputs: Vec<Vec<String>> = parts.iter().map(|(_, p)| inputs_of(p)).collect();
    let runs: Vec<&Ran> = transcript
        .iter()
        .filter(|r| {
            let command = r.input.trim_start().strip_prefix(':').map(|c| c.split_whitespace().next().unwrap_or(""));
            !command.is_some_and(|c| NAVIGATION.contains(&c))
        })
        .collect();
    // Parts shown so far (their headings and prose written), and the step of the last one.
    let mut shown = 0;
    let mut step_shown = None;
    let mut show_up_to = |doc: &mut Document, upto: usize, shown: &mut usize| {
        while *shown <= upto && *shown < parts.len() {
            let (step, part) = parts[*shown];
            if step_shown != Some(step) {
                step_shown = Some(step);
                doc.blocks.push(Block::Heading(2, lesson.steps[step].title.clone()));
            }
            match part {
                Part::Prose(md) => doc.blocks.push(Block::Prose(md.clone())),
                Part::Exercise(ex) => {
                    doc.blocks.push(Block::Label("Exercise".into()));
                    doc.blocks.push(Block::Prose(ex.task.clone()));
                }
                // Code is shown as it ran, below; code that never ran is shown as it is.
                Part::Cuda(_) | Part::Python(_) | Part::Gridlab(_) => {}
            }
            *shown += 1;
        }
    };
    // The part that the input last run belongs to.
    let mut current = 0;
    let mut ran_of_part = vec![false; parts.len()];
    for run in runs {
        let text = run.input.trim();
        // The step it was typed in, when the transcript knows it: an input of the lesson's found
        // there, else (an attempt of the learner's own) the first part of that step.
        let step = run.step.filter(|&s| s <= upto);
        let found = (current..parts.len())
            .find(|&k| inputs[k].iter().any(|i| i == text) && step.is_none_or(|s| parts[k].0 == s));
        let moved = step
            .filter(|&s| parts.get(current).is_some_and(|(at, _)| *at < s))
            .and_then(|s| parts.iter().position(|(at, _)| *at == s));
        if let Some(at) = found.or(moved) {
            // Code of the parts passed over that never ran is still part of the lesson.
            for k in current..at {
                show_up_to(&mut doc, k, &mut shown);
                unran(&mut doc, parts[k].1, ran_of_part[k]);
            }
            current = at;
        }
        show_up_to(&mut doc, current, &mut shown);
        ran_of_part[current] = true;
        if let Some((_, Part::Exercise(ex))) = parts.get(current) {
            let label = if ex.starter.as_ref().is_some_and(|s| s.text.trim() == text) {
                Some("The starter, the wrong version:")
            } else if super::mutants::without_markers(&ex.solution.text).trim() == text {
                Some("A solution:")
            } else if is_cuda(text) {
                Some("An attempt:")
            } else if text == ":check" {
                Some("The check says:")
            } else {
                None
            };
            if let Some(label) = label {
                doc.blocks.push(Block::Label(label.into()));
            }
        }
        doc.ran(without_prompts(run), is_cuda(text));
    }
    for k in current..parts.len() {
        show_up_to(&mut doc, k, &mut shown);
        if k > current || !ran_of_part[k] {
            unran(&mut doc, parts[k].1, ran_of_part[k]);
        }
    }
    doc
}

/// What ran, without the demo's cues to the presenter ("(Enter goes on)"), which mean nothing
/// on paper.
fn without_prompts(run: &Ran) -> Ran {
    const CUE: &str = "(Enter goes on)";
    let clean = |text: &str| -> String {
        let text = text.replace(&format!(" {CUE}"), "");
        let lines: Vec<&str> = text.split_inclusive('\n').filter(|l| !l.contains(CUE)).collect();
        lines.concat()
    };
    Ran { output: clean(&run.output), colored: clean(&run.colored), ..run.clone() }
}

/// A part's code that did not run in the session, shown as the lesson has it.
fn unran(doc: &mut Document, part: &Part, ran: bool) {
    if ran {
        return;
    }
    match part {
        Part::Cuda(code) => doc.blocks.push(Block::Code { lang: "cuda".into(), text: code.text.clone() }),
        Part::Python(code) => doc.blocks.push(Block::Code { lang: "python".into(), text: code.text.clone() }),
        Part::Gridlab(code) => doc.blocks.push(Block::Code { lang: "gridlab".into(), text: code.text.clone() }),
        Part::Prose(_) | Part::Exercise(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture_lesson() -> Lesson {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/course");
        super::super::course::Course::load(&dir).unwrap().lessons.remove(0)
    }

    fn ran(input: &str, output: &str, step: usize) -> Ran {
        Ran { input: input.into(), output: output.into(), colored: output.into(), chapter: None, step: Some(step) }
    }

    #[test]
    fn an_attempt_is_filed_under_the_step_it_was_typed_in() {
        let lesson = fixture_lesson();
        let attempt = "__global__ void twice(float *a, int n) {\n    a[threadIdx.x] *= 2;\n}";
        let transcript = [
            ran("let a = zeros(4)", "", 0),
            ran(attempt, "defined kernel twice(float *a, int n)", 1),
            ran(":check", "✗ not yet", 1),
        ];
        let md = document(&lesson, 1, &transcript).markdown();
        let heading = md.find("## Your turn").unwrap();
        let at = md.find("a[threadIdx.x] *= 2").unwrap();
        assert!(heading < at, "the attempt comes under its exercise:\n{md}");
        assert!(md[heading..].contains("**An attempt:**"), "{md}");
        // Each kernel once: the fixture's `fill`, which never ran, as the lesson has it.
        assert_eq!(md.matches("__global__ void fill").count(), 1, "{md}");
        assert_eq!(md.matches("a[threadIdx.x] *= 2").count(), 1, "{md}");
    }

    #[test]
    fn the_presenters_cues_are_left_out_of_a_handout() {
        let run = Ran {
            input: ":check".into(),
            output: "✗ not yet: ...\n(Enter goes on)\n".into(),
            colored: "\u{1b}[32mSolved! (Enter goes on)\u{1b}[0m\n".into(),
            chapter: None,
            step: None,
        };
        let clean = without_prompts(&run);
        assert_eq!(clean.output, "✗ not yet: ...\n");
        assert_eq!(clean.colored, "\u{1b}[32mSolved!\u{1b}[0m\n");
    }
}
