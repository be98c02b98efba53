//! Tab completion: `:` commands (read from their definitions, `lesson::commands()`, so new rows
//! complete without changes here), a command's argument by its kind ([`command::Args`]: the
//! words of a choice such as `:schedule`'s, paths, lessons, command names), and in statements
//! and kernels the session's kernels, buffers and scalars, dtypes, gridlab functions and CUDA
//! words.

use std::path::Path;

use reedline::{Completer, Span, Suggestion};

use super::{Names, SharedNames};
use crate::dtype::DType;
use crate::script::highlight::{C_KEYWORDS, C_TYPES, GRIDLAB_KEYWORDS, QUALIFIERS};
use crate::script::input::{InputKind, classify};
use crate::session::command::{self, Args};

/// One completion: the text that replaces `start..end` of the input, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub start: usize,
    pub end: usize,
    pub description: Option<String>,
    /// Add a space after it (not after a folder, where the next name follows).
    pub space: bool,
}

/// The completions for `line` with the cursor at byte `pos`.
pub fn complete(line: &str, pos: usize, names: &Names) -> Vec<Candidate> {
    // A cursor inside a character (never from reedline, but cheap to be sure of) completes
    // from the character's start.
    let pos = (0..=pos.min(line.len())).rev().find(|&p| line.is_char_boundary(p)).unwrap_or(0);
    let before = &line[..pos];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let current = &before[line_start..];
    let indent = current.len() - current.trim_start().len();
    let trimmed = current.trim_start();
    if let Some(after_colon) = trimmed.strip_prefix(':') {
        let start = line_start + indent;
        return match after_colon.find(char::is_whitespace) {
            None => commands(after_colon, start, pos),
            Some(n) => {
                let args = after_colon[n..].trim_start();
                let args_start = pos - args.len();
                command_args(&after_colon[..n], args, args_start, pos, names)
            }
        };
    }
    let word_len = current.len() - current.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').len();
    let word = &current[current.len() - word_len..];
    let start = pos - word_len;
    let cuda = line.lines().find_map(classify) == Some(InputKind::Cuda);
    if word.is_empty() {
        // Right after `(` or `,` of a launch, offer the buffers and scalars to pass.
        let prev = current.trim_end().chars().last();
        if cuda || !matches!(prev, Some('(' | ',')) {
            return Vec::new();
        }
        let mut out = Vec::new();
        add(&mut out, "", start, pos, names.buffers.iter().map(String::as_str), "buffer");
        add(&mut out, "", start, pos, names.scalars.iter().map(String::as_str), "scalar");
        return out;
    }
    let mut out = Vec::new();
    if cuda {
        add(&mut out, word, start, pos, QUALIFIERS.iter().copied(), "qualifier");
        add(&mut out, word, start, pos, C_TYPES.iter().copied(), "type");
        add(&mut out, word, start, pos, C_KEYWORDS.iter().copied(), "keyword");
        add(&mut out, word, start, pos, crate::cuda::check::builtin_names(), "built-in");
        add(&mut out, word, start, pos, names.device_functions.iter().map(String::as_str), "device function");
        add(&mut out, word, start, pos, names.kernels.iter().map(String::as_str), "kernel");
    } else {
        add(&mut out, word, start, pos, names.kernels.iter().map(String::as_str), "kernel");
        add(&mut out, word, start, pos, names.buffers.iter().map(String::as_str), "buffer");
        add(&mut out, word, start, pos, names.scalars.iter().map(String::as_str), "scalar");
        add(&mut out, word, start, pos, DType::ALL.iter().map(|d| d.name()), "dtype");
        // Statement functions say what they do (from the same table `:help functions` lists).
        let mut functions: Vec<_> = crate::script::builtins::BUILTINS
            .iter()
            .filter(|b| b.name.starts_with(word) && out.iter().all(|c| c.value != b.name))
            .collect();
        functions.sort_unstable_by_key(|b| b.name);
        for b in functions {
            let description = Some(format!("{}: {}", b.synopsis, b.summary));
            out.push(Candidate { value: b.name.to_string(), start, end: pos, description, space: false });
        }
        add(&mut out, word, start, pos, GRIDLAB_KEYWORDS.iter().copied(), "keyword");
        // The first word may start a kernel: `__gl` + Tab.
        if line[..start].trim().is_empty() {
            add(&mut out, word, start, pos, QUALIFIERS.iter().copied(), "qualifier");
        }
    }
    out
}

/// Candidates starting with `prefix`, skipping names already offered (a kernel may also be a
/// built-in's name, `min` is both a CUDA and a gridlab function).
fn add<'a>(
    out: &mut Vec<Candidate>,
    prefix: &str,
    start: usize,
    end: usize,
    words: impl Iterator<Item = &'a str>,
    what: &str,
) {
    let mut found: Vec<&str> = words.filter(|w| w.starts_with(prefix) && out.iter().all(|c| c.value != *w)).collect();
    found.sort_unstable();
    found.dedup();
    out.extend(found.into_iter().map(|w| Candidate {
        value: w.to_string(),
        start,
        end,
        description: Some(what.to_string()),
        space: false,
    }));
}

fn commands(prefix: &str, start: usize, end: usize) -> Vec<Candidate> {
    command::entries(&crate::lesson::commands())
        .into_iter()
        .filter(|c| c.name.starts_with(prefix))
        .map(|c| Candidate {
            value: format!(":{}", c.name),
            start,
            end,
            description: Some(c.summary.to_string()),
            space: true,
        })
        .collect()
}

/// What the command `name` takes, by its kind, for `args` typed so far.
fn command_args(name: &str, args: &str, start: usize, end: usize, names: &Names) -> Vec<Candidate> {
    let all = crate::lesson::commands();
    let Some(spec) = command::find(&all, name) else { return Vec::new() };
    let word = |value: &str| Candidate { value: value.to_string(), start, end, description: None, space: false };
    match spec.args {
        Args::Path(_) => paths(args, start, end),
        // By id, or by the slug or number typed so far.
        Args::Lesson => names
            .lessons
            .iter()
            .filter(|(id, _)| {
                id.starts_with(args) || id.split_once('-').is_some_and(|(_, slug)| slug.starts_with(args))
            })
            .map(|(id, title)| Candidate {
                value: id.clone(),
                start,
                end,
                description: Some(title.clone()),
                space: false,
            })
            .collect(),
        Args::Command => {
            command::entries(&all).into_iter().filter(|c| c.name.starts_with(args)).map(|c| word(c.name)).collect()
        }
        Args::Choice { words, .. } => words.iter().filter(|w| w.starts_with(args)).map(|w| word(w)).collect(),
        Args::None | Args::Text(_) => Vec::new(),
    }
}

/// Files and folders whose path starts with `typed` (relative to the current folder, or
/// absolute, or under `~/`). Hidden entries only when the typed name starts with a dot.
pub fn paths(typed: &str, start: usize, end: usize) -> Vec<Candidate> {
    let (folder, file) = match typed.rfind('/') {
        Some(n) => (&typed[..=n], &typed[n + 1..]),
        None => ("", typed),
    };
    let dir = if folder.is_empty() {
        Path::new(".").to_path_buf()
    } else if let Some(rest) = folder.strip_prefix("~/") {
        match dirs::home_dir() {
            Some(home) => home.join(rest),
            None => return Vec::new(),
        }
    } else {
        Path::new(folder).to_path_buf()
    };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(file) || (name.starts_with('.') && !file.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().ok()?.is_dir() || e.path().is_dir();
            Some((name, is_dir))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(name, is_dir)| Candidate {
            value: format!("{folder}{name}{}", if is_dir { "/" } else { "" }),
            start,
            end,
            description: None,
            space: !is_dir,
        })
        .collect()
}

/// reedline's completer over a snapshot of the session's names.
pub struct InputCompleter {
    names: SharedNames,
}

impl InputCompleter {
    pub fn new(names: SharedNames) -> InputCompleter {
        InputCompleter { names }
    }
}

impl Completer for InputCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let names = self.names.lock().map(|n| n.clone()).unwrap_or_default();
        complete(line, pos, &names)
            .into_iter()
            .map(|c| Suggestion {
                value: c.value,
                description: c.description,
                span: Span::new(c.start, c.end),
                append_whitespace: c.space,
                ..Suggestion::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(line: &str, names: &Names) -> Vec<String> {
        complete(line, line.len(), names).into_iter().map(|c| c.value).collect()
    }

    fn names() -> Names {
        Names {
            kernels: vec!["add".into(), "scale".into()],
            device_functions: vec!["square".into()],
            buffers: vec!["a".into(), "out".into(), "sums".into()],
            scalars: vec!["n".into()],
            lessons: vec![
                ("01-first-kernel".into(), "Your first kernel".into()),
                ("02-race".into(), "The race".into()),
            ],
        }
    }

    #[test]
    fn lesson_ids_complete_by_number_or_slug() {
        assert_eq!(values(":lesson 0", &names()), vec!["01-first-kernel", "02-race"]);
        assert_eq!(values(":lesson ra", &names()), vec!["02-race"]);
        assert_eq!(values(":lesson 01", &names()), vec!["01-first-kernel"]);
    }

    #[test]
    fn commands_complete_from_the_table() {
        assert_eq!(values(":he", &names()), vec![":help"]);
        assert_eq!(values(":s", &names()), vec![":seed", ":schedule", ":step", ":solution", ":save"]);
        let all = values(":", &names());
        assert_eq!(all.len(), command::entries(&crate::lesson::commands()).len());
        // An alias completes after its command, with its own summary.
        assert_eq!(values(":q", &names()), vec![":quit", ":q"]);
        let c = &complete("  :ke", 5, &names())[0];
        assert_eq!((c.start, c.end, c.value.as_str()), (2, 5, ":kernels"));
    }

    #[test]
    fn command_arguments_complete_from_the_synopsis() {
        assert_eq!(values(":schedule lo", &names()), vec!["lockstep"]);
        assert_eq!(values(":backend ", &names()), vec!["sim", "gpu", "auto"]);
        assert_eq!(values(":help sa", &names()), vec!["save"]);
        assert!(values(":seed ", &names()).is_empty());
        assert_eq!(values(":max-steps ", &names()), vec!["default"]);
        assert_eq!(values(":max", &names()), vec![":max-steps"]);
    }

    #[test]
    fn statements_complete_names_dtypes_and_functions() {
        assert_eq!(values("let b = copy(s", &names()), vec!["scale", "sums", "sizeof", "sqrt", "sum"]);
        assert_eq!(values("let b = zeros(4, i", &names()), vec!["i16", "i32", "i64", "i8", "int"]);
        assert_eq!(values("ad", &names()), vec!["add"]);
        assert_eq!(values("add<<<1, 4>>>(", &names()), vec!["a", "out", "sums", "n"]);
        assert!(values("let x = ", &names()).is_empty());
        let c = &complete("expect su", 9, &names())[0];
        assert_eq!((c.start, c.value.as_str(), c.description.as_deref()), (7, "sums", Some("buffer")));
    }

    #[test]
    fn kernels_complete_cuda_words() {
        let v = values("__global__ void k(float *a) {\n  int i = threadIdx.x + blockD", &names());
        assert_eq!(v, vec!["blockDim"]);
        assert_eq!(values("__gl", &names()), vec!["__global__"]);
        assert_eq!(values("__device__ float f(float x) { return squ", &names()), vec!["square"]);
        assert_eq!(values("__global__ void k(unsig", &names()), vec!["unsigned"]);
    }

    #[test]
    fn load_and_save_complete_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("race.gridlab"), "").unwrap();
        std::fs::write(dir.path().join("reduce.gridlab"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        std::fs::create_dir(dir.path().join("rows")).unwrap();
        let base = format!("{}/", dir.path().display());
        let line = format!(":load {base}r");
        let got = complete(&line, line.len(), &names());
        let values: Vec<_> = got.iter().map(|c| c.value.strip_prefix(&base).unwrap()).collect();
        assert_eq!(values, vec!["race.gridlab", "reduce.gridlab", "rows/"]);
        assert_eq!(got[0].start, ":load ".len());
        assert!(got[0].space && !got[2].space);
        let line = format!(":save {base}");
        assert_eq!(complete(&line, line.len(), &names()).len(), 3, "hidden files are left out");
        let line = format!(":save {base}.h");
        assert_eq!(complete(&line, line.len(), &names()).len(), 1);
    }

    #[test]
    fn math_intrinsics_and_statement_functions_complete_from_their_tables() {
        let cuda = "__global__ void k(float *a) { a[0] = __ex";
        assert!(values(cuda, &names()).contains(&"__expf".to_string()));
        let cuda = "__global__ void k(float *a) { a[0] = sinh";
        assert_eq!(values(cuda, &names()), vec!["sinhf"]);
        let c = complete("let b = linsp", 13, &names());
        assert_eq!(c[0].value, "linspace");
        assert!(c[0].description.as_deref().unwrap().contains("evenly spaced"), "{:?}", c[0].description);
    }
}
