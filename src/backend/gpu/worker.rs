//! The GPU worker: the same executable, started by the session as `gridlab worker` (a hidden
//! subcommand). It owns the CUDA context, the loaded module and, during a launch, the device
//! buffers; the session owns everything else. A kernel that faults or never ends can only take
//! this process down, and the session starts a new one.
//!
//! A launch over small buffers queues everything on the stream and waits once: the upload from
//! pinned staging memory, the kernel between its timing events, the guard check kernel
//! (`guard.rs`, compiled on first use), which also copies the results back into the staging
//! memory (the device writes it directly; one operation after the learner's kernel, not one
//! copy per buffer), and an event after it all. A guard the check finds changed is left by it in
//! pinned memory, read there to name what was written, and filled with the pattern again.
//!
//! The request loop is `serve.rs`: a launch is begun (`queue_launch`) and finished
//! (`finish_launch`) in two steps, and a launch over small buffers that arrives while the one
//! ahead still runs is queued behind it before the one ahead is waited for, so the GPU goes from
//! one to the next without waiting for this process. Each launch in flight has its own [`Slot`]
//! (staging memory, events, the check's flags and dumps), and a small buffer's results are kept
//! as soon as its check is queued, so the launch behind runs on them, the stream keeping the two
//! in order.
//!
//! Device `printf` writes to file descriptor 1, so at start the worker moves its stdout to an
//! in-memory file and speaks the protocol on a duplicate of the original descriptor.
//!
//! Large buffers arrive as shared regions (`transport.rs`), mapped here and pinned for the
//! driver, and are copied between them and the device with `cuMemcpy` directly. After a launch
//! the worker keeps each such buffer's results on the device under a new stamp, held until the
//! session reads them (`Request::Read`), so a run of launches costs no copy to the host per
//! launch, and the next launch of the unchanged buffer uploads nothing. A launch of contents only
//! the device holds keeps a copy of them first (the launch's "before", for `:why` and the changed
//! elements). A fault ends this process and every device copy with it: the session still has the
//! bytes from before those launches and runs them again in the next worker (`gpu.rs`).

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::FromRawFd;
use std::process::ExitCode;
use std::time::Instant;

use cudarc::driver::{result, sys};
use cudarc::nvrtc;
use serde_bytes::ByteBuf;

use super::cache;
use super::guard::{self, GUARD_BYTES, PATTERN};
use super::profile::{self, Phase};
use super::protocol::{
    self, DeviceInfo, KernelInfo, LaunchRequest, LaunchResult, Request, Response, SharedBuffer, WireArg, WireData,
};
use super::serve::{self, Begun};
use super::transport::Regions;

/// Device printf buffer: large enough for a lesson's worth of output per launch.
const PRINTF_FIFO_BYTES: usize = 16 << 20;

struct Worker {
    ordinal: usize,
    ctx: Option<sys::CUcontext>,
    module: Option<sys::CUmodule>,
    last_source: Option<(String, String)>,
    /// Template kernel instances of the loaded module and their mangled names.
    lowered: HashMap<String, String>,
    /// The loaded module may print (device `printf`): its source names `printf`, or its image
    /// calls `vprintf`. A launch of a module that cannot print skips looking at the printf file,
    /// a flush and a system call per launch.
    prints: bool,
    printf: File,
    printf_read: u64,
    /// The shared regions the session gave this worker, and those of them pinned.
    regions: Regions,
    pinned: std::collections::HashSet<u64>,
    /// Device copies of shared buffers kept between launches, by the stamp of their bytes.
    resident: Vec<Resident>,
    /// At most this many bytes of device copies are kept (half the device's memory).
    budget: usize,
    /// Counts launches, for the least recently used device copy.
    tick: u64,
    /// Allocations a launch is done with, kept for the next launch of the same sizes: a
    /// `cuMemFree` waits for the whole device, and most launches repeat the last one's sizes.
    spare: Vec<DeviceBuffer>,
    /// What each launch in flight uses on the host (its staging memory, events, guard flags),
    /// at most [`serve::IN_FLIGHT`] at once, and which of them a launch begun and not yet
    /// finished holds. A launch takes the first free one, so a session whose launches never
    /// overlap makes only the first.
    slots: [Slot; serve::IN_FLIGHT],
    busy: [bool; serve::IN_FLIGHT],
    /// The loaded module's kernels and `__device__` variables as looked up, so a launch asks the
    /// driver for each name once per module (a variable the module lacks is `None`).
    functions: HashMap<String, sys::CUfunction>,
    globals: HashMap<String, Option<(sys::CUdeviceptr, usize)>>,
    /// The guard check on the device, made at the first launch; `Some(None)` where it could not
    /// be made, and the guards are then checked on the host.
    checker: Option<Option<DeviceCheck>>,
}

/// The device-side guard check (`guard::check_source`): its own module and kernel.
struct DeviceCheck {
    func: sys::CUfunction,
}

/// What one launch in flight uses on the host, one set per launch that may be in flight at once
/// ([`serve::IN_FLIGHT`]): a launch queued behind another must not write the memory the one
/// ahead still reads back, nor record over its events.
#[derive(Default)]
struct Slot {
    /// Pinned memory the launch's small buffers go up from and their results come back into.
    staging: Staging,
    /// Its timing events, and the event after everything it queued (without timing, which
    /// makes it cheaper to record and to ask about), made once.
    events: Option<[sys::CUevent; 3]>,
    /// The guard check's flags and dumps, in pinned memory the device writes.
    marks: Option<Marks>,
}

/// Pinned host memory the device writes directly (`cuMemHostAlloc` with `DEVICEMAP`), so that
/// reading it costs no copy: a flag word per guard, and room for every guard's bytes, where the
/// check kernel leaves a guard it found changed before it fills it with the pattern again. One
/// allocation for both: pinning memory is slow on some machines.
struct Marks {
    base: *mut u8,
    base_device: sys::CUdeviceptr,
    /// Guards there is room for.
    capacity: usize,
}

impl Marks {
    /// Room for `n` guards, each flag set to [`guard::UNCHECKED`]; `None` where the driver gives
    /// no such memory. `old` is let go when it is too small (no launch uses it any more).
    fn reset(old: Option<Marks>, n: usize) -> Option<Marks> {
        let marks = match old {
            Some(m) if m.capacity >= n => m,
            old => {
                drop(old);
                // A launch of one buffer has two guards.
                let capacity = n.next_power_of_two().max(2);
                let (base, base_device) = device_mapped(Marks::dumps_at(capacity) + capacity * GUARD_BYTES)?;
                Marks { base, base_device, capacity }
            }
        };
        for k in 0..n {
            // SAFETY: the flags hold `capacity >= n` words; volatile, as the device writes them.
            unsafe { (marks.base as *mut u32).add(k).write_volatile(guard::UNCHECKED) };
        }
        Some(marks)
    }

    /// Where the dumps start: after the flags, on a page of their own.
    fn dumps_at(capacity: usize) -> usize {
        (capacity * 4).next_multiple_of(4096)
    }

    /// The device's address of the flags.
    fn flags_device(&self) -> sys::CUdeviceptr {
        self.base_device
    }

    /// The device's address of the dumps.
    fn dumps_device(&self) -> sys::CUdeviceptr {
        self.base_device + Marks::dumps_at(self.capacity) as u64
    }

    /// Flag `k`, as the check kernel left it.
    fn flag(&self, k: usize) -> u32 {
        // SAFETY: `k` is below the `n` of the last `reset`, which is at most `capacity`.
        unsafe { (self.base as *const u32).add(k).read_volatile() }
    }

    /// The bytes of guard `k` as the check kernel found them, where its flag says it changed.
    fn dump(&self, k: usize) -> &[u8] {
        // SAFETY: room for `capacity > k` guards after the flags; the device wrote it before the
        // launch's done event, which was waited for.
        unsafe {
            std::slice::from_raw_parts(self.base.add(Marks::dumps_at(self.capacity) + k * GUARD_BYTES), GUARD_BYTES)
        }
    }
}

impl Drop for Marks {
    fn drop(&mut self) {
        // SAFETY: allocated by `device_mapped`, freed once, when no launch uses it.
        unsafe {
            let _ = result::free_host(self.base as *mut c_void);
        }
    }
}

/// `bytes` of pinned host memory the device can write, and their device address.
fn device_mapped(bytes: usize) -> Option<(*mut u8, sys::CUdeviceptr)> {
    // SAFETY: a pinned allocation; its device address is asked for below, and it is freed if
    // there is none.
    unsafe {
        let host = result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP).ok()?;
        let mut device = 0;
        if sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) != sys::CUresult::CUDA_SUCCESS {
            let _ = result::free_host(host);
            return None;
        }
        Some((host as *mut u8, device))
    }
}

/// A small buffer's results, which the guard check kernel copies to the staging memory.
struct GuardCopy {
    from: sys::CUdeviceptr,
    to: sys::CUdeviceptr,
    len: u64,
}

/// What [`Worker::queue_guard_check`] queued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CheckQueued {
    /// Nothing: the guards are read on the host and every result is copied back.
    No,
    /// The check, which fills again every guard it finds changed, and the copies it was given.
    WithCopies,
}

/// A launch begun and not yet answered: what [`Worker::finish_launch`] needs.
pub struct Pending {
    kernel: String,
    /// Which [`Slot`] it uses.
    slot: usize,
    /// Its device buffers, by request order, where they are still its own: a small buffer's,
    /// once the check is queued, is already kept for the next launch or let go.
    bufs: Vec<Option<DeviceBuffer>>,
    /// The "before" copies of shared buffers, under their stamps.
    snaps: Vec<(u64, DeviceBuffer)>,
    /// Each buffer's place in the staging memory (small ones), length, element size, the stamp
    /// its results are kept under, and for a shared one the stamp of its results.
    layout: Vec<Placed>,
    check: CheckQueued,
    uploaded: u64,
    /// The times of the launches of a `:time` before the last.
    kernel_ms: Vec<f32>,
    launch_us: Vec<f64>,
    drop_after: Vec<u64>,
    /// Another launch may be queued behind this one before it is done.
    overlaps: bool,
}

/// One buffer of a launch in flight.
struct Placed {
    at: Option<usize>,
    len: usize,
    elem_size: usize,
    keep: Option<u64>,
    result: Option<u64>,
}

/// Wait for what was queued on `stream`, whatever became of it: on a path that has failed
/// already, before memory a queued copy uses is let go or used again.
fn wait_for(stream: sys::CUstream) {
    // SAFETY: the default stream, or one the caller owns.
    let _ = unsafe { result::stream::synchronize(stream) };
}

/// Load a compiled image, a CUBIN (ELF) or PTX text, as a module.
fn load_module(image: &[u8]) -> Result<sys::CUmodule, result::DriverError> {
    // The driver reads PTX up to its NUL: make sure there is one.
    let mut owned;
    let image = if !image.starts_with(b"\x7fELF") && image.last() != Some(&0) {
        owned = image.to_vec();
        owned.push(0);
        owned.as_slice()
    } else {
        image
    };
    // SAFETY: `image` is a CUBIN or a NUL-terminated PTX image, alive for the call.
    unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
}

/// At most this many bytes of spare allocations, none larger than [`SPARE_LARGEST`].
const SPARE_BYTES: usize = 64 << 20;
const SPARE_LARGEST: usize = 16 << 20;

/// Pinned host memory (`cuMemHostAlloc`), grown when a launch needs more, or plain memory
/// where the driver will not pin (the copies are then slower, never wrong).
#[derive(Default)]
struct Staging {
    pinned: Option<(*mut u8, usize)>,
    /// The pinned memory's address on the device, which the guard check kernel writes the
    /// small buffers' results to; `None` where the driver gives none (they are then copied).
    device: Option<sys::CUdeviceptr>,
    plain: Vec<u8>,
}

impl Staging {
    /// At least `len` bytes to copy into.
    fn get(&mut self, len: usize) -> &mut [u8] {
        if self.pinned.is_some_and(|(_, have)| have < len) {
            self.release();
        }
        if self.pinned.is_none() && self.plain.len() < len {
            let size = len.next_power_of_two();
            // SAFETY: a plain pinned allocation; its bytes are written before they are read.
            match unsafe { result::malloc_host(size, sys::CU_MEMHOSTALLOC_DEVICEMAP) } {
                Ok(ptr) => {
                    self.pinned = Some((ptr as *mut u8, size));
                    let mut device = 0;
                    // SAFETY: `ptr` is the pinned allocation just made, mapped for the device.
                    let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, ptr, 0) };
                    self.device = (r == sys::CUresult::CUDA_SUCCESS).then_some(device);
                }
                Err(_) => self.plain.resize(len, 0),
            }
        }
        match self.pinned {
            // SAFETY: `ptr` holds `have >= len` bytes, owned by this value until `release`.
            Some((ptr, have)) => unsafe { std::slice::from_raw_parts_mut(ptr, have) },
            None => &mut self.plain,
        }
    }

    /// The device's address of byte `at` of the memory `get` gave, where the device can write it.
    fn device_at(&self, at: usize) -> Option<sys::CUdeviceptr> {
        self.device.map(|d| d + at as u64)
    }

    fn release(&mut self) {
        self.device = None;
        if let Some((ptr, _)) = self.pinned.take() {
            // SAFETY: allocated by `malloc_host` in `get`, freed once.
            unsafe {
                let _ = result::free_host(ptr as *mut c_void);
            }
        }
    }
}

/// A device allocation: a guard region, `len` bytes of buffer, another guard region.
struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    len: usize,
    /// Both guards are known to hold the pattern once the stream gets there (filled, and since
    /// then found untouched on the host or filled again by the check kernel after every launch),
    /// so the next launch need not fill them again.
    guards_clean: bool,
}

impl DeviceBuffer {
    /// Where the buffer's bytes start, past the first guard.
    fn data(&self) -> sys::CUdeviceptr {
        self.ptr + GUARD_BYTES as u64
    }

    fn free(self) {
        // SAFETY: allocated by `Worker::alloc`, freed once (this consumes it).
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// A buffer's device copy, holding the bytes stamped `stamp`.
struct Resident {
    stamp: u64,
    buf: DeviceBuffer,
    used: u64,
    /// Only the device has these bytes (results not read yet, or a launch's "before"): never
    /// let go to make room.
    held: bool,
    /// A small buffer's results, which the host has too: kept so that the next launch of the
    /// unchanged buffer uploads nothing ([`WireData::Kept`]); at most [`SMALL_KEPT`] of them.
    small: bool,
}

/// At most this many small buffers' device copies are kept between launches, the least recently
/// used going first: a copy let go costs the next launch of its buffer an upload, nothing more.
const SMALL_KEPT: usize = 256;

/// Run the worker loop until the session closes the pipe.
pub fn main(ordinal: usize) -> ExitCode {
    let (protocol_out, printf) = match redirect_stdout() {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("gridlab worker: cannot set up its output: {e}");
            return ExitCode::from(3);
        }
    };
    let mut out = io::BufWriter::new(protocol_out);
    let mut input = match protocol::FrameReader::stdin() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gridlab worker: cannot read its stdin: {e}");
            return ExitCode::from(3);
        }
    };
    let mut worker = Worker {
        ordinal,
        ctx: None,
        module: None,
        last_source: None,
        lowered: Default::default(),
        prints: true,
        printf,
        printf_read: 0,
        regions: Regions::from_env(),
        pinned: Default::default(),
        resident: Vec::new(),
        budget: 0,
        tick: 0,
        spare: Vec::new(),
        slots: Default::default(),
        busy: [false; serve::IN_FLIGHT],
        functions: HashMap::new(),
        globals: HashMap::new(),
        checker: None,
    };
    serve::serve(&mut worker, &mut input, &mut out)
}

impl serve::Launcher for Worker {
    type Pending = Pending;

    fn handle(&mut self, request: Request) -> Response {
        if self.ctx.is_none()
            && let Err(r) = self.init()
        {
            return r;
        }
        match request {
            Request::Hello => match self.info() {
                Ok(info) => Response::Hello(info),
                Err(e) => failed("reading the device's properties", e),
            },
            Request::Compile { source, options, names } => self.compile(source, options, names),
            Request::Launch(req) => match self.begin_launch(req) {
                Begun::Queued(p) => self.finish_launch(p, false),
                Begun::Answered(r) => r,
            },
            Request::Ptx => self.ptx(),
            Request::Info { kernel, block_size } => self.kernel_info(&kernel, block_size),
            Request::Read { items } => self.read(&items),
        }
    }

    fn begin(&mut self, launch: LaunchRequest) -> Begun<Pending> {
        if self.ctx.is_none()
            && let Err(r) = self.init()
        {
            return Begun::Answered(r);
        }
        self.begin_launch(launch)
    }

    fn overlaps(&self, ahead: &Pending) -> bool {
        ahead.overlaps
    }

    /// A launch over small buffers alone, launched once, of a module that cannot print: device
    /// `printf` goes to the printf file at a wait, where the output of a launch behind could mix
    /// with the output of the one ahead.
    fn may_follow(&self, next: &LaunchRequest) -> bool {
        next.repeat <= 1 && !self.prints && next.buffers.iter().all(|b| !matches!(b.data, WireData::Shared(_)))
    }

    fn is_done(&mut self, pending: &Pending) -> bool {
        let Some([_, _, done]) = self.slots[pending.slot].events else { return true };
        // SAFETY: an event this worker made and recorded.
        !matches!(unsafe { sys::cuEventQuery(done) }, sys::CUresult::CUDA_ERROR_NOT_READY)
    }

    fn finish(&mut self, pending: Pending, behind: bool) -> Option<Response> {
        Some(self.finish_launch(pending, behind))
    }
}

/// Duplicate fd 1 for the protocol and point fd 1 at an in-memory file for device printf.
fn redirect_stdout() -> io::Result<(File, File)> {
    // SAFETY: plain descriptor calls; every result is checked.
    unsafe {
        let proto = libc::dup(1);
        if proto < 0 {
            return Err(io::Error::last_os_error());
        }
        let name = CString::new("gridlab-printf").unwrap();
        let memfd = libc::memfd_create(name.as_ptr(), 0);
        if memfd < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::dup2(memfd, 1) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((File::from_raw_fd(proto), File::from_raw_fd(memfd)))
    }
}

fn failed(what: &str, e: result::DriverError) -> Response {
    let code = e.0 as u32;
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("error {code}"));
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // Errors after which the context cannot be used again (CUDA's "sticky" errors).
    let sticky = matches!(code, 700 | 702 | 710 | 714..=719);
    Response::Failed { message: format!("{what}: {name}: {text}"), sticky }
}

impl Worker {
    fn init(&mut self) -> Result<(), Response> {
        // SAFETY: cudarc panics when a library is missing; check first.
        let present = unsafe { sys::is_culib_present() && nvrtc::sys::is_culib_present() };
        if !present {
            return Err(Response::Failed {
                message: "the CUDA driver or NVRTC library could not be loaded".into(),
                sticky: false,
            });
        }
        let step = |what: &str, r: Result<(), result::DriverError>| r.map_err(|e| failed(what, e));
        step("initialising the CUDA driver", result::init())?;
        let dev = result::device::get(self.ordinal as i32).map_err(|e| failed("opening the device", e))?;
        // SAFETY: the device handle is valid; the primary context is retained for the process.
        let ctx = unsafe { result::primary_ctx::retain(dev) }.map_err(|e| failed("creating a context", e))?;
        step("making the context current", unsafe { result::ctx::set_current(ctx) })?;
        step(
            "enlarging the printf buffer",
            result::ctx::set_limit(sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE, PRINTF_FIFO_BYTES),
        )?;
        // SAFETY: a valid device.
        self.budget =
            unsafe { result::device::total_mem(dev) }.map_err(|e| failed("reading the device's memory", e))? / 2;
        self.ctx = Some(ctx);
        Ok(())
    }

    fn attr(&self, a: sys::CUdevice_attribute) -> Result<i32, result::DriverError> {
        let dev = result::device::get(self.ordinal as i32)?;
        // SAFETY: valid device and attribute.
        unsafe { result::device::get_attribute(dev, a) }
    }

    fn info(&self) -> Result<DeviceInfo, result::DriverError> {
        use sys::CUdevice_attribute as A;
        let dev = result::device::get(self.ordinal as i32)?;
        let clock_khz = self.attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as f64;
        let bus_bits = self.attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as f64;
        let mut driver = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut driver) }.result()?;
        let (major, minor) = nvrtc_version();
        Ok(DeviceInfo {
            name: result::device::get_name(dev)?,
            ordinal: self.ordinal as u32,
            compute_capability: (
                self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: self.attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            // SAFETY: valid device.
            total_mem: unsafe { result::device::total_mem(dev) }? as u64,
            // Double data rate: two transfers per clock, bus width in bits.
            peak_bandwidth_gbs: 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9,
            max_threads_per_block: self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block: [
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid: [
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_per_block: self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            driver_version: driver,
            nvrtc_version: (major, minor),
        })
    }

    /// Compile with NVRTC to a CUBIN for this device's exact architecture (so the driver never
    /// JITs PTX), falling back to PTX for `compute_XY` where NVRTC cannot target the device. The
    /// compile cache on disk is asked first: a hit skips NVRTC and loads the stored image.
    fn compile(&mut self, source: String, options: Vec<String>, names: Vec<String>) -> Response {
        let start = Instant::now();
        let (major, minor) = match (
            self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return failed("reading the compute capability", e),
        };
        let include = super::libs::cuda_include_dir();
        let options_for = |arch: &str| {
            let mut opts = vec![format!("--gpu-architecture={arch}"), "-lineinfo".into(), "--std=c++17".into()];
            // CUDA 13 keeps libcu++ (`cuda/std/...`, which cooperative groups include) in `cccl/`.
            for d in include.iter().flat_map(|d| [d.clone(), d.join("cccl")]).filter(|d| d.is_dir()) {
                opts.push(format!("-I{}", d.display()));
            }
            opts.extend(options.iter().cloned());
            opts
        };
        let device_arch = format!("sm_{major}{minor}");
        let cache_dir = cache::dir();
        // The instances asked for decide the entry too (their mangled names are in it).
        let mut key_options = options_for(&device_arch);
        key_options.extend(names.iter().map(|n| format!("name-expression={n}")));
        let key = cache::key(&source, &key_options, &device_arch, nvrtc_version());
        if let Some(entry) = cache_dir.as_deref().and_then(|d| cache::read(d, &key))
            && entry.lowered.len() == names.len()
        {
            match self.load_image(&entry.image) {
                Ok(()) => {
                    self.prints = may_print(&source, &entry.image);
                    self.lowered = entry.lowered.iter().cloned().collect();
                    self.last_source = Some((source, entry.arch.clone()));
                    let millis = start.elapsed().as_secs_f64() * 1e3;
                    return Response::Compiled { log: entry.log, arch: entry.arch, millis, cached: true };
                }
                Err(e) => {
                    let response = failed("loading a module from the compile cache", e);
                    if matches!(response, Response::Failed { sticky: true, .. }) {
                        return response;
                    }
                    // An image the driver refuses (another driver, a damaged file): compile
                    // again below, which also overwrites the entry.
                }
            }
        }
        let mut last_log = String::new();
        for (arch, binary) in [(device_arch.clone(), true), (format!("compute_{major}{minor}"), false)] {
            match nvrtc_compile(&source, &options_for(&arch), binary, &names) {
                Ok((image, log, lowered)) => {
                    if let Err(e) = self.load_image(&image) {
                        return failed("loading the compiled module", e);
                    }
                    self.prints = may_print(&source, &image);
                    self.lowered = lowered.iter().cloned().collect();
                    let millis = start.elapsed().as_secs_f64() * 1e3;
                    if let Some(dir) = &cache_dir {
                        let entry = cache::Entry { arch: arch.clone(), log: log.clone(), image, lowered };
                        // A cache that cannot be written (read-only home, full disk) only costs
                        // the next compile its time.
                        let _ = cache::write(dir, &key, &entry);
                    }
                    self.last_source = Some((source, arch.clone()));
                    return Response::Compiled { log, arch, millis, cached: false };
                }
                Err(log) => {
                    let arch_unsupported = log.contains("--gpu-architecture") || log.contains("-arch");
                    if !(binary && arch_unsupported) {
                        return Response::CompileFailed { log };
                    }
                    last_log = log;
                }
            }
        }
        Response::CompileFailed { log: last_log }
    }

    /// Replace the loaded module with `image`: a CUBIN (ELF) or PTX text.
    fn load_image(&mut self, image: &[u8]) -> Result<(), result::DriverError> {
        if let Some(old) = self.module.take() {
            // SAFETY: the old module is no longer used.
            unsafe {
                let _ = result::module::unload(old);
            }
        }
        self.functions.clear();
        self.globals.clear();
        let m = load_module(image)?;
        self.module = Some(m);
        Ok(())
    }

    fn ptx(&self) -> Response {
        let Some((source, _)) = &self.last_source else {
            return Response::Failed { message: "no module has been compiled yet".into(), sticky: false };
        };
        let (major, minor) = (
            self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).unwrap_or(7),
            self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).unwrap_or(0),
        );
        let opts = vec![format!("--gpu-architecture=compute_{major}{minor}"), "--std=c++17".into()];
        match nvrtc_compile(source, &opts, false, &[]) {
            Ok((ptx, _, _)) => Response::Ptx(String::from_utf8_lossy(&ptx).trim_end_matches('\0').to_string()),
            Err(log) => Response::CompileFailed { log },
        }
    }

    /// The loaded module's kernel `name`, looked up once per module.
    fn function(&mut self, name: &str) -> Result<sys::CUfunction, Response> {
        let Some(module) = self.module else {
            return Err(Response::Failed {
                message: "no module is loaded: define a kernel first".into(),
                sticky: false,
            });
        };
        if let Some(f) = self.functions.get(name) {
            return Ok(*f);
        }
        // A template instance is found by its mangled name.
        let symbol = self.lowered.get(name).map_or(name, String::as_str);
        let Ok(cname) = CString::new(symbol) else {
            return Err(Response::Failed { message: "bad kernel name".into(), sticky: false });
        };
        // SAFETY: the module is loaded.
        let f = unsafe { result::module::get_function(module, cname) }
            .map_err(|e| failed(&format!("finding kernel `{symbol}`"), e))?;
        self.functions.insert(name.to_string(), f);
        Ok(f)
    }

    /// Registers, shared and local memory of a kernel, and its occupancy for one block size.
    fn kernel_info(&mut self, kernel: &str, block_size: u32) -> Response {
        use sys::CUfunction_attribute as F;
        let func = match self.function(kernel) {
            Ok(f) => f,
            Err(r) => return r,
        };
        // SAFETY: `func` comes from the loaded module; each call writes one int.
        let attr = |a: F| unsafe { result::function::get_function_attribute(func, a) };
        let read = || -> Result<KernelInfo, result::DriverError> {
            let max_threads_per_block = attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
            // A block larger than the kernel allows cannot launch: no blocks are resident, and
            // the occupancy calculator is not asked about an impossible launch.
            let active_blocks_per_sm = if block_size == 0 || block_size as i64 > max_threads_per_block as i64 {
                0
            } else {
                // SAFETY: a valid function; no dynamic shared memory.
                unsafe { result::occupancy::max_active_block_per_multiprocessor(func, block_size as i32, 0) }?
            };
            Ok(KernelInfo {
                registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
                shared_bytes: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
                max_threads_per_block,
                block_size,
                active_blocks_per_sm,
                max_threads_per_sm: self
                    .attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            })
        };
        match read() {
            Ok(info) => Response::Info(info),
            Err(e) => failed(&format!("reading the attributes of `{kernel}`"), e),
        }
    }

    /// Let a region the session freed go: unpinned, unmapped.
    fn release_region(&mut self, id: u64) {
        if let Some(mut map) = self.regions.release(id)
            && self.pinned.remove(&id)
        {
            // SAFETY: pinned by `region` at this address and length, unpinned once, before the
            // mapping goes.
            unsafe {
                let _ = sys::cuMemHostUnregister(map.as_mut_ptr() as *mut c_void);
            }
        }
    }

    /// Make sure region `id` is mapped, and pinned where the driver allows it, so that copies to
    /// and from it run at the bus's speed; a region that cannot be pinned is still copied, only
    /// more slowly. Its length comes back.
    fn region(&mut self, id: u64) -> Result<usize, Response> {
        let first = !self.regions.contains(id);
        let map = match self.regions.get(id) {
            Ok(Some(map)) => map,
            Ok(None) => {
                return Err(Response::Failed {
                    message: format!("shared buffer region {id} never reached the GPU worker"),
                    sticky: false,
                });
            }
            Err(e) => {
                return Err(Response::Failed {
                    message: format!("the GPU worker could not map a shared buffer: {e}"),
                    sticky: false,
                });
            }
        };
        if first {
            // SAFETY: the mapping stays until `release_region` unpins it.
            let r = unsafe { sys::cuMemHostRegister_v2(map.as_mut_ptr() as *mut c_void, map.len(), 0) };
            if r == sys::CUresult::CUDA_SUCCESS {
                self.pinned.insert(id);
            }
        }
        Ok(map.len())
    }

    /// A device allocation of `len` bytes with guards on both sides. Device copies kept between
    /// launches stay within [`Worker::budget`], the least recently used going first, and all of
    /// them go before an allocation is refused for want of memory.
    fn alloc(&mut self, len: usize) -> Result<DeviceBuffer, result::DriverError> {
        let total = len + 2 * GUARD_BYTES;
        if let Some(at) = self.spare.iter().position(|d| d.len == len) {
            return Ok(self.spare.swap_remove(at));
        }
        let kept = |resident: &[Resident]| resident.iter().map(|r| r.buf.len + 2 * GUARD_BYTES).sum::<usize>();
        while kept(&self.resident) + total > self.budget {
            // Held copies are the only copy of their bytes: they never go to make room.
            let Some(oldest) =
                (0..self.resident.len()).filter(|&i| !self.resident[i].held).min_by_key(|&i| self.resident[i].used)
            else {
                break;
            };
            self.resident.swap_remove(oldest).buf.free();
        }
        // SAFETY: a plain allocation.
        let ptr = match unsafe { result::malloc_sync(total) } {
            Err(e)
                if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
                    && (!self.spare.is_empty() || self.resident.iter().any(|r| !r.held)) =>
            {
                let (held, unheld): (Vec<Resident>, Vec<Resident>) = self.resident.drain(..).partition(|r| r.held);
                self.resident = held;
                for d in unheld.into_iter().map(|r| r.buf).chain(self.spare.drain(..)) {
                    d.free();
                }
                // SAFETY: as above.
                unsafe { result::malloc_sync(total) }?
            }
            r => r?,
        };
        Ok(DeviceBuffer { ptr, len, guards_clean: false })
    }

    /// Done with `d`: kept for the next launch of its size while the spares stay small, else
    /// freed.
    fn release(&mut self, d: DeviceBuffer) {
        let spare_bytes: usize = self.spare.iter().map(|d| d.len).sum();
        if d.len <= SPARE_LARGEST && spare_bytes + d.len <= SPARE_BYTES {
            self.spare.push(d);
        } else {
            d.free();
        }
    }

    fn release_all(&mut self, bufs: impl IntoIterator<Item = DeviceBuffer>) {
        for d in bufs {
            self.release(d);
        }
    }

    /// A launch that did not finish is done with its buffers and its "before" copies, once
    /// what it queued is done with the staging memory.
    fn release_launch(&mut self, bufs: Vec<DeviceBuffer>, snaps: Vec<(u64, DeviceBuffer)>) {
        wait_for(std::ptr::null_mut());
        self.release_all(bufs.into_iter().chain(snaps.into_iter().map(|(_, d)| d)));
    }

    /// The device guard check, made on first use: compiled by NVRTC once per machine (the
    /// compile cache keeps it, as it keeps the learner's modules), loaded as a module of its own.
    /// `None` where it cannot be made: the guards are then checked on the host.
    fn checker(&mut self) -> Option<&DeviceCheck> {
        if self.checker.is_none() {
            self.checker = Some(self.make_checker());
        }
        self.checker.as_ref()?.as_ref()
    }

    fn make_checker(&self) -> Option<DeviceCheck> {
        use sys::CUdevice_attribute as A;
        let major = self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).ok()?;
        let minor = self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).ok()?;
        let source = guard::check_source();
        let cache_dir = cache::dir();
        let device_arch = format!("sm_{major}{minor}");
        for (arch, binary) in [(device_arch.clone(), true), (format!("compute_{major}{minor}"), false)] {
            let options = vec![format!("--gpu-architecture={arch}")];
            let key = cache::key(&source, &options, &device_arch, nvrtc_version());
            let image = match cache_dir.as_deref().and_then(|d| cache::read(d, &key)) {
                Some(entry) => entry.image,
                None => {
                    let Ok((image, log, lowered)) = nvrtc_compile(&source, &options, binary, &[]) else { continue };
                    if let Some(dir) = &cache_dir {
                        let entry = cache::Entry { arch: arch.clone(), log, image, lowered };
                        let _ = cache::write(dir, &key, &entry);
                        entry.image
                    } else {
                        image
                    }
                }
            };
            let Ok(module) = load_module(&image) else { continue };
            let name = CString::new(guard::CHECK_KERNEL).ok()?;
            // SAFETY: the module was just loaded; it stays loaded for the worker's life.
            let func = unsafe { result::module::get_function(module, name) }.ok()?;
            return Some(DeviceCheck { func });
        }
        None
    }

    /// Slot `slot`'s events: the launch's start and stop, and the one after all it queued
    /// (which needs no timing); made on first use.
    fn events(&mut self, slot: usize) -> Result<[sys::CUevent; 3], result::DriverError> {
        if let Some(events) = self.slots[slot].events {
            return Ok(events);
        }
        use sys::CUevent_flags::{CU_EVENT_DEFAULT, CU_EVENT_DISABLE_TIMING};
        let mut made = Vec::new();
        for flags in [CU_EVENT_DEFAULT, CU_EVENT_DEFAULT, CU_EVENT_DISABLE_TIMING] {
            match result::event::create(flags) {
                Ok(e) => made.push(e),
                Err(e) => {
                    for ev in made {
                        // SAFETY: created just above, not used.
                        unsafe {
                            let _ = result::event::destroy(ev);
                        }
                    }
                    return Err(e);
                }
            }
        }
        let events = [made[0], made[1], made[2]];
        self.slots[slot].events = Some(events);
        Ok(events)
    }

    /// Copy device copies into shared regions (the session reading results back). A "before"
    /// (`keep` false) is let go; a buffer's contents stay, no longer held, for the next launch.
    fn read(&mut self, items: &[protocol::ReadItem]) -> Response {
        let mut missing = Vec::new();
        for item in items {
            let Some(at) = self.kept_at(item.stamp, item.len) else {
                missing.push(item.stamp);
                continue;
            };
            match self.region(item.region) {
                Ok(len) if len as u64 >= item.len => {}
                Ok(len) => {
                    return Response::Failed {
                        message: format!(
                            "shared region {} holds {len} bytes, not the buffer's {}",
                            item.region, item.len
                        ),
                        sticky: false,
                    };
                }
                Err(r) => return r,
            }
            let Ok(Some(map)) = self.regions.get(item.region) else {
                return Response::Failed {
                    message: format!("shared region {} is not mapped", item.region),
                    sticky: false,
                };
            };
            let r = &self.resident[at];
            // SAFETY: the device copy holds `len` bytes at `data()`; the region at least as many.
            if let Err(e) = unsafe { result::memcpy_dtoh_sync(&mut map[..r.buf.len], r.buf.data()) } {
                return failed("copying results from the GPU", e);
            }
            if item.keep {
                self.tick += 1;
                let r = &mut self.resident[at];
                r.held = false;
                r.used = self.tick;
            } else {
                let d = self.resident.swap_remove(at).buf;
                self.release(d);
            }
        }
        Response::Read { missing }
    }

    /// Where the device copy of the bytes stamped `stamp` (`len` of them) is kept, if it is.
    fn kept_at(&self, stamp: u64, len: u64) -> Option<usize> {
        self.resident.iter().position(|r| r.stamp == stamp && r.buf.len as u64 == len)
    }

    /// Where the device copy of a small buffer's bytes stamped `stamp` is kept, if it is.
    fn small_kept_at(&self, stamp: u64, len: u64) -> Option<usize> {
        self.resident.iter().position(|r| r.small && r.stamp == stamp && r.buf.len as u64 == len)
    }

    /// Let the least recently used small buffers' device copies go, down to [`SMALL_KEPT`]: the
    /// host has their bytes, and a session that changed or dropped a buffer never names them
    /// again.
    fn trim_small_kept(&mut self) {
        while self.resident.iter().filter(|r| r.small).count() > SMALL_KEPT {
            let Some(oldest) =
                (0..self.resident.len()).filter(|&i| self.resident[i].small).min_by_key(|&i| self.resident[i].used)
            else {
                break;
            };
            let d = self.resident.swap_remove(oldest).buf;
            self.release(d);
        }
    }

    /// A new allocation holding a copy of `len` device bytes, at the address `source` gives
    /// once room is made (making room never lets a held copy go, but it moves them about).
    fn copy_on_device(
        &mut self,
        len: usize,
        source: impl Fn(&Worker) -> Option<sys::CUdeviceptr>,
    ) -> Result<DeviceBuffer, Response> {
        let work = self.alloc(len).map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                Response::Failed {
                    message: format!(
                        "the GPU has no room for a second copy of a buffer of {len} bytes (gridlab keeps one as it was before the launch)"
                    ),
                    sticky: false,
                }
            } else {
                failed("allocating buffers", e)
            }
        })?;
        let Some(src) = source(self) else {
            self.release(work);
            return Err(Response::Failed { message: "a held device copy went missing".into(), sticky: false });
        };
        // SAFETY: both allocations hold `len` bytes at their `data()`.
        if let Err(e) = unsafe { result::memcpy_dtod_sync(work.data(), src, len) } {
            self.release(work);
            return Err(failed("copying a buffer on the GPU", e));
        }
        Ok(work)
    }

    /// Forget the device copy of the bytes stamped `stamp`: the host changed them since.
    fn drop_resident(&mut self, stamp: u64) {
        while let Some(i) = self.resident.iter().position(|r| r.stamp == stamp) {
            let d = self.resident.swap_remove(i).buf;
            self.release(d);
        }
    }

    /// Begin a launch: check it, queue its work on the stream (the uploads, the kernel between
    /// its events, the guard check with the copies of the small buffers' results, the event
    /// after it all) and return without waiting, or answer it at once where it cannot start.
    fn begin_launch(&mut self, req: LaunchRequest) -> Begun<Pending> {
        match self.queue_launch(req) {
            Ok(p) => Begun::Queued(p),
            Err(r) => Begun::Answered(r),
        }
    }

    fn queue_launch(&mut self, req: LaunchRequest) -> Result<Pending, Response> {
        let phase = profile::time(Phase::BeginPrepare);
        // The request loop finishes a launch before it begins one more than `IN_FLIGHT`.
        let Some(slot) = self.busy.iter().position(|b| !b) else {
            return Err(Response::Failed {
                message: format!("the GPU worker was asked for more than {} launches at once", serve::IN_FLIGHT),
                sticky: false,
            });
        };
        for id in &req.released {
            self.release_region(*id);
        }
        // Small buffers named by the stamp of a device copy an earlier launch left: each must
        // still be here, and named once, or nothing is done and the session sends their bytes.
        let not_kept = req.stamps_not_kept(|stamp, len| self.small_kept_at(stamp, len).is_some());
        if !not_kept.is_empty() {
            return Err(Response::NotKept { stamps: not_kept });
        }
        // A template instance is found by its mangled name, as `:info` finds it.
        let func = self.function(&req.kernel)?;
        // A view beyond its buffer's end would point into the guard or past it: the session
        // checks this before it asks, and the worker does not take it on trust.
        for a in &req.args {
            if let WireArg::View { buffer, byte_offset } = a {
                let len = req.buffers.get(*buffer as usize).map(|b| b.len());
                if len.is_none_or(|len| *byte_offset > len) {
                    return Err(Response::Failed {
                        message: format!("an argument points {byte_offset} bytes into buffer {buffer}, outside it"),
                        sticky: false,
                    });
                }
            }
        }
        // Every region the request names arrived on the socket before it.
        for b in &req.buffers {
            let WireData::Shared(s) = &b.data else { continue };
            let id = s.region;
            match self.region(id) {
                Ok(len) if len as u64 >= s.len => {}
                Ok(len) => {
                    return Err(Response::Failed {
                        message: format!("shared region {id} holds {len} bytes, not the buffer's {}", s.len),
                        sticky: false,
                    });
                }
                Err(r) => return Err(r),
            }
        }
        self.tick += 1;
        let n = req.buffers.len();
        let mut allocs: Vec<Option<DeviceBuffer>> = (0..n).map(|_| None).collect();
        // A device copy that still holds what the host holds: nothing to upload. (Every small
        // one is taken here, before any allocation could make room by letting it go.)
        for (i, b) in req.buffers.iter().enumerate() {
            if let WireData::Kept { stamp, len } = b.data
                && let Some(at) = self.small_kept_at(stamp, len)
            {
                allocs[i] = Some(self.resident.swap_remove(at).buf);
            } else if let WireData::Shared(s) = &b.data
                && s.fresh
                && !s.device_only
                && s.stamp != 0
                && let Some(at) = self.kept_at(s.stamp, s.len)
            {
                allocs[i] = Some(self.resident.swap_remove(at).buf);
            }
        }
        // Contents only the device has (an earlier launch's results, not read back) stay where
        // they are, held under their stamp, as this launch's "before" (the session reads it back,
        // or lets it go after the next launch); the kernel runs on a copy. Whatever fails from
        // here on leaves them as they were.
        for (i, b) in req.buffers.iter().enumerate() {
            let WireData::Shared(s) = &b.data else { continue };
            if !s.device_only {
                continue;
            }
            if self.kept_at(s.stamp, s.len).is_none() {
                self.release_all(allocs.drain(..).flatten());
                return Err(Response::Failed {
                    message: format!("the GPU worker no longer holds the results stamped {}", s.stamp),
                    sticky: false,
                });
            }
            let copied =
                self.copy_on_device(s.len as usize, |w| w.kept_at(s.stamp, s.len).map(|at| w.resident[at].buf.data()));
            match copied {
                Ok(work) => allocs[i] = Some(work),
                Err(r) => {
                    self.release_all(allocs.drain(..).flatten());
                    return Err(r);
                }
            }
            if let Some(at) = self.kept_at(s.stamp, s.len) {
                self.resident[at].used = self.tick;
            }
        }
        let mut uploaded = 0u64;
        for i in 0..n {
            let b = &req.buffers[i];
            let len = b.len() as usize;
            if allocs[i].is_none() {
                let d = match self.alloc(len) {
                    Ok(d) => d,
                    Err(e) => {
                        self.release_all(allocs.drain(..).flatten());
                        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                            return Err(Response::Failed {
                                message: format!("the GPU has no room for a buffer of {len} bytes (and its guards)"),
                                sticky: false,
                            });
                        }
                        return Err(failed("allocating buffers", e));
                    }
                };
                let data = d.data();
                allocs[i] = Some(d);
                let copied = match &b.data {
                    // Queued below, from the staging memory.
                    WireData::Inline(_) => Ok(()),
                    // Taken above (the request was checked for them first).
                    WireData::Kept { .. } => Err(result::DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)),
                    WireData::Shared(s) => match self.regions.get(s.region) {
                        // SAFETY: `data` has room for `len` bytes; the region holds at least
                        // `len` bytes (checked).
                        Ok(Some(map)) => unsafe { result::memcpy_htod_sync(data, &map[..len]) },
                        _ => Err(result::DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)),
                    },
                };
                if let Err(e) = copied {
                    self.release_all(allocs.drain(..).flatten());
                    return Err(failed("copying buffers to the GPU", e));
                }
                uploaded += len as u64;
            }
        }
        // The contents a launch starts from are its "before": kept on the device under the
        // stamp the session names (`snapshot`), read back only if the session needs them, while
        // the kernel runs on a copy. They join the device copies only once the launch succeeded.
        let mut snaps: Vec<(u64, DeviceBuffer)> = Vec::new();
        for i in 0..n {
            let WireData::Shared(SharedBuffer { snapshot: Some(stamp), device_only: false, len, .. }) =
                &req.buffers[i].data
            else {
                continue;
            };
            let Some(start) = allocs[i].take() else { continue };
            let src = start.data();
            match self.copy_on_device(*len as usize, |_| Some(src)) {
                Ok(work) => allocs[i] = Some(work),
                Err(r) => {
                    self.release(start);
                    self.release_all(allocs.drain(..).flatten());
                    self.release_all(snaps.into_iter().map(|(_, d)| d));
                    return Err(r);
                }
            }
            snaps.push((*stamp, start));
        }
        let mut bufs: Vec<DeviceBuffer> = allocs.into_iter().flatten().collect();
        // Small buffers go up through the pinned staging memory of the launch's slot, each at its
        // place there, where its results come back down after the kernel (the stream keeps the
        // two in order): the copies are queued, not waited for. A kept one goes up not at all,
        // but comes back too.
        let layout: Vec<Placed> = req
            .buffers
            .iter()
            .scan(0usize, |at, b| {
                let len = b.len() as usize;
                let place = match &b.data {
                    WireData::Inline(_) | WireData::Kept { .. } => {
                        *at += len;
                        Some(*at - len)
                    }
                    WireData::Shared(_) => None,
                };
                let result = match &b.data {
                    WireData::Shared(s) => s.result,
                    _ => None,
                };
                Some(Placed { at: place, len, elem_size: b.elem_size as usize, keep: b.keep, result })
            })
            .collect();
        let need: usize = layout.iter().filter(|p| p.at.is_some()).map(|p| p.len).sum();
        let stream = std::ptr::null_mut();
        drop(phase);
        let phase = profile::time(Phase::BeginUpload);
        let stage = self.slots[slot].staging.get(need);
        let mut queued = Ok(());
        for ((b, d), placed) in req.buffers.iter().zip(&bufs).zip(&layout) {
            let (WireData::Inline(bytes), Some(at)) = (&b.data, placed.at) else { continue };
            let piece = &mut stage[at..at + bytes.len()];
            piece.copy_from_slice(bytes);
            // SAFETY: the allocation holds `len` bytes at `data()`; the staging memory stays
            // untouched until the launch's done event is waited for, on every path.
            queued = unsafe { result::memcpy_htod_async(d.data(), piece, stream) };
            if queued.is_err() {
                break;
            }
        }
        if let Err(e) = queued {
            self.release_launch(bufs, snaps);
            return Err(failed("copying buffers to the GPU", e));
        }
        // Fill the guards with the pattern, before and after every buffer, where a launch may
        // have written them since they were last filled.
        for d in bufs.iter_mut().filter(|d| !d.guards_clean) {
            // SAFETY: both ranges lie inside the allocation.
            let r = unsafe {
                sys::cuMemsetD8_v2(d.ptr, PATTERN, GUARD_BYTES)
                    .result()
                    .and_then(|_| sys::cuMemsetD8_v2(d.data() + d.len as u64, PATTERN, GUARD_BYTES).result())
            };
            if let Err(e) = r {
                self.release_launch(bufs, snaps);
                return Err(failed("filling the guard regions", e));
            }
        }
        // Until the guards are checked, the kernel may have written them.
        for d in &mut bufs {
            d.guards_clean = false;
        }
        // Argument storage must outlive the launch; params point into it.
        let mut storage: Vec<Vec<u8>> = req
            .args
            .iter()
            .map(|a| match a {
                WireArg::Buffer(i) => bufs.get(*i as usize).map_or(0, |d| d.data()).to_le_bytes().to_vec(),
                // `d_a + offset` of host code: the device pointer moved on by the offset.
                WireArg::View { buffer, byte_offset } => {
                    bufs.get(*buffer as usize).map_or(0, |d| d.data() + byte_offset).to_le_bytes().to_vec()
                }
                WireArg::Scalar(bytes) => bytes.clone(),
            })
            .collect();
        let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
        let mut kernel_ms = Vec::new();
        let mut launch_us = Vec::new();
        drop(phase);
        let phase = profile::time(Phase::BeginKernel);
        let [start_ev, stop_ev, done_ev] = match self.events(slot) {
            Ok(events) => events,
            Err(e) => {
                self.release_launch(bufs, snaps);
                return Err(failed("creating timing events", e));
            }
        };
        let g = (req.grid[0], req.grid[1], req.grid[2]);
        let b = (req.block[0], req.block[1], req.block[2]);
        let repeat = req.repeat.max(1);
        for k in 0..repeat {
            // Before every launch, as the simulator starts each launch from them: a kernel
            // that writes a `__device__` variable the session set sees the set values again.
            if let Err(r) = self.set_symbols(&req.symbols) {
                self.release_launch(bufs, snaps);
                return Err(r);
            }
            // SAFETY: the function, its arguments and the buffers are valid for the launch.
            let r = unsafe {
                result::event::record(start_ev, stream).and_then(|_| {
                    let t = Instant::now();
                    let r = result::launch_kernel(func, g, b, req.shared_bytes, stream, &mut params);
                    launch_us.push(t.elapsed().as_secs_f64() * 1e6);
                    r?;
                    result::event::record(stop_ev, stream)?;
                    // Every launch but the last is timed here (`:time`); the last is waited for
                    // once, when it is finished, with the guard check and the results' copies.
                    if k + 1 < repeat {
                        result::event::synchronize(stop_ev)?;
                        kernel_ms.push(result::event::elapsed(start_ev, stop_ev)?);
                    }
                    Ok(())
                })
            };
            if let Err(e) = r {
                return Err(self.launch_failed(&req.kernel, e, bufs, snaps));
            }
        }
        // The kernel is queued: then the guard check, and the copies of the small buffers'
        // results into the staging memory, each at the place it went up from; the shared ones
        // stay on the device until the session reads them. The check kernel makes those copies
        // where the device can write the staging memory (one operation after the learner's
        // kernel, not one per buffer); else they are queued after it. Then the done event.
        drop(phase);
        let phase = profile::time(Phase::BeginCheck);
        let guards: Vec<sys::CUdeviceptr> = bufs.iter().flat_map(|d| [d.ptr, d.data() + d.len as u64]).collect();
        let copies: Vec<Option<GuardCopy>> = bufs
            .iter()
            .zip(&layout)
            .map(|(d, placed)| {
                let to = self.slots[slot].staging.device_at(placed.at?)?;
                Some(GuardCopy { from: d.data(), to, len: placed.len as u64 })
            })
            .collect();
        let check = self.queue_guard_check(slot, &guards, &copies, stream);
        drop(phase);
        let _phase = profile::time(Phase::BeginDone);
        let stage = self.slots[slot].staging.get(need);
        let queued = (|| {
            for ((d, placed), c) in bufs.iter().zip(&layout).zip(&copies) {
                let Some(at) = placed.at else { continue };
                if check == CheckQueued::WithCopies && c.is_some() {
                    continue;
                }
                // SAFETY: the allocation holds `len` bytes at `data()`; `stage` holds `need`
                // bytes, and the small buffers' places add up to `need`.
                unsafe { result::memcpy_dtoh_async(&mut stage[at..at + placed.len], d.data(), stream) }?;
            }
            // SAFETY: an event of this slot, recorded on the stream everything above went to.
            unsafe { result::event::record(done_ev, stream) }
        })();
        if let Err(e) = queued {
            return Err(self.launch_failed(&req.kernel, e, bufs, snaps));
        }
        let mut bufs: Vec<Option<DeviceBuffer>> = bufs.into_iter().map(Some).collect();
        if check == CheckQueued::WithCopies {
            // The check fills again every guard it finds changed, so after it every guard holds
            // the pattern, and the stream keeps the next launch's work behind it: a small
            // buffer's results are kept from now on (a launch queued behind this one runs on
            // them), and the other small buffers go back to the spares.
            for (d, placed) in bufs.iter_mut().zip(&layout) {
                if let Some(d) = d {
                    d.guards_clean = true;
                }
                if placed.at.is_none() {
                    continue;
                }
                let Some(d) = d.take() else { continue };
                match placed.keep {
                    Some(stamp) => {
                        self.resident.push(Resident { stamp, buf: d, used: self.tick, held: false, small: true })
                    }
                    None => self.release(d),
                }
            }
            self.trim_small_kept();
        }
        let shared = layout.iter().any(|p| p.at.is_none());
        self.busy[slot] = true;
        Ok(Pending {
            kernel: req.kernel,
            slot,
            bufs,
            snaps,
            layout,
            check,
            uploaded,
            kernel_ms,
            launch_us,
            drop_after: req.drop_after,
            overlaps: check == CheckQueued::WithCopies && repeat == 1 && !shared && !self.prints,
        })
    }

    /// Wait for a launch begun and answer it: the kernel's time, the small buffers' results, the
    /// guards the check found changed (named from the bytes it left), what the kernel printed;
    /// shared buffers' results and "before" copies are kept on the device from now on.
    ///
    /// `behind` says a launch was queued behind this one and ran on what it left. An error
    /// while waiting is then this launch's only if its guard check never wrote its flags (the
    /// stream runs in order: a launch behind starts once this one's check is done), and any
    /// failure of this launch ends the worker, so the session sends the launch behind again to a
    /// new one.
    fn finish_launch(&mut self, p: Pending, behind: bool) -> Response {
        let slot = p.slot;
        // Its slot is free for the next launch begun once this one is answered.
        self.busy[slot] = false;
        let Some([start_ev, stop_ev, done_ev]) = self.slots[slot].events else {
            return Response::Failed { message: "a launch in flight lost its events".into(), sticky: true };
        };
        let mut kernel_ms = p.kernel_ms.clone();
        let phase = profile::time(Phase::FinishWait);
        // SAFETY: events of this slot, recorded by `queue_launch`.
        let waited = unsafe { result::event::synchronize(done_ev) }
            .and_then(|()| unsafe { result::event::elapsed(start_ev, stop_ev) });
        drop(phase);
        let _phase = profile::time(Phase::FinishResults);
        match waited {
            Ok(ms) => kernel_ms.push(ms),
            // A launch behind this one failed after this one was done: its answer says so, and
            // this one keeps its results, without the kernel's time (the context is gone).
            Err(_) if behind && self.checked_whole(&p) => {}
            Err(e) => return self.finish_failed(p, e, behind),
        }
        let stage = self.slots[slot].staging.get(0);
        let out: Vec<ByteBuf> = p
            .layout
            .iter()
            .map(|placed| match placed.at {
                Some(at) => ByteBuf::from(stage[at..at + placed.len].to_vec()),
                None => ByteBuf::new(),
            })
            .collect();
        let mut guard_hits = Vec::new();
        let mut bufs = p.bufs;
        for (i, placed) in p.layout.iter().enumerate() {
            let marks = self.slots[slot].marks.as_ref().filter(|_| p.check == CheckQueued::WithCopies);
            let flags = marks.map(|m| [m.flag(2 * i), m.flag(2 * i + 1)]);
            let hit = match (marks, flags) {
                (_, Some([0, 0])) => None,
                // The check left each changed guard's bytes in its dump, and filled it again.
                (Some(m), Some(f)) if !f.contains(&guard::UNCHECKED) => {
                    let clean = [PATTERN; GUARD_BYTES];
                    let side = |k: usize| if f[k] == 0 { &clean[..] } else { m.dump(2 * i + k) };
                    guard::check(i as u32, side(0), side(1), placed.len, placed.elem_size)
                }
                // No check ran on the device: the guards are read here.
                _ => {
                    let Some(d) = bufs[i].as_mut() else {
                        return Response::Failed {
                            message: "the guard check did not run for a buffer already handed on".into(),
                            sticky: true,
                        };
                    };
                    let mut pieces = [vec![0u8; GUARD_BYTES], vec![0u8; GUARD_BYTES]];
                    let read = [d.ptr, d.data() + d.len as u64].iter().zip(&mut pieces).try_for_each(|(src, piece)| {
                        // SAFETY: a guard region of the allocation, `GUARD_BYTES` long.
                        unsafe { result::memcpy_dtoh_sync(piece.as_mut_slice(), *src) }
                    });
                    if let Err(e) = read {
                        let p = Pending { bufs, ..p };
                        return self.finish_failed(p, e, behind);
                    }
                    let hit = guard::check(i as u32, &pieces[0], &pieces[1], placed.len, placed.elem_size);
                    d.guards_clean = hit.is_none();
                    hit
                }
            };
            guard_hits.extend(hit);
        }
        let printf = if self.prints { self.take_printf() } else { String::new() };
        // Keep each shared buffer's results on the device, held under the stamp they get until
        // the session reads them, and a small buffer's (where the check did not hand it on
        // already); the others are done with. The last launch's "before" copies are no longer
        // the last launch's.
        for (d, placed) in bufs.into_iter().zip(&p.layout) {
            let Some(d) = d else { continue };
            match (placed.result, placed.keep) {
                (Some(stamp), _) if placed.at.is_none() => {
                    self.resident.push(Resident { stamp, buf: d, used: self.tick, held: true, small: false });
                }
                (_, Some(stamp)) if placed.at.is_some() => {
                    self.resident.push(Resident { stamp, buf: d, used: self.tick, held: false, small: true });
                }
                _ => self.release(d),
            }
        }
        self.trim_small_kept();
        for stamp in &p.drop_after {
            self.drop_resident(*stamp);
        }
        for (stamp, buf) in p.snaps {
            self.resident.push(Resident { stamp, buf, used: self.tick, held: true, small: false });
        }
        Response::Launched(Box::new(LaunchResult {
            buffers: out,
            uploaded_bytes: p.uploaded,
            printf,
            guard_hits,
            kernel_ms,
            launch_us: p.launch_us,
        }))
    }

    /// Whether the launch's guard check wrote every flag: it ran, so the launch was done.
    fn checked_whole(&self, p: &Pending) -> bool {
        let Some(marks) = self.slots[p.slot].marks.as_ref() else { return false };
        p.check == CheckQueued::WithCopies && (0..2 * p.layout.len()).all(|k| marks.flag(k) != guard::UNCHECKED)
    }

    /// A launch that failed while it was waited for. With a launch queued behind it, which ran on
    /// what this one left, the worker ends whatever the error (a sticky answer), so the session
    /// sends that launch again to a new worker.
    fn finish_failed(&mut self, p: Pending, e: result::DriverError, behind: bool) -> Response {
        // Whether the check ran to fill its guards again is not known: the next launch fills them.
        let bufs: Vec<DeviceBuffer> =
            p.bufs.into_iter().flatten().map(|d| DeviceBuffer { guards_clean: false, ..d }).collect();
        let response = self.launch_failed(&p.kernel, e, bufs, p.snaps);
        // Small results kept when the check was queued are no one's now.
        for stamp in p.layout.iter().filter_map(|placed| placed.keep) {
            self.drop_resident(stamp);
        }
        match response {
            Response::Failed { message, .. } if behind => Response::Failed { message, sticky: true },
            r => r,
        }
    }

    /// A launch whose kernel, or what was queued after it, failed. A failing device-side
    /// `assert` is the kernel's trap; any other error fails the launch, which lets its buffers
    /// go unless the context is gone with them.
    fn launch_failed(
        &mut self,
        kernel: &str,
        e: result::DriverError,
        bufs: Vec<DeviceBuffer>,
        snaps: Vec<(u64, DeviceBuffer)>,
    ) -> Response {
        if e.0 == sys::CUresult::CUDA_ERROR_ASSERT {
            return Response::Trapped { printed: self.take_printf() };
        }
        let response = failed(&format!("running `{kernel}`"), e);
        if !matches!(response, Response::Failed { sticky: true, .. }) {
            self.release_launch(bufs, snaps);
        }
        response
    }

    /// Queue the device guard check over the guard regions at `guards` (two a buffer), their
    /// flags in slot `slot` set to [`guard::UNCHECKED`] first, and with it the copies of the
    /// buffers' results that `copies` names (one entry a buffer). [`CheckQueued::No`] where it
    /// cannot run: every guard is then read on the host, and every result copied.
    fn queue_guard_check(
        &mut self,
        slot: usize,
        guards: &[sys::CUdeviceptr],
        copies: &[Option<GuardCopy>],
        stream: sys::CUstream,
    ) -> CheckQueued {
        let Some(func) = self.checker().map(|c| c.func) else { return CheckQueued::No };
        let Some(marks) = Marks::reset(self.slots[slot].marks.take(), guards.len()) else {
            return CheckQueued::No;
        };
        let chunks = guards.chunks(guard::GUARDS_PER_CHECK).zip(copies.chunks(guard::COPIES_PER_CHECK));
        let mut queued = CheckQueued::WithCopies;
        for (c, (chunk, copy_chunk)) in chunks.enumerate() {
            let mut at = [0 as sys::CUdeviceptr; guard::GUARDS_PER_CHECK];
            at[..chunk.len()].copy_from_slice(chunk);
            let mut count = chunk.len() as u32;
            let first = c * guard::GUARDS_PER_CHECK;
            let mut flags = marks.flags_device() + (first * 4) as u64;
            let mut dumps = marks.dumps_device() + (first * GUARD_BYTES) as u64;
            let chunk_copies: Vec<(u64, u64, u64)> =
                copy_chunk.iter().flatten().map(|c| (c.from, c.to, c.len)).collect();
            let (mut table, mut ncopies, bytes) = guard::copy_table(&chunk_copies);
            let blocks = count + guard::copy_blocks(bytes);
            let mut params = [
                &mut at as *mut _ as *mut c_void,
                &mut count as *mut _ as *mut c_void,
                &mut flags as *mut _ as *mut c_void,
                &mut table as *mut _ as *mut c_void,
                &mut ncopies as *mut _ as *mut c_void,
                &mut dumps as *mut _ as *mut c_void,
            ];
            // SAFETY: the check kernel's six parameters, alive for the call (the driver copies
            // them); the guards and the copies' sources lie in live allocations, the flags and
            // dumps in the slot's marks, the copies' destinations in its staging memory, which
            // stays untouched until the launch's done event is waited for.
            let r = unsafe {
                result::launch_kernel(func, (blocks, 1, 1), (guard::CHECK_THREADS, 1, 1), 0, stream, &mut params)
            };
            if r.is_err() {
                queued = CheckQueued::No;
                break;
            }
        }
        self.slots[slot].marks = Some(marks);
        queued
    }

    /// Copy the session's values into the loaded module's `__constant__`/`__device__`
    /// variables (`cuModuleGetGlobal`, then a host-to-device copy, as `cudaMemcpyToSymbol`
    /// does). A variable the module does not have was left out by the compiler because no
    /// kernel reads it: nothing can see its values, so it is skipped.
    fn set_symbols(&mut self, symbols: &[(String, Vec<u8>)]) -> Result<(), Response> {
        let Some(module) = self.module else { return Ok(()) };
        for (name, bytes) in symbols {
            let found = match self.globals.get(name) {
                Some(found) => *found,
                None => {
                    let Ok(cname) = CString::new(name.as_str()) else { continue };
                    // SAFETY: the module is loaded; the lookup writes a pointer and a size.
                    let found = match unsafe { result::module::get_global(module, cname) } {
                        Ok(found) => Some(found),
                        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => None,
                        Err(e) => return Err(failed(&format!("finding `{name}` in the module"), e)),
                    };
                    self.globals.insert(name.clone(), found);
                    found
                }
            };
            let Some((ptr, size)) = found else { continue };
            let n = bytes.len().min(size);
            // SAFETY: `ptr` is the variable's device address and holds `size >= n` bytes.
            unsafe { result::memcpy_htod_sync(ptr, &bytes[..n]) }
                .map_err(|e| failed(&format!("setting `{name}`"), e))?;
        }
        Ok(())
    }

    /// What device printf wrote since the last launch.
    fn take_printf(&mut self) -> String {
        // SAFETY: flushes C stdio buffers, where the driver's printf output may wait.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        let mut text = String::new();
        // Most kernels print nothing: one look at the file's length says so (and where it cannot
        // say, the file is read).
        let grown = self.printf.metadata().map(|m| m.len() > self.printf_read).unwrap_or(true);
        if grown && self.printf.seek(SeekFrom::Start(self.printf_read)).is_ok() {
            let _ = self.printf.read_to_string(&mut text);
            self.printf_read += text.len() as u64;
        }
        text
    }
}

/// Whether a module may print: its source names `printf` (device `printf` is `vprintf`
/// underneath), or its compiled image calls `vprintf` (a header's macro, say). Erring towards
/// `true` costs a look at the printf file per launch; a module that prints is always read.
fn may_print(source: &str, image: &[u8]) -> bool {
    source.contains("printf") || image.windows(b"vprintf".len()).any(|w| w == b"vprintf")
}

/// NVRTC's version, `(12, 4)`; `(0, 0)` where it cannot say.
fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints; the library was checked present before any request.
    unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (major, minor)
}

/// The compiled image, NVRTC's log, and each name expression with its mangled name.
type Compiled = (Vec<u8>, String, Vec<(String, String)>);

/// NVRTC: the compiled image (CUBIN when `binary`, else NUL-terminated PTX), the log and the
/// mangled names of `names` (template instances, as name expressions), or the log of a failed
/// compilation.
fn nvrtc_compile(source: &str, options: &[String], binary: bool, names: &[String]) -> Result<Compiled, String> {
    let src = CString::new(source).map_err(|_| "the source contains a NUL character".to_string())?;
    let name = CString::new("gridlab.cu").unwrap();
    let exprs: Vec<CString> = names
        .iter()
        .map(|n| CString::new(n.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| "a template argument contains a NUL character".to_string())?;
    let prog = nvrtc::result::create_program(&src, Some(&name)).map_err(|e| format!("nvrtc: {e:?}"))?;
    // SAFETY: the program is valid until destroyed at the end of this function; the name
    // expressions outlive it, and a lowered name is NVRTC's string, copied before the program
    // is destroyed.
    unsafe {
        for e in &exprs {
            nvrtc::sys::nvrtcAddNameExpression(prog, e.as_ptr());
        }
        let compiled = nvrtc::result::compile_program(prog, options);
        let mut lowered = Vec::new();
        if compiled.is_ok() {
            for (n, e) in names.iter().zip(&exprs) {
                let mut out: *const std::ffi::c_char = std::ptr::null();
                let r = nvrtc::sys::nvrtcGetLoweredName(prog, e.as_ptr(), &mut out);
                if r == nvrtc::sys::nvrtcResult::NVRTC_SUCCESS && !out.is_null() {
                    let mangled = std::ffi::CStr::from_ptr(out).to_string_lossy().into_owned();
                    lowered.push((n.clone(), mangled));
                }
            }
        }
        let log = nvrtc::result::get_program_log(prog)
            .map(|l| {
                let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default();
        let image = match compiled {
            Err(_) => Err(log.clone()),
            Ok(()) if binary => {
                let mut size = 0usize;
                nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size);
                let mut image = vec![0u8; size];
                let r = nvrtc::sys::nvrtcGetCUBIN(prog, image.as_mut_ptr() as *mut std::ffi::c_char);
                if r == nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
                    Ok((image, log.clone(), lowered))
                } else {
                    Err(format!("nvrtc: no CUBIN ({r:?})"))
                }
            }
            Ok(()) => nvrtc::result::get_ptx(prog)
                .map(|p| (p.iter().map(|&c| c as u8).collect(), log.clone(), lowered))
                .map_err(|e| format!("nvrtc: {e:?}")),
        };
        let _ = nvrtc::result::destroy_program(prog);
        image
    }
}

#[cfg(test)]
mod tests {
    use super::may_print;

    #[test]
    fn a_module_prints_when_its_source_or_its_image_says_so() {
        let kernel = "__global__ void k(float *a) { a[0] = 1; }";
        assert!(!may_print(kernel, b"\x7fELF...bump...__assertfail"));
        assert!(may_print("__global__ void k() { printf(\"%d\\n\", 1); }", b"\x7fELF"));
        // A header's macro the source does not spell: the compiled image calls `vprintf`.
        assert!(may_print("__global__ void k() { LOG(1); }", b".extern .func (.param .b32 r) vprintf"));
    }
}
