//! gridlab: a terminal REPL that teaches CUDA kernels.
//!
//! The pieces, in the order input flows through them:
//! - [`script`]: the session language (`let`, launches, `expect`), shared by the REPL, `replay`
//!   and lessons; [`command`]: the `:` commands;
//! - [`cuda`]: the CUDA C front end (lexer, parser, checker to a typed AST);
//! - [`session`]: evaluates inputs, owns buffers and kernels, talks to a [`backend`];
//! - [`backend`]: `sim`, the CPU simulator with race and bounds findings, and `gpu`, NVRTC and
//!   the CUDA driver in a supervised worker process;
//! - [`render`]: arrays, findings and tables, written to any `impl Write`;
//! - [`repl`]: the interactive prompt (reedline): multi-line input, colours, completion, history;
//! - [`replay`]: scripts and lessons run non-interactively, with exit codes and JUnit reports;
//! - [`lesson`]: the guided course: lesson files, checks, progress, the guided mode.

pub mod app;
pub mod backend;
pub mod buffer;
pub mod cli;
pub mod cost;
pub mod cuda;
pub mod diag;
pub mod doctor;
pub mod dtype;
pub mod finding;
pub mod launch;
pub mod lesson;
pub mod render;
pub mod repl;
pub mod replay;
pub mod script;
pub mod session;
pub mod value;
