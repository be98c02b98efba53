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
//!   non-sticky `Failed`, the worker going on, nothing launched or kept.
//!
//! Nobody reaches it by accident: `--fake` is a hidden flag of the hidden `worker` subcommand,
//! which gridlab itself never passes.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use serde_bytes::ByteBuf;

use super::protocol::{
    self, DeviceInfo, KernelInfo, LaunchRequest, LaunchResult, ReadItem, Request, Response, WireData,
};
use super::transport::Regions;

/// Exit status of a `fake_crash` (`EX_SOFTWARE`).
pub const CRASH_STATUS: u8 = 70;

/// Exit status after a sticky error, as the real worker's.
pub const STICKY_STATUS: u8 = 4;

/// Run the fake worker until stdin closes (or a request asks it to misbehave).
pub fn main() -> ExitCode {
    let Ok(mut input) = protocol::FrameReader::stdin() else {
        eprintln!("gridlab worker (fake): cannot read its stdin");
        return ExitCode::from(3);
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut compiled = false;
    let mut linger = false;
    let mut gpu = Device { regions: Regions::from_env(), resident: Vec::new(), crash_on_read: false };
    loop {
        let request = match input.request() {
            Ok(Some(r)) => r,
            Ok(None) if linger => sleep_forever(),
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gridlab worker (fake): bad request: {e}");
                return ExitCode::from(3);
            }
        };
        let response = match request {
            Request::Hello => Response::Hello(device()),
            Request::Compile { .. } => {
                compiled = true;
                Response::Compiled { log: String::new(), arch: "sm_fake".into(), millis: 0.0, cached: false }
            }
            Request::Launch(launch) => match launch.kernel.as_str() {
                "fake_crash" => {
                    eprintln!("gridlab worker (fake): crashed on purpose, launching `fake_crash`");
                    return ExitCode::from(CRASH_STATUS);
                }
                "fake_hang" => sleep_forever(),
                "fake_assert" => {
                    let printed = format!(
                        "fake.cu:3: void {}(int *): block: [1,0,0], thread: [5,0,0] Assertion `a[i] >= 0` failed.\n",
                        launch.kernel
                    );
                    let _ = protocol::send(&mut out, &Response::Trapped { printed });
                    return ExitCode::from(STICKY_STATUS);
                }
                "fake_garbage" => {
                    // A whole frame, so the client reads it at once, whose body decodes to nothing.
                    if out.write_all(&[4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).and_then(|()| out.flush()).is_err() {
                        return ExitCode::from(3);
                    }
                    continue;
                }
                "fake_refused" => Response::Failed {
                    message: "running `fake_refused`: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch".into(),
                    sticky: false,
                },
                _ if !compiled => {
                    Response::Failed { message: "no module is loaded: define a kernel first".into(), sticky: false }
                }
                kernel => {
                    linger |= kernel == "fake_linger";
                    match gpu.launch(&launch) {
                        Ok(r) => r,
                        Err(Crash) => {
                            eprintln!("gridlab worker (fake): crashed on purpose while copying results out");
                            return ExitCode::from(CRASH_STATUS);
                        }
                    }
                }
            },
            Request::Ptx if compiled => Response::Ptx("// the fake worker compiles nothing\n".into()),
            Request::Ptx => Response::Failed { message: "no module has been compiled yet".into(), sticky: false },
            Request::Read { items } => match gpu.read(&items) {
                Ok(r) => r,
                Err(Crash) => {
                    eprintln!("gridlab worker (fake): crashed on purpose while copying results out");
                    return ExitCode::from(CRASH_STATUS);
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
        };
        if protocol::send(&mut out, &response).is_err() {
            return ExitCode::from(3);
        }
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
    fn launch(&mut self, req: &LaunchRequest) -> Result<Response, Crash> {
        for id in &req.released {
            self.regions.release(*id);
        }
        let small_at = |resident: &[Resident], stamp: u64, len: u64| {
            resident.iter().position(|r| r.small && r.stamp == stamp && r.bytes.len() as u64 == len)
        };
        let not_kept = req.stamps_not_kept(|stamp, len| small_at(&self.resident, stamp, len).is_some());
        if !not_kept.is_empty() {
            return Ok(Response::NotKept { stamps: not_kept });
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
                    None => return Ok(gone(stamp)),
                },
                WireData::Shared(s) => {
                    let kept = self.resident.iter().position(|r| r.stamp == s.stamp && r.bytes.len() as u64 == s.len);
                    match kept {
                        // The contents only the device has: run on a copy, keep these as the
                        // launch's "before".
                        Some(i) if s.device_only => self.resident[i].bytes.clone(),
                        None if s.device_only => return Ok(gone(s.stamp)),
                        Some(i) if s.fresh && s.stamp != 0 => self.resident.remove(i).bytes,
                        _ => {
                            if !s.fresh {
                                self.resident.retain(|r| r.stamp != s.stamp);
                            }
                            uploaded += s.len;
                            match self.regions.get(s.region) {
                                Ok(Some(map)) => map[..s.len as usize].to_vec(),
                                _ => return Ok(missing(s.region)),
                            }
                        }
                    }
                }
            };
            copies.push(copy);
        }
        let started: Vec<Vec<u8>> = copies.clone();
        let bump = matches!(req.kernel.as_str(), "fake_bump" | "fake_crash_mid_copy");
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
        Ok(Response::Launched(Box::new(LaunchResult {
            buffers,
            uploaded_bytes: uploaded,
            printf: format!("fake worker ran {}\n", req.kernel),
            guard_hits: Vec::new(),
            kernel_ms: vec![0.0; repeat],
            launch_us: vec![0.0; repeat],
        })))
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
