//! reedline's highlighter for the prompt: the line being typed, classified by
//! `script::highlight` with the session's kernel names and the `:` commands, in the colours of
//! `render::Style::token`, or plain when colour is off.

use nu_ansi_term::Style;
use reedline::{Highlighter, StyledText};

use super::{Names, SharedNames};
use crate::script::highlight::{Known, Token, spans};
use crate::session::command;

/// A `:word` that names a command at the prompt.
pub fn is_command(word: &str) -> bool {
    command::find(&crate::lesson::commands(), word).is_some()
}

/// The pieces of `text` with what each is, for the REPL's names.
pub fn classify(text: &str, names: &Names) -> Vec<(Token, std::ops::Range<usize>)> {
    let is_kernel = |w: &str| names.kernels.iter().chain(&names.device_functions).any(|k| k == w);
    spans(text, &Known { is_kernel: &is_kernel, is_command: &is_command })
}

/// reedline's highlighter: [`spans`] with the session's kernel names, in colour or not.
pub struct InputHighlighter {
    names: SharedNames,
    /// Whether to colour, and the colours for the terminal's background.
    style: crate::render::Style,
}

impl InputHighlighter {
    pub fn new(names: SharedNames, style: crate::render::Style) -> InputHighlighter {
        InputHighlighter { names, style }
    }
}

impl Highlighter for InputHighlighter {
    fn highlight(&self, line: &str, _cursor: usize) -> StyledText {
        let mut styled = StyledText::new();
        if !self.style.color {
            styled.push((Style::new(), line.to_string()));
            return styled;
        }
        let names = self.names.lock().map(|n| n.clone()).unwrap_or_default();
        for (kind, r) in classify(line, &names) {
            styled.push((self.style.token(kind), line[r].to_string()));
        }
        styled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-plain pieces, as (kind, text).
    fn marked<'a>(text: &'a str, names: &Names) -> Vec<(Token, &'a str)> {
        let all = classify(text, names);
        let mut end = 0;
        for (_, r) in &all {
            assert_eq!(r.start, end, "spans are contiguous");
            end = r.end;
        }
        assert_eq!(end, text.len(), "spans cover the text");
        all.into_iter().filter(|(k, _)| *k != Token::Plain).map(|(k, r)| (k, &text[r])).collect()
    }

    #[test]
    fn a_kernel_is_highlighted_as_cuda() {
        let text = "__global__ void add(float *a, int n) {\n  // one thread each\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] = 2.5f + \"s\"[0];\n  atomicAdd(&a[0], 1);\n}";
        let got = marked(text, &Names::default());
        use Token::*;
        assert_eq!(
            got,
            vec![
                (Qualifier, "__global__"),
                (Type, "void"),
                (Type, "float"),
                (Type, "int"),
                (Comment, "// one thread each"),
                (Type, "int"),
                (Builtin, "blockIdx"),
                (Builtin, "blockDim"),
                (Builtin, "threadIdx"),
                (Keyword, "if"),
                (Number, "2.5f"),
                (String, "\"s\""),
                (Number, "0"),
                (Builtin, "atomicAdd"),
                (Number, "0"),
                (Number, "1"),
            ]
        );
    }

    #[test]
    fn statements_show_gridlab_words_and_known_kernels() {
        let names = Names { kernels: vec!["add".into()], ..Names::default() };
        use Token::*;
        assert_eq!(
            marked("let a = arange(8, i32)", &names),
            vec![(Keyword, "let"), (Builtin, "arange"), (Number, "8"), (Type, "i32")]
        );
        assert_eq!(
            marked("add<<<(2, 1), 4>>>(a, 8)", &names),
            vec![
                (Kernel, "add"),
                (Launch, "<<<"),
                (Number, "2"),
                (Number, "1"),
                (Number, "4"),
                (Launch, ">>>"),
                (Number, "8")
            ]
        );
        assert_eq!(
            marked("expect sum(a) ~= 1e-3 # why", &names),
            vec![(Keyword, "expect"), (Builtin, "sum"), (Number, "1e-3"), (Comment, "# why")]
        );
    }

    #[test]
    fn commands_are_known_or_unknown() {
        use Token::*;
        assert_eq!(marked(":help launch", &Names::default()), vec![(Command, ":help")]);
        assert_eq!(marked(":hlep", &Names::default()), vec![(UnknownCommand, ":hlep")]);
        assert_eq!(
            marked("#define N 4\n#note", &Names::default()),
            vec![(Preprocessor, "#define N 4"), (Comment, "#note")]
        );
    }

    #[test]
    fn colour_off_means_one_plain_piece() {
        let h = InputHighlighter::new(SharedNames::default(), crate::render::Style::plain());
        let styled = h.highlight("let a = zeros(4)", 0);
        assert_eq!(styled.buffer, vec![(Style::new(), "let a = zeros(4)".to_string())]);
        let h = InputHighlighter::new(
            SharedNames::default(),
            crate::render::Style { color: true, ..crate::render::Style::plain() },
        );
        let styled = h.highlight("let a = zeros(4)", 0);
        assert_eq!(styled.buffer[0], (crate::render::Style::plain().token(Token::Keyword), "let".to_string()));
    }

    #[test]
    fn every_builtin_the_checker_accepts_is_coloured() {
        use crate::script::highlight::{C_KEYWORDS, C_TYPES};
        for name in crate::cuda::check::builtin_names().chain(crate::script::builtins::names()) {
            if C_TYPES.contains(&name) || C_KEYWORDS.contains(&name) {
                continue; // `float(x)`, `int(x)`, `dim3(...)`: the type's colour wins
            }
            assert_eq!(marked(name, &Names::default()), vec![(Token::Builtin, name)], "{name}");
        }
    }
}
