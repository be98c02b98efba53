//! Shared memory for large buffers: a buffer of [`SHARED_MIN_BYTES`] or more keeps its bytes in
//! an anonymous memory file (`memfd_create`) mapped into this process, so the GPU worker can map
//! the same pages (its descriptor travels once, over a Unix socket) and the driver can copy
//! between them and the device directly. Nothing is encoded or sent through a pipe.
//!
//! Each region has a process-wide id, by which the session and the worker name it, and a
//! liveness token: whoever was given the region (the GPU backend) holds a weak reference and sees
//! when the region is gone, to tell the worker to let its mapping go.
//!
//! The GPU backend writes a launch's results into a scratch region ([`SharedBytes::scratch`]) and
//! swaps it into the buffer, so the buffer's own bytes are never written by another process while
//! the session could read them; the region that was swapped out becomes the launch's "before"
//! copy, and once that is dropped it waits in a small pool of spare regions for the next launch,
//! keeping its id, so the worker need not map and pin it again.

use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use memmap2::{Advice, MmapMut};
use rustix::fs::{MemfdFlags, ftruncate, memfd_create};

/// Buffers of at least this many bytes live in shared memory; smaller ones are plain heap
/// memory (and travel to the worker inline, which costs less than a mapping for them).
pub const SHARED_MIN_BYTES: usize = 1 << 20;

/// Spare regions kept for reuse, at most this many ...
const SPARE_MAX: usize = 8;
/// ... and at most this many bytes together.
const SPARE_MAX_BYTES: usize = 2 << 30;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static SPARE: Mutex<Vec<Region>> = Mutex::new(Vec::new());

struct Region {
    id: u64,
    file: File,
    map: MmapMut,
    /// The pool takes this region back when its owner drops it.
    recycle: bool,
    alive: Arc<()>,
}

/// A byte region in shared memory, owned like a `Vec<u8>` (see the module doc).
pub struct SharedBytes {
    region: Option<Region>,
}

impl SharedBytes {
    /// `len` zero bytes in a new region.
    pub fn zeroed(len: usize) -> io::Result<SharedBytes> {
        Ok(SharedBytes { region: Some(Region::new(len, false)?) })
    }

    /// `len` bytes of unspecified contents, for a launch's results: a spare region of that size
    /// if there is one, else a new one. Dropped, it goes back to the spare regions.
    pub fn scratch(len: usize) -> io::Result<SharedBytes> {
        let spare = {
            let mut pool = SPARE.lock().unwrap_or_else(|e| e.into_inner());
            pool.iter().position(|r| r.map.len() == len).map(|i| pool.remove(i))
        };
        let region = match spare {
            Some(r) => r,
            None => Region::new(len, true)?,
        };
        Ok(SharedBytes { region: Some(region) })
    }

    fn region(&self) -> &Region {
        self.region.as_ref().expect("a region until dropped")
    }

    /// The id by which the session and the worker name this region.
    pub fn id(&self) -> u64 {
        self.region().id
    }

    /// The memory file, to hand to the worker.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.region().file.as_fd()
    }

    /// Goes dead when the region is freed (not when it waits in the spare pool).
    pub fn liveness(&self) -> Weak<()> {
        Arc::downgrade(&self.region().alive)
    }

    /// Send this region to the spare pool when it is dropped, as a scratch region goes: for a
    /// buffer's old bytes, swapped out by a launch, which the worker has mapped already.
    pub fn recycle_when_dropped(&mut self) {
        if let Some(r) = &mut self.region {
            r.recycle = true;
        }
    }

    /// Give every page of the region its memory now, on several threads, without changing the
    /// bytes (`MADV_POPULATE_WRITE`). A fresh region's pages are otherwise made one fault at a
    /// time by whoever touches them first: here, the worker pinning the region for the driver,
    /// which took 85 ms for 256 MiB on one thread (H100 machine, docs/gpu.md). A kernel without
    /// `MADV_POPULATE_WRITE` (before Linux 5.14) leaves the pages to be made later.
    pub fn populate(&self) {
        /// Chunks start on 2 MiB boundaries, a multiple of every page size Linux uses.
        const ALIGN: usize = 2 << 20;
        let map = &self.region().map;
        let len = map.len();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8).min(len.div_ceil(ALIGN));
        let chunk = len.div_ceil(threads.max(1)).next_multiple_of(ALIGN);
        std::thread::scope(|s| {
            for offset in (0..len).step_by(chunk) {
                let n = chunk.min(len - offset);
                s.spawn(move || {
                    let _ = map.advise_range(Advice::PopulateWrite, offset, n);
                });
            }
        });
    }
}

impl Region {
    fn new(len: usize, recycle: bool) -> io::Result<Region> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a shared region cannot be empty"));
        }
        let fd = memfd_create("gridlab-buffer", MemfdFlags::CLOEXEC)?;
        ftruncate(&fd, len as u64)?;
        let file = File::from(fd);
        // SAFETY: the file is a memfd of this process, of `len` bytes, never truncated again.
        // Only gridlab's own worker maps it too, and it writes only into scratch regions that no
        // buffer holds while it works (the module doc), so no reference here sees bytes change.
        let map = unsafe { MmapMut::map_mut(&file)? };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(Region { id, file, map, recycle, alive: Arc::new(()) })
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.region().map
    }
}

impl DerefMut for SharedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.region.as_mut().expect("a region until dropped").map
    }
}

impl Drop for SharedBytes {
    fn drop(&mut self) {
        let Some(region) = self.region.take() else { return };
        if !region.recycle {
            return;
        }
        let mut pool = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        pool.push(region);
        // The oldest spares go first; freeing one ends its liveness, and the worker is told.
        while pool.len() > SPARE_MAX || pool.iter().map(|r| r.map.len()).sum::<usize>() > SPARE_MAX_BYTES {
            pool.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_zeroed_writable_and_named_by_a_unique_id() {
        let mut a = SharedBytes::zeroed(4096).unwrap();
        let b = SharedBytes::zeroed(4096).unwrap();
        assert_ne!(a.id(), b.id());
        assert!(a.iter().all(|&x| x == 0));
        a[4095] = 7;
        assert_eq!(a[4095], 7);
        assert_eq!(a.len(), 4096);
        assert!(SharedBytes::zeroed(0).is_err());
    }

    #[test]
    fn the_same_memory_is_seen_through_the_descriptor() {
        use std::io::{Read, Seek, SeekFrom};
        let mut a = SharedBytes::zeroed(8192).unwrap();
        a[100] = 42;
        // What another process mapping the descriptor sees (here: reading it as a file).
        let mut f = File::from(a.fd().try_clone_to_owned().unwrap());
        f.seek(SeekFrom::Start(100)).unwrap();
        let mut byte = [0u8];
        f.read_exact(&mut byte).unwrap();
        assert_eq!(byte[0], 42);
    }

    #[test]
    fn populating_a_region_keeps_its_bytes() {
        let mut a = SharedBytes::zeroed(5 << 20).unwrap();
        a[3 << 20] = 9;
        a.populate();
        assert_eq!((a[0], a[3 << 20], a[(5 << 20) - 1]), (0, 9, 0));
    }

    #[test]
    fn a_scratch_region_goes_back_to_the_pool_with_its_id_and_comes_out_again() {
        // A size no other test asks for, so a parallel test cannot take the spare.
        let len = 3 * 4096 + 17;
        let s = SharedBytes::scratch(len).unwrap();
        let (id, alive) = (s.id(), s.liveness());
        drop(s);
        assert!(alive.upgrade().is_some(), "a spare region stays alive");
        let again = SharedBytes::scratch(len).unwrap();
        assert_eq!(again.id(), id);
        // A zeroed region is freed when dropped: its liveness ends.
        let z = SharedBytes::zeroed(len).unwrap();
        let gone = z.liveness();
        drop(z);
        assert!(gone.upgrade().is_none());
    }
}
