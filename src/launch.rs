//! What a launch is and what it gives back, in words every layer shares: the grid and block
//! ([`Dim3`]), a checked launch ([`LaunchSpec`]) and its arguments, the buffers it may touch, and
//! its [`LaunchReport`] (findings, printf output, the cost model's report, the traces `:map` and
//! `:why` draw). It sits below the backends, which produce these, and the views, which draw them.

use std::fmt;
use std::time::Duration;

use crate::buffer::Buffer;
use crate::finding::{Access, Finding, ThreadRef};

/// Grid or block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const ONE: Dim3 = Dim3 { x: 1, y: 1, z: 1 };

    pub fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// How many dimensions the size has: 3 with more than one along z, 2 along y, else 1 (what
    /// a finding's `ThreadRef::ranks` says of a launch's grid and block).
    pub fn rank(&self) -> u8 {
        if self.z > 1 {
            3
        } else if self.y > 1 {
            2
        } else {
            1
        }
    }

    pub fn linear(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }

    pub fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    pub fn as_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl fmt::Display for Dim3 {
    /// `1024`, `(16, 16)` or `(8, 8, 4)`: as few dimensions as say it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(f, "{}", self.x),
            (_, 1) => write!(f, "({}, {})", self.x, self.y),
            _ => write!(f, "({}, {}, {})", self.x, self.y, self.z),
        }
    }
}

/// A scalar kernel argument, already converted to the parameter's C type (range-checked by the
/// session against the kernel's signature).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarArg {
    Bool(bool),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl ScalarArg {
    /// The bytes a kernel parameter of this type holds (little-endian, its C size).
    pub fn to_le_bytes(self) -> Vec<u8> {
        match self {
            ScalarArg::Bool(b) => vec![b as u8],
            ScalarArg::I8(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U8(v) => v.to_le_bytes().to_vec(),
            ScalarArg::I16(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U16(v) => v.to_le_bytes().to_vec(),
            ScalarArg::I32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::I64(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U64(v) => v.to_le_bytes().to_vec(),
            ScalarArg::F32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::F64(v) => v.to_le_bytes().to_vec(),
        }
    }

    /// The value as the 64-bit pattern a register holds (floats as their IEEE bits, integers
    /// sign- or zero-extended).
    pub fn to_bits(self) -> u64 {
        match self {
            ScalarArg::Bool(b) => b as u64,
            ScalarArg::I8(v) => v as i64 as u64,
            ScalarArg::U8(v) => v as u64,
            ScalarArg::I16(v) => v as i64 as u64,
            ScalarArg::U16(v) => v as u64,
            ScalarArg::I32(v) => v as i64 as u64,
            ScalarArg::U32(v) => v as u64,
            ScalarArg::I64(v) => v as u64,
            ScalarArg::U64(v) => v,
            ScalarArg::F32(v) => v.to_bits() as u64,
            ScalarArg::F64(v) => v.to_bits(),
        }
    }
}

/// One argument of a launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// The buffer at this index of [`LaunchBuffers`].
    Buffer(usize),
    /// A pointer `offset` elements into the buffer at index `buffer` (`a + 4`, `a[4:]`, host
    /// code's `d_a + offset`): the kernel's accesses go to that buffer, and findings name it
    /// with its own indices. The session checks `offset <= len`, so the pointer is inside the
    /// buffer or just past its end; the kernel may reach before it too, as on a GPU.
    View {
        buffer: usize,
        offset: usize,
    },
    Scalar(ScalarArg),
    /// A struct by value (`float2 c`, `uchar4 colour`) whose members are all one type: the
    /// members in order.
    Struct(Vec<ScalarArg>),
    /// The null pointer (`NULL`, `nullptr`, `0`, or a parameter's `= NULL` default) for a
    /// pointer parameter: the kernel may test it; an access through it faults.
    Null,
}

impl Arg {
    /// The buffer this argument points into and the element offset, for either kind of pointer.
    /// How many values the argument is in the kernel's parameter list (a struct: one per member).
    pub fn width(&self) -> usize {
        match self {
            Arg::Struct(members) => members.len(),
            _ => 1,
        }
    }

    pub fn pointer(&self) -> Option<(usize, usize)> {
        match *self {
            Arg::Buffer(i) => Some((i, 0)),
            Arg::View { buffer, offset } => Some((buffer, offset)),
            Arg::Scalar(_) | Arg::Struct(_) | Arg::Null => None,
        }
    }
}

/// A launch the session has validated: the kernel exists, arguments match its parameters, and
/// the sizes are within CUDA's limits.
#[derive(Clone, Debug)]
pub struct LaunchSpec {
    pub kernel: String,
    pub grid: Dim3,
    pub block: Dim3,
    /// Dynamic shared memory in bytes (`extern __shared__` arrays).
    pub shared_bytes: u32,
    pub args: Vec<Arg>,
    /// `__constant__`/`__device__` variables the session set from statements (`coef = [...]`),
    /// written before the launch over their initial values, as `cudaMemcpyToSymbol` does.
    pub symbols: Vec<SymbolWrite>,
}

/// The first bytes of a module variable, set from the host: little-endian values of its element
/// type, no more than the variable holds (the session checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolWrite {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl LaunchSpec {
    /// Grid times block: up to about 2^73 within CUDA's limits, so a `u128`.
    pub fn total_threads(&self) -> u128 {
        u128::from(self.grid.count()) * u128::from(self.block.count())
    }
}

/// The buffers a launch may touch, with their session names (findings name them).
pub struct LaunchBuffers<'a> {
    pub names: Vec<String>,
    pub buffers: Vec<&'a mut Buffer>,
}

/// A line a kernel printed with `printf`, attributed to its thread where the backend knows it
/// (the simulator does; a GPU's printf does not say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintLine {
    pub thread: Option<ThreadRef>,
    pub text: String,
}

/// What a launch produced besides the new buffer contents.
#[derive(Clone, Debug, Default)]
pub struct LaunchReport {
    /// Wall time of the launch on this backend.
    pub elapsed: Duration,
    /// Simulated warp steps (the simulator's own measure of work); `None` on the GPU.
    pub steps: Option<u64>,
    /// Kernel time from CUDA events, in milliseconds; `None` on the simulator.
    pub kernel_ms: Option<f32>,
    pub findings: Vec<Finding>,
    pub output: Vec<PrintLine>,
    /// Set when printf output was cut short (too many lines).
    pub output_truncated: bool,
    /// The launch was stopped part-way (step limit, `__trap()`): the session puts the buffers
    /// back as they were before it, as the GPU backend does after restarting its worker.
    pub aborted: bool,
    /// Who wrote each element of each buffer, in [`LaunchBuffers`] order; only when the
    /// simulator was asked to trace writes (`SimConfig::trace_writes`, for `:map`).
    pub writes: Option<Vec<WriteTrace>>,
    /// The watched accesses, in the order they ran; only when the simulator was given a
    /// `SimConfig::watch` (for `:why`).
    pub watched: Option<Vec<WatchedAccess>>,
    /// What the launch would cost on the reference GPU, from the simulator's cost model.
    pub cost: Option<crate::cost::CostReport>,
    /// The launched buffers as they were before the launch, in [`LaunchBuffers`] order, when the
    /// backend kept them anyway (the GPU's swapped-out regions), so the session need not copy
    /// them first; `None` on the simulator.
    pub before: Option<Vec<crate::buffer::Buffer>>,
}

/// Who wrote one buffer during a launch. Threads are global linear ids:
/// `block_linear * threads_per_block + thread_linear`, with x fastest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteTrace {
    /// Per element, the last thread that wrote it, or [`WriteTrace::NOBODY`].
    pub last_writer: Vec<u32>,
    /// Per element, how many writes (plain or atomic) it took, saturating at 255.
    pub writes: Vec<u8>,
    /// Writes past either end (not performed): element index and thread, the first
    /// [`WriteTrace::MAX_OUT_OF_BOUNDS`] of them.
    pub out_of_bounds: Vec<(i64, u32)>,
    /// All out-of-bounds writes, including those not kept.
    pub out_of_bounds_total: u64,
}

impl WriteTrace {
    pub const NOBODY: u32 = u32::MAX;
    pub const MAX_OUT_OF_BOUNDS: usize = 4096;

    pub fn new(len: usize) -> WriteTrace {
        WriteTrace { last_writer: vec![WriteTrace::NOBODY; len], writes: vec![0; len], ..WriteTrace::default() }
    }
}

/// One access of a watched thread to the watched element (see `SimConfig::watch`).
#[derive(Clone, Debug, PartialEq)]
pub struct WatchedAccess {
    /// The launch's warp-step counter when it ran: later accesses have larger steps.
    pub step: u64,
    pub thread: ThreadRef,
    pub access: Access,
    pub memory: crate::finding::Memory,
    pub index: i64,
    /// The value read (for an atomic, the old value).
    pub read: Option<crate::buffer::Num>,
    /// The value written (stores and atomics).
    pub written: Option<crate::buffer::Num>,
    pub span: crate::diag::Span,
}

/// The global linear id of a thread: blocks and threads numbered with x fastest.
pub fn linear_thread(t: &ThreadRef, grid: Dim3, block: Dim3) -> u64 {
    let lin = |v: [u32; 3], d: Dim3| v[0] as u64 + d.x as u64 * (v[1] as u64 + d.y as u64 * v[2] as u64);
    lin(t.block, grid) * block.count() + lin(t.thread, block)
}

#[cfg(test)]
mod tests {
    use super::Dim3;

    #[test]
    fn a_size_has_as_many_dimensions_as_its_last_one_above_one() {
        assert_eq!(Dim3::new(256, 1, 1).rank(), 1);
        assert_eq!(Dim3::new(8, 8, 1).rank(), 2);
        assert_eq!(Dim3::new(1, 1, 2).rank(), 3);
    }
}
