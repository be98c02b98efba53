//! Integer and warp intrinsics written out in the operations the simulator already has:
//! `__sad`/`__usad` (sum of absolute difference), `__byte_perm`, the funnel shifts, and the
//! warp reductions and matches of compute capability 7.0 and 8.0 (`__reduce_add_sync`,
//! `__match_any_sync`), which become one warp instruction each. An argument used more than once
//! is held in a hidden local first, so it is evaluated once, as in the call it stands for.

use super::*;

impl Fx<'_> {
    /// One of the intrinsics here, or `None` when `name` is none of them.
    pub(super) fn bit_intrinsic(&mut self, name: &str, args: &[syntax::Expr], span: Span) -> CResult<Option<Expr>> {
        use Scalar::{I32, U32, U64};
        let u64c = |v: u64| int_const(v, U64, span);
        Ok(Some(match name {
            // |x - y| + z, in the arguments' own signedness.
            "__sad" | "__usad" => {
                self.arity(name, args, 3, 3, span, &format!("{name}(x, y, z)"))?;
                let ty = if name == "__sad" { I32 } else { U32 };
                let x = self.number_arg(&args[0], ty, name)?;
                let y = self.number_arg(&args[1], ty, name)?;
                let z = self.number_arg(&args[2], U32, name)?;
                let (set_x, x) = self.hold(x, name);
                let (set_y, y) = self.hold(y, name);
                let greater = self.binary(BinaryOp::Gt, x.clone(), y.clone(), span)?;
                let x_y = self.binary(BinaryOp::Sub, scalar_cast(x.clone(), U32), scalar_cast(y.clone(), U32), span)?;
                let y_x = self.binary(BinaryOp::Sub, scalar_cast(y, U32), scalar_cast(x, U32), span)?;
                let diff = Expr {
                    kind: ExprKind::Cond {
                        cond: Box::new(scalar_cast(greater, Scalar::Bool)),
                        then: Box::new(x_y),
                        else_: Box::new(y_x),
                    },
                    ty: Type::Scalar(U32),
                    span,
                };
                let sum = self.binary(BinaryOp::Add, diff, z, span)?;
                comma(set_x, comma(set_y, sum))
            }
            // Byte i of the result is byte `(s >> 4i) & 7` of the eight bytes y:x.
            "__byte_perm" => {
                self.arity(name, args, 3, 3, span, "__byte_perm(x, y, s)")?;
                let x = scalar_cast(self.number_arg(&args[0], U32, name)?, U64);
                let y = scalar_cast(self.number_arg(&args[1], U32, name)?, U64);
                let s = self.number_arg(&args[2], U32, name)?;
                let high = self.binary(BinaryOp::Shl, y, u64c(32), span)?;
                let both = self.binary(BinaryOp::BitOr, high, x, span)?;
                let (set_v, v) = self.hold(both, name);
                let (set_s, s) = self.hold(scalar_cast(s, U64), name);
                let mut out: Option<Expr> = None;
                for i in 0..4u64 {
                    let nibble = self.binary(BinaryOp::Shr, s.clone(), u64c(4 * i), span)?;
                    let which = self.binary(BinaryOp::BitAnd, nibble, u64c(7), span)?;
                    let bits = self.binary(BinaryOp::Mul, which, u64c(8), span)?;
                    let moved = self.binary(BinaryOp::Shr, v.clone(), bits, span)?;
                    let byte = self.binary(BinaryOp::BitAnd, moved, u64c(0xff), span)?;
                    let placed = self.binary(BinaryOp::Shl, byte, u64c(8 * i), span)?;
                    out = Some(match out {
                        None => placed,
                        Some(o) => self.binary(BinaryOp::BitOr, o, placed, span)?,
                    });
                }
                let out = scalar_cast(out.expect("four bytes"), U32);
                comma(set_v, comma(set_s, out))
            }
            // The 64 bits hi:lo shifted, and 32 of them kept: the high half after a left shift,
            // the low half after a right one. The shift is taken modulo 32 (`_l`, `_r`) or
            // clamped to 32 (`_lc`, `_rc`).
            "__funnelshift_l" | "__funnelshift_lc" | "__funnelshift_r" | "__funnelshift_rc" => {
                self.arity(name, args, 3, 3, span, &format!("{name}(lo, hi, shift)"))?;
                let lo = scalar_cast(self.number_arg(&args[0], U32, name)?, U64);
                let hi = scalar_cast(self.number_arg(&args[1], U32, name)?, U64);
                let shift = self.number_arg(&args[2], U32, name)?;
                let shift = if name.ends_with('c') {
                    let limit = int_const(32, U32, span);
                    let kind = ExprKind::Intrinsic { which: Intrinsic::Min { ty: U32 }, args: vec![shift, limit] };
                    Expr { kind, ty: Type::Scalar(U32), span }
                } else {
                    self.binary(BinaryOp::BitAnd, shift, int_const(31, U32, span), span)?
                };
                let shift = scalar_cast(shift, U64);
                let high = self.binary(BinaryOp::Shl, hi, u64c(32), span)?;
                let both = self.binary(BinaryOp::BitOr, high, lo, span)?;
                let out = if name.starts_with("__funnelshift_l") {
                    let moved = self.binary(BinaryOp::Shl, both, shift, span)?;
                    self.binary(BinaryOp::Shr, moved, u64c(32), span)?
                } else {
                    self.binary(BinaryOp::Shr, both, shift, span)?
                };
                scalar_cast(out, U32)
            }
            "__reduce_add_sync" | "__reduce_min_sync" | "__reduce_max_sync" | "__reduce_and_sync"
            | "__reduce_or_sync" | "__reduce_xor_sync" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(0xffffffff, value)"))?;
                let mask = self.number_arg(&args[0], U32, name)?;
                let v = self.value_expr(&args[1])?;
                let given = self.integer(&v, name)?;
                let op = match name {
                    "__reduce_add_sync" => WarpReduceOp::Add,
                    "__reduce_min_sync" => WarpReduceOp::Min,
                    "__reduce_max_sync" => WarpReduceOp::Max,
                    "__reduce_and_sync" => WarpReduceOp::And,
                    "__reduce_or_sync" => WarpReduceOp::Or,
                    _ => WarpReduceOp::Xor,
                };
                // `add`, `min` and `max` have an `int` and an `unsigned` form; the bitwise
                // ones only `unsigned`.
                let signed =
                    promote(given) == I32 && matches!(op, WarpReduceOp::Add | WarpReduceOp::Min | WarpReduceOp::Max);
                let ty = if signed { I32 } else { U32 };
                let kind = ExprKind::Intrinsic {
                    which: Intrinsic::WarpReduce { op, ty },
                    args: vec![mask, scalar_cast(v, ty)],
                };
                Expr { kind, ty: Type::Scalar(ty), span }
            }
            "__match_any_sync" | "__match_all_sync" => {
                let all = name == "__match_all_sync";
                let usage = if all {
                    "__match_all_sync(0xffffffff, value, &pred)"
                } else {
                    "__match_any_sync(0xffffffff, value)"
                };
                let n = if all { 3 } else { 2 };
                self.arity(name, args, n, n, span, usage)?;
                let mask = self.number_arg(&args[0], U32, name)?;
                let v = self.value_expr(&args[1])?;
                let ty = promote(self.arith(&v, name)?);
                let which = if all { Intrinsic::MatchAll } else { Intrinsic::MatchAny };
                let kind = ExprKind::Intrinsic { which, args: vec![mask, scalar_cast(v, ty)] };
                let lanes = Expr { kind, ty: Type::Scalar(U32), span };
                if !all {
                    return Ok(Some(lanes));
                }
                // The predicate goes through the pointer: true when every lane agreed.
                let p = self.value_expr(&args[2])?;
                let Some(Type::Scalar(pred_ty)) = p.ty.pointee().cloned() else {
                    return Err(err(
                        args[2].span,
                        "the third argument of `__match_all_sync` is where it stores its predicate",
                    )
                    .label(format!("this is `{}`", p.ty.c_name()))
                    .help("pass the address of an `int`: `int pred; __match_all_sync(mask, v, &pred);`"));
                };
                let (set, lanes) = self.hold(lanes, name);
                let agreed = self.binary(BinaryOp::Ne, lanes.clone(), int_const(0, U32, span), span)?;
                let target = Expr { kind: ExprKind::Deref(Box::new(p)), ty: Type::Scalar(pred_ty), span: args[2].span };
                let store = Expr {
                    kind: ExprKind::Assign { lhs: Box::new(target), rhs: Box::new(scalar_cast(agreed, pred_ty)) },
                    ty: Type::Scalar(pred_ty),
                    span,
                };
                comma(set, comma(store, lanes))
            }
            _ => return Ok(None),
        }))
    }

    /// A hidden local set to `e`: the assignment, to run first, and the local to read after it.
    fn hold(&mut self, e: Expr, func: &str) -> (Expr, Expr) {
        let id = self.locals.len() as LocalId;
        self.locals.push(LocalVar { name: format!("{func}'s argument"), ty: e.ty.clone(), span: e.span });
        self.local_const.push(false);
        let var = Expr { kind: ExprKind::Local(id), ty: e.ty.clone(), span: e.span };
        let set = Expr {
            kind: ExprKind::Assign { lhs: Box::new(var.clone()), rhs: Box::new(e) },
            ty: var.ty.clone(),
            span: var.span,
        };
        (set, var)
    }
}

/// `a, b`: `a` for its effect, then the value of `b`.
fn comma(a: Expr, b: Expr) -> Expr {
    Expr { span: b.span, ty: b.ty.clone(), kind: ExprKind::Comma { lhs: Box::new(a), rhs: Box::new(b) } }
}
