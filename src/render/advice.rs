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
        let (var, step) = (tidy(&code[lo..i]), tidy(&code[i + 2..hi]));
        if !names.contains(&var.as_str()) {
            continue;
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

#[cfg(test)]
mod tests {
    use super::*;

    const GUARDED: &str = "__global__ void k(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i <= n) a[i] = 1.0f;\n}\n";

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
    fn finds_a_stride_of_one_block() {
        let text = "__global__ void k(float *a, int n) {\n    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) a[i] += 1.0f;\n}";
        let pos = text.find("a[i]").unwrap();
        let (f, axis) = partial_grid_stride(text, pos, &["i"]).unwrap();
        assert_eq!((f.text.as_str(), axis), ("i += blockDim.x", 'x'));
        assert_eq!(partial_grid_stride(text, pos, &["j"]), None);
        let whole = text.replace("i += blockDim.x", "i += blockDim.x * gridDim.x");
        assert_eq!(partial_grid_stride(&whole, pos, &["i"]), None);
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
