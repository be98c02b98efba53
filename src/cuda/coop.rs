//! Cooperative groups at block and warp-tile level, read as the built-ins they stand for.
//!
//! `cg::thread_block` is the block and `cg::thread_block_tile<N>` a fixed slice of N threads of
//! a warp; neither carries state the simulator needs beyond its kind and size, which are known
//! where the handle is declared. So handles are dropped from the code and every use becomes what
//! CUDA defines it as: `cta.sync()` and `cg::sync(cta)` are `__syncthreads()`, a tile's
//! `sync()` is `__syncwarp` of the tile's own lanes (so the race check orders those only),
//! `tile.shfl_down(v, 1)` is `__shfl_down_sync(0xffffffff, v, 1, N)`, `thread_rank()` is the
//! linear thread index (modulo N for a tile). A handle parameter of a `__device__` function
//! becomes an unused `int` (its kind and size are in its type), and a handle passed as an
//! argument becomes `0`, so calls across snippets stay in step. Grid groups and dynamic
//! `thread_group`s are refused, naming the construct; the GPU backend runs them.

use std::collections::HashMap;

use super::ast::Scalar;
use super::cursor::{Cursor, ROUND_SQUARE};
use super::lexer::{Tok, Token};
use crate::diag::{Diagnostic, Span};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Handle {
    Block,
    Tile(u64),
}

fn outside(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(format!("{what} is not supported by the simulator"))
        .at(span)
        .label("cooperative groups")
        .help("the simulator runs cooperative groups at block and warp-tile level (`this_thread_block()`, `tiled_partition<32>`, `sync`, `thread_rank`, shuffles); `:backend gpu` runs the rest")
        .outside_subset(format!("cooperative groups ({what})"))
}

/// A namespace line of a snippet (`namespace cg = cooperative_groups;`, `using namespace
/// cooperative_groups;`): the module keeps it as an item, so later snippets (and the GPU's
/// source) see it.
#[derive(Clone, Debug)]
pub struct NamespaceLine {
    pub name: String,
    pub span: Span,
}

/// What earlier namespace lines (their texts) said: the names of `cooperative_groups`, and
/// whether its names may be used bare.
fn scope(earlier: &[&str]) -> (Vec<String>, bool) {
    let mut aliases = vec!["cooperative_groups".to_string(), "cg".to_string()];
    let mut using = false;
    for line in earlier {
        let words: Vec<&str> =
            line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        match words[..] {
            ["namespace", alias, "cooperative_groups", ..] => aliases.push(alias.to_string()),
            ["using", "namespace", name, ..] if aliases.iter().any(|a| a == name) => using = true,
            _ => {}
        }
    }
    (aliases, using)
}

/// Rewrite the cooperative-groups code in `tokens` (macros already expanded), given the texts of
/// the module's earlier namespace lines; returns the tokens and this snippet's namespace lines.
pub fn rewrite(tokens: Vec<Token>, earlier: &[&str]) -> Result<(Vec<Token>, Vec<NamespaceLine>), Diagnostic> {
    let (aliases, using) = scope(earlier);
    let mentions = |t: &Token| matches!(&t.tok, Tok::Ident(w) if aliases.contains(w) || w == "namespace");
    if !using && !tokens.iter().any(mentions) {
        return Ok((tokens, Vec::new()));
    }
    let (tokens, lines) = qualify(tokens, aliases, using)?;
    let (tokens, handles) = declarations(tokens)?;
    Ok((uses(tokens, &handles)?, lines))
}

/// Take out `namespace cg = cooperative_groups;` and `using namespace ...;`, and turn
/// `cg::name`, `cooperative_groups::name` (and after `using namespace cooperative_groups`, a
/// bare `name` of the namespace) into one token `cg::name`.
fn qualify(
    tokens: Vec<Token>,
    mut aliases: Vec<String>,
    mut using: bool,
) -> Result<(Vec<Token>, Vec<NamespaceLine>), Diagnostic> {
    const NAMES: &[&str] = &[
        "thread_block",
        "thread_block_tile",
        "this_thread_block",
        "tiled_partition",
        "thread_group",
        "grid_group",
        "this_grid",
        "coalesced_group",
        "coalesced_threads",
        "sync",
    ];
    let mut lines = Vec::new();
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        // namespace cg = cooperative_groups ;
        let here = Cursor::at(&tokens, i);
        if t.word() == Some("namespace")
            && let Some(alias) = here.word_at(1)
            && here.is_at(2, "=")
            && here.word_at(3) == Some("cooperative_groups")
            && here.is_at(4, ";")
        {
            aliases.push(alias.to_string());
            lines.push(NamespaceLine { name: alias.to_string(), span: t.span.to(tokens[i + 4].span) });
            i += 5;
            continue;
        }
        // using namespace X ;
        if t.word() == Some("using") && here.word_at(1) == Some("namespace") {
            let name = here.word_at(2).unwrap_or("");
            using |= aliases.iter().any(|a| a == name);
            let j = tokens.iter().skip(i + 2).position(|t| t.is_punct(";")).map_or(tokens.len(), |k| i + 2 + k);
            let end = tokens.get(j).unwrap_or(&tokens[tokens.len() - 1]).span;
            lines.push(NamespaceLine { name: format!("namespace {name}"), span: t.span.to(end) });
            i = j + 1;
            continue;
        }
        if let Some(w) = t.word()
            && aliases.iter().any(|a| a == w)
            && here.is_at(1, "::")
            && let Some(name) = here.word_at(2)
        {
            out.push(Token { tok: Tok::Ident(format!("cg::{name}")), span: t.span.to(tokens[i + 2].span) });
            i += 3;
            continue;
        }
        if using
            && let Some(w) = t.word()
            && NAMES.contains(&w)
            && !follows(&out, ".")
            && !follows(&out, "->")
        {
            out.push(Token { tok: Tok::Ident(format!("cg::{w}")), span: t.span });
            i += 1;
            continue;
        }
        out.push(t.clone());
        i += 1;
    }
    Ok((out, lines))
}

/// A handle type starting at `i` (`cg::thread_block`, `cg::thread_block_tile<N>`), with the
/// index just past it.
fn handle_type(tokens: &[Token], i: usize) -> Result<Option<(Handle, usize)>, Diagnostic> {
    match Cursor::at(tokens, i).word_at(0) {
        Some("cg::thread_block") => Ok(Some((Handle::Block, i + 1))),
        Some("cg::thread_block_tile") => {
            let n = tile_size(tokens, i + 1, tokens[i].span)?;
            Ok(Some((Handle::Tile(n.0), n.1)))
        }
        Some(w @ ("cg::thread_group" | "cg::grid_group" | "cg::coalesced_group")) => {
            Err(outside(tokens[i].span, &format!("`{w}`")))
        }
        _ => Ok(None),
    }
}

/// `<N>` at `i`: the tile size, a power of two up to 32, and the index past the `>`.
fn tile_size(tokens: &[Token], i: usize, at: Span) -> Result<(u64, usize), Diagnostic> {
    let here = Cursor::at(tokens, i);
    let n = match here.peek_at(1) {
        Some(Tok::Int(n, _)) if here.is("<") && here.is_at(2, ">") => *n,
        _ => {
            return Err(Diagnostic::error("a tile needs its size as a number, e.g. `thread_block_tile<32>`")
                .at(at)
                .help("write the size in angle brackets: 1, 2, 4, 8, 16 or 32"));
        }
    };
    if !n.is_power_of_two() || n > 32 {
        return Err(Diagnostic::error(format!("a thread block tile has 1, 2, 4, 8, 16 or 32 threads, not {n}"))
            .at(at)
            .help("tiles are slices of a warp: use a power of two up to 32"));
    }
    Ok((n, i + 3))
}

/// The value a handle is initialised with: `cg::this_thread_block()` or
/// `cg::tiled_partition<N>(parent)`.
fn initialiser(tokens: &[Token], i: usize) -> Result<Option<(Handle, usize)>, Diagnostic> {
    let here = Cursor::at(tokens, i);
    match here.word_at(0) {
        Some("cg::this_thread_block") if here.is_at(1, "(") && here.is_at(2, ")") => Ok(Some((Handle::Block, i + 3))),
        Some("cg::tiled_partition") => {
            let (n, j) = tile_size(tokens, i + 1, tokens[i].span)?;
            match Cursor::at(tokens, j).closing("(", ")") {
                Some(end) => Ok(Some((Handle::Tile(n), end))),
                None => Err(not_a_call(
                    tokens[i].span.to(tokens[j - 1].span),
                    &format!("tiled_partition<{n}>"),
                    &format!("cg::tiled_partition<{n}>(cta)"),
                )),
            }
        }
        Some(w @ ("cg::this_grid" | "cg::coalesced_threads")) => Err(outside(tokens[i].span, &format!("`{w}()`"))),
        _ => Ok(None),
    }
}

/// Remove handle declarations (locals) and turn handle parameters into `int`s, returning the
/// tokens and each handle's kind by name.
fn declarations(tokens: Vec<Token>) -> Result<(Vec<Token>, HashMap<String, Handle>), Diagnostic> {
    let mut handles = HashMap::new();
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let konst = t.is_word("const");
        let at = if konst { i + 1 } else { i };
        let auto = Cursor::at(&tokens, at).is_word("auto");
        let typed = if auto { None } else { handle_type(&tokens, at)? };
        if typed.is_some() || auto {
            let after_type = typed.map_or(at + 1, |(_, j)| j);
            let amp = Cursor::at(&tokens, after_type).is("&");
            let name_at = after_type + amp as usize;
            let named = Cursor::at(&tokens, name_at);
            if let Some(name) = named.word_at(0) {
                let name = name.to_string();
                // A parameter: `cg::thread_block_tile<32> g` after `(` or `,`, before `,` or `)`.
                if let Some((h, _)) = typed
                    && (follows(&out, "(") || follows(&out, ","))
                    && (named.is_at(1, ",") || named.is_at(1, ")"))
                {
                    handles.insert(name.clone(), h);
                    out.push(Token { tok: Tok::Ident("int".into()), span: tokens[at].span });
                    out.push(Token { tok: Tok::Ident(name), span: tokens[name_at].span });
                    i = name_at + 1;
                    continue;
                }
                // A local: `cg::thread_block cta = cg::this_thread_block();`
                if named.is_at(1, "=")
                    && let Some((h, end)) = initialiser(&tokens, name_at + 2)?
                    && Cursor::at(&tokens, end).is(";")
                    && typed.is_none_or(|(k, _)| k == h)
                {
                    handles.insert(name, h);
                    i = end + 1;
                    continue;
                }
            }
            if let Some((_, _)) = typed {
                return Err(Diagnostic::error("the simulator takes a cooperative group only as a local set from `this_thread_block()` or `tiled_partition<N>(...)`, or as a parameter")
                    .at(tokens[at].span)
                    .help("write `cg::thread_block cta = cg::this_thread_block();`")
                    .outside_subset("cooperative groups (this use of a group)"));
            }
        }
        out.push(t.clone());
        i += 1;
    }
    Ok((out, handles))
}

/// A group's `sync`: the block's barrier, or a warp-level sync of the tile's own lanes (a
/// tile of 8 syncs its 8 lanes, not the other tiles of its warp, which the race check tells
/// apart).
fn sync_tokens(h: Handle, span: Span) -> Vec<Token> {
    match h {
        Handle::Block => code("__syncthreads()", span),
        Handle::Tile(n) if n >= 32 => code("__syncwarp()", span),
        Handle::Tile(n) => {
            let mut out = code(&format!("__syncwarp(0x{:x} << (", (1u64 << n) - 1), span);
            out.extend(rank_tokens(span));
            out.extend(code(&format!("% 32 / {n} * {n}))"), span));
            out
        }
    }
}

/// The linear thread index within the block, as tokens.
fn rank_tokens(span: Span) -> Vec<Token> {
    code("(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))", span)
}

/// Tokens for a short fixed piece of C (identifiers, numbers, punctuation).
fn code(text: &str, span: Span) -> Vec<Token> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b' ' {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let lo = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(text[lo..i].to_string()), span });
        } else if c.is_ascii_digit() {
            let lo = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let s = &text[lo..i];
            let (v, ty) = match s.strip_prefix("0x") {
                Some(h) => (u64::from_str_radix(h, 16).unwrap_or(0), Scalar::U32),
                None => (s.parse().unwrap_or(0), Scalar::I32),
            };
            out.push(Token { tok: Tok::Int(v, ty), span });
        } else {
            let p = match c {
                b'(' => "(",
                b')' => ")",
                b'+' => "+",
                b'*' => "*",
                b'.' => ".",
                b'%' => "%",
                b'/' => "/",
                b'-' => "-",
                b'<' if b.get(i + 1) == Some(&b'<') => {
                    i += 1;
                    "<<"
                }
                _ => ",",
            };
            out.push(Token { tok: Tok::Punct(p), span });
            i += 1;
        }
    }
    out
}

/// `name` written without its call's `(` ... `)` (at `span`): what to write instead.
fn not_a_call(span: Span, name: &str, example: &str) -> Diagnostic {
    Diagnostic::error(format!("`{name}` is a call: its `(` ... `)` is missing or never closed"))
        .at(span)
        .label("needs `(` ... `)`")
        .help(format!("write it like `{example}`"))
}

/// The arguments of a call whose `(` is at `open`, split at top-level commas, and the index
/// just past its `)`; `None` when no `(` is there or it never closes.
fn call_args(tokens: &[Token], open: usize) -> Option<(Vec<Vec<Token>>, usize)> {
    if !Cursor::at(tokens, open).is("(") {
        return None;
    }
    Cursor::at(tokens, open + 1).arguments(")", ROUND_SQUARE)
}

/// Whether the last token written out is the punctuation `p`.
fn follows(out: &[Token], p: &str) -> bool {
    out.last().is_some_and(|t| t.is_punct(p))
}

/// Replace every use of a handle: method calls by what they mean, an argument by `0`.
fn uses(tokens: Vec<Token>, handles: &HashMap<String, Handle>) -> Result<Vec<Token>, Diagnostic> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let w = t.word();
        let here = Cursor::at(&tokens, i);
        // cg::sync(cta)
        if w == Some("cg::sync") {
            let Some((args, end)) = call_args(&tokens, i + 1) else {
                return Err(not_a_call(t.span, "cg::sync", "cg::sync(cta)"));
            };
            let h = match &args[..] {
                [a] if a.len() == 1 => a[0].word().and_then(|n| handles.get(n)).copied(),
                _ => None,
            };
            let Some(h) = h else { return Err(outside(t.span, "`cg::sync` of this group")) };
            out.extend(sync_tokens(h, t.span));
            i = end;
            continue;
        }
        // handle.method(args)
        // (After a type word it is the parameter `int g` that stands for the handle.)
        if let Some(name) = w
            && let Some(&h) = handles.get(name)
            && !follows(&out, ".")
            && out.last().is_none_or(|t| t.word().is_none())
        {
            if here.is_at(1, ".")
                && let Some(method) = here.word_at(2)
                && let Some((args, end)) = call_args(&tokens, i + 3)
            {
                let span = t.span.to(tokens[end - 1].span);
                out.extend(method_call(h, method, args, span)?);
                i = end;
                continue;
            }
            if (follows(&out, "(") || follows(&out, ",")) && (here.is_at(1, ",") || here.is_at(1, ")")) {
                out.push(Token { tok: Tok::Int(0, Scalar::I32), span: t.span });
                i += 1;
                continue;
            }
            return Err(Diagnostic::error(format!("the simulator takes the group `{name}` only in calls like `{name}.sync()`"))
                .at(t.span)
                .help("call its methods (`sync`, `thread_rank`, `size`, shuffles) or pass it to a __device__ function as an argument")
                .outside_subset("cooperative groups (this use of a group)"));
        }
        if let Some(w) = w
            && let Some(rest) = w.strip_prefix("cg::")
        {
            return Err(outside(t.span, &format!("`{rest}`")));
        }
        out.push(t.clone());
        i += 1;
    }
    Ok(out)
}

fn method_call(h: Handle, method: &str, args: Vec<Vec<Token>>, span: Span) -> Result<Vec<Token>, Diagnostic> {
    let arity = |n: usize| -> Result<(), Diagnostic> {
        if args.len() == n {
            Ok(())
        } else {
            Err(Diagnostic::error(format!("`{method}` takes {n} argument{}", if n == 1 { "" } else { "s" }))
                .at(span)
                .help(format!("e.g. `g.{method}({})`", ["", "v", "v, 1"][n.min(2)])))
        }
    };
    let paren = |mut v: Vec<Token>| {
        v.insert(0, Token { tok: Tok::Punct("("), span });
        v.push(Token { tok: Tok::Punct(")"), span });
        v
    };
    let mut out = Vec::new();
    match (h, method) {
        (_, "sync") => {
            arity(0)?;
            out = sync_tokens(h, span);
        }
        (Handle::Block, "thread_rank") => {
            arity(0)?;
            out = rank_tokens(span);
        }
        (Handle::Tile(n), "thread_rank") => {
            arity(0)?;
            out.push(Token { tok: Tok::Punct("("), span });
            out.extend(rank_tokens(span));
            out.extend(code(&format!("% {n})"), span));
        }
        (Handle::Block, "size" | "num_threads") => {
            arity(0)?;
            out = code("(blockDim.x * blockDim.y * blockDim.z)", span);
        }
        (Handle::Tile(n), "size" | "num_threads") => {
            arity(0)?;
            out = code(&format!("{n}"), span);
        }
        (Handle::Tile(n), "meta_group_rank") => {
            arity(0)?;
            out.push(Token { tok: Tok::Punct("("), span });
            out.extend(rank_tokens(span));
            out.extend(code(&format!("/ {n})"), span));
        }
        (Handle::Tile(n), "meta_group_size") => {
            arity(0)?;
            out = code(&format!("((blockDim.x * blockDim.y * blockDim.z + {}) / {n})", n - 1), span);
        }
        (Handle::Block, "group_index") => {
            arity(0)?;
            out = code("blockIdx", span);
        }
        (Handle::Block, "thread_index") => {
            arity(0)?;
            out = code("threadIdx", span);
        }
        (Handle::Block, "group_dim" | "dim_threads") => {
            arity(0)?;
            out = code("blockDim", span);
        }
        (Handle::Tile(n), m @ ("shfl" | "shfl_down" | "shfl_up" | "shfl_xor")) => {
            arity(2)?;
            let f = match m {
                "shfl" => "__shfl_sync",
                "shfl_down" => "__shfl_down_sync",
                "shfl_up" => "__shfl_up_sync",
                _ => "__shfl_xor_sync",
            };
            out = code(&format!("{f}(0xffffffff, "), span);
            let mut args = args.into_iter();
            out.extend(paren(args.next().expect("two")));
            out.push(Token { tok: Tok::Punct(","), span });
            out.extend(paren(args.next().expect("two")));
            out.extend(code(&format!(", {n})"), span));
        }
        (Handle::Tile(32), m @ ("any" | "all" | "ballot")) => {
            arity(1)?;
            out = code(&format!("__{m}_sync(0xffffffff, "), span);
            out.extend(paren(args.into_iter().next().expect("one")));
            out.push(Token { tok: Tok::Punct(")"), span });
        }
        (_, m) => return Err(outside(span, &format!("`.{m}()` on this group"))),
    }
    Ok(out)
}
