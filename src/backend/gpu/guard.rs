//! Guard regions: every buffer is allocated with a stretch of known bytes before and after it.
//! After a launch, any changed guard byte is a write outside the buffer, reported as the
//! simulator reports one ("24 elements written past the end of `a`, indices 1000..1023"), and
//! the guards are filled again. A small overrun does not fault on a GPU; this is how gridlab
//! shows it anyway.

use super::protocol::GuardHit;

/// Bytes of guard on each side. Large enough for the usual off-by-a-block overrun.
pub const GUARD_BYTES: usize = 64 * 1024;

/// The fill pattern: a byte unlikely to be written as part of a real value (0xA5A5A5A5 is
/// about -2.9e-16 as a float, and an odd large integer).
pub const PATTERN: u8 = 0xA5;

/// Guards one launch of the check kernel looks at (its parameter holds their addresses).
pub const GUARDS_PER_CHECK: usize = 64;

/// The check kernel's name in [`check_source`].
pub const CHECK_KERNEL: &str = "gridlab_check_guards";

/// What a flag holds before the check kernel writes 0 (untouched) or 1 (changed).
pub const UNCHECKED: u32 = u32::MAX;

/// Threads in a block of the check kernel.
pub const CHECK_THREADS: u32 = 512;

/// Inline buffers' results one launch of the check kernel copies into host memory.
pub const COPIES_PER_CHECK: usize = GUARDS_PER_CHECK / 2;

/// Bytes one block of the check kernel copies per pass (16 bytes a thread).
pub const COPY_BYTES_PER_BLOCK: usize = CHECK_THREADS as usize * 16;

/// Blocks of the check kernel that copy results: enough for `bytes` in one pass, at most 64
/// (more bytes take more passes), none where there is nothing to copy.
pub fn copy_blocks(bytes: usize) -> u32 {
    bytes.div_ceil(COPY_BYTES_PER_BLOCK).min(64) as u32
}

/// The check kernel's `Copies` parameter for `copies` (source, destination and length of each,
/// at most [`COPIES_PER_CHECK`]): every source, then every destination, then every length; with
/// the number of copies and their bytes.
pub fn copy_table(copies: &[(u64, u64, u64)]) -> ([u64; 3 * COPIES_PER_CHECK], u32, usize) {
    let mut table = [0u64; 3 * COPIES_PER_CHECK];
    let copies = &copies[..copies.len().min(COPIES_PER_CHECK)];
    for (k, &(from, to, len)) in copies.iter().enumerate() {
        (table[k], table[COPIES_PER_CHECK + k], table[2 * COPIES_PER_CHECK + k]) = (from, to, len);
    }
    (table, copies.len() as u32, copies.iter().map(|c| c.2 as usize).sum())
}

/// The check kernel: one block per guard region, each thread folding the differences from the
/// pattern of a fixed stride of words (eight bytes at a time where the guard's address allows, as
/// after a buffer whose length is a multiple of 8), its loads unrolled so that they are all in
/// flight at once rather than one memory latency after another; the block agrees with
/// `__syncthreads_or`, and one thread writes the guard's flag. A guard found changed is copied
/// into `dumps` (room for every guard, in host memory the device writes), where the host reads it
/// to name the elements written, and filled with the pattern again, so that after the check every
/// guard is ready for the next launch, which need not wait for the host to fill it (a launch is
/// queued behind another before the host has seen the one ahead's flags). The blocks after those copy the
/// small (inline) buffers' results into the pinned staging memory, which the device writes
/// directly: the kernel then stands for the launch's copies back as well, so a small launch
/// queues one operation after the learner's kernel rather than one per buffer, and the stream
/// never waits for the copy engine.
pub fn check_source() -> String {
    let p = PATTERN as u64;
    let (p8, p4) = (p * 0x0101_0101_0101_0101, p * 0x0101_0101);
    let t = CHECK_THREADS;
    format!(
        r#"struct Guards {{ const unsigned char *at[{GUARDS_PER_CHECK}]; }};

template <typename W>
__device__ unsigned long long differs(const unsigned char *p, W pattern) {{
    const W *w = (const W *)p;
    W diff = 0;
#pragma unroll
    for (unsigned int k = 0; k < {GUARD_BYTES} / sizeof(W) / {t}; k++) diff |= w[k * {t} + threadIdx.x] ^ pattern;
    return diff;
}}

// A changed guard: its bytes into `dump`, then the pattern again, each thread the words it read.
template <typename W>
__device__ void dump_and_fill(unsigned char *p, unsigned char *dump, W pattern) {{
    W *w = (W *)p;
    W *d = (W *)dump;
    for (unsigned int k = 0; k < {GUARD_BYTES} / sizeof(W) / {t}; k++) {{
        const unsigned int i = k * {t} + threadIdx.x;
        d[i] = w[i];
        w[i] = pattern;
    }}
}}

struct Copies {{ const unsigned char *from[{COPIES_PER_CHECK}]; unsigned char *to[{COPIES_PER_CHECK}]; unsigned long long len[{COPIES_PER_CHECK}]; }};

__device__ void copy_results(const Copies &copies, unsigned int n, unsigned int block, unsigned int blocks) {{
    const unsigned long long stride = (unsigned long long)blocks * {t};
    const unsigned long long first = (unsigned long long)block * {t} + threadIdx.x;
    for (unsigned int c = 0; c < n; c++) {{
        const unsigned char *from = copies.from[c];
        unsigned char *to = copies.to[c];
        const unsigned long long len = copies.len[c];
        if ((((unsigned long long)from | (unsigned long long)to) & 15) == 0) {{
            const unsigned long long words = len / 16;
            for (unsigned long long k = first; k < words; k += stride) ((uint4 *)to)[k] = ((const uint4 *)from)[k];
            for (unsigned long long k = words * 16 + first; k < len; k += stride) to[k] = from[k];
        }} else {{
            for (unsigned long long k = first; k < len; k += stride) to[k] = from[k];
        }}
    }}
}}

extern "C" __global__ void __launch_bounds__({t}) {CHECK_KERNEL}(Guards guards, unsigned int count, volatile unsigned int *flags, Copies copies, unsigned int ncopies, unsigned char *dumps) {{
    const unsigned int g = blockIdx.x;
    if (g >= count) {{
        copy_results(copies, ncopies, g - count, gridDim.x - count);
        return;
    }}
    unsigned char *p = (unsigned char *)guards.at[g];
    const unsigned long long address = (unsigned long long)p;
    unsigned long long diff;
    if ((address & 7) == 0) diff = differs<unsigned long long>(p, {p8:#x}ull);
    else if ((address & 3) == 0) diff = differs<unsigned int>(p, {p4:#x}u);
    else diff = differs<unsigned char>(p, (unsigned char){p:#x}u);
    const int changed = __syncthreads_or(diff != 0);
    if (changed) {{
        unsigned char *dump = dumps + (unsigned long long)g * {GUARD_BYTES};
        if ((address & 7) == 0) dump_and_fill<unsigned long long>(p, dump, {p8:#x}ull);
        else if ((address & 3) == 0) dump_and_fill<unsigned int>(p, dump, {p4:#x}u);
        else dump_and_fill<unsigned char>(p, dump, (unsigned char){p:#x}u);
        __threadfence_system();
        __syncthreads();
    }}
    if (threadIdx.x == 0) flags[g] = changed ? 1u : 0u;
}}
"#
    )
}

/// The element range written in the guards before (`before`) and after (`after`) a buffer of
/// `len` bytes with elements of `elem_size` bytes.
pub fn check(buffer: u32, before: &[u8], after: &[u8], len: usize, elem_size: usize) -> Option<GuardHit> {
    // Nearly every launch leaves its guards alone: say so at the speed of memory, eight bytes at
    // a time with no branch, rather than byte by byte (128 KiB a buffer, every launch).
    if untouched(before) && untouched(after) {
        return None;
    }
    let elem_size = elem_size.max(1) as i64;
    let mut indices = Vec::new();
    // Guard bytes before the buffer: byte k of `before` is at offset k - before.len().
    for (k, b) in before.iter().enumerate() {
        if *b != PATTERN {
            let offset = k as i64 - before.len() as i64;
            indices.push(offset.div_euclid(elem_size));
        }
    }
    for (k, b) in after.iter().enumerate() {
        if *b != PATTERN {
            indices.push((len as i64 + k as i64) / elem_size);
        }
    }
    indices.dedup();
    let (min_index, max_index) = (*indices.iter().min()?, *indices.iter().max()?);
    let mut distinct = indices.clone();
    distinct.sort_unstable();
    distinct.dedup();
    Some(GuardHit { buffer, min_index, max_index, count: distinct.len() as u64 })
}

/// Whether every byte of `guard` still holds the pattern.
fn untouched(guard: &[u8]) -> bool {
    let pattern = u64::from_ne_bytes([PATTERN; 8]);
    let words = guard.chunks_exact(8);
    let tail = words.remainder().iter().all(|b| *b == PATTERN);
    let changed = words.fold(0u64, |acc, w| acc | (u64::from_ne_bytes(w.try_into().unwrap_or([PATTERN; 8])) ^ pattern));
    tail && changed == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_past_the_end_are_reported_in_elements() {
        let before = vec![PATTERN; 64];
        let mut after = vec![PATTERN; 256];
        // 24 floats written past the end of a 1000-float buffer.
        for b in &mut after[..96] {
            *b = 0;
        }
        let hit = check(0, &before, &after, 4000, 4).unwrap();
        assert_eq!((hit.min_index, hit.max_index, hit.count), (1000, 1023, 24));
    }

    #[test]
    fn writes_before_the_start_have_negative_indices() {
        let mut before = vec![PATTERN; 64];
        before[60] = 1;
        let hit = check(2, &before, &[PATTERN; 8], 40, 4).unwrap();
        assert_eq!((hit.buffer, hit.min_index, hit.max_index), (2, -1, -1));
    }

    #[test]
    fn one_changed_byte_anywhere_is_seen() {
        for at in [0, 7, 8, 55, 56, 62] {
            let mut after = vec![PATTERN; 63];
            after[at] = 0;
            let hit = check(0, &[PATTERN; 64], &after, 40, 4).unwrap();
            assert_eq!(hit.min_index, (40 + at as i64) / 4, "byte {at}");
        }
    }

    #[test]
    fn the_check_kernel_compares_with_the_pattern_at_every_width() {
        let src = check_source();
        assert!(src.contains(&format!(" {CHECK_KERNEL}(Guards guards, unsigned int count,")));
        // A changed guard is left in its dump and filled again, at the width it was read.
        assert!(
            src.contains("unsigned char *dumps)") && src.contains("dump_and_fill<unsigned int>(p, dump, 0xa5a5a5a5u)")
        );
        // The copies' blocks come after the guards' and take every copy the launch names.
        assert!(src.contains(&format!("from[{COPIES_PER_CHECK}]")) && src.contains("copy_results(copies, ncopies"));
        assert!(src.contains("0xa5a5a5a5a5a5a5a5ull") && src.contains("0xa5a5a5a5u") && src.contains(")0xa5u"));
        // Every word of a guard is read: the guard divides evenly among the block's threads.
        assert_eq!(GUARD_BYTES % (CHECK_THREADS as usize * 8), 0);
        assert!(
            src.contains(&format!("at[{GUARDS_PER_CHECK}]"))
                && src.contains(&format!("{GUARD_BYTES} / sizeof(W) / {CHECK_THREADS}"))
        );
    }

    #[test]
    fn the_copy_blocks_cover_the_bytes_in_one_pass_up_to_a_bound() {
        assert_eq!(copy_blocks(0), 0);
        assert_eq!(copy_blocks(1), 1);
        assert_eq!(copy_blocks(COPY_BYTES_PER_BLOCK), 1);
        assert_eq!(copy_blocks(COPY_BYTES_PER_BLOCK + 1), 2);
        assert_eq!(copy_blocks(1 << 30), 64);
    }

    #[test]
    fn the_copy_table_lists_sources_then_destinations_then_lengths() {
        let (table, n, bytes) = copy_table(&[(0x1000, 0x9000, 4096), (0x2000, 0x9100, 3)]);
        assert_eq!((n, bytes), (2, 4099));
        let c = COPIES_PER_CHECK;
        assert_eq!(
            [table[0], table[1], table[c], table[c + 1], table[2 * c], table[2 * c + 1]],
            [0x1000, 0x2000, 0x9000, 0x9100, 4096, 3]
        );
        assert!(table[2..c].iter().all(|&w| w == 0));
        // Guards are two a buffer: a chunk of guards and a chunk of copies cover the same buffers.
        assert_eq!(GUARDS_PER_CHECK, 2 * COPIES_PER_CHECK);
    }

    #[test]
    fn untouched_guards_report_nothing() {
        assert_eq!(check(0, &[PATTERN; 16], &[PATTERN; 16], 40, 4), None);
    }
}
