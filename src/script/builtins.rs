//! The statement language's built-in functions: one table that evaluation checks names against,
//! the REPL completes (with each summary), the highlighter colours, and `:help functions` lists.
//! A new function is a row here and an arm in `eval/functions.rs`; a unit test keeps the two in
//! step.

/// One built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    pub name: &'static str,
    /// How it is called, for `:help functions`.
    pub synopsis: &'static str,
    pub summary: &'static str,
    pub kind: BuiltinKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinKind {
    /// Makes a new buffer (takes a dtype last).
    Constructor,
    /// Reads an array (or a number) and gives a value.
    Function,
}

use BuiltinKind::{Constructor, Function};

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "zeros",
        synopsis: "zeros(N[, dtype])",
        summary: "N zeros (N may be (rows, cols))",
        kind: Constructor,
    },
    Builtin {
        name: "empty",
        synopsis: "empty(N[, dtype])",
        summary: "N elements with no values yet, like cudaMalloc: reading one before writing it is reported",
        kind: Constructor,
    },
    Builtin { name: "ones", synopsis: "ones(N[, dtype])", summary: "N ones", kind: Constructor },
    Builtin { name: "full", synopsis: "full(N, V[, dtype])", summary: "N copies of V", kind: Constructor },
    Builtin {
        name: "arange",
        synopsis: "arange(N) or arange(START, STOP[, STEP])",
        summary: "0, 1, ..., N-1, or a range with a step",
        kind: Constructor,
    },
    Builtin {
        name: "linspace",
        synopsis: "linspace(A, B, N[, dtype])",
        summary: "N evenly spaced values from A to B, both included",
        kind: Constructor,
    },
    Builtin {
        name: "random",
        synopsis: "random(N, seed=S[, dtype])",
        summary: "N uniform floats in [0, 1), the same for the same seed",
        kind: Constructor,
    },
    Builtin {
        name: "randint",
        synopsis: "randint(N, LO, HI, seed=S[, dtype])",
        summary: "N integers in [LO, HI), the same for the same seed",
        kind: Constructor,
    },
    Builtin { name: "array", synopsis: "array([v, ...][, dtype])", summary: "a buffer from a list", kind: Constructor },
    Builtin { name: "copy", synopsis: "copy(a)", summary: "a new buffer with a's values", kind: Function },
    Builtin { name: "len", synopsis: "len(a)", summary: "how many elements a has", kind: Function },
    Builtin { name: "sum", synopsis: "sum(a)", summary: "the sum of the elements", kind: Function },
    Builtin {
        name: "min",
        synopsis: "min(a) or min(x, y, ...)",
        summary: "the smallest element or value",
        kind: Function,
    },
    Builtin {
        name: "max",
        synopsis: "max(a) or max(x, y, ...)",
        summary: "the largest element or value",
        kind: Function,
    },
    Builtin { name: "mean", synopsis: "mean(a)", summary: "the average of the elements", kind: Function },
    Builtin { name: "abs", synopsis: "abs(x)", summary: "absolute value, element by element", kind: Function },
    Builtin { name: "all", synopsis: "all(a > 0)", summary: "every element is true", kind: Function },
    Builtin { name: "any", synopsis: "any(a > 0)", summary: "some element is true", kind: Function },
    Builtin { name: "count", synopsis: "count(a > 0)", summary: "how many elements are true", kind: Function },
    Builtin { name: "sqrt", synopsis: "sqrt(x)", summary: "square root, element by element", kind: Function },
    Builtin { name: "exp", synopsis: "exp(x)", summary: "e to the x, element by element", kind: Function },
    Builtin { name: "log", synopsis: "log(x)", summary: "natural logarithm, element by element", kind: Function },
    Builtin { name: "float", synopsis: "float(x)", summary: "x as a float", kind: Function },
    Builtin { name: "int", synopsis: "int(x)", summary: "x as an integer, towards zero", kind: Function },
    Builtin { name: "round", synopsis: "round(x)", summary: "nearest integer, ties to even", kind: Function },
    Builtin { name: "floor", synopsis: "floor(x)", summary: "largest integer not above x", kind: Function },
    Builtin { name: "ceil", synopsis: "ceil(x)", summary: "smallest integer not below x", kind: Function },
    Builtin {
        name: "dim3",
        synopsis: "dim3(x, y, z)",
        summary: "a grid or block size (missing sizes are 1): let block = dim3(16, 16), then block.x",
        kind: Function,
    },
    Builtin {
        name: "sizeof",
        synopsis: "sizeof(float)",
        summary: "bytes of one value of a C type: 4 for float, 8 for double",
        kind: Function,
    },
    Builtin { name: "print", synopsis: "print(x, ...)", summary: "show values, as typing each does", kind: Function },
];

/// The built-in called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Every built-in's name, in table order.
pub fn names() -> impl Iterator<Item = &'static str> + Clone {
    BUILTINS.iter().map(|b| b.name)
}
