//! Mutants of a Python (Numba) solution: the same kinds of wrong answer as the CUDA C ones,
//! made on Python's tokens (RustPython's lexer, which drops comments; strings are never edited). A
//! bound off by one, `<` for `<=`, a guard made `True`, `=` for `+=`, a `cuda.syncthreads()`
//! made `pass`, `cuda.threadIdx` for `cuda.blockIdx` (and `cuda.grid(1)` for the thread's index
//! in its block, `cuda.blockDim.x` for the grid's stride), a scalar parameter hard-coded, a
//! loop capped at 1024, an element read as its index, an atomic made a plain update, and
//! `math.inf` made a finite sentinel. Equivalence markers are comments:
//! `# gridlab: equivalent strictness`.

use rustpython_parser::Mode;
use rustpython_parser::Tok;
use rustpython_parser::lexer::lex;
use rustpython_parser::text_size::TextRange;

use super::{Edit, Mutant, Op};
use crate::lesson::Check;

/// A token: its text as written, and where.
#[derive(Clone, Debug)]
struct T<'a> {
    text: &'a str,
    lo: usize,
    hi: usize,
    /// The end of a logical line (a newline, an indent or a dedent).
    eol: bool,
    name: bool,
}

struct Gen<'a> {
    src: &'a str,
    toks: Vec<T<'a>>,
    out: Vec<(Op, Vec<Edit>)>,
}

const COMPARISONS: &[&str] = &["<", "<=", ">", ">="];
/// What ends an operand on the right of a comparison, at depth 0.
const ENDS: &[&str] = &[":", "and", "or", "if", "else", ",", ")", "]", "=", "<", "<=", ">", ">=", "==", "!="];

impl<'a> Gen<'a> {
    fn new(src: &'a str) -> Option<Gen<'a>> {
        let mut toks = Vec::new();
        for t in lex(src, Mode::Module) {
            let (tok, range): (Tok, TextRange) = t.ok()?;
            let (lo, hi) = (range.start().to_usize(), range.end().to_usize());
            match tok {
                Tok::Newline | Tok::Indent | Tok::Dedent | Tok::EndOfFile => {
                    toks.push(T { text: "", lo, hi: lo, eol: true, name: false })
                }
                Tok::String { .. } => toks.push(T { text: "\"\"", lo, hi, eol: false, name: false }),
                Tok::Name { .. } => toks.push(T { text: &src[lo..hi], lo, hi, eol: false, name: true }),
                _ => toks.push(T { text: &src[lo..hi], lo, hi, eol: false, name: false }),
            }
        }
        Some(Gen { src, toks, out: Vec::new() })
    }

    fn is(&self, i: usize, text: &str) -> bool {
        self.toks.get(i).is_some_and(|t| !t.eol && t.text == text)
    }

    fn edit(&mut self, op: Op, lo: usize, hi: usize, with: impl Into<String>) {
        self.out.push((op, vec![Edit { lo, hi, with: with.into() }]));
    }

    /// The last token of the expression that starts at `i` (stopping at what `ends` names, or a
    /// line's end, outside brackets).
    fn expr_end(&self, i: usize, ends: &[&str]) -> Option<usize> {
        let mut depth = 0i32;
        let mut last = None;
        for j in i..self.toks.len() {
            let t = &self.toks[j];
            if t.eol && depth == 0 {
                break;
            }
            if depth == 0 && ends.contains(&t.text) {
                break;
            }
            match t.text {
                "(" | "[" => depth += 1,
                ")" | "]" if depth == 0 => break,
                ")" | "]" => depth -= 1,
                _ => {}
            }
            last = Some(j);
        }
        last
    }

    /// `<` for `<=` and back, and the right side of a comparison plus or minus one.
    fn comparisons(&mut self) {
        for i in 0..self.toks.len() {
            let t = self.toks[i].clone();
            if t.eol || !COMPARISONS.contains(&t.text) {
                continue;
            }
            let swapped = match t.text {
                "<" => "<=",
                "<=" => "<",
                ">" => ">=",
                _ => ">",
            };
            self.edit(Op::Strictness, t.lo, t.hi, swapped);
            if let Some(end) = self.expr_end(i + 1, ENDS) {
                let (lo, hi) = (self.toks[i + 1].lo, self.toks[end].hi);
                let operand = self.source_slice(lo, hi);
                for d in ["+ 1", "- 1"] {
                    self.edit(Op::OffByOne, lo, hi, format!("({operand}) {d}"));
                }
            }
        }
    }

    /// The token ranges between `sep`s (`,`, `and`) outside brackets, in `from..=to`.
    fn split(&self, from: usize, to: usize, sep: &str) -> Vec<(usize, usize)> {
        let mut parts = Vec::new();
        let (mut start, mut depth) = (from, 0i32);
        for j in from..=to {
            match self.toks[j].text {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                t if t == sep && depth == 0 => {
                    parts.push((start, j.saturating_sub(1)));
                    start = j + 1;
                }
                _ => {}
            }
        }
        parts.push((start, to));
        parts
    }

    fn source_slice(&self, lo: usize, hi: usize) -> String {
        self.src[lo..hi].to_string()
    }

    /// A guard made always true: the condition of an `if`, `elif`, `while` or conditional
    /// expression, and each side of an `and` in it.
    fn guards(&mut self) {
        for i in 0..self.toks.len() {
            if !matches!(self.toks[i].text, "if" | "elif") || self.toks[i].eol {
                continue;
            }
            let Some(end) = self.expr_end(i + 1, &[":", "else"]) else { continue };
            let (lo, hi) = (self.toks[i + 1].lo, self.toks[end].hi);
            self.edit(Op::NoGuard, lo, hi, "True");
            // Each side of a top-level `and`.
            let sides = self.split(i + 1, end, "and");
            if sides.len() > 1 {
                for (a, b) in sides {
                    if a <= b {
                        let (lo, hi) = (self.toks[a].lo, self.toks[b].hi);
                        self.edit(Op::NoGuard, lo, hi, "True");
                    }
                }
            }
        }
    }

    /// `=` for `+=` (and the other updates), and `+=` for a plain store into an element.
    fn assigns(&mut self) {
        for i in 1..self.toks.len() {
            let t = self.toks[i].clone();
            if t.eol {
                continue;
            }
            if matches!(t.text, "+=" | "-=" | "*=" | "/=") {
                self.edit(Op::Assign, t.lo, t.hi, "=");
            } else if t.text == "=" && self.is(i - 1, "]") {
                self.edit(Op::Assign, t.lo, t.hi, "+=");
            }
        }
    }

    /// A `cuda.syncthreads()` made `pass`.
    fn syncs(&mut self) {
        for i in 0..self.toks.len().saturating_sub(4) {
            if self.is(i, "cuda")
                && self.is(i + 1, ".")
                && self.is(i + 2, "syncthreads")
                && self.is(i + 3, "(")
                && self.is(i + 4, ")")
            {
                let (lo, hi) = (self.toks[i].lo, self.toks[i + 4].hi);
                self.edit(Op::NoSync, lo, hi, "pass");
            }
        }
    }

    /// Indices and strides swapped for others a learner confuses them with.
    fn swaps(&mut self) {
        for i in 0..self.toks.len() {
            if !(self.is(i, "cuda") && self.is(i + 1, ".")) {
                continue;
            }
            let Some(t) = self.toks.get(i + 2).cloned() else { continue };
            let other = match t.text {
                "threadIdx" => Some("blockIdx"),
                "blockIdx" => Some("threadIdx"),
                "blockDim" => Some("gridDim"),
                "gridDim" => Some("blockDim"),
                _ => None,
            };
            if let Some(other) = other {
                self.edit(Op::Swap, t.lo, t.hi, other);
            }
            // `cuda.grid(1)` as the index in the block, `cuda.gridsize(1)` as one block's stride.
            if self.is(i + 3, "(") && self.is(i + 4, "1") && self.is(i + 5, ")") {
                let (lo, hi) = (self.toks[i].lo, self.toks[i + 5].hi);
                match t.text {
                    "grid" => self.edit(Op::Swap, lo, hi, "cuda.threadIdx.x"),
                    "gridsize" => self.edit(Op::Swap, lo, hi, "cuda.blockDim.x"),
                    _ => {}
                }
            }
        }
    }

    /// The kernel's scalar parameters, by position, and where its body starts.
    fn params(&self, kernel: &str) -> Option<(Vec<(usize, String)>, usize)> {
        let def = (0..self.toks.len()).find(|&i| self.is(i, "def") && self.is(i + 1, kernel))?;
        let mut params = Vec::new();
        let mut j = def + 3;
        let mut pos = 0;
        while j < self.toks.len() && !self.is(j, ")") {
            if self.toks[j].name {
                params.push((pos, self.toks[j].text.to_string()));
                pos += 1;
            }
            j += 1;
        }
        Some((params, j + 1))
    }

    /// A scalar parameter replaced, in the body, by a value the check passes for it.
    fn hard_code(&mut self, name: &str, value: &str, body: usize) {
        let edits: Vec<Edit> = (body..self.toks.len())
            .filter(|&i| self.toks[i].name && self.toks[i].text == name && !self.is(i.wrapping_sub(1), "."))
            .map(|i| Edit { lo: self.toks[i].lo, hi: self.toks[i].hi, with: value.to_string() })
            .collect();
        if !edits.is_empty() {
            self.out.push((Op::Param, edits));
        }
    }

    /// A `range(...)`'s end capped at 1024 elements, where the end depends on a parameter (a
    /// constant end, `range(16)`, is what it is).
    fn caps(&mut self, params: &[String]) {
        for i in 0..self.toks.len() {
            if !(self.is(i, "range") && self.is(i + 1, "(")) {
                continue;
            }
            let args_end = self.expr_end(i + 2, &[]);
            let Some(end) = args_end else { continue };
            // The end is the only argument, or else the second.
            let args = self.split(i + 2, end, ",");
            let (a, b) = if args.len() == 1 { args[0] } else { args[1] };
            let depends = (a..=b).any(|j| self.toks[j].name && params.iter().any(|p| p == self.toks[j].text));
            if a <= b && depends {
                let (lo, hi) = (self.toks[a].lo, self.toks[b].hi);
                let bound = self.source_slice(lo, hi);
                self.edit(Op::Cap, lo, hi, format!("min({bound}, 1024)"));
            }
        }
    }

    /// An element of an array parameter read as its index: `x[i]` on the right of `=` as `(i)`.
    fn index_for_value(&mut self, arrays: &[String]) {
        for i in 0..self.toks.len() {
            let t = self.toks[i].clone();
            if !t.name || !arrays.iter().any(|a| a == t.text) || !self.is(i + 1, "[") {
                continue;
            }
            let Some(end) = self.expr_end(i + 2, &[]) else { continue };
            if !self.is(end + 1, "]") {
                continue;
            }
            // A store (`x[i] =`, `x[i] +=`) is not a read.
            if self.toks.get(end + 2).is_some_and(|n| !n.eol && n.text.ends_with('=') && n.text != "==") {
                continue;
            }
            let index = self.source_slice(self.toks[i + 2].lo, self.toks[end].hi);
            self.edit(Op::IndexValue, t.lo, self.toks[end + 1].hi, format!("({index})"));
        }
    }

    /// `cuda.atomic.add(a, i, v)` made the plain update `a[i] += v`: lost updates.
    fn one_writers(&mut self) {
        for i in 0..self.toks.len() {
            if !(self.is(i, "cuda") && self.is(i + 2, "atomic") && self.is(i + 4, "add") && self.is(i + 5, "(")) {
                continue;
            }
            let Some(end) = self.expr_end(i + 6, &[]) else { continue };
            if !self.is(end + 1, ")") {
                continue;
            }
            if let [a, idx, v] = self.split(i + 6, end, ",").as_slice() {
                let text = |(x, y): (usize, usize)| self.source_slice(self.toks[x].lo, self.toks[y].hi);
                let with = format!("{}[{}] += {}", text(*a), text(*idx), text(*v));
                self.edit(Op::OneWriter, self.toks[i].lo, self.toks[end + 1].hi, with);
            }
        }
    }

    /// `math.inf` (and `np.inf`) made a finite sentinel.
    fn sentinels(&mut self) {
        for i in 0..self.toks.len() {
            if matches!(self.toks[i].text, "math" | "np" | "numpy") && self.is(i + 1, ".") && self.is(i + 2, "inf") {
                let (lo, hi) = (self.toks[i].lo, self.toks[i + 2].hi);
                self.edit(Op::Sentinel, lo, hi, "1e6");
            }
        }
    }
}

/// The mutants of a Python `solution` against `check`, in source order, without duplicates.
pub fn generate(solution: &str, check: &Check) -> Vec<Mutant> {
    let Some(mut g) = Gen::new(solution) else { return Vec::new() };
    g.comparisons();
    g.guards();
    g.assigns();
    g.syncs();
    g.swaps();
    let mut arrays = Vec::new();
    let mut all_params = Vec::new();
    for (kernel, _) in &check.kernels {
        let Some((params, body)) = g.params(kernel) else { continue };
        all_params.extend(params.iter().map(|(_, n)| n.clone()));
        let launches = super::launch_args(&check.body.text, kernel);
        for (pos, name) in params {
            let mut values: Vec<String> = Vec::new();
            for args in &launches {
                for v in args.get(pos).and_then(|a| super::values_of(a, check)).unwrap_or_default() {
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
            match values.first() {
                Some(v) => g.hard_code(&name, v, body),
                None => arrays.push(name),
            }
        }
    }
    g.caps(&all_params);
    g.index_for_value(&arrays);
    g.one_writers();
    g.sentinels();
    super::assemble(solution, std::mem::take(&mut g.out).into_iter().map(|(op, e)| (op, e, false)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::{Code, Config};

    fn check(body: &str, kernels: &[&str]) -> Check {
        Check {
            configs: vec![Config { line: 1, bindings: vec![("n".into(), "1000".into())] }],
            body: Code { text: body.into(), line: 1, refused: false, lang: None },
            kernels: kernels.iter().map(|k| (k.to_string(), String::new())).collect(),
        }
    }

    #[test]
    fn a_python_solution_gets_the_wrong_answers_learners_write() {
        let solution = "@cuda.jit\ndef add(x, total, n):\n    s = cuda.shared.array(256, float32)\n    # a comment: never edited < 3\n    for i in range(cuda.grid(1), n, cuda.gridsize(1)):\n        s[cuda.threadIdx.x] = x[i] if i < n else -math.inf\n        cuda.syncthreads()\n        cuda.atomic.add(total, 0, x[i])\n";
        let ms = generate(solution, &check("add<<<4, 256>>>(x, t, n)", &["add"]));
        let has = |op: Op, line: &str| ms.iter().any(|m| m.op == op && m.text.contains(line));
        assert!(has(Op::Strictness, "if i <= n else"));
        assert!(has(Op::OffByOne, "if i < (n) + 1 else"));
        assert!(has(Op::NoGuard, "x[i] if True else"));
        assert!(has(Op::Assign, "s[cuda.threadIdx.x] += x[i]"));
        assert!(has(Op::NoSync, "        pass\n"));
        assert!(has(Op::Swap, "s[cuda.blockIdx.x]"));
        assert!(has(Op::Swap, "range(cuda.threadIdx.x, n"));
        assert!(has(Op::Swap, "n, cuda.blockDim.x)"));
        assert!(has(Op::Param, "range(cuda.grid(1), 1000, cuda.gridsize(1))"));
        assert!(has(Op::Cap, "min(n, 1024)"));
        assert!(has(Op::IndexValue, "cuda.atomic.add(total, 0, (i))"));
        assert!(has(Op::OneWriter, "total[0] += x[i]"));
        assert!(has(Op::Sentinel, "else -1e6"));
        // Comments are never edited, and every mutant differs from the solution.
        assert!(ms.iter().all(|m| m.text.contains("never edited < 3") && m.text != solution));
    }

    #[test]
    fn python_markers_are_comments() {
        let (marked, unknown) = super::super::markers(
            "if x < 0:    # gridlab: equivalent strictness\n    pass  # gridlab: equivalent nonsense\n",
        );
        assert!(marked.contains(&(1, Op::Strictness)));
        assert_eq!(unknown, vec![(2, "nonsense".to_string())]);
    }
}
