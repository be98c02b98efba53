//! Reading the learner's kernel around a finding, to name the likely mistake in its advice: the
//! `i <= n` that lets an index reach `n`, the loop that steps by `blockDim.x` alone.
//!
//! These are plain scans of the kernel's own source text (a finding's span leads to it), only
//! ever used to choose and word advice. Each looks for a pattern that involves the names of the
//! access the finding is about; when none is found the advice stays general rather than guess.

use std::ops::Range;

/// A piece of the learner's code: where it starts in its source text, and the code itself with
/// its spaces tidied (`i <= n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub at: usize,
    pub text: String,
}

/// `text` with comments blanked out byte for byte, so that offsets still match.
fn without_comments(text: &str) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                b[i] = b' ';
                i += 1;
            }
        } else if b[i] == b'/' && b[i + 1] == b'*' {
            let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
            for c in &mut b[i..end] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
            i = end;
        } else if b[i] == b'"' {
            // A printf format may hold anything: blank it to the closing quote.
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                for c in b.iter_mut().skip(i).take(n) {
                    *c = b' ';
                }
                i += n;
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    b
}

/// The function around byte `pos`: from the `__global__` or `__device__` before it to the next one.
fn function_around(code: &[u8], pos: usize) -> Range<usize> {
    let pos = pos.min(code.len());
    let starts = |i: usize| code[i..].starts_with(b"__global__") || code[i..].starts_with(b"__device__");
    let start = (0..pos).rev().find(|&i| starts(i)).unwrap_or(0);
    let end = (pos..code.len()).find(|&i| starts(i)).unwrap_or(code.len());
    start..end
}

/// Whether the access at `pos` is made by one thread of each block: the nearest `if` before it,
/// on its line or the line above, tests a thread index against 0 (`if (threadIdx.x == 0)`,
/// `if (tid == 0)` with `tid` taken from `threadIdx`, Python's `if tid == 0:`).
pub fn one_thread_a_block(text: &str, pos: usize) -> bool {
    let code = without_comments(text);
    let pos = pos.min(code.len());
    let code = String::from_utf8_lossy(&code);
    let line_start = |p: usize| code[..p].rfind('\n').map_or(0, |n| n + 1);
    let this_line = line_start(pos);
    let from = if this_line == 0 { 0 } else { line_start(this_line - 1) };
    let Some(at) = code[from..pos].rfind("if").map(|n| from + n) else { return false };
    let cond_end = code[at..pos].find(['{', ':', '\n']).map_or(pos, |n| at + n);
    let cond = &code[at + 2..cond_end];
    if !cond.contains("== 0") {
        return false;
    }
    let thread_index = |name: &str| {
        name == "threadIdx"
            || definitions(text, at, &[name]).iter().any(|d| identifiers(&d.text).contains(&"threadIdx"))
    };
    identifiers(cond).into_iter().any(thread_index)
}

/// Whether the kernel around byte `pos` never uses its block's index: a `__global__` function
/// whose code has no `blockIdx` (nor a grid-wide helper), so every block computes the same
/// indices. `None` when the code is not a kernel's (a `__device__` function may be handed the
/// index by its caller).
pub fn kernel_ignores_block(text: &str, pos: usize) -> Option<bool> {
    let code = without_comments(text);
    let range = function_around(&code, pos);
    let body = &code[range];
    if !body.starts_with(b"__global__") {
        return None;
    }
    let mentions = |word: &[u8]| {
        body.windows(word.len()).enumerate().any(|(i, w)| {
            w == word && (i == 0 || !is_ident(body[i - 1])) && body.get(i + word.len()).is_none_or(|&c| !is_ident(c))
        })
    };
    Some(!(mentions(b"blockIdx") || mentions(b"this_grid") || mentions(b"grid_group")))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifiers in `s` (not numbers, not members after a `.`: `blockDim.x` gives `blockDim`).
pub fn identifiers(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let member = start > 0 && b[start - 1] == b'.';
            if !b[start].is_ascii_digit() && !member {
                out.push(&s[start..i]);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The index of an access, `i + 1` for `x[i + 1]` (the text inside its brackets).
pub fn index_text(access: &str) -> &str {
    match (access.find('['), access.rfind(']')) {
        (Some(a), Some(b)) if a < b => access[a + 1..b].trim(),
        _ => "",
    }
}

/// An operator at `b[i..]` that ends an operand: `;` `,` `{` `}` `?` `:` `&&` `||` or an
/// assignment's `=`.
fn ends_operand(b: &[u8], i: usize) -> bool {
    let c = b[i];
    let prev = if i > 0 { b[i - 1] } else { b' ' };
    let next = b.get(i + 1).copied().unwrap_or(b' ');
    match c {
        b';' | b',' | b'{' | b'}' | b'?' => true,
        b':' => prev != b':' && next != b':',
        b'&' => next == b'&' || prev == b'&',
        b'|' => next == b'|' || prev == b'|',
        b'=' => {
            !matches!(prev, b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^')
                && next != b'='
        }
        _ => false,
    }
}

/// The operand that ends at `end` (exclusive), scanning left to where it starts.
fn operand_before(b: &[u8], range_start: usize, end: usize) -> usize {
    let mut depth = 0usize;
    let mut i = end;
    while i > range_start {
        let c = b[i - 1];
        match c {
            b')' | b']' => depth += 1,
            b'(' | b'[' if depth == 0 => return i,
            b'(' | b'[' => depth -= 1,
            _ if depth == 0 && ends_operand(b, i - 1) => return i,
            _ => {}
        }
        i -= 1;
    }
    i
}

/// The operand that starts at `start`, scanning right to where it ends (exclusive).
fn operand_after(b: &[u8], start: usize, range_end: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < range_end {
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' if depth == 0 => return i,
            b')' | b']' => depth -= 1,
            _ if depth == 0 && ends_operand(b, i) => return i,
            _ => {}
        }
        i += 1;
    }
    i
}

fn tidy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The inclusive comparison (`i <= n`, `n >= i`) in the function around `pos` that involves one
/// of `names`: the nearest before `pos`, else the nearest after it (a `do ... while`). The
/// learner's likely off-by-one when an index reached exactly the length.
pub fn inclusive_bound(text: &str, pos: usize, names: &[&str]) -> Option<Found> {
    let code = without_comments(text);
    let range = function_around(&code, pos);
    let mut found: Vec<Found> = Vec::new();
    for i in range.clone() {
        if i + 1 >= range.end || code[i + 1] != b'=' || !matches!(code[i], b'<' | b'>') {
            continue;
        }
        // `<<=` and `>>=` are shifts; `->=` is nothing C has; `<==` neither.
        if i > range.start && matches!(code[i - 1], b'<' | b'>' | b'-' | b'=') {
            continue;
        }
        if code.get(i + 2) == Some(&b'=') {
            continue;
        }
        let lo = operand_before(&code, range.start, i);
        let hi = operand_after(&code, i + 2, range.end);
        let (lhs, rhs) = (tidy(&code[lo..i]), tidy(&code[i + 2..hi]));
        if lhs.is_empty() || rhs.is_empty() {
            continue;
        }
        let cond = format!("{lhs} {}= {rhs}", code[i] as char);
        if identifiers(&cond).iter().any(|n| names.contains(n)) {
            found.push(Found { at: lo + (code[lo..i].len() - code[lo..i].trim_ascii_start().len()), text: cond });
        }
    }
    let before = found.iter().rev().find(|f| f.at < pos).cloned();
    before.or_else(|| found.into_iter().find(|f| f.at >= pos))
}

/// `i <= n` as it should read: `i < n` (and `n >= i` as `n > i`).
pub fn exclusive(cond: &str) -> String {
    cond.replacen("<=", "<", 1).replacen(">=", ">", 1)
}

/// A loop step in the function around `pos` that adds `blockDim` or `gridDim` alone to one of
/// `names` (`i += blockDim.x`): the stride of a grid-stride loop that is one block, or one
/// thread per block, instead of the whole grid. Gives the step and the axis (`x`).
pub fn partial_grid_stride(text: &str, pos: usize, names: &[&str]) -> Option<(Found, char)> {
    let code = without_comments(text);
    let range = function_around(&code, pos);
    for i in range.clone() {
        if i + 1 >= range.end || code[i] != b'+' || code[i + 1] != b'=' || (i > 0 && code[i - 1] == b'+') {
            continue;
        }
        let lo = operand_before(&code, range.start, i);
        let hi = operand_after(&code, i + 2, range.end);
        let (var, mut step) = (tidy(&code[lo..i]), tidy(&code[i + 2..hi]));
        if !names.contains(&var.as_str()) {
            continue;
        }
        // A step held in a variable (`int stride = blockDim.x;`, or Python's `range` step as
        // gridlab lowers it) is judged, and said, by what the variable holds.
        if identifiers(&step) == [step.as_str()]
            && let [.., last] = assignments(&code, i, &step).as_slice()
        {
            step = last.text.clone();
        }
        let words = identifiers(&step);
        let (block, grid) = (words.contains(&"blockDim"), words.contains(&"gridDim"));
        if block != grid {
            let axis = step
                .split_once("Dim.")
                .and_then(|(_, rest)| rest.chars().next())
                .filter(|c| matches!(c, 'x' | 'y' | 'z'))
                .unwrap_or('x');
            let at = lo + (code[lo..i].len() - code[lo..i].trim_ascii_start().len());
            return Some((Found { at, text: format!("{var} += {step}") }, axis));
        }
    }
    None
}

/// The condition of the `if` whose then or else branch holds the line at `pos` (C's `if (...)`,
/// Python's `if ...:` or `elif ...:`), and where that `if` starts; found by indentation, upward
/// from the line, stopping at a loop or the function's head. `None` when the line is in no
/// branch.
pub fn enclosing_branch(text: &str, pos: usize) -> Option<(String, usize)> {
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let idx = starts.iter().rposition(|&s| s <= pos)?;
    let line = |i: usize| text[starts[i]..].split('\n').next().unwrap_or("");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let condition = |l: &str| -> Option<String> {
        let t = l.trim_start().trim_start_matches('}').trim_start();
        let t = t.strip_prefix("else").map(str::trim_start).unwrap_or(t);
        if let Some(rest) = t.strip_prefix("elif ") {
            return Some(rest.trim_end().trim_end_matches(':').trim().to_string());
        }
        let rest = t.strip_prefix("if")?;
        if let Some(inner) = rest.trim_start().strip_prefix('(') {
            // C: up to the parenthesis that closes the condition.
            let mut depth = 1;
            for (i, ch) in inner.char_indices() {
                depth += match ch {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    return Some(inner[..i].trim().to_string());
                }
            }
            return None;
        }
        rest.starts_with(' ').then(|| rest.trim().trim_end_matches(':').trim().to_string())
    };
    // `if (x[i] < 0) x[i] = 0;` on the line itself.
    if let Some(c) = condition(line(idx)) {
        return Some((c, starts[idx] + indent(line(idx))));
    }
    // C says its blocks with braces, however it is indented.
    if let Some(found) = braced_branch(text, pos) {
        return found;
    }
    let mut below = indent(line(idx));
    let mut in_else = false;
    for j in (0..idx).rev() {
        let l = line(j);
        let t = l.trim();
        if t.is_empty() || t.starts_with("//") || t.starts_with('#') || t == "{" || t == "}" {
            continue;
        }
        if indent(l) >= below && !(in_else && indent(l) == below) {
            continue;
        }
        let bare = t.trim_start_matches('}').trim_start();
        if bare.starts_with("else") && !bare.starts_with("else if") {
            // The else of an `if` at this indentation, further up.
            in_else = true;
            below = indent(l);
            continue;
        }
        if in_else
            && indent(l) == below
            && !(bare.starts_with("if") || bare.starts_with("else if") || t.starts_with("elif"))
        {
            continue;
        }
        return condition(l).map(|c| (c, starts[j] + indent(l)));
    }
    None
}

/// [`enclosing_branch`] by C's braces: `Some(None)` when the block around `pos` is not a branch
/// (a loop, the function), `None` when there is no brace to go by.
fn braced_branch(text: &str, pos: usize) -> Option<Option<(String, usize)>> {
    let b = text.as_bytes();
    // The `{` that opens the block around `pos`, or that closes just before `at`.
    let opening = |from: usize| {
        let mut depth = 0;
        (0..from).rev().find(|&k| match b[k] {
            b'}' => {
                depth += 1;
                false
            }
            b'{' if depth == 0 => true,
            b'{' => {
                depth -= 1;
                false
            }
            _ => false,
        })
    };
    let open = opening(pos.min(b.len()))?;
    let head = text[..open].trim_end();
    let if_before = |head: &str| -> Option<(String, usize)> {
        let close = head.len().checked_sub(1).filter(|&k| head.as_bytes()[k] == b')')?;
        let mut depth = 0;
        let start = (0..=close).rev().find(|&k| {
            match head.as_bytes()[k] {
                b')' => depth += 1,
                b'(' => depth -= 1,
                _ => {}
            }
            depth == 0
        })?;
        let word = head[..start].trim_end();
        let kw = word.len().checked_sub(2).filter(|&k| &word[k..] == "if")?;
        (kw == 0 || !word.as_bytes()[kw - 1].is_ascii_alphanumeric() && word.as_bytes()[kw - 1] != b'_')
            .then(|| (head[start + 1..close].trim().to_string(), kw))
    };
    if let Some(found) = if_before(head) {
        return Some(Some(found));
    }
    if let Some(before_else) = head.strip_suffix("else") {
        // `} else {`: the `if` before the then-block that closes there.
        let then_close = before_else.trim_end();
        if then_close.ends_with('}') {
            let then_open = opening(then_close.len() - 1)?;
            return Some(if_before(text[..then_open].trim_end()));
        }
    }
    Some(None)
}

/// The built-in names a kernel's index is made of, which no guard bounds.
const BUILTINS: [&str; 4] = ["threadIdx", "blockIdx", "blockDim", "gridDim"];

/// The right-hand sides of the assignments to `name` before `pos` in the function around it
/// (`i / rows` for `int r = i / rows;`), with where each starts.
fn assignments(code: &[u8], pos: usize, name: &str) -> Vec<Found> {
    let range = function_around(code, pos);
    let mut out = Vec::new();
    for at in range.start..pos.min(range.end) {
        if code[at] != b'=' || !ends_operand(code, at) {
            continue;
        }
        let lo = operand_before(code, range.start, at);
        let lhs = tidy(&code[lo..at]);
        if lhs.rsplit([' ', '*']).next() != Some(name) {
            continue;
        }
        let hi = operand_after(code, at + 1, range.end);
        let lead = code[lo..at].len() - code[lo..at].trim_ascii_start().len();
        out.push(Found { at: lo + lead, text: tidy(&code[at + 1..hi]) });
    }
    out
}

/// A row-major index (`row * cols + col`, as the access or a variable it reads computes it)
/// whose column nothing keeps below the row's width: a column past the end of a row lands on the
/// next row's first elements. Gives the column, the width and the row.
pub fn unguarded_column(text: &str, pos: usize, index: &str) -> Option<(String, String, String)> {
    let code = without_comments(text);
    let mut candidates = vec![index.to_string()];
    for name in identifiers(index) {
        candidates.extend(assignments(&code, pos, name).into_iter().map(|a| a.text));
    }
    candidates.iter().find_map(|expr| {
        let (product, col) = expr.rsplit_once('+')?;
        let (row, width) = product.split_once('*')?;
        let (row, width, col) = (row.trim(), width.trim(), col.trim());
        let plain = |s: &str| identifiers(s).len() == 1 && identifiers(s)[0] == s;
        if !(plain(row) && plain(width) && plain(col)) {
            return None;
        }
        // A guard that names the column (`col < cols`) keeps it in its row.
        if guard(text, pos, &[col]).is_some() {
            return None;
        }
        // The column is the thread's place along x (`blockIdx.x * blockDim.x + threadIdx.x`),
        // not a remainder that already wraps it (`i % cols`).
        let def = assignments(&code, pos, col).into_iter().next()?.text;
        let words = identifiers(&def);
        if !(words.contains(&"threadIdx") || words.contains(&"blockIdx")) || def.contains(['%', '/']) {
            return None;
        }
        Some((col.to_string(), width.to_string(), row.to_string()))
    })
}

/// Which of `names` the function around `pos` computes itself before `pos` (`int i = ...`, a
/// loop's `i = 0`): the index's variables, as against the bounds it is given (`n`, `cols`).
pub fn locals<'a>(text: &str, pos: usize, names: &[&'a str]) -> Vec<&'a str> {
    let code = without_comments(text);
    names.iter().copied().filter(|n| !assignments(&code, pos, n).is_empty()).collect()
}

/// What the variables in `names` are computed from, through the assignments before `pos` in
/// the function around it (`int r = i / rows;` makes `r` depend on `i` and `rows`), only those
/// the function computes itself (see [`locals`]), built-ins and `names` left out.
pub fn sources_of(text: &str, pos: usize, names: &[&str]) -> Vec<String> {
    let code = without_comments(text);
    let mut seen: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut i = 0;
    while i < seen.len() {
        let name = seen[i].clone();
        for a in assignments(&code, pos, &name) {
            for n in identifiers(&a.text) {
                if !BUILTINS.contains(&n) && !seen.iter().any(|o| o == n) && !assignments(&code, pos, n).is_empty() {
                    seen.push(n.to_string());
                }
            }
        }
        i += 1;
    }
    seen.split_off(names.len())
}

/// A comparison in an `if`, `while` or `for` condition that bounds an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    /// The comparison, tidied (`i > n`), and where it starts.
    pub found: Found,
    /// The comparison operator: `<`, `<=`, `>` or `>=`.
    pub op: String,
    /// Whether the index is on the left of it (`i > n`, not `n < i`).
    pub index_left: bool,
    /// An `if (...) return;` (or `continue`, `break`): the threads it holds leave, so the
    /// condition says which indices are out rather than which are in.
    pub exit: bool,
}

impl Guard {
    /// Whether the index equal to the bound passes: `if (i > n) return;` and `if (i <= n)` let
    /// `i == n` through.
    pub fn lets_bound_through(&self) -> bool {
        let strict = !self.op.ends_with('=');
        if self.exit { strict } else { !strict }
    }

    /// The comparison as it should read to keep the index below the bound: `i >= n` for an
    /// exit, `i < n` for one that guards.
    pub fn fixed(&self) -> String {
        let op = self.op.as_str();
        let new = match (op, self.exit) {
            (">", true) => ">=",
            ("<", true) => "<=",
            ("<=", false) => "<",
            (">=", false) => ">",
            _ => op,
        };
        self.found.text.replacen(op, new, 1)
    }
}

/// The nearest comparison before `pos`, in the function around it, that sits in the condition
/// of an `if`, `while` or `for` and involves one of `names`: the guard the learner wrote for an
/// access (`if (i > n) return;`, `if (i < n)`).
pub fn guard(text: &str, pos: usize, names: &[&str]) -> Option<Guard> {
    let code = without_comments(text);
    let range = function_around(&code, pos);
    let mut best = None;
    let end = pos.min(range.end);
    let mut i = range.start;
    while i < end {
        let c = code[i];
        if !matches!(c, b'<' | b'>') {
            i += 1;
            continue;
        }
        let prev = if i > range.start { code[i - 1] } else { b' ' };
        let next = code.get(i + 1).copied().unwrap_or(b' ');
        // `<<`, `>>`, `->`, `<<<` are not comparisons.
        if matches!(next, b'<' | b'>') || matches!(prev, b'<' | b'>' | b'-') {
            i += 1;
            continue;
        }
        let eq = next == b'=';
        let op_len = if eq { 2 } else { 1 };
        let lo = operand_before(&code, range.start, i);
        let hi = operand_after(&code, i + op_len, range.end);
        let (lhs, rhs) = (tidy(&code[lo..i]), tidy(&code[i + op_len..hi]));
        i += op_len;
        if lhs.is_empty() || rhs.is_empty() {
            continue;
        }
        let left = identifiers(&lhs).iter().any(|n| names.contains(n));
        let right = identifiers(&rhs).iter().any(|n| names.contains(n));
        if left == right {
            continue;
        }
        // The condition it sits in: the `(` that opens it, preceded by `if`, `while` or `for`.
        let Some(open) = condition_open(&code, range.start, lo) else { continue };
        let close = matching_close(&code, open, range.end);
        let after = tidy(&code[(close + 1).min(range.end)..range.end]);
        let after = after.trim_start_matches('{').trim_start();
        let exit = ["return", "continue", "break"].iter().any(|w| {
            after.strip_prefix(w).is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_alphanumeric()))
        });
        let op = format!("{}{}", c as char, if eq { "=" } else { "" });
        let at = lo + (code[lo..i - op_len].len() - code[lo..i - op_len].trim_ascii_start().len());
        best = Some(Guard { found: Found { at, text: format!("{lhs} {op} {rhs}") }, op, index_left: left, exit });
    }
    best
}

/// The `(` of the `if`, `while` or `for` condition that the operand starting at `lo` is in.
fn condition_open(code: &[u8], start: usize, lo: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut k = lo;
    while k > start {
        k -= 1;
        match code[k] {
            b')' => depth += 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' => {
                let before = tidy(&code[start..k]);
                let word = before.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
                return matches!(word, "if" | "while" | "for").then_some(k);
            }
            // Out of the block the comparison is in: no condition around it.
            b'{' | b'}' if depth == 0 => return None,
            // A `;` may be a `for`'s: its condition follows the first one.
            _ => {}
        }
    }
    None
}

/// The `)` that closes the `(` at `open`, or `end`.
fn matching_close(code: &[u8], open: usize, end: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().take(end).skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    end
}

/// A loop whose body holds two accesses with a barrier between them and none after the later
/// one: the barrier orders them within an iteration, but nothing keeps a thread's write of the
/// next iteration from coming before another thread's read of this one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBarrier {
    /// Where the loop's `for` or `while` starts.
    pub loop_at: usize,
    /// The barrier between the two accesses.
    pub barrier_at: usize,
}

/// See [`LoopBarrier`]: `a` and `b` are the byte offsets of the two accesses.
pub fn barrier_only_inside_loop(text: &str, a: usize, b: usize) -> Option<LoopBarrier> {
    let code = without_comments(text);
    let (lo, hi) = (a.min(b), a.max(b));
    let (loop_at, _, end) = innermost_loop(&code, lo, hi)?;
    let barriers: Vec<usize> = (lo..end).filter(|&k| word_at(&code, k, b"__syncthreads")).collect();
    let between = barriers.iter().copied().find(|&k| k < hi)?;
    if barriers.iter().any(|&k| k > hi) {
        return None;
    }
    Some(LoopBarrier { loop_at, barrier_at: between })
}

/// Two accesses inside one loop whose body has no barrier at all (a tree reduction's
/// `s[tid] += s[tid + stride]` with the `__syncthreads()` left out): each pass reads what the
/// last one wrote, so the barrier belongs at the end of the body. Where the loop starts and
/// where its body ends (its `}`), as byte offsets.
pub fn loop_without_barrier(text: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let code = without_comments(text);
    let (loop_at, brace, end) = innermost_loop(&code, a.min(b), a.max(b))?;
    let any = (brace..end).any(|k| word_at(&code, k, b"__syncthreads"));
    (!any).then_some((loop_at, end))
}

fn word_at(code: &[u8], i: usize, w: &[u8]) -> bool {
    code[i..].starts_with(w)
        && (i == 0 || !is_ident(code[i - 1]))
        && code.get(i + w.len()).is_none_or(|&c| !is_ident(c))
}

/// The innermost `for` or `while` whose braced body holds `lo..hi`: where it starts, its `{`
/// and its `}`.
fn innermost_loop(code: &[u8], lo: usize, hi: usize) -> Option<(usize, usize, usize)> {
    let range = function_around(code, lo);
    let mut inner: Option<(usize, usize, usize)> = None;
    for i in range.start..lo {
        if !(word_at(code, i, b"for") || word_at(code, i, b"while")) {
            continue;
        }
        let Some(open) = (i..range.end).find(|&k| code[k] == b'(') else { continue };
        let close = matching_close(code, open, range.end);
        let Some(brace) = (close + 1..range.end).find(|&k| !code[k].is_ascii_whitespace()) else { continue };
        if code[brace] != b'{' {
            continue;
        }
        let end = matching_brace(code, brace, range.end);
        if brace < lo && hi < end {
            inner = Some((i, brace, end));
        }
    }
    inner
}

/// The `}` that closes the `{` at `open`, or `end`.
fn matching_brace(code: &[u8], open: usize, end: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().take(end).skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    end
}

/// Whether the access at `at..end` is the target of a plain `=` (an overwrite, not `+=`, and
/// not a comparison): a store that does not read what it replaces.
pub fn plain_store(text: &str, end: usize) -> bool {
    let rest = text.get(end..).unwrap_or("").trim_start();
    rest.starts_with('=') && !rest.starts_with("==")
}

/// Whether the index made of `names` is computed from the thread's place alone (`threadIdx`,
/// `blockIdx`, through the kernel's own variables) and not from memory it reads (`hist[v[i]]`):
/// an index each thread is meant to own, so that two threads on one element is the index's
/// fault, not a sum that wants atomics.
pub fn index_from_thread_place(text: &str, pos: usize, names: &[&str]) -> bool {
    let code = without_comments(text);
    let mut seen: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (mut place, mut memory) = (false, false);
    let mut i = 0;
    while i < seen.len() {
        let name = seen[i].clone();
        i += 1;
        if BUILTINS.contains(&name.as_str()) || name == "cuda" {
            place |= name == "threadIdx" || name == "blockIdx" || name == "cuda";
            continue;
        }
        for a in assignments(&code, pos, &name) {
            memory |= a.text.contains('[');
            for n in identifiers(&a.text) {
                if !seen.iter().any(|o| o == n) {
                    seen.push(n.to_string());
                }
            }
        }
    }
    place && !memory
}

/// The first assignment to each of `names` before `pos` (`i = blockIdx.x + threadIdx.x`), with
/// where it starts.
pub fn definitions(text: &str, pos: usize, names: &[&str]) -> Vec<Found> {
    let code = without_comments(text);
    names
        .iter()
        .filter_map(|n| {
            let a = assignments(&code, pos, n).into_iter().next()?;
            Some(Found { at: a.at, text: format!("{n} = {}", a.text) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUARDED: &str = "__global__ void k(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i <= n) a[i] = 1.0f;\n}\n";

    #[test]
    fn a_row_major_index_whose_column_is_not_guarded() {
        let text = "__global__ void k(float *m, int rows, int cols) {\n    int row = blockIdx.y;\n    int col = threadIdx.x;\n    int idx = row * cols + col;\n    if (idx < rows * cols) m[idx] = 0.0f;\n}\n";
        let pos = text.find("m[idx]").unwrap();
        assert_eq!(
            unguarded_column(text, pos, "idx"),
            Some(("col".to_string(), "cols".to_string(), "row".to_string()))
        );
        let guarded = text.replace("if (idx < rows * cols)", "if (row < rows && col < cols)");
        let pos = guarded.find("m[idx]").unwrap();
        assert_eq!(unguarded_column(&guarded, pos, "idx"), None);
    }

    #[test]
    fn finds_the_inclusive_bound_that_involves_the_index() {
        let pos = GUARDED.find("a[i]").unwrap();
        let f = inclusive_bound(GUARDED, pos, &["i"]).unwrap();
        assert_eq!(f.text, "i <= n");
        assert_eq!(&GUARDED[f.at..f.at + 6], "i <= n");
        assert_eq!(exclusive(&f.text), "i < n");
        // Not about the access's names: nothing.
        assert_eq!(inclusive_bound(GUARDED, pos, &["j"]), None);
    }

    #[test]
    fn loop_conditions_and_compound_conditions() {
        let text = "__global__ void k(float *a, int n) {\n    for (int i = 0; i <= n; i++) a[i] = 1.0f;\n}";
        let pos = text.find("a[i]").unwrap();
        assert_eq!(inclusive_bound(text, pos, &["i"]).unwrap().text, "i <= n");
        let text = "__global__ void k(int *m, int rows, int cols) {\n    int r = threadIdx.y, c = threadIdx.x;\n    if (r < rows && c <= cols) m[r * cols + c] = 1;\n}";
        let pos = text.find("m[r").unwrap();
        let names = identifiers(index_text("m[r * cols + c]"));
        assert_eq!(names, vec!["r", "cols", "c"]);
        assert_eq!(inclusive_bound(text, pos, &names).unwrap().text, "c <= cols");
        let text = "__global__ void k(float *a, int n) {\n    bool ok = n >= i; // i <= n in a comment\n    if (ok) a[i] = 1;\n}";
        let pos = text.find("a[i]").unwrap();
        let f = inclusive_bound(text, pos, &["i"]).unwrap();
        assert_eq!((f.text.as_str(), exclusive(&f.text).as_str()), ("n >= i", "n > i"));
    }

    #[test]
    fn shifts_and_other_functions_are_not_comparisons() {
        let text = "__device__ int f(int i, int n) { return i <= n; }\n__global__ void k(int *a, int i) {\n    a[i] <<= 1;\n    a[i] >>= 2;\n}";
        let pos = text.find("a[i] <<=").unwrap();
        assert_eq!(inclusive_bound(text, pos, &["i"]), None);
    }

    #[test]
    fn finds_the_branch_a_line_is_in_by_indentation() {
        let c = "__global__ void k(float *x, int n) {\n    int i = threadIdx.x;\n    if (i < n) {\n        if (x[i] < 0.0f) {\n            x[i] = x[i] * x[i];\n        } else {\n            x[i] = x[i] * 0.5f;\n        }\n    }\n}";
        let at = |pat: &str| c.find(pat).unwrap();
        assert_eq!(enclosing_branch(c, at("x[i] * x[i]")).map(|b| b.0), Some("x[i] < 0.0f".into()));
        assert_eq!(enclosing_branch(c, at("x[i] * 0.5f")).map(|b| b.0), Some("x[i] < 0.0f".into()));
        assert_eq!(enclosing_branch(c, at("if (x[i]")).map(|b| b.0), Some("x[i] < 0.0f".into()));
        assert_eq!(enclosing_branch(c, at("int i")), None);
        let py = "@cuda.jit\ndef k(x, n):\n    i = cuda.grid(1)\n    if i < n:\n        if x[i] < 0:\n            x[i] = x[i] * x[i]\n        else:\n            x[i] = x[i] * 0.5\n";
        let at = |pat: &str| py.find(pat).unwrap();
        assert_eq!(enclosing_branch(py, at("x[i] * 0.5")).map(|b| b.0), Some("x[i] < 0".into()));
        let (cond, start) = enclosing_branch(py, at("x[i] * x[i]")).unwrap();
        assert_eq!((cond.as_str(), &py[start..start + 2]), ("x[i] < 0", "if"));
        // Braces say the blocks, however the lines are indented.
        let flat = c.replace("\n    ", "\n").replace("\n    ", "\n").replace("\n    ", "\n");
        let at = |pat: &str| flat.find(pat).unwrap();
        assert_eq!(enclosing_branch(&flat, at("x[i] * 0.5f")).map(|b| b.0), Some("x[i] < 0.0f".into()));
        assert_eq!(enclosing_branch(&flat, at("int i")), None);
        let looped =
            "__global__ void k(float *x) {\nif (x[0] > 0) {\nfor (int j = 0; j < 4; j++) {\nx[j] = 0;\n}\n}\n}";
        assert_eq!(enclosing_branch(looped, looped.find("x[j] = 0").unwrap()), None);
        // A loop between the line and any branch: not a branch.
        let looped = "def k(x):\n    if x[0] > 0:\n        for j in range(4):\n            x[j] = 0\n";
        assert_eq!(enclosing_branch(looped, looped.find("x[j] = 0").unwrap()), None);
    }

    #[test]
    fn finds_a_stride_of_one_block() {
        let text = "__global__ void k(float *a, int n) {\n    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) a[i] += 1.0f;\n}";
        let pos = text.find("a[i]").unwrap();
        let (f, axis) = partial_grid_stride(text, pos, &["i"]).unwrap();
        assert_eq!((f.text.as_str(), axis), ("i += blockDim.x", 'x'));
        assert_eq!(partial_grid_stride(text, pos, &["j"]), None);
        let whole = text.replace("i += blockDim.x", "i += blockDim.x * gridDim.x");
        assert_eq!(partial_grid_stride(&whole, pos, &["i"]), None);
        // Through a variable, as Python's `range(cuda.grid(1), n, cuda.blockDim.x)` is lowered.
        let held = text
            .replace("    for (int i", "    int st = blockDim.x;\n    for (int i")
            .replace("i += blockDim.x", "i += st");
        let pos_held = held.find("a[i]").unwrap();
        assert_eq!(partial_grid_stride(&held, pos_held, &["i"]).map(|(f, _)| f.text), Some("i += blockDim.x".into()));
        let whole_held = held.replace("st = blockDim.x", "st = blockDim.x * gridDim.x");
        assert_eq!(partial_grid_stride(&whole_held, pos_held, &["i"]), None);
        let grid = text.replace("i += blockDim.x", "i += gridDim.y");
        assert_eq!(
            partial_grid_stride(&grid, pos, &["i"]).map(|(f, a)| (f.text, a)),
            Some(("i += gridDim.y".into(), 'y'))
        );
    }

    #[test]
    fn a_kernel_that_never_reads_blockidx_ignores_its_block() {
        let text = "__global__ void k(float *o) {\n    int i = threadIdx.x; // not blockIdx.x\n    o[i] = 1;\n}\n";
        assert_eq!(kernel_ignores_block(text, text.find("o[i]").unwrap()), Some(true));
        let text =
            "__global__ void k(float *o) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    o[i] = 1;\n}\n";
        assert_eq!(kernel_ignores_block(text, text.find("o[i]").unwrap()), Some(false));
        let text = "__device__ void put(float *o, int i) { o[i] = 1; }\n";
        assert_eq!(kernel_ignores_block(text, text.find("o[i]").unwrap()), None);
    }

    #[test]
    fn index_and_identifiers() {
        assert_eq!(index_text("x[i + 1]"), "i + 1");
        assert_eq!(index_text("x"), "");
        assert_eq!(identifiers("blockIdx.x * blockDim.x + t2 + 3"), vec!["blockIdx", "blockDim", "t2"]);
    }
}
