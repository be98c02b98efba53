//! The optimistic read of a compare-and-swap loop, read as the atomic load it stands for.
//!
//! The CUDA C Programming Guide's `atomicAdd` for `double`, and every float `atomicMax` built the
//! same way, first reads the old value with a plain load, then retries `atomicCAS` until no other
//! thread came between:
//!
//! ```c
//! unsigned long long old = *address_as_ull, assumed;
//! do { assumed = old; old = atomicCAS(address_as_ull, assumed, f(assumed)); } while (assumed != old);
//! ```
//!
//! The load may see a stale value; the CAS then fails and hands back the current one, so nothing
//! the loop computes depends on the load being ordered with other threads' updates. What the
//! load needs is what an atomic load gives: a whole value, never a torn one (an aligned 4- or
//! 8-byte load on a GPU is one). So in a function that CASes an element, a plain read of that same
//! element (through the same pointer expression and index, pointer casts aside, in a type of the
//! same size: `float old = *addr;` beside `atomicCAS((int *)addr, ...)`) is checked as the atomic
//! read `atomicOr(p, 0)`, its bits taken as the read's type (Numba's own CAS helpers read the
//! same way): it never races with the atomics, and a plain write of the element still races with
//! them. Reads of other elements, and plain writes, are untouched.

use crate::cuda::ast::{AtomicOp, Expr, ExprKind, Intrinsic, Scalar, Stmt, StmtKind, Type, UnaryOp};

/// Turn the plain reads of elements that `body` compare-and-swaps into atomic reads.
pub(super) fn atomic_reads_of_cas_places(body: &mut [Stmt]) {
    let mut places = Vec::new();
    for s in body.iter() {
        stmt_exprs(s, &mut |e| collect_cas(e, &mut places));
    }
    if places.is_empty() {
        return;
    }
    for s in body.iter_mut() {
        stmt_exprs_mut(s, &mut |e| rewrite(e, &places, true));
    }
}

/// An element as a pointer and an index (`None` for index 0: `*p` is `p[0]`).
#[derive(Clone)]
struct Place {
    ptr: Expr,
    index: Option<Expr>,
    ty: Scalar,
}

fn is_zero(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::IntConst(0) => true,
        ExprKind::Cast(inner) => is_zero(inner),
        _ => false,
    }
}

/// A pointer with its pointer casts taken off: `(int *)addr` is `addr`'s address.
fn uncast(p: &Expr) -> &Expr {
    match &p.kind {
        ExprKind::Cast(inner) if inner.ty.is_pointer() => uncast(inner),
        _ => p,
    }
}

/// The element an lvalue names, when it is one a pointer and index reach.
fn lvalue_place(e: &Expr) -> Option<(&Expr, Option<&Expr>)> {
    match &e.kind {
        ExprKind::Deref(p) => Some((uncast(p), None)),
        ExprKind::Index { base, index } => Some((uncast(base), (!is_zero(index)).then_some(&**index))),
        _ => None,
    }
}

/// The element a CAS's pointer argument points at.
fn pointer_place(p: &Expr) -> (&Expr, Option<&Expr>) {
    match &p.kind {
        ExprKind::AddrOf(inner) => lvalue_place(inner).unwrap_or((uncast(p), None)),
        _ => (uncast(p), None),
    }
}

fn collect_cas(e: &Expr, places: &mut Vec<Place>) {
    if let ExprKind::Intrinsic { which: Intrinsic::Atomic { op: AtomicOp::Cas, ty }, args } = &e.kind
        && let Some(p) = args.first()
        && pure(p)
    {
        let (ptr, index) = pointer_place(p);
        places.push(Place { ptr: ptr.clone(), index: index.cloned(), ty: *ty });
    }
    children(e, &mut |c| collect_cas(c, places));
}

/// Whether evaluating `e` changes nothing, so that two mentions of it name one place.
fn pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::IntConst(_) | ExprKind::FloatConst(_) | ExprKind::Local(_) | ExprKind::Mem(_) => true,
        ExprKind::Builtin(..) | ExprKind::WarpSize => true,
        ExprKind::Deref(x) | ExprKind::Decay(x) | ExprKind::AddrOf(x) | ExprKind::Cast(x) => pure(x),
        ExprKind::Member { base, .. } => pure(base),
        ExprKind::Unary { operand, .. } => pure(operand),
        ExprKind::Index { base: a, index: b }
        | ExprKind::Binary { lhs: a, rhs: b, .. }
        | ExprKind::PtrOffset { ptr: a, offset: b } => pure(a) && pure(b),
        _ => false,
    }
}

/// The same expression, spans aside.
fn same(a: &Expr, b: &Expr) -> bool {
    if a.ty != b.ty {
        return false;
    }
    match (&a.kind, &b.kind) {
        (ExprKind::IntConst(x), ExprKind::IntConst(y)) => x == y,
        (ExprKind::Local(x), ExprKind::Local(y)) => x == y,
        (ExprKind::Mem(x), ExprKind::Mem(y)) => x == y,
        (ExprKind::Builtin(v, x), ExprKind::Builtin(w, y)) => v == w && x == y,
        (ExprKind::WarpSize, ExprKind::WarpSize) => true,
        (ExprKind::Deref(x), ExprKind::Deref(y))
        | (ExprKind::Decay(x), ExprKind::Decay(y))
        | (ExprKind::AddrOf(x), ExprKind::AddrOf(y))
        | (ExprKind::Cast(x), ExprKind::Cast(y)) => same(x, y),
        (ExprKind::Member { base: x, field: f }, ExprKind::Member { base: y, field: g }) => f == g && same(x, y),
        (ExprKind::Unary { op: o, operand: x }, ExprKind::Unary { op: p, operand: y }) => o == p && same(x, y),
        (ExprKind::Binary { op: o, lhs: a, rhs: b }, ExprKind::Binary { op: p, lhs: c, rhs: d }) => {
            o == p && same(a, c) && same(b, d)
        }
        (ExprKind::Index { base: a, index: b }, ExprKind::Index { base: c, index: d })
        | (ExprKind::PtrOffset { ptr: a, offset: b }, ExprKind::PtrOffset { ptr: c, offset: d }) => {
            same(a, c) && same(b, d)
        }
        _ => false,
    }
}

fn matches_place(e: &Expr, places: &[Place]) -> Option<Scalar> {
    let (ptr, index) = lvalue_place(e)?;
    let ty = e.ty.scalar()?;
    places
        .iter()
        .find(|p| {
            p.ty.size() == ty.size()
                && same(&p.ptr, ptr)
                && match (&p.index, index) {
                    (None, None) => true,
                    (Some(a), Some(b)) => same(a, b),
                    _ => false,
                }
        })
        .map(|p| p.ty)
}

/// Rewrite the reads in `e`; `value` is false where `e` is a place written or whose address is
/// taken, not a value read.
fn rewrite(e: &mut Expr, places: &[Place], value: bool) {
    if value && let Some(ty) = matches_place(e, places) {
        let span = e.span;
        let place = std::mem::replace(e, Expr { kind: ExprKind::WarpSize, ty: Type::Void, span });
        let read = place.ty.scalar().expect("matches_place reads scalars");
        let ptr = match place.kind {
            ExprKind::Deref(p) => *p,
            kind => {
                let ty = Type::Ptr { pointee: Box::new(place.ty.clone()), is_const: false };
                Expr { kind: ExprKind::AddrOf(Box::new(Expr { kind, ..place })), ty, span }
            }
        };
        // Through a pointer of the CAS's type: `(int *)addr` for a `float` read.
        let cas_ptr = Type::Ptr { pointee: Box::new(Type::Scalar(ty)), is_const: false };
        let ptr = if ptr.ty == cas_ptr { ptr } else { Expr { kind: ExprKind::Cast(Box::new(ptr)), ty: cas_ptr, span } };
        let zero = Expr { kind: ExprKind::IntConst(0), ty: Type::Scalar(ty), span };
        let atomic = Expr {
            kind: ExprKind::Intrinsic { which: Intrinsic::Atomic { op: AtomicOp::Or, ty }, args: vec![ptr, zero] },
            ty: Type::Scalar(ty),
            span,
        };
        // The bits read, as the type the code read them in (`__int_as_float`).
        *e = if read == ty {
            atomic
        } else {
            Expr {
                kind: ExprKind::Unary { op: UnaryOp::Bits(read), operand: Box::new(atomic) },
                ty: Type::Scalar(read),
                span,
            }
        };
        return;
    }
    match &mut e.kind {
        ExprKind::Assign { lhs, rhs } => {
            rewrite_place(lhs, places);
            rewrite(rhs, places, true);
        }
        ExprKind::CompoundAssign { lhs, rhs, .. } => {
            // A read-modify-write of the element is plain on both sides: left as it is.
            rewrite_place(lhs, places);
            rewrite(rhs, places, true);
        }
        ExprKind::IncDec { lhs, .. } => rewrite_place(lhs, places),
        ExprKind::AddrOf(x) | ExprKind::Decay(x) => rewrite_place(x, places),
        ExprKind::Member { base, .. } => rewrite(base, places, value),
        _ => children_mut(e, &mut |c| rewrite(c, places, true)),
    }
}

/// A place: its own element is not read, but the values that locate it are.
fn rewrite_place(e: &mut Expr, places: &[Place]) {
    match &mut e.kind {
        ExprKind::Deref(p) => rewrite(p, places, true),
        ExprKind::Index { base, index } => {
            rewrite(base, places, true);
            rewrite(index, places, true);
        }
        ExprKind::Member { base, .. } => rewrite_place(base, places),
        _ => rewrite(e, places, false),
    }
}

/// Calls `$f` on each expression directly inside `$kind` (`&e.kind` or `&mut e.kind`, with
/// `$iter` `iter` or `iter_mut`): one list of the tree's shapes for both walks.
macro_rules! each_child {
    ($kind:expr, $f:expr, $iter:ident) => {
        match $kind {
            ExprKind::IntConst(_)
            | ExprKind::FloatConst(_)
            | ExprKind::Local(_)
            | ExprKind::Mem(_)
            | ExprKind::Builtin(..)
            | ExprKind::WarpSize => {}
            ExprKind::Deref(x)
            | ExprKind::Decay(x)
            | ExprKind::AddrOf(x)
            | ExprKind::Cast(x)
            | ExprKind::Unary { operand: x, .. }
            | ExprKind::Member { base: x, .. } => $f(x),
            ExprKind::Index { base: a, index: b }
            | ExprKind::Binary { lhs: a, rhs: b, .. }
            | ExprKind::PtrOffset { ptr: a, offset: b }
            | ExprKind::PtrDiff { lhs: a, rhs: b }
            | ExprKind::Assign { lhs: a, rhs: b }
            | ExprKind::CompoundAssign { lhs: a, rhs: b, .. }
            | ExprKind::Comma { lhs: a, rhs: b } => {
                $f(a);
                $f(b);
            }
            ExprKind::IncDec { lhs, .. } => $f(lhs),
            ExprKind::Cond { cond, then, else_ } => {
                $f(cond);
                $f(then);
                $f(else_);
            }
            ExprKind::Call { args, .. }
            | ExprKind::Intrinsic { args, .. }
            | ExprKind::Printf { args, .. }
            | ExprKind::StructLit(args) => args.$iter().for_each($f),
        }
    };
}

fn children(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    each_child!(&e.kind, f, iter)
}

fn children_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    each_child!(&mut e.kind, f, iter_mut)
}

/// Calls `$f` on every expression statement `$s` holds, nested statements included, walking
/// them with `$walk` (`$iter` `iter` or `iter_mut`): one list of the statements' shapes for
/// both walks, as `each_child!` is for expressions.
macro_rules! each_stmt_expr {
    ($kind:expr, $f:expr, $walk:ident, $iter:ident) => {
        match $kind {
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => $f(e),
            StmtKind::Decl { init, .. } => init.$iter().for_each($f),
            StmtKind::ArrayDecl { init, .. } => init.$iter().flatten().for_each($f),
            StmtKind::If { cond, then, else_ } => {
                $f(cond);
                $walk(then, $f);
                if let Some(e) = else_ {
                    $walk(e, $f);
                }
            }
            StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
                $f(cond);
                $walk(body, $f);
            }
            StmtKind::Switch { value, body, .. } => {
                $f(value);
                body.$iter().for_each(|s| $walk(s, $f));
            }
            StmtKind::For { init, cond, step, body } => {
                if let Some(i) = init {
                    $walk(i, $f);
                }
                cond.$iter().for_each(&mut *$f);
                step.$iter().for_each(&mut *$f);
                $walk(body, $f);
            }
            StmtKind::Block(b) => b.$iter().for_each(|s| $walk(s, $f)),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) | StmtKind::Empty => {}
        }
    };
}

/// Every expression a statement holds at its top level, nested statements included.
fn stmt_exprs(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    each_stmt_expr!(&s.kind, f, stmt_exprs, iter)
}

fn stmt_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    each_stmt_expr!(&mut s.kind, f, stmt_exprs_mut, iter_mut)
}
