//! The interface every backend implements: take the session's checked CUDA module, launch a
//! kernel over the session's buffers, report what happened.
//!
//! `sim` (the CPU simulator, `backend/sim/`) runs everywhere and explains races and
//! out-of-bounds accesses; `gpu` (NVRTC and the CUDA driver in a supervised worker process) runs
//! the real thing. A launch goes through [`Backend`] whichever runs it; the session also keeps
//! the simulator at hand beside the GPU for what only it can do (`:map`, `:why`, `:race`'s
//! reference run, the cost model), whichever backend runs launches.

pub mod gpu;
pub mod sim;

use std::fmt;

use thiserror::Error;

use crate::cuda::Module;
use crate::diag::{Diagnostic, SourceMap};

// The launch's vocabulary lives below the backends (the views draw it too); re-exported here
// because every backend speaks it.
pub use crate::launch::{
    Arg, Dim3, LaunchBuffers, LaunchReport, LaunchSpec, PrintLine, ScalarArg, WatchedAccess, WriteTrace, linear_thread,
};

/// Which backend runs launches. `Auto` resolves to `Gpu` when one works, else `Sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    Sim,
    Gpu,
    Auto,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sim => "sim",
            BackendKind::Gpu => "gpu",
            BackendKind::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<BackendKind> {
        match s {
            "sim" => Some(BackendKind::Sim),
            "gpu" => Some(BackendKind::Gpu),
            "auto" => Some(BackendKind::Auto),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a backend could not do what it was asked.
#[derive(Debug, Error)]
pub enum BackendError {
    /// The kernel uses something this backend cannot run (e.g. `float4` on the simulator).
    #[error("{}", .0.message)]
    Unsupported(Diagnostic),
    /// The launch could not start: a limit of this backend or device.
    #[error("{0}")]
    Launch(String),
    /// The launch was stopped before it finished; buffers are as they were before it.
    #[error("{0}")]
    Aborted(String),
    /// The backend is not available on this machine.
    #[error("{0}")]
    Unavailable(String),
    /// The GPU's compiler (NVRTC) rejected the module, with its messages on the learner's lines.
    #[error("the CUDA compiler rejected the code")]
    Compile(Vec<Diagnostic>),
}

/// A place kernels run.
pub trait Backend {
    fn kind(&self) -> BackendKind;

    /// A short name for prompts and summaries: `sim`, or the GPU's name.
    fn label(&self) -> String;

    /// Prepare the module after it changed (compile it, on the GPU). The simulator compiles each
    /// kernel lazily at its first launch instead, so this may do nothing.
    fn load(&mut self, module: &Module, sources: &SourceMap) -> Result<(), BackendError>;

    /// Run one launch. Buffers are updated in place; on `Err`, they are left as they were.
    fn launch(
        &mut self,
        module: &Module,
        spec: &LaunchSpec,
        buffers: &mut LaunchBuffers<'_>,
    ) -> Result<LaunchReport, BackendError>;
}
