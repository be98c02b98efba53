//! The gridlab session language: what the learner types at the prompt, in `.gridlab` scripts
//! and in lesson blocks.
//!
//! - [`input`] splits text into inputs: CUDA items, `:commands` and statements;
//! - [`lexer`] and [`parser`] turn one statement into an [`ast::Stmt`];
//! - [`eval`] evaluates expressions against the session's buffers and scalars ([`eval::Env`]),
//!   numpy-style, and explains failed `expect`s with the learner's own sub-expressions;
//! - [`builtins`] is the one table of built-in functions (evaluation, completion, colours, help);
//! - [`habits`] reads what learners bring from CUDA host code, NumPy and Numba (`int n = 1 << 20;`,
//!   `dim3 block(16, 16);`, `cudaMalloc(...)`, `np.zeros(10)`) and does it or says what to write;
//! - [`highlight`] says what each piece of typed text is, for the prompt's and the lessons'
//!   colours;
//! - values and their conversion to and from buffers are [`crate::value`].

pub mod ast;
pub mod builtins;
pub mod eval;
pub mod habits;
pub mod highlight;
pub mod input;
pub mod lexer;
pub mod parser;

pub use eval::{Assignment, Env, ExpectOutcome, eval, eval_assign, eval_expect};
pub use input::{Input, InputKind, classify, is_complete, split_inputs, trailing_command};

pub use crate::value::{ArrayValue, Value};
pub use parser::parse_statement;

/// Whether `text` is a kernel launch statement (`k<<<g, b>>>(a, n)` or `k[g, b](a)`): what may
/// run while an earlier launch's results are still on the GPU.
pub fn is_launch(text: &str) -> bool {
    parse_statement(crate::diag::SourceId::default(), text).is_ok_and(|s| matches!(s.kind, ast::StmtKind::Launch(_)))
}

#[cfg(test)]
mod tests;
