//! Evaluation of expressions, numpy-style, against the session's buffers and scalars.
//!
//! Semantics follow numpy with NEP 50 promotion: Python-like literals and `let` scalars are
//! "weak" and take the array's dtype (`f32` array `+ 0.5` stays `f32`, and `a == 0.1` compares
//! against `0.1` rounded to `f32`); an integer array with a float scalar becomes `f64`. An
//! element of an array (`a[3]`) or a reduction (`sum(a)`) is a typed scalar, like `np.float32`.
//! Integer arrays wrap on overflow like C and numpy; integer *scalars* are checked, and integer
//! division or modulo by zero is an error everywhere.
//!
//! One departure from numpy, for CUDA's sake: `/` between two integers (scalars, elements or
//! integer arrays) is C's division, truncated toward zero, so `(n + 255) / 256` is a grid size
//! as in the host code beside the kernel; with a float on either side it divides as floats.
//! The result's dtype is what `+` would give (`i32` array `/ 2` stays `i32`). `//` floors and
//! `%` takes the divisor's sign, as in Python. Comparisons don't broadcast beyond a scalar
//! and an array: two arrays must have the same length. `and`/`or`/`not` work elementwise on
//! arrays (numpy would refuse), so `all(a > 0 and a < 1)` reads as written.
//!
//! This file is the evaluator: names, indexing and slicing, operators, assignment. Beside it,
//! `eval/numpy.rs` is the value model and promotion, `eval/functions.rs` the built-in
//! functions, `eval/alloc.rs` the allocation accounting, and `eval/expect.rs` `expect`.

use std::cell::Cell;

use crate::buffer::{Buffer, Num, Shape};
use crate::diag::{Diagnostic, Span};
use crate::dtype::DType;
use crate::value::{Array, Data, Value, format_num, wrap};

use super::ast::{BinOp, Expr, ExprKind, Index, UnOp};
use numpy::{
    IntErr, Kind, V, b_lane, build, compare_f, compare_i, f_lane, float_op, gather, i_lane, int_op, result_dtype,
    round_to,
};

mod alloc;
mod expect;
mod functions;
mod numpy;

pub use expect::{ExpectOutcome, eval_expect};
pub use numpy::{APPROX_ABS, APPROX_REL, approx_eq};
pub(crate) use numpy::{slice_count, slice_positions};

/// What expressions can see of the session.
pub trait Env {
    fn buffer(&self, name: &str) -> Option<&Buffer>;
    fn scalar(&self, name: &str) -> Option<&Value>;
    /// Constructors refuse to build arrays larger than this many bytes, before allocating.
    fn max_alloc_bytes(&self) -> u64;
    /// Every bound name, for "did you mean" hints. Optional.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
    /// `__constant__` or `__device__` when `name` is such a variable of the CUDA module: no value
    /// here, but a name the learner may well type. Optional.
    fn module_variable(&self, _name: &str) -> Option<&'static str> {
        None
    }
    /// The dimensions of buffer `name` where its own shape cannot say them: a Python
    /// program's three-dimensional array. Optional.
    fn dims(&self, _name: &str) -> Option<Vec<usize>> {
        None
    }
    /// Whether the learner asked to stop (Ctrl-C): a long statement checks now and then.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Evaluate `expr`, whose spans index into `src` (the statement's text). The arrays it makes,
/// the result and every temporary on the way, count against [`Env::max_alloc_bytes`].
pub fn eval(expr: &Expr, env: &dyn Env, src: &str) -> Result<Value, Diagnostic> {
    let cx = Cx::new(env, src);
    let v = cx.eval(expr)?;
    if let V::Arr(a) = &v
        && a.is_borrowed()
    {
        // The value is a session's buffer as it is (`let b = a`): it becomes a copy.
        cx.charge(expr, a.size_bytes())?;
    }
    Ok(v.into_value())
}

/// Whether `text`, an expression that advice would have the learner type, evaluates against
/// `env` as it stands: advice that fails when followed is worse than none.
fn suggestion_runs(text: &str, env: &dyn Env) -> bool {
    let src = format!("let __suggestion = {text}");
    match super::parse_statement(0, &src) {
        Ok(super::ast::Stmt { kind: super::ast::StmtKind::Let { value, .. }, .. }) => eval(&value, env, &src).is_ok(),
        _ => false,
    }
}

/// What `a[i] = v` (`StmtKind::Assign`) changes: elements of one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// The buffer.
    pub name: String,
    /// Flat positions, row after row for a 2-D buffer.
    pub positions: Vec<usize>,
    /// The value for each position, already in the buffer's dtype (exact: checked to fit); one
    /// value when a scalar goes to every position (`a[:] = 0` makes no list of copies).
    pub values: Vec<Num>,
}

/// Evaluate `TARGET = VALUE` for a buffer's elements; the caller stores the result.
pub fn eval_assign(target: &Expr, value: &Expr, env: &dyn Env, src: &str) -> Result<Assignment, Diagnostic> {
    Cx::new(env, src).assign(target, value)
}

/// A `__constant__` or `__device__` variable that a statement gives values to (`coef = [...]`).
#[derive(Clone, Copy, Debug)]
pub struct SymbolTarget<'t> {
    pub name: &'t str,
    /// The element's C type, for messages: `float`.
    pub c_type: &'t str,
    pub dtype: DType,
    /// Elements: 1 for a scalar variable, all of them (row after row) for an array.
    pub len: usize,
}

/// The values `value` gives `target`, in its element type: a list (each element checked to fit,
/// as `array([...], dtype)` checks), a buffer of exactly that dtype, or for a one-element
/// variable a number. Fewer values than the variable holds set its first elements.
pub fn eval_symbol(value: &Expr, env: &dyn Env, src: &str, target: SymbolTarget<'_>) -> Result<Vec<Num>, Diagnostic> {
    let cx = Cx::new(env, src);
    let SymbolTarget { name, c_type, dtype, len } = target;
    let holds = format!("`{name}` holds {len} {c_type}{}", if len == 1 { "" } else { "s" });
    let arr = match &value.kind {
        ExprKind::List(items) => cx.list(items, value.span, dtype)?,
        _ => match cx.eval(value)? {
            V::Arr(a) => {
                if a.dtype() != Some(dtype) {
                    return Err(Diagnostic::error(format!(
                        "`{}` is {}, but `{name}` holds {c_type} ({dtype})",
                        cx.text(value),
                        a.type_name()
                    ))
                    .at(value.span)
                    .help(format!(
                        "convert it as the copy would need: `{name} = array({}, {dtype})`",
                        cx.text(value)
                    )));
                }
                a
            }
            V::Dim3(_) => return Err(cx.dim3_misused(value)),
            scalar if len == 1 => {
                let n = match scalar {
                    V::Int(i) => Num::Int(i),
                    V::Bool(b) => Num::Int(b as i128),
                    V::Float(f) => Num::Float(f),
                    V::Elem(n, _) => n,
                    V::Arr(_) | V::Dim3(_) => unreachable!("matched above"),
                };
                return Ok(vec![cx.fit(n, dtype, value)?]);
            }
            scalar => {
                return Err(Diagnostic::error(format!("{holds}, but `{}` is {}", cx.text(value), scalar.type_name()))
                    .at(value.span)
                    .help(format!(
                        "give a list of up to {len} values, `{name} = [...]`, or fill it: `{name} = full({len}, {}, {dtype})`",
                        cx.text(value)
                    )));
            }
        },
    };
    if arr.len() > len {
        return Err(Diagnostic::error(format!("too many values: {holds}, and `{}` has {}", cx.text(value), arr.len()))
            .at(value.span)
            .help(format!("give at most {len}; fewer set only the first elements")));
    }
    Ok((0..arr.len()).map(|i| arr.num(i)).collect())
}

pub(crate) struct Cx<'a> {
    pub(crate) env: &'a dyn Env,
    pub(crate) src: &'a str,
    /// Bytes the statement may still allocate for arrays: the buffer limit less the session's
    /// buffers, less the arrays made so far that are still alive.
    left: Cell<u64>,
}

/// How often (in elements) a long loop over an array checks for Ctrl-C.
const CHECK_EVERY: usize = 1 << 20;

impl<'a> Cx<'a> {
    pub(crate) fn new(env: &'a dyn Env, src: &'a str) -> Cx<'a> {
        Cx { env, src, left: Cell::new(env.max_alloc_bytes()) }
    }

    pub(crate) fn text(&self, e: &Expr) -> &str {
        e.text(self.src)
    }

    /// Called with each element index of a long loop: every [`CHECK_EVERY`] elements, stop
    /// when the learner pressed Ctrl-C.
    #[inline]
    fn tick(&self, i: usize, e: &Expr) -> Result<(), Diagnostic> {
        if i % CHECK_EVERY == CHECK_EVERY - 1 && self.env.cancelled() {
            return Err(Diagnostic::error(format!("`{}` was stopped (Ctrl-C)", self.text(e))).at(e.span));
        }
        Ok(())
    }

    /// [`build`], checking for Ctrl-C on the way (the constructor checked the limit).
    fn build(
        &self,
        e: &Expr,
        dtype: DType,
        shape: Shape,
        nums: impl IntoIterator<Item = Num>,
    ) -> Result<Array<'static>, Diagnostic> {
        let mut out = Buffer::zeros(dtype, shape);
        for (i, v) in nums.into_iter().enumerate().take(shape.len()) {
            self.tick(i, e)?;
            out.set(i, v);
        }
        Ok(Array::numbers(out))
    }

    fn text_span(&self, span: Span) -> &str {
        self.src.get(span.lo as usize..span.hi as usize).unwrap_or("?")
    }

    pub(crate) fn eval(&self, e: &Expr) -> Result<V<'a>, Diagnostic> {
        match &e.kind {
            ExprKind::Int(i) => Ok(V::Int(*i)),
            ExprKind::Float(f) => Ok(V::Float(*f)),
            ExprKind::Bool(b) => Ok(V::Bool(*b)),
            ExprKind::Name(n) => {
                let v = self.name(n, e.span)?;
                self.check_written(&v, n, e.span, None)?;
                Ok(v)
            }
            ExprKind::List(items) => {
                let arr = self.list(items, e.span, DType::F32)?;
                Ok(V::Arr(arr))
            }
            ExprKind::Str(_) => Err(Diagnostic::error("text can't be used here")
                .at(e.span)
                .help("text labels a `print`: `print(\"sum:\", sum(a))`")),
            ExprKind::Tuple(_) => Err(Diagnostic::error("a tuple is only a shape here")
                .at(e.span)
                .help("tuples give 2-D shapes to constructors, e.g. `zeros((3, 4))`, or grid sizes in launches; to keep a launch size, `let block = dim3(16, 16)`")),
            ExprKind::Call { func, func_span, args, kwargs } => self.call(func, *func_span, args, kwargs, e),
            ExprKind::Index { target, indices } => self.index(target, indices, e),
            ExprKind::Unary { op, op_span, operand } => {
                let v = self.eval(operand)?;
                self.unary(*op, *op_span, v, e)
            }
            ExprKind::Binary { op, op_span, lhs, rhs } => {
                // Deep expressions recurse through here: the list case keeps to its own frame.
                let (l, r) = if matches!(lhs.kind, ExprKind::List(_)) || matches!(rhs.kind, ExprKind::List(_)) {
                    self.eval_pair(lhs, rhs)?
                } else {
                    (self.eval(lhs)?, self.eval(rhs)?)
                };
                let out = self.binary(*op, *op_span, &l, &r, lhs, rhs, e);
                self.release(&l);
                self.release(&r);
                out
            }
        }
    }

    /// The two sides of a binary operation. A bare list beside an array takes the array's
    /// dtype (`u == [4294967295, 1]` on a `u32` buffer compares u32s exactly, where an f32
    /// list would have rounded it to 4294967300); a value that dtype cannot hold is an error
    /// that says so.
    #[inline(never)]
    pub(crate) fn eval_pair(&self, lhs: &Expr, rhs: &Expr) -> Result<(V<'a>, V<'a>), Diagnostic> {
        let typed = |list: &Expr, other: &V<'a>| -> Result<Option<V<'a>>, Diagnostic> {
            let (ExprKind::List(items), V::Arr(a)) = (&list.kind, other) else { return Ok(None) };
            let Some(dtype) = a.dtype() else { return Ok(None) };
            let arr = self.list(items, list.span, dtype).map_err(|d| {
                d.note(format!("a list beside a {dtype} array takes its dtype, so that it compares exactly"))
            })?;
            Ok(Some(V::Arr(arr)))
        };
        if matches!(lhs.kind, ExprKind::List(_)) {
            let r = self.eval(rhs)?;
            let l = match typed(lhs, &r)? {
                Some(l) => l,
                None => self.eval(lhs)?,
            };
            return Ok((l, r));
        }
        let l = self.eval(lhs)?;
        let r = match typed(rhs, &l)? {
            Some(r) => r,
            None => self.eval(rhs)?,
        };
        Ok((l, r))
    }

    /// `e` read for its shape or to be copied, not for its values: a buffer's unwritten
    /// elements are no error here (see [`Cx::check_written`]).
    fn eval_unread(&self, e: &Expr) -> Result<V<'a>, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) => self.name(n, e.span),
            _ => self.eval(e),
        }
    }

    /// A statement that reads the values of a buffer made with `empty` (all of them, or those
    /// at `positions`) must not read one that nothing wrote: there is no value to give.
    fn check_written(&self, v: &V<'_>, name: &str, span: Span, positions: Option<&[usize]>) -> Result<(), Diagnostic> {
        let V::Arr(a) = v else { return Ok(()) };
        let Data::Num(b) = a.data() else { return Ok(()) };
        let Some(unset) = b.unset() else { return Ok(()) };
        let first = match positions {
            Some(p) => p.iter().copied().find(|&i| unset.get(i) == Some(&true)),
            None => unset.iter().position(|x| *x),
        };
        let Some(i) = first else { return Ok(()) };
        let n = unset.iter().filter(|x| **x).count();
        let size = b.shape();
        let mut d = Diagnostic::error(format!(
            "`{name}` was made with `empty({size})` and element {i} was never written: it has no value to read"
        ))
        .at(span);
        if n > 1 {
            d = d.note(format!("{n} of its {} elements have not been written", b.len()));
        }
        Err(d
        .help(format!(
            "write it first (`{name}[:] = 0`, or with a kernel), or make `{name}` with `zeros` if it should start at 0; `{name}` alone shows which elements are unwritten (`?`)"
        )))
    }

    fn name(&self, n: &str, span: Span) -> Result<V<'a>, Diagnostic> {
        let env: &'a dyn Env = self.env;
        if let Some(b) = env.buffer(n) {
            return Ok(V::Arr(Array::from_buffer(b)));
        }
        if let Some(v) = env.scalar(n) {
            return Ok(V::from_value(v));
        }
        // `block.x`: a field of a dim3, as in CUDA.
        if let Some((record, field)) = n.split_once('.')
            && let Some(Value::Dim3(d)) = env.scalar(record)
        {
            return match field {
                "x" => Ok(V::Int(d[0] as i128)),
                "y" => Ok(V::Int(d[1] as i128)),
                "z" => Ok(V::Int(d[2] as i128)),
                _ => Err(Diagnostic::error(format!("a dim3 has no field `{field}`"))
                    .at(span)
                    .help(format!("its fields are `{record}.x`, `{record}.y` and `{record}.z`"))),
            };
        }
        // `a.size`, `a.ndim`: NumPy's fields, as a Numba launch passes them (`k[g, b](a, a.size)`).
        if let Some((record, field)) = n.split_once('.')
            && let Some(b) = env.buffer(record)
        {
            match field {
                "size" => return Ok(V::Int(b.len() as i128)),
                "ndim" => return Ok(V::Int(if matches!(b.shape(), crate::buffer::Shape::D2(..)) { 2 } else { 1 })),
                _ => {}
            }
        }
        Err(self.unknown_name(n, span))
    }

    /// `sizeof(float)`: the bytes of a C type (or a dtype), as on every CUDA platform (LP64).
    fn size_of(&self, arg: &Expr) -> Result<V<'a>, Diagnostic> {
        let ExprKind::Name(ty) = &arg.kind else {
            return Err(Diagnostic::error("`sizeof` takes a type here")
                .at(arg.span)
                .help("e.g. `sizeof(float)` is 4; gridlab counts a buffer's elements with `len(a)`"));
        };
        if self.env.buffer(ty).is_some() {
            return Err(Diagnostic::error(format!("`sizeof({ty})` of a buffer"))
                .at(arg.span)
                .help(format!(
                    "in C it would be a pointer's size; gridlab counts elements: `len({ty})`, and bytes are `len({ty}) * sizeof(float)`"
                )));
        }
        match super::habits::c_type_size(ty) {
            Some(n) => Ok(V::Int(n as i128)),
            None => Err(Diagnostic::error(format!("`{ty}` is not a type `sizeof` knows"))
                .at(arg.span)
                .help("the types are `float`, `double`, `int`, `unsigned int`, `long long`, `size_t`, `char`, `short`, `bool`, pointers (`float *`) and the dtypes `f32`, `i64`, ...")),
        }
    }

    fn unknown_name(&self, n: &str, span: Span) -> Diagnostic {
        if let Some(kind) = self.env.module_variable(n) {
            return Diagnostic::error(format!("`{n}` is a `{kind}` variable of the module, not a buffer"))
                .at(span)
                .label("kernels read it")
                .help(format!(
                    "a statement sets it whole, `{n} = [...]`, as cudaMemcpyToSymbol does, and cannot read it back; a kernel can copy it into a buffer"
                ));
        }
        let names = self.env.names();
        // `c.field`: a field of a record (`let c = cost ...`), or a method call from Python.
        if let Some((record, field)) = n.split_once('.') {
            if self.env.buffer(record).is_some() {
                let instead = match field {
                    "shape" | "len" => format!("write `len({record})` (or `{record}.size`)"),
                    "dtype" | "ndim" => "`:buffers` shows each buffer's dtype and shape".to_string(),
                    _ => format!("functions take the buffer, e.g. `sum({record})`, `len({record})`"),
                };
                return Diagnostic::error(format!("a buffer has no `.{field}`: {instead}"))
                    .at(span)
                    .label(format!("`{record}` is a buffer"))
                    .help(format!(
                        "a buffer has NumPy's `{record}.size` and `{record}.ndim`, nothing else; a `cost` record has fields: `let c = cost k<<<4, 256>>>({record}, len({record}))`, then `c.time_us`"
                    ));
            }
            let prefix = format!("{record}.");
            let fields: Vec<String> =
                names.iter().filter_map(|m| m.strip_prefix(&prefix)).map(|f| format!("`{f}`")).collect();
            if fields.is_empty() && !names.iter().any(|m| m == record) {
                // `c0.time_us` before any `let c0 = cost ...`: the record is what is missing.
                let d = Diagnostic::error(format!("`{record}` is not defined")).at(span).label("unknown name");
                let records = names.iter().filter_map(|m| m.split_once('.').map(|(r, _)| r));
                return match crate::diag::suggest::closest(record, records) {
                    Some(s) => d.help(format!("did you mean `{s}.{field}`?")),
                    None => d.help(format!(
                        "a record's fields come from a `cost` launch: `let {record} = cost k<<<4, 256>>>(a, len(a))`, then `{record}.{field}`"
                    )),
                };
            }
            return if fields.is_empty() {
                Diagnostic::error(format!("`{record}` has no field `{field}`")).at(span).label("not a record").help(
                    format!(
                        "only records have fields, e.g. `let {record} = cost k<<<4, 256>>>(a, len(a))` then `{record}.time_us`; \
                         there are no methods: write `len(a)`, not `a.len()`"
                    ),
                )
            } else {
                Diagnostic::error(format!("`{record}` has no field `{field}`"))
                    .at(span)
                    .label("unknown field")
                    .help(format!("its fields are {}", fields.join(", ")))
            };
        }
        let d = Diagnostic::error(format!("`{n}` is not defined")).at(span).label("unknown name");
        if let Some(s) = crate::diag::suggest::closest(n, names.iter().map(String::as_str)) {
            d.help(format!("did you mean `{s}`?"))
        } else if DType::parse(n).is_some() {
            d.help(format!("`{n}` is a dtype: pass it to a constructor, e.g. `zeros(1024, {n})`"))
        } else if super::builtins::find(n).is_some() {
            d.help(format!("`{n}` is a function: call it, e.g. `{n}(...)`"))
        } else {
            d.help(format!("define it first, e.g. `let {n} = zeros(1024)` or `let {n} = 1024`"))
        }
    }

    fn list(&self, items: &[Expr], span: Span, dtype: DType) -> Result<Array<'static>, Diagnostic> {
        let mut nums = Vec::new();
        let mut cols = None;
        let mut rows = 0;
        for item in items {
            if let ExprKind::List(row) = &item.kind {
                if cols.is_some_and(|c| c != row.len()) || (cols.is_none() && !nums.is_empty()) {
                    return Err(Diagnostic::error("rows of a matrix must have the same length")
                        .at(item.span)
                        .help("every inner list needs as many elements as the first one"));
                }
                cols = Some(row.len());
                rows += 1;
                for x in row {
                    nums.push(self.fit(self.scalar_num(x, "a list element")?, dtype, x)?);
                }
            } else {
                if cols.is_some() {
                    return Err(Diagnostic::error("mixing numbers and lists").at(item.span));
                }
                nums.push(self.fit(self.scalar_num(item, "a list element")?, dtype, item)?);
            }
        }
        let shape = match cols {
            Some(c) => Shape::D2(rows, c),
            None => Shape::D1(nums.len()),
        };
        self.check_alloc(span, dtype, shape.len())?;
        Ok(build(dtype, shape, nums))
    }

    /// A value written for a `dtype` element (a list's, a fill value): it must be exactly what
    /// the element holds. `array([300], u8)` and `array([1.5], i32)` are errors naming the value,
    /// where a C cast would wrap or truncate it without a word (`array(a, u8)` of a whole buffer
    /// is that cast, and wraps).
    fn fit(&self, n: Num, dtype: DType, e: &Expr) -> Result<Num, Diagnostic> {
        let text = self.text(e);
        if dtype.is_float() {
            let x = n.as_f64();
            if dtype == DType::F32 && x.is_finite() && x.abs() > f32::MAX as f64 {
                return Err(Diagnostic::error(format!("`{text}` is too large for f32"))
                    .at(e.span)
                    .help("f32 goes up to about 3.4e38; f64 holds more, e.g. `array([...], f64)`"));
            }
            return Ok(n);
        }
        if dtype == DType::Bool {
            // C's conversion to `bool` is a truth test, not a narrowing: `bool b = 2;` is true.
            return Ok(n);
        }
        let (lo, hi) = dtype.int_range().unwrap_or((0, u64::MAX as i128));
        let i = match n {
            Num::Int(i) => i,
            Num::Float(f) if f.is_finite() && f.fract() == 0.0 => f as i128,
            Num::Float(_) => {
                return Err(Diagnostic::error(format!("`{text}` is not a whole number, and {dtype} holds integers"))
                    .at(e.span)
                    .help(format!("{dtype} holds whole numbers from {lo} to {hi}")));
            }
        };
        if i < lo || i > hi {
            let d = Diagnostic::error(format!("`{text}` is out of range for {dtype}"))
                .at(e.span)
                .label(format!("{dtype} holds {lo} to {hi}"));
            return Err(if dtype.size() < 8 { d.help("a wider dtype holds more, e.g. i64") } else { d });
        }
        Ok(Num::Int(i))
    }

    fn index(&self, target: &Expr, indices: &[Index], e: &Expr) -> Result<V<'a>, Diagnostic> {
        // A session's buffer is read in place (borrowed), a computed array as it is.
        let target_v = self.eval_unread(target)?;
        let V::Arr(src) = &target_v else {
            return Err(Diagnostic::error(format!(
                "`{}` is {}, not an array",
                self.text(target),
                target_v.type_name()
            ))
            .at(target.span)
            .help("only arrays can be indexed"));
        };
        let (flat, kept, held) = self.select(src, self.text(target), indices, e)?;
        if let Err(d) = self.check_written(&target_v, self.text(target), e.span, Some(&flat)) {
            self.left.set(self.left.get() + held);
            return Err(d);
        }
        let element_bytes = src.dtype().map_or(1, |d| d.size() as u64);
        let out = match kept[..] {
            [] => {
                let n = src.num(flat[0]);
                match src.dtype() {
                    Some(d) => V::Elem(n, d),
                    None => V::Bool(n.as_f64() != 0.0),
                }
            }
            [n] => {
                self.charge(e, n as u64 * element_bytes)?;
                V::Arr(gather(src, &flat, Shape::D1(n)))
            }
            [r, c] => {
                self.charge(e, (r * c) as u64 * element_bytes)?;
                V::Arr(gather(src, &flat, Shape::D2(r, c)))
            }
            _ => {
                self.left.set(self.left.get() + held);
                return Err(Diagnostic::error("this selects three dimensions; statements show at most two")
                    .at(e.span)
                    .help(format!("fix one index (`{}[0]`), or show the whole array by its name", self.text(target))));
            }
        };
        // The positions are gone.
        self.left.set(self.left.get() + held);
        self.release(&target_v);
        Ok(out)
    }

    /// The elements `name[indices]` selects, as flat positions, and the lengths of the
    /// dimensions the result keeps (none for one element). Shared by reading (`a[3]`) and
    /// assigning (`a[3] = 5`), so both check indices alike. The positions count against the
    /// limit before they are made; the caller gives back the bytes returned last once it no
    /// longer holds them.
    fn select(
        &self,
        src: &Array<'_>,
        name: &str,
        indices: &[Index],
        e: &Expr,
    ) -> Result<(Vec<usize>, Vec<usize>, u64), Diagnostic> {
        let held = Cell::new(0u64);
        let hold = |n: usize| -> Result<(), Diagnostic> {
            let bytes = n as u64 * std::mem::size_of::<usize>() as u64;
            self.charge(e, bytes)?;
            held.set(held.get() + bytes);
            Ok(())
        };
        let out = self.select_held(src, name, indices, e, &hold);
        if out.is_err() {
            self.left.set(self.left.get() + held.get());
        }
        out.map(|(flat, kept)| (flat, kept, held.get()))
    }

    fn select_held(
        &self,
        src: &Array<'_>,
        name: &str,
        indices: &[Index],
        e: &Expr,
        hold: &dyn Fn(usize) -> Result<(), Diagnostic>,
    ) -> Result<(Vec<usize>, Vec<usize>), Diagnostic> {
        let shape = src.shape();
        // A boolean mask selects elements: `a[a > 0]`.
        if let [Index::At(ie)] = indices
            && let V::Arr(m) = self.eval(ie)?
        {
            let Data::Bool(mask) = m.data() else {
                return Err(Diagnostic::error("an array index must be a comparison (a mask)")
                    .at(ie.span)
                    .help("e.g. `a[a > 0]`; integer array indices aren't supported"));
            };
            if mask.len() != shape.len() {
                return Err(Diagnostic::error(format!(
                    "the mask has {} elements but `{name}` has {}",
                    mask.len(),
                    shape.len()
                ))
                .at(ie.span));
            }
            hold(mask.iter().filter(|&&m| m).count())?;
            let idx: Vec<usize> = (0..mask.len()).filter(|&i| mask[i]).collect();
            let n = idx.len();
            self.release(&V::Arr(m));
            return Ok((idx, vec![n]));
        }
        let dims: Vec<usize> = match (self.env.dims(name), shape) {
            // A Python program's three-dimensional array: its buffer is flat.
            (Some(d), Shape::D1(n)) if d.len() == 3 && d.iter().product::<usize>() == n => d,
            (_, Shape::D1(n)) => vec![n],
            (_, Shape::D2(r, c)) => vec![r, c],
        };
        if indices.len() > dims.len() {
            return Err(Diagnostic::error(format!(
                "`{name}` has {} dimension{} but {} indices were given",
                dims.len(),
                if dims.len() == 1 { "" } else { "s" },
                indices.len()
            ))
            .at(e.span)
            .help(format!("`{name}` is {}", src.type_name())));
        }
        // Positions along each dimension, and whether the dimension is kept.
        let mut per_dim: Vec<(Vec<usize>, bool)> = Vec::new();
        for (d, &len) in dims.iter().enumerate() {
            let Some(ix) = indices.get(d) else {
                hold(len)?;
                per_dim.push(((0..len).collect(), true));
                continue;
            };
            match ix {
                Index::At(ie) => {
                    let i = self.int_arg(ie, "an index")?;
                    let what = match (dims.len(), d) {
                        (1, _) => "index",
                        (3, _) => ["first index", "second index", "third index"][d],
                        (_, 0) => "row index",
                        _ => "column index",
                    };
                    let n = len as i128;
                    if i >= n || i < -n {
                        let valid = if len == 0 {
                            format!("`{name}` is empty")
                        } else {
                            format!("valid 0..={} or -{len}..=-1", len - 1)
                        };
                        let unit = match what {
                            "index" => format!("length {len}"),
                            "row index" => format!("{len} rows"),
                            "column index" => format!("{len} columns"),
                            _ => format!("{len} along that dimension"),
                        };
                        return Err(Diagnostic::error(format!(
                            "{what} {i} is out of range for `{name}` ({unit}, {valid})"
                        ))
                        .at(ie.span)
                        .help("negative indices count from the end: `a[-1]` is the last element"));
                    }
                    per_dim.push((vec![if i < 0 { (i + n) as usize } else { i as usize }], false));
                }
                Index::Slice { start, stop, step, .. } => {
                    let bound =
                        |b: &Option<Box<Expr>>| b.as_ref().map(|x| self.int_arg(x, "a slice bound")).transpose();
                    let step_v = bound(step)?.unwrap_or(1);
                    if step_v == 0 {
                        let s = step.as_ref().map_or(e.span, |x| x.span);
                        return Err(Diagnostic::error("a slice step can't be zero")
                            .at(s)
                            .help("e.g. `a[::2]` takes every other element"));
                    }
                    let (start, stop) = (bound(start)?, bound(stop)?);
                    hold(slice_count(len, start, stop, step_v))?;
                    per_dim.push((slice_positions(len, start, stop, step_v), true));
                }
            }
        }
        hold(per_dim.iter().map(|(p, _)| p.len()).product())?;
        // Row-major: each position along a dimension stands for `stride` flat elements.
        let mut flat = vec![0usize];
        for (d, (positions, _)) in per_dim.iter().enumerate() {
            let stride: usize = dims[d + 1..].iter().product();
            flat = flat.iter().flat_map(|&base| positions.iter().map(move |&p| base + p * stride)).collect();
        }
        let kept: Vec<usize> = per_dim.iter().filter(|(_, k)| *k).map(|(p, _)| p.len()).collect();
        Ok((flat, kept))
    }

    /// `NAME[INDICES] = VALUE`: where the new values go and what they are, checked against the
    /// buffer's dtype. Nothing is changed here: the session stores the result.
    fn assign(&self, target: &Expr, value: &Expr) -> Result<Assignment, Diagnostic> {
        let ExprKind::Index { target: base, indices } = &target.kind else {
            return Err(Diagnostic::error("only elements of a buffer can be assigned")
                .at(target.span)
                .help("write `a[3] = 5`, `a[2:6] = 0` or `a[a < 0] = 0`; a name gets a new value with `let`"));
        };
        let ExprKind::Name(name) = &base.kind else {
            return Err(Diagnostic::error(format!("`{}` is not a buffer's name", self.text(base)))
                .at(base.span)
                .help("assign to a buffer's elements by its name: `a[3] = 5`"));
        };
        let Some(buf) = self.env.buffer(name) else {
            return Err(match self.env.scalar(name) {
                Some(v) => Diagnostic::error(format!("`{name}` is {}, not a buffer", v.type_name()))
                    .at(base.span)
                    .help(format!("only buffers have elements; give `{name}` a new value with `let {name} = ...`")),
                None => self.unknown_name(name, base.span),
            });
        };
        // The positions and values are held until the session stores them: they count against
        // the limit (a position is a word, a value a `Num`; one value for a scalar).
        let (positions, kept, _) = self.select(&Array::from_buffer(buf), name, indices, target)?;
        let dtype = buf.dtype();
        let one = |n: Num, at: Option<usize>| self.store_num(n, dtype, name, value, at);
        // A list's numbers go to the buffer as written (checked to fit its dtype), so
        // `u[0:2] = [4294967295, 1]` stores what it says: an f32 list would have rounded it.
        if let ExprKind::List(items) = &value.kind
            && !items.iter().any(|i| matches!(i.kind, ExprKind::List(_)))
            && items.len() == positions.len()
        {
            let mut values = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                values.push(one(self.scalar_num(item, "a list element")?, Some(i))?);
            }
            return Ok(Assignment { name: name.clone(), positions, values });
        }
        let v = self.eval(value)?;
        let values = match &v {
            V::Arr(a) => {
                if a.len() != positions.len() {
                    let what = if kept.is_empty() {
                        "one element".to_string()
                    } else {
                        format!("{} elements", positions.len())
                    };
                    return Err(Diagnostic::error(format!(
                        "`{}` selects {what}, but the value has {}",
                        self.text(target),
                        a.len()
                    ))
                    .at(value.span)
                    .help("give one number for every selected element, or as many values as there are elements"));
                }
                self.charge(value, a.len() as u64 * std::mem::size_of::<Num>() as u64)?;
                let mut values = Vec::with_capacity(a.len());
                for i in 0..a.len() {
                    self.tick(i, value)?;
                    values.push(one(a.num(i), Some(i))?);
                }
                values
            }
            V::Dim3(_) => return Err(self.dim3_misused(value)),
            scalar => {
                let n = match scalar {
                    V::Int(i) => Num::Int(*i),
                    V::Bool(b) => Num::Int(*b as i128),
                    V::Float(f) => Num::Float(*f),
                    V::Elem(n, _) => *n,
                    V::Arr(_) | V::Dim3(_) => unreachable!("matched above"),
                };
                // One value for every position (see `Assignment::values`).
                vec![one(n, None)?]
            }
        };
        Ok(Assignment { name: name.clone(), positions, values })
    }

    /// One value stored into a `dtype` element: a float into an integer buffer must be whole,
    /// and every value must fit, so nothing is silently wrapped or rounded away.
    fn store_num(&self, n: Num, dtype: DType, name: &str, value: &Expr, at: Option<usize>) -> Result<Num, Diagnostic> {
        let which = at.map_or(String::new(), |i| format!(" (element {i} of the value)"));
        let shown = format_num(n, Some(if matches!(n, Num::Float(_)) { DType::F64 } else { DType::I64 }));
        if dtype.is_float() {
            let x = n.as_f64();
            if dtype == DType::F32 && x.is_finite() && x.abs() > f32::MAX as f64 {
                return Err(Diagnostic::error(format!("{shown} is too large for `{name}`, which holds f32{which}"))
                    .at(value.span)
                    .help(format!(
                        "f32 goes up to about 3.4e38; an f64 buffer holds more: `let {name} = array({name}, f64)`"
                    )));
            }
            return Ok(Num::Float(round_to(x, dtype)));
        }
        let i = match n {
            Num::Int(i) => i,
            Num::Float(f) if f.is_finite() && f.fract() == 0.0 => f as i128,
            Num::Float(_) => {
                return Err(Diagnostic::error(format!(
                    "`{name}` holds {dtype}, but {shown} is not a whole number{which}"
                ))
                .at(value.span)
                .help(format!("drop the fraction with `int({})`, or use a float buffer", self.text(value))));
            }
        };
        if wrap(i, dtype) != i {
            let (lo, hi) = dtype.int_range().unwrap_or((0, u64::MAX as i128));
            return Err(Diagnostic::error(format!("{i} does not fit in `{name}`'s {dtype} elements{which}"))
                .at(value.span)
                .help(if dtype.size() < 8 {
                    format!("{dtype} holds {lo} to {hi}; a wider buffer holds more: `let {name} = array({name}, i64)`")
                } else {
                    format!("{dtype} holds {lo} to {hi}")
                }));
        }
        Ok(Num::Int(i))
    }

    fn unary(&self, op: UnOp, op_span: Span, v: V<'a>, e: &Expr) -> Result<V<'a>, Diagnostic> {
        if let (V::Dim3(_), ExprKind::Unary { operand, .. }) = (&v, &e.kind) {
            return Err(self.dim3_misused(operand));
        }
        let float_err = |what: &str| {
            Diagnostic::error(format!("`~` needs integers or booleans, not {what}"))
                .at(op_span)
                .help("for logical not, use `not`")
        };
        if let V::Arr(a) = &v
            && op != UnOp::Plus
        {
            let out = match (op, a.dtype()) {
                (UnOp::Not, _) | (UnOp::Invert, None) => {
                    let lane = b_lane(&v);
                    let mut out = self.new_bools(e, a.len())?;
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.push(!lane.at(i));
                    }
                    V::Arr(Array::bools(a.shape(), out))
                }
                (UnOp::Invert, Some(d)) if d.is_float() => return Err(float_err(&format!("{d} elements"))),
                (UnOp::Invert, Some(d)) => {
                    let lane = i_lane(&v);
                    let mut out = self.new_buffer(e, d, a.shape())?;
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.set_int(i, wrap(!lane.at(i), d));
                    }
                    V::Arr(Array::numbers(out))
                }
                _ => self.unary_map(&v, e, |x| -x, |i| Some(i.wrapping_neg()))?,
            };
            self.release(&v);
            return Ok(out);
        }
        Ok(match (op, v) {
            (UnOp::Not, s) => V::Bool(!s.truth().unwrap_or(false)),
            (UnOp::Plus, V::Bool(b)) => V::Int(b as i128),
            (UnOp::Plus, v) => v,
            (UnOp::Neg, V::Int(i)) => {
                V::Int(i.checked_neg().ok_or_else(|| Diagnostic::error("integer overflow").at(e.span))?)
            }
            (UnOp::Neg, V::Bool(b)) => V::Int(-(b as i128)),
            (UnOp::Neg, v) => self.unary_map(&v, e, |x| -x, |i| Some(i.wrapping_neg()))?,
            (UnOp::Invert, V::Bool(b)) => V::Bool(!b),
            (UnOp::Invert, V::Int(i)) => V::Int(!i),
            (UnOp::Invert, V::Elem(Num::Int(i), d)) => V::Elem(Num::Int(wrap(!i, d)), d),
            (UnOp::Invert, v) => return Err(float_err(&v.type_name())),
        })
    }

    /// `l op r` for the expression `e` (whose operands are `le` and `re`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn binary(
        &self,
        op: BinOp,
        op_span: Span,
        l: &V<'_>,
        r: &V<'_>,
        le: &Expr,
        re: &Expr,
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        if let (V::Dim3(x), V::Dim3(y)) = (l, r)
            && matches!(op, BinOp::Eq | BinOp::Ne)
        {
            return Ok(V::Bool((x == y) == (op == BinOp::Eq)));
        }
        if matches!(l, V::Dim3(_)) {
            return Err(self.dim3_misused(le));
        }
        if matches!(r, V::Dim3(_)) {
            return Err(self.dim3_misused(re));
        }
        // Lengths: two arrays must agree; a scalar goes with every element.
        let (la, ra) = (l.array(), r.array());
        if let (Some(a), Some(b)) = (la, ra)
            && a.len() != b.len()
        {
            return Err(Diagnostic::error(format!(
                "length mismatch: `{}` has {} elements, `{}` has {}",
                self.text(le),
                a.len(),
                self.text(re),
                b.len()
            ))
            .at(op_span)
            .label(format!("`{}` needs equal lengths", op.symbol()))
            .help("slice one of them to the other's length, e.g. `a[0:n]`"));
        }
        let shape = la.map(Array::shape).or(ra.map(Array::shape));
        let (lk, rk) = (l.kind(), r.kind());

        if matches!(op, BinOp::And | BinOp::Or) {
            let (x, y) = (b_lane(l), b_lane(r));
            return self.bools_of(shape, e, |i| if op == BinOp::And { x.at(i) && y.at(i) } else { x.at(i) || y.at(i) });
        }

        if op.is_comparison() {
            return if lk.is_int() && rk.is_int() {
                let (x, y) = (i_lane(l), i_lane(r));
                self.bools_of(shape, e, |i| compare_i(op, x.at(i), y.at(i)))
            } else {
                // NEP 50: a Python float compared with f32 values is first rounded to f32.
                let f32_side = |k: Kind| k == Kind::Typed(DType::F32);
                let (x, y) = (f_lane(l, f32_side(rk)), f_lane(r, f32_side(lk)));
                self.bools_of(shape, e, |i| compare_f(op, x.at(i), y.at(i)))
            };
        }

        let bitwise = matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr);
        let is_boolish = |v: &V, k: Kind| matches!(v, V::Bool(_)) || k == Kind::BoolArr;
        if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) && is_boolish(l, lk) && is_boolish(r, rk) {
            let (x, y) = (b_lane(l), b_lane(r));
            return self.bools_of(shape, e, |i| match op {
                BinOp::BitAnd => x.at(i) & y.at(i),
                BinOp::BitOr => x.at(i) | y.at(i),
                _ => x.at(i) ^ y.at(i),
            });
        }
        if bitwise && (!lk.is_int() || !rk.is_int()) {
            let (bad, k) = if !lk.is_int() { (le, l) } else { (re, r) };
            return Err(Diagnostic::error(format!(
                "`{}` needs integers, but `{}` is {}",
                op.symbol(),
                self.text(bad),
                k.type_name()
            ))
            .at(op_span)
            .help("bitwise operators and shifts work on integers only"));
        }

        let Some(dtype) = result_dtype(lk, rk) else {
            return self.scalar_arith(op, op_span, l, r, le, re);
        };
        if dtype.is_float() {
            let (x, y) = (f_lane(l, dtype == DType::F32), f_lane(r, dtype == DType::F32));
            let Some(shape) = shape else {
                return Ok(V::Elem(Num::Float(round_to(float_op(op, x.at(0), y.at(0)), dtype)), dtype));
            };
            let mut out = self.new_buffer(e, dtype, shape)?;
            for i in 0..shape.len() {
                self.tick(i, e)?;
                out.set_f64(i, float_op(op, x.at(i), y.at(i)));
            }
            Ok(V::Arr(Array::numbers(out)))
        } else {
            let (x, y) = (i_lane(l), i_lane(r));
            let at = |i: usize| {
                int_op(op, x.at(i), y.at(i))
                    .map(|z| wrap(z, dtype))
                    .map_err(|err| self.int_error(err, op, op_span, re, shape.map(|_| i)))
            };
            let Some(shape) = shape else {
                return Ok(V::Elem(Num::Int(at(0)?), dtype));
            };
            let mut out = self.new_buffer(e, dtype, shape)?;
            for i in 0..shape.len() {
                self.tick(i, e)?;
                out.set_int(i, at(i)?);
            }
            Ok(V::Arr(Array::numbers(out)))
        }
    }

    /// A boolean per element (`f(i)`), as an array of `shape`, or one boolean for scalars.
    fn bools_of(&self, shape: Option<Shape>, e: &Expr, f: impl Fn(usize) -> bool) -> Result<V<'a>, Diagnostic> {
        let Some(shape) = shape else { return Ok(V::Bool(f(0))) };
        let mut out = self.new_bools(e, shape.len())?;
        for i in 0..shape.len() {
            self.tick(i, e)?;
            out.push(f(i));
        }
        Ok(V::Arr(Array::bools(shape, out)))
    }

    /// A dim3 where a number or an array was needed.
    fn dim3_misused(&self, e: &Expr) -> Diagnostic {
        let t = self.text(e);
        let field = if matches!(e.kind, ExprKind::Name(_)) { format!("`{t}.x`") } else { "`b.x`".to_string() };
        Diagnostic::error(format!("`{t}` is a dim3, a launch size, not a number")).at(e.span).help(format!(
            "use one of its fields, {field}, `.y` or `.z`, or pass it in a launch: `k<<<grid, {t}>>>(...)`"
        ))
    }

    fn int_error(&self, err: IntErr, op: BinOp, op_span: Span, re: &Expr, at: Option<usize>) -> Diagnostic {
        let place = at.map_or(String::new(), |i| format!(" (at element {i})"));
        match err {
            IntErr::DivZero => Diagnostic::error(format!("integer division by zero{place}"))
                .at(op_span)
                .label(format!("`{}` divides by `{}`", op.symbol(), self.text(re)))
                .help("with a float on either side, `/` divides as floats and gives inf or nan: `1.0 * x / y`"),
            IntErr::NegativePow => Diagnostic::error(format!("integers can't be raised to negative powers{place}"))
                .at(op_span)
                .help("make the base a float: `2.0 ** -1`"),
            IntErr::NegativeShift => Diagnostic::error(format!("negative shift count{place}")).at(op_span),
        }
    }

    /// Python arithmetic on weak scalars: exact integers (errors on overflow), float otherwise.
    fn scalar_arith(&self, op: BinOp, op_span: Span, l: &V, r: &V, le: &Expr, re: &Expr) -> Result<V<'a>, Diagnostic> {
        let as_int = |v: &V| match v {
            V::Int(i) => Some(*i),
            V::Bool(b) => Some(*b as i128),
            _ => None,
        };
        let overflow = || {
            Diagnostic::error(format!("integer overflow in `{} {} {}`", self.text(le), op.symbol(), self.text(re)))
                .at(op_span)
                .help("scalars are 128-bit integers; use a float (`2.0 ** 200`) for huge values")
        };
        if let (Some(x), Some(y)) = (as_int(l), as_int(r)) {
            let v = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div | BinOp::FloorDiv if x == i128::MIN && y == -1 => None,
                BinOp::Pow if y < 0 => return Ok(V::Float((x as f64).powf(y as f64))),
                BinOp::Pow => u32::try_from(y).ok().and_then(|y| x.checked_pow(y)),
                BinOp::Shl if y >= 0 => {
                    u32::try_from(y).ok().filter(|&s| s < 127).and_then(|s| x.checked_shl(s)).filter(|z| z >> y == x)
                }
                _ => Some(int_op(op, x, y).map_err(|e| self.int_error(e, op, op_span, re, None))?),
            };
            return v.map(V::Int).ok_or_else(overflow);
        }
        let (x, y) = (f_lane(l, false).at(0), f_lane(r, false).at(0));
        Ok(V::Float(float_op(op, x, y)))
    }
}
