//! gridlab: a terminal REPL that teaches CUDA kernels.
//!
//! The layers, lowest first (each uses only its own and those below; `architecture_tests`
//! enforces it and `docs/architecture.md` walks one input through them):
//! - [`diag`]: diagnostics that point at the learner's line, and "did you mean";
//! - data: [`dtype`], [`buffer`], [`value`], [`finding`], [`launch`] (a launch and its report)
//!   and [`cost`] (the cost model's figures and arithmetic, and the reference GPUs);
//! - [`cuda`]: the CUDA C front end (lexer, parser, checker to a typed AST);
//! - [`backend`] (`sim`, the CPU simulator with findings and the cost counter; `gpu`, NVRTC and
//!   the CUDA driver in a supervised worker process) and [`script`] (the session language:
//!   inputs, statements, built-ins, the token classifier);
//! - [`render`]: arrays, findings, tables, Markdown and colours, written to any `impl Write`;
//! - [`session`]: evaluates inputs, owns buffers and kernels, runs the `:` commands, and takes
//!   extensions from above;
//! - [`runner`]: the one input runner (echo, evaluate, tally), for the prompt's piped stdin,
//!   scripts and lessons alike;
//! - [`lesson`]: the guided course (lesson files, checks, progress, the guide as an extension);
//! - [`replay`]: scripts and lessons run without a learner, on one input runner;
//! - [`repl`]: the interactive prompt (reedline): multi-line input, colours, completion, history;
//! - [`app`], [`cli`], [`doctor`]: the program: arguments, subcommands, exit codes.

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
pub mod python;
pub mod render;
pub mod repl;
pub mod replay;
pub mod runner;
pub mod script;
pub mod session;
pub mod value;

#[cfg(test)]
mod architecture_tests;
