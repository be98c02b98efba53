//! C's types in the checker: resolving written type names, promotions and the usual
//! arithmetic conversions, casts and lvalues.

use super::*;

/// The type a [`TypeName`] plus a declarator's extra `*`s spell (arrays are added separately).
pub(super) fn resolve_type(tn: &TypeName, extra_ptrs: &[bool]) -> Type {
    tn.resolve(extra_ptrs)
}

/// `auto` deduces a variable's type from its initialiser; anywhere else (a parameter, a return
/// type, a cast) there is nothing to deduce from.
pub(super) fn refuse_auto(tn: &TypeName, what: &str) -> CResult<()> {
    if tn.auto {
        return Err(Diagnostic::error(format!("`auto` cannot be {what}"))
            .at(tn.span)
            .label("nothing to deduce the type from")
            .help("write the type, e.g. `float`; `auto` works for a variable with a value, `auto x = a[i];`"));
    }
    Ok(())
}

/// Whether the declared object itself is `const` (`const int x`, `float *const p`).
pub(super) fn object_const(tn: &TypeName, extra_ptrs: &[bool]) -> bool {
    match tn.ptrs.iter().chain(extra_ptrs).last() {
        Some(&c) => c,
        None => tn.is_const,
    }
}

pub(super) fn promote(s: Scalar) -> Scalar {
    match s {
        Scalar::Bool | Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16 => Scalar::I32,
        s => s,
    }
}

/// C's usual arithmetic conversions.
pub fn usual(a: Scalar, b: Scalar) -> Scalar {
    if a == Scalar::F64 || b == Scalar::F64 {
        return Scalar::F64;
    }
    if a == Scalar::F32 || b == Scalar::F32 {
        return Scalar::F32;
    }
    let (a, b) = (promote(a), promote(b));
    if a == b {
        return a;
    }
    let rank = |s: Scalar| if s.size() == 8 { 2 } else { 1 };
    let (s, u) = if a.is_signed() { (a, b) } else { (b, a) };
    if s.is_signed() == u.is_signed() {
        return if rank(a) >= rank(b) { a } else { b };
    }
    if rank(u) >= rank(s) {
        u
    } else {
        // Only `long long` vs `unsigned int` gets here: the signed type holds every value.
        s
    }
}

pub(super) fn cast(e: Expr, ty: &Type) -> Expr {
    if &e.ty == ty {
        return e;
    }
    Expr { span: e.span, ty: ty.clone(), kind: ExprKind::Cast(Box::new(e)) }
}

pub(super) fn scalar_cast(e: Expr, s: Scalar) -> Expr {
    cast(e, &Type::Scalar(s))
}

pub(super) fn int_const(v: u64, s: Scalar, span: Span) -> Expr {
    Expr { kind: ExprKind::IntConst(v), ty: Type::Scalar(s), span }
}

pub(super) fn is_lvalue(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Member { base, .. } => is_lvalue(base),
        k => matches!(k, ExprKind::Local(_) | ExprKind::Mem(_) | ExprKind::Deref(_) | ExprKind::Index { .. }),
    }
}

pub(super) fn pointee_compatible(from: &Type, to: &Type) -> bool {
    match (from, to) {
        (Type::Ptr { pointee: a, is_const: ca }, Type::Ptr { pointee: b, is_const: cb }) => {
            (!ca || *cb) && (a == b || **b == Type::Void)
        }
        _ => false,
    }
}
