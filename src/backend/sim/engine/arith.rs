//! The instructions that touch only the running group's registers: arithmetic, conversions,
//! pointer arithmetic, moves and constants. They read and write nothing else (no memory, no
//! findings, no scheduling state), so the scheduler may run a run of them in a tight loop
//! between the instructions that need the whole machine (see `Machine::run_pure`).

use crate::cuda::ast::{BinaryOp, Scalar};

use super::super::alu;
use super::super::compile::Op;
use super::super::memory;
use super::WARP;

/// `dst = f(a, b)` for the lanes of `mask`; the full-warp case is a plain loop, which the
/// compiler vectorises.
#[inline(always)]
fn map2(mask: u32, r: &mut [u64], dst: u32, a: u32, b: u32, f: impl Fn(u64, u64) -> u64) {
    let (d, a, b) = (dst as usize * WARP, a as usize * WARP, b as usize * WARP);
    if mask == u32::MAX {
        // Into a copy first: `dst` may be `a` or `b`.
        let mut out = [0u64; WARP];
        let (x, y) = (&r[a..a + WARP], &r[b..b + WARP]);
        for l in 0..WARP {
            out[l] = f(x[l], y[l]);
        }
        r[d..d + WARP].copy_from_slice(&out);
    } else {
        lanes!(mask, |l| r[d + l] = f(r[a + l], r[b + l]));
    }
}

/// Every lane of `mask` indexes a row of its own `len` register's elements inside it
/// (`0 <= idx < len`; a negative index is a huge unsigned one).
#[inline(always)]
pub(super) fn in_row_of(mask: u32, r: &[u64], idx: u32, len: u32) -> bool {
    let (x, n) = (idx as usize * WARP, len as usize * WARP);
    let mut inside = true;
    if mask == u32::MAX {
        for (&i, &n) in r[x..x + WARP].iter().zip(&r[n..n + WARP]) {
            inside &= i < n;
        }
    } else {
        lanes!(mask, |l| inside &= r[x + l] < r[n + l]);
    }
    inside
}

/// Every lane of `mask` indexes a row of `len` elements inside it (`0 <= idx < len`).
#[inline(always)]
pub(super) fn in_row(mask: u32, r: &[u64], idx: u32, len: u16) -> bool {
    let x = idx as usize * WARP;
    let mut inside = true;
    if mask == u32::MAX {
        for &i in &r[x..x + WARP] {
            inside &= i < len as u64;
        }
    } else {
        lanes!(mask, |l| inside &= r[x + l] < len as u64);
    }
    inside
}

/// `dst = ptr + idx * scale` (C's `p + i`). The common case, every lane's index fits an `int`
/// and its pointer stays within what a pointer holds, is plain arithmetic the compiler
/// vectorises; any other lane goes through [`memory::moved`], which saturates.
#[inline(always)]
fn ptr_add(mask: u32, r: &mut [u64], dst: u32, ptr: u32, idx: u32, scale: u32) {
    let (d, p, x) = (dst as usize * WARP, ptr as usize * WARP, idx as usize * WARP);
    if mask != u32::MAX {
        lanes!(mask, |l| r[d + l] = memory::moved(r[p + l], r[x + l] as i64, scale as i64));
        return;
    }
    let mut out = [0u64; WARP];
    let mut slow = false;
    {
        let (ps, xs) = (&r[p..p + WARP], &r[x..x + WARP]);
        for l in 0..WARP {
            let (pv, i) = (ps[l], xs[l] as i64);
            // |i| < 2^31 and scale < 2^32: the product fits; the sum may wrap only far out of
            // range, which the range check then sends to the slow path.
            let off = memory::offset(pv).wrapping_add(i.wrapping_mul(scale as i64));
            slow |= (i as i32 as i64 != i) | !memory::in_range(off);
            out[l] = memory::with_offset(pv, off);
        }
    }
    if slow {
        for l in 0..WARP {
            out[l] = memory::moved(r[p + l], r[x + l] as i64, scale as i64);
        }
    }
    r[d..d + WARP].copy_from_slice(&out);
}

/// Whether `Bin { op, ty }` can trap (integer division or remainder by zero): then it is not
/// one of these instructions.
#[inline(always)]
pub(super) fn traps(op: BinaryOp, ty: Scalar) -> bool {
    matches!(op, BinaryOp::Div | BinaryOp::Rem) && !ty.is_float()
}

/// Execute `op` for the lanes of `mask` if it is one of these instructions; `false`, having
/// done nothing, if it is not.
#[inline(always)]
pub(super) fn exec(op: Op, mask: u32, r: &mut [u64]) -> bool {
    let at = |reg: u32, l: usize| reg as usize * WARP + l;
    match op {
        Op::Imm { dst, val } if mask == u32::MAX => r[at(dst, 0)..at(dst, WARP)].fill(val),
        Op::Imm { dst, val } => lanes!(mask, |l| r[at(dst, l)] = val),
        Op::Mov { dst, src } if mask == u32::MAX => r.copy_within(at(src, 0)..at(src, WARP), at(dst, 0)),
        Op::Mov { dst, src } => lanes!(mask, |l| r[at(dst, l)] = r[at(src, l)]),
        Op::Bin { op, ty, dst, a, b } if !traps(op, ty) => {
            // Each common operator and type gets a loop of its own, with `alu::bin`'s
            // matches folded away: one dispatch per warp instruction, not one per lane.
            macro_rules! by_type {
                ($o:ident) => {
                    match ty {
                        Scalar::I32 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::I32, x, y).unwrap_or(0))
                        }
                        Scalar::U32 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::U32, x, y).unwrap_or(0))
                        }
                        Scalar::I64 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::I64, x, y).unwrap_or(0))
                        }
                        Scalar::U64 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::U64, x, y).unwrap_or(0))
                        }
                        Scalar::F32 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::F32, x, y).unwrap_or(0))
                        }
                        Scalar::F64 => {
                            map2(mask, r, dst, a, b, |x, y| alu::bin(BinaryOp::$o, Scalar::F64, x, y).unwrap_or(0))
                        }
                        _ => map2(mask, r, dst, a, b, |x, y| alu::bin(op, ty, x, y).unwrap_or(0)),
                    }
                };
            }
            match op {
                // `int`s are held sign-extended: comparing the whole patterns is the same.
                BinaryOp::Lt if ty == Scalar::I32 => map2(mask, r, dst, a, b, |x, y| ((x as i64) < (y as i64)) as u64),
                BinaryOp::Add => by_type!(Add),
                BinaryOp::Sub => by_type!(Sub),
                BinaryOp::Mul => by_type!(Mul),
                BinaryOp::Div => by_type!(Div),
                BinaryOp::Lt => by_type!(Lt),
                BinaryOp::Le => by_type!(Le),
                BinaryOp::Gt => by_type!(Gt),
                BinaryOp::Ge => by_type!(Ge),
                BinaryOp::Eq => by_type!(Eq),
                BinaryOp::Ne => by_type!(Ne),
                BinaryOp::BitAnd => by_type!(BitAnd),
                BinaryOp::BitOr => by_type!(BitOr),
                BinaryOp::BitXor => by_type!(BitXor),
                BinaryOp::Shl => by_type!(Shl),
                BinaryOp::Shr => by_type!(Shr),
                _ => map2(mask, r, dst, a, b, |x, y| alu::bin(op, ty, x, y).unwrap_or(0)),
            }
        }
        Op::Un { op, ty, dst, a } => lanes!(mask, |l| r[at(dst, l)] = alu::un(op, ty, r[at(a, l)])),
        Op::Cvt { from, to, dst, a } => {
            // As for `Bin`: the common conversions each get a loop of their own.
            macro_rules! to_type {
                ($f:ident) => {
                    match to {
                        Scalar::I32 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::I32)),
                        Scalar::U32 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::U32)),
                        Scalar::I64 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::I64)),
                        Scalar::U64 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::U64)),
                        Scalar::F32 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::F32)),
                        Scalar::F64 => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, Scalar::$f, Scalar::F64)),
                        _ => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, from, to)),
                    }
                };
            }
            match from {
                Scalar::I32 => to_type!(I32),
                Scalar::U32 => to_type!(U32),
                Scalar::I64 => to_type!(I64),
                Scalar::U64 => to_type!(U64),
                Scalar::F32 => to_type!(F32),
                Scalar::F64 => to_type!(F64),
                _ => map2(mask, r, dst, a, a, |x, _| alu::cvt(x, from, to)),
            }
        }
        Op::PtrAdd { dst, ptr, idx, scale } => ptr_add(mask, r, dst, ptr, idx, scale),
        // A lane past its row is a finding, which only the machine can report.
        Op::AddIn { dst, a, b, len } => {
            if !in_row_of(mask, r, b, len) {
                return false;
            }
            map2(mask, r, dst, a, b, u64::wrapping_add)
        }
        Op::PtrAddIn { dst, ptr, idx, scale, len } => {
            if !in_row(mask, r, idx, len) {
                return false;
            }
            ptr_add(mask, r, dst, ptr, idx, scale as u32)
        }
        Op::PtrDiff { dst, a, b, scale } => lanes!(mask, |l| r[at(dst, l)] =
            ((r[at(a, l)].wrapping_sub(r[at(b, l)]) as i64) / scale.max(1) as i64) as u64),
        Op::Math { f, ty, dst, a, b, c } => {
            lanes!(mask, |l| r[at(dst, l)] = alu::math(f, ty, r[at(a, l)], r[at(b, l)], r[at(c, l)]))
        }
        Op::Min { ty, dst, a, b } => {
            lanes!(mask, |l| r[at(dst, l)] = alu::min_max(false, ty, r[at(a, l)], r[at(b, l)]))
        }
        Op::Max { ty, dst, a, b } => {
            lanes!(mask, |l| r[at(dst, l)] = alu::min_max(true, ty, r[at(a, l)], r[at(b, l)]))
        }
        Op::Abs { ty, dst, a } => lanes!(mask, |l| r[at(dst, l)] = alu::abs(ty, r[at(a, l)])),
        _ => return false,
    }
    true
}
