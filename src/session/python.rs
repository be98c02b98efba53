//! Python kernels in a session: `@cuda.jit` definitions, their CUDA C instances, and Numba's
//! launches.
//!
//! A Python kernel is kept as Python until it is launched; then, as Numba does, it is typed
//! from the launch's arguments and lowered (`crate::python::lower`) to CUDA C, which joins the
//! module like a kernel the learner typed and runs through the ordinary launch path. The C is
//! registered in the source map with its map back to the Python, so findings, errors and
//! views point at the learner's Python lines.

use std::io::{self, Write};

use super::{Session, Status};
use crate::backend::BackendError;
use crate::buffer::{Buffer, Shape};
use crate::cuda::ast::RowMajor;
use crate::diag::{Diagnostic, SourceId};
use crate::dtype::DType;
use crate::python::{self, ArgType, CParam, Env, Global, Imports, Instance, PyFunction};
use crate::script::ast::{Expr, ExprKind, Launch};
use crate::script::eval;
use crate::value::Value;

/// The Python kernels of a session.
#[derive(Clone, Debug, Default)]
pub(crate) struct PythonKernels {
    functions: Vec<PyFunction>,
    imports: Imports,
    /// The instance each kernel has in the module now, and the generated source's id.
    instances: Vec<(Instance, SourceId)>,
    /// Module globals a host program's kernels read (Numba freezes them into the kernel).
    globals: Vec<(String, Global)>,
    /// Shapes of arrays a host program passed, where a buffer's own shape cannot say them
    /// (three dimensions).
    host_shapes: Vec<(String, Vec<usize>)>,
    /// The argument types the next launch's scalars have (a host program's `np.float32(2)`),
    /// where its statement text cannot say them.
    next_types: Option<Vec<Option<ArgType>>>,
    /// The interpreter that runs host Python typed at the prompt (`host_python.rs`).
    pub(super) host: super::host_python::HostSlot,
    /// The `import` lines typed at the prompt, which host Python inputs see too.
    pub(super) import_lines: Vec<String>,
}

/// A module-level name a host program's kernel reads.
#[derive(Clone, Debug, PartialEq)]
pub enum HostGlobal {
    /// A module or function, by its dotted path: `numpy`, `math.sqrt`, `numba.cuda`.
    Path(String),
    /// A number or dtype, frozen into the kernel.
    Value(Global),
}

impl super::Session {
    /// How a launch of `kernel` is written: Numba's brackets for a Python kernel.
    pub(crate) fn syntax_of(&self, kernel: &str) -> crate::render::launch::Syntax {
        if self.is_python_kernel(kernel) {
            crate::render::launch::Syntax::Numba
        } else {
            crate::render::launch::Syntax::Cuda
        }
    }

    /// The Python kernels defined (not device functions), by name.
    pub fn python_kernel_names(&self) -> Vec<&str> {
        self.work.python().functions().iter().filter(|f| !f.device).map(|f| f.name.as_str()).collect()
    }
}

impl PythonKernels {
    pub(crate) fn get(&self, name: &str) -> Option<&PyFunction> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Drop the Python function `name` (a CUDA C kernel took its name): whether there was one.
    pub(crate) fn forget(&mut self, name: &str) -> bool {
        let before = self.functions.len();
        self.functions.retain(|f| f.name != name);
        self.instances.retain(|(i, _)| i.kernel != name);
        self.functions.len() != before
    }

    pub(crate) fn functions(&self) -> &[PyFunction] {
        &self.functions
    }

    /// The CUDA C a kernel was last lowered to.
    pub(crate) fn instance(&self, name: &str) -> Option<&Instance> {
        self.instances.iter().find(|(i, _)| i.kernel == name).map(|(i, _)| i)
    }

    /// The shape a host program gave array `name`, where its buffer's own cannot say it.
    pub(crate) fn host_shape(&self, name: &str) -> Option<&[usize]> {
        self.host_shapes.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_slice())
    }

    pub(crate) fn clear(&mut self) {
        *self = PythonKernels::default();
    }
}

impl Session {
    /// The names a host program's kernels read from its module (imports, constants, dtypes).
    pub fn python_globals(&mut self, globals: Vec<(String, HostGlobal)>) {
        for (name, g) in globals {
            match g {
                HostGlobal::Path(path) => {
                    self.work.python_mut().imports.bind(&name, &python::parse::canonical_module(&path))
                }
                HostGlobal::Value(v) => {
                    self.work.python_mut().globals.retain(|(n, _)| n != &name);
                    self.work.python_mut().globals.push((name, v));
                }
            }
        }
    }

    /// Give buffer `name` a host program's array: its bytes, or, for a `device_array` never
    /// written, no values at all (reading one is then reported, as on a real GPU's memory).
    /// A buffer that already holds exactly these bytes is kept, with what it knows of which
    /// elements were written.
    pub fn set_host_array(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[usize],
        bytes: &[u8],
        fresh: bool,
    ) -> Result<(), String> {
        let len: usize = shape.iter().product();
        if len.checked_mul(dtype.size()) != Some(bytes.len()) {
            return Err(format!("array `{name}`: {} bytes for {len} elements of {dtype}", bytes.len()));
        }
        let buf_shape = match shape {
            [r, c] => Shape::D2(*r, *c),
            _ => Shape::D1(len),
        };
        let same =
            self.buffer(name).is_some_and(|b| b.dtype() == dtype && b.shape() == buf_shape && b.bytes() == bytes);
        self.work.python_mut().host_shapes.retain(|(n, _)| n != name);
        if shape.len() == 3 || shape.is_empty() {
            self.work.python_mut().host_shapes.push((name.to_string(), shape.to_vec()));
        }
        if same {
            return Ok(());
        }
        let buf = if fresh {
            Buffer::empty(dtype, buf_shape)
        } else {
            let mut b = Buffer::zeros(dtype, buf_shape);
            b.bytes_mut().copy_from_slice(bytes);
            b
        };
        self.work.set_buffer(name, buf);
        Ok(())
    }

    /// The types of the next launch's arguments where its text cannot say them (`None` for
    /// those it can).
    pub fn python_next_types(&mut self, types: Vec<Option<ArgType>>) {
        self.work.python_mut().next_types = Some(types);
    }

    /// The last launch's kernel time in milliseconds: measured on the GPU, the cost model's
    /// estimate on the simulator.
    pub fn last_kernel_ms(&self) -> Option<f64> {
        let report = &self.record.last()?.report;
        report.kernel_ms.map(f64::from).or_else(|| report.cost.as_ref().map(|c| c.estimate.time_us / 1000.0))
    }

    /// Python text: keep its `@cuda.jit` functions and imports; report what it cannot be.
    pub(super) fn define_python(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        let text = self.text(id);
        // A kernel's last lines typed without their indentation would run as host code.
        if let Some(d) = python::parse::dedented_body(id, &text) {
            self.report(&d, out)?;
            return Ok(Status::Error);
        }
        // Host code (a loop, a plain function, a print): the session's Python runs it.
        if python::parse::is_host_code(&text) {
            let status = self.host_python(id, None, false, out)?;
            if status != Status::Error {
                let defined = python::parse::host_functions(&text);
                self.python_globals(
                    defined.into_iter().map(|n| (n, HostGlobal::Value(Global::HostFunction))).collect(),
                );
            }
            return Ok(status);
        }
        let snippet = match python::read_snippet(id, &text) {
            Ok(s) => s,
            Err(diags) => {
                for d in &diags {
                    self.report(d, out)?;
                }
                return Ok(Status::Error);
            }
        };
        self.work.python_mut().imports.merge(&snippet.imports);
        for line in text.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")) {
            if !self.work.python().import_lines.iter().any(|l2| l2 == line) {
                self.work.python_mut().import_lines.push(line.to_string());
            }
        }
        let mut status = Status::Ok;
        for f in snippet.functions {
            // A CUDA C kernel of the same name counts: the Python one takes its name.
            let replaced = self.work.python().functions.iter().any(|g| g.name == f.name)
                || self.work.module().items().iter().any(|i| i.name == f.name);
            self.work.python_mut().functions.retain(|g| g.name != f.name);
            self.work.python_mut().instances.retain(|(i, _)| i.kernel != f.name);
            let what = if f.device { "device function" } else { "kernel" };
            self.work.sources_mut().name_item(id, format!("{what} {}", f.name));
            let params: Vec<&str> = f.params.iter().map(|(p, _)| p.as_str()).collect();
            let verb = if replaced { "redefined" } else { "defined" };
            let sig = format!("{}({})", f.name, params.join(", "));
            self.work.python_mut().functions.push(f.clone());
            writeln!(out, "{} Python {what} {}", self.options.style.dim(verb), self.options.style.bold(&sig))?;
            if f.device {
                continue;
            }
            // Numba compiles at the first launch; gridlab reads the kernel now, for the types a
            // launch would most likely give it, so a mistake shows before any launch.
            let guess = self.guess_types(&f);
            // A mistake only if the kernel fails for integer arrays too: a kernel meant for
            // integers (`a[i] & 1`) is no mistake for having failed the float guess.
            let as_integers: Vec<ArgType> = guess
                .iter()
                .map(|a| match a {
                    ArgType::Array { ndim, .. } => ArgType::Array { dtype: DType::I64, ndim: *ndim },
                    other => other.clone(),
                })
                .collect();
            // Where both fail, the one that got further through the kernel says more: a float
            // guess stopped by `cuda.atomic.inc` on what is an integer array is gridlab's
            // guess at fault, not the learner's line.
            let lowered = self.lower(&f, &guess).or_else(|e| {
                self.lower(&f, &as_integers).map_err(|e2| {
                    let at = |d: &[Diagnostic]| d.first().and_then(|d| d.span).map(|s| s.lo);
                    if at(&e2) > at(&e) { e2 } else { e }
                })
            });
            match lowered {
                Ok(inst) => {
                    for w in &inst.warnings {
                        self.report(w, out)?;
                    }
                    let hint = format!("(typed at each launch, as Numba does; `:cuda {}` shows its CUDA C)", f.name);
                    let hint = crate::diag::wrap(&hint, self.options.style.width, 2);
                    writeln!(out, "  {}", self.options.style.dim(&hint))?;
                }
                Err(diags) => {
                    for d in &diags {
                        self.report(d, out)?;
                    }
                    status = Status::Error;
                }
            }
        }
        Ok(status)
    }

    /// The argument types a launch would most likely give `f`, read from its body and the
    /// device functions it calls.
    fn guess_types(&self, f: &PyFunction) -> Vec<ArgType> {
        let functions = |name: &str| self.work.python().get(name).cloned();
        python::guess_types_with(f, &functions)
    }

    fn lower(&self, f: &PyFunction, args: &[ArgType]) -> Result<Instance, Vec<Diagnostic>> {
        let functions = |name: &str| self.work.python().get(name).cloned();
        let globals = |name: &str| self.python_global(name);
        let env = Env { functions: &functions, globals: &globals, imports: &self.work.python().imports };
        python::lower(&env, f, args)
    }

    /// A module-level name a kernel reads: a session scalar or `#define`, or a dtype.
    fn python_global(&self, name: &str) -> Option<Global> {
        let global = self.work.python().globals.iter().rev().find(|(n, _)| n == name).map(|(_, g)| g.clone());
        // A host function's name says only what a kernel cannot call: a scalar of the same name
        // made since (`helper = 3`) is what the kernel reads.
        if global.as_ref().is_some_and(|g| !matches!(g, Global::HostFunction)) {
            return global;
        }
        let value =
            self.work.scalars().iter().chain(self.work.constants()).rev().find(|(n, _)| n == name).map(|(_, v)| v);
        match value {
            Some(Value::Int(i)) => i64::try_from(*i).ok().map(Global::Int),
            Some(Value::Float(f)) => Some(Global::Float(*f)),
            Some(Value::Bool(b)) => Some(Global::Bool(*b)),
            _ => global,
        }
    }

    /// Whether `name` is a Python kernel.
    pub(super) fn is_python_kernel(&self, name: &str) -> bool {
        self.work.python().get(name).is_some()
    }

    /// A launch of a Python kernel: lower it for the arguments' types, put the C in the
    /// module, and launch that with each array's shape passed after it.
    pub(super) fn python_launch(&mut self, launch: &Launch, text: &str) -> Result<Launch, Vec<Diagnostic>> {
        let Some(f) = self.work.python().get(&launch.kernel).cloned() else {
            return Err(vec![
                Diagnostic::error(format!("`{}` is not a Python kernel", launch.kernel)).at(launch.kernel_span),
            ]);
        };
        if launch.args.len() != f.params.len() {
            let params: Vec<&str> = f.params.iter().map(|(p, _)| p.as_str()).collect();
            // A Python parameter has no type until a launch gives one: one the kernel never
            // indexes is taken for a number, as when the kernel is read at its definition.
            let guess = self.guess_types(&f);
            let length = matches!(guess.get(launch.args.len()), Some(ArgType::Scalar(d)) if !d.is_float());
            return Err(vec![super::launch::wrong_arg_count(
                launch,
                text,
                &f.name,
                &f.params.len().to_string(),
                f.params.len(),
                &format!("{}({})", f.name, params.join(", ")),
                length && launch.args.len() + 1 == f.params.len(),
                |name| self.work.buffer(name).is_some(),
            )]);
        }
        let mut types = Vec::new();
        let mut shapes = Vec::new();
        let given = self.work.python_mut().next_types.take().unwrap_or_default();
        for (i, arg) in launch.args.iter().enumerate() {
            let (ty, shape) = self.python_arg(arg, text).map_err(|d| vec![d])?;
            let ty = match (given.get(i), &ty) {
                (Some(Some(t @ ArgType::Scalar(_))), ArgType::Scalar(_)) => t.clone(),
                _ => ty,
            };
            types.push(ty);
            shapes.push(shape);
        }
        let current = self.work.python().instances.iter().find(|(i, _)| i.kernel == f.name && i.args == types).cloned();
        let instance = match current {
            Some((inst, _)) => inst,
            None => {
                let inst = self.lower(&f, &types)?;
                let name = format!("{} (CUDA C from Python)", f.name);
                let id = self.work.sources_mut().add_generated(name, inst.text.clone(), inst.map.clone());
                self.add_generated(id, &inst.text, &inst.kernel, row_major(&inst.params))?;
                self.work.python_mut().instances.retain(|(i, _)| i.kernel != f.name);
                self.work.python_mut().instances.push((inst.clone(), id));
                inst
            }
        };
        let mut args = Vec::new();
        for p in &instance.params {
            match p {
                CParam::Pointer { arg } | CParam::Scalar { arg, .. } => args.push(launch.args[*arg].clone()),
                CParam::Extent { arg, dim } => {
                    let extent = shapes[*arg].get(*dim).copied().unwrap_or(0);
                    args.push(Expr { kind: ExprKind::Int(extent as i128), span: launch.args[*arg].span });
                }
            }
        }
        Ok(Launch { kernel: instance.kernel.clone(), args, ..launch.clone() })
    }

    /// Put generated C in the module and load it, as typed C is.
    /// `kernel`'s arrays of two or more dimensions are `arrays`, for the simulator's checks.
    fn add_generated(
        &mut self,
        id: SourceId,
        text: &str,
        kernel: &str,
        arrays: Vec<RowMajor>,
    ) -> Result<(), Vec<Diagnostic>> {
        let previous = self.work.module().clone();
        self.work.module_mut().add(id, text)?;
        self.work.module_mut().set_row_major(kernel, arrays);
        self.ensure_resolved();
        let backend = self.backends.active();
        if let Err(e) = backend.load(self.work.module(), self.work.sources()) {
            self.work.restore_module(previous);
            return Err(match e {
                BackendError::Compile(diags) => diags,
                other => vec![Diagnostic::error(other.to_string())],
            });
        }
        Ok(())
    }

    /// The type a launch argument gives a Python kernel, and an array's shape.
    fn python_arg(&self, arg: &Expr, text: &str) -> Result<(ArgType, Vec<usize>), Diagnostic> {
        if let ExprKind::Name(name) = &arg.kind
            && let Some((_, buf)) = self.work.buffers().iter().find(|(n, _)| n == name)
        {
            let host = self
                .work
                .python()
                .host_shapes
                .iter()
                .find(|(n, s)| n == name && s.iter().product::<usize>() == buf.len());
            let shape = match (host, buf.shape()) {
                (Some((_, s)), _) if !s.is_empty() => s.clone(),
                (_, Shape::D1(n)) => vec![n],
                (_, Shape::D2(r, c)) => vec![r, c],
            };
            return Ok((ArgType::Array { dtype: buf.dtype(), ndim: shape.len() }, shape));
        }
        // Numba types a Python int as int64, a float as float64.
        match eval::eval(arg, self, text)? {
            Value::Int(_) => Ok((ArgType::Scalar(DType::I64), Vec::new())),
            Value::Float(_) => Ok((ArgType::Scalar(DType::F64), Vec::new())),
            Value::Bool(_) => Ok((ArgType::Scalar(DType::Bool), Vec::new())),
            Value::Array(_) => Err(Diagnostic::error("a Python kernel takes whole arrays by name")
                .at(arg.span)
                .help("give the array a name first: `b = a[4:]` is not a view in gridlab; pass `a` and the offset as a number")),
            Value::Dim3(_) => Err(Diagnostic::error("a `dim3` is a launch size, not a kernel argument").at(arg.span)),
        }
    }

    /// `:cuda NAME`: the CUDA C a Python kernel means.
    pub(super) fn show_cuda(&mut self, name: &str, out: &mut dyn Write) -> io::Result<Status> {
        let name = name.trim();
        if name.is_empty() {
            let names: Vec<&str> =
                self.work.python().functions().iter().filter(|f| !f.device).map(|f| f.name.as_str()).collect();
            if names.is_empty() {
                writeln!(out, "no Python kernels yet; define one with `@cuda.jit` above a `def`")?;
            } else {
                writeln!(out, "Python kernels: {}; `:cuda NAME` shows one in CUDA C", names.join(", "))?;
            }
            return Ok(Status::Ok);
        }
        let Some(f) = self.work.python().get(name).cloned() else {
            let d = Diagnostic::error(format!("no Python kernel named `{name}`"));
            let names: Vec<&str> = self.work.python().functions().iter().map(|f| f.name.as_str()).collect();
            let d = match crate::diag::suggest::closest(name, names.iter().copied()) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d.help("define one with `@cuda.jit` above a `def`; `:kernels` lists what there is"),
            };
            return self.report(&d, out);
        };
        let (inst, note) = match self.work.python().instance(name).cloned() {
            Some(i) => {
                let types: Vec<String> = i.args.iter().map(arg_name).collect();
                (i, format!("// {} as launched last, for ({})", f.name, types.join(", ")))
            }
            None => match self.lower(&f, &self.guess_types(&f)) {
                Ok(i) => {
                    let types: Vec<String> = i.args.iter().map(arg_name).collect();
                    (i, format!("// {} for ({}): a launch types it from its own arguments", f.name, types.join(", ")))
                }
                Err(diags) => {
                    for d in &diags {
                        self.report(d, out)?;
                    }
                    return Ok(Status::Error);
                }
            },
        };
        writeln!(out, "{}", self.options.style.dim(&note))?;
        write!(out, "{}", inst.text)?;
        Ok(Status::Ok)
    }

    /// One row per Python function for `:kernels`: kind, signature, where defined.
    pub(super) fn python_rows(&self) -> Vec<[String; 3]> {
        self.work
            .python()
            .functions()
            .iter()
            .map(|f| {
                let kind = if f.device { "@cuda.jit(device=True)" } else { "@cuda.jit" };
                let params: Vec<&str> = f.params.iter().map(|(p, _)| p.as_str()).collect();
                [kind.to_string(), format!("{}({})", f.name, params.join(", ")), self.work.sources().location(f.span)]
            })
            .collect()
    }
}

fn arg_name(a: &ArgType) -> String {
    match a {
        ArgType::Array { dtype, ndim } => {
            format!("{}[{}]", python::types::numba_name(*dtype), vec![":"; *ndim].join(", "))
        }
        ArgType::Scalar(d) => python::types::numba_name(*d).to_string(),
    }
}

/// The arrays of two or more dimensions among a lowered kernel's C parameters, each with the
/// parameters that carry its extents (`a`, `a_rows`, `a_cols`).
fn row_major(params: &[CParam]) -> Vec<RowMajor> {
    let mut arrays = Vec::new();
    for (pointer, param) in params.iter().enumerate() {
        let CParam::Pointer { arg } = param else { continue };
        let mut extents: Vec<(usize, usize)> = params
            .iter()
            .enumerate()
            .filter_map(|(i, q)| match q {
                CParam::Extent { arg: a, dim } if a == arg => Some((*dim, i)),
                _ => None,
            })
            .collect();
        extents.sort_unstable();
        if extents.len() >= 2 && extents.iter().enumerate().all(|(d, &(dim, _))| d == dim) {
            arrays.push(RowMajor { pointer, extents: extents.into_iter().map(|(_, i)| i).collect() });
        }
    }
    arrays
}
