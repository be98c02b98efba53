//! `expect COND`: evaluate a condition and, when it fails, say what failed with values, quoting
//! the learner's own sub-expressions.
//!
//! Messages:
//! - `expect a == 0.5` (array): `3 of 1000 elements differ: a[0] = 0 (expected 0.5), ...`
//!   (the first 5 mismatches);
//! - `expect all(a > 0)`: `a > 0 is false at 2 of 10 elements: a[3] = -1, a[5] = 0`;
//! - scalars: `sum(a) = 9.5, expected ~= 10`, and `n = 3, expected == m (m = 4)` when the right
//!   side isn't a literal;
//! - `and` reports its first failing side; `or` both.

use crate::buffer::Shape;
use crate::diag::Diagnostic;

use super::super::ast::{BinOp, Expr, ExprKind};
use super::numpy::{V, b_lane};
use super::{Cx, Env};
use crate::diag::text::thousands;
use crate::value::{Array, Data, format_num};

/// How many failing elements a message lists.
const SHOWN: usize = 5;

#[derive(Clone, Debug, PartialEq)]
pub struct ExpectOutcome {
    pub passed: bool,
    /// What failed, with values; empty when passed.
    pub message: String,
    /// The values the message shows as wrong (`1.5` in `a[1] = 1.5 (expected 0.5)`), in its
    /// order: what a check traces back to the kernel (a constant of its own, say).
    pub wrong: Vec<f64>,
}

impl ExpectOutcome {
    fn pass() -> ExpectOutcome {
        ExpectOutcome { passed: true, message: String::new(), wrong: Vec::new() }
    }

    fn fail(message: String) -> ExpectOutcome {
        ExpectOutcome { passed: false, message, wrong: Vec::new() }
    }
}

/// Evaluate `expect EXPR`. A condition that isn't boolean is an error, not a failure.
pub fn eval_expect(expr: &Expr, env: &dyn Env, src: &str) -> Result<ExpectOutcome, Diagnostic> {
    check(&Cx::new(env, src), expr)
}

fn check(cx: &Cx, e: &Expr) -> Result<ExpectOutcome, Diagnostic> {
    match &e.kind {
        ExprKind::Binary { op: BinOp::And, lhs, rhs, .. } => {
            let a = check(cx, lhs)?;
            if !a.passed {
                return Ok(a);
            }
            check(cx, rhs)
        }
        ExprKind::Binary { op: BinOp::Or, lhs, rhs, .. } => {
            let a = check(cx, lhs)?;
            if a.passed {
                return Ok(a);
            }
            let b = check(cx, rhs)?;
            if b.passed {
                return Ok(b);
            }
            Ok(ExpectOutcome::fail(format!("neither side holds: {}; {}", a.message, b.message)))
        }
        ExprKind::Binary { op, op_span, lhs, rhs } if op.is_comparison() => {
            let (l, r) = cx.eval_pair(lhs, rhs)?;
            let res = cx.binary(*op, *op_span, &l, &r, lhs, rhs, e)?;
            Ok(compared(cx, *op, e, (lhs, &l), (rhs, &r), &res))
        }
        ExprKind::Call { func, args, kwargs, .. } if func == "all" && args.len() == 1 && kwargs.is_empty() => {
            let cond = &args[0];
            if let ExprKind::Binary { op, .. } = &cond.kind
                && (op.is_comparison() || matches!(op, BinOp::And | BinOp::Or))
            {
                return check(cx, cond);
            }
            let v = cx.eval(cond)?;
            truth(cx, cond, &v)
        }
        ExprKind::Call { func, args, kwargs, .. } if func == "any" && args.len() == 1 && kwargs.is_empty() => {
            let cond = &args[0];
            let v = cx.eval(cond)?;
            if let V::Arr(a) = &v {
                let lane = b_lane(&v);
                return Ok(if (0..a.len()).any(|i| lane.at(i)) {
                    ExpectOutcome::pass()
                } else {
                    ExpectOutcome::fail(format!("{} is false at all {} elements", cx.text(cond), a.len()))
                });
            }
            truth(cx, cond, &v)
        }
        _ => {
            let v = cx.eval(e)?;
            truth(cx, e, &v)
        }
    }
}

/// A condition without a comparison to explain: a boolean scalar or array.
fn truth(cx: &Cx, e: &Expr, v: &V) -> Result<ExpectOutcome, Diagnostic> {
    Ok(match v {
        V::Bool(true) => ExpectOutcome::pass(),
        V::Bool(false) => ExpectOutcome::fail(format!("{} is false", cx.text(e))),
        V::Arr(a) if a.dtype().is_none() => {
            let Data::Bool(b) = a.data() else { unreachable!("boolean arrays hold booleans") };
            let failing: Vec<usize> = (0..b.len()).filter(|&i| !b[i]).collect();
            if failing.is_empty() {
                return Ok(ExpectOutcome::pass());
            }
            let at: Vec<String> = failing.iter().take(SHOWN).map(|&i| position(a.shape(), i)).collect();
            ExpectOutcome::fail(format!(
                "{} is false at {} of {} elements: at {}{}",
                cx.text(e),
                thousands(failing.len() as u64),
                thousands(b.len() as u64),
                at.join(", "),
                if failing.len() > SHOWN { ", ..." } else { "" }
            ))
        }
        _ => return Err(not_boolean(cx, e, v)),
    })
}

fn not_boolean(cx: &Cx, e: &Expr, v: &V) -> Diagnostic {
    Diagnostic::error(format!("`expect` needs a condition, but `{}` is {}", cx.text(e), v.type_name()))
        .at(e.span)
        .help(format!("compare it, e.g. `expect all({0} == 0.5)` or `expect {0} == 4`", cx.text(e)))
}

/// `[3]` or `[1, 2]` for element `i` of an array of `shape`.
fn position(shape: Shape, i: usize) -> String {
    match shape {
        Shape::D2(_, c) if c > 0 => format!("[{}, {}]", i / c, i % c),
        _ => format!("[{i}]"),
    }
}

/// `a` stays `a`; `a + b` becomes `(a + b)` before an index is appended.
fn indexable(cx: &Cx, e: &Expr) -> String {
    let t = cx.text(e);
    match e.kind {
        ExprKind::Name(_) | ExprKind::Index { .. } | ExprKind::Call { .. } => t.to_string(),
        _ if t.starts_with('(') && t.ends_with(')') => t.to_string(),
        _ => format!("({t})"),
    }
}

fn element(a: &Array<'_>, i: usize) -> String {
    format_num(a.num(i), a.dtype())
}

fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => true,
        ExprKind::Unary { operand, .. } => is_literal(operand),
        _ => false,
    }
}

fn compared(cx: &Cx, op: BinOp, whole: &Expr, (le, l): (&Expr, &V), (re, r): (&Expr, &V), res: &V) -> ExpectOutcome {
    let eqish = matches!(op, BinOp::Eq | BinOp::Approx);
    match res {
        V::Bool(true) => ExpectOutcome::pass(),
        V::Bool(_) => {
            let mut m = format!("{} = {}, expected {} {}", cx.text(le), l.show(), op.symbol(), cx.text(re));
            if !is_literal(re) {
                m.push_str(&format!(" ({} = {})", cx.text(re), r.show()));
            }
            ExpectOutcome::fail(m)
        }
        V::Arr(res) => {
            let Data::Bool(ok) = res.data() else { unreachable!("comparisons give booleans") };
            let failing: Vec<usize> = (0..ok.len()).filter(|&i| !ok[i]).collect();
            if failing.is_empty() {
                return ExpectOutcome::pass();
            }
            let (la, ra) = (arr(l), arr(r));
            let both = la.is_some() && ra.is_some();
            // The side shown against an expectation holds the wrong values.
            let wrong: Vec<f64> = match (la, ra) {
                (Some(a), _) if eqish => failing.iter().take(SHOWN).map(|&i| a.num(i).as_f64()).collect(),
                (None, Some(b)) if eqish => failing.iter().take(SHOWN).map(|&i| b.num(i).as_f64()).collect(),
                _ => Vec::new(),
            };
            let items: Vec<String> = failing
                .iter()
                .take(SHOWN)
                .map(|&i| {
                    let pos = position(res.shape(), i);
                    let side = |e: &Expr, a: &Array<'_>| format!("{}{pos} = {}", indexable(cx, e), element(a, i));
                    match (la, ra) {
                        (Some(a), Some(b)) if eqish => format!("{} (expected {})", side(le, a), element(b, i)),
                        (Some(a), Some(b)) => format!("{}, {}", side(le, a), side(re, b)),
                        (Some(a), None) if eqish => format!("{} (expected {})", side(le, a), r.show()),
                        (Some(a), None) => side(le, a),
                        (None, Some(b)) if eqish => format!("{} (expected {})", side(re, b), l.show()),
                        (None, Some(b)) => side(re, b),
                        (None, None) => String::new(),
                    }
                })
                .collect();
            let more = if failing.len() > SHOWN { ", ..." } else { "" };
            let sep = if both && !eqish { "; " } else { ", " };
            let head = if eqish {
                format!("{} of {} elements differ", thousands(failing.len() as u64), thousands(ok.len() as u64))
            } else {
                format!(
                    "{} is false at {} of {} elements",
                    cx.text(whole),
                    thousands(failing.len() as u64),
                    thousands(ok.len() as u64)
                )
            };
            ExpectOutcome { wrong, ..ExpectOutcome::fail(format!("{head}: {}{more}", items.join(sep))) }
        }
        _ => ExpectOutcome::fail(String::new()),
    }
}

fn arr<'v>(v: &'v V<'_>) -> Option<&'v Array<'v>> {
    if let V::Arr(a) = v { Some(a) } else { None }
}
