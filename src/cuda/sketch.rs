//! A lightweight reading of CUDA that the front end does not parse (vector types, template
//! argument deduction, ...): where each top-level item starts and ends, what it defines, and each kernel's
//! signature. NVRTC compiles these items; gridlab only needs enough of them to replace a
//! redefined item, to list kernels, and to check a launch's arguments.
//!
//! It is deliberately shallow: tokens, bracket depth, and a few keywords. Anything it cannot
//! read is still handed to NVRTC, whose errors are what the learner sees.

use super::ItemKind;
use super::ast::{Param, Scalar, Type};
use super::cursor::{ALL, Bracket, Cursor, ItemEnd, Lexeme};
use crate::diag::Span;

/// One top-level item of a snippet, as sketched.
#[derive(Clone, Debug, PartialEq)]
pub struct Sketch {
    pub name: String,
    pub kind: ItemKind,
    /// Byte range in the snippet (preprocessor lines other than `#define` are joined to the
    /// item after them).
    pub lo: usize,
    pub hi: usize,
    /// For functions: the name and parameter types (`sq(float)`), so overloads of a GPU-only
    /// function are different items while a redefinition replaces the old one.
    pub overload: String,
    /// For kernels: the signature.
    pub kernel: Option<KernelSig>,
}

/// A `__global__` function's signature, as far as gridlab can pass its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSig {
    pub name: String,
    /// `template <...> __global__`: it needs type arguments, so it cannot be launched by name.
    pub template: bool,
    /// The learner wrote `extern "C"` already.
    pub extern_c: bool,
    pub params: Vec<SigParam>,
}

/// One kernel parameter: its name, its C spelling, and its type when gridlab can pass it.
#[derive(Clone, Debug, PartialEq)]
pub struct SigParam {
    pub name: String,
    /// The type as written, normalised to single spaces: `const float4 *`, `Particle`.
    pub c_type: String,
    /// A scalar or a pointer to a scalar; `None` for anything else (a struct by value, a
    /// pointer to a vector type, a reference).
    pub ty: Option<Type>,
    pub restrict: bool,
    /// Byte range of the parameter in the snippet.
    pub lo: usize,
    pub hi: usize,
}

impl KernelSig {
    /// `k(float4 *a, Particle p, int n)`.
    pub fn render(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                if p.c_type.ends_with(['*', '&']) {
                    format!("{}{}", p.c_type, p.name)
                } else {
                    format!("{} {}", p.c_type, p.name)
                }
            })
            .collect();
        format!("{}({})", self.name, params.join(", "))
    }

    /// The parameters as the session's launch checks see them, when every one can be passed;
    /// otherwise the first that cannot.
    pub fn launch_params(&self, source: u32) -> Result<Vec<Param>, &SigParam> {
        self.params
            .iter()
            .map(|p| match &p.ty {
                Some(ty) => Ok(Param {
                    name: p.name.clone(),
                    ty: ty.clone(),
                    restrict: p.restrict,
                    by_ref: false,
                    default: None,
                    span: Span::new(source, p.lo, p.hi),
                }),
                None => Err(p),
            })
            .collect()
    }
}

#[derive(Clone, Debug, PartialEq)]
enum T {
    Word(String),
    Punct(&'static str),
    /// A string or character literal.
    Lit,
    /// A preprocessor line, with its directive word (`define`, `include`, ...) and for
    /// `#define` the macro's name.
    Directive {
        word: String,
        name: Option<String>,
    },
}

#[derive(Clone, Debug)]
struct Tok {
    t: T,
    lo: usize,
    hi: usize,
}

const PUNCTS: &[&str] = &[
    "::", "->", "...", "<<=", ">>=", "<<", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "{", "}", "(", ")", "[", "]", "<", ">", ";", ",", "*", "&", "=", "+", "-", "/", "%", "!",
    "~", "^", "|", "?", ":", ".", "#",
];

fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            continue;
        }
        let lo = i;
        if c == b'#' && line_start {
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                i += 1;
            }
            let mut words =
                text[lo + 1..i].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
            let word = words.next().unwrap_or("").to_string();
            let name = if word == "define" { words.next().map(str::to_string) } else { None };
            out.push(Tok { t: T::Directive { word, name }, lo, hi: i });
            continue;
        }
        line_start = false;
        if c.is_ascii_alphanumeric() || c == b'_' {
            // Words and numbers alike (a number's `.` and exponent sign are punctuation here,
            // which is harmless: only brackets and a few words matter).
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok { t: T::Word(text[lo..i].to_string()), lo, hi: i });
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Tok { t: T::Lit, lo, hi: i });
            continue;
        }
        match PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            Some(p) => {
                i += p.len();
                out.push(Tok { t: T::Punct(p), lo, hi: i });
            }
            None => {
                // Any other character (`@`, `$`, non-ASCII): skip it whole; NVRTC will say.
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

impl Lexeme for Tok {
    fn is_punct(&self, p: &str) -> bool {
        is_p(self, p)
    }

    fn word(&self) -> Option<&str> {
        word(self)
    }

    fn first_of_shift(&self) -> Self {
        // The sketch reads `>>` as two `>` already; this is for the cursor's sake.
        Tok { t: T::Punct(">"), lo: self.lo, hi: (self.lo + 1).min(self.hi) }
    }
}

fn is_p(t: &Tok, p: &str) -> bool {
    matches!(&t.t, T::Punct(q) if *q == p)
}

fn word(t: &Tok) -> Option<&str> {
    match &t.t {
        T::Word(w) => Some(w),
        _ => None,
    }
}

/// Words that decorate a declaration without naming anything, some with a `(...)` after them.
const ATTRIBUTES: &[&str] =
    &["__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec", "__cluster_dims__"];

/// Split a snippet into its top-level items and sketch each one.
pub fn sketch(text: &str) -> Vec<Sketch> {
    let toks = tokens(text);
    let mut items = Vec::new();
    let mut pending_lo: Option<usize> = None;
    let mut i = 0;
    while i < toks.len() {
        if let T::Directive { word, name } = &toks[i].t {
            if word == "define"
                && let Some(name) = name
            {
                items.push(Sketch {
                    name: name.clone(),
                    kind: ItemKind::Define,
                    lo: toks[i].lo,
                    hi: toks[i].hi,
                    overload: String::new(),
                    kernel: None,
                });
            } else {
                // `#include`, `#pragma`, ...: kept with the item that follows.
                pending_lo.get_or_insert(toks[i].lo);
            }
            i += 1;
            continue;
        }
        if is_p(&toks[i], ";") {
            i += 1;
            continue;
        }
        let start = i;
        let end = item_end(&toks, start);
        let item = &toks[start..end];
        let lo = pending_lo.take().unwrap_or(toks[start].lo);
        let hi = item.last().map_or(toks[start].hi, |t| t.hi);
        items.push(describe(item, lo, hi));
        i = end;
    }
    if let Some(lo) = pending_lo {
        // Only directives after the last item: they belong to it, or stand alone.
        match items.last_mut() {
            Some(last) if last.kind != ItemKind::Define => last.hi = text.trim_end().len().max(last.hi),
            _ => {
                let hi = text.trim_end().len();
                let line = text[lo..hi].trim().to_string();
                items.push(Sketch {
                    name: line,
                    kind: ItemKind::Define,
                    lo,
                    hi,
                    overload: String::new(),
                    kernel: None,
                });
            }
        }
    }
    items
}

/// The index just past the item starting at `start`: its `;` at depth 0, or the `}` that closes
/// a function's (or namespace's) body; a preprocessor line at depth 0 ends it before itself.
fn item_end(toks: &[Tok], start: usize) -> usize {
    let here = Cursor::at(toks, start);
    let block_item = here.is_word("namespace") || (here.is_word("extern") && here.is_at(2, "{"));
    // A function's head has its parameters' `(` before the body (an attribute's is not it).
    let body_ends = |head: &[Tok]| {
        block_item
            || Cursor::at(head, 0)
                .walk(ALL)
                .any(|s| s.depth == 0 && s.bracket == Bracket::Open && is_p(s.tok, "(") && !after_attribute(head, s.at))
    };
    match here.item_end(body_ends, |t| matches!(t.t, T::Directive { .. })) {
        ItemEnd::Declaration(end) | ItemEnd::Body(end) | ItemEnd::Stopped(end) => end,
        ItemEnd::Unfinished { .. } => toks.len(),
    }
}

/// Whether the `(` at `i` opens an attribute's arguments (`__launch_bounds__(256)`).
fn after_attribute(toks: &[Tok], i: usize) -> bool {
    i > 0 && word(&toks[i - 1]).is_some_and(|w| ATTRIBUTES.contains(&w))
}

/// What one item defines.
fn describe(item: &[Tok], lo: usize, hi: usize) -> Sketch {
    let mut s = Sketch { name: String::new(), kind: ItemKind::Global, lo, hi, overload: String::new(), kernel: None };
    // Skip `template <...>` (and `extern "C"`), remembering them.
    let mut i = 0;
    let mut template = false;
    let mut extern_c = false;
    loop {
        match item.get(i).and_then(word) {
            Some("template") => {
                template = true;
                i = skip_angles(item, i + 1);
            }
            Some("extern") if item.get(i + 1).is_some_and(|t| t.t == T::Lit) => {
                extern_c = true;
                i += 2;
            }
            _ => break,
        }
    }
    let rest = &item[i..];
    let first_word = rest.first().and_then(word).unwrap_or("");
    // The first `(` at depth 0 that is not an attribute's, and the first `{`, `=`.
    let mut paren = None;
    let mut brace = None;
    let mut assign = None;
    for step in Cursor::at(rest, 0).walk(ALL).filter(|s| s.depth == 0) {
        let k = step.at;
        match &step.tok.t {
            T::Punct("(") if paren.is_none() && brace.is_none() && !after_attribute(rest, k) => paren = Some(k),
            T::Punct("{") if brace.is_none() => brace = Some(k),
            T::Punct("=") if assign.is_none() => assign = Some(k),
            _ => {}
        }
    }
    let words_before = |end: usize| rest[..end].iter().filter_map(word).collect::<Vec<_>>();
    match first_word {
        "typedef" => {
            s.kind = ItemKind::Typedef;
            s.name = last_name(rest).unwrap_or_default();
            return s;
        }
        "using" => {
            s.kind = ItemKind::Typedef;
            s.name = rest.get(1).and_then(word).unwrap_or("using").to_string();
            if s.name == "namespace" {
                s.name = format!("using namespace {}", rest.get(2).and_then(word).unwrap_or(""));
            }
            return s;
        }
        "namespace" => {
            s.kind = ItemKind::Typedef;
            s.name = format!("namespace {}", rest.get(1).and_then(word).unwrap_or(""));
            return s;
        }
        _ => {}
    }
    let aggregate = ["struct", "class", "union", "enum"];
    let is_aggregate = paren.is_none_or(|p| brace.is_some_and(|b| b < p))
        && rest.iter().take(brace.unwrap_or(rest.len())).filter_map(word).any(|w| aggregate.contains(&w));
    if is_aggregate && assign.is_none_or(|a| brace.is_some_and(|b| b < a)) {
        s.kind = ItemKind::Typedef;
        let mut k = rest.iter().position(|t| word(t).is_some_and(|w| aggregate.contains(&w))).unwrap_or(0) + 1;
        // `enum class`, and attributes between the keyword and the name.
        loop {
            match rest.get(k).and_then(word) {
                Some("class" | "struct") => k += 1,
                Some(w) if ATTRIBUTES.contains(&w) => k = skip_parens(rest, k + 1),
                _ => break,
            }
        }
        s.name = rest.get(k).and_then(word).unwrap_or("").to_string();
        // `template <> struct SharedMemory<double>`: a specialisation is an item of its own,
        // beside the template it specialises.
        if Cursor::at(rest, k).is_at(1, "<") {
            let end = skip_angles(rest, k + 1);
            let mut args = String::new();
            for t in &rest[k + 1..end] {
                match &t.t {
                    T::Word(w) => {
                        if args.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                            args.push(' ');
                        }
                        args.push_str(w);
                    }
                    T::Punct(p) => args.push_str(p),
                    _ => args.push('?'),
                }
            }
            s.name.push_str(&args);
        }
        return s;
    }
    match paren {
        Some(p) if assign.is_none_or(|a| p < a) => {
            let words = words_before(p);
            s.kind = if words.contains(&"__global__") { ItemKind::Kernel } else { ItemKind::DeviceFunction };
            s.name = function_name(&rest[..p]);
            let close = skip_parens(rest, p);
            let params = split_params(&rest[p + 1..close.saturating_sub(1).max(p + 1)]);
            let types: Vec<String> = params.iter().map(|p| param(p).c_type).collect();
            s.overload = format!("{}({})", s.name, types.join(", "));
            if s.kind == ItemKind::Kernel {
                let params = params.iter().map(|p| param(p)).filter(|p| !(p.c_type == "void" && p.name.is_empty()));
                s.kernel = Some(KernelSig { name: s.name.clone(), template, extern_c, params: params.collect() });
            }
        }
        _ => {
            s.kind = ItemKind::Global;
            let end = [assign, brace, rest.iter().position(|t| is_p(t, "[") || is_p(t, ";"))]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(rest.len());
            s.name = rest[..end].iter().rev().find_map(word).unwrap_or("").to_string();
        }
    }
    s
}

/// The index past the `<...>` starting at `i` (if there is one; the end when it never closes).
fn skip_angles(toks: &[Tok], i: usize) -> usize {
    let here = Cursor::at(toks, i);
    if !here.is("<") {
        return i;
    }
    Cursor::at(toks, i + 1).template_args().map_or(toks.len(), |(_, past)| past)
}

/// The index past the `(...)` starting at `i` (if there is one; the end when it never closes).
fn skip_parens(toks: &[Tok], i: usize) -> usize {
    let here = Cursor::at(toks, i);
    if !here.is("(") {
        return i;
    }
    here.closing("(", ")").unwrap_or(toks.len())
}

/// A function's name from the tokens before its `(`: the last word, or `operator+` and friends.
fn function_name(before: &[Tok]) -> String {
    if let Some(k) = before.iter().rposition(|t| word(t) == Some("operator")) {
        let op: String = before[k + 1..]
            .iter()
            .map(|t| match &t.t {
                T::Punct(p) => p.to_string(),
                T::Word(w) => format!(" {w}"),
                _ => String::new(),
            })
            .collect();
        return format!("operator{op}");
    }
    // `Vec<T>::norm`: the last word outside angle brackets.
    before.iter().rev().find_map(word).unwrap_or("").to_string()
}

/// The last word at depth 0 (a typedef's new name).
fn last_name(toks: &[Tok]) -> Option<String> {
    Cursor::at(toks, 0).walk(ALL).filter(|s| s.depth == 0).filter_map(|s| word(s.tok)).last().map(str::to_string)
}

/// Parameters split at commas outside brackets (angle brackets too: `Vec<float, 4> v`).
fn split_params(toks: &[Tok]) -> Vec<&[Tok]> {
    if toks.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (mut angles, mut from) = (0i32, 0);
    for step in Cursor::at(toks, 0).walk(ALL) {
        let k = step.at;
        match &step.tok.t {
            T::Punct("<") => angles += 1,
            T::Punct(">") => angles -= 1,
            T::Punct(",") if step.depth == 0 && angles <= 0 => {
                out.push(&toks[from..k]);
                from = k + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[from..]);
    out
}

/// Words that qualify a parameter without changing what gridlab passes.
const QUALIFIERS: &[&str] =
    &["const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct"];

/// Words that make up C's arithmetic type names.
const TYPE_WORDS: &[&str] = &["void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double"];

/// Read one parameter: `const float *__restrict__ a`, `float4 *v`, `Particle p`, `int n = 4`.
fn param(toks: &[Tok]) -> SigParam {
    let toks = match toks.iter().position(|t| is_p(t, "=")) {
        Some(k) => &toks[..k],
        None => toks,
    };
    let lo = toks.first().map_or(0, |t| t.lo);
    let hi = toks.last().map_or(0, |t| t.hi);
    // The name is the last word, unless that word is part of the type (`float *`, `int`).
    let mut body: Vec<&Tok> = toks.iter().collect();
    let mut array = false;
    while body.last().is_some_and(|t| is_p(t, "]")) {
        // `float a[]` or `float a[16]`: a pointer, as C reads a parameter.
        let open = body.iter().rposition(|t| is_p(t, "[")).unwrap_or(0);
        body.truncate(open);
        array = true;
    }
    let named = body.len() >= 2
        && body.last().and_then(|t| word(t)).is_some_and(|w| !TYPE_WORDS.contains(&w) && !QUALIFIERS.contains(&w));
    let name = if named { body.pop().and_then(|t| word(t)).unwrap_or("").to_string() } else { String::new() };
    let mut c_type = String::new();
    for t in &body {
        let piece = match &t.t {
            T::Word(w) => w.clone(),
            T::Punct(p) => p.to_string(),
            _ => String::new(),
        };
        let space = !c_type.is_empty()
            && match &t.t {
                T::Punct("*" | "&") => !c_type.ends_with(['*', '&']),
                T::Punct("::" | "<" | ">" | ",") => false,
                _ => !c_type.ends_with("::") && !c_type.ends_with('<'),
            };
        if space {
            c_type.push(' ');
        }
        c_type.push_str(&piece);
    }
    if array {
        c_type.push_str(if c_type.ends_with('*') { "*" } else { " *" });
    }
    let restrict = body.iter().any(|t| matches!(word(t), Some("__restrict__" | "__restrict" | "restrict")));
    SigParam { name, ty: param_type(&body, array), c_type, restrict, lo, hi }
}

/// A scalar or one pointer to a scalar, from a parameter's type tokens.
fn param_type(body: &[&Tok], array: bool) -> Option<Type> {
    let mut stars = usize::from(array);
    let mut pointee_const = false;
    let mut seen_star = false;
    let mut words = Vec::new();
    for t in body {
        match &t.t {
            T::Punct("*") => {
                stars += 1;
                seen_star = true;
            }
            T::Word(w) if w == "const" => pointee_const |= !seen_star,
            T::Word(w) if QUALIFIERS.contains(&w.as_str()) => {}
            T::Word(w) => words.push(w.as_str()),
            _ => return None,
        }
    }
    let scalar = scalar_of(&words)?;
    match stars {
        0 => Some(Type::Scalar(scalar)),
        1 => Some(Type::Ptr { pointee: Box::new(Type::Scalar(scalar)), is_const: pointee_const }),
        _ => None,
    }
}

/// The arithmetic type a list of type words names, if gridlab can pass it.
fn scalar_of(words: &[&str]) -> Option<Scalar> {
    let fixed = match words {
        [w] => match *w {
            "int8_t" => Some(Scalar::I8),
            "uint8_t" => Some(Scalar::U8),
            "int16_t" => Some(Scalar::I16),
            "uint16_t" => Some(Scalar::U16),
            "int32_t" => Some(Scalar::I32),
            "uint32_t" => Some(Scalar::U32),
            "int64_t" | "ptrdiff_t" => Some(Scalar::I64),
            "uint64_t" | "size_t" => Some(Scalar::U64),
            _ => None,
        },
        _ => None,
    };
    if fixed.is_some() {
        return fixed;
    }
    if words.iter().any(|w| !TYPE_WORDS.contains(w)) {
        return None;
    }
    // `short int` is `short`.
    let short = words.contains(&"short");
    let bases: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !(matches!(*w, "signed" | "unsigned" | "long") || (short && *w == "int")))
        .collect();
    if bases.len() > 1 {
        return None;
    }
    let longs = words.iter().filter(|w| **w == "long").count() as u32;
    // `void` names no value to pass: the outer `Some(None)` becomes `None` here too.
    Scalar::from_words(bases.first().copied(), words.contains(&"signed"), words.contains(&"unsigned"), longs).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Sketch {
        let items = sketch(text);
        assert_eq!(items.len(), 1, "{items:#?}");
        items.into_iter().next().unwrap()
    }

    fn kernel(text: &str) -> KernelSig {
        one(text).kernel.expect("a kernel")
    }

    #[test]
    fn items_are_split_and_named() {
        let text = "#define N 4\n#include <cuda_fp16.h>\nstruct P { float x, y; };\n\
                    template <typename T> __device__ T sq(T x) { return x * x; }\n\
                    __device__ float4 operator+(float4 a, float4 b) { return make_float4(a.x + b.x, 0, 0, 0); }\n\
                    typedef struct { int a; } Pair;\n__constant__ float4 coeffs[4] = {};\n\
                    __global__ void k(float *a) { if (a) { a[0] = sq(1.0f); } }\n";
        let items = sketch(text);
        let got: Vec<(&str, ItemKind)> = items.iter().map(|i| (i.name.as_str(), i.kind.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("N", ItemKind::Define),
                ("P", ItemKind::Typedef),
                ("sq", ItemKind::DeviceFunction),
                ("operator+", ItemKind::DeviceFunction),
                ("Pair", ItemKind::Typedef),
                ("coeffs", ItemKind::Global),
                ("k", ItemKind::Kernel),
            ]
        );
        // The `#include` stays with the struct after it.
        assert!(text[items[1].lo..items[1].hi].starts_with("#include <cuda_fp16.h>\nstruct P"));
        assert!(text[items[1].lo..items[1].hi].ends_with("};"));
        assert!(text[items[6].lo..items[6].hi].ends_with("} }"));
        assert_eq!(items[3].overload, "operator+(float4, float4)");
        assert_eq!(items[2].overload, "sq(T)");
    }

    #[test]
    fn kernel_parameters_of_every_scalar_type() {
        let k = kernel(
            "__global__ void k(const float *__restrict__ a, double *b, int n, unsigned m, long long big, \
             unsigned long long u, size_t s, const int c, char ch, unsigned int *ui, float arr[])",
        );
        assert_eq!(k.name, "k");
        assert!(!k.template);
        let ptr = |s, is_const| Some(Type::Ptr { pointee: Box::new(Type::Scalar(s)), is_const });
        let tys: Vec<_> = k.params.iter().map(|p| (p.name.as_str(), p.ty.clone())).collect();
        assert_eq!(
            tys,
            vec![
                ("a", ptr(Scalar::F32, true)),
                ("b", ptr(Scalar::F64, false)),
                ("n", Some(Type::Scalar(Scalar::I32))),
                ("m", Some(Type::Scalar(Scalar::U32))),
                ("big", Some(Type::Scalar(Scalar::I64))),
                ("u", Some(Type::Scalar(Scalar::U64))),
                ("s", Some(Type::Scalar(Scalar::U64))),
                ("c", Some(Type::Scalar(Scalar::I32))),
                ("ch", Some(Type::Scalar(Scalar::I8))),
                ("ui", ptr(Scalar::U32, false)),
                ("arr", ptr(Scalar::F32, false)),
            ]
        );
        assert!(k.params[0].restrict);
        assert_eq!(k.params[0].c_type, "const float * __restrict__");
        assert_eq!(k.params[1].c_type, "double *");
    }

    #[test]
    fn parameters_gridlab_cannot_pass_are_kept_with_their_spelling() {
        // `short` can be passed: it is there to show that it is.
        let k = kernel("__global__ void k(float4 *v, Particle p, float **pp, const Vec<float, 3> &r, short s, int n)");
        let got: Vec<(&str, &str, bool)> =
            k.params.iter().map(|p| (p.name.as_str(), p.c_type.as_str(), p.ty.is_some())).collect();
        assert_eq!(
            got,
            vec![
                ("v", "float4 *", false),
                ("p", "Particle", false),
                ("pp", "float **", false),
                ("r", "const Vec<float, 3> &", false),
                ("s", "short", true),
                ("n", "int", true),
            ]
        );
        assert_eq!(k.launch_params(0).unwrap_err().name, "v");
        assert_eq!(k.render(), "k(float4 *v, Particle p, float **pp, const Vec<float, 3> &r, short s, int n)");
    }

    #[test]
    fn templates_attributes_and_extern_c() {
        let k = kernel("template <typename T, int N> __global__ void scale(T *a, T s) { a[0] *= s; }");
        assert!(k.template);
        assert_eq!(k.name, "scale");
        let k = kernel("__global__ void __launch_bounds__(256, 2) fast(float *a) {}");
        assert_eq!(k.name, "fast");
        assert_eq!(k.params.len(), 1);
        let k = kernel("extern \"C\" __global__ void c(int *a) {}");
        assert!(k.extern_c);
        assert!(kernel("__global__ void none(void) {}").params.is_empty());
        assert!(kernel("__global__ void none() {}").params.is_empty());
    }

    proptest::proptest! {
        /// Whatever the learner types, the sketch does not panic and its ranges are slices of
        /// the text, in order.
        #[test]
        fn any_text_is_sketched_into_ordered_slices(text in "[ -~\n\u{e9}\u{3bb}]{0,200}") {
            let items = sketch(&text);
            let mut end = 0;
            for i in &items {
                proptest::prop_assert!(end <= i.lo && i.lo <= i.hi && i.hi <= text.len(), "{items:?}");
                proptest::prop_assert!(text.is_char_boundary(i.lo) && text.is_char_boundary(i.hi));
                end = i.hi;
            }
        }
    }

    #[test]
    fn comments_strings_and_unfinished_code() {
        let items = sketch("// struct Nope {\n__global__ void k(int *a) { printf(\"}\"); /* } */ }\n__device__ int f(");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].name, "k");
        assert_eq!(items[1].name, "f");
        assert!(sketch("").is_empty());
    }
}
