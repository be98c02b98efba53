//! Mutants of an exercise's solution, for `gridlab dev check --mutants`: the wrong answers a
//! learner plausibly writes, made mechanically so that a course author need not guess them.
//!
//! Each mutant is the solution with one small edit at the token level (gridlab's own CUDA lexer
//! finds the tokens, so comments, strings and `#define` lines are never edited): a comparison
//! bound off by one, `<` for `<=`, a bounds guard dropped, `=` for `+=`, a `__syncthreads()`
//! dropped, an initialisation dropped, an index or stride swapped for another in scope, a scalar
//! parameter hard-coded to the value a check passes, a loop bound hard-coded. A check that lets
//! one pass (a "surviving" mutant) accepts a wrong answer. Some edits change nothing (`i < n` and
//! `i != n` in a loop that steps by one); the author marks such a mutant *equivalent* with a
//! comment on the line it edits: `// gridlab: equivalent strictness`.

mod python;

pub use python::generate as generate_python;

use std::collections::BTreeSet;
use std::fmt;

use super::Check;
use crate::cuda::lexer::{self, Tok, Token};

/// At most this many mutants per exercise are run, chosen evenly over all of them (the same
/// ones every time), so that `dev check --mutants` stays fast on a small CI machine.
pub const MAX_PER_EXERCISE: usize = 72;

/// The kinds of edit; their names are what an equivalence marker lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// A comparison's right side plus or minus one (`i < n` to `i < n + 1`).
    OffByOne,
    /// `<` and `<=`, `>` and `>=` swapped.
    Strictness,
    /// A guard made always true: `if (i < n)` to `if (1)`, one side of `&&`, a `?:` condition.
    NoGuard,
    /// `+=` (or another compound assignment) for `=`, and `=` for `+=`.
    Assign,
    /// A `__syncthreads();` dropped.
    NoSync,
    /// An initialisation dropped: `float acc = 0.0f;` to `float acc;`, or a write into a
    /// `__shared__` array.
    NoInit,
    /// An index or stride swapped for another in scope (`blockIdx.x` for `threadIdx.x`,
    /// `blockDim.x` for `blockDim.x * gridDim.x`, one `int` variable for another).
    Swap,
    /// A scalar parameter replaced everywhere by a value the check passes for it.
    Param,
    /// A loop bound replaced by the constant it has in one configuration.
    LoopBound,
    /// A loop over elements capped at 1024: `i < n` to `i < min(n, 1024)`, the loop of a learner
    /// who thinks no launch is larger than one block.
    Cap,
    /// The index written where the element belongs: `a[i] * 2` to `(i) * 2`, `a[i] *= s` to
    /// `a[i] = (i) * s`. Only data that is not `arange` tells them apart.
    IndexValue,
    /// An `atomicAdd(p, v)` replaced by one thread writing `v * gridDim.x * blockDim.x`: right
    /// for one 1-D launch into a zeroed counter, wrong for a 2-D grid or a second launch.
    OneWriter,
    /// A size hard-coded: a bound that uses a scalar parameter replaced by a constant (1024,
    /// 4096, a number the task mentions), and each store into a parameter guarded by one, as
    /// with `#define N 4096`.
    HardSize,
    /// A finite sentinel for an infinite one: `-INFINITY` (or `FLT_MAX`, `INT_MIN`) to `-1e6f`.
    Sentinel,
}

impl Op {
    pub const ALL: [Op; 14] = [
        Op::OffByOne,
        Op::Strictness,
        Op::NoGuard,
        Op::Assign,
        Op::NoSync,
        Op::NoInit,
        Op::Swap,
        Op::Param,
        Op::LoopBound,
        Op::Cap,
        Op::IndexValue,
        Op::OneWriter,
        Op::HardSize,
        Op::Sentinel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::OffByOne => "off-by-one",
            Op::Strictness => "strictness",
            Op::NoGuard => "no-guard",
            Op::Assign => "assign",
            Op::NoSync => "no-sync",
            Op::NoInit => "no-init",
            Op::Swap => "swap",
            Op::Param => "param",
            Op::LoopBound => "loop-bound",
            Op::Cap => "cap",
            Op::IndexValue => "index-for-value",
            Op::OneWriter => "one-writer",
            Op::HardSize => "hard-size",
            Op::Sentinel => "sentinel",
        }
    }

    /// Whether the kind tests what a check's data and launches cover (values that are not
    /// `arange`, sizes beyond a constant, a second launch, a 2-D grid, values beyond a
    /// sentinel) rather than the solution's code: such mutants are never left out by sampling.
    pub fn covers(self) -> bool {
        matches!(self, Op::Cap | Op::IndexValue | Op::OneWriter | Op::HardSize | Op::Sentinel)
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One mutant: the whole solution with one edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    pub op: Op,
    /// The line of the solution (1-based, within the block) where the edit starts.
    pub line: u32,
    /// The mutated solution.
    pub text: String,
    /// Whether the author marked it equivalent (`// gridlab: equivalent OP` on its line).
    pub equivalent: bool,
    /// Whether what makes it wrong is a read of uninitialised memory (a dropped
    /// initialisation, `+=` into a `__shared__` array never written before): only a simulator
    /// that reports such reads can tell it from the solution, as a GPU's garbage would.
    pub reads_uninit: bool,
}

impl Mutant {
    /// The lines that differ, unified-diff style, numbered as in the lesson file whose
    /// solution block starts at `first_line`.
    pub fn diff(&self, original: &str, path: &str, first_line: u32) -> String {
        let old: Vec<&str> = original.lines().collect();
        let new: Vec<&str> = self.text.lines().collect();
        let start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let common_tail = old[start..].iter().rev().zip(new[start..].iter().rev()).take_while(|(a, b)| a == b).count();
        let mut out = format!("@@ {path}:{} @@ {}\n", first_line + start as u32, self.op);
        for l in &old[start..old.len() - common_tail] {
            out.push_str(&format!("-{l}\n"));
        }
        for l in &new[start..new.len() - common_tail] {
            out.push_str(&format!("+{l}\n"));
        }
        out
    }
}

/// The `(line, op)` pairs the solution marks equivalent: `// gridlab: equivalent OP [OP...]`
/// at the end of a line marks that line's mutants of those kinds. Unknown names are returned
/// as errors (`line`, `name`) so that a misspelt marker does not silently mark nothing.
pub fn markers(solution: &str) -> (BTreeSet<(u32, Op)>, Vec<Unknown>) {
    let mut marked = BTreeSet::new();
    let mut unknown = Vec::new();
    for (i, line) in solution.lines().enumerate() {
        // `// gridlab: equivalent ...` in CUDA C, `# gridlab: equivalent ...` in Python.
        let Some((_, rest)) =
            line.split_once("// gridlab: equivalent").or_else(|| line.split_once("# gridlab: equivalent"))
        else {
            continue;
        };
        for name in rest.split([' ', ',', '\t']).filter(|s| !s.is_empty()) {
            match Op::parse(name) {
                Some(op) => {
                    marked.insert((i as u32 + 1, op));
                }
                None => unknown.push((i as u32 + 1, name.to_string())),
            }
        }
    }
    (marked, unknown)
}

/// A solution as a learner sees it: without the author's `// gridlab: equivalent ...` markers,
/// which speak to `dev check --mutants`, not to someone reading the code.
pub fn without_markers(solution: &str) -> String {
    let mut out = String::with_capacity(solution.len());
    for line in solution.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let kept = body
            .split_once("// gridlab: equivalent")
            .or_else(|| body.split_once("# gridlab: equivalent"))
            .map_or(body, |(code, _)| code.trim_end());
        out.push_str(kept);
        out.push_str(end);
    }
    out
}

/// A name in an equivalence marker that is no kind of mutant: its line, and the name.
pub type Unknown = (u32, String);

/// One edit: replace bytes `lo..hi` with `with`.
#[derive(Clone, Debug)]
struct Edit {
    lo: usize,
    hi: usize,
    with: String,
}

struct Gen<'a> {
    text: &'a str,
    toks: Vec<Token>,
    out: Vec<(Op, Vec<Edit>, bool)>,
}

const TYPES: &[&str] =
    &["int", "float", "double", "unsigned", "long", "short", "char", "bool", "size_t", "half", "const", "auto"];
const COMPARISONS: &[&str] = &["<", "<=", ">", ">=", "==", "!="];
const COMPOUND: &[&str] = &["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="];

impl Gen<'_> {
    fn lo(&self, i: usize) -> usize {
        self.toks[i].span.lo as usize
    }
    fn hi(&self, i: usize) -> usize {
        self.toks[i].span.hi as usize
    }
    fn punct(&self, i: usize, p: &str) -> bool {
        matches!(self.toks.get(i), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }
    fn ident(&self, i: usize) -> Option<&str> {
        match self.toks.get(i) {
            Some(Token { tok: Tok::Ident(s), .. }) => Some(s),
            _ => None,
        }
    }
    fn push(&mut self, op: Op, edits: Vec<Edit>) {
        self.out.push((op, edits, op == Op::NoInit));
    }
    fn replace(&mut self, op: Op, from: usize, to: usize, with: impl Into<String>) {
        let (lo, hi) = (self.lo(from), self.hi(to));
        self.push(op, vec![Edit { lo, hi, with: with.into() }]);
    }

    /// The last token of the operand that starts at `i`, going right, stopping before an
    /// operator that binds less tightly than a comparison (or the end of the expression); with
    /// `whole`, only before `&&` and what binds less tightly than it.
    fn operand_end(&self, i: usize, whole: bool) -> Option<usize> {
        const ENDS: &[&str] = &[")", "]", "}", ";", ",", "&&", "||", "?", ":", "{", "=", "+=", "-=", "*=", "/="];
        const LOOSER: &[&str] = &["<", "<=", ">", ">=", "==", "!=", "&", "|", "^"];
        let mut depth = 0i32;
        let mut last = None;
        for j in i..self.toks.len() {
            if let Tok::Punct(p) = self.toks[j].tok {
                if depth == 0 && (ENDS.contains(&p) || (!whole && LOOSER.contains(&p))) {
                    break;
                }
                match p {
                    "(" | "[" => depth += 1,
                    ")" | "]" => depth -= 1,
                    _ => {}
                }
            }
            if matches!(self.toks[j].tok, Tok::Directive(_)) {
                break;
            }
            last = Some(j);
        }
        last
    }

    /// The first token of the operand that ends at `i`, going left (see [`Gen::operand_end`]).
    fn operand_start(&self, i: usize) -> Option<usize> {
        const STOP: &[&str] = &["(", "[", "{", "}", ";", ",", "&&", "||", "?", ":", "=", "+=", "-=", "return"];
        let mut depth = 0i32;
        let mut first = None;
        for j in (0..=i).rev() {
            if let Tok::Punct(p) = self.toks[j].tok {
                if depth == 0 && STOP.contains(&p) {
                    break;
                }
                match p {
                    ")" | "]" => depth += 1,
                    "(" | "[" => depth -= 1,
                    _ => {}
                }
            }
            if self.ident(j) == Some("return") || matches!(self.toks[j].tok, Tok::Directive(_)) {
                break;
            }
            first = Some(j);
        }
        first
    }

    /// The index of the `)` matching the `(` at `open`.
    fn matching(&self, open: usize) -> Option<usize> {
        let mut depth = 0;
        for j in open..self.toks.len() {
            if self.punct(j, "(") {
                depth += 1;
            } else if self.punct(j, ")") {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
        None
    }

    fn comparisons(&mut self) {
        for i in 0..self.toks.len() {
            let Tok::Punct(p) = self.toks[i].tok else { continue };
            if !COMPARISONS.contains(&p) {
                continue;
            }
            let swapped = match p {
                "<" => Some("<="),
                "<=" => Some("<"),
                ">" => Some(">="),
                ">=" => Some(">"),
                _ => None,
            };
            if let Some(s) = swapped {
                self.replace(Op::Strictness, i, i, s);
            }
            if let Some(end) = self.operand_end(i + 1, false) {
                let at = self.hi(end);
                for d in [" + 1", " - 1"] {
                    self.push(Op::OffByOne, vec![Edit { lo: at, hi: at, with: d.into() }]);
                }
            }
        }
    }

    fn guards(&mut self) {
        for i in 0..self.toks.len() {
            if self.ident(i) == Some("if")
                && self.punct(i + 1, "(")
                && let Some(close) = self.matching(i + 1)
            {
                self.replace(Op::NoGuard, i + 1, close, "(1)");
            }
            if self.punct(i, "?")
                && i > 0
                && let Some(start) = self.operand_start(i - 1)
            {
                // `c ? a : b` keeps its shape; the condition is always true.
                self.replace(Op::NoGuard, start, i - 1, "1");
            }
            if self.punct(i, "&&") && i > 0 {
                if let Some(start) = self.operand_start(i - 1) {
                    self.replace(Op::NoGuard, start, i - 1, "1");
                }
                if let Some(end) = self.operand_end(i + 1, true) {
                    self.replace(Op::NoGuard, i + 1, end, "1");
                }
            }
        }
    }

    fn declares(&self, i: usize) -> bool {
        // `int x = ...`, `float *p = ...`, `int a = 1, b = 2` (the `b`).
        let mut j = i;
        while j > 0 && self.punct(j - 1, "*") {
            j -= 1;
        }
        j > 0
            && (self.ident(j - 1).is_some_and(|t| TYPES.contains(&t))
                || (self.punct(j - 1, ",") && self.statement_declares(j - 1)))
    }

    /// Whether the statement holding token `i` starts with a type (a declaration).
    fn statement_declares(&self, i: usize) -> bool {
        let mut j = i;
        let mut depth = 0i32;
        while j > 0 {
            j -= 1;
            match &self.toks[j].tok {
                Tok::Punct(")") => depth += 1,
                Tok::Punct("(") if depth == 0 => return self.ident(j + 1).is_some_and(|t| TYPES.contains(&t)),
                Tok::Punct("(") => depth -= 1,
                Tok::Punct(";" | "{" | "}") if depth == 0 => {
                    return self.ident(j + 1).is_some_and(|t| TYPES.contains(&t) || t == "__shared__");
                }
                _ => {}
            }
        }
        self.ident(0).is_some_and(|t| TYPES.contains(&t))
    }

    fn assigns(&mut self) {
        let shared = self.shared_arrays();
        for i in 1..self.toks.len() {
            let Tok::Punct(p) = self.toks[i].tok else { continue };
            if COMPOUND.contains(&p) {
                self.replace(Op::Assign, i, i, "=");
            } else if p == "=" {
                let target_end = i - 1;
                if self.punct(target_end, "]") || (self.ident(target_end).is_some() && !self.declares(target_end)) {
                    self.replace(Op::Assign, i, i, "+=");
                    // `s[tid] += ...` reads shared memory nothing wrote yet.
                    let array = (0..i).rev().find(|&j| {
                        self.punct(j, ";") || self.punct(j, "{") || self.punct(j, "}") || self.punct(j, ")")
                    });
                    let array = self.ident(array.map_or(0, |j| j + 1));
                    if array.is_some_and(|a| shared.contains(a))
                        && let Some(last) = self.out.last_mut()
                    {
                        last.2 = true;
                    }
                }
            }
        }
    }

    fn syncs(&mut self) {
        for i in 0..self.toks.len() {
            if self.ident(i) == Some("__syncthreads") && self.punct(i + 1, "(") && self.punct(i + 2, ")") {
                let end = if self.punct(i + 3, ";") { i + 3 } else { i + 2 };
                self.replace(Op::NoSync, i, end, "");
            }
        }
    }

    fn inits(&mut self) {
        let shared = self.shared_arrays();
        for i in 1..self.toks.len() {
            // `float acc = 0.0f;` and `int count = 0;`: the accumulator starts unset.
            let zero = match self.toks.get(i + 1).map(|t| &t.tok) {
                Some(Tok::Int(v, _)) => *v == 0,
                Some(Tok::Float(f, _)) => *f == 0.0,
                _ => false,
            };
            if zero
                && self.punct(i, "=")
                && self.ident(i - 1).is_some()
                && self.declares(i - 1)
                && (self.punct(i + 2, ";") || self.punct(i + 2, ","))
            {
                let (lo, hi) = (self.hi(i - 1), self.hi(i + 1));
                self.push(Op::NoInit, vec![Edit { lo, hi, with: String::new() }]);
            }
            // `float t[8] = {0};` (or `= {}`): the local array starts unset.
            if self.punct(i, "]") && self.punct(i + 1, "=") && self.punct(i + 2, "{") {
                let zero = match self.toks.get(i + 3).map(|t| &t.tok) {
                    Some(Tok::Int(v, _)) => *v == 0,
                    Some(Tok::Float(f, _)) => *f == 0.0,
                    _ => false,
                };
                let close = if zero { i + 4 } else { i + 3 };
                if self.punct(close, "}") && self.punct(close + 1, ";") {
                    let (lo, hi) = (self.hi(i), self.hi(close));
                    self.push(Op::NoInit, vec![Edit { lo, hi, with: String::new() }]);
                }
            }
            // `s[tid] = ...;` as a statement of its own, into a `__shared__` array: dropped.
            if self.ident(i).is_some_and(|n| shared.contains(n))
                && (self.punct(i - 1, ";")
                    || self.punct(i - 1, "{")
                    || self.punct(i - 1, "}")
                    || self.punct(i - 1, ")"))
                && self.punct(i + 1, "[")
            {
                let end = (i..self.toks.len()).find(|&j| self.punct(j, ";"));
                let eq = (i..end.unwrap_or(i)).find(|&j| self.punct(j, "="));
                if let (Some(end), Some(_)) = (end, eq) {
                    self.replace(Op::NoInit, i, end, ";");
                }
            }
        }
    }

    fn shared_arrays(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for i in 0..self.toks.len() {
            if self.ident(i) == Some("__shared__") {
                let mut j = i + 1;
                while self.ident(j).is_some() && !self.punct(j + 1, "[") {
                    j += 1;
                }
                if let Some(n) = self.ident(j) {
                    names.insert(n.to_string());
                }
            }
        }
        names
    }

    fn builtin(&self, i: usize) -> Option<(&str, &str)> {
        let base = self.ident(i)?;
        if !["threadIdx", "blockIdx", "blockDim", "gridDim"].contains(&base) || !self.punct(i + 1, ".") {
            return None;
        }
        Some((base, self.ident(i + 2)?))
    }

    fn swaps(&mut self, scalar_params: &[String]) {
        let two_d = (0..self.toks.len()).any(|i| self.builtin(i).is_some_and(|(_, a)| a == "y"));
        for i in 0..self.toks.len() {
            let Some((base, axis)) = self.builtin(i) else { continue };
            let (base, axis) = (base.to_string(), axis.to_string());
            // `blockDim.x * gridDim.x`: the stride of one block only.
            if base == "blockDim"
                && self.punct(i + 3, "*")
                && self.builtin(i + 4).is_some_and(|(b, a)| b == "gridDim" && a == axis)
            {
                self.replace(Op::Swap, i, i + 6, format!("blockDim.{axis}"));
            }
            let other = match base.as_str() {
                "threadIdx" => Some("blockIdx"),
                "blockIdx" => Some("threadIdx"),
                _ => None,
            };
            if let Some(o) = other {
                self.replace(Op::Swap, i, i + 2, format!("{o}.{axis}"));
            }
            if two_d && base != "gridDim" {
                let flip = if axis == "x" { "y" } else { "x" };
                self.replace(Op::Swap, i, i + 2, format!("{base}.{flip}"));
            }
        }
        // One `int` variable for another declared before it: the nearest two.
        let mut ints: Vec<(usize, String)> = Vec::new();
        for i in 0..self.toks.len() {
            let Some(name) = self.ident(i) else { continue };
            let declared_int = self.ident(i.wrapping_sub(1)) == Some("int")
                && (self.punct(i + 1, "=") || self.punct(i + 1, ",") || self.punct(i + 1, ";"));
            let declared_after_comma = i > 0
                && self.punct(i - 1, ",")
                && self.punct(i + 1, "=")
                && self.statement_declares(i - 1)
                && ints.last().is_some();
            if declared_int || declared_after_comma {
                ints.push((i, name.to_string()));
                continue;
            }
            if self.punct(i + 1, "(") || (i > 0 && self.punct(i - 1, ".")) {
                continue;
            }
            if ints.iter().any(|(_, n)| n == name) && !scalar_params.iter().any(|p| p == name) {
                let name = name.to_string();
                let others: Vec<String> =
                    ints.iter().rev().filter(|(_, n)| *n != name).take(2).map(|(_, n)| n.clone()).collect();
                for o in others {
                    self.replace(Op::Swap, i, i, o);
                }
            }
        }
    }

    fn params(&mut self, params: &[(String, Vec<String>)], body: usize) {
        for (name, values) in params {
            let uses: Vec<usize> = (body..self.toks.len()).filter(|&i| self.ident(i) == Some(name)).collect();
            if uses.is_empty() {
                continue;
            }
            for v in values {
                let edits =
                    uses.iter().map(|&i| Edit { lo: self.lo(i), hi: self.hi(i), with: format!("({v})") }).collect();
                self.push(Op::Param, edits);
            }
        }
    }

    fn loop_bounds(&mut self, params: &[(String, Vec<String>)]) {
        for i in 0..self.toks.len() {
            if self.ident(i) != Some("for") || !self.punct(i + 1, "(") {
                continue;
            }
            let Some(close) = self.matching(i + 1) else { continue };
            let semis: Vec<usize> = (i + 2..close).filter(|&j| self.punct(j, ";")).collect();
            let [first, second] = semis[..] else { continue };
            let Some(cmp) =
                (first + 1..second).find(|&j| matches!(self.toks[j].tok, Tok::Punct(p) if COMPARISONS.contains(&p)))
            else {
                continue;
            };
            let Some(end) = self.operand_end(cmp + 1, false) else { continue };
            let bound: Vec<usize> = (cmp + 1..=end).collect();
            let used: Vec<&(String, Vec<String>)> =
                params.iter().filter(|(p, _)| bound.iter().any(|&j| self.ident(j) == Some(p))).collect();
            let Some(configs) = used.iter().map(|(_, v)| v.len()).max() else { continue };
            let mut seen = BTreeSet::new();
            for c in 0..configs {
                // The largest bound is no mistake where the loop is guarded: a learner's
                // hard-coded bound fails only on a size beyond it, so that one is left out.
                let largest = used.iter().all(|(_, values)| {
                    let v: Vec<Option<f64>> = values.iter().map(|v| v.parse().ok()).collect();
                    let mine = v[c.min(v.len() - 1)];
                    mine.is_some() && v.iter().all(|o| o.is_some_and(|o| o <= mine.unwrap_or(f64::MAX)))
                });
                if largest {
                    continue;
                }
                let mut text = String::new();
                let mut at = self.lo(cmp + 1);
                for &j in &bound {
                    let Some((_, values)) = used.iter().find(|(p, _)| self.ident(j) == Some(p)) else { continue };
                    text.push_str(&self.text[at..self.lo(j)]);
                    text.push_str(&format!("({})", values[c.min(values.len() - 1)]));
                    at = self.hi(j);
                }
                text.push_str(&self.text[at..self.hi(end)]);
                if seen.insert(text.clone()) {
                    self.replace(Op::LoopBound, cmp + 1, end, format!("({text})"));
                }
            }
        }
    }
}

impl Gen<'_> {
    /// The index of the `]` matching the `[` at `open`.
    fn matching_bracket(&self, open: usize) -> Option<usize> {
        let mut depth = 0;
        for j in open..self.toks.len() {
            if self.punct(j, "[") {
                depth += 1;
            } else if self.punct(j, "]") {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
        None
    }

    /// The last token of the statement that starts at `i`: its `;`, or the `}` closing a block.
    fn statement_end(&self, i: usize) -> Option<usize> {
        let mut depth = 0i32;
        for j in i..self.toks.len() {
            match self.toks[j].tok {
                Tok::Punct("(" | "[" | "{") => depth += 1,
                Tok::Punct(")" | "]") => depth -= 1,
                Tok::Punct("}") => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j);
                    }
                }
                Tok::Punct(";") if depth == 0 => return Some(j),
                _ => {}
            }
        }
        None
    }

    /// `for (...; i < E; ...)` over the elements of an array (`i` indexes one in the loop's
    /// body) and `E` not a constant: `i < min(E, 1024)`.
    fn caps(&mut self, constants: &BTreeSet<String>) {
        for i in 0..self.toks.len() {
            if self.ident(i) != Some("for") || !self.punct(i + 1, "(") {
                continue;
            }
            let Some(close) = self.matching(i + 1) else { continue };
            let semis: Vec<usize> = (i + 2..close).filter(|&j| self.punct(j, ";")).collect();
            let [first, second] = semis[..] else { continue };
            let Some(cmp) = (first + 1..second).find(|&j| ["<", "<=", "!="].iter().any(|p| self.punct(j, p))) else {
                continue;
            };
            let Some(var) = self.ident(cmp - 1).map(str::to_string) else { continue };
            let Some(end) = self.operand_end(cmp + 1, false) else { continue };
            let varies = (cmp + 1..=end).any(|j| self.ident(j).is_some_and(|n| !constants.contains(n)));
            let Some(body_end) = self.statement_end(close + 1) else { continue };
            let mut depth = 0i32;
            let indexes = (close + 1..=body_end).any(|j| {
                match self.toks[j].tok {
                    Tok::Punct("[") => depth += 1,
                    Tok::Punct("]") => depth -= 1,
                    _ => {}
                }
                depth > 0 && self.ident(j) == Some(var.as_str())
            });
            if varies && indexes {
                let bound = self.text[self.lo(cmp + 1)..self.hi(end)].to_string();
                self.replace(Op::Cap, cmp + 1, end, format!("min({bound}, 1024)"));
            }
        }
    }

    /// Whether the element access `p[...]` at `i` (its `]` at `close`) is written, not read.
    fn is_written(&self, i: usize, close: usize) -> bool {
        let after = ["=", "++", "--", "["].iter().any(|p| self.punct(close + 1, p))
            || matches!(self.toks.get(close + 1).map(|t| &t.tok), Some(Tok::Punct(p)) if COMPOUND.contains(p));
        let before = i > 0 && ["&", "++", "--", "."].iter().any(|p| self.punct(i - 1, p));
        after || before
    }

    /// An element read from a pointer parameter replaced by its index, and an in-place update
    /// `p[i] *= s` by `p[i] = (i) * s`.
    fn index_for_value(&mut self, pointers: &[String]) {
        for i in 0..self.toks.len() {
            if !self.ident(i).is_some_and(|n| pointers.iter().any(|p| p == n)) || !self.punct(i + 1, "[") {
                continue;
            }
            let Some(close) = self.matching_bracket(i + 1) else { continue };
            let index = self.text[self.lo(i + 2)..self.hi(close - 1)].to_string();
            if !self.is_written(i, close) {
                self.replace(Op::IndexValue, i, close, format!("({index})"));
                continue;
            }
            if let Some(Tok::Punct(p)) = self.toks.get(close + 1).map(|t| &t.tok)
                && COMPOUND.contains(p)
            {
                let op = p.trim_end_matches('=').to_string();
                let at = self.hi(close + 1);
                let eq = Edit { lo: self.lo(close + 1), hi: at, with: format!("= ({index}) {op}") };
                let Some(end) = self.operand_end(close + 2, true) else { continue };
                let (lo, hi) = (self.lo(close + 2), self.hi(end));
                let rhs = Edit { lo, hi, with: format!("({})", &self.text[lo..hi]) };
                self.push(Op::IndexValue, vec![eq, rhs]);
            }
        }
    }

    /// `atomicAdd(p, v);` as a statement: one thread writes `v` times the threads of a 1-D launch.
    fn one_writers(&mut self) {
        for i in 0..self.toks.len() {
            if self.ident(i) != Some("atomicAdd") || !self.punct(i + 1, "(") || (i > 0 && self.punct(i - 1, "=")) {
                continue;
            }
            let Some(close) = self.matching(i + 1) else { continue };
            if !self.punct(close + 1, ";") {
                continue;
            }
            let mut depth = 0;
            let comma = (i + 2..close).find(|&j| {
                match self.toks[j].tok {
                    Tok::Punct("(" | "[") => depth += 1,
                    Tok::Punct(")" | "]") => depth -= 1,
                    _ => {}
                }
                depth == 0 && self.punct(j, ",")
            });
            let Some(comma) = comma else { continue };
            let addr = &self.text[self.lo(i + 2)..self.hi(comma - 1)];
            let value = &self.text[self.lo(comma + 1)..self.hi(close - 1)];
            let with =
                format!("if (threadIdx.x == 0 && blockIdx.x == 0) *({addr}) = ({value}) * gridDim.x * blockDim.x;");
            self.replace(Op::OneWriter, i, close + 1, with);
        }
    }

    /// Hard-coded sizes: a comparison's bound that uses a scalar parameter becomes each of
    /// `sizes`, and each store into a pointer parameter at the start of a statement is guarded
    /// by `index < size`.
    fn hard_sizes(&mut self, scalar_params: &[String], pointers: &[String], sizes: &[u64]) {
        for i in 0..self.toks.len() {
            let Tok::Punct(p) = self.toks[i].tok else { continue };
            if !COMPARISONS.contains(&p) {
                continue;
            }
            let Some(end) = self.operand_end(i + 1, false) else { continue };
            if (i + 1..=end).any(|j| self.ident(j).is_some_and(|n| scalar_params.iter().any(|p| p == n))) {
                for size in sizes {
                    self.replace(Op::HardSize, i + 1, end, size.to_string());
                }
            }
        }
        for i in 0..self.toks.len() {
            let starts = i == 0
                || [";", "{", "}", ")"].iter().any(|p| self.punct(i - 1, p))
                || self.ident(i - 1) == Some("else");
            if !starts || !self.ident(i).is_some_and(|n| pointers.iter().any(|p| p == n)) || !self.punct(i + 1, "[") {
                continue;
            }
            let Some(close) = self.matching_bracket(i + 1) else { continue };
            if !self.is_written(i, close) || self.punct(close + 1, "[") {
                continue;
            }
            // `out[blockIdx.x]`, one result per block: its size is the grid's, not the data's.
            let per_block = (i + 2..close).all(|j| {
                !matches!(self.toks[j].tok, Tok::Ident(_))
                    || self.builtin(j).is_some_and(|(b, _)| b == "blockIdx" || b == "gridDim")
                    || (j >= 2 && self.punct(j - 1, ".") && self.builtin(j - 2).is_some())
            });
            if per_block {
                continue;
            }
            let index = &self.text[self.lo(i + 2)..self.hi(close - 1)];
            let at = self.lo(i);
            let guards: Vec<String> = sizes.iter().map(|size| format!("if (({index}) < {size}) ")).collect();
            for with in guards {
                self.push(Op::HardSize, vec![Edit { lo: at, hi: at, with }]);
            }
        }
    }

    /// Infinite (or largest) sentinels replaced by a finite guess.
    fn sentinels(&mut self) {
        for i in 0..self.toks.len() {
            let with = match self.ident(i) {
                Some("INFINITY" | "HUGE_VALF" | "FLT_MAX" | "CUDART_INF_F") => "1e6f",
                Some("HUGE_VAL" | "DBL_MAX" | "CUDART_INF") => "1e6",
                Some("INT_MAX") => "1000000",
                Some("INT_MIN") => "(-1000000)",
                _ => continue,
            };
            self.replace(Op::Sentinel, i, i, with);
        }
    }
}

/// The names `#define NAME VALUE` gives a value in `text` (constants, not sizes a check varies).
fn defines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("#define"))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| !name.contains('('))
        .map(str::to_string)
        .collect()
}

/// The pointer parameters of `kernel`, by name.
fn pointer_params(g: &Gen<'_>, kernel: &str) -> Vec<String> {
    let Some(at) = (0..g.toks.len()).find(|&i| g.ident(i) == Some(kernel) && g.punct(i + 1, "(")) else {
        return Vec::new();
    };
    let Some(close) = g.matching(at + 1) else { return Vec::new() };
    let mut names = Vec::new();
    let mut start = at + 2;
    for j in at + 2..=close {
        if g.punct(j, ",") || j == close {
            if j > start
                && (start..j).any(|k| g.punct(k, "*"))
                && let Some(name) = g.ident(j - 1)
            {
                names.push(name.to_string());
            }
            start = j + 1;
        }
    }
    names
}

/// The sizes a hard-coded-size mutant uses: 1024 (a block's most threads), 4096, and each
/// whole number of 32 or more that the exercise's task mentions.
pub fn hard_coded_sizes(task: &str) -> Vec<u64> {
    let mut sizes = vec![1024, 4096];
    for n in mentioned_numbers(task) {
        if n >= 32 && !sizes.contains(&n) {
            sizes.push(n);
        }
    }
    sizes
}

/// The whole numbers written in `text` (`256` in "Blocks have 256 threads"; not the `16` of `x16`).
pub fn mentioned_numbers(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '.') {
        let word = word.trim_end_matches('.');
        if !word.is_empty()
            && word.chars().all(|c| c.is_ascii_digit())
            && let Ok(n) = word.parse::<u64>()
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

/// The scalar parameters of `kernel` in `toks`, by position, and the index of the token after
/// its parameter list (where its body starts).
fn kernel_params(g: &Gen<'_>, kernel: &str) -> Option<(Vec<(usize, String)>, usize)> {
    let at = (0..g.toks.len()).find(|&i| g.ident(i) == Some(kernel) && g.punct(i + 1, "("))?;
    let close = g.matching(at + 1)?;
    let mut params = Vec::new();
    let mut start = at + 2;
    let mut pos = 0;
    for j in at + 2..=close {
        if g.punct(j, ",") || j == close {
            if j > start {
                let pointer = (start..j).any(|k| g.punct(k, "*") || g.punct(k, "["));
                if !pointer && let Some(name) = g.ident(j - 1) {
                    params.push((pos, name.to_string()));
                }
            }
            pos += 1;
            start = j + 1;
        }
    }
    Some((params, close + 1))
}

/// The argument texts of each launch of `kernel` in a check body.
fn launch_args(body: &str, kernel: &str) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find(&format!("{kernel}<<<")) {
        rest = &rest[at + kernel.len() + 3..];
        let Some(end) = rest.find(">>>") else { break };
        rest = &rest[end + 3..];
        let Some(open) = rest.find('(') else { break };
        let mut depth = 0;
        let mut args = Vec::new();
        let mut cur = String::new();
        for ch in rest[open..].chars() {
            match ch {
                '(' | '[' => {
                    depth += 1;
                    if depth == 1 {
                        continue;
                    }
                }
                ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        args.push(cur.trim().to_string());
                        break;
                    }
                }
                ',' if depth == 1 => {
                    args.push(std::mem::take(&mut cur).trim().to_string());
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        all.push(args);
    }
    all
}

/// The value an argument has in each configuration, as C text: a literal as written, a
/// configuration's name as that configuration binds it; `None` for anything computed.
fn values_of(arg: &str, check: &Check) -> Option<Vec<String>> {
    let is_literal = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s).trim();
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_digit() || c == '.')
            && s.chars().filter(|&c| c == '.').count() <= 1
    };
    if is_literal(arg) {
        return Some(vec![arg.to_string()]);
    }
    let mut values = Vec::new();
    for c in &check.configs {
        let (_, expr) = c.bindings.iter().find(|(n, _)| n == arg)?;
        if !is_literal(expr) {
            return None;
        }
        if !values.contains(expr) {
            values.push(expr.clone());
        }
    }
    (!values.is_empty()).then_some(values)
}

/// The mutants of `solution` against `check`, in source order, without duplicates, at most
/// [`MAX_PER_EXERCISE`] of them (chosen evenly when there are more).
pub fn generate(solution: &str, check: &Check, sizes: &[u64]) -> Vec<Mutant> {
    let Ok(toks) = lexer::lex(0, solution) else { return Vec::new() };
    let toks: Vec<Token> = toks.into_iter().filter(|t| !matches!(t.tok, Tok::Directive(_))).collect();
    let mut g = Gen { text: solution, toks, out: Vec::new() };
    let mut scalar: Vec<(String, Vec<String>)> = Vec::new();
    let mut bodies = Vec::new();
    let mut pointers: Vec<String> = Vec::new();
    let mut scalar_names: Vec<String> = Vec::new();
    for (kernel, _) in &check.kernels {
        pointers.extend(pointer_params(&g, kernel));
        let Some((params, body)) = kernel_params(&g, kernel) else { continue };
        scalar_names.extend(params.iter().map(|(_, n)| n.clone()));
        bodies.push(body);
        let launches = launch_args(&check.body.text, kernel);
        for (pos, name) in params {
            let mut values: Vec<String> = Vec::new();
            for args in &launches {
                for v in args.get(pos).and_then(|a| values_of(a, check)).unwrap_or_default() {
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
            if !values.is_empty() {
                scalar.push((name, values));
            }
        }
    }
    g.comparisons();
    g.guards();
    g.assigns();
    g.syncs();
    g.inits();
    let names: Vec<String> = scalar.iter().map(|(n, _)| n.clone()).collect();
    g.swaps(&names);
    for body in bodies {
        g.params(&scalar, body);
    }
    g.loop_bounds(&scalar);
    g.caps(&defines(solution));
    g.index_for_value(&pointers);
    g.one_writers();
    g.hard_sizes(&scalar_names, &pointers, sizes);
    g.sentinels();
    assemble(solution, std::mem::take(&mut g.out))
}

/// Mutants from edits of `solution`: applied, deduplicated, marked equivalent where the author
/// said so, and sampled down to [`MAX_PER_EXERCISE`].
fn assemble(solution: &str, edits: Vec<(Op, Vec<Edit>, bool)>) -> Vec<Mutant> {
    let (marked, _) = markers(solution);
    let mut seen = BTreeSet::new();
    let mut mutants: Vec<Mutant> = Vec::new();
    let mut edits = edits;
    edits.sort_by_key(|(_, e, _)| e.first().map(|e| e.lo).unwrap_or(0));
    for (op, mut edits, reads_uninit) in edits {
        edits.sort_by_key(|e| std::cmp::Reverse(e.lo));
        let mut text = solution.to_string();
        for e in &edits {
            text.replace_range(e.lo..e.hi, &e.with);
        }
        if text == solution || !seen.insert(text.clone()) {
            continue;
        }
        let lo = edits.last().map(|e| e.lo).unwrap_or(0);
        let line = solution[..lo].matches('\n').count() as u32 + 1;
        let equivalent = marked.contains(&(line, op));
        mutants.push(Mutant { op, line, text, equivalent, reads_uninit });
    }
    // The marked ones all run, so that a stale marker is found, and so do the kinds that show
    // what the check's data covers (see [`Op::covers`]); the rest are sampled evenly.
    let (marked, rest): (Vec<Mutant>, Vec<Mutant>) = mutants.into_iter().partition(|m| m.equivalent || m.op.covers());
    let room = MAX_PER_EXERCISE.saturating_sub(marked.len()).max(MAX_PER_EXERCISE / 2);
    let sampled: Vec<Mutant> =
        if rest.len() > room { (0..room).map(|k| rest[k * rest.len() / room].clone()).collect() } else { rest };
    let mut mutants: Vec<Mutant> = marked.into_iter().chain(sampled).collect();
    mutants.sort_by_key(|m| m.line);
    mutants
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::{Code, Config};

    fn check(body: &str, configs: &[&[(&str, &str)]], kernel: &str) -> Check {
        Check {
            configs: configs
                .iter()
                .map(|b| Config { line: 1, bindings: b.iter().map(|(n, e)| (n.to_string(), e.to_string())).collect() })
                .collect(),
            body: Code { text: body.into(), line: 1, refused: false, lang: None },
            kernels: vec![(kernel.into(), String::new())],
        }
    }

    fn of(op: Op, src: &str, c: &Check) -> Vec<String> {
        generate(src, c, &[]).into_iter().filter(|m| m.op == op).map(|m| m.text).collect()
    }

    const SQUARE: &str = "__global__ void square(const float *x, float *out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = x[i] * x[i];\n}\n";

    fn square_check() -> Check {
        check("square<<<4, threads>>>(x, out, n)", &[&[("n", "1000")], &[("n", "1")]], "square")
    }

    #[test]
    fn comparisons_are_made_off_by_one_and_strict() {
        let c = square_check();
        let off = of(Op::OffByOne, SQUARE, &c);
        assert!(off.iter().any(|t| t.contains("if (i < n + 1)")), "{off:?}");
        assert!(off.iter().any(|t| t.contains("if (i < n - 1)")), "{off:?}");
        assert_eq!(of(Op::Strictness, SQUARE, &c).len(), 1);
        assert!(of(Op::Strictness, SQUARE, &c)[0].contains("if (i <= n)"));
    }

    #[test]
    fn guards_are_dropped_whole_and_by_conjunct_and_in_conditionals() {
        let src = "__global__ void k(float *m, int r, int c) {\n    int i = threadIdx.x;\n    if (i < r && i < c) m[i] = i < 3 ? 1.0f : 2.0f;\n}\n";
        let c = check("k<<<1, 4>>>(m, r, c)", &[&[("r", "2"), ("c", "3")]], "k");
        let g = of(Op::NoGuard, src, &c);
        assert!(g.iter().any(|t| t.contains("if (1) m[i]")), "{g:?}");
        assert!(g.iter().any(|t| t.contains("if (1 && i < c)")), "{g:?}");
        assert!(g.iter().any(|t| t.contains("if (i < r && 1)")), "{g:?}");
        assert!(g.iter().any(|t| t.contains("m[i] = 1 ? 1.0f")), "{g:?}");
    }

    #[test]
    fn assignments_swap_with_compound_ones_but_declarations_stay() {
        let src = "__global__ void k(float *y, int n) {\n    float acc = 0.0f;\n    acc += y[0];\n    y[1] = acc;\n}\n";
        let c = check("k<<<1, 1>>>(y, n)", &[&[("n", "4")]], "k");
        let a = of(Op::Assign, src, &c);
        assert!(a.iter().any(|t| t.contains("    acc = y[0];")), "{a:?}");
        assert!(a.iter().any(|t| t.contains("    y[1] += acc;")), "{a:?}");
        assert!(!a.iter().any(|t| t.contains("float acc +=")), "{a:?}");
    }

    #[test]
    fn barriers_and_initialisations_are_dropped() {
        let src = "__global__ void k(const float *x, float *out) {\n    __shared__ float s[32];\n    float acc = 0.0f;\n    acc += x[threadIdx.x];\n    s[threadIdx.x] = acc;\n    __syncthreads();\n    out[threadIdx.x] = s[31 - threadIdx.x];\n}\n";
        let c = check("k<<<1, 32>>>(x, out)", &[], "k");
        let sync = of(Op::NoSync, src, &c);
        assert_eq!(sync.len(), 1);
        assert!(!sync[0].contains("__syncthreads"));
        let init = of(Op::NoInit, src, &c);
        assert!(init.iter().any(|t| t.contains("    float acc;\n")), "{init:?}");
        assert!(init.iter().any(|t| t.contains("    ;\n    __syncthreads")), "{init:?}");
        assert!(generate(src, &c, &[]).iter().filter(|m| m.op == Op::NoInit).all(|m| m.reads_uninit));
        let local = "__global__ void k(float *out) {\n    float t[4] = {0};\n    int u[2] = {};\n    out[0] = t[1] + u[1];\n}\n";
        let init = of(Op::NoInit, local, &c);
        assert!(init.iter().any(|t| t.contains("    float t[4];\n    int u[2] = {};")), "{init:?}");
        assert!(init.iter().any(|t| t.contains("    float t[4] = {0};\n    int u[2];")), "{init:?}");
        // `+=` into a shared array nothing wrote yet reads uninitialised memory too.
        let plus: Vec<Mutant> = generate(src, &c, &[]).into_iter().filter(|m| m.op == Op::Assign).collect();
        assert!(plus.iter().any(|m| m.text.contains("s[threadIdx.x] += acc") && m.reads_uninit), "{plus:?}");
        assert!(plus.iter().any(|m| m.text.contains("out[threadIdx.x] += s") && !m.reads_uninit), "{plus:?}");
    }

    #[test]
    fn indices_strides_and_variables_are_swapped() {
        let src = "__global__ void k(float *y, int n) {\n    int stride = blockDim.x * gridDim.x;\n    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = 1.0f;\n}\n";
        let c = check("k<<<2, 32>>>(y, n)", &[&[("n", "100")]], "k");
        let s = of(Op::Swap, src, &c);
        assert!(s.iter().any(|t| t.contains("int stride = blockDim.x;")), "{s:?}");
        assert!(s.iter().any(|t| t.contains("threadIdx.x * blockDim.x + threadIdx.x")), "{s:?}");
        assert!(s.iter().any(|t| t.contains("blockIdx.x * blockDim.x + blockIdx.x")), "{s:?}");
        assert!(s.iter().any(|t| t.contains("i += i")) || s.iter().any(|t| t.contains("y[stride]")), "{s:?}");
        // 1-D kernels get no axis swaps.
        assert!(!s.iter().any(|t| t.contains(".y")), "{s:?}");
    }

    #[test]
    fn scalar_parameters_take_each_value_the_check_passes() {
        let c =
            check("square<<<4, threads>>>(x, out, n)", &[&[("n", "1000")], &[("n", "1")], &[("n", "1000")]], "square");
        let p = of(Op::Param, SQUARE, &c);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("if (i < (1000))"));
        assert!(p[1].contains("if (i < (1))"));
        // The declaration's own name is not replaced.
        assert!(p[0].contains("int n)"));
    }

    #[test]
    fn loop_bounds_become_the_constant_of_a_configuration() {
        let src = "__global__ void k(float *y, int n) {\n    for (int i = 0; i < (n + 1) / 2; i++) y[i] = 1.0f;\n}\n";
        let c = check("k<<<1, 1>>>(y, n)", &[&[("n", "10")], &[("n", "7")]], "k");
        let l = of(Op::LoopBound, src, &c);
        // Not the largest, 10: a bound too large is harmless in a guarded loop.
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(l[0].contains("i < (((7) + 1) / 2);"), "{l:?}");
    }

    #[test]
    fn equivalence_markers_mark_their_line_and_kind_only() {
        let src = "__global__ void k(float *y, int n) {\n    for (int i = 0; i < n; i++) y[i] = 1.0f; // gridlab: equivalent strictness\n    if (n > 2) y[0] = 2.0f;\n}\n";
        let c = check("k<<<1, 1>>>(y, n)", &[&[("n", "10")]], "k");
        let ms = generate(src, &c, &[]);
        assert!(ms.iter().filter(|m| m.line == 2 && m.op == Op::Strictness).all(|m| m.equivalent));
        assert!(ms.iter().filter(|m| m.op != Op::Strictness || m.line != 2).all(|m| !m.equivalent));
        assert_eq!(
            without_markers("a; // gridlab: equivalent strictness\n  b   # gridlab: equivalent off-by-one\nc;"),
            "a;\n  b\nc;"
        );
        let (_, unknown) = markers("x; // gridlab: equivalent strictnes\n");
        assert_eq!(unknown, vec![(1, "strictnes".to_string())]);
    }

    #[test]
    fn diffs_show_the_changed_line_with_the_file_line_number() {
        let c = square_check();
        let m = generate(SQUARE, &c, &[]).into_iter().find(|m| m.op == Op::Strictness).unwrap();
        assert_eq!(
            m.diff(SQUARE, "l.md", 10),
            "@@ l.md:12 @@ strictness\n-    if (i < n) out[i] = x[i] * x[i];\n+    if (i <= n) out[i] = x[i] * x[i];\n"
        );
    }

    #[test]
    fn many_mutants_are_capped_evenly_and_deterministically() {
        let mut src = String::from("__global__ void k(float *y, int n) {\n");
        for j in 0..60 {
            src.push_str(&format!("    if (n < {j}) y[{j}] = 1.0f;\n"));
        }
        src.push_str("}\n");
        let c = check("k<<<1, 1>>>(y, n)", &[], "k");
        let a = generate(&src, &c, &[]);
        assert_eq!(a.len(), MAX_PER_EXERCISE);
        assert_eq!(a, generate(&src, &c, &[]));
        assert!(a.last().unwrap().line > 50);
    }

    #[test]
    fn element_loops_are_capped_at_1024_but_constant_and_tile_loops_are_not() {
        let src = "#define T 32\n__global__ void k(float *a, int n) {\n    for (int i = 0; i < n; i++) a[i] = a[i] * 2.0f;\n    for (int j = 0; j < T; j++) a[j] = 0.0f;\n    for (int t = 0; t < (n + 15) / 16; t++) a[0] += 1.0f;\n}\n";
        let c = check("k<<<1, 1>>>(a, n)", &[&[("n", "10")]], "k");
        let m = of(Op::Cap, src, &c);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("i < min(n, 1024); i++"), "{m:?}");
    }

    #[test]
    fn element_reads_become_their_index_and_in_place_updates_write_it() {
        let src = "__global__ void k(float *a, const float *x, float s, int n) {\n    int i = threadIdx.x;\n    a[i] = x[i] * 2.0f;\n    a[i] *= s + 1.0f;\n    atomicAdd(&a[0], 1.0f);\n}\n";
        let c = check("k<<<1, 32>>>(a, x, s, n)", &[&[("n", "10"), ("s", "2")]], "k");
        let m = of(Op::IndexValue, src, &c);
        assert!(m.iter().any(|t| t.contains("a[i] = (i) * 2.0f;")), "{m:?}");
        assert!(m.iter().any(|t| t.contains("a[i] = (i) * (s + 1.0f);")), "{m:?}");
        // What is written, and an address taken, stay.
        assert!(!m.iter().any(|t| t.contains("(i) = ") || t.contains("&(0)")), "{m:?}");
        assert_eq!(m.len(), 2, "{m:?}");
    }

    #[test]
    fn an_atomic_count_becomes_one_thread_writing_the_1d_thread_count() {
        let src = "__global__ void count(int *c) {\n    atomicAdd(&c[0], 1);\n}\n";
        let c = check("count<<<b, t>>>(c)", &[], "count");
        let m = of(Op::OneWriter, src, &c);
        assert_eq!(
            m,
            vec![
                "__global__ void count(int *c) {\n    if (threadIdx.x == 0 && blockIdx.x == 0) *(&c[0]) = (1) * gridDim.x * blockDim.x;\n}\n"
            ]
        );
    }

    #[test]
    fn sizes_are_hard_coded_in_bounds_and_as_guards_on_stores() {
        let src = "__global__ void k(const float *x, float *out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = x[i];\n}\n";
        let c = check("k<<<4, 256>>>(x, out, n)", &[&[("n", "1000")]], "k");
        let m = generate(src, &c, &[1024, 4096]);
        let hard: Vec<&str> = m.iter().filter(|m| m.op == Op::HardSize).map(|m| m.text.as_str()).collect();
        assert!(hard.iter().any(|t| t.contains("if (i < 4096) out[i]")), "{hard:?}");
        assert!(hard.iter().any(|t| t.contains("if (i < n) if ((i) < 1024) out[i]")), "{hard:?}");
        assert_eq!(hard.len(), 4, "{hard:?}");
        // One result per block is sized by the grid, not by the data: no guard on it.
        let per_block =
            "__global__ void k(float *out, int n) {\n    if (threadIdx.x == 0) out[blockIdx.x] = 1.0f;\n}\n";
        assert!(!generate(per_block, &c, &[4096]).iter().any(|m| m.op == Op::HardSize), "per block");
        assert_eq!(hard_coded_sizes("Blocks have 256 threads, 16 x 16 tiles, 4096 again."), vec![1024, 4096, 256]);
    }

    #[test]
    fn infinite_sentinels_become_finite_guesses() {
        let src = "__global__ void k(float *o, int *m) {\n    o[0] = -INFINITY;\n    m[0] = INT_MIN;\n}\n";
        let c = check("k<<<1, 1>>>(o, m)", &[], "k");
        let m = of(Op::Sentinel, src, &c);
        assert!(m.iter().any(|t| t.contains("o[0] = -1e6f;")), "{m:?}");
        assert!(m.iter().any(|t| t.contains("m[0] = (-1000000);")), "{m:?}");
    }

    #[test]
    fn coverage_kinds_are_never_sampled_away() {
        let mut src = String::from("__global__ void k(float *y, const float *x, int n) {\n");
        for j in 0..60 {
            src.push_str(&format!("    if (n < {j}) y[{j}] = x[{j}];\n"));
        }
        src.push_str("}\n");
        let c = check("k<<<1, 1>>>(y, x, n)", &[], "k");
        let all = generate(&src, &c, &[4096]);
        assert_eq!(all.iter().filter(|m| m.op == Op::IndexValue).count(), 60);
    }
}
