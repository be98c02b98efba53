//! Where launches run: [`Backends`], the simulator and the GPU backend (started in the
//! background) with which of them runs launches now; and the session's side of it: settling
//! `auto`'s choice, switching with `:backend`, and pointing the next launches at the simulator
//! (with a seed and schedule) or the GPU. The rest of the session asks [`Session::backend`] for
//! the one that runs launches now, and reaches a particular one only for what only it does (the
//! simulator's watched runs in the views, the GPU's timings).

use std::thread::JoinHandle;

use crate::backend::gpu::GpuBackend;
use crate::backend::sim::{Schedule, SimBackend, SimConfig};
use crate::backend::{Backend, BackendKind};

use super::{Options, RunOn, Session};

/// The session's backends: the simulator, always there; the GPU backend, when one was asked
/// for; and which of them runs launches now.
pub(crate) struct Backends {
    sim: SimBackend,
    gpu: Option<Gpu>,
    /// Where launches run now: `Sim` or `Gpu` (`Auto` until the GPU's start is settled).
    active: BackendKind,
}

impl Backends {
    /// The simulator as `options` configure it, and the GPU started in the background (so it
    /// is ready by the first launch) unless the learner pinned the simulator.
    pub fn new(options: &Options) -> Backends {
        let mut config = options.sim.clone();
        if config.cost.is_some() {
            config.cost = Some(options.gpu_profile);
        }
        let gpu = match options.backend {
            BackendKind::Sim => None,
            BackendKind::Gpu | BackendKind::Auto => Some(Gpu::start(options)),
        };
        let active = if options.backend == BackendKind::Sim { BackendKind::Sim } else { BackendKind::Auto };
        Backends { sim: SimBackend::new(config), gpu, active }
    }

    /// The backend that runs launches now (the simulator while `auto` is unsettled), borrowed
    /// alone so that the module and sources can be borrowed beside it rather than copied.
    pub fn active(&mut self) -> &mut dyn Backend {
        match &mut self.gpu {
            Some(Gpu::Ready(g)) if self.active == BackendKind::Gpu => g.as_mut(),
            _ => &mut self.sim,
        }
    }

    /// Which one runs launches now: `Sim`, `Gpu`, or `Auto` while the GPU's start is unsettled.
    pub fn active_kind(&self) -> BackendKind {
        self.active
    }

    pub fn set_active(&mut self, kind: BackendKind) {
        self.active = kind;
    }

    /// The simulator, whichever backend runs launches: the views run it on copies.
    pub fn sim(&self) -> &SimBackend {
        &self.sim
    }

    /// The simulator's settings, to change for the launches after this.
    pub fn sim_config_mut(&mut self) -> &mut SimConfig {
        &mut self.sim.config
    }

    /// The simulator's settings now (seed, schedule, step budget, the cost model's GPU).
    pub fn sim_config(&self) -> &SimConfig {
        &self.sim.config
    }

    /// The cost model estimates times for `profile` from now on (when it is on).
    pub fn set_reference(&mut self, profile: &'static crate::cost::GpuProfile) {
        if self.sim.config.cost.is_some() {
            self.sim.config.cost = Some(profile);
        }
    }

    /// Run `spec` on the simulator with `config` for this launch only (the views' watched and
    /// seeded runs), whichever backend runs launches.
    pub fn run_sim_with(
        &mut self,
        config: SimConfig,
        module: &crate::cuda::Module,
        spec: &crate::launch::LaunchSpec,
        buffers: &mut crate::backend::LaunchBuffers<'_>,
    ) -> Result<crate::launch::LaunchReport, crate::backend::BackendError> {
        let saved = std::mem::replace(&mut self.sim.config, config);
        let result = self.sim.launch(module, spec, buffers);
        self.sim.config = saved;
        result
    }

    /// The GPU backend when it has started (without waiting for a start under way).
    pub fn gpu(&mut self) -> Option<&mut GpuBackend> {
        match &mut self.gpu {
            Some(Gpu::Ready(g)) => Some(g.as_mut()),
            _ => None,
        }
    }

    /// The GPU backend when it has started, to read.
    pub fn gpu_info(&self) -> Option<&GpuBackend> {
        match &self.gpu {
            Some(Gpu::Ready(g)) => Some(g.as_ref()),
            _ => None,
        }
    }

    /// Start the GPU backend in the background, when it was never asked for.
    pub fn start_gpu(&mut self, options: &Options) {
        if self.gpu.is_none() {
            self.gpu = Some(Gpu::start(options));
        }
    }

    /// Wait for the GPU started in the background, if it is still starting; a launch it runs
    /// is stopped by `cancel`.
    pub fn gpu_ready(
        &mut self,
        cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    ) -> Option<&mut GpuBackend> {
        if let Some(Gpu::Starting(_)) = &self.gpu {
            let Some(Gpu::Starting(handle)) = self.gpu.take() else { unreachable!("matched above") };
            self.gpu = Some(match handle.join() {
                Ok(Ok(mut gpu)) => {
                    gpu.cancel = cancel;
                    Gpu::Ready(Box::new(gpu))
                }
                Ok(Err(why)) => Gpu::Unusable(why),
                Err(_) => Gpu::Unusable("the GPU backend failed to start".into()),
            });
        }
        self.gpu()
    }

    /// Why the GPU backend does not run launches.
    pub fn gpu_unusable_reason(&self) -> String {
        match &self.gpu {
            Some(Gpu::Unusable(why)) => why.clone(),
            _ => "no GPU".into(),
        }
    }
}

/// The GPU backend: being started in the background, started, or not usable (and why).
enum Gpu {
    Starting(JoinHandle<Result<GpuBackend, String>>),
    Ready(Box<GpuBackend>),
    Unusable(String),
}

impl Gpu {
    /// Start the GPU backend on a background thread: creating a CUDA context takes half a
    /// second, and the learner should not wait for it at the prompt.
    fn start(options: &Options) -> Gpu {
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

impl Session {
    /// Wait for the GPU started in the background, if it is still starting.
    pub(super) fn gpu_ready(&mut self) -> Option<&mut GpuBackend> {
        self.backends.gpu_ready(self.options.sim.cancel.clone())
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
        self.backends.gpu_unusable_reason()
    }

    /// Settle which backend runs launches (`auto` waits for the GPU's start) and say why, once.
    pub fn resolve_backend(&mut self) -> String {
        let requested = self.options.backend;
        if requested == BackendKind::Sim {
            self.backends.set_active(BackendKind::Sim);
            return "backend: sim".into();
        }
        match self.gpu_ready().map(|g| g.info().name.clone()) {
            Some(name) => {
                self.backends.set_active(BackendKind::Gpu);
                format!("backend: gpu ({name})")
            }
            None => {
                self.backends.set_active(BackendKind::Sim);
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
            self.backends.set_active(BackendKind::Sim);
            return Ok("backend: sim".into());
        }
        self.backends.start_gpu(&self.options);
        let cancel = self.options.sim.cancel.clone();
        match self.backends.gpu_ready(cancel) {
            Some(gpu) => {
                let name = gpu.info().name.clone();
                if !self.work.module().is_empty() {
                    gpu.load(self.work.module(), self.work.sources())
                        .map_err(|e| format!("the GPU could not compile the session's kernels: {e}"))?;
                }
                self.backends.set_active(BackendKind::Gpu);
                Ok(format!("backend: gpu ({name})"))
            }
            None => {
                let why = self.gpu_unusable_reason();
                self.backends.set_active(BackendKind::Sim);
                if kind == BackendKind::Auto {
                    Ok(auto_fallback(&why))
                } else {
                    Err(format!("the GPU backend is not usable: {why}; kernels keep running on the simulator"))
                }
            }
        }
    }

    pub(super) fn ensure_resolved(&mut self) {
        if self.backends.active_kind() == BackendKind::Auto {
            self.resolve_backend();
        }
    }

    /// The backend that runs launches now.
    pub(crate) fn backend(&mut self) -> &mut dyn Backend {
        self.ensure_resolved();
        self.backends.active()
    }

    pub(crate) fn backend_label(&mut self) -> String {
        self.backend().label()
    }

    /// The GPU backend, when launches run on it now.
    pub(crate) fn active_gpu(&mut self) -> Option<&mut GpuBackend> {
        self.ensure_resolved();
        if self.backends.active_kind() != BackendKind::Gpu {
            return None;
        }
        self.backends.gpu()
    }

    /// Whether launches run on the GPU now.
    pub fn on_gpu(&mut self) -> bool {
        self.ensure_resolved();
        self.backends.active_kind() == BackendKind::Gpu
    }

    /// Run the next launches on the simulator with this seed and schedule, or on the GPU (when
    /// it is ready; callers ask [`Session::on_gpu`] first).
    pub(crate) fn run_on(&mut self, target: RunOn) {
        match target {
            RunOn::Sim { seed, schedule } => {
                self.backends.set_active(BackendKind::Sim);
                self.set_seed(seed);
                self.set_schedule(schedule);
            }
            RunOn::Gpu => {
                if let Some(gpu) = self.backends.gpu() {
                    // Kernels made while the simulator ran (a Python kernel's instance, a
                    // template's) are the GPU's too; a failure shows at the launch.
                    let _ = gpu.load(self.work.module(), self.work.sources());
                    self.backends.set_active(BackendKind::Gpu);
                }
            }
        }
    }

    pub(crate) fn set_schedule(&mut self, schedule: Schedule) {
        self.backends.sim_config_mut().schedule = schedule;
        self.options.sim.schedule = schedule;
    }

    pub(crate) fn set_seed(&mut self, seed: u64) {
        self.backends.sim_config_mut().seed = seed;
        self.options.sim.seed = seed;
    }

    /// Bound each simulated launch's wall time (`None`: only the step budget bounds it), and
    /// return the bound it had: `dev check --mutants` gives endless mutants little time.
    pub(crate) fn set_time_limit(&mut self, limit: Option<std::time::Duration>) -> Option<std::time::Duration> {
        self.options.sim.time_limit = limit;
        std::mem::replace(&mut self.backends.sim_config_mut().time_limit, limit)
    }

    pub(crate) fn set_max_steps(&mut self, steps: u64) {
        self.backends.sim_config_mut().max_steps = steps;
        self.options.sim.max_steps = steps;
    }
}
