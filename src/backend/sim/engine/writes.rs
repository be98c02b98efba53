//! Which buffers a kernel can write, read off its bytecode before a launch: a buffer no store,
//! atomic or zeroing can reach holds what it held before the launch at every step of it, so
//! its loads may run ahead of their turn (see `Machine::run_warp`) with findings off, where no
//! race shadow or conflict would catch a write.
//!
//! The question is where a pointer into each buffer can flow, asked of every instruction at
//! once and without regard to order (a register reused for other values collects them all),
//! which can only answer "may write" too often, never too rarely: a pointer starts in the
//! parameter registers that hold one (or an `Imm` that spells one), flows into whatever an
//! instruction computes from it (arithmetic on its bits included, so casts through integers
//! are followed), and into memory through a store, from where every load may bring it back.
//! A 64-bit integer load brings back any buffer, for pointers the host may have put in memory.

use crate::cuda::ast::Scalar;

use super::super::compile::{Op, Reg, SPECIAL_REGS};
use super::super::memory;

/// Per buffer (`buffers` of them, region `i + 1`), whether no instruction of `code` can write
/// it when the parameter registers hold `params` and the kernel has `regs` registers.
pub(super) fn unwritten(code: &[Op], regs: u32, params: &[u64], buffers: usize) -> Vec<bool> {
    if buffers == 0 || buffers > 64 {
        return vec![false; buffers];
    }
    let all = u64::MAX >> (64 - buffers);
    let of = |v: u64| {
        let r = memory::region(v) as usize;
        if (1..=buffers).contains(&r) { 1u64 << (r - 1) } else { 0 }
    };
    // Per register, the buffers a pointer it may hold points into.
    let mut t = vec![0u64; regs as usize];
    for (p, v) in params.iter().enumerate() {
        if let Some(x) = t.get_mut(SPECIAL_REGS as usize + p) {
            *x |= of(*v);
        }
    }
    // The buffers a pointer stored anywhere may point into, and those a store may write.
    let (mut stored, mut written) = (0u64, 0u64);
    loop {
        let before = (stored, written);
        let mut changed = false;
        for op in code {
            let r = |x: Reg| t.get(x as usize).copied().unwrap_or(all);
            let span = |x: Reg, n: u8| (x..x + n as u32).fold(0, |a, x| a | r(x));
            let wide = |ty: Scalar| if ty.size() == 8 && !ty.is_float() { all } else { 0 };
            let (dst, n, v): (Reg, u32, u64) = match *op {
                Op::Imm { dst, val } => (dst, 1, of(val)),
                Op::Mov { dst, src } => (dst, 1, r(src)),
                Op::Bin { dst, a, b, .. }
                | Op::AddIn { dst, a, b, .. }
                | Op::PtrDiff { dst, a, b, .. }
                | Op::Min { dst, a, b, .. }
                | Op::Max { dst, a, b, .. } => (dst, 1, r(a) | r(b)),
                Op::Un { dst, a, .. } | Op::Cvt { dst, a, .. } | Op::Abs { dst, a, .. } => (dst, 1, r(a)),
                Op::PtrAdd { dst, ptr, idx, .. } | Op::PtrAddIn { dst, ptr, idx, .. } => (dst, 1, r(ptr) | r(idx)),
                Op::Math { dst, a, b, c, .. } => (dst, 1, r(a) | r(b) | r(c)),
                Op::Load { ty, dst, .. } => (dst, 1, stored | wide(ty)),
                Op::LoadVec { ty, n, dst, .. } => (dst, n as u32, stored | wide(ty)),
                Op::Store { addr, src, .. } => {
                    written |= r(addr);
                    stored |= r(src);
                    continue;
                }
                Op::StoreVec { n, addr, src, .. } => {
                    written |= r(addr);
                    stored |= span(src, n);
                    continue;
                }
                Op::Zero { addr, .. } => {
                    written |= r(addr);
                    continue;
                }
                Op::Atomic { ty, dst, addr, a, b, .. } => {
                    written |= r(addr);
                    stored |= r(a) | r(b);
                    (dst, 1, stored | wide(ty))
                }
                Op::SyncThreadsReduce { dst, pred, .. } => (dst, 1, r(pred)),
                Op::Shfl { dst, val, lane, width, .. } => (dst, 1, r(val) | r(lane) | r(width)),
                Op::Vote { dst, pred, .. } => (dst, 1, r(pred)),
                Op::Clock { dst } => (dst, 1, 0),
                Op::Jump { .. }
                | Op::Branch { .. }
                | Op::Exit
                | Op::SyncThreads
                | Op::SyncWarp { .. }
                | Op::Fence
                | Op::Trap { .. }
                | Op::Printf { .. }
                | Op::CheckInit { .. } => continue,
            };
            for d in dst..dst.saturating_add(n) {
                if let Some(x) = t.get_mut(d as usize)
                    && *x | v != *x
                {
                    *x |= v;
                    changed = true;
                }
            }
        }
        if !changed && (stored, written) == before {
            break;
        }
    }
    (0..buffers).map(|i| written & (1 << i) == 0).collect()
}

#[cfg(test)]
mod tests {
    use super::super::super::compile;
    use super::super::super::memory::make_ptr;
    use crate::cuda::Module;
    use crate::diag::SourceMap;

    /// `unwritten` for kernel `name` of `src`, its pointer parameters given buffers 0, 1, ...
    /// in order and its other parameters 0.
    fn unwritten(src: &str, name: &str, buffers: usize) -> Vec<bool> {
        let mut sources = SourceMap::new();
        let id = sources.add("<writes>", src, 1);
        let mut module = Module::new();
        if let Err(e) = module.add(id, src) {
            panic!("{}", e.iter().map(|d| d.to_plain(&sources)).collect::<Vec<_>>().join("\n"));
        }
        let p = module.program();
        let (fid, f) = p.functions.iter().enumerate().find(|(_, f)| f.name == name).expect("the kernel");
        let k = compile::compile(p, fid as u32).expect("compiles");
        let mut next = 0;
        let params: Vec<u64> = f
            .params
            .iter()
            .map(|p| {
                if p.ty.pointee().is_some() {
                    next += 1;
                    make_ptr(next, 0)
                } else {
                    0
                }
            })
            .collect();
        super::unwritten(&k.code, k.regs, &params, buffers)
    }

    #[test]
    fn a_matrix_multiply_writes_only_its_output() {
        let src = r#"
__global__ void matmul(const float *A, float *B, float *C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; k++) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}
"#;
        // `B` is not `const`, and still only read.
        assert_eq!(unwritten(src, "matmul", 3), [true, true, false]);
    }

    #[test]
    fn writes_through_casts_memory_atomics_and_choices_count() {
        let src = r#"
__global__ void cast(const float *a, const float *b) {
    ((float *) a)[threadIdx.x] = b[threadIdx.x];
}
__global__ void via_shared(const float *a, const float *b) {
    __shared__ const float *keep[1];
    keep[0] = a;
    __syncthreads();
    ((float *) keep[0])[1] = b[0];
}
__global__ void atomic(const int *a, const int *b) {
    atomicAdd((int *) a, b[0]);
}
__global__ void chosen(const float *a, const float *b, float *c, int i) {
    float *p = i > 0 ? c : (float *) b;
    p[0] = a[0];
}
"#;
        assert_eq!(unwritten(src, "cast", 2), [false, true]);
        assert_eq!(unwritten(src, "via_shared", 2), [false, false]);
        assert_eq!(unwritten(src, "atomic", 2), [false, true]);
        assert_eq!(unwritten(src, "chosen", 3), [true, false, false]);
    }
}
