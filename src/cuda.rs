//! The CUDA C front end: a hand-written lexer and recursive-descent parser for the subset the
//! lessons use, and a checker that applies C's conversion rules and produces the typed AST in
//! [`ast`]. It serves both backends: kernel signatures for argument checking, the full AST for
//! the simulator.
//!
//! A session's CUDA code is one [`Module`] that grows snippet by snippet; redefining a function
//! replaces it, and every change is checked against the whole module at once.

pub mod ast;
pub mod check;
pub mod lexer;
pub mod parser;

use crate::diag::{Diagnostic, SourceId};
use ast::{Function, Program};

/// What a snippet defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Kernel,
    DeviceFunction,
    Global,
    Define,
    Typedef,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defined {
    pub name: String,
    pub kind: ItemKind,
    /// An item of the same name existed and was replaced.
    pub replaced: bool,
}

#[derive(Clone, Debug, Default)]
pub struct AddOutcome {
    pub defined: Vec<Defined>,
    pub warnings: Vec<Diagnostic>,
}

/// The session's CUDA code: parsed items in definition order plus the checked [`Program`].
#[derive(Clone, Debug, Default)]
pub struct Module {
    program: Program,
    generation: u64,
}

impl Module {
    pub fn new() -> Module {
        Module::default()
    }

    /// Parse `text` (registered in the session's source map as `source`) and add its items,
    /// replacing same-named ones; then check the whole module. On any error the module is left
    /// unchanged and every error found is returned.
    pub fn add(&mut self, source: SourceId, text: &str) -> Result<AddOutcome, Vec<Diagnostic>> {
        let _ = (source, text);
        Err(vec![Diagnostic::error("the CUDA front end is not built yet")])
    }

    /// The checked program: every function and global, typed.
    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.program.kernels().find(|f| f.name == name)
    }

    /// Changes whenever the module does, so backends can cache compiled kernels.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_empty(&self) -> bool {
        self.program.functions.is_empty() && self.program.globals.is_empty()
    }

    /// Forget everything (`:reset`).
    pub fn clear(&mut self) {
        let generation = self.generation + 1;
        *self = Module::default();
        self.generation = generation;
    }
}
