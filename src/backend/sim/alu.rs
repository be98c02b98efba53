//! Arithmetic on register patterns, with C's rules and the simulator's definitions where C has
//! none: integer overflow wraps, shifts by the width or more give 0 (or the sign, for `>>` of a
//! negative value), `INT_MIN / -1` wraps, float-to-int conversion saturates (NaN gives 0).
//! Integer division by zero is the caller's to report: `bin` returns `None`.

use super::compile::Vote;
use crate::cuda::ast::{AtomicOp, BinaryOp, MathFn, Scalar, UnaryOp, WarpReduceOp};

fn f32_of(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

fn f64_of(v: u64) -> f64 {
    f64::from_bits(v)
}

fn from_f32(f: f32) -> u64 {
    f.to_bits() as u64
}

#[inline(always)]
fn cmp<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> Option<u64> {
    Some(match op {
        BinaryOp::Eq => a == b,
        BinaryOp::Ne => a != b,
        BinaryOp::Lt => a < b,
        BinaryOp::Le => a <= b,
        BinaryOp::Gt => a > b,
        BinaryOp::Ge => a >= b,
        _ => return None,
    } as u64)
}

macro_rules! int_bin {
    ($op:expr, $a:expr, $b:expr, $t:ty, $ut:ty, $bits:expr, $out:expr) => {{
        let (x, y) = ($a as $t, $b as $t);
        if let Some(c) = cmp($op, x, y) {
            return Some(c);
        }
        let r: $t = match $op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div => {
                if y == 0 {
                    return None;
                }
                x.wrapping_div(y)
            }
            BinaryOp::Rem => {
                if y == 0 {
                    return None;
                }
                x.wrapping_rem(y)
            }
            BinaryOp::Shl => {
                if (y as $ut) >= $bits {
                    0
                } else {
                    x.wrapping_shl(y as u32)
                }
            }
            BinaryOp::Shr => {
                if (y as $ut) >= $bits {
                    x.wrapping_shr($bits - 1).wrapping_shr(1)
                } else {
                    x.wrapping_shr(y as u32)
                }
            }
            BinaryOp::BitAnd => x & y,
            BinaryOp::BitOr => x | y,
            BinaryOp::BitXor => x ^ y,
            _ => (x != 0 && y != 0) as $t,
        };
        #[allow(clippy::redundant_closure_call)]
        Some(($out)(r))
    }};
}

/// `a op b` in type `ty`; `None` for integer division by zero.
#[inline(always)]
pub fn bin(op: BinaryOp, ty: Scalar, a: u64, b: u64) -> Option<u64> {
    match ty {
        Scalar::F32 => {
            let (x, y) = (f32_of(a), f32_of(b));
            cmp(op, x, y).or_else(|| {
                Some(from_f32(match op {
                    BinaryOp::Add => x + y,
                    BinaryOp::Sub => x - y,
                    BinaryOp::Mul => x * y,
                    BinaryOp::Div => x / y,
                    BinaryOp::Rem => x % y,
                    _ => 0.0,
                }))
            })
        }
        Scalar::F64 => {
            let (x, y) = (f64_of(a), f64_of(b));
            cmp(op, x, y).or_else(|| {
                Some(
                    match op {
                        BinaryOp::Add => x + y,
                        BinaryOp::Sub => x - y,
                        BinaryOp::Mul => x * y,
                        BinaryOp::Div => x / y,
                        BinaryOp::Rem => x % y,
                        _ => 0.0,
                    }
                    .to_bits(),
                )
            })
        }
        Scalar::I32 => int_bin!(op, a, b, i32, u32, 32, |r: i32| r as i64 as u64),
        Scalar::U32 => int_bin!(op, a, b, u32, u32, 32, |r: u32| r as u64),
        Scalar::I64 | Scalar::I8 | Scalar::I16 => int_bin!(op, a, b, i64, u64, 64, |r: i64| r as u64),
        Scalar::U64 | Scalar::U8 | Scalar::U16 | Scalar::Bool => int_bin!(op, a, b, u64, u64, 64, |r: u64| r),
    }
}

pub fn un(op: UnaryOp, ty: Scalar, a: u64) -> u64 {
    match (op, ty) {
        (UnaryOp::LogNot, _) => (a == 0) as u64,
        (UnaryOp::Neg, Scalar::F32) => from_f32(-f32_of(a)),
        (UnaryOp::Neg, Scalar::F64) => (-f64_of(a)).to_bits(),
        (UnaryOp::Neg, t) => cvt(a.wrapping_neg(), Scalar::U64, t),
        (UnaryOp::BitNot, t) => cvt(!a, Scalar::U64, t),
        (UnaryOp::Popc, Scalar::U64 | Scalar::I64) => a.count_ones() as u64,
        (UnaryOp::Popc, _) => (a as u32).count_ones() as u64,
        (UnaryOp::Clz, Scalar::U64 | Scalar::I64) => a.leading_zeros() as u64,
        (UnaryOp::Clz, _) => (a as u32).leading_zeros() as u64,
        (UnaryOp::Ffs, Scalar::U64 | Scalar::I64) if a == 0 => 0,
        (UnaryOp::Ffs, Scalar::U64 | Scalar::I64) => a.trailing_zeros() as u64 + 1,
        (UnaryOp::Ffs, _) if a as u32 == 0 => 0,
        (UnaryOp::Ffs, _) => (a as u32).trailing_zeros() as u64 + 1,
        (UnaryOp::Brev, Scalar::U64 | Scalar::I64) => a.reverse_bits(),
        (UnaryOp::Brev, _) => (a as u32).reverse_bits() as u64,
        // Registers hold 32-bit floats and unsigned ints zero-extended, signed ints sign-extended.
        (UnaryOp::Bits(Scalar::F32 | Scalar::U32), _) => a as u32 as u64,
        (UnaryOp::Bits(Scalar::I32), _) => a as u32 as i32 as i64 as u64,
        (UnaryOp::Bits(_), _) => a,
    }
}

/// Convert a register pattern of type `from` to type `to`, as a C cast does.
#[inline(always)]
pub fn cvt(v: u64, from: Scalar, to: Scalar) -> u64 {
    if from == to {
        return v;
    }
    if from.is_float() {
        let f = if from == Scalar::F32 { f32_of(v) as f64 } else { f64_of(v) };
        return match to {
            Scalar::Bool => (f != 0.0) as u64,
            Scalar::F32 => from_f32(f as f32),
            Scalar::F64 => f.to_bits(),
            Scalar::I8 => f as i8 as i64 as u64,
            Scalar::U8 => f as u8 as u64,
            Scalar::I16 => f as i16 as i64 as u64,
            Scalar::U16 => f as u16 as u64,
            Scalar::I32 => f as i32 as i64 as u64,
            Scalar::U32 => f as u32 as u64,
            Scalar::I64 => f as i64 as u64,
            Scalar::U64 => f as u64,
        };
    }
    // Integers are canonical (sign- or zero-extended), so the 64-bit pattern is the value.
    match to {
        Scalar::Bool => (v != 0) as u64,
        Scalar::F32 if from.is_signed() => from_f32(v as i64 as f32),
        Scalar::F32 => from_f32(v as f32),
        Scalar::F64 if from.is_signed() => (v as i64 as f64).to_bits(),
        Scalar::F64 => (v as f64).to_bits(),
        Scalar::I8 => v as i8 as i64 as u64,
        Scalar::U8 => v as u8 as u64,
        Scalar::I16 => v as i16 as i64 as u64,
        Scalar::U16 => v as u16 as u64,
        Scalar::I32 => v as i32 as i64 as u64,
        Scalar::U32 => v as u32 as u64,
        Scalar::I64 | Scalar::U64 => v,
    }
}

/// The math functions, once for each precision: `f32` math is computed in `f32`, as
/// `sqrtf` and friends are on a GPU.
macro_rules! math_fn {
    ($name:ident, $t:ty, $erf:path, $erfc:path, $tgamma:path, $lgamma:path) => {
        fn $name(f: MathFn, x: $t, y: $t, z: $t) -> $t {
            match f {
                MathFn::Sqrt => x.sqrt(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Cbrt => x.cbrt(),
                MathFn::Exp => x.exp(),
                MathFn::Exp2 => x.exp2(),
                MathFn::Expm1 => x.exp_m1(),
                MathFn::Log => x.ln(),
                MathFn::Log2 => x.log2(),
                MathFn::Log10 => x.log10(),
                MathFn::Log1p => x.ln_1p(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Asin => x.asin(),
                MathFn::Acos => x.acos(),
                MathFn::Atan => x.atan(),
                MathFn::Atan2 => x.atan2(y),
                MathFn::Sinh => x.sinh(),
                MathFn::Cosh => x.cosh(),
                MathFn::Tanh => x.tanh(),
                MathFn::Pow => x.powf(y),
                MathFn::Fabs => x.abs(),
                MathFn::Fmin => x.min(y),
                MathFn::Fmax => x.max(y),
                MathFn::Fmod => x % y,
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Round => x.round(),
                MathFn::Rint => x.round_ties_even(),
                MathFn::Trunc => x.trunc(),
                MathFn::Fma => x.mul_add(y, z),
                MathFn::Hypot => x.hypot(y),
                MathFn::Erf => $erf(x),
                MathFn::Erfc => $erfc(x),
                MathFn::Tgamma => $tgamma(x),
                MathFn::Lgamma => $lgamma(x),
                MathFn::Copysign => x.copysign(y),
            }
        }
    };
}

math_fn!(math64, f64, libm::erf, libm::erfc, libm::tgamma, libm::lgamma);
math_fn!(math32, f32, libm::erff, libm::erfcf, libm::tgammaf, libm::lgammaf);

pub fn math(f: MathFn, ty: Scalar, a: u64, b: u64, c: u64) -> u64 {
    if ty == Scalar::F32 {
        from_f32(math32(f, f32_of(a), f32_of(b), f32_of(c)))
    } else {
        math64(f, f64_of(a), f64_of(b), f64_of(c)).to_bits()
    }
}

/// `min` (`max == false`) or `max` in type `ty`.
pub fn min_max(max: bool, ty: Scalar, a: u64, b: u64) -> u64 {
    let a_less = match ty {
        Scalar::F32 => return from_f32(if max { f32_of(a).max(f32_of(b)) } else { f32_of(a).min(f32_of(b)) }),
        Scalar::F64 => return if max { f64_of(a).max(f64_of(b)) } else { f64_of(a).min(f64_of(b)) }.to_bits(),
        t if t.is_signed() => (a as i64) < (b as i64),
        _ => a < b,
    };
    if a_less != max { a } else { b }
}

pub fn abs(ty: Scalar, a: u64) -> u64 {
    match ty {
        Scalar::F32 => from_f32(f32_of(a).abs()),
        Scalar::F64 => f64_of(a).abs().to_bits(),
        t if t.is_signed() => cvt((a as i64).wrapping_abs() as u64, Scalar::I64, t),
        _ => a,
    }
}

/// The new value an atomic stores, given the `old` one and its operands.
pub fn atomic(op: AtomicOp, ty: Scalar, old: u64, a: u64, b: u64) -> u64 {
    let wrap = |v: u64| cvt(v, Scalar::U64, ty);
    match op {
        AtomicOp::Add => bin(BinaryOp::Add, ty, old, a).unwrap_or(old),
        AtomicOp::Sub => bin(BinaryOp::Sub, ty, old, a).unwrap_or(old),
        AtomicOp::Exch => a,
        AtomicOp::Min => min_max(false, ty, old, a),
        AtomicOp::Max => min_max(true, ty, old, a),
        AtomicOp::Inc => {
            if old >= a {
                0
            } else {
                wrap(old + 1)
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > a {
                a
            } else {
                old - 1
            }
        }
        AtomicOp::Cas => {
            if old == a {
                b
            } else {
                old
            }
        }
        AtomicOp::And => old & a,
        AtomicOp::Or => old | a,
        AtomicOp::Xor => old ^ a,
    }
}

/// A warp's reduction or match over the lanes in `mask` (their `values`): what each lane gets.
/// Ballots and votes are the engine's own (they need no values).
pub fn warp_vote(kind: Vote, mask: u32, values: &[u64; 32]) -> [u64; 32] {
    let lanes = || (0..32).filter(move |l| mask >> l & 1 != 0);
    let mut out = [0u64; 32];
    match kind {
        Vote::Reduce(op, ty) => {
            let combine = |a: u64, b: u64| match op {
                WarpReduceOp::Add => bin(BinaryOp::Add, ty, a, b).unwrap_or(0),
                WarpReduceOp::And => a & b,
                WarpReduceOp::Or => a | b,
                WarpReduceOp::Xor => bin(BinaryOp::BitXor, ty, a, b).unwrap_or(0),
                WarpReduceOp::Min => min_max(false, ty, a, b),
                WarpReduceOp::Max => min_max(true, ty, a, b),
            };
            let v = lanes().map(|l| values[l]).reduce(combine).unwrap_or(0);
            lanes().for_each(|l| out[l] = v);
        }
        Vote::MatchAny => {
            for l in lanes() {
                out[l] = lanes().filter(|&k| values[k] == values[l]).fold(0u64, |m, k| m | 1 << k);
            }
        }
        Vote::MatchAll => {
            let first = lanes().next().map(|l| values[l]);
            let all = lanes().all(|l| Some(values[l]) == first);
            lanes().for_each(|l| out[l] = if all { mask as u64 } else { 0 });
        }
        Vote::Ballot | Vote::Any | Vote::All => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_arithmetic() {
        let i = |v: i32| v as i64 as u64;
        assert_eq!(bin(BinaryOp::Add, Scalar::I32, i(i32::MAX), i(1)), Some(i(i32::MIN)));
        assert_eq!(bin(BinaryOp::Div, Scalar::I32, i(-7), i(2)), Some(i(-3)));
        assert_eq!(bin(BinaryOp::Rem, Scalar::I32, i(-7), i(2)), Some(i(-1)));
        assert_eq!(bin(BinaryOp::Div, Scalar::I32, i(1), i(0)), None);
        assert_eq!(bin(BinaryOp::Shr, Scalar::I32, i(-8), i(1)), Some(i(-4)));
        assert_eq!(bin(BinaryOp::Shr, Scalar::U32, 0xffff_ffff, 4), Some(0x0fff_ffff));
        assert_eq!(bin(BinaryOp::Lt, Scalar::U32, i(-1) as u32 as u64, 1), Some(0));
        assert_eq!(cvt(from_f32(-2.9), Scalar::F32, Scalar::I32), i(-2));
        assert_eq!(cvt(i(-1), Scalar::I32, Scalar::U32), 0xffff_ffff);
        assert_eq!(cvt(0xffff_ffff, Scalar::U32, Scalar::F64), 4294967295f64.to_bits());
        assert_eq!(cvt(300, Scalar::I32, Scalar::I8), 44);
        assert_eq!(un(UnaryOp::Neg, Scalar::U32, 1), 0xffff_ffff);
        assert_eq!(un(UnaryOp::Popc, Scalar::U32, 0xf0f0), 8);
        assert_eq!(un(UnaryOp::Popc, Scalar::U64, u64::MAX), 64);
        // Bit casts keep the bits and the register conventions: -2.0f is 0xc0000000, which
        // as an int is negative (sign-extended), as an unsigned int is not.
        let minus_two = (-2.0f32).to_bits() as u64;
        assert_eq!(un(UnaryOp::Bits(Scalar::I32), Scalar::F32, minus_two), -1073741824i64 as u64);
        assert_eq!(un(UnaryOp::Bits(Scalar::U32), Scalar::F32, minus_two), 0xc000_0000);
        assert_eq!(un(UnaryOp::Bits(Scalar::F32), Scalar::I32, -1073741824i64 as u64), minus_two);
        assert_eq!(un(UnaryOp::Bits(Scalar::F64), Scalar::I64, 2.0f64.to_bits()), 2.0f64.to_bits());
        assert_eq!(un(UnaryOp::Clz, Scalar::U32, 1), 31);
        assert_eq!(un(UnaryOp::Clz, Scalar::U32, 0), 32);
        assert_eq!(un(UnaryOp::Ffs, Scalar::U32, 0), 0);
        assert_eq!(un(UnaryOp::Ffs, Scalar::U32, 8), 4);
        assert_eq!(un(UnaryOp::Brev, Scalar::U32, 1), 0x8000_0000);
        assert_eq!(atomic(AtomicOp::Inc, Scalar::U32, 5, 5, 5), 0);
        assert_eq!(min_max(false, Scalar::I32, i(-1), i(3)), i(-1));
    }

    #[test]
    fn warp_reductions_and_matches_over_the_lanes_of_the_mask() {
        let i = |v: i32| v as i64 as u64;
        let mut values = [0u64; 32];
        for (l, v) in values.iter_mut().enumerate() {
            *v = i(l as i32 - 3);
        }
        let all = u32::MAX;
        assert_eq!(warp_vote(Vote::Reduce(WarpReduceOp::Add, Scalar::I32), all, &values)[5], i(400));
        assert_eq!(warp_vote(Vote::Reduce(WarpReduceOp::Min, Scalar::I32), all, &values)[0], i(-3));
        // As unsigned, -1 is the largest.
        assert_eq!(
            warp_vote(Vote::Reduce(WarpReduceOp::Max, Scalar::U32), all, &values.map(|v| v & 0xffff_ffff))[9],
            0xffff_ffff
        );
        // Only the lanes of the mask take part, and only they get the result.
        let out = warp_vote(Vote::Reduce(WarpReduceOp::Or, Scalar::U32), 0b1010_0000, &values);
        assert_eq!((out[5], out[7], out[6]), (2 | 4, 2 | 4, 0));
        let keys = std::array::from_fn(|l| (l % 3) as u64);
        let out = warp_vote(Vote::MatchAny, 0xff, &keys);
        assert_eq!(out[..4], [0b0100_1001, 0b1001_0010, 0b0010_0100, 0b0100_1001]);
        assert_eq!(out[8], 0);
        assert_eq!(warp_vote(Vote::MatchAll, 0x0f, &[7; 32])[2], 0x0f);
        assert_eq!(warp_vote(Vote::MatchAll, 0x0f, &keys)[2], 0);
    }
}
