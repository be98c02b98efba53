//! The typed protocol between the session (parent) and the GPU worker process: requests and
//! responses as serde types, framed on the pipes as a little-endian `u32` length followed by a
//! postcard payload. Both ends read with [`FrameReader`], straight from the pipe, asking it again
//! for a moment before they sleep: a small launch's round trip is shorter than waking a process.
//!
//! The worker's own stdout is not the channel: device `printf` writes there, so the worker moves
//! its stdout aside at start and speaks the protocol on a duplicate of the original descriptor.
//!
//! Large buffers do not travel in messages: they live in shared memory that both processes map
//! (`buffer::shared`, descriptors passed once by `transport.rs`), and a message names them by
//! region id, with the stamp that says whether the device already holds their bytes. A launch
//! leaves their results on the device under a new stamp, and [`Request::Read`] brings them back
//! when the session needs them.
//!
//! Small buffers travel in the message, and their results come back in the answer; the worker
//! also keeps the device copy of those results under a stamp ([`WireBuffer::keep`]), so the next
//! launch of a buffer the host has not changed names it by that stamp ([`WireData::Kept`]) and
//! its bytes do not travel or go up again.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, Timespec};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Create the context and describe the device.
    Hello,
    /// Compile a whole module with NVRTC and load it. `names` are template kernel instances
    /// (`matrixMul<16>`) given to NVRTC as name expressions, so launches can use them by name.
    Compile {
        source: String,
        options: Vec<String>,
        #[serde(default)]
        names: Vec<String>,
    },
    /// Run one kernel over the given buffers and send them back.
    Launch(LaunchRequest),
    /// The PTX of the last compiled module.
    Ptx,
    /// What the compiled kernel uses (registers, shared and local memory) and its occupancy for
    /// blocks of `block_size` threads.
    Info { kernel: String, block_size: u32 },
    /// Copy device copies that launches left on the device into shared regions.
    Read { items: Vec<ReadItem> },
}

/// One device copy to bring back: the bytes stamped `stamp` into region `region`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadItem {
    pub stamp: u64,
    pub len: u64,
    pub region: u64,
    /// Keep the device copy afterwards (a buffer's contents, which the next launch of the
    /// unchanged buffer uses), or let it go (a launch's "before", needed once).
    pub keep: bool,
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
    /// Module variables to set before each launch (`cudaMemcpyToSymbol`): name and bytes.
    pub symbols: Vec<(String, Vec<u8>)>,
    /// Shared regions the session has freed since the last request: the worker lets its
    /// mappings (and any device copy it keeps for them) go.
    pub released: Vec<u64>,
    /// Device copies to let go once this launch has succeeded: the "before" copies of the
    /// previous launch, which this one replaces as the last launch.
    #[serde(default)]
    pub drop_after: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WireArg {
    Buffer(u32),
    /// A pointer `byte_offset` bytes into `buffers[buffer]` (`a + 4` of a launch): at most the
    /// buffer's length, a whole number of its elements.
    View {
        buffer: u32,
        byte_offset: u64,
    },
    /// The argument's bytes as the kernel expects them (little-endian, its C size).
    Scalar(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireBuffer {
    pub data: WireData,
    /// For guard reports in elements.
    pub elem_size: u32,
    /// A small buffer's results (sent back in the answer) stay on the device after a successful
    /// launch, under this stamp, for a later launch to name ([`WireData::Kept`]). `None` for a
    /// shared buffer (see [`SharedBuffer::result`]) and for `:time`, whose launches are not
    /// written back.
    #[serde(default)]
    pub keep: Option<u64>,
}

impl LaunchRequest {
    /// The stamps of small buffers this launch names ([`WireData::Kept`]) that the worker cannot
    /// use: not among the device copies it keeps (`kept(stamp, len)`), or named twice. A worker
    /// answers them with [`Response::NotKept`] before doing anything.
    pub fn stamps_not_kept(&self, kept: impl Fn(u64, u64) -> bool) -> Vec<u64> {
        self.buffers
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b.data {
                WireData::Kept { stamp, len } => {
                    let twice = self.buffers[..i]
                        .iter()
                        .any(|o| matches!(o.data, WireData::Kept { stamp: other, .. } if other == stamp));
                    (twice || !kept(stamp, len)).then_some(stamp)
                }
                _ => None,
            })
            .collect()
    }
}

impl WireBuffer {
    /// The buffer's size in bytes.
    pub fn len(&self) -> u64 {
        match &self.data {
            WireData::Inline(bytes) => bytes.len() as u64,
            WireData::Kept { len, .. } => *len,
            WireData::Shared(s) => s.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a launched buffer's bytes are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WireData {
    /// A small buffer: its bytes, in the message (and back in [`LaunchResult::buffers`]).
    Inline(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A small buffer the host has not changed since an earlier launch left its results on the
    /// device under `stamp` ([`WireBuffer::keep`]): nothing travels or goes up, and the results
    /// come back as an inline buffer's do. A worker that no longer holds that copy (a new worker,
    /// or one that let it go) answers [`Response::NotKept`], and the session sends the bytes.
    Kept { stamp: u64, len: u64 },
    /// A large buffer in shared memory.
    Shared(SharedBuffer),
}

/// A buffer in a shared region, and what to do with it around the launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedBuffer {
    /// The region holding the buffer's bytes (its descriptor was sent before this message).
    pub region: u64,
    pub len: u64,
    /// The stamp these bytes were last given (0: none) and whether they are still those bytes.
    /// When they are and the worker still holds a device copy under that stamp, nothing is
    /// uploaded; when they are not, a device copy under the old stamp is stale and let go.
    pub stamp: u64,
    pub fresh: bool,
    /// The buffer's contents are only on the device, under `stamp` (an earlier launch's results,
    /// not read back): the region holds older bytes and must not be uploaded. The worker keeps
    /// a copy of these bytes under `stamp` (the launch's "before") until `drop_after` or a read.
    #[serde(default)]
    pub device_only: bool,
    /// Keep the contents this launch starts from on the device, held under this stamp, as the
    /// launch's "before" (for contents only the device has, that copy is already held under
    /// `stamp`, and this is `stamp`). `None` for `:time`.
    #[serde(default)]
    pub snapshot: Option<u64>,
    /// After a successful launch: the stamp the buffer's new contents get, kept on the device
    /// until read ([`Request::Read`]). `None` for `:time`, whose launches are not written back.
    pub result: Option<u64>,
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
    /// Boxed: the other answers are small, and this one is the largest by far.
    Launched(Box<LaunchResult>),
    Ptx(String),
    /// A request failed with a CUDA error; `sticky` errors leave the context unusable.
    Failed {
        message: String,
        sticky: bool,
    },
    /// A launch stopped at a failing device-side `assert` (`CUDA_ERROR_ASSERT`): a trap, as the
    /// simulator reports it, not a failure of gridlab's. `printed` is what the device wrote
    /// (`file:line: kernel: block: [1,0,0], thread: [5,0,0] Assertion `x` failed.`). The
    /// context is gone, as after any sticky error: the worker exits once it has answered.
    Trapped {
        printed: String,
    },
    Info(KernelInfo),
    /// What a [`Request::Read`] brought back; `missing` are stamps the worker no longer held.
    Read {
        missing: Vec<u64>,
    },
    /// A launch named small buffers by stamps ([`WireData::Kept`]) that the worker does not
    /// hold: it did nothing but let go the regions the request released, and the session sends
    /// the launch again with their bytes.
    NotKept {
        stamps: Vec<u64>,
    },
}

/// A compiled kernel's resources (`cuFuncGetAttribute`) and its occupancy for one block size
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), for `:info`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub registers: i32,
    /// Static `__shared__` memory per block.
    pub shared_bytes: i32,
    /// Local memory per thread: local arrays and register spills.
    pub local_bytes: i32,
    /// The most threads a block of this kernel may have (registers can make it less than the
    /// device's limit).
    pub max_threads_per_block: i32,
    pub block_size: u32,
    /// Blocks of `block_size` threads resident on one SM at once; 0 when such a block cannot
    /// launch at all.
    pub active_blocks_per_sm: i32,
    /// The device's limit of resident threads per SM.
    pub max_threads_per_sm: i32,
}

impl KernelInfo {
    /// Warps resident on one SM at once.
    pub fn active_warps(&self) -> u32 {
        self.active_blocks_per_sm.max(0) as u32 * self.block_size.div_ceil(32)
    }

    /// The most warps an SM can hold.
    pub fn max_warps(&self) -> u32 {
        (self.max_threads_per_sm.max(0) as u32 / 32).max(1)
    }

    /// Active warps over the most an SM holds, from 0 to 1.
    pub fn occupancy(&self) -> f64 {
        self.active_warps() as f64 / self.max_warps() as f64
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchResult {
    /// Final contents of the inline buffers, in request order; empty for a shared buffer, whose
    /// results stay on the device.
    pub buffers: Vec<serde_bytes::ByteBuf>,
    /// Bytes copied from the host to the device for this request (buffers whose device copy
    /// was missing or stale).
    pub uploaded_bytes: u64,
    /// What the kernel printed, as the device wrote it.
    pub printf: String,
    pub guard_hits: Vec<GuardHit>,
    /// Kernel time of each launch, from CUDA events, in milliseconds.
    pub kernel_ms: Vec<f32>,
    /// Host time to issue each launch (the launch call alone), in microseconds.
    pub launch_us: Vec<f64>,
}

/// Write one framed message, length and body in one write: the reader wakes once, to a whole
/// message.
///
/// The frame is encoded into memory kept from the last message of this thread: a launch's
/// request and answer are about the same size each time, so the encoding allocates nothing and
/// never grows its buffer piece by piece.
pub fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> io::Result<()> {
    send_within(out, msg, usize::MAX).map(|_| ())
}

/// [`send`], only when the frame is at most `limit` bytes: its length, or `None` (nothing
/// written) when it is longer. The session keeps what it sends ahead of the worker's answers
/// under what the pipe holds, so that it never waits to write while the worker waits to answer.
pub fn send_within<T: Serialize>(out: &mut impl Write, msg: &T, limit: usize) -> io::Result<Option<usize>> {
    thread_local! {
        static FRAME: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut frame = FRAME.take();
    frame.clear();
    frame.extend_from_slice(&[0; 4]);
    let mut frame = postcard::to_extend(msg, frame).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let len =
        u32::try_from(frame.len() - 4).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "message over 4 GiB"))?;
    frame[..4].copy_from_slice(&len.to_le_bytes());
    let size = frame.len();
    let sent =
        if size > limit { Ok(None) } else { out.write_all(&frame).and_then(|()| out.flush()).map(|()| Some(size)) };
    // Kept for the next message, unless a large one (a compile's source, a module's PTX) grew it.
    if frame.capacity() <= KEPT_FRAME {
        FRAME.set(frame);
    }
    sent
}

/// The most memory [`send`] keeps between messages.
const KEPT_FRAME: usize = 1 << 20;

/// How long a worker that has answered asks its stdin for the next request before it sleeps.
pub const REQUEST_SPIN: Duration = Duration::from_millis(1);

/// What [`FrameReader::next`] found.
#[derive(Debug, PartialEq)]
pub enum Next<T> {
    Message(T),
    /// The other end closed the pipe between messages.
    Closed,
    /// No whole message yet when the wait ended.
    Waiting,
}

/// Reads framed messages from a pipe, spinning for a while before it sleeps.
///
/// A launch's round trip is a few tens of microseconds, and a process that sleeps in `read` or
/// `poll` takes about as long again to be woken (more in a virtual machine, whose idle vCPU the
/// host must wake): each side first asks the pipe again and again, without sleeping but yielding
/// the core to any thread ready to run, for [`FrameReader::next`]'s `spin`, and only then sleeps
/// in `poll`. The descriptor is made
/// non-blocking, so a wait always ends by its deadline (a worker that sent half a message and
/// hung is a timeout, not a hang), and no thread sits between the pipe and the caller.
pub struct FrameReader {
    file: std::fs::File,
    /// Bytes read and not yet taken are `buf[start..end]`; the rest is room for the next read,
    /// made once and kept (a wait asks the pipe many times, and each ask must cost no more than
    /// the system call). A read may bring several messages (a run of launches' answers): each is
    /// taken where it lies, and what is left moves to the front only when the room runs short.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// Room kept for reads: a small launch's whole answer.
const READ_ROOM: usize = 64 << 10;

impl FrameReader {
    /// Read from `fd`, which this puts in non-blocking mode (its own end of a pipe).
    pub fn new(fd: OwnedFd) -> io::Result<FrameReader> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(FrameReader { file: fd.into(), buf: vec![0; READ_ROOM], start: 0, end: 0 })
    }

    /// The next message, waiting until `until` (forever if `None`) for it to arrive whole, the
    /// first `spin` of that without sleeping. A message that does not decode, or a pipe closed
    /// in the middle of one, is an error: nothing after it can be trusted to start at a frame.
    pub fn next<T: for<'de> Deserialize<'de>>(
        &mut self,
        until: Option<Instant>,
        spin: Duration,
    ) -> io::Result<Next<T>> {
        let spin_until = Instant::now() + spin;
        loop {
            if let Some(msg) = self.take()? {
                return Ok(Next::Message(msg));
            }
            // Room for the rest of the message, or the usual room, whichever is more; the length
            // is not trusted up front (a corrupt one grows the buffer only as bytes arrive).
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let have = self.end;
            let want = match self.frame_len() {
                Some(len) => (4 + len).saturating_sub(have).clamp(READ_ROOM, 16 << 20),
                None => READ_ROOM,
            };
            if self.buf.len() < have + want {
                self.buf.resize(have + want, 0);
            }
            let read = (&self.file).read(&mut self.buf[have..have + want]);
            self.end += *read.as_ref().unwrap_or(&0);
            match read {
                Ok(0) if have == 0 => return Ok(Next::Closed),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the pipe closed in the middle of a message",
                    ));
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let now = Instant::now();
                    if until.is_some_and(|u| now >= u) {
                        return Ok(Next::Waiting);
                    }
                    if now < spin_until {
                        // Asking again at once, but letting any other thread that is ready to
                        // run have the core first: on a machine with fewer free cores than
                        // processes (two on a busy laptop) the other end may be waiting for it.
                        std::thread::yield_now();
                        continue;
                    }
                    // Woken by data, the other end closing, or the deadline (to the nanosecond);
                    // each is looked at again above, and so is a signal's `EINTR`.
                    let timeout = until.and_then(|u| Timespec::try_from(u.saturating_duration_since(now)).ok());
                    let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
                    match rustix::event::poll(&mut fds, timeout.as_ref()) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A worker's requests: its stdin (a duplicate of descriptor 0, made non-blocking).
    pub fn stdin() -> io::Result<FrameReader> {
        FrameReader::new(io::stdin().as_fd().try_clone_to_owned()?)
    }

    /// The next request, waited for as long as it takes; `None` when the session closed the
    /// pipe. The first [`REQUEST_SPIN`] without sleeping: in a run of launches the next one
    /// comes within it.
    pub fn request(&mut self) -> io::Result<Option<Request>> {
        loop {
            match self.next(None, REQUEST_SPIN)? {
                Next::Message(r) => return Ok(Some(r)),
                Next::Closed => return Ok(None),
                Next::Waiting => {}
            }
        }
    }

    /// The length the buffered frame announces, once its four bytes are in.
    fn frame_len(&self) -> Option<usize> {
        let len: [u8; 4] = self.buf.get(self.start..(self.start + 4).min(self.end))?.try_into().ok()?;
        Some(u32::from_le_bytes(len) as usize)
    }

    /// The first buffered message, if it is whole.
    fn take<T: for<'de> Deserialize<'de>>(&mut self) -> io::Result<Option<T>> {
        let Some(len) = self.frame_len() else { return Ok(None) };
        let body = self.start + 4;
        if self.end < body + len {
            return Ok(None);
        }
        let msg = postcard::from_bytes(&self.buf[body..body + len])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e));
        self.start = body + len;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
            // A large message grew the room: give it back once it is taken.
            if self.buf.len() > 16 * READ_ROOM {
                self.buf = vec![0; READ_ROOM];
            }
        }
        msg.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    /// A pipe: its reading end in a [`FrameReader`], its writing end.
    fn pipe() -> (FrameReader, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: `pipe` writes two new descriptors, each owned once below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) };
        (FrameReader::new(r).unwrap(), w)
    }

    /// Every message `wire` holds, read back through a pipe whose writer then closed.
    fn read_all<T: for<'de> Deserialize<'de>>(wire: &[u8]) -> io::Result<Vec<T>> {
        let (mut reader, mut w) = pipe();
        w.write_all(wire)?;
        drop(w);
        let mut out = Vec::new();
        loop {
            match reader.next::<T>(Some(Instant::now() + Duration::from_secs(5)), Duration::ZERO)? {
                Next::Message(m) => out.push(m),
                Next::Closed => return Ok(out),
                Next::Waiting => return Err(io::Error::other("no message in 5 s")),
            }
        }
    }

    #[test]
    fn messages_round_trip_through_frames() {
        let req = Request::Launch(LaunchRequest {
            kernel: "add_half".into(),
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            args: vec![
                WireArg::Buffer(0),
                WireArg::View { buffer: 0, byte_offset: 16 },
                WireArg::Scalar(1000i32.to_le_bytes().to_vec()),
            ],
            buffers: vec![
                WireBuffer { data: WireData::Inline(vec![0; 4000]), elem_size: 4, keep: Some(9) },
                WireBuffer { data: WireData::Kept { stamp: 8, len: 64 }, elem_size: 8, keep: None },
                WireBuffer {
                    data: WireData::Shared(SharedBuffer {
                        region: 7,
                        len: 1 << 20,
                        stamp: 3,
                        fresh: true,
                        device_only: false,
                        snapshot: Some(3),
                        result: Some(4),
                    }),
                    elem_size: 4,
                    keep: None,
                },
            ],
            repeat: 1,
            symbols: vec![("coef".into(), 0.5f32.to_le_bytes().to_vec())],
            released: vec![2],
            drop_after: vec![1],
        });
        let mut wire = Vec::new();
        send(&mut wire, &req).unwrap();
        send(&mut wire, &Request::Hello).unwrap();
        assert_eq!(read_all::<Request>(&wire).unwrap(), vec![req, Request::Hello]);
    }

    #[test]
    fn occupancy_is_active_warps_over_the_sms_warps() {
        let info = KernelInfo {
            registers: 32,
            shared_bytes: 0,
            local_bytes: 0,
            max_threads_per_block: 1024,
            block_size: 256,
            active_blocks_per_sm: 8,
            max_threads_per_sm: 2048,
        };
        assert_eq!((info.active_warps(), info.max_warps()), (64, 64));
        assert_eq!(info.occupancy(), 1.0);
        // A partial warp still takes a whole warp's slot.
        let odd = KernelInfo { block_size: 100, active_blocks_per_sm: 5, ..info.clone() };
        assert_eq!(odd.active_warps(), 20);
        assert!((odd.occupancy() - 20.0 / 64.0).abs() < 1e-12);
        let none = KernelInfo { active_blocks_per_sm: 0, ..info };
        assert_eq!(none.occupancy(), 0.0);
        let mut wire = Vec::new();
        send(&mut wire, &Response::Info(none.clone())).unwrap();
        assert_eq!(read_all::<Response>(&wire).unwrap(), vec![Response::Info(none)]);
    }

    #[test]
    fn a_corrupt_length_is_an_error_not_an_allocation() {
        assert!(read_all::<Request>(&[0xff, 0xff, 0xff, 0xff, 1, 2]).is_err());
    }

    #[test]
    fn a_wait_ends_at_its_deadline_and_a_message_in_pieces_is_read_whole() {
        let (mut reader, mut w) = pipe();
        let soon = || Some(Instant::now() + Duration::from_millis(20));
        assert_eq!(reader.next::<Request>(soon(), Duration::from_millis(1)).unwrap(), Next::Waiting);
        let mut wire = Vec::new();
        send(&mut wire, &Request::Info { kernel: "k".into(), block_size: 256 }).unwrap();
        // Half a message: still waiting, then the rest makes it whole.
        w.write_all(&wire[..3]).unwrap();
        assert_eq!(reader.next::<Request>(soon(), Duration::ZERO).unwrap(), Next::Waiting);
        w.write_all(&wire[3..]).unwrap();
        assert_eq!(
            reader.next::<Request>(soon(), Duration::ZERO).unwrap(),
            Next::Message(Request::Info { kernel: "k".into(), block_size: 256 })
        );
        // A pipe that closes in the middle of a message is an error, between messages the end.
        w.write_all(&wire[..5]).unwrap();
        drop(w);
        assert!(reader.next::<Request>(soon(), Duration::ZERO).is_err());
    }
}
