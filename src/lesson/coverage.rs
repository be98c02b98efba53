//! What an exercise's check covers, for `gridlab dev check`: a check that passes the solution
//! can still accept wrong answers when its data and launches are too kind (`arange` data lets
//! `a[i] = 2 * i` through, sizes of at most 1024 let a loop capped there through, one 1-D launch
//! into a zeroed counter lets one thread writing the thread count through).
//!
//! The rules are judged on what the check really gave the exercise's kernels (the
//! [`Observed`] launches of the first simulator run of each configuration) and on the
//! solution's code (which launch axes it reads, whether it accumulates). They are written for
//! course authors in `lessons/README.md` ("What a check must cover"); the mutants of
//! [`super::mutants`] with [`super::mutants::Op::covers`] are the wrong answers each rule keeps
//! out.

use std::collections::BTreeSet;

use super::check::Observed;
use crate::cuda::lexer::{self, Tok, Token};

/// A value at least this large in size counts as large: beyond the sentinels learners guess
/// (`-1e6` for `-INFINITY`) and beyond what an `int` squared or summed keeps exact.
pub const LARGE: f64 = 1e6;

/// Data larger than a block (1024 threads) and a constant learners hard-code (4096 is a
/// power of two) exposes both: a size above this that is not a power of two.
pub const BEYOND: usize = 1024;

/// One thing the check does not cover: which rule, and what to add (one sentence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub rule: Rule,
    pub message: String,
}

/// The coverage rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Data that is not `arange`, some of it negative, some of it large.
    Values,
    /// A size above 1024 that is not a power of two, and above every number the task mentions.
    Sizes,
    /// Every launch axis the kernel reads, and 2-D launches for a kernel that reads none.
    Shapes,
    /// A second launch without resetting, for a kernel that accumulates into its buffers.
    Again,
}

/// The gaps of a check whose launches were `launches`, for the exercise's `kernels`, its
/// `solution` and its `task` (whose numbers a learner may hard-code).
pub fn gaps(launches: &[Observed], kernels: &[String], solution: &str, task: &str) -> Vec<Gap> {
    let mine: Vec<&Observed> = launches.iter().filter(|l| kernels.contains(&l.kernel)).collect();
    if mine.is_empty() {
        return Vec::new();
    }
    let mut gaps = Vec::new();
    let mut gap = |rule, message: String| gaps.push(Gap { rule, message });
    // Values: judged on the buffers that hold data (not one value repeated, as a counter or a
    // garbage fill does), when the check gives the kernel any.
    let data: Vec<&Vec<f64>> =
        mine.iter().flat_map(|l| l.buffers.iter().map(|(_, v)| v)).filter(|v| v.iter().any(|x| *x != v[0])).collect();
    if !data.is_empty() {
        if data.iter().all(|v| affine(v)) {
            gap(
                Rule::Values,
                "every buffer it gives the kernel is `arange`-like (each element a + b * its index), so writing the index for the element passes; give it data that is not, e.g. `random(n, seed=1) * 8 - 4`".into(),
            );
        }
        if !data.iter().any(|v| v.iter().any(|x| *x < 0.0)) {
            gap(Rule::Values, "no value it gives the kernel is negative; make some data negative".into());
        }
        if !data.iter().any(|v| v.iter().any(|x| x.abs() >= LARGE)) {
            gap(
                Rule::Values,
                format!(
                    "no value it gives the kernel is large ({LARGE:e} or more in size), so a finite sentinel or a narrow type passes; set some, e.g. `x[1] = -3e6`"
                ),
            );
        }
    }
    // Sizes: a launch's size is its largest buffer or its thread count, whichever is larger.
    let sizes: Vec<usize> = mine
        .iter()
        .map(|l| {
            let threads = l.grid.iter().chain(&l.block).map(|&d| d as usize).product::<usize>();
            l.buffers.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(threads)
        })
        .collect();
    if !sizes.iter().any(|&s| s > BEYOND && !s.is_power_of_two()) {
        gap(
            Rule::Sizes,
            format!(
                "no launch is larger than {BEYOND} (elements or threads) and not a power of two, so a loop capped at {BEYOND} or a size hard-coded to a power of two passes; add a configuration such as n = 5000"
            ),
        );
    }
    let largest = sizes.iter().copied().max().unwrap_or(0) as u64;
    let mentioned: Vec<u64> =
        super::mutants::mentioned_numbers(task).into_iter().filter(|&n| n >= largest && n > 1).collect();
    if let Some(n) = mentioned.iter().max() {
        gap(
            Rule::Sizes,
            format!(
                "the task mentions {n} and no launch is larger, so a learner who hard-codes {n} passes; add a configuration beyond it"
            ),
        );
    }
    // Shapes: each axis the solution reads must vary in some launch; a kernel that reads none
    // may be launched with any shape, and must be launched with a 2-D one.
    let axes = axes_read(solution);
    // Where every launch has one shape the task fixes it (`<<<1, 1>>>`); where the check
    // varies it, the kernel must be right for every shape.
    let shapes: BTreeSet<([u32; 3], [u32; 3])> = mine.iter().map(|l| (l.grid, l.block)).collect();
    if axes.is_empty() {
        if shapes.len() > 1
            && !mine.iter().any(|l| l.grid[1..].iter().any(|&d| d > 1) && l.block[1..].iter().any(|&d| d > 1))
        {
            gap(
                Rule::Shapes,
                "the kernel reads no thread or block index and the check varies its launch, so it may be launched with any shape; launch it once with a 2-D or 3-D grid and block, e.g. `<<<(3, 2), (32, 4)>>>`, or one thread counting `gridDim.x * blockDim.x` passes".into(),
            );
        }
    } else {
        for (base, axis) in &axes {
            let i = (axis.as_bytes()[0] - b'x') as usize;
            let block_side = base == "threadIdx" || base == "blockDim";
            let varies = mine.iter().any(|l| if block_side { l.block[i] > 1 } else { l.grid[i] > 1 });
            if !varies {
                let what = if block_side { "blocks" } else { "grids" };
                gap(
                    Rule::Shapes,
                    format!(
                        "the solution reads `{base}.{axis}` but no launch has {what} larger than 1 in {axis}; add a launch that does"
                    ),
                );
            }
        }
    }
    if accumulates(solution) && !mine.iter().any(|l| l.again) {
        gap(
            Rule::Again,
            "the kernel updates its buffers from what they held (an atomic, `+=`, `*=`), so state can leak from one launch to the next; launch it a second time without resetting them and expect what two launches give".into(),
        );
    }
    gaps
}

/// Whether `v[i] = a + b * i` for every `i` (within rounding), as `arange`, `linspace` and
/// their scalings are.
fn affine(v: &[f64]) -> bool {
    if v.len() < 3 {
        return true;
    }
    let (a, b) = (v[0], v[1] - v[0]);
    v.iter().enumerate().all(|(i, x)| {
        let want = a + b * i as f64;
        (x - want).abs() <= 1e-4 * want.abs().max(1.0)
    })
}

fn tokens(solution: &str) -> Vec<Token> {
    lexer::lex(0, solution)
        .map(|t| t.into_iter().filter(|t| !matches!(t.tok, Tok::Directive(_))).collect())
        .unwrap_or_default()
}

fn ident(toks: &[Token], i: usize) -> Option<&str> {
    match toks.get(i) {
        Some(Token { tok: Tok::Ident(s), .. }) => Some(s),
        _ => None,
    }
}

fn punct(toks: &[Token], i: usize, p: &str) -> bool {
    matches!(toks.get(i), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
}

/// The launch built-ins the solution reads, `("threadIdx", "y")`.
pub fn axes_read(solution: &str) -> BTreeSet<(String, String)> {
    let toks = tokens(solution);
    let mut axes = BTreeSet::new();
    for i in 0..toks.len() {
        if let Some(base) = ident(&toks, i).filter(|b| ["threadIdx", "blockIdx", "blockDim", "gridDim"].contains(b))
            && punct(&toks, i + 1, ".")
            && let Some(axis) = ident(&toks, i + 2).filter(|a| ["x", "y", "z"].contains(a))
        {
            axes.insert((base.to_string(), axis.to_string()));
        }
    }
    axes
}

/// Whether the solution updates memory from what it held: an atomic, or a compound assignment
/// (`+=`, `*=` ...), `++` or `--` on an element or through a pointer (a local accumulator
/// does not count).
pub fn accumulates(solution: &str) -> bool {
    const COMPOUND: &[&str] = &["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"];
    let toks = tokens(solution);
    let shared: BTreeSet<&str> = (0..toks.len())
        .filter(|&i| ident(&toks, i) == Some("__shared__"))
        .filter_map(|i| (i + 1..toks.len()).find(|&j| punct(&toks, j + 1, "[")).and_then(|j| ident(&toks, j)))
        .collect();
    (0..toks.len()).any(|i| {
        if ident(&toks, i).is_some_and(|n| n.starts_with("atomic")) && punct(&toks, i + 1, "(") {
            return true;
        }
        if !COMPOUND.iter().any(|p| punct(&toks, i, p)) || i == 0 || !punct(&toks, i - 1, "]") {
            return false;
        }
        // The array the element belongs to: the name before the first `[` of its chain.
        let mut depth = 0i32;
        let mut j = i - 1;
        loop {
            if punct(&toks, j, "]") {
                depth += 1;
            } else if punct(&toks, j, "[") {
                depth -= 1;
                if depth == 0 && !punct(&toks, j - 1, "]") {
                    return ident(&toks, j - 1).is_some_and(|n| !shared.contains(n));
                }
            }
            if j == 0 {
                return false;
            }
            j -= 1;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, grid: [u32; 3], block: [u32; 3], buffers: &[Vec<f64>], again: bool) -> Observed {
        Observed {
            kernel: kernel.into(),
            grid,
            block,
            buffers: buffers.iter().enumerate().map(|(i, v)| (format!("b{i}"), v.clone())).collect(),
            again,
        }
    }

    const SCALE: &str = "__global__ void k(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) a[i] = a[i] * 2.0f;\n}\n";

    fn rules(g: &[Gap]) -> Vec<Rule> {
        g.iter().map(|g| g.rule).collect()
    }

    #[test]
    fn arange_data_small_sizes_and_one_shape_are_gaps() {
        let arange: Vec<f64> = (0..1000).map(f64::from).collect();
        let g = gaps(&[launch("k", [4, 1, 1], [256, 1, 1], &[arange], false)], &["k".into()], SCALE, "");
        assert_eq!(rules(&g), vec![Rule::Values, Rule::Values, Rule::Values, Rule::Sizes], "{g:?}");
        assert!(g[0].message.contains("arange"), "{g:?}");
    }

    #[test]
    fn varied_negative_large_data_of_an_odd_size_covers_a_1d_kernel() {
        let data: Vec<f64> = (0..5000).map(|i| ((i * 7919) % 1000) as f64 - 500.0).chain([-3e6]).collect();
        let g = gaps(&[launch("k", [20, 1, 1], [256, 1, 1], &[data], false)], &["k".into()], SCALE, "");
        assert!(g.is_empty(), "{g:?}");
        // Another kernel's launches do not count.
        let g =
            gaps(&[launch("other", [20, 1, 1], [256, 1, 1], &[vec![1.0, 5.0, 2.0]], false)], &["k".into()], SCALE, "");
        assert!(g.is_empty(), "{g:?}");
    }

    #[test]
    fn a_number_the_task_mentions_must_be_exceeded() {
        let data: Vec<f64> = (0..3000).map(|i| ((i * 7919) % 1000) as f64 - 2e6).collect();
        let l = [launch("k", [12, 1, 1], [256, 1, 1], &[data], false)];
        let g = gaps(&l, &["k".into()], SCALE, "It is launched on 4096 elements.");
        assert_eq!(rules(&g), vec![Rule::Sizes], "{g:?}");
        assert!(g[0].message.contains("4096"), "{g:?}");
    }

    #[test]
    fn a_shape_agnostic_accumulating_kernel_needs_a_2d_launch_and_a_second_one() {
        let count = "__global__ void count(int *c) {\n    atomicAdd(&c[0], 1);\n}\n";
        let zero = vec![0.0];
        let one_d = launch("count", [37, 1, 1], [100, 1, 1], std::slice::from_ref(&zero), false);
        let small = launch("count", [1, 1, 1], [32, 1, 1], std::slice::from_ref(&zero), false);
        let g = gaps(&[one_d.clone(), small], &["count".into()], count, "");
        assert_eq!(rules(&g), vec![Rule::Shapes, Rule::Again], "{g:?}");
        // One shape only: the task fixes it (`<<<1, 1>>>`), and no other is asked for.
        let g = gaps(std::slice::from_ref(&one_d), &["count".into()], count, "");
        assert_eq!(rules(&g), vec![Rule::Again], "{g:?}");
        let two_d = launch("count", [3, 5, 1], [7, 4, 1], std::slice::from_ref(&zero), true);
        assert!(gaps(&[one_d, two_d], &["count".into()], count, "").is_empty());
    }

    #[test]
    fn axes_the_solution_reads_must_vary() {
        let k = "__global__ void k(float *m) {\n    m[threadIdx.y * blockDim.x + threadIdx.x] = 1.0f;\n}\n";
        let l = [launch("k", [1, 1, 1], [2000, 1, 1], &[], false)];
        let g = gaps(&l, &["k".into()], k, "");
        assert_eq!(rules(&g), vec![Rule::Shapes], "{g:?}");
        assert!(g[0].message.contains("threadIdx.y"), "{g:?}");
    }

    #[test]
    fn what_accumulates() {
        assert!(accumulates("__global__ void k(float *a) { a[threadIdx.x] *= 2.0f; }"));
        assert!(accumulates("__global__ void k(float *a) { atomicMax((int *)a, 1); }"));
        assert!(!accumulates("__global__ void k(float *a) { float t = 0; t += 1.0f; a[0] = t; }"));
        assert!(!accumulates(
            "__global__ void k(float *a) { __shared__ float s[32]; s[threadIdx.x] += 1.0f; a[0] = s[0]; }"
        ));
        assert!(accumulates("__global__ void k(float *m) { m[1][threadIdx.x] += 1.0f; }"));
    }
}
