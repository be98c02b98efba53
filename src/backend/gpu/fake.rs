//! A fake GPU worker for gridlab's own tests: `gridlab worker --fake` speaks the real protocol
//! (`protocol.rs`) on its stdin and stdout but touches no CUDA, so the client (`client.rs`) and
//! the backend's restart logic (`gpu.rs`) are tested in CI on machines without a GPU.
//!
//! It answers every request plausibly: a made-up device, a "compiled" module, launches that send
//! the buffers back unchanged and print one line. A launch before any compile fails as the real
//! worker's does, so a test sees whether a restarted worker was given the module again.
//!
//! Shared buffers take the real data path: their regions arrive on the socket (`transport.rs`),
//! and the fake keeps a "device copy" of each launched buffer's results under their stamp until
//! the session reads them back (`Request::Read`), uploading (copying out of the region) only what
//! the real worker would, and saying how much in `uploaded_bytes`. So a session that skipped an
//! upload it needed, or read a buffer without reading its results back, computes from stale
//! bytes, and a test sees it. Small buffers' results are kept too, under the stamp the request
//! gives ([`WireBuffer::keep`](super::protocol::WireBuffer::keep)), so a launch that names a small
//! buffer by a stamp it was not given, or whose copy it let go, is answered `NotKept`, as the real
//! worker answers it. A kernel named `fake_bump` adds 1 to every byte of every buffer, on
//! the device copy, so results must travel back too. The misbehaviour is asked for per request,
//! by launching a kernel with one of these names:
//!
//! - `fake_crash`: write a line to stderr and exit with status 70, mid-request;
//! - `fake_crash_mid_copy`: run like `fake_bump`; the next read writes half of the first region
//!   it fills, then exits with status 70 (a worker killed while copying results back);
//! - `fake_hang`: never answer (a kernel in an endless loop);
//! - `fake_garbage`: answer with a well-framed message that is not a response, then go on;
//! - `fake_linger`: answer, but from then on ignore the closing of stdin and stay (a worker stuck
//!   in a kernel when the session leaves);
//! - `fake_assert`: answer as the real worker does when a device-side `assert` fails
//!   (`Trapped`, with the device's message), then exit as it does after a sticky error;
//! - `fake_refused`: fail as a launch the driver refuses does (too many resources, say): a
//!   non-sticky `Failed`, the worker going on, nothing launched or kept;
//! - `fake_slow`: run like `fake_bump`, but keep the "device" busy for [`SLOW`], so that a launch
//!   sent meanwhile is begun behind it (the request loop, `serve.rs`, is the real worker's); its
//!   printf line says whether one was.
//!
//! The misbehaviours happen when a launch is finished, as a real fault is seen when the launch
//! is waited for, so a launch begun behind one of them is never answered.
//!
//! Nobody reaches it by accident: `--fake` is a hidden flag of the hidden `worker` subcommand,
//! which gridlab itself never passes.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_bytes::ByteBuf;

use super::protocol::{
    self, DeviceInfo, KernelInfo, LaunchRequest, LaunchResult, ReadItem, Request, Response, WireData,
};
use super::serve;
use super::transport::Regions;

/// Exit status of a `fake_crash` (`EX_SOFTWARE`).
pub const CRASH_STATUS: u8 = 70;

/// Exit status after a sticky error, as the real worker's.
pub const STICKY_STATUS: u8 = serve::STICKY_STATUS;

/// Run the fake worker until stdin closes (or a request asks it to misbehave), through the
/// real worker's request loop (`serve.rs`): a launch is begun, and a launch already waiting on
/// the pipe may be begun behind it before it is answered.
pub fn main() -> ExitCode {
    let Ok(mut input) = protocol::FrameReader::stdin() else {
        eprintln!("gridlab worker (fake): cannot read its stdin");
        return ExitCode::from(3);
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut fake = Fake {
        compiled: false,
        linger: false,
        gpu: Device { regions: Regions::from_env(), resident: Vec::new(), crash_on_read: false },
    };
    serve::serve(&mut fake, &mut input, &mut out)
}

/// How long a `fake_slow` launch keeps the fake's "device" busy.
pub const SLOW: Duration = Duration::from_millis(200);

struct Fake {
    compiled: bool,
    /// A `fake_linger` ran: the closing of stdin is ignored from then on.
    linger: bool,
    gpu: Device,
}

/// A launch the fake has begun: what it does when it is finished.
pub struct Begun {
    then: Then,
    /// Another launch may be begun behind it (no shared buffers, launched once), as the real
    /// worker allows.
    overlaps: bool,
    /// A `fake_slow` launch: when it began.
    slow: Option<Instant>,
}

enum Then {
    Answer(Response),
    Crash,
    Hang,
    Assert(String),
    Garbage,
}

impl serve::Launcher for Fake {
    type Pending = Begun;

    fn handle(&mut self, request: Request) -> Response {
        match request {
            Request::Hello => Response::Hello(device()),
            Request::Compile { .. } => {
                self.compiled = true;
                Response::Compiled { log: String::new(), arch: "sm_fake".into(), millis: 0.0, cached: false }
            }
            Request::Launch(launch) => match self.begin(launch) {
                serve::Begun::Queued(p) => match self.finish(p, false) {
                    Some(answer) => answer,
                    // Garbage went out instead of an answer; the session has given up on this one.
                    None => Response::Failed { message: "garbage".into(), sticky: false },
                },
                serve::Begun::Answered(r) => r,
            },
            Request::Ptx if self.compiled => Response::Ptx("// the fake worker compiles nothing\n".into()),
            Request::Ptx => Response::Failed { message: "no module has been compiled yet".into(), sticky: false },
            Request::Read { items } => match self.gpu.read(&items) {
                Ok(r) => r,
                Err(Crash) => {
                    eprintln!("gridlab worker (fake): crashed on purpose while copying results out");
                    std::process::exit(CRASH_STATUS.into());
                }
            },
            Request::Info { block_size, .. } => Response::Info(KernelInfo {
                registers: 8,
                shared_bytes: 0,
                local_bytes: 0,
                max_threads_per_block: 1024,
                block_size,
                active_blocks_per_sm: 1,
                max_threads_per_sm: 2048,
            }),
        }
    }

    /// The misbehaviours happen when the launch is finished, as a real kernel's fault is seen when
    /// it is waited for: a launch begun behind one of them is never answered.
    fn begin(&mut self, launch: LaunchRequest) -> serve::Begun<Begun> {
        let overlaps = self.may_follow(&launch);
        let then = match launch.kernel.as_str() {
            "fake_crash" => Then::Crash,
            "fake_hang" => Then::Hang,
            "fake_assert" => Then::Assert(format!(
                "fake.cu:3: void {}(int *): block: [1,0,0], thread: [5,0,0] Assertion `a[i] >= 0` failed.\n",
                launch.kernel
            )),
            "fake_garbage" => Then::Garbage,
            "fake_refused" => {
                return serve::Begun::Answered(Response::Failed {
                    message: "running `fake_refused`: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch".into(),
                    sticky: false,
                });
            }
            _ if !self.compiled => {
                return serve::Begun::Answered(Response::Failed {
                    message: "no module is loaded: define a kernel first".into(),
                    sticky: false,
                });
            }
            kernel => {
                self.linger |= kernel == "fake_linger";
                match self.gpu.launch(&launch) {
                    r @ Response::Launched(_) => Then::Answer(r),
                    // Refused before it ran: answered in its turn, as the real worker does.
                    r => return serve::Begun::Answered(r),
                }
            }
        };
        let slow = (launch.kernel == "fake_slow").then(Instant::now);
        serve::Begun::Queued(Begun { then, overlaps, slow })
    }

    fn overlaps(&self, ahead: &Begun) -> bool {
        ahead.overlaps
    }

    fn may_follow(&self, next: &LaunchRequest) -> bool {
        next.repeat <= 1 && next.buffers.iter().all(|b| !matches!(b.data, WireData::Shared(_)))
    }

    fn is_done(&mut self, pending: &Begun) -> bool {
        pending.slow.is_none_or(|since| since.elapsed() >= SLOW)
    }

    fn finish(&mut self, pending: Begun, behind: bool) -> Option<Response> {
        if let Some(since) = pending.slow {
            std::thread::sleep(SLOW.saturating_sub(since.elapsed()));
        }
        match pending.then {
            Then::Answer(Response::Launched(mut r)) if pending.slow.is_some() => {
                // What a test of the loop looks for: whether a launch was begun behind this one.
                r.printf = format!("fake worker ran fake_slow, {} launch behind it\n", if behind { "a" } else { "no" });
                Some(Response::Launched(r))
            }
            Then::Answer(r) => Some(r),
            Then::Crash => {
                eprintln!("gridlab worker (fake): crashed on purpose, launching `fake_crash`");
                std::process::exit(CRASH_STATUS.into());
            }
            Then::Hang => sleep_forever(),
            Then::Assert(printed) => Some(Response::Trapped { printed }),
            Then::Garbage => {
                // A whole frame, so the client reads it at once, whose body decodes to nothing.
                let mut out = io::stdout().lock();
                if out.write_all(&[4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).and_then(|()| out.flush()).is_err() {
                    std::process::exit(3);
                }
                None
            }
        }
    }

    fn closed(&mut self) -> ExitCode {
        if self.linger {
            sleep_forever();
        }
        ExitCode::SUCCESS
    }
}

/// The fake's GPU: the regions it was given and its "device copies" of shared buffers, by
/// stamp, each held (results not read back yet, a launch's "before") or not.
struct Device {
    regions: Regions,
    resident: Vec<Resident>,
    /// A `fake_crash_mid_copy` ran: the next read dies half-way.
    crash_on_read: bool,
}

struct Resident {
    stamp: u64,
    bytes: Vec<u8>,
    /// A small buffer's results, which the host has too (the real worker keeps at most 256).
    small: bool,
}

/// At most this many small buffers' copies are kept, the oldest going first, as the real
/// worker's `SMALL_KEPT` (kept small here, so that tests see a copy let go).
pub const SMALL_KEPT: usize = 4;

/// `fake_crash_mid_copy` asked the fake to die.
struct Crash;

impl Device {
    /// What the real worker does with the buffers, on host memory: upload where the device copy
    /// is missing or stale, keep a "before" of contents only the device has, run (`fake_bump`
    /// adds 1 to every byte), keep the results on the device.
    fn launch(&mut self, req: &LaunchRequest) -> Response {
        for id in &req.released {
            self.regions.release(*id);
        }
        let small_at = |resident: &[Resident], stamp: u64, len: u64| {
            resident.iter().position(|r| r.small && r.stamp == stamp && r.bytes.len() as u64 == len)
        };
        let not_kept = req.stamps_not_kept(|stamp, len| small_at(&self.resident, stamp, len).is_some());
        if !not_kept.is_empty() {
            return Response::NotKept { stamps: not_kept };
        }
        let mut uploaded = 0u64;
        let mut copies = Vec::new();
        for b in &req.buffers {
            let copy = match &b.data {
                WireData::Inline(bytes) => {
                    uploaded += bytes.len() as u64;
                    bytes.clone()
                }
                &WireData::Kept { stamp, len } => match small_at(&self.resident, stamp, len) {
                    Some(i) => self.resident.remove(i).bytes,
                    None => return gone(stamp),
                },
                WireData::Shared(s) => {
                    let kept = self.resident.iter().position(|r| r.stamp == s.stamp && r.bytes.len() as u64 == s.len);
                    match kept {
                        // The contents only the device has: run on a copy, keep these as the
                        // launch's "before".
                        Some(i) if s.device_only => self.resident[i].bytes.clone(),
                        None if s.device_only => return gone(s.stamp),
                        Some(i) if s.fresh && s.stamp != 0 => self.resident.remove(i).bytes,
                        _ => {
                            if !s.fresh {
                                self.resident.retain(|r| r.stamp != s.stamp);
                            }
                            uploaded += s.len;
                            match self.regions.get(s.region) {
                                Ok(Some(map)) => map[..s.len as usize].to_vec(),
                                _ => return missing(s.region),
                            }
                        }
                    }
                }
            };
            copies.push(copy);
        }
        let started: Vec<Vec<u8>> = copies.clone();
        let bump = matches!(req.kernel.as_str(), "fake_bump" | "fake_slow" | "fake_crash_mid_copy");
        if bump {
            for byte in copies.iter_mut().flatten() {
                *byte = byte.wrapping_add(req.repeat.max(1) as u8);
            }
        }
        self.crash_on_read |= req.kernel == "fake_crash_mid_copy";
        // The contents each launch started from stay as its "before" (those only the device has
        // already do, under their stamp).
        let mut snaps = Vec::new();
        for b in &req.buffers {
            if let WireData::Shared(s) = &b.data
                && let Some(stamp) = s.snapshot
                && !s.device_only
            {
                snaps.push(stamp);
            }
        }
        let mut buffers = Vec::new();
        for (b, copy) in req.buffers.iter().zip(copies) {
            match &b.data {
                WireData::Inline(_) | WireData::Kept { .. } => {
                    if let Some(stamp) = b.keep {
                        self.resident.push(Resident { stamp, bytes: copy.clone(), small: true });
                    }
                    buffers.push(ByteBuf::from(copy));
                }
                WireData::Shared(s) => {
                    if let Some(stamp) = s.result {
                        self.resident.push(Resident { stamp, bytes: copy, small: false });
                    }
                    buffers.push(ByteBuf::new());
                }
            }
        }
        self.resident.retain(|r| !req.drop_after.contains(&r.stamp));
        let mut at = 0;
        for (b, bytes) in req.buffers.iter().zip(started) {
            if let WireData::Shared(s) = &b.data
                && !s.device_only
                && s.snapshot.is_some()
            {
                self.resident.push(Resident { stamp: snaps[at], bytes, small: false });
                at += 1;
            }
        }
        // The oldest small copies go first: the resident list is in the order they were kept.
        while self.resident.iter().filter(|r| r.small).count() > SMALL_KEPT {
            if let Some(oldest) = self.resident.iter().position(|r| r.small) {
                self.resident.remove(oldest);
            }
        }
        let repeat = req.repeat.max(1) as usize;
        Response::Launched(Box::new(LaunchResult {
            buffers,
            uploaded_bytes: uploaded,
            printf: format!("fake worker ran {}\n", req.kernel),
            guard_hits: Vec::new(),
            kernel_ms: vec![0.0; repeat],
            launch_us: vec![0.0; repeat],
        }))
    }

    /// Copy device copies into their regions, as the real worker's `Read`.
    fn read(&mut self, items: &[ReadItem]) -> Result<Response, Crash> {
        let mut missing_stamps = Vec::new();
        for item in items {
            let Some(i) = self.resident.iter().position(|r| r.stamp == item.stamp && r.bytes.len() as u64 == item.len)
            else {
                missing_stamps.push(item.stamp);
                continue;
            };
            let Ok(Some(map)) = self.regions.get(item.region) else { return Ok(missing(item.region)) };
            let bytes = &self.resident[i].bytes;
            if self.crash_on_read {
                let half = bytes.len() / 2;
                map[..half].copy_from_slice(&bytes[..half]);
                return Err(Crash);
            }
            map[..bytes.len()].copy_from_slice(bytes);
            if !item.keep {
                self.resident.remove(i);
            }
        }
        Ok(Response::Read { missing: missing_stamps })
    }
}

/// A launch of contents the device no longer holds: the real worker's answer.
fn gone(stamp: u64) -> Response {
    Response::Failed { message: format!("the GPU worker no longer holds the results stamped {stamp}"), sticky: false }
}

/// A launch naming a region that never arrived: the real worker's answer.
fn missing(region: u64) -> Response {
    Response::Failed { message: format!("shared buffer region {region} never reached the GPU worker"), sticky: false }
}

/// A device that is plainly not a real one.
fn device() -> DeviceInfo {
    DeviceInfo {
        name: "gridlab fake worker".into(),
        ordinal: 0,
        compute_capability: (0, 0),
        sm_count: 1,
        total_mem: 1 << 30,
        peak_bandwidth_gbs: 1.0,
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX, 65535, 65535],
        max_shared_per_block: 48 << 10,
        driver_version: 0,
        nvrtc_version: (0, 0),
    }
}

/// Stay until killed.
fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
