//! Forward `goto`, written as the structured code it stands for before the checker reads it.
//!
//! C's `goto` is mostly used to leave nested loops at once (`goto found;`) or to jump ahead to
//! a function's cleanup. Where the label comes after the `goto` in a block around it, the jump
//! is a flag and breaks: `goto found;` sets a hidden `int` flag and leaves its loops (`break`,
//! then `if (flag) break;` after each inner loop or `switch` it was in), the statements between
//! the way out and the label run only `if (!flag)`, and the label clears the flag (so a label
//! inside a loop works on every pass). The simulator then runs plain structured code, with its
//! own reconvergence, as a GPU would after the jump. A `goto` backwards, or into a block, is
//! refused naming the construct (the GPU backend runs it); one whose label is missing is the
//! learner's mistake.

use super::ast::Scalar;
use super::syntax::{Decl, Declarator, Expr, ExprKind, Init, Stmt, StmtKind, Storage, SwitchPart, TypeName};
use crate::diag::{Diagnostic, Span};

/// `body` with every `goto` written out (unchanged when it has none).
pub fn lower(body: &[Stmt]) -> Result<Vec<Stmt>, Diagnostic> {
    let mut gotos = Vec::new();
    body.iter().for_each(|s| collect(s, &mut gotos));
    if gotos.is_empty() {
        return Ok(body.to_vec());
    }
    let mut body = body.to_vec();
    let mut flags = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for (label, span) in &gotos {
        if done.contains(&label.as_str()) {
            continue;
        }
        done.push(label);
        let flag = format!("__goto_{label}");
        if !place(&mut body, label, &flag, *span)? {
            return Err(Diagnostic::error(format!("there is no label `{label}` in this function"))
                .at(*span)
                .label("jumps nowhere")
                .help(format!("put `{label}:` before the statement the jump goes to")));
        }
        let mut left = Vec::new();
        body.iter().for_each(|s| collect(s, &mut left));
        if let Some((_, at)) = left.iter().find(|(l, _)| l == label) {
            return Err(refused(*at, "a `goto` into a block"));
        }
        flags.push(declare(&flag, *span));
    }
    flags.extend(body);
    Ok(flags)
}

fn refused(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(format!("{what} is not supported by the simulator"))
        .at(span)
        .label("not supported")
        .help("the simulator runs a `goto` forward to a label later in a block around it (out of loops, to a cleanup); write the loop with `break`/`continue` or a flag")
        .outside_subset(what.to_string())
}

/// Every `goto` in `s`: its label and where it is.
fn collect(s: &Stmt, out: &mut Vec<(String, Span)>) {
    match &s.kind {
        StmtKind::Goto(l) => out.push((l.clone(), s.span)),
        _ => children(s, &mut |c| collect(c, out)),
    }
}

fn children(s: &Stmt, f: &mut dyn FnMut(&Stmt)) {
    match &s.kind {
        StmtKind::Block(v) => v.iter().for_each(f),
        StmtKind::If(_, a, b) => {
            f(a);
            if let Some(b) = b {
                f(b);
            }
        }
        StmtKind::While(_, b) | StmtKind::DoWhile(b, _) | StmtKind::For { body: b, .. } | StmtKind::Labeled(_, b) => {
            f(b)
        }
        StmtKind::Switch(_, parts) => parts.iter().for_each(|p| {
            if let SwitchPart::Stmt(s) = p {
                f(s)
            }
        }),
        _ => {}
    }
}

fn jumps_to(s: &Stmt, label: &str) -> bool {
    let mut found = Vec::new();
    collect(s, &mut found);
    found.iter().any(|(l, _)| l == label)
}

fn is_label(s: &Stmt, label: &str) -> bool {
    matches!(&s.kind, StmtKind::Labeled(l, _) if l == label)
}

/// Find `label` in `stmts` (or in a block inside them) and write out the jumps to it that come
/// before it in its block. Whether the label was found.
fn place(stmts: &mut Vec<Stmt>, label: &str, flag: &str, at: Span) -> Result<bool, Diagnostic> {
    if let Some(j) = stmts.iter().position(|s| is_label(s, label)) {
        if let Some(back) = stmts[j..].iter().find(|s| jumps_to(s, label)) {
            let mut found = Vec::new();
            collect(back, &mut found);
            let span = found.iter().find(|(l, _)| l == label).map_or(back.span, |(_, s)| *s);
            return Err(refused(span, "a backward `goto`"));
        }
        let rest = stmts.split_off(j);
        let before = std::mem::take(stmts);
        *stmts = sequence(before, label, flag, false);
        let mut rest = rest.into_iter();
        let Some(Stmt { kind: StmtKind::Labeled(_, target), span }) = rest.next() else { unreachable!("found above") };
        // Reaching the label, by the jump or in order, clears the flag.
        stmts.push(set(flag, 0, span));
        stmts.push(*target);
        stmts.extend(rest);
        return Ok(true);
    }
    for s in stmts.iter_mut() {
        if place_in(s, label, flag, at)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn place_in(s: &mut Stmt, label: &str, flag: &str, at: Span) -> Result<bool, Diagnostic> {
    // A statement that is not a block is a block of one, so a label on a loop body is found.
    let one = |s: &mut Box<Stmt>| -> Result<bool, Diagnostic> {
        let mut v = vec![(**s).clone()];
        let found = place(&mut v, label, flag, at)?;
        if found {
            **s = if v.len() == 1 { v.pop().expect("one") } else { Stmt { span: s.span, kind: StmtKind::Block(v) } };
        }
        Ok(found)
    };
    match &mut s.kind {
        StmtKind::Block(v) => place(v, label, flag, at),
        StmtKind::If(_, a, b) => Ok(one(a)? || if let Some(b) = b { one(b)? } else { false }),
        StmtKind::While(_, b) | StmtKind::DoWhile(b, _) | StmtKind::For { body: b, .. } | StmtKind::Labeled(_, b) => {
            one(b)
        }
        StmtKind::Switch(_, parts) => {
            // The statements of a switch are one block (its labels aside).
            for p in parts.iter_mut() {
                if let SwitchPart::Stmt(s) = p
                    && place_in(s, label, flag, at)?
                {
                    return Ok(true);
                }
            }
            if parts.iter().any(|p| matches!(p, SwitchPart::Stmt(s) if is_label(s, label))) {
                return Err(refused(at, "a `goto` to a label in a `switch`"));
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// The statements before the label, with their jumps to it written out. `in_loop`: a loop or
/// `switch` around them (inside the label's block), which a `break` leaves.
fn sequence(stmts: Vec<Stmt>, label: &str, flag: &str, in_loop: bool) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut it = stmts.into_iter();
    while let Some(s) = it.next() {
        if !jumps_to(&s, label) {
            out.push(s);
            continue;
        }
        let span = s.span;
        let breakable =
            matches!(s.kind, StmtKind::While(..) | StmtKind::DoWhile(..) | StmtKind::For { .. } | StmtKind::Switch(..));
        out.push(rewrite(s, label, flag, in_loop));
        let rest: Vec<Stmt> = it.collect();
        if in_loop {
            // Out of the inner loop: leave this one too.
            if breakable {
                out.push(if_flag(flag, true, Stmt { kind: StmtKind::Break, span }, span));
            }
            out.extend(sequence(rest, label, flag, in_loop));
        } else if !rest.is_empty() {
            let guarded = Stmt { kind: StmtKind::Block(sequence(rest, label, flag, in_loop)), span };
            out.push(if_flag(flag, false, guarded, span));
        }
        break;
    }
    out
}

fn rewrite(s: Stmt, label: &str, flag: &str, in_loop: bool) -> Stmt {
    let span = s.span;
    let kind = match s.kind {
        StmtKind::Goto(l) if l == label => {
            if in_loop {
                StmtKind::Block(vec![set(flag, 1, span), Stmt { kind: StmtKind::Break, span }])
            } else {
                return set(flag, 1, span);
            }
        }
        StmtKind::Block(v) => StmtKind::Block(sequence(v, label, flag, in_loop)),
        StmtKind::If(c, a, b) => StmtKind::If(
            c,
            Box::new(rewrite(*a, label, flag, in_loop)),
            b.map(|b| Box::new(rewrite(*b, label, flag, in_loop))),
        ),
        StmtKind::While(c, b) => StmtKind::While(c, Box::new(rewrite(*b, label, flag, true))),
        StmtKind::DoWhile(b, c) => StmtKind::DoWhile(Box::new(rewrite(*b, label, flag, true)), c),
        StmtKind::For { init, cond, step, body } => {
            StmtKind::For { init, cond, step, body: Box::new(rewrite(*body, label, flag, true)) }
        }
        StmtKind::Labeled(l, b) => StmtKind::Labeled(l, Box::new(rewrite(*b, label, flag, in_loop))),
        StmtKind::Switch(v, parts) => {
            let mut out = Vec::new();
            for p in parts {
                match p {
                    SwitchPart::Stmt(s) if jumps_to(&s, label) => {
                        let span = s.span;
                        let breakable = matches!(
                            s.kind,
                            StmtKind::While(..) | StmtKind::DoWhile(..) | StmtKind::For { .. } | StmtKind::Switch(..)
                        );
                        out.push(SwitchPart::Stmt(rewrite(s, label, flag, true)));
                        if breakable {
                            out.push(SwitchPart::Stmt(if_flag(flag, true, Stmt { kind: StmtKind::Break, span }, span)));
                        }
                    }
                    p => out.push(p),
                }
            }
            StmtKind::Switch(v, out)
        }
        k => k,
    };
    Stmt { kind, span }
}

fn name(flag: &str, span: Span) -> Expr {
    Expr { kind: ExprKind::Name(flag.to_string()), span }
}

/// `flag = v;`
fn set(flag: &str, v: u64, span: Span) -> Stmt {
    let value = Expr { kind: ExprKind::Int(v, Scalar::I32), span };
    let e = Expr { kind: ExprKind::Assign(None, Box::new(name(flag, span)), Box::new(value)), span };
    Stmt { kind: StmtKind::Expr(e), span }
}

/// `if (flag) s` (`when`) or `if (!flag) s`.
fn if_flag(flag: &str, when: bool, s: Stmt, span: Span) -> Stmt {
    let test = if when {
        name(flag, span)
    } else {
        Expr { kind: ExprKind::Unary(super::syntax::UnOp::LogNot, Box::new(name(flag, span))), span }
    };
    Stmt { kind: StmtKind::If(test, Box::new(s), None), span }
}

/// `int flag = 0;`
fn declare(flag: &str, span: Span) -> Stmt {
    let ty = TypeName::scalar(Scalar::I32, span);
    let init = Some(Init::Expr(Expr { kind: ExprKind::Int(0, Scalar::I32), span }));
    let declarator = Declarator { name: flag.to_string(), name_span: span, ptrs: Vec::new(), dims: Vec::new(), init };
    Stmt { kind: StmtKind::Decl(Decl { storage: Storage::Auto, ty, declarators: vec![declarator], span }), span }
}
