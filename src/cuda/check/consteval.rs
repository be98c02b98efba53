//! Constant evaluation: folding integer and float expressions that must be known before a
//! kernel runs (array sizes, file-scope `const` values, `#define`d numbers).

use super::*;

#[derive(Clone, Copy, Debug)]
pub(super) enum Num {
    I(i128),
    F(f64),
}

pub(super) fn wrap(v: i128, s: Scalar) -> i128 {
    match s {
        Scalar::Bool => (v != 0) as i128,
        Scalar::I8 => v as i8 as i128,
        Scalar::U8 => v as u8 as i128,
        Scalar::I16 => v as i16 as i128,
        Scalar::U16 => v as u16 as i128,
        Scalar::I32 => v as i32 as i128,
        Scalar::U32 => v as u32 as i128,
        Scalar::I64 => v as i64 as i128,
        Scalar::U64 => v as u64 as i128,
        Scalar::F32 | Scalar::F64 => v,
    }
}

pub(super) fn num_to(n: Num, s: Scalar) -> Num {
    match (n, s.is_float()) {
        (Num::I(v), false) => Num::I(wrap(v, s)),
        (Num::I(v), true) => Num::F(if s == Scalar::F32 { v as f32 as f64 } else { v as f64 }),
        (Num::F(f), false) if s == Scalar::Bool => Num::I((f != 0.0) as i128),
        (Num::F(f), false) => Num::I(wrap(f as i128, s)),
        (Num::F(f), true) => Num::F(if s == Scalar::F32 { f as f32 as f64 } else { f }),
    }
}

/// The value of a constant expression, in its type; `None` if it is not constant.
pub(super) fn const_eval(e: &Expr) -> Option<Num> {
    let s = e.ty.scalar()?;
    let v = match &e.kind {
        ExprKind::IntConst(v) => Num::I(wrap(*v as i128, s)),
        ExprKind::FloatConst(f) => Num::F(*f),
        ExprKind::WarpSize => Num::I(32),
        ExprKind::Cast(inner) => num_to(const_eval(inner)?, s),
        ExprKind::Unary { op, operand } => match (op, const_eval(operand)?) {
            (UnaryOp::Neg, Num::I(v)) => Num::I(wrap(-v, s)),
            (UnaryOp::Neg, Num::F(f)) => Num::F(-f),
            (UnaryOp::BitNot, Num::I(v)) => Num::I(wrap(!v, s)),
            (UnaryOp::LogNot, Num::I(v)) => Num::I((v == 0) as i128),
            _ => return None,
        },
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (const_eval(lhs)?, const_eval(rhs)?);
            let cmp = |o: std::cmp::Ordering| {
                let r = match op {
                    BinaryOp::Eq => o.is_eq(),
                    BinaryOp::Ne => o.is_ne(),
                    BinaryOp::Lt => o.is_lt(),
                    BinaryOp::Le => o.is_le(),
                    BinaryOp::Gt => o.is_gt(),
                    _ => o.is_ge(),
                };
                Num::I(r as i128)
            };
            let is_cmp =
                matches!(op, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge);
            match (a, b) {
                (Num::I(a), Num::I(b)) if is_cmp => cmp(a.cmp(&b)),
                (Num::F(a), Num::F(b)) if is_cmp => cmp(a.partial_cmp(&b)?),
                (Num::I(a), Num::I(b)) => Num::I(wrap(
                    match op {
                        BinaryOp::Add => a + b,
                        BinaryOp::Sub => a - b,
                        BinaryOp::Mul => a.checked_mul(b)?,
                        BinaryOp::Div => a.checked_div(b)?,
                        BinaryOp::Rem => a.checked_rem(b)?,
                        BinaryOp::Shl => a.checked_shl(u32::try_from(b).ok().filter(|b| *b < 64)?)?,
                        BinaryOp::Shr => a >> u32::try_from(b).ok().filter(|b| *b < 64)?,
                        BinaryOp::BitAnd => a & b,
                        BinaryOp::BitOr => a | b,
                        BinaryOp::BitXor => a ^ b,
                        BinaryOp::LogAnd => (a != 0 && b != 0) as i128,
                        BinaryOp::LogOr => (a != 0 || b != 0) as i128,
                        _ => return None,
                    },
                    s,
                )),
                (Num::F(a), Num::F(b)) => num_to(
                    Num::F(match op {
                        BinaryOp::Add => a + b,
                        BinaryOp::Sub => a - b,
                        BinaryOp::Mul => a * b,
                        BinaryOp::Div => a / b,
                        _ => return None,
                    }),
                    s,
                ),
                _ => return None,
            }
        }
        ExprKind::Cond { cond, then, else_ } => match const_eval(cond)? {
            Num::I(0) => const_eval(else_)?,
            Num::I(_) => const_eval(then)?,
            Num::F(_) => return None,
        },
        _ => return None,
    };
    Some(v)
}

pub(super) fn const_to_expr(n: Num, ty: &Type, span: Span) -> Expr {
    let kind = match n {
        Num::I(v) => ExprKind::IntConst(v as i64 as u64),
        Num::F(f) => ExprKind::FloatConst(f),
    };
    Expr { kind, ty: ty.clone(), span }
}

/// The bit pattern of a constant in scalar type `s`, as `Global::init` stores it.
pub(super) fn const_bits(n: Num, s: Scalar) -> u64 {
    match num_to(n, s) {
        Num::I(v) => {
            let bits = v as i64 as u64;
            if s.size() == 8 { bits } else { bits & ((1u64 << (s.size() * 8)) - 1) }
        }
        Num::F(f) if s == Scalar::F32 => (f as f32).to_bits() as u64,
        Num::F(f) => f.to_bits(),
    }
}
