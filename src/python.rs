//! Python kernels, as Numba writes them: `@cuda.jit`, `cuda.grid(1)`, `kernel[blocks, threads](a)`.
//!
//! gridlab speaks one kernel language inside: CUDA C. A Python kernel is read here
//! (`parse`: RustPython's parser, the `@cuda.jit` functions and imports), typed as Numba types
//! it for the arguments of a launch (`types`), and lowered to CUDA C with a map back to the
//! Python (`lower`). The session then treats that C like a kernel the learner typed: the same
//! checker, simulator, cost model, findings and GPU backend, with every message at the
//! learner's Python line through the map. docs/python.md describes the subset and the rules.

pub mod host;
pub mod lower;
pub mod parse;
pub mod types;
pub mod words;

#[cfg(test)]
mod tests;

pub use lower::{ArgType, CParam, Env, Global, Instance, guess_types, guess_types_with, lower};
pub use parse::{Imports, PyFunction, Snippet, read_snippet, starts_python};
