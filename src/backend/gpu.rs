//! The GPU backend: NVRTC and the CUDA driver (through cudarc) in a supervised worker process.
//!
//! The session keeps every buffer as a host copy; the worker owns the CUDA context and the
//! loaded module. Each launch hands the worker the launched buffers (large ones as shared memory
//! both processes map, small ones inline) and runs the kernel with guard regions around every
//! buffer. Small buffers come back at once. A large buffer's results stay on the device, the
//! buffer marked [`Buffer::on_device`], until the session needs its bytes and calls
//! [`GpuBackend::settle`], which reads them into a fresh region swapped in; so a run of launches
//! costs no copy to the host per launch, and the device copy stays until the host changes it.
//!
//! A replayed script need not wait for each launch: [`GpuBackend::begin_launch`] sends one and
//! [`GpuBackend::end_launch`] takes its answer later, and a launch over small buffers may be sent
//! behind those still in flight (as many as fit in the pipe, [`BEHIND_BYTES`]), naming the
//! buffers they share by the stamps the launches ahead keep their results under; answers are
//! taken in order, and a launch sent to a worker that has gone since is sent again
//! (`generation`).
//!
//! After `CUDA_ERROR_ILLEGAL_ADDRESS` and the other sticky errors nothing inside a process can
//! recover the device, and a kernel in an endless loop cannot be stopped from inside, so on a
//! fault, a timeout or Ctrl-C the worker is killed and a new one started and given the module
//! again. The host copies are untouched; results that were only on the device are made again by
//! running the launches since the last read once more, in order (their requests are kept), so
//! the buffers are as they were before the failed launch and nothing the learner made is lost.
//!
//! - `cache.rs` keeps compiled modules on disk, so the same source is compiled once;
//! - `libs.rs` finds the driver and NVRTC before any cudarc call;
//! - `protocol.rs` is the typed request/response protocol on the worker's pipes;
//! - `transport.rs` passes shared buffer regions' descriptors to the worker;
//! - `client.rs` spawns the worker and waits for answers with a deadline;
//! - `serve.rs` is the worker's request loop, the real worker's and the fake's: it begins a launch
//!   that arrives while the one ahead still runs and answers every request in order;
//! - `worker.rs` is the worker process itself (`gridlab worker`);
//! - `fake.rs` is a worker without CUDA that crashes, hangs or writes garbage on request, for
//!   testing the client and the restarts on machines without a GPU (`gridlab worker --fake`);
//! - `ptx.rs` cuts one kernel's `.entry` out of a module's PTX (for `:ptx`);
//! - `source.rs` generates the module's CUDA source and maps NVRTC's errors back;
//! - `guard.rs` checks the guard regions after a launch: the kernel that checks them on the device,
//!   and the host check that names the elements written.

pub mod cache;
pub mod client;
pub mod fake;
pub mod guard;
pub mod libs;
pub mod profile;
pub mod protocol;
pub mod ptx;
pub mod serve;
pub mod source;
pub mod transport;
pub mod worker;

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use self::client::{Worker, WorkerCommand, WorkerError};
use self::libs::Libraries;
use self::protocol::{
    DeviceInfo, KernelInfo, LaunchRequest, LaunchResult, ReadItem, Request, Response, SharedBuffer, WireArg,
    WireBuffer, WireData,
};
use super::{Arg, Backend, BackendError, BackendKind, LaunchBuffers, LaunchReport, LaunchSpec, PrintLine};
use crate::buffer::Buffer;
use crate::buffer::shared::SharedBytes;
use crate::cuda::Module;
use crate::diag::SourceMap;
use crate::finding::{Finding, Memory};

/// Context creation and NVRTC's first load take a while; compiles are bounded separately.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

pub struct GpuBackend {
    libs: Libraries,
    /// How to start a worker, at start and at each restart.
    command: WorkerCommand,
    /// Per launch; a kernel running longer is stopped and the worker restarted.
    pub timeout: Duration,
    worker: Option<Worker>,
    info: DeviceInfo,
    /// The module source the worker has compiled, given again to a restarted worker.
    source: Option<String>,
    /// The template kernel instances of `source`, named to NVRTC (see [`Request::Compile`]).
    names: Vec<String>,
    /// How the last compile went: for which architecture, how long, from the cache or not.
    pub last_compile: Option<CompileStat>,
    /// Set by Ctrl-C: the running launch is stopped (and the worker restarted).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The shared regions the current worker was given, each with its liveness: a region that
    /// died since is named in the next request, so the worker lets it go.
    sent: HashMap<u64, Weak<()>>,
    /// Bytes the worker copied to the device in the last launch (for tests and measurements).
    pub last_uploaded_bytes: u64,
    /// The launches since the last [`GpuBackend::settle`] whose results are only on the device,
    /// as sent, and a descriptor (with its liveness) of each region they read: a new worker
    /// runs them again to make those results again.
    streak: Vec<LaunchRequest>,
    streak_regions: HashMap<u64, (OwnedFd, Weak<()>)>,
    /// The "before" copies the last launch left held on the device.
    snapshots: Vec<u64>,
    /// Why results that were only on the device are gone (a new worker could not make them
    /// again); the next settle says so.
    lost: Option<String>,
    /// Launches sent with [`GpuBackend::begin_launch`] whose answers have not been taken yet,
    /// in the order they were sent.
    in_flight: std::collections::VecDeque<InFlight>,
    /// Counts the workers this backend had: a launch sent to one that has gone since never ran.
    generation: u64,
}

/// A launch sent and not answered yet: what [`GpuBackend::end_launch`] needs to take its answer.
struct InFlight {
    request: Request,
    /// As [`Prepared::results`].
    results: Vec<Option<(u64, u64)>>,
    /// As [`Sent::keep`].
    keep: Vec<Option<u64>>,
    start: Instant,
    what: String,
    /// [`GpuBackend::generation`] when it was sent.
    generation: u64,
    /// Its answer, when it had to be taken before the launch ahead of it was sent again.
    answer: Option<Result<Response, WorkerError>>,
    /// The length of its request on the pipe.
    bytes: usize,
}

/// At most this many bytes of requests are sent behind the launch whose answer the session
/// waits for, and at most half of what the pipe to the worker holds (64 KiB on Linux, less when
/// the system is short of pipe memory): so the session never waits to write a request while the
/// worker waits to write an answer the session has not read yet (an answer brings a small
/// buffer's results back, up to 1 MiB). A request over it waits until every launch ahead has
/// been answered.
pub const BEHIND_BYTES: usize = 32 << 10;

/// At most this many launches, or this many bytes of small buffers in their requests, are kept
/// to run again before the session is asked to read results back ([`GpuBackend::wants_settle`]).
const STREAK_MAX_LAUNCHES: usize = 64;
const STREAK_MAX_INLINE_BYTES: usize = 64 << 20;

/// Stamps name buffer contents that a device copy holds (`Buffer::stamp`): one counter for the
/// process, so no two contents ever share one.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

/// A launch's request, and for each buffer the stamp its results will have on the device
/// (shared buffers written back), or nothing (inline buffers, `:time`).
struct Prepared {
    request: LaunchRequest,
    /// The stamps of each shared buffer's results and of its "before", both kept on the device.
    results: Vec<Option<(u64, u64)>>,
}

/// A launch sent and answered ([`GpuBackend::send_launch`]).
struct Sent {
    request: Request,
    /// As [`Prepared::results`].
    results: Vec<Option<(u64, u64)>>,
    /// The stamp under which the worker keeps each small buffer's results ([`WireBuffer::keep`]).
    keep: Vec<Option<u64>>,
    answer: Response,
}

/// Whether a launch may name small buffers by the stamp of a device copy the worker keeps
/// ([`WireData::Kept`]), or must send their bytes: the first try, and the one after the worker
/// said it no longer holds them.
#[derive(Clone, Copy, PartialEq)]
enum SmallBytes<'s> {
    KeptWhereUnchanged,
    /// As `KeptWhereUnchanged`, sent while the launch before it is in flight: buffer `i` is
    /// named by the stamp that launch keeps its results under, where the slice gives one.
    AfterInFlight(&'s [Option<u64>]),
    Sent,
}

/// How one module was compiled, for the line under a definition.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileStat {
    /// `sm_90` (a CUBIN) or `compute_90` (PTX).
    pub arch: String,
    pub millis: f64,
    /// Loaded from the compile cache on disk: NVRTC did not run.
    pub cached: bool,
}

impl CompileStat {
    /// `compiled for sm_90 in 48 ms` or `sm_90, from the compile cache`.
    pub fn describe(&self) -> String {
        if self.cached {
            format!("{}, from the compile cache in {:.1} ms", self.arch, self.millis)
        } else {
            format!("compiled for {} in {:.0} ms", self.arch, self.millis)
        }
    }
}

impl GpuBackend {
    /// Find CUDA, start the worker and create the context. `Err` says why no GPU is usable.
    ///
    /// `GRIDLAB_FAKE_GPU=1` starts the fake worker instead (`fake.rs`), for gridlab's own tests
    /// of whole sessions on machines without a GPU; it is named nowhere a learner looks.
    pub fn start(device: usize, timeout: Duration) -> Result<GpuBackend, String> {
        if std::env::var_os("GRIDLAB_FAKE_GPU").is_some_and(|v| v == "1") {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            return GpuBackend::with_worker(Libraries::default(), WorkerCommand::fake(exe), timeout);
        }
        let libs = Libraries::find();
        if let Some(advice) = libs.missing_advice() {
            return Err(advice);
        }
        let command = WorkerCommand::Gpu { libs: libs.clone(), device };
        GpuBackend::with_worker(libs, command, timeout)
    }

    /// Start the backend on the worker that `command` starts, without looking for CUDA first:
    /// [`GpuBackend::start`] for the real worker, gridlab's tests for the fake one (`fake.rs`).
    pub fn with_worker(libs: Libraries, command: WorkerCommand, timeout: Duration) -> Result<GpuBackend, String> {
        let (worker, info) = hello(&command)?;
        Ok(GpuBackend {
            libs,
            command,
            timeout,
            worker: Some(worker),
            info,
            source: None,
            names: Vec::new(),
            last_compile: None,
            cancel: None,
            sent: HashMap::new(),
            last_uploaded_bytes: 0,
            streak: Vec::new(),
            streak_regions: HashMap::new(),
            snapshots: Vec::new(),
            lost: None,
            in_flight: Default::default(),
            generation: 0,
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn libraries(&self) -> &Libraries {
        &self.libs
    }

    /// A fresh worker, given the current module again.
    fn restart(&mut self) -> Result<(), String> {
        self.drop_worker();
        // A new worker has mapped no region yet.
        self.sent.clear();
        let (mut worker, info) = hello(&self.command)?;
        self.info = info;
        if let Some(source) = &self.source {
            let req = Request::Compile { source: source.clone(), options: Vec::new(), names: self.names.clone() };
            match worker.request(&req, COMPILE_TIMEOUT, None) {
                Ok(Response::Compiled { .. }) => {}
                Ok(other) => return Err(format!("the restarted worker could not load the module again: {other:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        self.worker = Some(worker);
        Ok(())
    }

    fn worker(&mut self) -> Result<&mut Worker, BackendError> {
        if self.worker.is_none() {
            self.restart().map_err(BackendError::Unavailable)?;
        }
        self.worker.as_mut().ok_or_else(|| BackendError::Unavailable("the GPU worker did not start".into()))
    }

    /// The worker died or was stopped: start a new one, make again the results that died with
    /// it, and explain, in one paragraph.
    fn recover(&mut self, what: String) -> BackendError {
        let restarted = match self.restart().and_then(|()| self.redo_streak()) {
            Ok(0) => "gridlab restarted the GPU worker and gave it your kernels again; your buffers are as they were before the launch, so nothing was lost.".to_string(),
            Ok(n) => format!(
                "gridlab restarted the GPU worker, gave it your kernels again and ran again the {} before this one, whose results were still on the GPU; your buffers are as they were before this launch, so nothing was lost.",
                plural(n, "launch", "launches")
            ),
            Err(e) if !self.streak.is_empty() || self.lost.is_some() => {
                self.lose_streak("its worker stopped", &e);
                format!("gridlab could not restart the GPU worker and run your earlier launches again ({e}).")
            }
            Err(e) => format!("gridlab could not restart the GPU worker ({e}); your buffers are safe, and `:backend sim` keeps you going."),
        };
        BackendError::Aborted(format!("{what}. {restarted}"))
    }

    /// Run the launches whose results were only on the device again, in a new worker, so it
    /// holds the same results (without their output, which was shown). Returns how many.
    fn redo_streak(&mut self) -> Result<usize, String> {
        if self.streak.is_empty() {
            return Ok(0);
        }
        let worker = self.worker.as_mut().ok_or("no GPU worker")?;
        for (id, (fd, alive)) in &self.streak_regions {
            worker.send_region(*id, fd.as_fd()).map_err(|e| e.to_string())?;
            self.sent.insert(*id, alive.clone());
        }
        for req in &self.streak {
            let mut req = LaunchRequest { released: Vec::new(), ..req.clone() };
            // Small buffers' results from this run are not kept: the host has those of the first
            // run under those stamps, and a racy kernel may give others this time.
            for b in &mut req.buffers {
                b.keep = None;
            }
            let req = Request::Launch(req);
            match worker.request(&req, self.timeout, None) {
                Ok(Response::Launched(_)) => {}
                Ok(Response::Failed { message, .. }) => return Err(message),
                Ok(Response::Trapped { .. }) => return Err("a device-side `assert` failed this time".into()),
                Ok(other) => return Err(format!("unexpected answer {other:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(self.streak.len())
    }

    /// Let go of the launches kept to run again and the device copies they made: a worker
    /// started next starts clean.
    fn forget_streak(&mut self) {
        self.streak.clear();
        self.streak_regions.clear();
        self.snapshots.clear();
        self.drop_worker();
    }

    /// Let the worker go (it exits once its stdin closes, or is killed): launches sent to it
    /// and not answered never ran.
    fn drop_worker(&mut self) {
        self.worker = None;
        self.generation += 1;
    }

    /// The results only the device had are gone, `when` saying how, and `e` why they could
    /// not be made again: the next settle says so.
    fn lose_streak(&mut self, when: &str, e: &str) {
        let n = self.streak.len();
        self.forget_streak();
        self.lost = Some(format!(
            "the results of the last {} were on the GPU when {when}, and gridlab could not make them again ({e}); those buffers are as they were before {}",
            plural(n, "launch", "launches"),
            if n == 1 { "it" } else { "them" }
        ));
    }

    /// Whether the session should read results back before the next launch: the launches to
    /// run again after a fault, or the device memory that only holds results, have grown large.
    /// `pending_bytes` is the size of the buffers whose results are on the device.
    pub fn wants_settle(&self, pending_bytes: u64) -> bool {
        let inline: usize = self
            .streak
            .iter()
            .flat_map(|r| &r.buffers)
            .map(|b| match &b.data {
                WireData::Inline(bytes) => bytes.len(),
                WireData::Kept { .. } | WireData::Shared(_) => 0,
            })
            .sum();
        self.streak.len() >= STREAK_MAX_LAUNCHES
            || inline >= STREAK_MAX_INLINE_BYTES
            // Each such buffer may have a "before" copy beside it.
            || pending_bytes.saturating_mul(2) > self.info.total_mem / 4
            || self.lost.is_some()
    }

    /// Bring every result the launches left on the device back to the host: each buffer marked
    /// [`Buffer::on_device`] gets its bytes, copied into its own memory (already mapped and
    /// pinned by the worker, so at the bus's speed). `Err` when the results are gone (a worker
    /// died and could not make them again, or died while copying them): the caller then keeps
    /// the bytes the buffers hold.
    pub fn settle(&mut self, buffers: &mut [(&str, &mut Buffer)]) -> Result<(), BackendError> {
        if let Some(why) = self.lost.take() {
            return Err(BackendError::Aborted(why));
        }
        let mut items = Vec::new();
        let mut at = Vec::new();
        for (i, (_, b)) in buffers.iter().enumerate() {
            if let (Some(stamp), Some(region)) = (b.on_device(), b.shared()) {
                items.push(ReadItem { stamp, len: b.size_bytes() as u64, region: region.id(), keep: true });
                at.push(i);
            }
        }
        if items.is_empty() {
            return Ok(());
        }
        // The bytes being written are the ones a new worker would start the launches again
        // from: once the copy begins there is no going back, so a worker that dies now does not
        // run them again (from half-written bytes).
        let streak = std::mem::take(&mut self.streak);
        self.streak_regions.clear();
        let named = at.iter().map(|&i| format!("`{}`", buffers[i].0)).collect::<Vec<_>>().join(", ");
        let launches = plural(streak.len().max(1), "launch", "launches");
        let answer = {
            let regions: Vec<&SharedBytes> = at.iter().filter_map(|&i| buffers[i].1.shared()).collect();
            self.read(&items, regions.into_iter(), "reading results back from the GPU")
        };
        let missing = match answer {
            Ok(missing) => missing,
            Err(e) => {
                self.snapshots.clear();
                return Err(BackendError::Aborted(format!(
                    "{e}; it stopped while copying the results of the last {launches} back, so {named} may hold part of them"
                )));
            }
        };
        if !missing.is_empty() {
            self.forget_streak();
            return Err(BackendError::Aborted(format!(
                "the GPU worker no longer held the results of the last {launches}; {named} {} as before them",
                if at.len() == 1 { "is" } else { "are" }
            )));
        }
        for (item, &i) in items.iter().zip(&at) {
            buffers[i].1.settled(item.stamp);
        }
        Ok(())
    }

    /// Read the last launch's "before" copies (`befores`, deferred buffers from
    /// [`Backend::launch`]) back from the device, each into memory of its own. `Err` when the
    /// device no longer has them (its worker was restarted since).
    pub fn settle_befores(&mut self, befores: &mut [(&str, &mut Buffer)]) -> Result<(), BackendError> {
        let mut items = Vec::new();
        let mut regions = Vec::new();
        let mut at = Vec::new();
        for (j, (_, b)) in befores.iter().enumerate() {
            if let Some(stamp) = b.on_device() {
                let r = SharedBytes::scratch(b.size_bytes())
                    .map_err(|e| BackendError::Launch(format!("could not make room to read a buffer back: {e}")))?;
                items.push(ReadItem { stamp, len: b.size_bytes() as u64, region: r.id(), keep: false });
                regions.push(r);
                at.push(j);
            }
        }
        if items.is_empty() {
            return Ok(());
        }
        let missing = self.read(&items, regions.iter(), "reading the last launch's inputs back from the GPU")?;
        if !missing.is_empty() {
            return Err(BackendError::Launch(
                "the GPU no longer holds the buffers as they were before the last launch (its worker was restarted since)"
                    .into(),
            ));
        }
        for ((item, region), j) in items.iter().zip(regions).zip(at) {
            befores[j].1.fill_deferred(region);
            self.snapshots.retain(|s| *s != item.stamp);
        }
        Ok(())
    }

    /// Give the worker the regions it lacks, then ask it to read `items` into them.
    /// Ctrl-C does not stop a read: it takes milliseconds, and stopped half-way it would leave
    /// a buffer half-written.
    fn read<'r>(
        &mut self,
        items: &[ReadItem],
        regions: impl Iterator<Item = &'r SharedBytes>,
        what: &str,
    ) -> Result<Vec<u64>, BackendError> {
        self.give_regions(regions, what)?;
        let cancel = self.cancel.take();
        let answer = self.call(&Request::Read { items: items.to_vec() }, self.timeout, what);
        self.cancel = cancel;
        match answer? {
            Response::Read { missing } => Ok(missing),
            other => Err(unexpected(other)),
        }
    }

    /// Send the worker each region it has not been given yet, and name the regions freed since
    /// the last request (returned, for the request to carry).
    fn give_regions<'r>(
        &mut self,
        regions: impl Iterator<Item = &'r SharedBytes>,
        what: &str,
    ) -> Result<Vec<u64>, BackendError> {
        // A worker started now has been given nothing yet.
        self.worker()?;
        let new: Vec<&SharedBytes> = regions.filter(|r| !self.sent.contains_key(&r.id())).collect();
        let mut released = Vec::new();
        self.sent.retain(|id, alive| {
            let live = alive.strong_count() > 0;
            if !live {
                released.push(*id);
            }
            live
        });
        // Regions new to this worker are mostly fresh memory: make their pages now, on several
        // threads, rather than one fault at a time as the worker pins them.
        for r in &new {
            r.populate();
        }
        let mut given = Ok(());
        let worker = self.worker()?;
        for r in &new {
            given = worker.send_region(r.id(), r.fd());
            if given.is_err() {
                break;
            }
        }
        if let Err(e) = given {
            return Err(self.recover(format!("{what} took the GPU worker down ({e})")));
        }
        for r in new {
            self.sent.insert(r.id(), r.liveness());
        }
        Ok(released)
    }

    /// Launch `repeat` times in a row on the device (for `:time`): kernel time of each launch
    /// from CUDA events, and the host time of each launch call. Buffers are not written back.
    pub fn time(
        &mut self,
        spec: &LaunchSpec,
        buffers: &LaunchBuffers<'_>,
        repeat: u32,
    ) -> Result<(Vec<f32>, Vec<f64>), BackendError> {
        let what = format!("timing `{}`", spec.kernel);
        match self.send_launch(spec, buffers, repeat, false, &what, SmallBytes::KeptWhereUnchanged)?.answer {
            Response::Launched(r) => Ok((r.kernel_ms, r.launch_us)),
            Response::Trapped { printed } => {
                Err(BackendError::Launch(format!("{what} stopped at a failing `assert`: {}", printed.trim())))
            }
            other => Err(unexpected(other)),
        }
    }

    /// A kernel's registers, shared and local memory, and its occupancy for blocks of
    /// `block_size` threads (for `:info`).
    pub fn kernel_info(&mut self, kernel: &str, block_size: u32) -> Result<KernelInfo, BackendError> {
        let req = Request::Info { kernel: kernel.to_string(), block_size };
        match self.call(&req, COMPILE_TIMEOUT, &format!("reading `{kernel}`'s attributes"))? {
            Response::Info(info) => Ok(info),
            other => Err(unexpected(other)),
        }
    }

    /// The PTX of the current module (for `:ptx`).
    pub fn ptx(&mut self) -> Result<String, BackendError> {
        match self.call(&Request::Ptx, COMPILE_TIMEOUT, "making the PTX")? {
            Response::Ptx(p) => Ok(p),
            other => Err(unexpected(other)),
        }
    }

    /// The request for `repeat` launches of `spec` over `buffers`, their results kept on the
    /// device when `write_back`. Large buffers go as shared regions: each region the worker has
    /// not been given yet is sent to it first, and regions freed since the last request are
    /// named for it to let go.
    ///
    /// A small buffer goes inline, or (`small` allowing it) as the stamp of the device copy a
    /// launch left when the host has not changed it since; either way, the worker keeps the
    /// device copy of its results under a new stamp (`WireBuffer::keep`) when `write_back`.
    /// A launch that writes large buffers back sends every small one's bytes: it may be run again
    /// in a new worker, which holds no copies.
    fn prepare(
        &mut self,
        spec: &LaunchSpec,
        buffers: &LaunchBuffers<'_>,
        repeat: u32,
        write_back: bool,
        small: SmallBytes<'_>,
        what: &str,
    ) -> Result<Prepared, BackendError> {
        let mut wire = Vec::new();
        let mut results = Vec::new();
        let may_name = small != SmallBytes::Sent && buffers.buffers.iter().all(|b| b.shared().is_none());
        for (i, b) in buffers.buffers.iter().enumerate() {
            let elem_size = b.dtype().size() as u32;
            let Some(source) = b.shared() else {
                // A copy of a buffer launched beside it has the same stamp, and needs a device
                // copy of its own: its bytes go.
                let after = match small {
                    SmallBytes::AfterInFlight(stamps) => stamps.get(i).copied().flatten(),
                    _ => None,
                };
                let stamp = after.or_else(|| {
                    b.stamp().filter(|s| may_name && !buffers.buffers[..i].iter().any(|o| o.stamp() == Some(*s)))
                });
                let data = match stamp {
                    Some(stamp) => WireData::Kept { stamp, len: b.size_bytes() as u64 },
                    None => WireData::Inline(b.bytes().to_vec()),
                };
                let keep = write_back.then(|| NEXT_STAMP.fetch_add(1, Ordering::Relaxed));
                wire.push(WireBuffer { data, elem_size, keep });
                results.push(None);
                continue;
            };
            let on_device = b.on_device();
            let result = write_back.then(|| NEXT_STAMP.fetch_add(1, Ordering::Relaxed));
            // The launch's "before" stays on the device under the stamp of the contents it
            // starts from (a new one for bytes the host changed since their last stamp).
            let snapshot = write_back
                .then(|| on_device.or(b.stamp()).unwrap_or_else(|| NEXT_STAMP.fetch_add(1, Ordering::Relaxed)));
            wire.push(WireBuffer {
                data: WireData::Shared(SharedBuffer {
                    region: source.id(),
                    len: b.size_bytes() as u64,
                    stamp: on_device.unwrap_or(b.last_stamp()),
                    fresh: on_device.is_some() || b.stamp().is_some(),
                    device_only: on_device.is_some(),
                    snapshot,
                    result,
                }),
                elem_size,
                keep: None,
            });
            results.push(result.zip(snapshot));
        }
        let released = self.give_regions(buffers.buffers.iter().filter_map(|b| b.shared()), what)?;
        let request = LaunchRequest {
            kernel: spec.kernel.clone(),
            grid: spec.grid.as_array(),
            block: spec.block.as_array(),
            shared_bytes: spec.shared_bytes,
            args: wire_args(spec, buffers),
            buffers: wire,
            repeat,
            symbols: spec.symbols.iter().map(|w| (w.name.clone(), w.bytes.clone())).collect(),
            released,
            drop_after: if write_back { self.snapshots.clone() } else { Vec::new() },
        };
        Ok(Prepared { request, results })
    }

    /// Prepare and send a launch, and wait for its answer: the request (kept to run again after
    /// a fault), the stamps its results get, and the answer. A worker that no longer holds the
    /// device copies a small buffer was named by (a new worker, or one that let them go) says
    /// so, and the launch goes again with their bytes. The timeout applies to each of the
    /// `repeat` launches.
    fn send_launch(
        &mut self,
        spec: &LaunchSpec,
        buffers: &LaunchBuffers<'_>,
        repeat: u32,
        write_back: bool,
        what: &str,
        mut small: SmallBytes<'_>,
    ) -> Result<Sent, BackendError> {
        let timeout = self.timeout.saturating_mul(repeat.max(1));
        loop {
            let prepared = self.prepare(spec, buffers, repeat, write_back, small, what)?;
            let keep = prepared.request.buffers.iter().map(|b| b.keep).collect();
            let request = Request::Launch(prepared.request);
            match self.call(&request, timeout, what)? {
                Response::NotKept { .. } if small != SmallBytes::Sent => small = SmallBytes::Sent,
                answer => return Ok(Sent { request, results: prepared.results, keep, answer }),
            }
        }
    }

    /// Send a request and turn every failure into a `BackendError`. A sticky CUDA error, a
    /// timeout, Ctrl-C or a dead worker restart the worker, and the message names `what` was
    /// stopped; other CUDA errors are plain. Any other answer is the caller's to read.
    fn call(&mut self, req: &Request, timeout: Duration, what: &str) -> Result<Response, BackendError> {
        // A launch in flight whose answer the worker has still to give (not one taken early, or
        // sent to a worker that has gone since).
        let waiting = self.in_flight.iter().position(|f| f.answer.is_none() && f.generation == self.generation);
        if let Some(at) = waiting {
            // The worker answers in order: a request sent before a launch's answer was taken
            // would take that answer for its own. The session never does this; should it
            // happen, the launch's answer is not waited for and a new worker starts clean
            // (running again the launches whose results only the device had).
            let f = &self.in_flight[at];
            debug_assert!(false, "a request sent while {} was in flight", f.what);
            let f = format!("{} was still running when gridlab asked the GPU worker for more", f.what);
            self.in_flight.clear();
            return Err(self.recover(f));
        }
        let cancel = self.cancel.clone();
        let answer = self.worker()?.request(req, timeout, cancel.as_deref());
        self.judge(req, answer, what)
    }

    /// Turn a request's answer, or the reason there is none, into what [`GpuBackend::call`]
    /// returns (see there).
    fn judge(
        &mut self,
        req: &Request,
        answer: Result<Response, WorkerError>,
        what: &str,
    ) -> Result<Response, BackendError> {
        match answer {
            Ok(Response::Failed { message, sticky: true }) => {
                Err(self.recover(format!("{what} stopped with an error on the GPU ({message})")))
            }
            Ok(Response::Failed { message, .. }) => Err(BackendError::Launch(message)),
            // A failing `assert` is the kernel's finding, not gridlab's failure: the worker, whose
            // context is gone, is left to exit, and the next request starts another without a word
            // (at once, when results only the device had must be made again).
            Ok(resp @ Response::Trapped { .. }) => {
                self.drop_worker();
                if !self.streak.is_empty()
                    && let Err(e) = self.restart().and_then(|()| self.redo_streak())
                {
                    self.lose_streak("a failing `assert` stopped its worker", &e);
                }
                Ok(resp)
            }
            Ok(resp) => Ok(resp),
            Err(WorkerError::Interrupted) => Err(self.recover(format!("{what} stopped by Ctrl-C"))),
            Err(WorkerError::TimedOut(t)) => {
                let hint = if matches!(req, Request::Launch(_)) { " (the --timeout)" } else { "" };
                Err(self.recover(format!("{what} ran longer than {} s{hint}, so gridlab stopped it", t.as_secs_f64())))
            }
            Err(e) => Err(self.recover(format!("{what} took the GPU worker down ({e})"))),
        }
    }

    /// Send a launch of `spec` over `buffers` and return without waiting for it: the session
    /// goes on with the next inputs while the GPU runs this one, and takes the answer with
    /// [`GpuBackend::end_launch`] before anything but another launch reaches the worker (nothing
    /// may change `buffers` meanwhile). A worker that died is noticed here and restarted, as by
    /// a launch. `Ok(true)`: sent.
    ///
    /// With launches already in flight, this one is sent behind them (the worker runs them in
    /// order), so the worker need not wait for the session between them: `after` gives, for
    /// each of `buffers` launched by one of them, which (its place in the order they were sent,
    /// the oldest not taken first) and the buffer's place among that launch's buffers; the
    /// latest such launch, where several were. None of them may have a large buffer. Such a
    /// buffer is named by the stamp that launch keeps its results under: should that launch
    /// fail, this one is told `NotKept` and sent again with the bytes the host has, those from
    /// before the launch that failed; should the failure take the worker down, this one never
    /// ran, and is sent again to the new worker.
    ///
    /// `Ok(false)`, nothing sent: the caller takes the oldest answer first, and asks again. So
    /// it is when a launch in flight was sent to a worker that has gone since, or had its answer
    /// taken early (those launches go again first, in order), and when the requests sent and
    /// not answered would no longer fit in the pipe with this one ([`BEHIND_BYTES`]).
    pub fn begin_launch(
        &mut self,
        spec: &LaunchSpec,
        buffers: &LaunchBuffers<'_>,
        after: &[Option<(usize, usize)>],
    ) -> Result<bool, BackendError> {
        if self.in_flight.iter().any(|f| f.generation != self.generation || f.answer.is_some()) {
            return Ok(false);
        }
        let start = Instant::now();
        let what = format!("`{}`", spec.kernel);
        let renamed: Vec<Option<u64>> = if self.in_flight.is_empty() {
            Vec::new()
        } else {
            after.iter().map(|a| a.and_then(|(k, j)| self.in_flight.get(k)?.keep.get(j).copied().flatten())).collect()
        };
        let small =
            if renamed.is_empty() { SmallBytes::KeptWhereUnchanged } else { SmallBytes::AfterInFlight(&renamed) };
        let prepared = self.prepare(spec, buffers, 1, true, small, &what)?;
        let keep = prepared.request.buffers.iter().map(|b| b.keep).collect();
        let request = Request::Launch(prepared.request);
        let ahead: usize = self.in_flight.iter().map(|f| f.bytes).sum();
        let alone = self.in_flight.is_empty();
        let worker = self.worker()?;
        let room = if alone { usize::MAX } else { BEHIND_BYTES.min(worker.request_room() / 2).saturating_sub(ahead) };
        let bytes = match worker.send_within(&request, room) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                // The regions it would have named as freed are named by the next request.
                if let Request::Launch(r) = &request {
                    for id in &r.released {
                        self.sent.insert(*id, Weak::new());
                    }
                }
                return Ok(false);
            }
            Err(e) if self.in_flight.is_empty() => return self.judge(&request, Err(e), &what).map(|_| false),
            // A launch ahead took the worker down: its answer says so, and this one is sent again
            // once that answer is taken.
            Err(_) => 0,
        };
        let generation = self.generation;
        self.in_flight.push_back(InFlight {
            request,
            results: prepared.results,
            keep,
            start,
            what,
            generation,
            answer: None,
            bytes,
        });
        Ok(true)
    }

    /// Whether a launch was sent with [`GpuBackend::begin_launch`] and its answer not taken.
    pub fn launch_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Wait for the first launch [`GpuBackend::begin_launch`] sent and not yet taken, and take
    /// its results into `buffers` (the same buffers, unchanged since), as [`Backend::launch`]
    /// does: the same report, the same errors, a fault or a timeout recovered the same way.
    /// Without a launch in flight, this is [`Backend::launch`].
    pub fn end_launch(
        &mut self,
        module: &Module,
        spec: &LaunchSpec,
        buffers: &mut LaunchBuffers<'_>,
    ) -> Result<LaunchReport, BackendError> {
        let Some(mut f) = self.in_flight.pop_front() else { return self.launch(module, spec, buffers) };
        if f.generation != self.generation {
            // Sent behind a launch that took its worker down: it never ran. It goes now.
            let sent = self.send_launch(spec, buffers, 1, true, &f.what, SmallBytes::KeptWhereUnchanged)?;
            return self.finish_launch(module, spec, buffers, sent, f.start);
        }
        let answer = match f.answer.take() {
            Some(answer) => answer,
            None => self.take_answer(),
        };
        if matches!(answer, Ok(Response::NotKept { .. })) {
            // This launch goes again, with its bytes; the answers of the launches sent behind it
            // are taken first, in order, for the worker answers in order. Should one of them
            // have taken the worker down, its own answer says so when it is taken, this one goes
            // to a new worker (which runs again the launches whose results only the device had),
            // and the launches behind that one, which never ran, go again in their turn.
            for at in 0..self.in_flight.len() {
                let behind = &self.in_flight[at];
                if behind.answer.is_some() || behind.generation != self.generation {
                    break;
                }
                let behind_answer = self.take_answer();
                let fatal = !matches!(
                    behind_answer,
                    Ok(Response::Launched(_) | Response::NotKept { .. } | Response::Failed { sticky: false, .. })
                );
                if fatal && let Err(e) = self.restart().and_then(|()| self.redo_streak()) {
                    self.lose_streak("its worker stopped", &e);
                }
                let generation = self.generation;
                let behind = &mut self.in_flight[at];
                behind.answer = Some(behind_answer);
                // Its answer is taken: it is not sent again, whichever worker runs next.
                behind.generation = generation;
                if fatal {
                    break;
                }
            }
        }
        let sent = match self.judge(&f.request, answer, &f.what)? {
            // The worker let a small buffer's copy go: the launch goes again, with the bytes.
            Response::NotKept { .. } => self.send_launch(spec, buffers, 1, true, &f.what, SmallBytes::Sent)?,
            answer => Sent { request: f.request, results: f.results, keep: f.keep, answer },
        };
        self.finish_launch(module, spec, buffers, sent, f.start)
    }

    /// The worker's answer to the oldest request it has not answered, waited for up to the
    /// launch timeout.
    fn take_answer(&mut self) -> Result<Response, WorkerError> {
        let cancel = self.cancel.clone();
        match self.worker.as_mut() {
            Some(worker) => worker.answer(self.timeout, cancel.as_deref()),
            None => Err(WorkerError::Died { stderr: String::new() }),
        }
    }

    /// A launch's answer, taken: its results into `buffers`, and its report.
    fn finish_launch(
        &mut self,
        module: &Module,
        spec: &LaunchSpec,
        buffers: &mut LaunchBuffers<'_>,
        sent: Sent,
        start: Instant,
    ) -> Result<LaunchReport, BackendError> {
        let Sent { request, results, keep, answer } = sent;
        let mut result = match answer {
            Response::Launched(r) if r.buffers.len() == buffers.buffers.len() => r,
            Response::Trapped { printed } => return Ok(trapped(module, spec, &printed, start.elapsed())),
            other => return Err(unexpected(other)),
        };
        self.last_uploaded_bytes = result.uploaded_bytes;
        let keeps = results.iter().any(Option::is_some);
        // The "before" copies of the last launch go once this one has succeeded (`drop_after`).
        let (before, snapshots) = take_results(buffers, results, &keep, &mut result);
        self.snapshots = snapshots;
        // Results left on the device: keep the request, and the regions it reads, to run it
        // again in a new worker should this one die before they are read.
        if keeps && let Request::Launch(req) = request {
            for b in buffers.buffers.iter() {
                if let Some(s) = b.shared()
                    && !self.streak_regions.contains_key(&s.id())
                    && let Ok(fd) = s.fd().try_clone_to_owned()
                {
                    self.streak_regions.insert(s.id(), (fd, s.liveness()));
                }
            }
            self.streak.push(req);
        }
        let findings = result
            .guard_hits
            .iter()
            .filter_map(|h| {
                let i = h.buffer as usize;
                Some(Finding::GuardWrite {
                    memory: Memory::Global(buffers.names.get(i)?.clone()),
                    len: buffers.buffers.get(i)?.len() as u64,
                    count: h.count,
                    min_index: h.min_index,
                    max_index: h.max_index,
                })
            })
            .collect();
        let output = result.printf.lines().map(|l| PrintLine { thread: None, text: l.to_string() }).collect();
        Ok(LaunchReport {
            elapsed: start.elapsed(),
            steps: None,
            kernel_ms: result.kernel_ms.first().copied(),
            findings,
            output,
            output_truncated: false,
            aborted: false,
            // Write traces and watches are the simulator's (`:map` and `:why` run there).
            writes: None,
            watched: None,
            // The cost model runs in the simulator; `cost` on the GPU asks it separately.
            cost: None,
            before: Some(before),
        })
    }
}

fn unexpected(answer: Response) -> BackendError {
    BackendError::Launch(format!("unexpected answer from the GPU worker: {answer:?}"))
}

fn hello(command: &WorkerCommand) -> Result<(Worker, DeviceInfo), String> {
    let mut worker = Worker::spawn(command).map_err(|e| e.to_string())?;
    match worker.request(&Request::Hello, START_TIMEOUT, None) {
        Ok(Response::Hello(info)) => Ok((worker, info)),
        Ok(Response::Failed { message, .. }) => Err(message),
        Ok(other) => Err(format!("unexpected answer from the GPU worker: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A launch's arguments as the worker takes them.
fn wire_args(spec: &LaunchSpec, buffers: &LaunchBuffers<'_>) -> Vec<WireArg> {
    spec.args
        .iter()
        .map(|a| match a {
            Arg::Buffer(i) => WireArg::Buffer(*i as u32),
            Arg::View { buffer, offset } => WireArg::View {
                buffer: *buffer as u32,
                byte_offset: buffers.buffers.get(*buffer).map_or(0, |b| (offset * b.dtype().size()) as u64),
            },
            Arg::Scalar(s) => WireArg::Scalar(s.to_le_bytes()),
            Arg::Null => WireArg::Scalar(0u64.to_le_bytes().to_vec()),
            // Members of one type lie one after another with no padding: the struct's bytes.
            Arg::Struct(members) => WireArg::Scalar(members.iter().flat_map(|m| m.to_le_bytes()).collect()),
        })
        .collect()
}

/// Take a launch's results into `buffers` and return the buffers as they were before it. A
/// shared buffer's results stay on the device: the buffer is marked [`Buffer::on_device`], and
/// its "before", also on the device, is a deferred buffer too ([`GpuBackend::settle`] and
/// [`GpuBackend::settle_befores`] read them); the stamps of those "before" copies come back
/// too. A small buffer takes the answer's bytes as its own (taken out of `answer`), its old
/// bytes becoming its "before", and the stamp the worker keeps them under (`keep`). Every element counts as written, since the GPU does not say which a kernel wrote
/// (compute-sanitizer's initcheck would).
fn take_results(
    buffers: &mut LaunchBuffers<'_>,
    results: Vec<Option<(u64, u64)>>,
    keep: &[Option<u64>],
    answer: &mut LaunchResult,
) -> (Vec<Buffer>, Vec<u64>) {
    let mut before = Vec::new();
    let mut snapshots = Vec::new();
    for (i, (b, result)) in buffers.buffers.iter_mut().zip(results).enumerate() {
        match result {
            Some((stamp, snapshot)) => {
                snapshots.push(snapshot);
                before.push(Buffer::deferred_before(b, snapshot));
                b.defer_to_device(stamp);
                b.mark_all_written();
            }
            None => {
                match answer.buffers.get_mut(i).filter(|bytes| bytes.len() == b.size_bytes()) {
                    Some(bytes) => {
                        // The answer's bytes become the buffer's, and its old ones its "before":
                        // moved, not copied.
                        before.push(b.replace_bytes(std::mem::take(bytes).into_vec()));
                        // The worker kept the device copy of these very bytes: the next launch
                        // of the unchanged buffer names it instead of sending them.
                        if let Some(stamp) = keep.get(i).copied().flatten() {
                            b.set_stamp(stamp);
                        }
                    }
                    None => before.push((**b).clone()),
                }
                b.mark_all_written();
            }
        }
    }
    (before, snapshots)
}

/// `1 launch`, `3 launches`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The report of a launch a failing device-side `assert` stopped: a trap finding, as the
/// simulator reports one, so that `expect finding trap` means the same on both backends. The
/// thread is the one the device names (`block: [1,0,0], thread: [5,0,0]`), the place the
/// kernel's name; the buffers are as they were before the launch (the GPU's are lost with its
/// context), as after any stopped launch.
fn trapped(module: &Module, spec: &LaunchSpec, printed: &str, elapsed: Duration) -> LaunchReport {
    let span = module
        .kernel(&spec.kernel)
        .map(|k| k.name_span)
        .or_else(|| module.gpu_only_kernel(&spec.kernel).map(|g| g.at))
        .unwrap_or_default();
    let triple = |key: &str| -> [u32; 3] {
        let Some(rest) = printed.split_once(key).map(|(_, r)| r) else { return [0; 3] };
        let Some(inner) = rest.trim_start().strip_prefix('[').and_then(|r| r.split_once(']')).map(|(i, _)| i) else {
            return [0; 3];
        };
        let mut v = [0u32; 3];
        for (slot, part) in v.iter_mut().zip(inner.split(',')) {
            *slot = part.trim().parse().unwrap_or(0);
        }
        v
    };
    let thread = crate::finding::ThreadRef {
        block: triple("block:"),
        thread: triple("thread:"),
        ranks: [spec.grid.rank(), spec.block.rank()],
    };
    let condition = printed.split_once("Assertion `").and_then(|(_, r)| r.rsplit_once("` failed")).map(|(c, _)| c);
    let message = match condition {
        Some(c) => format!("assertion failed: `{c}`"),
        None => "assertion failed".to_string(),
    };
    let site = crate::finding::Site { thread, access: crate::finding::Access::Read, span };
    let output = printed
        .lines()
        .filter(|l| !l.contains("Assertion `"))
        .map(|l| PrintLine { thread: None, text: l.to_string() })
        .collect();
    LaunchReport {
        elapsed,
        steps: None,
        kernel_ms: None,
        findings: vec![Finding::Trap { site, message }],
        output,
        output_truncated: false,
        aborted: true,
        writes: None,
        watched: None,
        cost: None,
        before: None,
    }
}

/// `NVIDIA H100 80GB HBM3` -> `H100`: short enough for a prompt.
pub fn short_name(name: &str) -> String {
    let words: Vec<&str> = name.split_whitespace().filter(|w| !w.eq_ignore_ascii_case("nvidia")).collect();
    match words.as_slice() {
        ["GeForce", rest @ ..] => rest.iter().take(2).copied().collect::<Vec<_>>().join(" "),
        ["Tesla" | "Quadro", model, ..] => model.to_string(),
        [first, ..] => first.to_string(),
        [] => "gpu".to_string(),
    }
}

impl Backend for GpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn label(&self) -> String {
        short_name(&self.info.name)
    }

    fn load(&mut self, module: &Module, sources: &SourceMap) -> Result<(), BackendError> {
        let source = source::generate(module, sources);
        let names: Vec<String> = module.launched_instances().map(|i| i.name.clone()).collect();
        if self.source.as_deref() == Some(source.as_str()) && self.names == names {
            // What the worker has already: nothing to compile.
            return Ok(());
        }
        let req = Request::Compile { source: source.clone(), options: Vec::new(), names: names.clone() };
        match self.call(&req, COMPILE_TIMEOUT, "compiling the module")? {
            Response::Compiled { log, arch, millis, cached } => {
                self.source = Some(source);
                self.names = names;
                self.last_compile = Some(CompileStat { arch, millis, cached });
                let warnings = source::map_log(&log, sources);
                if warnings.iter().any(|d| d.is_error()) {
                    return Err(BackendError::Compile(warnings));
                }
                Ok(())
            }
            Response::CompileFailed { log } => Err(BackendError::Compile(source::map_log(&log, sources))),
            other => Err(unexpected(other)),
        }
    }

    fn launch(
        &mut self,
        module: &Module,
        spec: &LaunchSpec,
        buffers: &mut LaunchBuffers<'_>,
    ) -> Result<LaunchReport, BackendError> {
        let start = Instant::now();
        let what = format!("`{}`", spec.kernel);
        let sent = self.send_launch(spec, buffers, 1, true, &what, SmallBytes::KeptWhereUnchanged)?;
        self.finish_launch(module, spec, buffers, sent, start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_fit_a_prompt() {
        assert_eq!(short_name("NVIDIA H100 80GB HBM3"), "H100");
        assert_eq!(short_name("NVIDIA GeForce RTX 4090"), "RTX 4090");
        assert_eq!(short_name("Tesla T4"), "T4");
        assert_eq!(short_name(""), "gpu");
    }

    #[test]
    fn compiles_are_described_with_their_time_or_the_cache() {
        let fresh = CompileStat { arch: "sm_90".into(), millis: 48.4, cached: false };
        assert_eq!(fresh.describe(), "compiled for sm_90 in 48 ms");
        let hit = CompileStat { cached: true, millis: 0.7, ..fresh };
        assert_eq!(hit.describe(), "sm_90, from the compile cache in 0.7 ms");
    }

    /// A view is the buffer's device pointer moved on by its offset in bytes of the buffer's
    /// element type, as host code's `d_a + offset` is.
    #[test]
    fn a_view_goes_to_the_worker_as_a_byte_offset_into_its_buffer() {
        use crate::buffer::{Buffer, Shape};
        use crate::dtype::DType;
        let mut a = Buffer::zeros(DType::F64, Shape::D1(8));
        let mut b = Buffer::zeros(DType::I16, Shape::D1(8));
        let lb = LaunchBuffers { names: vec!["a".into(), "b".into()], buffers: vec![&mut a, &mut b] };
        let spec = LaunchSpec {
            kernel: "k".into(),
            grid: crate::backend::Dim3::ONE,
            block: crate::backend::Dim3::ONE,
            shared_bytes: 0,
            args: vec![Arg::View { buffer: 0, offset: 3 }, Arg::Buffer(1), Arg::View { buffer: 1, offset: 8 }],
            symbols: Vec::new(),
        };
        assert_eq!(
            wire_args(&spec, &lb),
            vec![
                WireArg::View { buffer: 0, byte_offset: 24 },
                WireArg::Buffer(1),
                WireArg::View { buffer: 1, byte_offset: 16 }
            ]
        );
    }
}
