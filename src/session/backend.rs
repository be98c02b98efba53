//! Where launches run: starting the GPU backend in the background, settling `auto`'s choice,
//! switching with `:backend`, and pointing the next launches at the simulator (with a seed and
//! schedule) or the GPU. The rest of the session asks [`Session::backend`] and never which.

use std::thread::JoinHandle;

use crate::backend::gpu::GpuBackend;
use crate::backend::sim::{Schedule, SimBackend};
use crate::backend::{Backend, BackendKind};

use super::{Options, RunOn, Session};

/// The GPU backend: being started in the background, started, or not usable (and why).
pub(crate) enum Gpu {
    Starting(JoinHandle<Result<GpuBackend, String>>),
    Ready(Box<GpuBackend>),
    Unusable(String),
}

impl Gpu {
    /// Start the GPU backend on a background thread: creating a CUDA context takes half a
    /// second, and the learner should not wait for it at the prompt.
    pub(super) fn start(options: &Options) -> Gpu {
        let (device, timeout) = (options.device, options.timeout);
        let started = std::thread::Builder::new()
            .name("gridlab-gpu-start".into())
            .spawn(move || GpuBackend::start(device, timeout));
        match started {
            Ok(handle) => Gpu::Starting(handle),
            Err(e) => Gpu::Unusable(format!("could not start a thread to start the GPU: {e}")),
        }
    }
}

/// What `auto` says when it falls back to the simulator. Most machines without a GPU see this
/// at every start, so it is one line; `gridlab doctor` has the details.
fn auto_fallback(why: &str) -> String {
    let short = why.split(':').next().unwrap_or(why).trim();
    format!("backend: sim (auto: {short}; `gridlab doctor` says more)")
}

/// The backend that runs launches, borrowed from the session's fields alone so that the module
/// and sources can be borrowed beside it (rather than copied for every launch).
pub(crate) fn active_backend<'a>(
    sim: &'a mut SimBackend,
    gpu: &'a mut Option<Gpu>,
    active: BackendKind,
) -> &'a mut dyn Backend {
    match gpu {
        Some(Gpu::Ready(g)) if active == BackendKind::Gpu => g.as_mut(),
        _ => sim,
    }
}

impl Session {
    /// Wait for the GPU started in the background, if it is still starting.
    pub(super) fn gpu_ready(&mut self) -> Option<&mut GpuBackend> {
        if let Some(Gpu::Starting(_)) = &self.gpu {
            let Some(Gpu::Starting(handle)) = self.gpu.take() else { unreachable!("matched above") };
            let cancel = self.options.sim.cancel.clone();
            self.gpu = Some(match handle.join() {
                Ok(Ok(mut gpu)) => {
                    gpu.cancel = cancel;
                    Gpu::Ready(Box::new(gpu))
                }
                Ok(Err(why)) => Gpu::Unusable(why),
                Err(_) => Gpu::Unusable("the GPU backend failed to start".into()),
            });
        }
        match &mut self.gpu {
            Some(Gpu::Ready(g)) => Some(g),
            _ => None,
        }
    }

    /// Why launches do not run on the GPU, when they do not (after settling `auto`'s choice).
    pub fn gpu_problem(&mut self) -> Option<String> {
        if self.on_gpu() {
            return None;
        }
        Some(match self.options.backend {
            BackendKind::Sim => "the session runs on the simulator".into(),
            _ => self.gpu_unusable_reason(),
        })
    }

    pub(super) fn gpu_unusable_reason(&self) -> String {
        match &self.gpu {
            Some(Gpu::Unusable(why)) => why.clone(),
            _ => "no GPU".into(),
        }
    }

    /// Settle which backend runs launches (`auto` waits for the GPU's start) and say why, once.
    pub fn resolve_backend(&mut self) -> String {
        let requested = self.options.backend;
        if requested == BackendKind::Sim {
            self.active = BackendKind::Sim;
            return "backend: sim".into();
        }
        match self.gpu_ready().map(|g| g.info().name.clone()) {
            Some(name) => {
                self.active = BackendKind::Gpu;
                format!("backend: gpu ({name})")
            }
            None => {
                self.active = BackendKind::Sim;
                let why = self.gpu_unusable_reason();
                match requested {
                    BackendKind::Gpu => format!("backend: sim, because the GPU backend is not usable: {why}"),
                    _ => auto_fallback(&why),
                }
            }
        }
    }

    /// Switch backends (`:backend`). Moving to the GPU gives it the module.
    pub(crate) fn switch_backend(&mut self, kind: BackendKind) -> Result<String, String> {
        if kind == BackendKind::Sim {
            self.active = BackendKind::Sim;
            return Ok("backend: sim".into());
        }
        if self.gpu.is_none() {
            self.gpu = Some(Gpu::start(&self.options));
        }
        let ready = self.gpu_ready().is_some();
        match &mut self.gpu {
            Some(Gpu::Ready(gpu)) if ready => {
                let name = gpu.info().name.clone();
                if !self.module.is_empty() {
                    gpu.load(&self.module, &self.sources)
                        .map_err(|e| format!("the GPU could not compile the session's kernels: {e}"))?;
                }
                self.active = BackendKind::Gpu;
                Ok(format!("backend: gpu ({name})"))
            }
            _ => {
                let why = self.gpu_unusable_reason();
                self.active = BackendKind::Sim;
                if kind == BackendKind::Auto {
                    Ok(auto_fallback(&why))
                } else {
                    Err(format!("the GPU backend is not usable: {why}; kernels keep running on the simulator"))
                }
            }
        }
    }

    pub(super) fn ensure_resolved(&mut self) {
        if self.active == BackendKind::Auto {
            self.resolve_backend();
        }
    }

    /// The backend that runs launches now.
    pub(crate) fn backend(&mut self) -> &mut dyn Backend {
        self.ensure_resolved();
        active_backend(&mut self.sim, &mut self.gpu, self.active)
    }

    pub(crate) fn backend_label(&mut self) -> String {
        self.backend().label()
    }

    /// The GPU backend, when launches run on it now.
    pub(crate) fn active_gpu(&mut self) -> Option<&mut GpuBackend> {
        self.ensure_resolved();
        match &mut self.gpu {
            Some(Gpu::Ready(g)) if self.active == BackendKind::Gpu => Some(g.as_mut()),
            _ => None,
        }
    }

    /// Whether launches run on the GPU now.
    pub fn on_gpu(&mut self) -> bool {
        self.ensure_resolved();
        self.active == BackendKind::Gpu
    }

    /// Run the next launches on the simulator with this seed and schedule, or on the GPU (when
    /// it is ready; callers ask [`Session::on_gpu`] first).
    pub(crate) fn run_on(&mut self, target: RunOn) {
        match target {
            RunOn::Sim { seed, schedule } => {
                self.active = BackendKind::Sim;
                self.set_seed(seed);
                self.set_schedule(schedule);
            }
            RunOn::Gpu => {
                if let Some(Gpu::Ready(gpu)) = &mut self.gpu {
                    self.active = BackendKind::Gpu;
                    // Kernels made while the simulator ran (a Python kernel's instance, a
                    // template's) are the GPU's too; a failure shows at the launch.
                    let _ = gpu.load(&self.module, &self.sources);
                }
            }
        }
    }

    pub(crate) fn set_schedule(&mut self, schedule: Schedule) {
        self.sim.config.schedule = schedule;
        self.options.sim.schedule = schedule;
    }

    pub(crate) fn set_seed(&mut self, seed: u64) {
        self.sim.config.seed = seed;
        self.options.sim.seed = seed;
    }

    /// Bound each simulated launch's wall time (`None`: only the step budget bounds it), and
    /// return the bound it had: `dev check --mutants` gives endless mutants little time.
    pub(crate) fn set_time_limit(&mut self, limit: Option<std::time::Duration>) -> Option<std::time::Duration> {
        self.options.sim.time_limit = limit;
        std::mem::replace(&mut self.sim.config.time_limit, limit)
    }

    pub(crate) fn set_max_steps(&mut self, steps: u64) {
        self.sim.config.max_steps = steps;
        self.options.sim.max_steps = steps;
    }
}
