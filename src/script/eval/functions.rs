//! The built-in statement functions: constructors (`zeros`, `arange`, `random` ...), reductions
//! and elementwise functions (`sum`, `max`, `sqrt` ...), and the checks of their arguments.
//! Their names, usage and help are the one table in `script/builtins.rs`, which completion,
//! colour and `:help functions` read; a unit test keeps the table and these arms in step.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::buffer::{Buffer, Num, Shape};
use crate::diag::{Diagnostic, Span};
use crate::dtype::DType;
use crate::script::ast::{Expr, ExprKind, Kwarg};
use crate::value::{Array, wrap};

use super::alloc::count_of;
use super::numpy::{V, b_lane, f_lane, i_lane, round_to, sum_dtype};
use super::{Cx, suggestion_runs};

impl<'a> Cx<'a> {
    pub(super) fn scalar_num(&self, e: &Expr, what: &str) -> Result<Num, Diagnostic> {
        match self.eval(e)? {
            V::Int(i) => Ok(Num::Int(i)),
            V::Bool(b) => Ok(Num::Int(b as i128)),
            V::Float(f) => Ok(Num::Float(f)),
            V::Elem(n, _) => Ok(n),
            v @ (V::Arr(_) | V::Dim3(_)) => {
                Err(Diagnostic::error(format!("{what} must be a number, not {}", v.type_name())).at(e.span))
            }
        }
    }

    /// An integer argument: counts, indices, seeds.
    pub(super) fn int_arg(&self, e: &Expr, what: &str) -> Result<i128, Diagnostic> {
        match self.eval(e)? {
            V::Int(i) | V::Elem(Num::Int(i), _) => Ok(i),
            V::Bool(b) => Ok(b as i128),
            v => {
                let d = Diagnostic::error(format!("{what} must be an integer, not {}", v.type_name())).at(e.span);
                Err(if matches!(v, V::Float(_) | V::Elem(..)) {
                    d.help(format!("convert it with `int({})`", self.text(e)))
                } else {
                    d
                })
            }
        }
    }

    fn shape_arg(&self, e: &Expr) -> Result<Shape, Diagnostic> {
        let count = |x: &Expr| -> Result<usize, Diagnostic> {
            let n = self.int_arg(x, "a size")?;
            count_of(n, "a size", x.span, self.env.max_alloc_bytes())
        };
        match &e.kind {
            ExprKind::Tuple(items) if items.len() == 2 => Ok(Shape::D2(count(&items[0])?, count(&items[1])?)),
            ExprKind::Tuple(items) => {
                Err(Diagnostic::error(format!("arrays have 1 or 2 dimensions, not {}", items.len()))
                    .at(e.span)
                    .help("use a length `n` or a shape `(rows, cols)`"))
            }
            _ => Ok(Shape::D1(count(e)?)),
        }
    }

    /// Split a constructor's arguments: an optional dtype (last positional name or `dtype=`).
    fn dtype_arg<'e>(
        &self,
        args: &'e [Expr],
        kwargs: &'e [Kwarg],
        default: DType,
    ) -> Result<(&'e [Expr], DType), Diagnostic> {
        let as_dtype = |e: &Expr| match &e.kind {
            ExprKind::Name(n) if self.env.buffer(n).is_none() && self.env.scalar(n).is_none() => DType::parse(n),
            _ => None,
        };
        if let Some(k) = kwargs.iter().find(|k| k.name == "dtype") {
            let d = as_dtype(&k.value).ok_or_else(|| {
                Diagnostic::error(format!("`{}` is not a dtype", self.text(&k.value)))
                    .at(k.value.span)
                    .help(format!("dtypes are {}", DType::names().join(", ")))
            })?;
            return Ok((args, d));
        }
        match args.split_last() {
            Some((last, rest)) if as_dtype(last).is_some() => Ok((rest, as_dtype(last).unwrap_or(default))),
            _ => Ok((args, default)),
        }
    }

    fn arity(
        &self,
        func: &str,
        span: Span,
        args: &[Expr],
        range: (usize, usize),
        usage: &str,
    ) -> Result<(), Diagnostic> {
        if args.len() < range.0 || args.len() > range.1 {
            let want = if range.0 == range.1 { range.0.to_string() } else { format!("{} to {}", range.0, range.1) };
            return Err(Diagnostic::error(format!("`{func}` takes {want} arguments, {} given", args.len()))
                .at(span)
                .help(format!("usage: {usage}")));
        }
        Ok(())
    }

    fn no_kwargs(&self, func: &str, kwargs: &[Kwarg], allowed: &[&str]) -> Result<(), Diagnostic> {
        if let Some(k) = kwargs.iter().find(|k| !allowed.contains(&k.name.as_str())) {
            let help = if allowed.is_empty() {
                format!("`{func}` takes no keyword arguments")
            } else {
                format!("`{func}` accepts {}", allowed.iter().map(|a| format!("`{a}=`")).collect::<Vec<_>>().join(", "))
            };
            return Err(Diagnostic::error(format!("unknown keyword argument `{}`", k.name)).at(k.name_span).help(help));
        }
        Ok(())
    }

    pub(super) fn call(
        &self,
        func: &str,
        func_span: Span,
        args: &[Expr],
        kwargs: &[Kwarg],
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        let span = e.span;
        match func {
            "zeros" | "empty" | "ones" | "full" | "arange" | "linspace" | "random" | "randint" | "array" => {
                self.constructor(func, func_span, args, kwargs, e)
            }
            "copy" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (1, 1), "copy(a)")?;
                // A copy keeps which elements are unwritten.
                match self.eval_unread(&args[0])? {
                    v @ V::Arr(_) => Ok(v),
                    v => {
                        Err(Diagnostic::error(format!("`copy` takes an array, not {}", v.type_name())).at(args[0].span))
                    }
                }
            }
            "dim3" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (0, 3), "dim3(x), dim3(x, y) or dim3(x, y, z); missing sizes are 1")?;
                let mut d = [1u32; 3];
                for (slot, a) in d.iter_mut().zip(args) {
                    let n = self.int_arg(a, "a dim3 size")?;
                    *slot = u32::try_from(n).map_err(|_| {
                        Diagnostic::error(format!("a dim3 size is between 0 and {}, not {n}", u32::MAX))
                            .at(a.span)
                            .help("it counts blocks or threads along one axis")
                    })?;
                }
                Ok(V::Dim3(d))
            }
            "sizeof" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (1, 1), "sizeof(float), sizeof(int), sizeof(double)")?;
                self.size_of(&args[0])
            }
            "print" => Err(Diagnostic::error("`print` shows values on a line of its own")
                .at(func_span)
                .help("write `print(x)` alone, or just `x`; inside an expression use the value itself")),
            _ if func.contains('.') => Err(crate::script::habits::dotted_call(
                func,
                func_span,
                e,
                self.src,
                &|n| self.env.buffer(n).is_some() || self.env.scalar(n).is_some(),
                &|text| suggestion_runs(text, self.env),
            )),
            _ if crate::script::builtins::find(func).is_some() => {
                self.no_kwargs(func, kwargs, &[])?;
                let usage = format!("{func}(x)");
                if matches!(func, "min" | "max") && args.len() >= 2 {
                    return self.min_max_scalars(func, args);
                }
                self.arity(func, span, args, (1, 1), &usage)?;
                let v = if func == "len" { self.eval_unread(&args[0])? } else { self.eval(&args[0])? };
                if matches!(v, V::Dim3(_)) {
                    return Err(self.dim3_misused(&args[0]));
                }
                self.function(func, v, &args[0], e)
            }
            _ => {
                let d = Diagnostic::error(format!("unknown function `{func}`")).at(func_span).label("not a function");
                Err(match crate::diag::suggest::closest(func, crate::script::builtins::names()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d.help(format!(
                        "the functions are {} (`:help functions` says what each does)",
                        crate::script::builtins::names().collect::<Vec<_>>().join(", ")
                    )),
                })
            }
        }
    }

    fn min_max_scalars(&self, func: &str, args: &[Expr]) -> Result<V<'a>, Diagnostic> {
        let mut best: Option<(f64, V)> = None;
        for a in args {
            let v = self.eval(a)?;
            let Some(x) = (match &v {
                V::Int(i) => Some(*i as f64),
                V::Float(f) => Some(*f),
                V::Elem(n, _) => Some(n.as_f64()),
                _ => None,
            }) else {
                return Err(Diagnostic::error(format!(
                    "`{func}` of several values needs numbers, not {}",
                    v.type_name()
                ))
                .at(a.span)
                .help(format!("`{func}(a)` reduces one array")));
            };
            let better = best.as_ref().is_none_or(|(b, _)| if func == "min" { x < *b } else { x > *b });
            if better {
                best = Some((x, v));
            }
        }
        Ok(best.map(|(_, v)| v).unwrap_or(V::Int(0)))
    }

    fn function(&self, func: &str, v: V<'a>, arg: &Expr, e: &Expr) -> Result<V<'a>, Diagnostic> {
        let arr_needed = |v: &V| {
            Diagnostic::error(format!("`{func}` needs an array, not {}", v.type_name()))
                .at(arg.span)
                .help(format!("e.g. `{func}(a)` where `a` is an array"))
        };
        match func {
            "len" => match &v {
                V::Arr(a) => Ok(V::Int(a.len() as i128)),
                _ => Err(arr_needed(&v)),
            },
            "all" | "any" | "count" => {
                let (n_true, n) = match &v {
                    V::Arr(a) => {
                        let lane = b_lane(&v);
                        let mut n_true = 0;
                        for i in 0..a.len() {
                            self.tick(i, e)?;
                            n_true += lane.at(i) as usize;
                        }
                        (n_true, a.len())
                    }
                    s => (s.truth().unwrap_or(false) as usize, 1),
                };
                Ok(match func {
                    "all" => V::Bool(n_true == n),
                    "any" => V::Bool(n_true > 0),
                    _ => V::Int(n_true as i128),
                })
            }
            "sum" | "mean" | "min" | "max" => {
                let V::Arr(a) = &v else {
                    return Ok(if func == "mean" {
                        V::Float(v.truth().map_or(0.0, |_| f_lane(&v, false).at(0)))
                    } else {
                        v
                    });
                };
                if a.is_empty() && func != "sum" {
                    return Err(Diagnostic::error(format!("`{func}` of an empty array")).at(arg.span));
                }
                let n = a.len();
                Ok(match (a.dtype(), func) {
                    (Some(d), _) if d.is_float() => {
                        let x = f_lane(&v, false);
                        // Sums start from 0.0 (Rust's from -0.0, so an empty sum would be -0).
                        let mut acc = match func {
                            "min" => f64::INFINITY,
                            "max" => f64::NEG_INFINITY,
                            _ => 0.0,
                        };
                        for i in 0..n {
                            self.tick(i, e)?;
                            acc = match func {
                                "min" => nan_min(acc, x.at(i)),
                                "max" => nan_max(acc, x.at(i)),
                                _ => acc + x.at(i),
                            };
                        }
                        if func == "mean" {
                            acc /= n as f64;
                        }
                        V::Elem(Num::Float(round_to(acc, d)), d)
                    }
                    (Some(_), "mean") => {
                        let x = f_lane(&v, false);
                        let mut acc = 0.0;
                        for i in 0..n {
                            self.tick(i, e)?;
                            acc += x.at(i);
                        }
                        V::Elem(Num::Float(acc / n as f64), DType::F64)
                    }
                    (Some(d), _) => {
                        let x = i_lane(&v);
                        let mut acc: Option<i128> = None;
                        for i in 0..n {
                            self.tick(i, e)?;
                            let y = x.at(i);
                            acc = Some(match (acc, func) {
                                (None, "sum") => y,
                                (None, _) => y,
                                (Some(s), "sum") => s.wrapping_add(y),
                                (Some(s), "min") => s.min(y),
                                (Some(s), _) => s.max(y),
                            });
                        }
                        let acc = acc.unwrap_or(0);
                        if func == "sum" {
                            V::Elem(Num::Int(wrap(acc, sum_dtype(d))), sum_dtype(d))
                        } else {
                            V::Elem(Num::Int(acc), d)
                        }
                    }
                    (None, _) => {
                        let x = b_lane(&v);
                        let mut trues = 0usize;
                        for i in 0..n {
                            self.tick(i, e)?;
                            trues += x.at(i) as usize;
                        }
                        match func {
                            "sum" => V::Elem(Num::Int(trues as i128), DType::I64),
                            "mean" => V::Float(trues as f64 / n as f64),
                            "min" => V::Bool(trues == n),
                            _ => V::Bool(trues > 0),
                        }
                    }
                })
            }
            "abs" => self.unary_map(&v, e, |x| x.abs(), |i| i.checked_abs()),
            "round" => self.unary_map(&v, e, f64::round_ties_even, Some),
            "floor" => self.unary_map(&v, e, f64::floor, Some),
            "ceil" => self.unary_map(&v, e, f64::ceil, Some),
            "sqrt" | "exp" | "log" => {
                let f: fn(f64) -> f64 = match func {
                    "sqrt" => f64::sqrt,
                    "exp" => f64::exp,
                    _ => f64::ln,
                };
                match &v {
                    V::Int(i) => self.unary_map(&V::Float(*i as f64), e, f, Some),
                    V::Bool(b) => self.unary_map(&V::Float(*b as u8 as f64), e, f, Some),
                    V::Elem(Num::Int(i), _) => self.unary_map(&V::Elem(Num::Float(*i as f64), DType::F64), e, f, Some),
                    V::Arr(a) if a.dtype().is_none_or(|d| !d.is_float()) => {
                        // Integers and booleans give `f64`, as in numpy.
                        let x = f_lane(&v, false);
                        let mut out = self.new_buffer(e, DType::F64, a.shape())?;
                        for i in 0..a.len() {
                            self.tick(i, e)?;
                            out.set_f64(i, f(x.at(i)));
                        }
                        Ok(V::Arr(Array::numbers(out)))
                    }
                    v => self.unary_map(v, e, f, Some),
                }
            }
            "float" => match v {
                V::Int(i) | V::Elem(Num::Int(i), _) => Ok(V::Float(i as f64)),
                V::Bool(b) => Ok(V::Float(b as u8 as f64)),
                V::Float(f) | V::Elem(Num::Float(f), _) => Ok(V::Float(f)),
                V::Dim3(_) => Err(self.dim3_misused(arg)),
                V::Arr(_) => Err(Diagnostic::error("`float` converts a scalar, not an array")
                    .at(arg.span)
                    .help(format!("to convert an array, write `array({}, f64)`", self.text(arg)))),
            },
            "int" => match v {
                V::Int(i) | V::Elem(Num::Int(i), _) => Ok(V::Int(i)),
                V::Bool(b) => Ok(V::Int(b as i128)),
                V::Float(f) | V::Elem(Num::Float(f), _) if f.is_finite() => Ok(V::Int(f.trunc() as i128)),
                V::Float(_) | V::Elem(..) => {
                    Err(Diagnostic::error("can't convert nan or inf to an integer").at(arg.span))
                }
                V::Dim3(_) => Err(self.dim3_misused(arg)),
                V::Arr(_) => Err(Diagnostic::error("`int` converts a scalar, not an array")
                    .at(arg.span)
                    .help(format!("to convert an array, write `array({}, i32)`", self.text(arg)))),
            },
            _ => unreachable!("`{func}` is handled in `call`"),
        }
    }

    /// Apply a function elementwise, keeping the dtype (booleans become `i64` 0 and 1).
    pub(super) fn unary_map(
        &self,
        v: &V<'_>,
        e: &Expr,
        f: fn(f64) -> f64,
        g: fn(i128) -> Option<i128>,
    ) -> Result<V<'a>, Diagnostic> {
        let overflow = || Diagnostic::error("integer overflow").at(e.span);
        Ok(match v {
            V::Int(i) => V::Int(g(*i).ok_or_else(overflow)?),
            V::Bool(b) => V::Int(*b as i128),
            V::Float(x) => V::Float(f(*x)),
            V::Elem(Num::Int(i), d) => V::Elem(Num::Int(wrap(g(*i).ok_or_else(overflow)?, *d)), *d),
            V::Elem(Num::Float(x), d) => V::Elem(Num::Float(round_to(f(*x), *d)), *d),
            V::Dim3(_) => return Err(self.dim3_misused(e)),
            V::Arr(a) => {
                let dtype = a.dtype().unwrap_or(DType::I64);
                let mut out = self.new_buffer(e, dtype, a.shape())?;
                if dtype.is_float() {
                    let x = f_lane(v, false);
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.set_f64(i, f(x.at(i)));
                    }
                } else {
                    let x = i_lane(v);
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        let y = x.at(i);
                        out.set_int(i, wrap(g(y).unwrap_or(y), dtype));
                    }
                }
                V::Arr(Array::numbers(out))
            }
        })
    }

    fn constructor(
        &self,
        func: &str,
        func_span: Span,
        args: &[Expr],
        kwargs: &[Kwarg],
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        let default = if func == "randint" { DType::I32 } else { DType::F32 };
        let allowed: &[&str] = match func {
            "random" => &["dtype", "seed"],
            "randint" => &["dtype", "seed"],
            _ => &["dtype"],
        };
        self.no_kwargs(func, kwargs, allowed)?;
        let (args, dtype) = self.dtype_arg(args, kwargs, default)?;
        let (range, usage) = match func {
            "zeros" | "empty" | "ones" => {
                ((1, 1), format!("{func}(n) or {func}((rows, cols)), optionally with a dtype: {func}(n, i32)"))
            }
            "full" => ((2, 2), "full(n, value[, dtype])".to_string()),
            "arange" => ((1, 3), "arange(stop) or arange(start, stop[, step]), optionally with a dtype".to_string()),
            "linspace" => ((3, 3), "linspace(start, stop, n[, dtype]), including stop".to_string()),
            "random" => ((1, 1), "random(n, seed=S[, dtype]): uniform in [0, 1)".to_string()),
            "randint" => ((3, 3), "randint(n, lo, hi, seed=S[, dtype]): integers in [lo, hi)".to_string()),
            _ => ((1, 1), "array([1, 2, 3], i32) or array(a, f64)".to_string()),
        };
        self.arity(func, e.span, args, range, &usage)?;
        let seed = match kwargs.iter().find(|k| k.name == "seed") {
            Some(k) => {
                let s = self.int_arg(&k.value, "a seed")?;
                u64::try_from(s).map_err(|_| {
                    Diagnostic::error(format!("a seed is between 0 and 2^64 - 1, not {s}")).at(k.value.span)
                })?
            }
            None => 0,
        };
        let sized = |shape: Shape| self.check_alloc(e.span, dtype, shape.len()).map(|()| shape);
        let arr = match func {
            "empty" => Array::numbers(Buffer::empty(dtype, sized(self.shape_arg(&args[0])?)?)),
            "zeros" | "ones" | "full" => {
                let shape = sized(self.shape_arg(&args[0])?)?;
                let v = match func {
                    "zeros" => Num::Int(0),
                    "ones" => Num::Int(1),
                    _ => self.fit(self.scalar_num(&args[1], "the fill value")?, dtype, &args[1])?,
                };
                // Zeroed memory, which the system gives without writing it; or one element's
                // bytes, copied.
                let mut b = Buffer::zeros(dtype, shape);
                if func != "zeros" {
                    b.fill(v);
                }
                Array::numbers(b)
            }
            "arange" => {
                let nums: Vec<Num> =
                    args.iter().map(|a| self.scalar_num(a, "an `arange` bound")).collect::<Result<_, _>>()?;
                let (start, stop, step) = match nums[..] {
                    [stop] => (Num::Int(0), stop, Num::Int(1)),
                    [start, stop] => (start, stop, Num::Int(1)),
                    [start, stop, step] => (start, stop, step),
                    _ => unreachable!("arity checked"),
                };
                if step.as_f64() == 0.0 {
                    return Err(Diagnostic::error("`arange` step can't be zero").at(args[2].span));
                }
                let count = ((stop.as_f64() - start.as_f64()) / step.as_f64()).ceil().max(0.0);
                if !count.is_finite() {
                    return Err(Diagnostic::error("`arange` bounds must be finite").at(e.span));
                }
                let shape = sized(Shape::D1(count.min(u64::MAX as f64) as usize))?;
                match (start, step) {
                    (Num::Int(a), Num::Int(s)) => self.build(
                        e,
                        dtype,
                        shape,
                        (0..shape.len()).map(|i| Num::Int(a.wrapping_add(s.wrapping_mul(i as i128)))),
                    )?,
                    _ => self.build(
                        e,
                        dtype,
                        shape,
                        (0..shape.len()).map(|i| Num::Float(start.as_f64() + step.as_f64() * i as f64)),
                    )?,
                }
            }
            "linspace" => {
                let a = self.scalar_num(&args[0], "`linspace` start")?.as_f64();
                let b = self.scalar_num(&args[1], "`linspace` stop")?.as_f64();
                let n = self.int_arg(&args[2], "`linspace` count")?;
                let n = count_of(n, "a count", args[2].span, self.env.max_alloc_bytes())?;
                let shape = sized(Shape::D1(n))?;
                let step = if n > 1 { (b - a) / (n - 1) as f64 } else { 0.0 };
                self.build(
                    e,
                    dtype,
                    shape,
                    (0..n).map(|i| Num::Float(if i + 1 == n && n > 1 { b } else { a + step * i as f64 })),
                )?
            }
            "random" => {
                if !dtype.is_float() {
                    return Err(Diagnostic::error(format!("`random` makes floats, not {dtype}"))
                        .at(func_span)
                        .help("for integers use `randint(n, lo, hi, seed=S)`"));
                }
                let shape = sized(self.shape_arg(&args[0])?)?;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                self.build(e, dtype, shape, (0..shape.len()).map(|_| Num::Float(uniform(&mut rng, dtype))))?
            }
            "randint" => {
                if dtype.is_float() {
                    return Err(Diagnostic::error(format!("`randint` makes integers, not {dtype}"))
                        .at(func_span)
                        .help("for floats use `random(n, seed=S)`"));
                }
                let shape = sized(self.shape_arg(&args[0])?)?;
                let lo = self.int_arg(&args[1], "`randint`'s low bound")?;
                let hi = self.int_arg(&args[2], "`randint`'s high bound")?;
                let range = hi.checked_sub(lo).filter(|r| *r > 0 && *r <= u64::MAX as i128 + 1).ok_or_else(|| {
                    Diagnostic::error(format!("`randint` needs lo < hi, got [{lo}, {hi})"))
                        .at(args[1].span.to(args[2].span))
                        .help("the range is half-open: `randint(n, 0, 10)` gives 0 to 9")
                })?;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                self.build(
                    e,
                    dtype,
                    shape,
                    (0..shape.len()).map(|_| Num::Int(lo + below(&mut rng, range as u128) as i128)),
                )?
            }
            _ => match &args[0].kind {
                ExprKind::List(items) => self.list(items, e.span, dtype)?,
                _ => match self.eval(&args[0])? {
                    V::Arr(a) => {
                        self.check_alloc(e.span, dtype, a.len())?;
                        self.build(e, dtype, a.shape(), (0..a.len()).map(|i| a.num(i)))?
                    }
                    v => {
                        return Err(Diagnostic::error(format!(
                            "`array` takes a list or an array, not {}",
                            v.type_name()
                        ))
                        .at(args[0].span)
                        .help("e.g. `array([1, 2, 3], i32)`"));
                    }
                },
            },
        };
        Ok(V::Arr(arr))
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// `random`'s formula, stable forever: xoshiro256++ seeded by `seed_from_u64(seed)`, one
/// `next_u64()` per element; f32 takes the top 24 bits times 2^-24, f64 the top 53 bits times
/// 2^-53. Both are exact and lie in [0, 1).
pub(super) fn uniform(rng: &mut Xoshiro256PlusPlus, dtype: DType) -> f64 {
    let bits = rng.next_u64();
    if dtype == DType::F32 {
        (bits >> 40) as f64 * (1.0 / (1u64 << 24) as f64)
    } else {
        (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `randint`'s formula, stable forever: one `next_u64()` per element mapped to [0, range) by
/// the widening multiply `(x * range) >> 64` (Lemire's method without rejection: its bias is
/// below 2^-32 for ranges under 2^32).
pub(super) fn below(rng: &mut Xoshiro256PlusPlus, range: u128) -> u128 {
    (rng.next_u64() as u128 * range) >> 64
}
