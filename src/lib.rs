//! gridlab: a terminal REPL that teaches CUDA kernels.
//!
//! The pieces, in the order input flows through them:
//! - [`script`]: the session language (`let`, launches, `expect`, `:commands`), shared by the
//!   REPL, `replay` and lessons;
//! - [`cuda`]: the CUDA C front end (lexer, parser, checker to a typed AST);
//! - [`session`]: evaluates inputs, owns buffers and kernels, talks to a [`backend`];
//! - [`backend`]: `sim` (CPU simulator with race and bounds findings) and, later, `gpu`;
//! - [`render`]: arrays, findings and tables, written to any `impl Write`.

pub mod backend;
pub mod buffer;
pub mod cuda;
pub mod diag;
pub mod dtype;
pub mod finding;
pub mod render;
pub mod script;
