//! Buffers: the arrays a session owns, as little-endian bytes plus a dtype and a display shape.
//!
//! The bytes are the single source of truth. The simulator reads and writes them in place with
//! the C type of the kernel parameter; the GPU backend copies them to and from the device. The
//! shape only matters for display (a `(rows, cols)` buffer prints as a matrix).
//!
//! Large buffers keep their bytes in shared memory (`shared.rs`) that the GPU worker maps too,
//! and carry a stamp: a version the GPU backend gives the bytes when the device holds the same,
//! forgotten by any change on the host, so an unchanged buffer is not uploaded again.

pub mod shared;

use std::fmt;
use std::ops::{Deref, DerefMut};

use self::shared::{SHARED_MIN_BYTES, SharedBytes};
use crate::dtype::DType;

/// How a buffer is shown: a flat array or a matrix. Kernels always see a flat array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    D1(usize),
    D2(usize, usize),
}

impl Shape {
    pub fn len(self) -> usize {
        match self {
            Shape::D1(n) => n,
            Shape::D2(r, c) => r.saturating_mul(c),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::D1(n) => write!(f, "{n}"),
            Shape::D2(r, c) => write!(f, "({r}, {c})"),
        }
    }
}

/// One element's value, wide enough for every dtype: `Int` holds all of `i64` and `u64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// Where a buffer's bytes live: the heap, or shared memory for large buffers.
enum Storage {
    Heap(Vec<u8>),
    Shared(SharedBytes),
}

impl Storage {
    /// `len` zero bytes: shared from [`SHARED_MIN_BYTES`] on, on the heap below that or when
    /// no memory file can be made (too many open files, say), which only costs speed.
    fn zeroed(len: usize) -> Storage {
        if len >= SHARED_MIN_BYTES
            && let Ok(s) = SharedBytes::zeroed(len)
        {
            return Storage::Shared(s);
        }
        Storage::Heap(vec![0; len])
    }
}

impl Deref for Storage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Shared(s) => s,
        }
    }
}

impl DerefMut for Storage {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Shared(s) => s,
        }
    }
}

impl Clone for Storage {
    fn clone(&self) -> Storage {
        match self {
            // Copied as it is read, not zeroed first: a small buffer is cloned on every launch
            // (its "before").
            Storage::Heap(v) if v.len() < SHARED_MIN_BYTES => Storage::Heap(v.clone()),
            _ => {
                let mut copy = Storage::zeroed(self.len());
                copy.copy_from_slice(self);
                copy
            }
        }
    }
}

/// A named array's contents. Names live in the session, not here.
#[derive(Clone)]
pub struct Buffer {
    dtype: DType,
    shape: Shape,
    bytes: Storage,
    /// For a buffer made with `empty`: a flag per element that nothing has written yet
    /// (`None` once every element is written, and for every other buffer).
    unset: Option<Vec<bool>>,
    /// The last stamp given by [`Buffer::set_stamp`] (0: none), and whether the bytes changed
    /// since. A copy keeps both: its bytes are the same.
    stamp: u64,
    changed: bool,
    /// The contents are the device copy with this stamp, held by the GPU worker, and not in
    /// `bytes` yet: a GPU launch leaves its results on the device until the host needs them
    /// (the session reads them back before anything but another launch), so a run of launches
    /// over a large buffer costs no copy to the host per launch. The bytes are older: what the
    /// buffer held before those launches, kept to redo them after a fault (a launch's "before"
    /// has none until it is read).
    on_device: Option<u64>,
}

impl PartialEq for Buffer {
    /// The same elements, shape and unwritten flags; where the bytes live and their stamp do not
    /// matter.
    fn eq(&self, other: &Buffer) -> bool {
        self.dtype == other.dtype
            && self.shape == other.shape
            && *self.bytes == *other.bytes
            && self.unset == other.unset
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({} x {})", self.dtype, self.shape)
    }
}

impl Buffer {
    /// A zero-filled buffer. The caller checks the allocation limit first (see `Session`).
    pub fn zeros(dtype: DType, shape: Shape) -> Buffer {
        Buffer {
            dtype,
            shape,
            bytes: Storage::zeroed(shape.len() * dtype.size()),
            unset: None,
            stamp: 0,
            changed: true,
            on_device: None,
        }
    }

    /// A launch's "before", kept on the device under `stamp`: no bytes until
    /// [`Buffer::fill_deferred`] gives them.
    pub fn deferred_before(of: &Buffer, stamp: u64) -> Buffer {
        Buffer {
            dtype: of.dtype,
            shape: of.shape,
            bytes: Storage::Heap(Vec::new()),
            unset: of.unset.clone(),
            stamp: 0,
            changed: true,
            on_device: Some(stamp),
        }
    }

    /// The stamp of the device copy that holds the contents, while the bytes do not.
    pub fn on_device(&self) -> Option<u64> {
        self.on_device
    }

    /// The contents are now the device copy stamped `stamp` (a launch's results, not read back).
    pub fn defer_to_device(&mut self, stamp: u64) {
        self.on_device = Some(stamp);
    }

    /// Forget the deferred contents: the bytes are the contents again (when a worker died with
    /// the results and they could not be made again).
    pub fn drop_deferred(&mut self) {
        self.on_device = None;
        self.changed = true;
    }

    /// Give a deferred "before" its bytes (read back from the device).
    pub fn fill_deferred(&mut self, bytes: SharedBytes) {
        let mut bytes = bytes;
        bytes.recycle_when_dropped();
        self.bytes = Storage::Shared(bytes);
        self.on_device = None;
        self.changed = true;
    }

    /// The deferred contents were copied into the bytes, which are now those stamped `stamp`.
    pub fn settled(&mut self, stamp: u64) {
        self.on_device = None;
        self.set_stamp(stamp);
    }

    /// A buffer with no values yet, like memory from `cudaMalloc`: every element is unwritten
    /// until something writes it (the bytes are zero, but a read of one is reported).
    pub fn empty(dtype: DType, shape: Shape) -> Buffer {
        let unset = (!shape.is_empty()).then(|| vec![true; shape.len()]);
        Buffer { unset, ..Buffer::zeros(dtype, shape) }
    }

    /// Whether element `i` has never been written (only in a buffer made with `empty`).
    pub fn is_unset(&self, i: usize) -> bool {
        self.unset.as_ref().is_some_and(|u| u.get(i).copied().unwrap_or(false))
    }

    /// The flags of [`Buffer::empty`]'s elements nothing wrote yet; `None` when all are written.
    pub fn unset(&self) -> Option<&[bool]> {
        self.unset.as_deref()
    }

    /// How many elements have never been written.
    pub fn unset_count(&self) -> usize {
        self.unset.as_ref().map_or(0, |u| u.iter().filter(|x| **x).count())
    }

    /// Mark the elements whose flag in `written` is set as written (a launch reports these).
    pub fn mark_written(&mut self, written: impl Fn(usize) -> bool) {
        if let Some(u) = &mut self.unset {
            for (i, x) in u.iter_mut().enumerate() {
                if *x && written(i) {
                    *x = false;
                }
            }
            if !u.contains(&true) {
                self.unset = None;
            }
        }
    }

    /// Every element counts as written (after a launch that cannot tell which it wrote).
    pub fn mark_all_written(&mut self) {
        self.unset = None;
    }

    #[inline]
    fn written(&mut self, i: usize) {
        if let Some(u) = &mut self.unset
            && let Some(x) = u.get_mut(i)
        {
            *x = false;
        }
    }

    /// Build from values, converting each to `dtype` the way a C cast would (floats truncate
    /// towards zero into integers; integers wrap into narrower unsigned types).
    pub fn from_nums(dtype: DType, shape: Shape, values: impl IntoIterator<Item = Num>) -> Buffer {
        let mut b = Buffer::zeros(dtype, shape);
        for (i, v) in values.into_iter().enumerate().take(shape.len()) {
            b.set(i, v);
        }
        b
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Keep the elements, show them with another shape of the same length.
    pub fn reshape(&mut self, shape: Shape) -> bool {
        if shape.len() != self.len() {
            return false;
        }
        self.shape = shape;
        true
    }

    pub fn len(&self) -> usize {
        self.shape.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn size_bytes(&self) -> usize {
        self.shape.len() * self.dtype.size()
    }

    pub fn bytes(&self) -> &[u8] {
        debug_assert!(self.on_device.is_none(), "the session reads deferred results back before it reads a buffer");
        &self.bytes
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        debug_assert!(self.on_device.is_none(), "the session reads deferred results back before it changes a buffer");
        self.changed = true;
        &mut self.bytes
    }

    /// The shared memory holding the bytes, for a large buffer.
    pub fn shared(&self) -> Option<&SharedBytes> {
        match &self.bytes {
            Storage::Shared(s) => Some(s),
            Storage::Heap(_) => None,
        }
    }

    /// Put `bytes` (of the same size) in place of this buffer's bytes, and return the buffer as
    /// it was, with its old bytes: how the GPU backend takes a launch's results without copying
    /// them, keeping the old bytes as the launch's "before". Old shared bytes go to the spare
    /// regions once that is dropped, for a later launch's results.
    pub fn replace_shared(&mut self, bytes: SharedBytes) -> Buffer {
        assert_eq!(bytes.len(), self.bytes.len(), "the same size");
        let mut old = std::mem::replace(&mut self.bytes, Storage::Shared(bytes));
        if let Storage::Shared(s) = &mut old {
            s.recycle_when_dropped();
        }
        let before = Buffer { bytes: old, unset: self.unset.clone(), on_device: None, ..*self };
        self.changed = true;
        self.on_device = None;
        before
    }

    /// Put `bytes` (of the same size) in place of this buffer's bytes, and return the buffer as
    /// it was: how the GPU backend takes a small launch's results as its answer brought them,
    /// the old bytes moved, not copied, into the launch's "before". A buffer whose bytes live in
    /// shared memory keeps its region and has the results copied in.
    pub fn replace_bytes(&mut self, bytes: Vec<u8>) -> Buffer {
        debug_assert_eq!(bytes.len(), self.bytes.len(), "the same size");
        debug_assert!(self.on_device.is_none(), "a small buffer's results are never left on the device");
        let Storage::Heap(v) = &mut self.bytes else {
            let before = self.clone();
            self.bytes_mut().copy_from_slice(&bytes);
            return before;
        };
        let old = std::mem::replace(v, bytes);
        let before = Buffer { bytes: Storage::Heap(old), unset: self.unset.clone(), on_device: None, ..*self };
        self.changed = true;
        before
    }

    /// The stamp the bytes were given by [`Buffer::set_stamp`], while they have not changed.
    pub fn stamp(&self) -> Option<u64> {
        (!self.changed && self.stamp != 0).then_some(self.stamp)
    }

    /// The last stamp given, changed since or not (0: never stamped).
    pub fn last_stamp(&self) -> u64 {
        self.stamp
    }

    /// Name the current bytes `stamp` (not 0): [`Buffer::stamp`] says it until they change.
    pub fn set_stamp(&mut self, stamp: u64) {
        self.stamp = stamp;
        self.changed = false;
    }

    /// Element `i`. Panics when out of range: callers index with checked positions.
    pub fn get(&self, i: usize) -> Num {
        let s = self.dtype.size();
        let b = &self.bytes[i * s..i * s + s];
        match self.dtype {
            DType::F32 => Num::Float(f32::from_le_bytes(b.try_into().unwrap()) as f64),
            DType::F64 => Num::Float(f64::from_le_bytes(b.try_into().unwrap())),
            DType::I32 => Num::Int(i32::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::U32 => Num::Int(u32::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::I64 => Num::Int(i64::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::U64 => Num::Int(u64::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::Bool => Num::Int((b[0] != 0) as i128),
            DType::I8 => Num::Int(b[0] as i8 as i128),
            DType::U8 => Num::Int(b[0] as i128),
            DType::I16 => Num::Int(i16::from_le_bytes(b.try_into().unwrap()) as i128),
            DType::U16 => Num::Int(u16::from_le_bytes(b.try_into().unwrap()) as i128),
        }
    }

    /// Store `v` at `i`, converted like a C cast to the element type.
    pub fn set(&mut self, i: usize, v: Num) {
        self.written(i);
        self.changed = true;
        let s = self.dtype.size();
        let dst = &mut self.bytes[i * s..i * s + s];
        let as_int = |v: Num| -> i128 {
            match v {
                Num::Int(i) => i,
                // `as` saturates and maps NaN to 0: a defined answer where C has none.
                Num::Float(f) => f.trunc() as i128,
            }
        };
        match self.dtype {
            DType::F32 => dst.copy_from_slice(&(v.as_f64() as f32).to_le_bytes()),
            DType::F64 => dst.copy_from_slice(&v.as_f64().to_le_bytes()),
            DType::I32 => dst.copy_from_slice(&(as_int(v) as i32).to_le_bytes()),
            DType::U32 => dst.copy_from_slice(&(as_int(v) as u32).to_le_bytes()),
            DType::I64 => dst.copy_from_slice(&(as_int(v) as i64).to_le_bytes()),
            DType::U64 => dst.copy_from_slice(&(as_int(v) as u64).to_le_bytes()),
            // C's conversion to bool: any nonzero value (NaN too) is true.
            DType::Bool => dst[0] = (v.as_f64() != 0.0) as u8,
            DType::I8 | DType::U8 => dst[0] = as_int(v) as u8,
            DType::I16 | DType::U16 => dst.copy_from_slice(&(as_int(v) as u16).to_le_bytes()),
        }
    }

    /// Set every element to `v` (converted as [`Buffer::set`] does).
    pub fn fill(&mut self, v: Num) {
        if self.is_empty() {
            return;
        }
        self.unset = None;
        self.set(0, v);
        // Copy what is filled so far after itself, doubling it each time.
        let mut filled = self.dtype.size();
        while filled < self.bytes.len() {
            let n = filled.min(self.bytes.len() - filled);
            self.bytes.copy_within(0..n, filled);
            filled += n;
        }
    }

    /// [`Buffer::set`] of a float, without going through [`Num`] (for loops over many elements).
    #[inline]
    pub fn set_f64(&mut self, i: usize, x: f64) {
        self.written(i);
        self.changed = true;
        match self.dtype {
            DType::F32 => self.bytes[i * 4..i * 4 + 4].copy_from_slice(&(x as f32).to_le_bytes()),
            DType::F64 => self.bytes[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes()),
            DType::Bool => self.bytes[i] = (x != 0.0) as u8,
            _ => self.set_int(i, x.trunc() as i128),
        }
    }

    /// [`Buffer::set`] of an integer, without going through [`Num`] (wrapping like a C cast).
    #[inline]
    pub fn set_int(&mut self, i: usize, x: i128) {
        self.written(i);
        self.changed = true;
        match self.dtype {
            DType::I32 | DType::U32 => self.bytes[i * 4..i * 4 + 4].copy_from_slice(&(x as u32).to_le_bytes()),
            DType::I64 | DType::U64 => self.bytes[i * 8..i * 8 + 8].copy_from_slice(&(x as u64).to_le_bytes()),
            DType::I16 | DType::U16 => self.bytes[i * 2..i * 2 + 2].copy_from_slice(&(x as u16).to_le_bytes()),
            DType::I8 | DType::U8 => self.bytes[i] = x as u8,
            DType::Bool => self.bytes[i] = (x != 0) as u8,
            DType::F32 | DType::F64 => self.set_f64(i, x as f64),
        }
    }

    /// All elements as `f64` (exact for every dtype but 64-bit integers beyond 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get(i).as_f64()).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = Num> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_bytes_with_c_conversions() {
        let b = Buffer::from_nums(DType::I32, Shape::D1(3), [Num::Float(2.9), Num::Float(-2.9), Num::Int(1 << 33)]);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![Num::Int(2), Num::Int(-2), Num::Int(0)]);
        let f = Buffer::from_nums(DType::F32, Shape::D2(1, 2), [Num::Float(0.1), Num::Int(3)]);
        assert_eq!(f.get(0), Num::Float(0.1f32 as f64));
        assert_eq!(f.get(1), Num::Float(3.0));
        assert_eq!(f.size_bytes(), 8);
    }

    #[test]
    fn an_empty_buffer_counts_its_unwritten_elements() {
        let mut b = Buffer::empty(DType::I32, Shape::D1(4));
        assert_eq!(b.unset_count(), 4);
        b.set(1, Num::Int(5));
        b.set_f64(2, 1.0);
        assert!(b.is_unset(0) && !b.is_unset(1) && !b.is_unset(2) && b.is_unset(3));
        b.mark_written(|i| i == 0);
        assert_eq!(b.unset_count(), 1);
        b.mark_written(|i| i == 3);
        assert!(b.unset().is_none());
        let mut b = Buffer::empty(DType::F32, Shape::D1(3));
        b.fill(Num::Int(0));
        assert_eq!(b.unset_count(), 0);
    }

    #[test]
    fn large_buffers_live_in_shared_memory_and_compare_by_their_elements() {
        let mut big = Buffer::zeros(DType::F32, Shape::D1(SHARED_MIN_BYTES / 4));
        let small = Buffer::zeros(DType::F32, Shape::D1(16));
        assert!(big.shared().is_some() && small.shared().is_none());
        big.set(3, Num::Float(1.5));
        let copy = big.clone();
        assert!(copy.shared().is_some());
        assert_ne!(copy.shared().map(|s| s.id()), big.shared().map(|s| s.id()));
        assert_eq!(copy, big);
        assert_eq!(copy.get(3), Num::Float(1.5));
    }

    #[test]
    fn a_stamp_holds_until_the_bytes_change() {
        let mut b = Buffer::zeros(DType::I32, Shape::D1(4));
        assert_eq!(b.stamp(), None);
        b.set_stamp(9);
        assert_eq!(b.stamp(), Some(9));
        assert_eq!(b.clone().stamp(), Some(9), "a copy has the same bytes");
        b.mark_all_written();
        assert_eq!(b.stamp(), Some(9), "flags are not bytes");
        b.set(0, Num::Int(1));
        assert_eq!((b.stamp(), b.last_stamp()), (None, 9));
        let changes: [fn(&mut Buffer); 4] =
            [|b| b.fill(Num::Int(2)), |b| b.set_f64(1, 2.0), |b| b.set_int(1, 2), |b| b.bytes_mut()[0] = 1];
        for change in changes {
            b.set_stamp(10);
            change(&mut b);
            assert_eq!(b.stamp(), None);
        }
    }

    #[test]
    fn replacing_shared_bytes_returns_the_buffer_as_it_was() {
        let mut b = Buffer::zeros(DType::U8, Shape::D1(SHARED_MIN_BYTES));
        b.set(0, Num::Int(5));
        b.set_stamp(3);
        let mut fresh = SharedBytes::zeroed(SHARED_MIN_BYTES).unwrap();
        fresh[0] = 6;
        let id = fresh.id();
        let before = b.replace_shared(fresh);
        assert_eq!((before.get(0), b.get(0)), (Num::Int(5), Num::Int(6)));
        assert_eq!(b.shared().map(|s| s.id()), Some(id));
        assert_eq!((before.stamp(), b.stamp()), (Some(3), None));
        // The old bytes wait among the spare regions once the "before" is dropped.
        let old = before.shared().map(|s| s.liveness()).unwrap();
        drop(before);
        assert!(old.upgrade().is_some());
    }

    #[test]
    fn replacing_heap_bytes_moves_the_old_ones_into_the_buffer_as_it_was() {
        let mut b = Buffer::empty(DType::U8, Shape::D1(4));
        b.set(0, Num::Int(5));
        b.set_stamp(3);
        let before = b.replace_bytes(vec![6, 7, 8, 9]);
        assert_eq!((before.get(0), b.get(0), b.get(3)), (Num::Int(5), Num::Int(6), Num::Int(9)));
        assert_eq!((before.stamp(), b.stamp()), (Some(3), None), "new bytes, no stamp yet");
        assert_eq!(before.unset_count(), 3, "the old flags go with the old bytes");
    }
}
