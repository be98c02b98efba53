//! The preprocessor, the pass between the lexer and the parser: applies the [`Directive`]
//! tokens the lexer read (`#define`, `#undef`, `#if` ... `#endif`, `#error`) and expands
//! object- and function-like macros at token level, with the span of the macro's *use*, so
//! errors point at the learner's `BLOCK`, not at the `#define`. It also takes out decorations
//! that change nothing gridlab computes ([`strip_decorations`]).

use std::collections::{HashMap, HashSet};

use super::ast::Scalar;
use super::cursor::{ALL, Cursor};
use super::lexer::{Directive, Tok, Token};
use crate::diag::{Diagnostic, SourceId, Span};

/// A macro: its parameters when it is function-like, and its body.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Macro {
    pub params: Option<Vec<String>>,
    pub body: Vec<Token>,
}

/// The macros every session starts with: the limits learners reach for in reductions, and the
/// null pointer (`NULL`, `nullptr`: the constant 0, which C converts to any pointer).
pub fn predefined(source: SourceId) -> Vec<(String, Macro)> {
    let sp = Span::new(source, 0, 0);
    let t = |tok| Token { tok, span: sp };
    let int_min = vec![
        t(Tok::Punct("(")),
        t(Tok::Punct("-")),
        t(Tok::Int(i32::MAX as u64, Scalar::I32)),
        t(Tok::Punct("-")),
        t(Tok::Int(1, Scalar::I32)),
        t(Tok::Punct(")")),
    ];
    let list: Vec<(String, Vec<Token>)> = vec![
        ("INFINITY".into(), vec![t(Tok::Float(f64::INFINITY, Scalar::F32))]),
        ("NAN".into(), vec![t(Tok::Float(f64::NAN, Scalar::F32))]),
        ("FLT_MAX".into(), vec![t(Tok::Float(f32::MAX as f64, Scalar::F32))]),
        ("FLT_MIN".into(), vec![t(Tok::Float(f32::MIN_POSITIVE as f64, Scalar::F32))]),
        ("DBL_MAX".into(), vec![t(Tok::Float(f64::MAX, Scalar::F64))]),
        ("INT_MAX".into(), vec![t(Tok::Int(i32::MAX as u64, Scalar::I32))]),
        ("INT_MIN".into(), int_min),
        ("UINT_MAX".into(), vec![t(Tok::Int(u32::MAX as u64, Scalar::U32))]),
        ("NULL".into(), vec![t(Tok::Int(0, Scalar::I32))]),
        ("nullptr".into(), vec![t(Tok::Int(0, Scalar::I32))]),
    ];
    list.into_iter().map(|(name, body)| (name, Macro { params: None, body })).collect()
}

/// A cap on the tokens macro expansion may add to one snippet, so `#define A B B` /
/// `#define B A A` chains cannot blow up. Tokens written out are not counted: a long
/// expression is the parser's to judge.
const MAX_EXPANDED: usize = 200_000;

/// A `#define` met while expanding: the directive token, the name and the macro.
pub type NewDefine = (Token, String, Macro);

/// One open `#if`: whether the enclosing text is kept, whether this group is, and whether any
/// of its branches was taken yet.
struct Cond {
    outer: bool,
    on: bool,
    taken: bool,
    span: Span,
}

/// Take out what decorates code without changing what it computes: GNU attributes
/// (`__attribute__((always_inline))`, `__attribute__((noinline, unused))`), C++11 attributes
/// (`[[nodiscard]]`, `[[likely]]`), `_Pragma("unroll")` and C linkage (`extern "C" { ... }`, `extern "C" __global__
/// ...`, which only changes the name the linker sees; gridlab finds kernels by their C name);
/// and spells `__restrict` (nvcc's other spelling) `__restrict__` and `std::sqrt` `sqrt`. The GPU
/// backend compiles the text as written, so nothing is lost there.
/// A decoration whose bracket never closes is an error at it: what follows it would otherwise
/// read as part of the decoration.
pub fn strip_decorations(tokens: Vec<Token>) -> Result<Vec<Token>, Diagnostic> {
    let unclosed = |t: &Token, what: &str, close: &str| {
        Diagnostic::error(format!(
            "the `{}` of `{what}` has no closing `{close}`",
            if close == ")" { "(" } else { "{" }
        ))
        .at(t.span)
        .label("never closed")
        .help(format!("add the `{close}`, in the same input"))
    };
    let mut out = Vec::with_capacity(tokens.len());
    // Indices of `}` that close an `extern "C" {`: dropped when reached.
    let mut drop_close = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if drop_close.contains(&i) {
            i += 1;
            continue;
        }
        let here = Cursor::at(&tokens, i);
        match &t.tok {
            Tok::Ident(w) if w == "__attribute__" && here.is_at(1, "(") => {
                let Some(end) = Cursor::at(&tokens, i + 1).closing("(", ")") else {
                    return Err(unclosed(t, "__attribute__", ")"));
                };
                i = end;
                continue;
            }
            Tok::Ident(w) if w == "extern" && matches!(here.peek_at(1), Some(Tok::Str(_))) => {
                if here.is_at(2, "{") {
                    let Some(end) = Cursor::at(&tokens, i + 2).closing("{", "}") else {
                        return Err(unclosed(&tokens[i + 2], "extern \"C\"", "}"));
                    };
                    drop_close.push(end - 1);
                    i += 3;
                    continue;
                } else {
                    i += 2;
                    continue;
                }
            }
            // `std::sqrt(x)`, `std::max(a, b)`, `std::size_t`: CUDA C++ gives device code the
            // same functions and types in `std` as at global scope, which is where the
            // simulator knows them.
            Tok::Ident(w) if w == "std" && here.is_at(1, "::") && matches!(here.peek_at(2), Some(Tok::Ident(_))) => {
                i += 2;
                continue;
            }
            // `_Pragma("unroll")`: the operator form of `#pragma`, a compiler hint like it.
            Tok::Ident(w)
                if w == "_Pragma"
                    && here.is_at(1, "(")
                    && matches!(here.peek_at(2), Some(Tok::Str(_)))
                    && here.is_at(3, ")") =>
            {
                i += 4;
                continue;
            }
            Tok::Ident(w) if w == "__restrict" => {
                out.push(Token { tok: Tok::Ident("__restrict__".into()), span: t.span });
                i += 1;
                continue;
            }
            // `[[attribute]]`: the outer `]` right after the inner one.
            Tok::Punct("[") if here.is_at(1, "[") => {
                if let Some(end) = here.closing("[", "]")
                    && Cursor::at(&tokens, end - 2).is("]")
                {
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        out.push(t.clone());
        i += 1;
    }
    Ok(out)
}

/// Expand macros in `tokens` and apply the conditional lines. `defines` starts with the
/// session's macros; each `#define` and `#undef` in the snippet updates it from that point on
/// (defines are returned in order, so the module can remember them). Expanded tokens carry the
/// span of the macro's use.
pub fn expand(
    tokens: Vec<Token>,
    defines: &mut HashMap<String, Macro>,
) -> Result<(Vec<Token>, Vec<NewDefine>), Diagnostic> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut new_defines = Vec::new();
    let mut added = 0usize;
    let mut conds: Vec<Cond> = Vec::new();
    let mut run: Vec<Token> = Vec::new();
    let on = |conds: &[Cond]| conds.last().is_none_or(|c| c.on);
    for token in tokens {
        let Tok::Directive(d) = &token.tok else {
            if on(&conds) {
                run.push(token);
            }
            continue;
        };
        // A directive ends a run of code: expand it with the macros in force before it.
        expand_list(&std::mem::take(&mut run), defines, &mut HashSet::new(), &mut out, &mut added, 0)?;
        let active = on(&conds);
        match d {
            Directive::Define { name, params, body, .. } if active => {
                let m = Macro { params: params.clone(), body: body.clone() };
                defines.insert(name.clone(), m.clone());
                new_defines.push((token.clone(), name.clone(), m));
            }
            Directive::Undef(name) if active => {
                defines.remove(name);
            }
            Directive::Error(text) if active => {
                return Err(Diagnostic::error(format!("#error {text}"))
                    .at(token.span)
                    .label("reached this `#error`")
                    .help("the code stops itself here: define the macros its `#if` lines test"));
            }
            Directive::If(cond) => {
                let v = active && condition(cond, defines, token.span)?;
                conds.push(Cond { outer: active, on: v, taken: v, span: token.span });
            }
            Directive::IfDef(name, want) => {
                let v = active && defines.contains_key(name) == *want;
                conds.push(Cond { outer: active, on: v, taken: v, span: token.span });
            }
            Directive::Elif(cond) => {
                let Some(c) = conds.last() else { return Err(unmatched("#elif", token.span)) };
                let (outer, taken) = (c.outer, c.taken);
                let v = outer && !taken && condition(cond, defines, token.span)?;
                let c = conds.last_mut().expect("just seen");
                c.on = v;
                c.taken |= v;
            }
            Directive::Else => {
                let Some(c) = conds.last_mut() else { return Err(unmatched("#else", token.span)) };
                c.on = c.outer && !c.taken;
                c.taken = true;
            }
            Directive::Endif if conds.pop().is_none() => return Err(unmatched("#endif", token.span)),
            _ => {}
        }
    }
    if let Some(c) = conds.last() {
        return Err(Diagnostic::error("this `#if` has no `#endif`")
            .at(c.span)
            .help("end it with `#endif` in the same input (put the whole `#if ... #endif` together)"));
    }
    expand_list(&run, defines, &mut HashSet::new(), &mut out, &mut added, 0)?;
    Ok((out, new_defines))
}

fn unmatched(what: &str, span: Span) -> Diagnostic {
    Diagnostic::error(format!("`{what}` without an `#if` before it"))
        .at(span)
        .help("put the whole `#if ... #endif` in one input: the lines directly above a kernel go with it")
}

/// The value of an `#if` condition: `defined NAME` and `defined(NAME)` first, then macros,
/// then any name left is 0, as in C.
fn condition(cond: &[Token], defines: &HashMap<String, Macro>, span: Span) -> Result<bool, Diagnostic> {
    let mut resolved = Vec::new();
    let mut i = 0;
    while i < cond.len() {
        let here = Cursor::at(cond, i);
        if here.is_word("defined") {
            let paren = here.is_at(1, "(");
            let at = if paren { 2 } else { 1 };
            let Some(name) = here.word_at(at) else {
                return Err(Diagnostic::error("`defined` needs a macro name")
                    .at(cond[i].span)
                    .help("write `defined(NAME)`"));
            };
            let v = defines.contains_key(name) as u64;
            resolved.push(Token { tok: Tok::Int(v, Scalar::I32), span: cond[i].span });
            i += at + 1 + paren as usize;
            continue;
        }
        resolved.push(cond[i].clone());
        i += 1;
    }
    let mut expanded = Vec::new();
    expand_list(&resolved, defines, &mut HashSet::new(), &mut expanded, &mut 0, 0)?;
    for t in &mut expanded {
        if matches!(&t.tok, Tok::Ident(w) if w != "true" && w != "false") {
            t.tok = Tok::Int(0, Scalar::I32);
        }
    }
    match super::fold::fold(&expanded) {
        Some(v) => Ok(v != 0),
        None => Err(Diagnostic::error("this `#if` condition is not a constant integer expression")
            .at(span)
            .help("use numbers, macros that are numbers, `defined(NAME)` and C's operators")),
    }
}

/// Expand the macros in `tokens` into `out`. `hidden` holds the macros being expanded (a macro
/// is not expanded inside itself, as in C).
fn expand_list(
    tokens: &[Token],
    defines: &HashMap<String, Macro>,
    hidden: &mut HashSet<String>,
    out: &mut Vec<Token>,
    added: &mut usize,
    depth: usize,
) -> Result<(), Diagnostic> {
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        if *added > MAX_EXPANDED || depth > 64 {
            return Err(Diagnostic::error("macro expansion is too large")
                .at(token.span)
                .label("expanding this macro never ends")
                .help("check your #defines for macros that refer to each other"));
        }
        let found = match &token.tok {
            Tok::Ident(name) if !hidden.contains(name) => defines.get(name).map(|m| (name, m)),
            _ => None,
        };
        let Some((name, m)) = found else {
            out.push(token.clone());
            i += 1;
            continue;
        };
        let respan = |t: &Token| Token { tok: t.tok.clone(), span: token.span };
        let body: Vec<Token> = match &m.params {
            None => {
                i += 1;
                m.body.iter().map(respan).collect()
            }
            // A function-like macro's name without `(` after it is just a name.
            Some(_) if !Cursor::at(tokens, i).is_at(1, "(") => {
                out.push(token.clone());
                i += 1;
                continue;
            }
            Some(params) => {
                let (args, end) = macro_args(tokens, i + 2, token.span, name)?;
                if args.len() != params.len() && !(params.is_empty() && args.len() == 1 && args[0].is_empty()) {
                    return Err(Diagnostic::error(format!(
                        "macro `{name}` takes {} argument{}, but {} {} given",
                        params.len(),
                        if params.len() == 1 { "" } else { "s" },
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ))
                    .at(token.span.to(tokens[end - 1].span))
                    .help(format!("call it as `{name}({})`", params.join(", "))));
                }
                i = end;
                // Arguments are expanded first, then put in place of the parameters.
                let mut expanded_args = Vec::new();
                for a in &args {
                    let mut e = Vec::new();
                    expand_list(a, defines, hidden, &mut e, added, depth + 1)?;
                    expanded_args.push(e);
                }
                let mut body = Vec::new();
                for t in &m.body {
                    match &t.tok {
                        Tok::Ident(p) if let Some(k) = params.iter().position(|q| q == p) => {
                            body.extend(expanded_args[k].iter().cloned());
                        }
                        _ => body.push(respan(t)),
                    }
                }
                body
            }
        };
        *added += body.len();
        hidden.insert(name.clone());
        let r = expand_list(&body, defines, hidden, out, added, depth + 1);
        hidden.remove(name);
        r?;
    }
    Ok(())
}

/// A function-like macro's arguments from just after its `(`, split at top-level commas;
/// returns them and the index just past the `)`.
fn macro_args(tokens: &[Token], i: usize, at: Span, name: &str) -> Result<(Vec<Vec<Token>>, usize), Diagnostic> {
    Cursor::at(tokens, i).pieces(")", ALL).ok_or_else(|| {
        Diagnostic::error(format!("the arguments of macro `{name}` have no closing `)`"))
            .at(at)
            .help(format!("write `{name}(a, b)` on one line"))
    })
}
