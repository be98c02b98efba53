//! Function and struct templates, instantiated the way a compiler does it for the simple cases:
//! by substituting the arguments into the template's tokens and parsing the result as an
//! ordinary function or struct.
//!
//! A `template <...>` function or struct is kept as tokens (macros already expanded). A use
//! written with arguments, `reduce<float, 256>(...)` in CUDA code, `reduce<float, 256><<<...>>>`
//! in a launch or `SharedMemory<float>` as a type, names the instance `reduce<float, 256>`: type
//! arguments in one spelling (`unsigned` is `unsigned int`), value arguments folded to a number,
//! so `256` and `2 * 128` are the same instance. A struct's instance is the struct named so; a
//! full specialisation (`template <> struct SharedMemory<double> { ... };`) is the instance for
//! its arguments, written out. Instances are made again from the module's current templates at
//! every check, so redefining a template updates its instances.

use std::collections::HashMap;

use super::cursor::{ALL, Cursor, ItemEnd, ROUND, Unbalanced};
use super::lexer::{Tok, Token, describe};
use super::syntax::TypeName;
use crate::diag::{Diagnostic, Span};

/// Nested instantiation (a template that uses a template) deeper than this is surely runaway
/// recursion (`f<N>` calling `f<N - 1>` without the specialisation that would stop it).
pub const MAX_INSTANCES: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub struct TParam {
    pub name: String,
    /// `typename T` / `class T`; otherwise a value parameter like `int BLOCK`.
    pub is_type: bool,
    /// `bool nIsPow2`: its instances are named with `true` and `false`.
    pub is_bool: bool,
    pub default: Option<Vec<Token>>,
}

/// A function or struct template as written: its parameters and the item's tokens.
#[derive(Clone, Debug)]
pub struct Template {
    pub name: String,
    pub params: Vec<TParam>,
    /// The function after `template <...>`, up to its closing `}`; for a struct, `struct Name
    /// { ... };` (a specialisation's arguments left out).
    pub tokens: Vec<Token>,
    /// Where the function's name is in `tokens`.
    name_at: usize,
    pub is_kernel: bool,
    /// `template <...> struct Name { ... };`: each use with arguments is a struct.
    pub is_struct: bool,
    /// For a full specialisation, `template <> struct Name<double> { ... };`: the arguments it
    /// is written for (`params` is empty).
    pub specialises: Option<Vec<Vec<Token>>>,
    /// The typedefs in force where the template was written.
    pub typedefs: HashMap<String, TypeName>,
    /// The whole item, `template` to `}`.
    pub span: Span,
}

/// What a use of a template's name needs to know of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    pub params: Vec<TParam>,
    pub is_struct: bool,
}

/// One use of a template with its arguments, e.g. `reduce<float, 256>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub template: String,
    /// One token list per parameter (defaults filled in), ready to substitute.
    pub args: Vec<Vec<Token>>,
    /// The instance's function name, `reduce<float, 256>`.
    pub name: String,
    /// Where it was asked for.
    pub span: Span,
}

/// Take every `template <...>` function and struct out of `tokens`, returning the rest and the
/// templates. A template that is only declared (`template <int N> __global__ void k(int *);`)
/// is dropped.
pub fn extract(tokens: Vec<Token>) -> Result<(Vec<Token>, Vec<Template>), Diagnostic> {
    let mut rest = Vec::with_capacity(tokens.len());
    let mut out = Vec::new();
    // Where the walk goes on from after a template; always outside braces.
    let mut from = 0;
    'walk: loop {
        for step in Cursor::at(&tokens, from).walk(&[("{", "}")]) {
            let (i, t) = (step.at, step.tok);
            // Union templates are left to the parser, which says they run on the GPU only.
            if step.depth == 0
                && t.is_word("template")
                && Cursor::at(&tokens, i).is_at(1, "<")
                && let (params, after) = params(&tokens, i + 2)?
                && !Cursor::at(&tokens, after).is_word("union")
            {
                let next = Cursor::at(&tokens, after);
                if next.is_word("struct") || next.is_word("class") {
                    let (t, end) = struct_template(&tokens, i, after, params)?;
                    balanced(&tokens[i..end])?;
                    out.extend(t);
                    from = end;
                    continue 'walk;
                }
                let (end, body) = item_end(&tokens, after)?;
                balanced(&tokens[i..end])?;
                if body && let Some(t) = template(&tokens[i..end], after - i, params)? {
                    out.push(t);
                }
                from = end;
                continue 'walk;
            }
            rest.push(t.clone());
        }
        return Ok((rest, out));
    }
}

/// The parameters from just after `template <` to the closing `>`; returns them and the index
/// just past the `>`.
fn params(tokens: &[Token], i: usize) -> Result<(Vec<TParam>, usize), Diagnostic> {
    let head = tokens[i - 2].span;
    let Ok((pieces, past)) = Cursor::at(tokens, i).template_args() else {
        return Err(Diagnostic::error("this template's parameter list has no closing `>`")
            .at(head)
            .help("write it like `template <typename T, int N>`"));
    };
    let close = tokens[past - 1].span;
    let mut params = Vec::new();
    for piece in pieces {
        // `unsigned BLOCK = 256`: the default is what follows the first `=` outside parentheses.
        let eq = Cursor::at(&piece, 0).walk(ROUND).find(|s| s.depth == 0 && s.tok.is_punct("=")).map(|s| s.at);
        let (words, default) = match eq {
            Some(k) => (&piece[..k], Some(piece[k + 1..].to_vec())),
            None => (&piece[..], None),
        };
        let is_type = words.first().is_some_and(|w| w.is_word("typename") || w.is_word("class"));
        match words.last().map(|w| &w.tok) {
            Some(Tok::Ident(name)) if words.len() >= 2 => {
                let is_bool = words.len() == 2 && words[0].is_word("bool");
                params.push(TParam { name: name.clone(), is_type, is_bool, default });
            }
            _ => {
                let at = words.first().map_or(close, |w| w.span);
                return Err(Diagnostic::error("expected a template parameter like `typename T` or `int N`")
                    .at(at)
                    .help("gridlab takes type parameters (`typename T`, `class T`) and number parameters (`int N`, `unsigned BLOCK = 256`)"));
            }
        }
    }
    Ok((params, past))
}

/// The end of the item starting at `i`: just past its body's `}` (and `true`), or past a `;`
/// that ends a declaration (and `false`); an error when a `{` of it never closes.
fn item_end(tokens: &[Token], i: usize) -> Result<(usize, bool), Diagnostic> {
    match Cursor::at(tokens, i).item_end(|_| true, |_| false) {
        ItemEnd::Body(end) => Ok((end, true)),
        ItemEnd::Declaration(end) | ItemEnd::Stopped(end) => Ok((end, false)),
        ItemEnd::Unfinished { braces_closed: true } => Ok((tokens.len(), true)),
        ItemEnd::Unfinished { braces_closed: false } => {
            let open = tokens[i..].iter().find(|t| t.is_punct("{")).map_or(tokens[i].span, |t| t.span);
            Err(Diagnostic::error("unclosed `{`")
                .at(open)
                .label("this `{` has no matching `}`")
                .help("add `}` at the end of the template, in the same input"))
        }
    }
}

/// A template is kept as tokens until it is used, so a bracket in it that closes nothing, or
/// that nothing closes, is said now, where it was written, not at some later use (or never).
fn balanced(item: &[Token]) -> Result<(), Diagnostic> {
    match Cursor::at(item, 0).unbalanced(ALL) {
        None => Ok(()),
        Some(Unbalanced::ClosesNothing(at)) => {
            Err(Diagnostic::error(format!("this {} closes nothing", describe(&item[at].tok)))
                .at(item[at].span)
                .label("no bracket before it is open")
                .help("remove it, or add the bracket it closes"))
        }
        Some(Unbalanced::NeverClosed(at)) => {
            Err(Diagnostic::error(format!("this {} is never closed", describe(&item[at].tok)))
                .at(item[at].span)
                .label("nothing after it closes it")
                .help("add the bracket that closes it, in the same input"))
        }
    }
}

/// `template <params> struct Name { ... };` (or `template <> struct Name<args> { ... };`) from
/// `start` (the word `template`), with the `struct` at `at`: the template, if it has a body, and
/// the index past the item.
fn struct_template(
    tokens: &[Token],
    start: usize,
    at: usize,
    params: Vec<TParam>,
) -> Result<(Option<Template>, usize), Diagnostic> {
    let head = tokens[start].span;
    let mut k = at + 1;
    // `struct __align__(16) Name`: the attribute stays with the struct.
    let attribute = Cursor::at(tokens, k);
    if (attribute.is_word("__align__") || attribute.is_word("__builtin_align__"))
        && let Some(past) = Cursor::at(tokens, k + 1).closing("(", ")")
    {
        k = past;
    }
    let Some(Tok::Ident(name)) = tokens.get(k).map(|t| &t.tok) else {
        return Err(Diagnostic::error("a struct template needs a name")
            .at(tokens[at].span)
            .help("write it like `template <typename T> struct Box { T value; };`"));
    };
    let name_at = k;
    let mut body_at = k + 1;
    let mut specialises = None;
    if Cursor::at(tokens, k).is_at(1, "<") {
        let (args, past) = template_args(tokens, k + 2, tokens[k].span)?;
        if !params.is_empty() {
            return Err(Diagnostic::error("partial specialisations of a struct template run on the GPU backend only")
                .at(tokens[k].span.to(tokens[past - 1].span))
                .label("not supported")
                .help(format!(
                    "write a full specialisation for each type, `template <> struct {name}<float> {{ ... }};`, or switch with `:backend gpu`"
                ))
                .outside_subset("partial specialisations"));
        }
        specialises = Some(args);
        body_at = past;
    } else if params.is_empty() {
        return Err(Diagnostic::error(format!("`template <>` needs the arguments it specialises `{name}` for"))
            .at(tokens[k].span)
            .help(format!("write `template <> struct {name}<float> {{ ... }};`")));
    }
    let (mut end, body) = item_end(tokens, body_at)?;
    if !body {
        // A declaration, `template <typename T> struct Box;`: it adds nothing.
        return Ok((None, end));
    }
    if Cursor::at(tokens, end).is(";") {
        end += 1;
    }
    let mut item: Vec<Token> = tokens[at..=name_at].to_vec();
    item.extend_from_slice(&tokens[body_at..end]);
    if !item.last().is_some_and(|t| t.is_punct(";")) {
        let last = item[item.len() - 1].span;
        item.push(Token { tok: Tok::Punct(";"), span: last });
    }
    Ok((
        Some(Template {
            name: name.clone(),
            params,
            name_at: name_at - at,
            tokens: item,
            is_kernel: false,
            is_struct: true,
            specialises,
            typedefs: HashMap::new(),
            span: head.to(tokens[end - 1].span),
        }),
        end,
    ))
}

fn template(item: &[Token], header: usize, params: Vec<TParam>) -> Result<Option<Template>, Diagnostic> {
    let tokens = item[header..].to_vec();
    let Some(open) = tokens.iter().position(|t| t.is_punct("(")) else { return Ok(None) };
    // `__launch_bounds__(256) void k(...)`: the name is before the first `(` that is not an
    // attribute's.
    let mut open = open;
    while open > 0 && tokens[open - 1].is_word("__launch_bounds__") {
        let Some(past) = Cursor::at(&tokens, open).closing("(", ")") else { return Ok(None) };
        match tokens[past..].iter().position(|t| t.is_punct("(")) {
            Some(k) => open = past + k,
            None => return Ok(None),
        }
    }
    let mut tokens = tokens;
    let mut specialises = None;
    // `template <> __device__ int warpReduceSum<int>(...)`: a full specialisation, the function
    // for those arguments (not `operator>`, whose `>` is its name).
    if open >= 2 && tokens[open - 1].is_punct(">") && !tokens[open - 2].is_word("operator") {
        let Some(lt) = Cursor::at(&tokens, open - 1).opening("<", ">") else { return Ok(None) };
        if lt == 0 {
            return Ok(None);
        }
        let (args, past) = template_args(&tokens, lt + 1, tokens[lt - 1].span)?;
        if !params.is_empty() {
            return Err(Diagnostic::error("a function template cannot be partially specialised")
                .at(tokens[lt - 1].span.to(tokens[past - 1].span))
                .help(
                    "write an overload, or a full specialisation, `template <> __device__ int f<int>(int x) { ... }`",
                ));
        }
        specialises = Some(args);
        tokens.drain(lt..past);
        open = lt;
    }
    let Some(Tok::Ident(name)) = open.checked_sub(1).map(|k| &tokens[k].tok) else { return Ok(None) };
    let name = name.clone();
    let is_kernel = tokens[..open].iter().any(|t| t.is_word("__global__"));
    let span = item[0].span.to(item[item.len() - 1].span);
    Ok(Some(Template {
        name,
        params,
        name_at: open - 1,
        tokens,
        is_kernel,
        is_struct: false,
        specialises,
        typedefs: HashMap::new(),
        span,
    }))
}

impl Template {
    /// The name of the instance a full specialisation stands for, given its primary template's
    /// parameters (which fill in defaults): `SharedMemory<double>`.
    pub fn specialised_name(&self, params: &[TParam]) -> Option<String> {
        let args = self.specialises.clone()?;
        instance(&self.name, params, args, self.span).ok().map(|i| i.name)
    }

    /// The template's arguments deduced from a launch, as C++ deduces them from pointer
    /// parameters: `args[k]` is the element type (`float`, `unsigned int`) of the buffer passed
    /// to parameter `k`, if it is one. Type parameters that appear as `T *` (or `const T *`) take
    /// that type; others take their defaults. `None` when some parameter stays unknown.
    pub fn deduce(&self, args: &[Option<&str>]) -> Option<Vec<Vec<Token>>> {
        let open = self.name_at + 1;
        let (params, _) = Cursor::at(&self.tokens, open + 1).pieces(")", ROUND)?;
        let mut out: Vec<Option<Vec<Token>>> = vec![None; self.params.len()];
        for (decl, arg) in params.iter().zip(args) {
            let Some(c_type) = arg else { continue };
            // `[const] T * [__restrict__] name`
            let words: Vec<&Token> = decl.iter().filter(|t| !matches!(&t.tok, Tok::Ident(w) if w == "const")).collect();
            if let [ty, star, ..] = &words[..]
                && star.is_punct("*")
                && let Tok::Ident(t) = &ty.tok
                && let Some(k) = self.params.iter().position(|p| p.is_type && &p.name == t)
            {
                let toks = c_type.split(' ').map(|w| Token { tok: Tok::Ident(w.to_string()), span: ty.span }).collect();
                out[k].get_or_insert(toks);
            }
        }
        let mut full = Vec::new();
        for (k, p) in self.params.iter().enumerate() {
            match out[k].take() {
                Some(a) => full.push(a),
                None if p.default.is_some() => break,
                None => return None,
            }
        }
        Some(full)
    }
}

/// Replace every `name<args>` of a template in `templates` by the instance's name, returning
/// the tokens and the instances asked for.
pub fn rewrite_uses(
    tokens: Vec<Token>,
    templates: &HashMap<String, Known>,
) -> Result<(Vec<Token>, Vec<Instance>), Diagnostic> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut instances = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if let Tok::Ident(name) = &t.tok
            && let Some(known) = templates.get(name)
            && Cursor::at(&tokens, i).is_at(1, "<")
        {
            let (args, end) = template_args(&tokens, i + 2, t.span)?;
            let span = t.span.to(tokens[end - 1].span);
            let inst = instance(name, &known.params, args, span)?;
            out.push(Token { tok: Tok::Ident(inst.name.clone()), span: t.span });
            instances.push(inst);
            i = end;
            continue;
        }
        // `sq(x)` for a template `sq`: C++ would deduce `T` from `x`'s type, which needs the
        // checker's types; a declaration (`float sq(float x)`) follows a type word instead.
        if let Tok::Ident(name) = &t.tok
            && let Some(Known { params, is_struct: false }) = templates.get(name)
            && Cursor::at(&tokens, i).is_at(1, "(")
            && !tokens[..i].last().is_some_and(|p| matches!(&p.tok, Tok::Ident(w) if w != "return"))
        {
            let example: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
            return Err(Diagnostic::error(format!("`{name}` is a template: the simulator needs its arguments written out"))
                .at(t.span)
                .label("template arguments deduced from the call")
                .help(format!(
                    "write them in angle brackets, e.g. `{name}<float>(...)` for `{name}<{}>`; the GPU backend deduces them (`:backend gpu`)",
                    example.join(", ")
                ))
                .outside_subset("template argument deduction"));
        }
        out.push(t.clone());
        i += 1;
    }
    Ok((out, instances))
}

/// The arguments from just after `<` to the matching `>` (the use of a template named at
/// `at`); returns them and the index just past the `>`.
fn template_args(tokens: &[Token], i: usize, at: Span) -> Result<(Vec<Vec<Token>>, usize), Diagnostic> {
    Cursor::at(tokens, i).template_args().map_err(|_| {
        Diagnostic::error("this template's arguments have no closing `>`")
            .at(at)
            .help("write the arguments in angle brackets, e.g. `reduce<float, 256>(...)`")
    })
}

/// The instance of template `name` for `args`, with defaults filled in and number arguments
/// folded.
pub fn instance(name: &str, params: &[TParam], args: Vec<Vec<Token>>, span: Span) -> Result<Instance, Diagnostic> {
    if args.len() > params.len() {
        return Err(Diagnostic::error(format!(
            "`{name}` takes {} template argument{}, but {} {} given",
            params.len(),
            if params.len() == 1 { "" } else { "s" },
            args.len(),
            if args.len() == 1 { "was" } else { "were" }
        ))
        .at(span)
        .help(format!("write `{name}<{}>`", example(params))));
    }
    let mut full: Vec<Vec<Token>> = Vec::new();
    let mut texts = Vec::new();
    for (k, p) in params.iter().enumerate() {
        let arg = match args.get(k) {
            Some(a) if a.is_empty() => return Err(Diagnostic::error("an empty template argument").at(span)),
            Some(a) => a.clone(),
            None => match &p.default {
                Some(d) => substitute(d, &params[..k], &full),
                None => {
                    return Err(Diagnostic::error(format!(
                        "`{name}` needs a value for its template parameter `{}`",
                        p.name
                    ))
                    .at(span)
                    .help(format!("write it in the angle brackets, e.g. `{name}<{}>`", example(params))));
                }
            },
        };
        if p.is_type {
            texts.push(type_text(&arg));
            full.push(arg);
        } else {
            let v = super::fold::fold(&arg).ok_or_else(|| {
                Diagnostic::error(format!("template parameter `{}` of `{name}` needs a constant number", p.name))
                    .at(arg[0].span.to(arg[arg.len() - 1].span))
                    .help("use a number or a #define'd number, e.g. `256`")
            })?;
            texts.push(match (p.is_bool, v) {
                (true, 0) => "false".to_string(),
                (true, _) => "true".to_string(),
                _ => v.to_string(),
            });
            let at = arg[0].span;
            let mut toks = Vec::new();
            if v < 0 {
                toks.push(Token { tok: Tok::Punct("("), span: at });
                toks.push(Token { tok: Tok::Punct("-"), span: at });
            }
            let scalar =
                if v.unsigned_abs() > i32::MAX as u128 { super::ast::Scalar::I64 } else { super::ast::Scalar::I32 };
            toks.push(Token { tok: Tok::Int(v.unsigned_abs() as u64, scalar), span: at });
            if v < 0 {
                toks.push(Token { tok: Tok::Punct(")"), span: at });
            }
            full.push(toks);
        }
    }
    Ok(Instance { template: name.to_string(), args: full, name: format!("{name}<{}>", texts.join(", ")), span })
}

fn example(params: &[TParam]) -> String {
    params.iter().map(|p| if p.is_type { "float" } else { "256" }).collect::<Vec<_>>().join(", ")
}

/// A type argument in one spelling, so that `k<unsigned>` and `k<unsigned int>` are one
/// instance: `int` is left out beside `short` and `long`, added to a lone `unsigned`, and
/// `signed` is left out beside `int`, `short` and `long` (not `char`, where it makes a type).
fn type_text(tokens: &[Token]) -> String {
    let words: Vec<&str> = tokens
        .iter()
        .map(|t| match &t.tok {
            Tok::Ident(w) => Some(w.as_str()),
            _ => None,
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    let int_words = ["unsigned", "signed", "short", "long", "int"];
    if words.is_empty() || !words.iter().all(|w| int_words.contains(w)) {
        // `Max<float>` as written in code, without spaces in the brackets.
        let mut out = String::new();
        let mut prev = "";
        for t in tokens {
            let word = render(std::slice::from_ref(t));
            let tight = matches!(word.as_str(), "<" | ">" | "," | "*" | "&") || prev == "<" || out.is_empty();
            if !tight {
                out.push(' ');
            }
            out.push_str(&word);
            if word == "," {
                out.push(' ');
            }
            prev = if word == "<" { "<" } else { "" };
        }
        return out.replace(",  ", ", ");
    }
    let sized = words.iter().any(|w| *w == "short" || *w == "long");
    let unsigned = words.contains(&"unsigned");
    let mut out: Vec<&str> = Vec::new();
    if unsigned {
        out.push("unsigned");
    }
    out.extend(words.iter().filter(|w| **w == "short" || **w == "long"));
    if !sized {
        out.push("int");
    }
    out.join(" ")
}

/// The tokens as C text, one space between words.
pub fn render(tokens: &[Token]) -> String {
    let mut s = String::new();
    for t in tokens {
        let word = match &t.tok {
            Tok::Ident(w) => w.clone(),
            Tok::Punct(p) => p.to_string(),
            Tok::Int(v, _) => v.to_string(),
            Tok::Float(f, _) => f.to_string(),
            Tok::Char(c) => format!("'{}'", *c as char),
            Tok::Str(x) => format!("{x:?}"),
            Tok::Directive(_) => String::new(),
        };
        let glue = matches!(&t.tok, Tok::Punct("*") | Tok::Punct("&"));
        if !s.is_empty() && !glue {
            s.push(' ');
        }
        s.push_str(&word);
    }
    s
}

fn substitute(tokens: &[Token], params: &[TParam], args: &[Vec<Token>]) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    for t in tokens {
        match &t.tok {
            Tok::Ident(w) if let Some(k) = params.iter().position(|p| &p.name == w) => {
                out.extend(args[k].iter().map(|a| Token { tok: a.tok.clone(), span: t.span }));
            }
            _ => out.push(t.clone()),
        }
    }
    out
}

/// The function's or struct's tokens with the arguments in place of the parameters, named as
/// the instance. Inside a struct its name alone (a constructor's, `Box(T v)`) is the instance's
/// too, as C++ reads it.
pub fn instantiate(t: &Template, inst: &Instance) -> Vec<Token> {
    let mut tokens = t.tokens.clone();
    tokens[t.name_at].tok = Tok::Ident(inst.name.clone());
    let name_tok = tokens.remove(t.name_at);
    let (head, tail) = tokens.split_at(t.name_at);
    let mut out = substitute(head, &t.params, &inst.args);
    out.push(name_tok);
    out.extend(substitute(tail, &t.params, &inst.args));
    if t.is_struct {
        for k in t.name_at + 1..out.len() {
            if out[k].is_word(&t.name) && !Cursor::at(&out, k).is_at(1, "<") {
                out[k].tok = Tok::Ident(inst.name.clone());
            }
        }
    }
    out
}
