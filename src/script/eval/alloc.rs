//! Allocation accounting: every array a statement makes (its result and each temporary on the
//! way) is charged against one limit, `--max-alloc` less the session's buffers, before it is
//! allocated, and given back once it is no longer needed, so a statement that would exhaust
//! the machine is refused with the bytes it needs instead of taking the machine down.

use crate::buffer::{Buffer, Shape};
use crate::diag::{Diagnostic, Span};
use crate::dtype::DType;
use crate::script::ast::Expr;

use super::Cx;
use super::numpy::V;

impl<'a> Cx<'a> {
    /// Count `bytes` of a new array made for `e` against the limit, or say why it cannot be.
    pub(super) fn charge(&self, e: &Expr, bytes: u64) -> Result<(), Diagnostic> {
        self.charge_span(e.span, bytes)
    }

    fn charge_span(&self, span: Span, bytes: u64) -> Result<(), Diagnostic> {
        let left = self.left.get();
        if bytes > left {
            let text = self.text_span(span);
            let total = self.env.max_alloc_bytes();
            let what = if left == total {
                format!("{text} needs {}, but only {} of the buffer limit is left", human(bytes), human(left))
            } else {
                format!(
                    "{text} needs {} more, but only {} of the buffer limit is left after the arrays this statement made on the way",
                    human(bytes),
                    human(left)
                )
            };
            return Err(Diagnostic::error(what).at(span).help(format!("{LIMIT_HELP}, or work on a slice")));
        }
        self.left.set(left - bytes);
        Ok(())
    }

    /// An operand that is no longer needed gives back what it was charged.
    pub(super) fn release(&self, v: &V<'_>) {
        if let V::Arr(a) = v
            && !a.is_borrowed()
        {
            self.left.set(self.left.get().saturating_add(a.size_bytes()));
        }
    }

    /// A zeroed buffer for the result of `e`, charged against the limit.
    pub(super) fn new_buffer(&self, e: &Expr, dtype: DType, shape: Shape) -> Result<Buffer, Diagnostic> {
        self.charge(e, shape.len() as u64 * dtype.size() as u64)?;
        Ok(Buffer::zeros(dtype, shape))
    }

    /// Room for `n` booleans for the result of `e`, charged against the limit.
    pub(super) fn new_bools(&self, e: &Expr, n: usize) -> Result<Vec<bool>, Diagnostic> {
        self.charge(e, n as u64)?;
        Ok(Vec::with_capacity(n))
    }

    /// A constructor's `n` elements of `dtype`, counted against the limit before anything is
    /// allocated (the array is all that is made: it becomes the buffer without a copy).
    pub(super) fn check_alloc(&self, span: Span, dtype: DType, n: usize) -> Result<(), Diagnostic> {
        let bytes = n as u128 * dtype.size() as u128;
        let limit = self.left.get();
        if bytes > limit as u128 {
            return Err(Diagnostic::error(format!(
                "{} asks for {}, but only {} of the buffer limit is left",
                self.text_span(span),
                crate::diag::text::human_bytes(bytes),
                crate::diag::text::human_bytes(limit)
            ))
            .at(span)
            .help(LIMIT_HELP));
        }
        self.left.set(limit - bytes as u64);
        Ok(())
    }
}

/// A number of elements: not negative, and not beyond what any buffer could hold (the limit
/// says the rest).
pub(super) fn count_of(n: i128, what: &str, span: Span, limit: u64) -> Result<usize, Diagnostic> {
    if n < 0 {
        return Err(Diagnostic::error(format!("{what} can't be negative (it is {n})"))
            .at(span)
            .help("sizes count elements"));
    }
    usize::try_from(n).ok().filter(|&n| n as u64 <= u64::MAX / 8).ok_or_else(|| {
        Diagnostic::error(format!("{what} of {n} elements is more than any buffer can hold")).at(span).help(format!(
            "buffers may use {} here (--max-alloc changes it)",
            crate::diag::text::human_bytes(u128::from(limit))
        ))
    })
}

fn human(bytes: u64) -> String {
    crate::diag::text::human_bytes(bytes)
}

/// What a learner who hit the buffer limit can do, said the same way for buffers and for a
/// statement's temporaries (the limit is one: `--max-alloc`, whether set or by default).
const LIMIT_HELP: &str = "buffers and the arrays a statement makes on the way share one limit, --max-alloc (half of this machine's memory unless set): start gridlab with a larger one (e.g. --max-alloc 16G)";
