//! The typed protocol between the session (parent) and the GPU worker process: requests and
//! responses as serde types, framed on the pipes as a little-endian `u32` length followed by a
//! postcard payload.
//!
//! The worker's own stdout is not the channel: device `printf` writes there, so the worker moves
//! its stdout aside at start and speaks the protocol on a duplicate of the original descriptor.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Create the context and describe the device.
    Hello,
    /// Compile a whole module with NVRTC and load it.
    Compile { source: String, options: Vec<String> },
    /// Run one kernel over the given buffers and send them back.
    Launch(LaunchRequest),
    /// The PTX of the last compiled module.
    Ptx,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchRequest {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<WireArg>,
    /// Buffer contents; `WireArg::Buffer(i)` refers to `buffers[i]`.
    pub buffers: Vec<WireBuffer>,
    /// Launch this many times (for timing); results are those of the last launch.
    pub repeat: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WireArg {
    Buffer(u32),
    /// The argument's bytes as the kernel expects them (little-endian, its C size).
    Scalar(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireBuffer {
    pub bytes: Vec<u8>,
    /// For guard reports in elements.
    pub elem_size: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub ordinal: u32,
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub total_mem: u64,
    /// Peak memory bandwidth in GB/s from the memory clock and bus width.
    pub peak_bandwidth_gbs: f64,
    pub max_threads_per_block: i32,
    pub max_block: [i32; 3],
    pub max_grid: [i32; 3],
    pub max_shared_per_block: i32,
    pub driver_version: i32,
    pub nvrtc_version: (i32, i32),
}

/// Writes outside a buffer, seen in its guard regions after a launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardHit {
    pub buffer: u32,
    /// Element indices written outside: negative before the start, `>= len` past the end.
    pub min_index: i64,
    pub max_index: i64,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    Hello(DeviceInfo),
    Compiled {
        log: String,
        arch: String,
        /// Compile time, or on a cache hit the time to read and load the cached image.
        millis: f64,
        /// Loaded from the compile cache on disk (`cache.rs`): NVRTC did not run.
        cached: bool,
    },
    CompileFailed {
        log: String,
    },
    Launched(LaunchResult),
    Ptx(String),
    /// A request failed with a CUDA error; `sticky` errors leave the context unusable.
    Failed {
        message: String,
        sticky: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchResult {
    pub buffers: Vec<Vec<u8>>,
    /// What the kernel printed, as the device wrote it.
    pub printf: String,
    pub guard_hits: Vec<GuardHit>,
    /// Kernel time of each launch, from CUDA events, in milliseconds.
    pub kernel_ms: Vec<f32>,
    /// Host time to issue each launch (the launch call alone), in microseconds.
    pub launch_us: Vec<f64>,
}

/// Write one framed message.
pub fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> io::Result<()> {
    let bytes = postcard::to_stdvec(msg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let len =
        u32::try_from(bytes.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "message over 4 GiB"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&bytes)?;
    out.flush()
}

/// Read one framed message; `Ok(None)` at a clean end of stream.
pub fn recv<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as u64;
    // Grow the buffer as bytes arrive rather than trusting the length up front: a corrupt
    // length then ends in an error, not a 4 GiB allocation.
    let mut buf = Vec::new();
    input.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the worker's message ended early"));
    }
    postcard::from_bytes(&buf).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_frames() {
        let req = Request::Launch(LaunchRequest {
            kernel: "add_half".into(),
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            args: vec![WireArg::Buffer(0), WireArg::Scalar(1000i32.to_le_bytes().to_vec())],
            buffers: vec![WireBuffer { bytes: vec![0; 4000], elem_size: 4 }],
            repeat: 1,
        });
        let mut wire = Vec::new();
        send(&mut wire, &req).unwrap();
        send(&mut wire, &Request::Hello).unwrap();
        let mut r = wire.as_slice();
        assert_eq!(recv::<Request>(&mut r).unwrap(), Some(req));
        assert_eq!(recv::<Request>(&mut r).unwrap(), Some(Request::Hello));
        assert_eq!(recv::<Request>(&mut r).unwrap(), None);
    }

    #[test]
    fn a_corrupt_length_is_an_error_not_an_allocation() {
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1, 2];
        assert!(recv::<Request>(&mut r).is_err());
    }
}
