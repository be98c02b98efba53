//! Findings: what a launch did wrong, reported by a backend and drawn by `render::findings`.
//!
//! The simulator finds all of them; the GPU backend finds out-of-bounds writes near a buffer
//! through its guard regions. Each finding is already a summary: a million threads racing on
//! one element make one finding with a count and one example pair, not a million.

use crate::diag::Span;

/// What the simulator gives a read of memory nothing wrote (a [`Finding::Uninit`]), so that
/// results go visibly wrong rather than silently right: integers read the bytes `0xDEADBEEF`
/// repeated (`int` -559038737), `float` and `double` a NaN, pointers an address that traps.
pub const POISON_INT: u64 = 0xDEAD_BEEF_DEAD_BEEF;
pub const POISON_F32: u32 = 0x7FFF_FFFF;
pub const POISON_F64: u64 = 0x7FFF_FFFF_FFFF_FFFF;

/// An element as the kernel names it: `As[12][0]` for the flat index 192 of a `[16][16]`
/// array, `a[1000]` for a buffer. Past the end of an array of rows, the first index runs on
/// (`m[12][4]` for the flat 244 of a `[12][20]` array: row 12, which the array lacks), as the
/// kernel's own index said it; before the start, an index stays flat.
pub fn element_name(name: &str, index: i64, shape: &[u64]) -> String {
    if shape.len() < 2 || index < 0 || shape.contains(&0) {
        return format!("{name}[{index}]");
    }
    let mut rest = index as u64;
    let mut parts = Vec::with_capacity(shape.len());
    for (d, _) in shape.iter().enumerate() {
        let inner: u64 = shape[d + 1..].iter().product();
        parts.push(rest / inner);
        rest %= inner;
    }
    let subscripts: String = parts.iter().map(|p| format!("[{p}]")).collect();
    format!("{name}{subscripts}")
}

/// Say the elements of session buffers by their dimensions (`m[4][0]`, which Python reads as
/// `m[4, 0]`) rather than flat (`m[80]`): for a kernel that indexes its arrays that way, as a
/// Python kernel does. `shape_of` gives a buffer's dimensions by its session name (none for a
/// 1-D buffer); a buffer the kernel got as a pointer into it keeps its flat indices.
pub fn shape_buffers(findings: &mut [Finding], shape_of: impl Fn(&str) -> Option<Vec<u64>>) {
    for f in findings {
        let (memory, shape, view) = match f {
            Finding::OutOfBounds { memory, shape, view, .. } | Finding::Race { memory, shape, view, .. } => {
                (memory, shape, view.is_some())
            }
            Finding::Uninit { memory, shape, .. } | Finding::PastRow { memory, shape, .. } => (memory, shape, false),
            _ => continue,
        };
        if let (Memory::Global(name), false, true) = (&*memory, view, shape.is_empty())
            && let Some(dims) = shape_of(name)
        {
            *shape = dims;
        }
    }
}

/// A thread's place in the launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadRef {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// How many dimensions the launch's grid and block have (`<<<(3, 2), (8, 8)>>>` is
    /// `[2, 2]`), so that thread (4, 0) of a 2-D block is said `(4, 0)`, not `4`; 0 where not
    /// known (then as many as the coordinates need). The backend that names the thread sets it.
    pub ranks: [u8; 2],
}

impl ThreadRef {
    /// `block 3 thread 232`, or `block (1, 2) thread (3, 0)` for multi-dimensional launches.
    pub fn describe(&self) -> String {
        fn dim(v: [u32; 3], rank: u8) -> String {
            match (v, rank) {
                ([x, 0, 0], 0 | 1) => x.to_string(),
                ([x, y, 0], 0..=2) => format!("({x}, {y})"),
                ([x, y, z], _) => format!("({x}, {y}, {z})"),
            }
        }
        format!("block {} thread {}", dim(self.block, self.ranks[0]), dim(self.thread, self.ranks[1]))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    Read,
    Write,
    Atomic,
}

impl Access {
    pub fn verb_past(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "wrote",
            Access::Atomic => "atomically updated",
        }
    }
}

/// Which memory a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memory {
    /// A session buffer passed to the kernel, by its session name.
    Global(String),
    /// A `__shared__` array of the kernel, by its C name.
    Shared(String),
    /// A local array of one thread.
    Local(String),
    /// A local variable (a scalar) of one thread.
    Variable(String),
    /// A `__constant__` array.
    Constant(String),
}

impl Memory {
    pub fn name(&self) -> &str {
        match self {
            Memory::Global(n) | Memory::Shared(n) | Memory::Local(n) | Memory::Variable(n) | Memory::Constant(n) => n,
        }
    }

    /// `` `a` `` or `` shared array `tile` ``.
    pub fn describe(&self) -> String {
        match self {
            Memory::Global(n) => format!("`{n}`"),
            Memory::Shared(n) => format!("shared array `{n}`"),
            Memory::Local(n) => format!("local array `{n}`"),
            Memory::Variable(n) => format!("local variable `{n}`"),
            Memory::Constant(n) => format!("constant array `{n}`"),
        }
    }
}

/// One access, with who made it and where in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub thread: ThreadRef,
    pub access: Access,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// Reads or writes outside a buffer. Writes were not performed; reads returned 0.
    OutOfBounds {
        memory: Memory,
        /// The dimensions of a kernel's own array, outermost first (`[16, 16]`); empty for a
        /// buffer. Element indices are flat; `element_name` says them as the kernel does.
        shape: Vec<u64>,
        /// The kernel's own name for a buffer (its parameter), where it differs from the
        /// session's name in `memory`: what the kernel's code calls it.
        kernel_name: Option<String>,
        /// When the kernel got the buffer as one pointer into it (`p = a + 4`): that parameter
        /// and its offset in elements, so that advice can speak of the kernel's own index.
        view: Option<(String, u64)>,
        /// Threads in the launch.
        threads: u64,
        /// Elements in the memory (for the message "`a` (length 1000)").
        len: u64,
        access: Access,
        /// How many threads went out of bounds (`x[i] * x[i]` past the end is one thread).
        count: u64,
        /// Smallest and largest element index touched out of bounds.
        min_index: i64,
        max_index: i64,
        /// The first out-of-bounds access, in execution order.
        first: Site,
        /// The element index of the first access.
        first_index: i64,
    },
    /// An index into one row of a kernel's multi-dimensional array went past the row while the
    /// element it landed on was still inside the array: `s[0][9]` of a `float s[4][8]` is
    /// `s[1][1]`. C checks no dimension on its own, nor does Numba's compiled code, so on a GPU
    /// the kernel quietly uses another row's element; the simulator did the same.
    PastRow {
        memory: Memory,
        /// The array's dimensions, outermost first (`[16, 16]`); for a launch buffer, what the
        /// session knows of them (`shape_buffers`), possibly nothing.
        shape: Vec<u64>,
        /// The dimension indexed past its length (1 = the second).
        dim: usize,
        /// That dimension's length: the elements of a row.
        len: u64,
        /// Threads that did.
        count: u64,
        /// Smallest and largest index seen outside `0..shape[dim]` (indices are `i64`).
        min_index: i64,
        max_index: i64,
        /// The first such index, and where.
        first_index: i64,
        first: Site,
    },
    /// Two threads touched the same element, at least one writing, with nothing ordering them.
    Race {
        memory: Memory,
        /// The dimensions of a kernel's own array, outermost first (`[16, 16]`); empty for a
        /// buffer. Element indices are flat; `element_name` says them as the kernel does.
        shape: Vec<u64>,
        /// The kernel's own name for a buffer, as in `OutOfBounds`.
        kernel_name: Option<String>,
        /// The kernel's pointer into the buffer, as in `OutOfBounds`.
        view: Option<(String, u64)>,
        /// The element of the example pair.
        index: i64,
        /// Racing access pairs seen (for the summary's count).
        count: u64,
        /// Distinct elements this pair of source locations raced on.
        elements: u64,
        /// The example pair: the earlier access, then the later one that conflicted with it.
        first: Site,
        second: Site,
        /// The two threads of the example are lanes of one warp (a `__syncwarp()` orders them).
        same_warp: bool,
    },
    /// Reads of memory nothing had written yet: a `__shared__` array, a local variable or array
    /// declared without a value, or a buffer made with `empty`. The simulator gave those reads
    /// a poison value (see `POISON_INT`, `POISON_F32`, `POISON_F64`) so that results show it.
    Uninit {
        memory: Memory,
        /// The dimensions of a kernel's own array, outermost first (`[16, 16]`); empty for a
        /// buffer. Element indices are flat; `element_name` says them as the kernel does.
        shape: Vec<u64>,
        /// The kernel's own name for a buffer, as in `OutOfBounds`.
        kernel_name: Option<String>,
        /// The element of the example read; `None` for a local variable.
        index: Option<i64>,
        /// Uninitialised reads seen.
        count: u64,
        /// Distinct elements read before anything wrote them; for a local variable, the
        /// threads that did.
        elements: u64,
        /// The first such read, in execution order.
        first: Site,
    },
    /// Threads of one block waited at different barriers, or some waited while others had exited.
    BarrierDivergence {
        block: [u32; 3],
        /// A barrier some threads were waiting at.
        waiting: Site,
        /// Where the other threads were: another barrier, or `None` when they had exited.
        other: Option<Site>,
        waiting_threads: u32,
        other_threads: u32,
    },
    /// The launch ran out of its step budget, or of its time (`time_limit`): most likely an
    /// endless loop.
    StepLimit {
        /// Warp steps the launch took in all.
        steps: u64,
        /// The launch's budget, as `:max-steps` shows it.
        budget: u64,
        /// When one warp used up its own share of the budget (a quarter), that share: the
        /// launch stopped long before `budget`.
        warp_limit: Option<u64>,
        /// On the sequential schedule a step runs one lane, so both budgets were 32 times as many.
        sequential: bool,
        /// The time limit that stopped it, when time rather than steps did.
        time_limit: Option<std::time::Duration>,
        /// Where the thread that used the most steps was when the launch was stopped.
        site: Site,
    },
    /// A `__trap()` or failed `assert` in device code.
    Trap { site: Site, message: String },
    /// Writes outside a buffer seen in its guard regions after a GPU launch: where, not who.
    GuardWrite { memory: Memory, len: u64, count: u64, min_index: i64, max_index: i64 },
}

/// The names learners use in `expect finding NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FindingKind {
    OutOfBounds,
    Race,
    Barrier,
    StepLimit,
    Trap,
    Uninit,
}

impl FindingKind {
    pub const ALL: [FindingKind; 6] = [
        FindingKind::OutOfBounds,
        FindingKind::Race,
        FindingKind::Barrier,
        FindingKind::StepLimit,
        FindingKind::Trap,
        FindingKind::Uninit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FindingKind::OutOfBounds => "out_of_bounds",
            FindingKind::Race => "race",
            FindingKind::Barrier => "barrier",
            FindingKind::StepLimit => "step_limit",
            FindingKind::Trap => "trap",
            FindingKind::Uninit => "uninit",
        }
    }

    /// The kind in words, for sentences: "an out-of-bounds finding" (`name` is the keyword of
    /// `expect finding`).
    pub fn words(self) -> &'static str {
        match self {
            FindingKind::OutOfBounds => "out-of-bounds",
            FindingKind::Race => "data-race",
            FindingKind::Barrier => "barrier",
            FindingKind::StepLimit => "step-limit",
            FindingKind::Trap => "trap",
            FindingKind::Uninit => "uninitialised-read",
        }
    }

    /// Kinds only the simulator can see, since it watches every access: on the GPU an
    /// `expect finding` of one of them is neither true nor false.
    pub fn simulator_only(self) -> bool {
        matches!(self, FindingKind::Race | FindingKind::Barrier | FindingKind::Uninit)
    }

    pub fn parse(name: &str) -> Option<FindingKind> {
        FindingKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl Finding {
    pub fn kind(&self) -> FindingKind {
        match self {
            Finding::OutOfBounds { .. } | Finding::PastRow { .. } | Finding::GuardWrite { .. } => {
                FindingKind::OutOfBounds
            }
            Finding::Race { .. } => FindingKind::Race,
            Finding::BarrierDivergence { .. } => FindingKind::Barrier,
            Finding::StepLimit { .. } => FindingKind::StepLimit,
            Finding::Trap { .. } => FindingKind::Trap,
            Finding::Uninit { .. } => FindingKind::Uninit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::element_name;

    #[test]
    fn elements_of_a_two_dimensional_array_are_named_as_the_kernel_writes_them() {
        assert_eq!(element_name("As", 192, &[16, 16]), "As[12][0]");
        assert_eq!(element_name("t", 13, &[2, 3, 4]), "t[1][0][1]");
        assert_eq!(element_name("a", 1000, &[]), "a[1000]");
        assert_eq!(element_name("s", 5, &[32]), "s[5]");
        // A thread of a 2-D block is said by both coordinates, even when the second is 0.
        let t = super::ThreadRef { block: [2, 0, 0], thread: [4, 0, 0], ranks: [2, 2] };
        assert_eq!(t.describe(), "block (2, 0) thread (4, 0)");
        assert_eq!(super::ThreadRef { ranks: [1, 1], ..t }.describe(), "block 2 thread 4");
        assert_eq!(super::ThreadRef { ranks: [0, 0], ..t }.describe(), "block 2 thread 4");
        // Past the end the first index runs on: row 16 of a 16-row array, which it lacks.
        assert_eq!(element_name("As", 256, &[16, 16]), "As[16][0]");
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    #[test]
    fn a_two_dimensional_buffer_names_its_elements_by_row_and_column() {
        let site = Site { thread: ThreadRef::default(), access: Access::Write, span: crate::diag::Span::new(0, 0, 1) };
        let race = |memory: Memory, view: Option<(String, u64)>| Finding::Race {
            memory,
            shape: vec![],
            kernel_name: None,
            view,
            index: 80,
            count: 2,
            elements: 1,
            first: site,
            second: site,
            same_warp: false,
        };
        let mut findings = vec![
            race(Memory::Global("m".into()), None),
            race(Memory::Global("v".into()), None),
            race(Memory::Global("m".into()), Some(("p".into(), 4))),
        ];
        shape_buffers(&mut findings, |name| (name == "m").then(|| vec![12, 20]));
        let shapes: Vec<Vec<u64>> = findings
            .iter()
            .map(|f| match f {
                Finding::Race { shape, .. } => shape.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(shapes, [vec![12, 20], vec![], vec![]]);
        assert_eq!(element_name("m", 80, &shapes[0]), "m[4][0]");
        // Past the end, the row runs on; before the start, the index stays flat.
        assert_eq!(element_name("m", 252, &shapes[0]), "m[12][12]");
        assert_eq!(element_name("m", -3, &shapes[0]), "m[-3]");
    }
}
