//! Namespaces of `__device__` code (`namespace mathx { __device__ float sq(float x) ... }`),
//! read by the simulator as the plain code inside them.
//!
//! The simulator keeps one name space: the wrappers `namespace A {` ... `}` (also `A::B`, and
//! anonymous ones) are taken out of the tokens, and a name qualified with a namespace the module
//! declares (`mathx::sq`, `mathx::detail::twice`) is read as its last part. `using namespace
//! mathx;` needs nothing more (the cooperative-groups pass keeps such lines as module items).
//! The items keep their namespaces where the GPU reads them: [`Namespaces::wrap`] puts each
//! item's text back inside its `namespace A { ... }` on the item's first line, so NVRTC's line
//! numbers stay the learner's. Two things the one name space cannot tell apart are refused,
//! naming the construct, and run on the GPU: a name declared in two namespaces of one snippet,
//! and a kernel inside a namespace (a launch names kernels without qualifiers).

use super::cursor::Cursor;
use super::lexer::Token;
use crate::diag::{Diagnostic, Span};

/// The namespaces of one snippet: each body's extent and its path, outermost first.
#[derive(Debug, Default)]
pub struct Namespaces {
    bodies: Vec<(Span, Vec<String>)>,
}

impl Namespaces {
    /// The path of the innermost namespace around `span` (empty outside every namespace).
    fn path_of(&self, span: Span) -> &[String] {
        self.bodies
            .iter()
            .filter(|(b, _)| b.lo <= span.lo && span.hi <= b.hi)
            .max_by_key(|(_, path)| path.len())
            .map_or(&[], |(_, path)| path.as_slice())
    }

    /// `text` of the item at `span`, inside its namespaces as written: `namespace A { namespace
    /// B { text } }` (an anonymous namespace is `namespace {`).
    pub fn wrap(&self, span: Span, text: String) -> String {
        let path = self.path_of(span);
        if path.is_empty() || text.is_empty() {
            return text;
        }
        let open: String = path.iter().map(|n| format!("namespace {n} {{ ")).collect();
        format!("{open}{text}{}", " }".repeat(path.len()))
    }

    /// Refuse what one name space cannot hold: a kernel in a namespace, and one name declared in
    /// two different namespaces of the snippet. `items` are each item's name, span and whether
    /// it is a kernel.
    pub fn check<'a>(&self, items: impl Iterator<Item = (&'a str, Span, bool)>) -> Result<(), Diagnostic> {
        let mut seen: Vec<(&str, &[String])> = Vec::new();
        for (name, span, kernel) in items {
            let path = self.path_of(span);
            if kernel && !path.is_empty() {
                return Err(outside(
                    span,
                    "a kernel inside a namespace",
                    "define the kernel outside the namespace; the functions it calls may stay inside",
                ));
            }
            if let Some((_, other)) = seen.iter().find(|(n, p)| *n == name && *p != path) {
                let show = |p: &[String]| {
                    if p.is_empty() { "the file scope".to_string() } else { format!("namespace `{}`", p.join("::")) }
                };
                return Err(outside(
                    span,
                    "one name in two namespaces",
                    &format!(
                        "`{name}` is declared in {} and in {}: give them different names",
                        show(other),
                        show(path)
                    ),
                ));
            }
            seen.push((name, path));
        }
        Ok(())
    }
}

fn outside(span: Span, what: &str, help: &str) -> Diagnostic {
    Diagnostic::error(format!("{what} is not supported by the simulator"))
        .at(span)
        .label("not supported")
        .help(help.to_string())
        .outside_subset(what.to_string())
}

/// The namespace names declared by earlier items' texts (`namespace A { ...` as [`Namespaces::wrap`]
/// writes it, and as snippets write it).
pub fn declared_in(texts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for text in texts {
        let mut words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '{' || c == ':'));
        while let Some(w) = words.next() {
            if w == "namespace"
                && let Some(name) = words.find(|w| !w.is_empty())
            {
                for part in name.trim_end_matches('{').split("::").filter(|p| !p.is_empty() && *p != "{") {
                    out.push(part.to_string());
                }
            }
        }
    }
    out
}

/// Take the namespace wrappers out of `tokens` and the qualifiers of the module's namespaces
/// off names (`earlier`: the namespaces earlier snippets declared).
pub fn flatten(tokens: Vec<Token>, earlier: &[String]) -> Result<(Vec<Token>, Namespaces), Diagnostic> {
    let opens = |i: usize| {
        tokens[i].is_word("namespace")
            && !(i > 0 && tokens[i - 1].is_word("using"))
            && !matches!(tokens.get(i + 2), Some(t) if t.is_punct("="))
    };
    if !(0..tokens.len()).any(opens) && earlier.is_empty() {
        return Ok((tokens, Namespaces::default()));
    }
    // Every namespace the snippet opens, so that qualifiers naming them come off too.
    let mut known: Vec<String> = earlier.to_vec();
    for i in (0..tokens.len()).filter(|&i| opens(i)) {
        let mut j = i + 1;
        while let Some(w) = tokens.get(j).and_then(Token::word) {
            known.push(w.to_string());
            j += if tokens.get(j + 1).is_some_and(|t| t.is_punct("::")) { 2 } else { 1 };
        }
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut spaces = Namespaces::default();
    // Open namespaces: the index of the `}` that closes the body, the path, where it starts.
    let mut open: Vec<(usize, Vec<String>, Span)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if opens(i) {
            // `namespace A {`, `namespace A::B {`, `namespace {`.
            let mut path = open.last().map(|o| o.1.clone()).unwrap_or_default();
            let mut j = i + 1;
            let mut named = false;
            while let Some(w) = tokens.get(j).and_then(Token::word) {
                path.push(w.to_string());
                named = true;
                j += 1;
                if tokens.get(j).is_some_and(|t| t.is_punct("::")) {
                    j += 1;
                }
            }
            if !named {
                path.push(String::new());
            }
            if !tokens.get(j).is_some_and(|t| t.is_punct("{")) {
                return Err(Diagnostic::error("expected `{` after the namespace's name")
                    .at(t.span)
                    .help("write `namespace name { ... }`"));
            }
            let Some(end) = Cursor::at(&tokens, j).closing("{", "}") else {
                return Err(Diagnostic::error("this namespace is not closed")
                    .at(tokens[j].span)
                    .help("add the `}` that ends the namespace"));
            };
            open.push((end - 1, path, tokens[j].span));
            i = j + 1;
            continue;
        }
        if open.last().is_some_and(|o| o.0 == i) {
            let (_, path, start) = open.pop().expect("checked above");
            spaces.bodies.push((start.to(t.span), path));
            i += 1;
            continue;
        }
        // `A::B::name` with A, B namespaces of the module: the name itself.
        if let Some(w) = t.word()
            && known.iter().any(|k| k == w)
            && tokens.get(i + 1).is_some_and(|t| t.is_punct("::"))
            && !out.last().is_some_and(|p: &Token| p.is_punct("::"))
        {
            let mut j = i;
            while tokens.get(j).and_then(Token::word).is_some_and(|w| known.iter().any(|k| k == w))
                && tokens.get(j + 1).is_some_and(|t| t.is_punct("::"))
                && tokens.get(j + 2).is_some_and(|t| t.word().is_some())
            {
                j += 2;
            }
            if j > i {
                let last = &tokens[j];
                out.push(Token { tok: last.tok.clone(), span: t.span.to(last.span) });
                i = j + 1;
                continue;
            }
        }
        out.push(t.clone());
        i += 1;
    }
    // An anonymous namespace is written back as `namespace {`.
    for (_, path) in &mut spaces.bodies {
        path.retain(|p| !p.is_empty());
    }
    Ok((out, spaces))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::lexer::{self, Tok};

    fn words(tokens: &[Token]) -> String {
        tokens
            .iter()
            .map(|t| match &t.tok {
                Tok::Ident(w) => w.clone(),
                Tok::Punct(p) => p.to_string(),
                _ => "#".into(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn wrappers_and_qualifiers_come_off_and_items_are_wrapped_back() {
        let text = "namespace a { namespace b { int f(); } int g() { return b::f(); } } int h() { return a::b::f() + a::g(); }";
        let toks = lexer::lex(0, text).unwrap();
        let (toks, spaces) = flatten(toks, &[]).unwrap();
        assert_eq!(words(&toks), "int f ( ) ; int g ( ) { return f ( ) ; } int h ( ) { return f ( ) + g ( ) ; }");
        let f = Span::new(0, text.find("int f").unwrap(), text.find("int f").unwrap() + 8);
        assert_eq!(spaces.wrap(f, "int f();".into()), "namespace a { namespace b { int f(); } }");
        let h = Span::new(0, text.find("int h").unwrap(), text.len());
        assert_eq!(spaces.wrap(h, "int h".into()), "int h");
    }

    #[test]
    fn std_and_unknown_qualifiers_stay_and_earlier_namespaces_are_known() {
        let toks = lexer::lex(0, "int x = std::max(1, 2) + m::sq(3);").unwrap();
        let (toks, _) = flatten(toks, &["m".to_string()]).unwrap();
        assert_eq!(words(&toks), "int x = std :: max ( # , # ) + sq ( # ) ;");
        assert_eq!(
            declared_in(&["namespace m { namespace k { int f(); } }", "namespace a::b { }"]),
            ["m", "k", "a", "b"]
        );
    }

    #[test]
    fn an_unclosed_namespace_is_an_error_at_its_brace() {
        let e = flatten(lexer::lex(0, "namespace a { int f();").unwrap(), &[]).unwrap_err();
        assert_eq!((e.message.as_str(), e.span.map(|s| s.lo)), ("this namespace is not closed", Some(12)));
    }

    #[test]
    fn a_kernel_in_a_namespace_and_a_name_in_two_are_refused_naming_the_construct() {
        let text = "namespace a { int f(); } namespace b { int f(); }";
        let (_, spaces) = flatten(lexer::lex(0, text).unwrap(), &[]).unwrap();
        let at = |w: &str, n: usize| {
            let lo = text.match_indices(w).nth(n).unwrap().0;
            Span::new(0, lo, lo + w.len())
        };
        let e = spaces.check([("f", at("int f", 0), false), ("f", at("int f", 1), false)].into_iter()).unwrap_err();
        assert!(e.message.contains("one name in two namespaces"), "{}", e.message);
        let e = spaces.check([("f", at("int f", 0), true)].into_iter()).unwrap_err();
        assert!(e.message.contains("a kernel inside a namespace"), "{}", e.message);
    }
}
