//! Function bodies: statements and expressions, checked with C's rules into the typed AST.

use super::*;

pub(super) struct Fx<'m> {
    m: &'m Module<'m>,
    /// `None` while checking file-scope initialisers.
    this: Option<FuncId>,
    kind: FuncKind,
    ret: Type,
    locals: Vec<LocalVar>,
    local_const: Vec<bool>,
    local_arrays: Vec<MemVar>,
    local_array_const: Vec<bool>,
    shared: Vec<MemVar>,
    scopes: Vec<HashMap<String, Sym>>,
    calls: Vec<FuncId>,
    loops: usize,
    /// Open `switch`es: `break` may leave one, `continue` only a loop.
    switches: usize,
    /// Locals declared without a value and not yet assigned (in reading order).
    unassigned: HashSet<LocalId>,
    /// Names the function takes the address of (`&x`): its locals of those names live in
    /// memory, as a one-element local array does, so that they have an address.
    addressed: Vec<String>,
    /// How many of `locals` are the function's parameters (the first ones).
    params: usize,
    /// In a member function or constructor: the object (`this`) and its struct.
    object: Option<(LocalId, Arc<StructDef>)>,
    /// In a constructor: `return;` returns the object.
    ctor: bool,
    pub(super) warnings: Vec<Diagnostic>,
    /// How many times each parameter's name is used (read or written).
    param_uses: HashMap<LocalId, usize>,
    /// Number parameters a kernel updates from memory (`total += a[i]`): how many such
    /// updates, and the first. Warned about at the end if nothing else uses the parameter.
    accumulated: HashMap<LocalId, (usize, Span)>,
}

mod bits;
mod methods;
mod strings;

/// How a kernel learns an array's length, for the errors that meet `a.size`, `len(a)` and
/// `sizeof(a)` on a pointer.
const POINTER_LENGTH: &str = "pass the length as a parameter, `int n`, and give it at the launch: `k<<<blocks, threads>>>(a, len(a))` (a Python kernel under `@cuda.jit` can use `a.size`)";

/// The register variable a member access starts from (`v` in `v.a.x`), if it starts from one.
fn member_root_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Member { base, .. } => member_root_local(base),
        ExprKind::Local(id) => Some(*id),
        _ => None,
    }
}

/// An integer constant expression equal to 0: C's null pointer constant (`NULL` and `nullptr`
/// are predefined as 0).
fn is_null_constant(e: &Expr) -> bool {
    e.ty.scalar().is_some_and(|s| !s.is_float()) && matches!(const_eval(e), Some(Num::I(0)))
}

pub(super) fn err(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(msg).at(span)
}

impl<'m> Fx<'m> {
    pub(super) fn new(m: &'m Module<'m>, this: Option<FuncId>) -> Fx<'m> {
        Fx {
            m,
            this,
            kind: FuncKind::Device,
            ret: Type::Void,
            locals: Vec::new(),
            local_const: Vec::new(),
            local_arrays: Vec::new(),
            local_array_const: Vec::new(),
            shared: Vec::new(),
            scopes: vec![HashMap::new()],
            calls: Vec::new(),
            loops: 0,
            switches: 0,
            unassigned: HashSet::new(),
            addressed: Vec::new(),
            params: 0,
            object: None,
            ctor: false,
            warnings: Vec::new(),
            param_uses: HashMap::new(),
            accumulated: HashMap::new(),
        }
    }

    pub(super) fn function(&mut self, f: &syntax::FuncDef) -> CResult<Function> {
        let sig = &self.m.sigs[self.this.unwrap_or(0) as usize];
        self.kind = sig.kind;
        self.ret = sig.ret.clone();
        self.addressed = f.addressed.clone();
        self.params = sig.params.len();
        let mut params = sig.params.clone();
        if sig.kind == FuncKind::Kernel {
            for (p, d) in params.iter_mut().zip(&sig.defaults) {
                if let Some(d) = d {
                    p.default = Some(self.kernel_default(d, &p.ty, &p.name)?);
                }
            }
        }
        for (p, syn) in sig.params.iter().zip(&f.params) {
            let id = self.locals.len() as LocalId;
            self.locals.push(LocalVar { name: p.name.clone(), ty: p.ty.clone(), span: p.span });
            let is_const = p.ty.scalar().is_some() && syn.ty.is_const && syn.array_dims == 0;
            self.local_const.push(is_const);
            self.scopes[0].insert(p.name.clone(), Sym::Local(id));
        }
        self.scopes.push(HashMap::new());
        let mut body = Vec::new();
        self.enter_method(f, &mut body)?;
        for s in &goto::lower(&f.body)? {
            self.stmt_into(s, &mut body)?;
        }
        if self.ctor {
            // A constructor ends by returning what it built.
            let (id, def) = self.object.clone().expect("a constructor has its object");
            let this = Expr { kind: ExprKind::Local(id), ty: Type::Struct(def), span: f.span };
            body.push(Stmt { kind: StmtKind::Return(Some(this)), span: f.span });
        }
        super::cas::atomic_reads_of_cas_places(&mut body);
        self.warn_lost_accumulations();
        Ok(Function {
            name: f.name.clone(),
            kind: sig.kind,
            ret: sig.ret.clone(),
            params,
            locals: std::mem::take(&mut self.locals),
            local_arrays: std::mem::take(&mut self.local_arrays),
            shared: std::mem::take(&mut self.shared),
            body,
            span: f.span,
            name_span: sig.name_span,
            calls: std::mem::take(&mut self.calls),
            row_major: Vec::new(),
        })
    }

    // ----- names -----

    fn lookup(&self, name: &str) -> Option<Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name)).or_else(|| self.m.globals.get(name)).cloned()
    }

    fn declare(&mut self, name: &str, span: Span, sym: Sym) -> CResult<()> {
        let scope = self.scopes.last_mut().expect("there is always a scope");
        if scope.contains_key(name) {
            return Err(err(span, format!("`{name}` is already declared in this scope"))
                .label("declared again here")
                .help("give the new variable another name"));
        }
        scope.insert(name.to_string(), sym);
        Ok(())
    }

    fn names_in_scope(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.scopes.iter().flat_map(|s| s.keys().map(String::as_str)).collect();
        names.extend(self.m.globals.keys().map(String::as_str));
        names.extend(BUILTIN_VARS);
        names.extend(self.m.funcs.keys().copied());
        names
    }

    fn undeclared(&self, name: &str, span: Span) -> Diagnostic {
        let d = err(span, format!("use of undeclared identifier `{name}`")).label("not declared").unknown_name(name);
        // Numba's Python inside a CUDA C kernel: say what C writes instead.
        match name {
            "cuda" | "numba" => {
                return d.label("Numba's (Python), not CUDA C").help(
                    "in CUDA C, `cuda.grid(1)` is `blockIdx.x * blockDim.x + threadIdx.x`, `cuda.threadIdx.x` is `threadIdx.x`, `cuda.syncthreads()` is `__syncthreads()`, `cuda.atomic.add(a, i, v)` is `atomicAdd(&a[i], v)`; or write the kernel in Python under `@cuda.jit`",
                );
            }
            "np" | "numpy" | "math" => {
                return d.label("a Python module, not CUDA C").help(
                    "CUDA C's math functions need no module: `sqrtf(x)`, `expf(x)`, `fabsf(x)` for floats (`sqrt`, `exp` for doubles)",
                );
            }
            _ => {}
        }
        // A name in capitals is a constant by C's habit: most often a `#define` line left out
        // of the snippet (a starter's `#define SQ 256` not typed again).
        let constant = name.chars().any(|c| c.is_ascii_uppercase())
            && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        match suggest::did_you_mean(name, self.names_in_scope()) {
            Some(h) => d.help(h),
            None if constant => d.help(format!(
                "`{name}` reads as a constant: define it above the kernel, e.g. `#define {name} 256` (a starter's `#define` lines are part of what you type again)"
            )),
            None => d.help(format!("declare it first, e.g. `int {name} = 0;`")),
        }
    }

    // ----- statements -----

    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> CResult<T>) -> CResult<T> {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    /// A statement where C expects exactly one (the body of an `if` or loop).
    fn sub_stmt(&mut self, s: &syntax::Stmt) -> CResult<Box<Stmt>> {
        self.with_scope(|fx| {
            let mut out = Vec::new();
            fx.stmt_into(s, &mut out)?;
            Ok(Box::new(if out.len() == 1 {
                out.pop().expect("one statement")
            } else {
                Stmt { kind: StmtKind::Block(out), span: s.span }
            }))
        })
    }

    fn stmt_into(&mut self, s: &syntax::Stmt, out: &mut Vec<Stmt>) -> CResult<()> {
        use syntax::StmtKind as S;
        let span = s.span;
        let kind = match &s.kind {
            S::Decl(decl) => return self.local_decl(decl, out),
            S::Expr(e) => StmtKind::Expr(self.expr(e)?),
            S::Empty => StmtKind::Empty,
            // A label with no `goto` changes nothing, as C says (`goto::lower` took the others).
            S::Labeled(_, target) => return self.stmt_into(target, out),
            S::Goto(label) => {
                return Err(err(span, format!("`goto {label}` is not supported by the simulator"))
                    .help("write the loop with `break`/`continue` or a flag")
                    .outside_subset("`goto`".to_string()));
            }
            S::Block(stmts) => {
                let mut body = Vec::new();
                self.with_scope(|fx| stmts.iter().try_for_each(|s| fx.stmt_into(s, &mut body)))?;
                StmtKind::Block(body)
            }
            S::If(c, then, else_) => {
                let cond = self.cond_expr(c)?;
                let then = self.sub_stmt(then)?;
                let else_ = match else_ {
                    Some(e) => Some(self.sub_stmt(e)?),
                    None => None,
                };
                StmtKind::If { cond, then, else_ }
            }
            S::While(c, body) => {
                let cond = self.cond_expr(c)?;
                let body = self.loop_body(body)?;
                StmtKind::While { cond, body }
            }
            S::DoWhile(body, c) => {
                let body = self.loop_body(body)?;
                let cond = self.cond_expr(c)?;
                StmtKind::DoWhile { body, cond }
            }
            S::For { init, cond, step, body } => {
                return self.with_scope(|fx| {
                    let init = match init {
                        Some(i) => {
                            let mut v = Vec::new();
                            fx.stmt_into(i, &mut v)?;
                            Some(Box::new(if v.len() == 1 {
                                v.pop().expect("one statement")
                            } else {
                                Stmt { kind: StmtKind::Block(v), span: i.span }
                            }))
                        }
                        None => None,
                    };
                    let cond = cond.as_ref().map(|c| fx.cond_expr(c)).transpose()?;
                    let body = fx.loop_body(body)?;
                    // The step runs after the body, so check it after (for "read before assigned").
                    let step = step.as_ref().map(|e| fx.expr(e)).transpose()?;
                    out.push(Stmt { kind: StmtKind::For { init, cond, step, body }, span });
                    Ok(())
                });
            }
            S::Switch(value, parts) => return self.switch(value, parts, span, out),
            S::Break | S::Continue => {
                let word = if s.kind == S::Break { "break" } else { "continue" };
                if self.loops == 0 && !(s.kind == S::Break && self.switches > 0) {
                    return Err(err(span, format!("`{word}` outside of a loop"))
                        .help(format!("`{word}` only works inside for, while and do loops")));
                }
                if s.kind == S::Break { StmtKind::Break } else { StmtKind::Continue }
            }
            S::Return(value) => StmtKind::Return(self.return_value(value.as_ref(), span)?),
        };
        out.push(Stmt { kind, span });
        Ok(())
    }

    /// `switch`: the value is promoted, each `case` must be a distinct integer constant.
    fn switch(
        &mut self,
        value: &syntax::Expr,
        parts: &[syntax::SwitchPart],
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> CResult<()> {
        let v = self.value_expr(value)?;
        let s = promote(self.integer(&v, "switch")?);
        let v = scalar_cast(v, s);
        let mut cases: Vec<(u64, usize)> = Vec::new();
        let mut default = None;
        let mut body = Vec::new();
        self.switches += 1;
        let r = self.with_scope(|fx| {
            for part in parts {
                match part {
                    syntax::SwitchPart::Case(e) => {
                        let c = fx.value_expr(e)?;
                        let Some(Num::I(n)) = c.ty.scalar().filter(|s| !s.is_float()).and_then(|_| const_eval(&c))
                        else {
                            return Err(err(e.span, "a `case` label must be a constant integer")
                                .help("use a number, a character or a #define'd number"));
                        };
                        let bits = const_bits(num_to(Num::I(n), s), s);
                        if cases.iter().any(|(b, _)| *b == bits) {
                            return Err(err(e.span, format!("`case {n}` appears twice in this switch"))
                                .help("merge the two cases"));
                        }
                        cases.push((bits, body.len()));
                    }
                    syntax::SwitchPart::Default(at) => {
                        if default.is_some() {
                            return Err(err(*at, "two `default` labels in one switch").help("keep one"));
                        }
                        default = Some(body.len());
                    }
                    syntax::SwitchPart::Stmt(st) => fx.stmt_into(st, &mut body)?,
                }
            }
            Ok(())
        });
        self.switches -= 1;
        r?;
        out.push(Stmt { kind: StmtKind::Switch { value: v, cases, default, body }, span });
        Ok(())
    }

    fn loop_body(&mut self, body: &syntax::Stmt) -> CResult<Box<Stmt>> {
        self.loops += 1;
        let r = self.sub_stmt(body);
        self.loops -= 1;
        r
    }

    fn return_value(&mut self, value: Option<&syntax::Expr>, span: Span) -> CResult<Option<Expr>> {
        if self.ctor
            && value.is_none()
            && let Some((id, def)) = &self.object
        {
            return Ok(Some(Expr { kind: ExprKind::Local(*id), ty: Type::Struct(def.clone()), span }));
        }
        match (value, &self.ret) {
            (None, Type::Void) => Ok(None),
            (None, ret) => Err(err(span, "this function must return a value")
                .label(format!("returns `{}`", ret.c_name()))
                .help("write `return value;`")),
            (Some(v), Type::Void) => {
                let what = if self.kind == FuncKind::Kernel { "a kernel" } else { "a void function" };
                Err(err(v.span, format!("{what} cannot return a value"))
                    .help("write the result through a pointer parameter, or change the return type"))
            }
            (Some(v), ret) => {
                let ret = ret.clone();
                let e = self.value_expr(v)?;
                Ok(Some(self.convert(e, &ret, "return")?))
            }
        }
    }

    /// A kernel parameter's default, which a launch passes from the host: a constant of the
    /// parameter's type, or for a pointer the null pointer (`NULL`, `nullptr`, `0`).
    fn kernel_default(&mut self, d: &syntax::Expr, ty: &Type, name: &str) -> CResult<Expr> {
        let v = self.value_expr(d)?;
        if ty.is_pointer() {
            if !is_null_constant(&v) {
                return Err(err(d.span, format!("the kernel parameter `{name}` can default only to NULL"))
                    .help("a launch passes buffers by name: write `= NULL`, or remove the default"));
            }
            return Ok(Expr { kind: ExprKind::IntConst(0), ty: ty.clone(), span: d.span });
        }
        let v = self.convert(v, ty, "initialise")?;
        match const_eval(&v) {
            Some(n) => Ok(const_to_expr(n, ty, d.span)),
            None => Err(err(d.span, format!("the default of the kernel parameter `{name}` is not a constant"))
                .help("a launch passes it from the host: use a number, a #define'd name or a const value")),
        }
    }

    fn local_decl(&mut self, decl: &Decl, out: &mut Vec<Stmt>) -> CResult<()> {
        for d in &decl.declarators {
            // `auto x = e`: the type of `e`, checked once here.
            let (base, auto_init) = match self.auto_type(decl, d)? {
                Some((ty, e)) => (ty, Some(e)),
                None => (resolve_type(&decl.ty, &d.ptrs), None),
            };
            let is_const = object_const(&decl.ty, &d.ptrs);
            if base == Type::Void {
                return Err(err(d.name_span, format!("`{}` cannot have type `void`", d.name))
                    .help("give it a type such as `float` or `int`"));
            }
            match decl.storage {
                Storage::Static => {
                    return Err(err(decl.span, "static local variables are not supported by the simulator")
                        .help("use a `__device__` global, or `__shared__` for one copy per block")
                        .outside_subset("`static` locals"));
                }
                Storage::Shared => {
                    if let Some(init) = &d.init {
                        let span = match init {
                            Init::Expr(e) => e.span,
                            Init::List(_, s) => *s,
                        };
                        return Err(err(span, "`__shared__` variables cannot have an initialiser")
                            .help("assign it in the kernel (e.g. from thread 0), then call __syncthreads()"));
                    }
                    if d.dims.first().is_some_and(Option::is_none) {
                        return Err(err(d.name_span, "a `__shared__` array needs a size")
                            .help("give the size, or write `extern __shared__` to size it at launch"));
                    }
                    let ty = self.array_type(base, &d.dims, None, d.name_span)?;
                    let id = self.shared.len() as u32;
                    self.shared.push(MemVar {
                        name: d.name.clone(),
                        ty: ty.clone(),
                        is_extern: false,
                        span: d.name_span,
                    });
                    self.declare(&d.name, d.name_span, Sym::Mem(MemId::Shared(id), ty))?;
                }
                Storage::ExternShared => {
                    if d.dims.len() != 1 || d.dims[0].is_some() || d.init.is_some() {
                        return Err(err(d.name_span, "`extern __shared__` declares an unsized array").help(format!(
                            "write `extern __shared__ {} {}[];`",
                            base.c_name(),
                            d.name
                        )));
                    }
                    let ty = Type::Array { elem: Box::new(base), len: 0 };
                    let id = self.shared.len() as u32;
                    self.shared.push(MemVar {
                        name: d.name.clone(),
                        ty: ty.clone(),
                        is_extern: true,
                        span: d.name_span,
                    });
                    self.declare(&d.name, d.name_span, Sym::Mem(MemId::Shared(id), ty))?;
                }
                _ if !d.dims.is_empty() => {
                    let ty = self.array_type(base, &d.dims, d.init.as_ref(), d.name_span)?;
                    let init = match &d.init {
                        Some(i) => Some(
                            self.flatten_init(&ty, i)?
                                .into_iter()
                                .map(|e| e.unwrap_or_else(|| const_to_expr(Num::I(0), ty.innermost(), d.name_span)))
                                .collect(),
                        ),
                        None => None,
                    };
                    let id = self.local_arrays.len() as u32;
                    self.local_arrays.push(MemVar {
                        name: d.name.clone(),
                        ty: ty.clone(),
                        is_extern: false,
                        span: d.name_span,
                    });
                    self.local_array_const.push(is_const);
                    self.declare(&d.name, d.name_span, Sym::Mem(MemId::Local(id), ty))?;
                    out.push(Stmt { kind: StmtKind::ArrayDecl { array: id, init }, span: decl.span });
                }
                // `int *p = &x;`: `x` lives in the thread's local memory, where it has an address.
                _ if self.addressed.contains(&d.name)
                    && (base.scalar().is_some()
                        || base.is_pointer()
                        || (matches!(base, Type::Struct(_)) && matches!(d.init, Some(Init::Expr(_))))) =>
                {
                    let init = match &d.init {
                        None if is_const => {
                            return Err(err(d.name_span, format!("the constant `{}` needs a value", d.name))
                                .help(format!("write `const {} {} = ...;`", base.c_name(), d.name)));
                        }
                        None => None,
                        Some(Init::List(_, span)) => {
                            return Err(err(*span, "braces initialise arrays").help(format!(
                                "write `{} {} = value;`",
                                base.c_name(),
                                d.name
                            )));
                        }
                        Some(Init::Expr(e)) => {
                            let v = match auto_init {
                                Some(v) => v,
                                None => self.value_expr(e)?,
                            };
                            Some(vec![self.convert(v, &base, "initialise")?])
                        }
                    };
                    let id = self.local_arrays.len() as u32;
                    self.local_arrays.push(MemVar {
                        name: d.name.clone(),
                        ty: base.clone(),
                        is_extern: false,
                        span: d.name_span,
                    });
                    self.local_array_const.push(is_const);
                    self.declare(&d.name, d.name_span, Sym::Mem(MemId::Local(id), base))?;
                    out.push(Stmt { kind: StmtKind::ArrayDecl { array: id, init }, span: decl.span });
                }
                _ => {
                    let init = match &d.init {
                        None if is_const => {
                            return Err(err(d.name_span, format!("the constant `{}` needs a value", d.name))
                                .help(format!("write `const {} {} = ...;`", base.c_name(), d.name)));
                        }
                        // `Complex z;` runs the default constructor when the struct has constructors.
                        None => match &base {
                            Type::Struct(def) => self.default_construct(def, d.name_span)?,
                            _ => None,
                        },
                        Some(Init::List(items, span)) if matches!(base, Type::Struct(_)) => {
                            let Type::Struct(def) = &base else { unreachable!("matched above") };
                            Some(self.struct_init(&def.clone(), items, *span)?)
                        }
                        Some(Init::List(_, span)) => {
                            return Err(err(*span, "braces initialise arrays").help(format!(
                                "write `{} {} = value;`",
                                base.c_name(),
                                d.name
                            )));
                        }
                        Some(Init::Expr(e)) => {
                            let v = match auto_init {
                                Some(v) => v,
                                None => self.value_expr(e)?,
                            };
                            Some(self.convert(v, &base, "initialise")?)
                        }
                    };
                    let id = self.locals.len() as LocalId;
                    let is_struct = matches!(base, Type::Struct(_));
                    self.locals.push(LocalVar { name: d.name.clone(), ty: base, span: d.name_span });
                    self.local_const.push(is_const);
                    // A struct is often filled member by member (`float2 v; v.x = ...`): the
                    // simulator checks each member's first read instead.
                    if init.is_none() && !is_struct {
                        self.unassigned.insert(id);
                    }
                    self.declare(&d.name, d.name_span, Sym::Local(id))?;
                    out.push(Stmt { kind: StmtKind::Decl { local: id, init }, span: decl.span });
                }
            }
        }
        Ok(())
    }

    /// The type `auto` deduces for declarator `d` and its checked initialiser, or `None` when
    /// the declaration does not say `auto`. Like C++: the initialiser's type after arrays decay,
    /// without its top-level `const`.
    pub(super) fn auto_type(&mut self, decl: &Decl, d: &syntax::Declarator) -> CResult<Option<(Type, Expr)>> {
        if !decl.ty.auto {
            return Ok(None);
        }
        let Some(Init::Expr(init)) = &d.init else {
            return Err(err(d.name_span, format!("`auto {}` needs a value to take its type from", d.name))
                .label("no initialiser")
                .help(format!("write `auto {} = value;`, or write the type", d.name)));
        };
        if !d.dims.is_empty() || !d.ptrs.is_empty() || !decl.ty.ptrs.is_empty() {
            return Err(err(d.name_span, "the simulator deduces only plain `auto x = value;`")
                .help("write the type in full, e.g. `float *p = ...` or `float v[4]`"));
        }
        let v = self.value_expr(init)?;
        if v.ty == Type::Void {
            return Err(err(v.span, "this has no value to give `auto` a type").help("write the type"));
        }
        Ok(Some((v.ty.clone(), v)))
    }

    /// The array type a declarator spells; `[]` takes its length from the initialiser.
    pub(super) fn array_type(
        &mut self,
        base: Type,
        dims: &[Option<syntax::Expr>],
        init: Option<&Init>,
        at: Span,
    ) -> CResult<Type> {
        let mut lens = Vec::new();
        for (i, d) in dims.iter().enumerate() {
            let len = match d {
                Some(e) => {
                    let v = self.value_expr(e)?;
                    let n = match (v.ty.scalar(), const_eval(&v)) {
                        (Some(s), Some(Num::I(n))) if s.is_integer() => n,
                        (Some(s), _) if s.is_float() => {
                            return Err(err(e.span, "an array size must be an integer").help("write e.g. `[256]`"));
                        }
                        _ => return Err(not_constant(e.span)),
                    };
                    if n <= 0 {
                        return Err(err(e.span, format!("an array size must be positive, this is {n}"))
                            .help("write e.g. `[256]`"));
                    }
                    n as u64
                }
                None if i == 0 => match init {
                    Some(Init::List(items, _)) if !items.is_empty() => {
                        let inner: u64 = lens_after(&mut *self, &dims[1..])?;
                        let scalars = items.iter().filter(|i| matches!(i, Init::Expr(_))).count() as u64;
                        let lists = items.len() as u64 - scalars;
                        lists + scalars.div_ceil(inner.max(1))
                    }
                    _ => {
                        return Err(err(at, "this array needs a size")
                            .help("write the size in the brackets, e.g. `float v[4];`"));
                    }
                },
                None => {
                    return Err(err(at, "only the first dimension of an array may be left empty")
                        .help("write every size after the first, e.g. `float m[][4]`"));
                }
            };
            lens.push(len);
        }
        let total = lens.iter().try_fold(1u64, |acc, &l| acc.checked_mul(l)).unwrap_or(u64::MAX);
        if total > MAX_ARRAY_ELEMS {
            return Err(err(at, format!("this array has {total} elements, too many for the simulator"))
                .help("use a buffer passed as a parameter for large data"));
        }
        let mut ty = base;
        for &len in lens.iter().rev() {
            ty = Type::Array { elem: Box::new(ty), len: len as u32 };
        }
        Ok(ty)
    }

    /// The initialiser of an array, as one value (or `None` for zero) per innermost element,
    /// converted to the element type. Nested braces follow the dimensions; missing braces fill
    /// elements in order, as C's brace elision does.
    pub(super) fn flatten_init(&mut self, ty: &Type, init: &Init) -> CResult<Vec<Option<Expr>>> {
        let total = (ty.size() / ty.innermost().size().max(1)) as usize;
        if total > MAX_INIT_ELEMS {
            let span = match init {
                Init::Expr(e) => e.span,
                Init::List(_, s) => *s,
            };
            return Err(err(span, format!("an initialised array may have at most {MAX_INIT_ELEMS} elements"))
                .help("leave a large array uninitialised and fill it in the kernel"));
        }
        let mut out: Vec<Option<Expr>> = vec![None; total];
        let mut cursor = 0;
        match init {
            Init::List(items, _) => self.fill(ty, items, &mut out, &mut cursor)?,
            Init::Expr(e) if !matches!(ty, Type::Array { .. }) => {
                let v = self.value_expr(e)?;
                out[0] = Some(self.convert(v, ty, "initialise")?);
            }
            Init::Expr(e) => {
                return Err(
                    err(e.span, "an array is initialised with a list in braces").help("write e.g. `= {1, 2, 3}`")
                );
            }
        }
        Ok(out)
    }

    fn fill(&mut self, ty: &Type, items: &[Init], out: &mut [Option<Expr>], cursor: &mut usize) -> CResult<()> {
        let elem = ty.innermost().clone();
        let start = *cursor;
        let end = start + (ty.size() / elem.size().max(1)) as usize;
        for item in items {
            if *cursor >= end {
                let span = match item {
                    Init::Expr(e) => e.span,
                    Init::List(_, s) => *s,
                };
                return Err(err(span, "too many values in this initialiser").help(format!(
                    "the array `{}` has {} elements here",
                    ty.c_name(),
                    end - start
                )));
            }
            match item {
                Init::Expr(e) => {
                    let v = self.value_expr(e)?;
                    out[*cursor] = Some(self.convert(v, &elem, "initialise")?);
                    *cursor += 1;
                }
                Init::List(inner, span) if matches!(ty, Type::Array { elem, .. } if matches!(**elem, Type::Struct(_))) =>
                {
                    let Type::Array { elem, .. } = ty else { unreachable!("matched above") };
                    let Type::Struct(def) = &**elem else { unreachable!("matched above") };
                    out[*cursor] = Some(self.struct_init(&def.clone(), inner, *span)?);
                    *cursor += 1;
                }
                Init::List(inner, span) => {
                    let Type::Array { elem: sub, .. } = ty else {
                        return Err(err(*span, "too many braces in this initialiser")
                            .help("a single value goes without braces"));
                    };
                    // A nested list fills exactly one sub-array, starting at its boundary.
                    let sub_len = (sub.size() / elem.size().max(1)) as usize;
                    let offset = *cursor - start;
                    let sub_start = start + offset.div_ceil(sub_len.max(1)) * sub_len;
                    if sub_start >= end {
                        return Err(err(*span, "too many values in this initialiser").help(format!(
                            "the array `{}` has {} elements here",
                            ty.c_name(),
                            end - start
                        )));
                    }
                    *cursor = sub_start;
                    self.fill(sub, inner, out, cursor)?;
                    *cursor = sub_start + sub_len;
                }
            }
        }
        Ok(())
    }

    // ----- expressions -----

    /// An expression used as a value: arrays decay to pointers.
    pub(super) fn value_expr(&mut self, e: &syntax::Expr) -> CResult<Expr> {
        let e = self.expr(e)?;
        Ok(self.value(e))
    }

    fn value(&self, e: Expr) -> Expr {
        if let Type::Array { elem, .. } = &e.ty {
            let ty = Type::Ptr { pointee: elem.clone(), is_const: self.lvalue_const(&e) };
            return Expr { span: e.span, ty, kind: ExprKind::Decay(Box::new(e)) };
        }
        e
    }

    /// A condition: tested against zero, as `bool`.
    fn cond_expr(&mut self, e: &syntax::Expr) -> CResult<Expr> {
        let v = self.value_expr(e)?;
        self.to_bool(v)
    }

    fn to_bool(&self, v: Expr) -> CResult<Expr> {
        match &v.ty {
            Type::Scalar(_) | Type::Ptr { .. } => Ok(cast(v, &Type::Scalar(Scalar::Bool))),
            t => Err(err(v.span, format!("a `{}` value cannot be used as a condition", t.c_name()))
                .help("compare it with something, e.g. `x != 0`")),
        }
    }

    fn lvalue_const(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(id) => self.local_const.get(*id as usize).copied().unwrap_or(false),
            ExprKind::Mem(MemId::Local(i)) => self.local_array_const.get(*i as usize).copied().unwrap_or(false),
            ExprKind::Mem(MemId::Shared(_)) => false,
            ExprKind::Mem(MemId::Global(i)) => self.m.global_const.get(*i as usize).copied().unwrap_or(false),
            ExprKind::Deref(p) | ExprKind::Index { base: p, .. } => matches!(p.ty, Type::Ptr { is_const: true, .. }),
            ExprKind::Member { base, .. } => self.lvalue_const(base),
            _ => false,
        }
    }

    /// Assignment conversion of a value to `to` (for `=`, initialisers, arguments, `return`).
    pub(super) fn convert(&mut self, e: Expr, to: &Type, what: &str) -> CResult<Expr> {
        if &e.ty == to {
            return Ok(e);
        }
        // `dim3` and `uint3` convert to each other (`dim3 t = threadIdx;`): one layout.
        if let (Type::Struct(a), Type::Struct(b)) = (&e.ty, to)
            && matches!((a.name.as_str(), b.name.as_str()), ("uint3", "dim3") | ("dim3", "uint3"))
        {
            return Ok(Expr { ty: to.clone(), ..e });
        }
        // A struct with a conversion operator (`operator float *()`) converts by calling it.
        if let (Type::Struct(def), false) = (&e.ty, matches!(to, Type::Struct(_)))
            && let Some(id) = self.conversion(&def.clone(), to)
        {
            let span = e.span;
            let call = self.call_values(id, vec![e], span)?;
            return self.convert(call, to, what);
        }
        match (&e.ty, to) {
            (Type::Scalar(_), Type::Scalar(_)) => Ok(cast(e, to)),
            (Type::Ptr { .. }, Type::Scalar(Scalar::Bool)) => Ok(cast(e, to)),
            // `NULL`, `nullptr`, `0`: C's null pointer constant converts to any pointer.
            (Type::Scalar(_), Type::Ptr { .. }) if is_null_constant(&e) => Ok(cast(e, to)),
            (Type::Ptr { is_const: true, .. }, Type::Ptr { is_const: false, .. })
                if pointee_compatible(
                    &Type::Ptr { pointee: Box::new(e.ty.pointee().cloned().unwrap_or(Type::Void)), is_const: false },
                    to,
                ) =>
            {
                Err(err(e.span, format!("cannot {what} a `{}` with a pointer to const data", to.c_name()))
                    .label(format!("this is `{}`", e.ty.c_name()))
                    .help("declare the destination `const` too, or pass a pointer you may write through"))
            }
            (Type::Ptr { .. }, Type::Ptr { .. }) if pointee_compatible(&e.ty, to) => Ok(cast(e, to)),
            (Type::Void, _) => Err(err(e.span, "this expression has no value")
                .label("its type is `void`")
                .help("a void function's result cannot be used")),
            (from, to) => Err(err(e.span, format!("cannot {what} a `{}` with a `{}`", to.c_name(), from.c_name()))
                .label(format!("this is `{}`", from.c_name()))
                .help(match (from, to) {
                    (Type::Struct(def), _) if !matches!(to, Type::Struct(_)) => format!(
                        "`{}` has no conversion to `{}`: use one of its members, or give it one, `__device__ operator {}() {{ ... }}`",
                        def.name,
                        to.c_name(),
                        to.c_name()
                    ),
                    (Type::Scalar(_), Type::Ptr { .. }) => "pass a pointer here: an array name or `&a[i]`".to_string(),
                    (Type::Ptr { .. }, Type::Scalar(_)) => "read the value it points to: `p[i]` or `*p`".to_string(),
                    _ => format!("convert it explicitly with `({})`", to.c_name()),
                })),
        }
    }

    fn arith(&self, e: &Expr, op: &str) -> CResult<Scalar> {
        match e.ty {
            Type::Scalar(s) => Ok(s),
            Type::Struct(ref def) => Err(err(e.span, format!("`{op}` needs a number, but this is a `{}`", def.name))
                .label("a struct")
                .help(format!(
                    "work member by member (`a.x {op} b.x`); operators on structs (`operator{op}`) run on the GPU backend"
                ))
                .outside_subset(format!("`{op}` on a struct"))),
            ref t => Err(err(e.span, format!("`{op}` needs a number, but this is `{}`", t.c_name())).help(match t {
                Type::Ptr { .. } => "index the pointer to get a value: `p[i]`",
                _ => "use a number here",
            })),
        }
    }

    fn integer(&self, e: &Expr, op: &str) -> CResult<Scalar> {
        let s = self.arith(e, op)?;
        if s.is_float() {
            return Err(err(e.span, format!("`{op}` needs an integer, but this is `{}`", s.c_name()))
                .help(if op == "%" { "use fmodf(a, b) for floats" } else { "convert it with `(int)` first" }));
        }
        Ok(s)
    }

    fn expr(&mut self, e: &syntax::Expr) -> CResult<Expr> {
        use syntax::ExprKind as E;
        let span = e.span;
        let mk = |kind, ty| Ok(Expr { kind, ty, span });
        match &e.kind {
            E::Int(v, s) => mk(ExprKind::IntConst(*v), Type::Scalar(*s)),
            E::Float(v, s) => {
                let v = if *s == Scalar::F32 { *v as f32 as f64 } else { *v };
                mk(ExprKind::FloatConst(v), Type::Scalar(*s))
            }
            E::Char(c) => mk(ExprKind::IntConst(*c as i8 as i64 as u64), Type::Scalar(Scalar::I8)),
            E::Bool(b) => mk(ExprKind::IntConst(*b as u64), Type::Scalar(Scalar::Bool)),
            E::Str(_) => {
                Err(err(span, "the simulator takes string literals only in printf: as its format or a `%s` argument")
                    .help(
                        "write `printf(\"%s = %d\\n\", \"x\", x);`, or `printf(\"%s\\n\", odd ? \"odd\" : \"even\");`",
                    )
                    .outside_subset("string literals outside printf"))
            }
            E::Name(name) => self.name(name, span),
            E::Member(base, field, field_span) => self.member(base, field, *field_span),
            E::Unary(op, operand) => self.unary(*op, operand, span),
            E::Binary(op, lhs, rhs) => {
                let l = self.value_expr(lhs)?;
                let r = self.value_expr(rhs)?;
                if let Some(call) = self.operator_call(op.symbol(), vec![l.clone(), r.clone()], span)? {
                    return Ok(call);
                }
                self.binary(*op, l, r, span)
            }
            E::MethodCall { object, name, name_span, args } => self.method_call(object, name, *name_span, args, span),
            E::Construct { ty, args } => self.construct(ty, args, span),
            E::Assign(op, lhs, rhs) => self.assign(*op, lhs, rhs, span),
            E::IncDec { operand, increment, prefix } => {
                let target = self.lvalue(operand, if *increment { "++" } else { "--" })?;
                match &target.ty {
                    Type::Scalar(_) | Type::Ptr { .. } => {}
                    t => {
                        return Err(err(span, format!("cannot increment a `{}`", t.c_name()))
                            .help("`++` works on numbers and pointers"));
                    }
                }
                let ty = target.ty.clone();
                mk(ExprKind::IncDec { lhs: Box::new(target), increment: *increment, prefix: *prefix }, ty)
            }
            E::Cond(c, t, f) => {
                let cond = self.cond_expr(c)?;
                let then = self.value_expr(t)?;
                let else_ = self.value_expr(f)?;
                let ty = match (&then.ty, &else_.ty) {
                    (a, b) if a == b => a.clone(),
                    (Type::Scalar(a), Type::Scalar(b)) => Type::Scalar(usual(*a, *b)),
                    (Type::Ptr { pointee: a, is_const: ca }, Type::Ptr { pointee: b, is_const: cb }) if a == b => {
                        Type::Ptr { pointee: a.clone(), is_const: *ca || *cb }
                    }
                    (a, b) => {
                        return Err(err(
                            span,
                            format!(
                                "the two sides of `?:` have different types, `{}` and `{}`",
                                a.c_name(),
                                b.c_name()
                            ),
                        )
                        .help("make both sides the same kind of value"));
                    }
                };
                let (then, else_) = (cast(then, &ty), cast(else_, &ty));
                mk(ExprKind::Cond { cond: Box::new(cond), then: Box::new(then), else_: Box::new(else_) }, ty)
            }
            E::Cast(tn, operand) => {
                refuse_auto(tn, "a cast's type")?;
                let to = resolve_type(tn, &[]);
                let mut v = self.value_expr(operand)?;
                // `(float *)smem` on a struct with `operator float *()`: the operator's value.
                if let (Type::Struct(def), false) = (&v.ty, matches!(to, Type::Struct(_) | Type::Void))
                    && let Some(id) = self.conversion(&def.clone(), &to)
                {
                    v = self.call_values(id, vec![v], span)?;
                }
                match (&v.ty, &to) {
                    (_, Type::Void) => Ok(v),
                    (Type::Scalar(_), Type::Scalar(_)) | (Type::Ptr { .. }, Type::Ptr { .. }) => {
                        Ok(Expr { span, ty: to, kind: ExprKind::Cast(Box::new(v)) })
                    }
                    (Type::Ptr { .. }, Type::Scalar(Scalar::Bool)) => {
                        Ok(Expr { span, ty: to, kind: ExprKind::Cast(Box::new(v)) })
                    }
                    // `(float *)0`: the null pointer, as C spells it without `NULL`.
                    (Type::Scalar(_), Type::Ptr { .. }) if is_null_constant(&v) => Ok(Expr { span, ..cast(v, &to) }),
                    (Type::Struct(def), _) => {
                        Err(err(span, format!("cannot convert `{}` to `{}`", def.name, to.c_name())).help(format!(
                            "`{}` has no conversion operator to `{}`: use one of its members, or give it one, `__device__ operator {}() {{ ... }}`",
                            def.name,
                            to.c_name(),
                            to.c_name()
                        )))
                    }
                    (from, to) => Err(err(span, format!("cannot convert `{}` to `{}`", from.c_name(), to.c_name()))
                        .help("the simulator converts between numbers, and between pointers")),
                }
            }
            E::Call { name, name_span, args } => self.call(name, *name_span, args, span),
            E::Index(base, index) => {
                let mut b = self.value_expr(base)?;
                let mut i = self.value_expr(index)?;
                // `v[i]` on a struct: its `operator[]`.
                if matches!(b.ty, Type::Struct(_)) {
                    return match self.operator_call("[]", vec![b.clone(), i], span)? {
                        Some(call) => Ok(call),
                        None => Err(err(b.span, format!("`{}` has no `operator[]`", b.ty.c_name()))
                            .help("index one of its members, e.g. `v.e[i]`, or define `operator[]`")),
                    };
                }
                if i.ty.is_pointer() && !b.ty.is_pointer() {
                    std::mem::swap(&mut b, &mut i);
                }
                let Some(pointee) = b.ty.pointee().cloned() else {
                    return Err(err(b.span, format!("`{}` cannot be indexed", b.ty.c_name()))
                        .label("not an array or pointer")
                        .help("only arrays and pointers take `[i]`"));
                };
                if pointee == Type::Void {
                    return Err(err(b.span, "cannot index a `void *`").help("cast it to a typed pointer first"));
                }
                self.integer(&i, "[]").map_err(|d| d.help("an index must be an integer, e.g. `a[(int)x]`"))?;
                let index = scalar_cast(i, Scalar::I64);
                mk(ExprKind::Index { base: Box::new(b), index: Box::new(index) }, pointee)
            }
            E::Comma(l, r) => {
                let l = self.value_expr(l)?;
                let r = self.value_expr(r)?;
                let ty = r.ty.clone();
                mk(ExprKind::Comma { lhs: Box::new(l), rhs: Box::new(r) }, ty)
            }
            E::SizeofType(tn) => {
                refuse_auto(tn, "the type of `sizeof`")?;
                let ty = resolve_type(tn, &[]);
                if ty == Type::Void {
                    return Err(err(span, "`void` has no size").help("take the size of a real type"));
                }
                mk(ExprKind::IntConst(ty.size()), Type::Scalar(Scalar::U64))
            }
            E::SizeofExpr(inner) => {
                let v = self.expr(inner)?;
                if matches!(v.ty, Type::Ptr { .. }) {
                    // A C classic: the size of the pointer, 8, not of the array it points at.
                    self.warnings.push(
                        Diagnostic::warning("`sizeof` of a pointer is the pointer's size (8 bytes), not its array's")
                            .at(span)
                            .help(POINTER_LENGTH),
                    );
                }
                mk(ExprKind::IntConst(v.ty.size()), Type::Scalar(Scalar::U64))
            }
        }
    }

    /// `total += a[i]` in a kernel whose `total` is a number parameter: the learner expects
    /// the caller to see the sum, as a reference would give; each thread adds to its own copy.
    fn warn_accumulating_param(&mut self, op: BinaryOp, l: &Expr, r: &Expr, span: Span) {
        fn reads_memory(e: &Expr) -> bool {
            match &e.kind {
                ExprKind::Index { .. } | ExprKind::Deref(_) => true,
                ExprKind::Cast(x) | ExprKind::Unary { operand: x, .. } => reads_memory(x),
                ExprKind::Binary { lhs, rhs, .. } => reads_memory(lhs) || reads_memory(rhs),
                _ => false,
            }
        }
        let ExprKind::Local(id) = l.kind else { return };
        if self.kind == FuncKind::Kernel
            && (id as usize) < self.params
            && l.ty.scalar().is_some()
            && matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)
            && reads_memory(r)
        {
            self.accumulated.entry(id).or_insert((0, span)).0 += 1;
        }
    }

    /// At a kernel's end: a number parameter it only ever accumulated into, never reading
    /// the result (`total += a[i]` and nothing else), is the mistake of expecting the caller
    /// to see it.
    fn warn_lost_accumulations(&mut self) {
        let mut lost: Vec<(LocalId, Span)> = std::mem::take(&mut self.accumulated)
            .into_iter()
            .filter(|(id, (n, _))| self.param_uses.get(id) == Some(n))
            .map(|(id, (_, span))| (id, span))
            .collect();
        lost.sort_by_key(|(id, _)| *id);
        for (id, span) in lost {
            let name = &self.locals[id as usize].name;
            self.warnings.push(
                Diagnostic::warning(format!(
                    "`{name}` is a number parameter: each thread updates its own copy, and the caller's `{name}` never changes"
                ))
                .at(span)
                .help(format!(
                    "a kernel returns nothing: to hand back a result, pass a pointer and write through it (`out[0]`), with `atomicAdd(&out[0], ...)` when many threads add to it; keep `{name}` for numbers the kernel reads"
                )),
            );
        }
    }

    fn name(&mut self, name: &str, span: Span) -> CResult<Expr> {
        let mk = |kind, ty| Ok(Expr { kind, ty, span });
        match self.lookup(name) {
            Some(Sym::Local(id)) => {
                if (id as usize) < self.params {
                    *self.param_uses.entry(id).or_insert(0) += 1;
                }
                if self.unassigned.remove(&id) {
                    self.warnings.push(
                        Diagnostic::warning(format!("`{name}` is read before it is assigned"))
                            .at(span)
                            .label("read here")
                            .help(format!(
                                "give it a value where it is declared, e.g. `{} {name} = 0;`",
                                self.locals[id as usize].ty.c_name()
                            )),
                    );
                }
                mk(ExprKind::Local(id), self.locals[id as usize].ty.clone())
            }
            Some(Sym::Mem(id, ty)) => mk(ExprKind::Mem(id), ty),
            Some(Sym::Const(v)) => Ok(Expr { span, ..v }),
            None if let Some(e) = self.implicit_member(name, span) => Ok(e),
            None if name == "warpSize" => mk(ExprKind::WarpSize, Type::Scalar(Scalar::I32)),
            // `dim3 t = threadIdx;`: the whole index, a `uint3` (`blockDim`, `gridDim`: `dim3`).
            None if let Some(var) = builtin_var(name) => {
                let def = StructDef::vector(if matches!(var, BuiltinVar::ThreadIdx | BuiltinVar::BlockIdx) {
                    "uint3"
                } else {
                    "dim3"
                })
                .expect("uint3 and dim3 are vector types");
                let parts = [Axis::X, Axis::Y, Axis::Z].map(|axis| Expr {
                    kind: ExprKind::Builtin(var, axis),
                    ty: Type::Scalar(Scalar::U32),
                    span,
                });
                mk(ExprKind::StructLit(parts.into()), Type::Struct(def))
            }
            None if self.m.funcs.contains_key(name) || BUILTIN_FUNCS.contains(&name) => {
                Err(err(span, format!("`{name}` is a function")).help(format!("call it: `{name}(...)`")))
            }
            None => Err(self.undeclared(name, span)),
        }
    }

    fn member(&mut self, base: &syntax::Expr, field: &str, field_span: Span) -> CResult<Expr> {
        let var = match &base.kind {
            syntax::ExprKind::Name(n) if self.lookup(n).is_none() => builtin_var(n),
            _ => None,
        };
        let Some(var) = var else {
            if let syntax::ExprKind::Name(n) = &base.kind
                && self.lookup(n).is_none()
            {
                return Err(self.undeclared(n, base.span));
            }
            return self.struct_member(base, field, field_span);
        };
        let axis = match field {
            "x" => Axis::X,
            "y" => Axis::Y,
            "z" => Axis::Z,
            _ => {
                return Err(err(field_span, format!("no component `{field}`"))
                    .label("not x, y or z")
                    .help("the components are `.x`, `.y` and `.z`"));
            }
        };
        Ok(Expr { kind: ExprKind::Builtin(var, axis), ty: Type::Scalar(Scalar::U32), span: base.span.to(field_span) })
    }

    /// `s.field` on a struct value, or `p->field` (parsed as `(*p).field`).
    fn struct_member(&mut self, base: &syntax::Expr, field: &str, field_span: Span) -> CResult<Expr> {
        let b = self.expr(base)?;
        let span = base.span.to(field_span);
        let Type::Struct(def) = &b.ty else {
            let (what, help) = match &b.ty {
                // NumPy's `a.size` / `a.shape` on a kernel's array: a pointer knows no length.
                Type::Ptr { .. } if matches!(field, "size" | "shape" | "length" | "len" | "count") => {
                    return Err(err(
                        span,
                        format!("a pointer has no `.{field}` in CUDA C: it does not know how long its array is"),
                    )
                    .help(POINTER_LENGTH));
                }
                Type::Ptr { pointee, .. } if matches!(**pointee, Type::Struct(_)) => {
                    ("a pointer".to_string(), "use `->` to reach a member through a pointer: `p->x`".to_string())
                }
                t => (format!("a `{}`", t.c_name()), "`.` reads a member of a struct or vector type".to_string()),
            };
            return Err(err(span, format!("`.{field}` needs a struct, but this is {what}")).help(help));
        };
        let Some((i, f)) = def.field(field) else {
            let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
            let d = err(field_span, format!("`{}` has no member `{field}`", def.name)).label("no such member");
            return Err(match suggest::did_you_mean(field, names.iter().copied()) {
                Some(h) => d.help(h),
                None => d.help(format!(
                    "its members are {}",
                    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                )),
            });
        };
        let ty = f.ty.clone();
        Ok(Expr { kind: ExprKind::Member { base: Box::new(b), field: i as u32 }, ty, span })
    }

    /// A struct value from a braced list, `{x, y}` or `{{0, 1}, 2}`: values for the members in
    /// order, missing ones zero, as C's aggregate initialisation says.
    pub(super) fn struct_init(&mut self, def: &Arc<StructDef>, items: &[Init], span: Span) -> CResult<Expr> {
        if items.len() > def.fields.len() {
            let extra = match &items[def.fields.len()] {
                Init::Expr(e) => e.span,
                Init::List(_, s) => *s,
            };
            return Err(err(extra, "too many values in this initialiser").help(format!(
                "`{}` has {} members",
                def.name,
                def.fields.len()
            )));
        }
        let mut values = Vec::with_capacity(def.fields.len());
        for (i, f) in def.fields.iter().enumerate() {
            values.push(match (items.get(i), &f.ty) {
                (None, ty) => self.zero_value(ty, span)?,
                (Some(Init::Expr(e)), ty) => {
                    let v = self.value_expr(e)?;
                    self.convert(v, ty, "initialise")?
                }
                (Some(Init::List(inner, s)), Type::Struct(sub)) => self.struct_init(sub, inner, *s)?,
                (Some(Init::List(_, s)), _) => {
                    return Err(err(*s, format!("the member `{}` takes one value, not a list", f.name))
                        .help("remove the inner braces"));
                }
            });
        }
        Ok(Expr { kind: ExprKind::StructLit(values), ty: Type::Struct(def.clone()), span })
    }

    /// Zero of a member's type, for initialisers that leave it out.
    fn zero_value(&mut self, ty: &Type, span: Span) -> CResult<Expr> {
        match ty {
            Type::Struct(def) => self.struct_init(def, &[], span),
            Type::Scalar(_) | Type::Ptr { .. } => {
                Ok(cast(const_to_expr(Num::I(0), &Type::Scalar(Scalar::I32), span), ty))
            }
            t => Err(err(span, format!("a member of type `{}` must be initialised in the kernel", t.c_name()))
                .help("leave out the initialiser and assign the members one by one")),
        }
    }

    /// An expression that must be a modifiable lvalue (target of `=`, `+=`, `++`).
    fn lvalue(&mut self, e: &syntax::Expr, op: &str) -> CResult<Expr> {
        let target = self.expr(e)?;
        if !is_lvalue(&target) {
            return Err(err(e.span, format!("cannot apply `{op}` to this expression"))
                .label("not a variable or array element")
                .help("assign to a variable, `a[i]` or `*p`"));
        }
        if matches!(target.ty, Type::Array { .. }) {
            return Err(
                err(e.span, "cannot assign to a whole array").help("assign its elements one at a time, e.g. in a loop")
            );
        }
        if self.lvalue_const(&target) {
            let what = match &target.kind {
                ExprKind::Mem(MemId::Global(i)) if self.m.global_vars[*i as usize].is_constant => {
                    "`__constant__` memory is read-only in kernels"
                }
                ExprKind::Index { .. } | ExprKind::Deref(_) => "this points to `const` data",
                _ => "this variable is `const`",
            };
            return Err(err(e.span, format!("cannot assign here: {what}"))
                .label("read-only")
                .help("remove `const` from the declaration if it must change"));
        }
        Ok(target)
    }

    fn assign(&mut self, op: Option<BinaryOp>, lhs: &syntax::Expr, rhs: &syntax::Expr, span: Span) -> CResult<Expr> {
        let op_text = match op {
            None => "=",
            Some(_) => "op=",
        };
        let Some(op) = op else {
            let r = self.value_expr(rhs)?;
            let simple_local = match &lhs.kind {
                syntax::ExprKind::Name(n) => match self.lookup(n) {
                    Some(Sym::Local(id)) => Some(id),
                    _ => None,
                },
                _ => None,
            };
            if let Some(id) = simple_local {
                self.unassigned.remove(&id);
            }
            let l = self.lvalue(lhs, op_text)?;
            let ty = l.ty.clone();
            let r = self.convert(r, &ty, "assign")?;
            return Ok(Expr { kind: ExprKind::Assign { lhs: Box::new(l), rhs: Box::new(r) }, ty, span });
        };
        let l = self.lvalue(lhs, op_text)?;
        let r = self.value_expr(rhs)?;
        if matches!(l.ty, Type::Struct(_)) {
            let sym = format!("{}=", op.symbol());
            return match self.operator_call(&sym, vec![l.clone(), r], span)? {
                Some(call) => Ok(call),
                None => Err(err(span, format!("`{}` has no `operator{sym}`", l.ty.c_name()))
                    .help(format!("define one, or write `a = a {} b` with the operator it has", op.symbol()))),
            };
        }
        self.warn_accumulating_param(op, &l, &r, span);
        let ty = l.ty.clone();
        let (op, op_ty, r) = match &ty {
            Type::Ptr { .. } => {
                if !matches!(op, BinaryOp::Add | BinaryOp::Sub) {
                    return Err(err(span, "only `+=` and `-=` work on pointers")
                        .help("move a pointer with `p += n` or `p -= n`"));
                }
                self.integer(&r, "+=")?;
                (op, Scalar::I64, scalar_cast(r, Scalar::I64))
            }
            Type::Scalar(ls) => {
                let rs = self.arith(&r, "op=")?;
                let op_ty = match op {
                    BinaryOp::Shl | BinaryOp::Shr => {
                        self.integer(&l, "<<=")?;
                        self.integer(&r, "<<=")?;
                        promote(*ls)
                    }
                    BinaryOp::Rem | BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => {
                        self.integer(&l, "%=")?;
                        self.integer(&r, "%=")?;
                        usual(*ls, rs)
                    }
                    _ => usual(*ls, rs),
                };
                (op, op_ty, scalar_cast(r, op_ty))
            }
            t => return Err(err(span, format!("cannot update a `{}`", t.c_name())).help("use a number or pointer")),
        };
        Ok(Expr { kind: ExprKind::CompoundAssign { op, lhs: Box::new(l), rhs: Box::new(r), op_ty }, ty, span })
    }

    fn unary(&mut self, op: UnOp, operand: &syntax::Expr, span: Span) -> CResult<Expr> {
        let mk = |kind, ty| Ok(Expr { kind, ty, span });
        match op {
            UnOp::AddrOf => {
                let target = self.expr(operand)?;
                match &target.kind {
                    ExprKind::Local(id) if self.locals[*id as usize].ty.is_pointer() => {
                        let name = &self.locals[*id as usize].name;
                        Err(err(span, format!("`&{name}` is the address of the pointer `{name}`, not of the memory it points to"))
                            .help(format!(
                                "`{name}` already holds the address of `{name}[0]`: write `{name}` itself, or `&{name}[i]` for element i"
                            )))
                    }
                    // Locals whose address is taken live in memory (`addressed`); parameters
                    // arrive in registers.
                    ExprKind::Local(id) if (*id as usize) < self.params => {
                        let var = &self.locals[*id as usize];
                        let name = &var.name;
                        Err(err(span, format!("cannot take the address of the parameter `{name}`")).help(format!(
                            "copy it into a local variable and take that one's address: `{} v = {name}; ... &v`",
                            var.ty.c_name()
                        )))
                    }
                    ExprKind::Local(id) => {
                        let name = &self.locals[*id as usize].name;
                        Err(err(span, format!("cannot take the address of the register variable `{name}`"))
                            .help(format!(
                                "only memory has addresses: use an array element like `&a[i]`, or declare `{name}` as an array"
                            )))
                    }
                    ExprKind::Member { .. } if member_root_local(&target).is_some() => {
                        let id = member_root_local(&target).expect("checked");
                        let name = &self.locals[id as usize].name;
                        Err(err(span, format!("cannot take the address of a member of the register variable `{name}`"))
                            .help(format!(
                                "only memory has addresses: copy the member into an array, or keep `{name}` in an array of one"
                            )))
                    }
                    _ if is_lvalue(&target) => {
                        let ty =
                            Type::Ptr { pointee: Box::new(target.ty.clone()), is_const: self.lvalue_const(&target) };
                        mk(ExprKind::AddrOf(Box::new(target)), ty)
                    }
                    _ => Err(err(span, "cannot take the address of this expression")
                        .help("`&` needs an array element or a variable in memory, e.g. `&a[i]`")),
                }
            }
            UnOp::Deref => {
                // `this->x` and `*this`: the object itself (gridlab's `this` is a reference).
                if let syntax::ExprKind::Name(n) = &operand.kind
                    && n == "this"
                    && let Some((id, def)) = &self.object
                {
                    return mk(ExprKind::Local(*id), Type::Struct(def.clone()));
                }
                let p = self.value_expr(operand)?;
                match p.ty.pointee().cloned() {
                    Some(Type::Void) => {
                        Err(err(span, "cannot dereference a `void *`").help("cast it to a typed pointer"))
                    }
                    Some(t) => mk(ExprKind::Deref(Box::new(p)), t),
                    None => Err(err(span, format!("cannot dereference a `{}`", p.ty.c_name()))
                        .label("not a pointer")
                        .help("`*` reads through a pointer")),
                }
            }
            UnOp::LogNot => {
                let c = self.cond_expr(operand)?;
                mk(ExprKind::Unary { op: UnaryOp::LogNot, operand: Box::new(c) }, Type::Scalar(Scalar::Bool))
            }
            UnOp::Neg | UnOp::Plus | UnOp::BitNot => {
                let v = self.value_expr(operand)?;
                let sym = match op {
                    UnOp::Neg => "-",
                    UnOp::Plus => "+",
                    _ => "~",
                };
                let s = if op == UnOp::BitNot { self.integer(&v, sym)? } else { self.arith(&v, sym)? };
                let s = promote(s);
                let v = scalar_cast(v, s);
                match op {
                    UnOp::Plus => Ok(Expr { span, ..v }),
                    UnOp::Neg => mk(ExprKind::Unary { op: UnaryOp::Neg, operand: Box::new(v) }, Type::Scalar(s)),
                    _ => mk(ExprKind::Unary { op: UnaryOp::BitNot, operand: Box::new(v) }, Type::Scalar(s)),
                }
            }
        }
    }

    fn binary(&mut self, op: BinaryOp, l: Expr, r: Expr, span: Span) -> CResult<Expr> {
        let mk = |kind, ty| Ok(Expr { kind, ty, span });
        let sym = op.symbol();
        match op {
            BinaryOp::LogAnd | BinaryOp::LogOr => {
                let (l, r) = (self.to_bool(l)?, self.to_bool(r)?);
                return mk(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) }, Type::Scalar(Scalar::Bool));
            }
            BinaryOp::Add | BinaryOp::Sub if l.ty.is_pointer() || r.ty.is_pointer() => {
                return self.ptr_arith(op, l, r, span);
            }
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
                if l.ty.is_pointer() || r.ty.is_pointer() =>
            {
                // `p != NULL`, `0 == p`: the null constant becomes a null pointer of `p`'s type.
                let (l, r) = match (l.ty.is_pointer(), r.ty.is_pointer()) {
                    (true, false) if is_null_constant(&r) => {
                        let ty = l.ty.clone();
                        (l, cast(r, &ty))
                    }
                    (false, true) if is_null_constant(&l) => {
                        let ty = r.ty.clone();
                        (cast(l, &ty), r)
                    }
                    _ => (l, r),
                };
                if !(l.ty.is_pointer() && r.ty.is_pointer() && l.ty.pointee() == r.ty.pointee()) {
                    return Err(err(span, format!("cannot compare `{}` with `{}`", l.ty.c_name(), r.ty.c_name()))
                        .help("compare pointers of the same type, or the values they point to"));
                }
                return mk(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) }, Type::Scalar(Scalar::Bool));
            }
            _ => {}
        }
        let (ls, rs) = match op {
            BinaryOp::Shl | BinaryOp::Shr | BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::Rem => {
                (self.integer(&l, sym)?, self.integer(&r, sym)?)
            }
            _ => (self.arith(&l, sym)?, self.arith(&r, sym)?),
        };
        let ty = match op {
            BinaryOp::Shl | BinaryOp::Shr => promote(ls),
            _ => usual(ls, rs),
        };
        let (l, r) = (scalar_cast(l, ty), scalar_cast(r, ty));
        let result = match op {
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => Scalar::Bool,
            _ => ty,
        };
        mk(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) }, Type::Scalar(result))
    }

    fn ptr_arith(&mut self, op: BinaryOp, l: Expr, r: Expr, span: Span) -> CResult<Expr> {
        let mk = |kind, ty| Ok(Expr { kind, ty, span });
        if l.ty.is_pointer() && r.ty.is_pointer() {
            if op == BinaryOp::Sub && l.ty.pointee() == r.ty.pointee() {
                return mk(ExprKind::PtrDiff { lhs: Box::new(l), rhs: Box::new(r) }, Type::Scalar(Scalar::I64));
            }
            return Err(err(
                span,
                format!("cannot {} two pointers", if op == BinaryOp::Add { "add" } else { "subtract" }),
            )
            .help("add an integer offset to a pointer: `p + i`"));
        }
        if op == BinaryOp::Sub && !l.ty.is_pointer() {
            return Err(err(span, "cannot subtract a pointer from a number").help("write `p - n`"));
        }
        let (p, n) = if l.ty.is_pointer() { (l, r) } else { (r, l) };
        if p.ty.pointee() == Some(&Type::Void) {
            return Err(err(p.span, "cannot do arithmetic on a `void *`").help("cast it to a typed pointer first"));
        }
        self.integer(&n, op.symbol())
            .map_err(|d| d.help("a pointer moves by a whole number of elements, e.g. `p + i`"))?;
        let mut offset = scalar_cast(n, Scalar::I64);
        if op == BinaryOp::Sub {
            let s = offset.span;
            offset = Expr {
                kind: ExprKind::Unary { op: UnaryOp::Neg, operand: Box::new(offset) },
                ty: Type::Scalar(Scalar::I64),
                span: s,
            };
        }
        let ty = p.ty.clone();
        mk(ExprKind::PtrOffset { ptr: Box::new(p), offset: Box::new(offset) }, ty)
    }

    // ----- calls -----

    fn args(&mut self, args: &[syntax::Expr]) -> CResult<Vec<Expr>> {
        args.iter().map(|a| self.value_expr(a)).collect()
    }

    fn arity(&self, name: &str, args: &[syntax::Expr], min: usize, max: usize, span: Span, usage: &str) -> CResult<()> {
        if args.len() < min || args.len() > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            let s = if min == 1 && max == 1 { "" } else { "s" };
            return Err(err(span, format!("`{name}` takes {want} argument{s}, but {} were given", args.len()))
                .help(format!("call it as `{usage}`")));
        }
        Ok(())
    }

    fn call(&mut self, name: &str, name_span: Span, args: &[syntax::Expr], span: Span) -> CResult<Expr> {
        if self.lookup(name).is_some() {
            // `op(a, b)` on a struct variable (a functor): its `operator()`.
            let object = syntax::Expr { kind: syntax::ExprKind::Name(name.to_string()), span: name_span };
            if matches!(self.expr(&object)?.ty, Type::Struct(_)) {
                return self.method_call(&object, "operator()", name_span, args, span);
            }
            return Err(err(name_span, format!("`{name}` is a variable, not a function"))
                .help("rename the variable if you meant the function of the same name"));
        }
        if let Some(&id) = self.m.funcs.get(name) {
            return self.device_call(id, name, args, span);
        }
        if let Some(e) = self.implicit_method_call(name, name_span, args, span)? {
            return Ok(e);
        }
        if let Some(def) = name.strip_prefix("make_").filter(|&v| v != "dim3").and_then(StructDef::vector) {
            let n = def.fields.len();
            self.arity(name, args, n, n, span, &format!("{name}({})", ["x", "y", "z", "w"][..n].join(", ")))?;
            let items: Vec<Init> = args.iter().cloned().map(Init::Expr).collect();
            return self.struct_init(&def, &items, span);
        }
        if let Some(e) = self.intrinsic(name, name_span, args, span)? {
            return Ok(e);
        }
        if matches!(name, "len" | "size") && args.len() == 1 {
            return Err(err(
                name_span,
                format!("`{name}(...)` is Python's; CUDA C has no length of an array in a kernel"),
            )
            .label("not CUDA C")
            .help(POINTER_LENGTH));
        }
        let mut candidates: Vec<&str> = self.m.funcs.keys().copied().collect();
        candidates.extend(BUILTIN_FUNCS);
        candidates.extend(MATH.iter().map(|m| m.0));
        let d = err(name_span, format!("unknown function `{name}`")).label("not defined");
        Err(match suggest::did_you_mean(name, candidates) {
            Some(h) => d.help(h).unknown_name(name),
            // Not a typo of a known name: most likely one of CUDA's intrinsics (`__ldg`,
            // `__popc`) or vector constructors (`make_float4`) that NVRTC knows.
            None if name.starts_with("__") || name.starts_with("make_") => d
                .help("the simulator does not have this CUDA function; the GPU backend runs it")
                .outside_subset(format!("`{name}`")),
            None => d.help("define it as a `__device__` function first").unknown_name(name),
        })
    }

    fn device_call(&mut self, id: FuncId, name: &str, args: &[syntax::Expr], span: Span) -> CResult<Expr> {
        let sig = &self.m.sigs[id as usize];
        if sig.kind == FuncKind::Kernel {
            return Err(err(span, format!("cannot call the kernel `{name}` from device code"))
                .label("`__global__` functions are launched, not called")
                .help(format!("launch it from the gridlab prompt, or make `{name}` a `__device__` function")));
        }
        let usage = format!(
            "{name}({})",
            sig.params
                .iter()
                .map(|p| format!("{} {}{}", p.ty.c_name(), if p.by_ref { "&" } else { "" }, p.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let n = sig.params.len();
        let required = sig.defaults.iter().take_while(|d| d.is_none()).count();
        self.arity(name, args, required, n, span, &usage)?;
        let params = sig.params.clone();
        let defaults: Vec<syntax::Expr> = sig.defaults[args.len()..].iter().flatten().cloned().collect();
        let mut out = Vec::new();
        for (a, p) in args.iter().chain(&defaults).zip(&params) {
            if p.by_ref
                && let syntax::ExprKind::Name(n) = &a.kind
                && let Some(Sym::Local(id)) = self.lookup(n)
            {
                // The callee may be what assigns it (`float s; init(s);`): no read-before-
                // assignment warning here (the simulator still reports a read of it unset).
                self.unassigned.remove(&id);
            }
            let v = self.value_expr(a)?;
            if p.by_ref {
                // The parameter names the caller's variable: it must be one, of the same type.
                if !is_lvalue(&v) {
                    return Err(err(a.span, format!("`{name}` takes `{}` by reference", p.name))
                        .label("not a variable")
                        .help(format!(
                            "pass a variable or an element such as `a[i]` of type `{}`, which `{name}` can write to",
                            p.ty.c_name()
                        )));
                }
                if v.ty != p.ty {
                    return Err(err(
                        a.span,
                        format!(
                            "`{name}` takes `{}` as a `{} &`, but this is a `{}`",
                            p.name,
                            p.ty.c_name(),
                            v.ty.c_name()
                        ),
                    )
                    .label("a reference binds to a variable of exactly its type")
                    .help(format!(
                        "pass a `{}` variable, or take the parameter as `const {} &`",
                        p.ty.c_name(),
                        p.ty.c_name()
                    )));
                }
                if self.lvalue_const(&v) {
                    return Err(err(a.span, format!("`{name}` can write to `{}`, but this is `const`", p.name)).help(
                        format!("pass a variable that is not `const`, or take it as `const {} &`", p.ty.c_name()),
                    ));
                }
                out.push(v);
            } else {
                out.push(self.convert(v, &p.ty, "pass")?);
            }
        }
        if !self.calls.contains(&id) {
            self.calls.push(id);
        }
        Ok(Expr { kind: ExprKind::Call { func: id, args: out }, ty: sig.ret.clone(), span })
    }

    /// A builtin function, or `None` if `name` is not one.
    fn intrinsic(&mut self, name: &str, name_span: Span, args: &[syntax::Expr], span: Span) -> CResult<Option<Expr>> {
        let u32t = Type::Scalar(Scalar::U32);
        let intr = |which, args, ty| Ok(Some(Expr { kind: ExprKind::Intrinsic { which, args }, ty, span }));
        match name {
            // A load through the read-only data cache: in the simulator and the model a load.
            "__ldg" => {
                self.arity(name, args, 1, 1, span, "__ldg(&a[i])")?;
                let p = self.value_expr(&args[0])?;
                match p.ty.pointee().cloned() {
                    Some(t) if !matches!(t, Type::Void) => {
                        Ok(Some(Expr { kind: ExprKind::Deref(Box::new(p)), ty: t, span }))
                    }
                    _ => Err(err(args[0].span, format!("`__ldg` reads through a pointer, not a `{}`", p.ty.c_name()))
                        .help("pass the address of the element: `__ldg(&a[i])`")),
                }
            }
            "__syncthreads" => {
                self.arity(name, args, 0, 0, span, "__syncthreads()")?;
                intr(Intrinsic::SyncThreads, vec![], Type::Void)
            }
            "__syncthreads_count" | "__syncthreads_and" | "__syncthreads_or" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(threadIdx.x < 10)"))?;
                let reduce = match name {
                    "__syncthreads_count" => BarrierReduce::Count,
                    "__syncthreads_and" => BarrierReduce::And,
                    _ => BarrierReduce::Or,
                };
                let pred = self.number_arg(&args[0], Scalar::I32, name)?;
                intr(Intrinsic::SyncThreadsReduce(reduce), vec![pred], Type::Scalar(Scalar::I32))
            }
            "__syncwarp" => {
                self.arity(name, args, 0, 1, span, "__syncwarp(0xffffffff)")?;
                let mask = match args.first() {
                    Some(a) => self.number_arg(a, Scalar::U32, name)?,
                    None => int_const(0xffff_ffff, Scalar::U32, span),
                };
                intr(Intrinsic::SyncWarp, vec![mask], Type::Void)
            }
            "__threadfence" | "__threadfence_block" | "__threadfence_system" => {
                self.arity(name, args, 0, 0, span, &format!("{name}()"))?;
                intr(Intrinsic::ThreadFence, vec![], Type::Void)
            }
            "__trap" => {
                self.arity(name, args, 0, 0, span, "__trap()")?;
                intr(Intrinsic::Trap, vec![], Type::Void)
            }
            "clock" | "clock64" => {
                self.arity(name, args, 0, 0, span, &format!("{name}()"))?;
                intr(Intrinsic::Clock, vec![], Type::Scalar(Scalar::I64))
            }
            "assert" => {
                self.arity(name, args, 1, 1, span, "assert(i < n)")?;
                let c = self.cond_expr(&args[0])?;
                intr(Intrinsic::Assert, vec![c], Type::Void)
            }
            "printf" => self.printf(args, span).map(Some),
            // Bit intrinsics: computed in the operand's width, returning `int` (`__brev*`:
            // the unsigned operand type).
            "__popc" | "__popcll" | "__clz" | "__clzll" | "__ffs" | "__ffsll" | "__brev" | "__brevll" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let wide = name.ends_with("ll");
                let op = match name.trim_end_matches("ll") {
                    "__popc" => UnaryOp::Popc,
                    "__clz" => UnaryOp::Clz,
                    "__ffs" => UnaryOp::Ffs,
                    _ => UnaryOp::Brev,
                };
                let width = if wide { Scalar::U64 } else { Scalar::U32 };
                let v = self.number_arg(&args[0], width, name)?;
                let e = Expr { kind: ExprKind::Unary { op, operand: Box::new(v) }, ty: Type::Scalar(width), span };
                Ok(Some(if op == UnaryOp::Brev { e } else { scalar_cast(e, Scalar::I32) }))
            }
            // Reinterpreting bits (a float's bits as an int, for an atomic max by
            // compare-and-swap, a radix sort's keys): same width, no conversion.
            "__float_as_int"
            | "__float_as_uint"
            | "__int_as_float"
            | "__uint_as_float"
            | "__double_as_longlong"
            | "__longlong_as_double" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let (from, to) = match name {
                    "__float_as_int" => (Scalar::F32, Scalar::I32),
                    "__float_as_uint" => (Scalar::F32, Scalar::U32),
                    "__int_as_float" => (Scalar::I32, Scalar::F32),
                    "__uint_as_float" => (Scalar::U32, Scalar::F32),
                    "__double_as_longlong" => (Scalar::F64, Scalar::I64),
                    _ => (Scalar::I64, Scalar::F64),
                };
                let v = self.number_arg(&args[0], from, name)?;
                let e = Expr {
                    kind: ExprKind::Unary { op: UnaryOp::Bits(to), operand: Box::new(v) },
                    ty: Type::Scalar(to),
                    span,
                };
                Ok(Some(e))
            }
            // 24-bit multiplies: the low 32 bits of the product of the operands' low 24 bits
            // (sign-extended for `__mul24`), which is what the hardware computes.
            "__mul24" | "__umul24" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(a, b)"))?;
                let signed = name == "__mul24";
                let s = if signed { Scalar::I32 } else { Scalar::U32 };
                let mut low = Vec::new();
                for a in args {
                    let v = self.number_arg(a, s, name)?;
                    let v = if signed {
                        let up = self.binary(BinaryOp::Shl, v, int_const(8, Scalar::I32, span), span)?;
                        self.binary(BinaryOp::Shr, up, int_const(8, Scalar::I32, span), span)?
                    } else {
                        self.binary(BinaryOp::BitAnd, v, int_const(0xff_ffff, Scalar::U32, span), span)?
                    };
                    low.push(v);
                }
                let b = low.pop().expect("two arguments");
                let a = low.pop().expect("two arguments");
                self.binary(BinaryOp::Mul, a, b, span).map(Some)
            }
            "__shfl_sync" | "__shfl_up_sync" | "__shfl_down_sync" | "__shfl_xor_sync" => {
                let kind = match name {
                    "__shfl_sync" => ShflKind::Idx,
                    "__shfl_up_sync" => ShflKind::Up,
                    "__shfl_down_sync" => ShflKind::Down,
                    _ => ShflKind::Xor,
                };
                let usage =
                    format!("{name}(0xffffffff, value, {})", if kind == ShflKind::Idx { "lane" } else { "delta" });
                self.arity(name, args, 3, 4, span, &usage)?;
                let mask = self.number_arg(&args[0], Scalar::U32, name)?;
                let v = self.value_expr(&args[1])?;
                let ty = promote(self.arith(&v, name)?);
                let v = scalar_cast(v, ty);
                let lane_ty = if matches!(kind, ShflKind::Up | ShflKind::Down) { Scalar::U32 } else { Scalar::I32 };
                let lane = self.number_arg(&args[2], lane_ty, name)?;
                let width = match args.get(3) {
                    Some(w) => self.number_arg(w, Scalar::I32, name)?,
                    None => int_const(32, Scalar::I32, span),
                };
                intr(Intrinsic::Shfl { kind, ty }, vec![mask, v, lane, width], Type::Scalar(ty))
            }
            "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor" | "__ballot" | "__any" | "__all" => {
                Err(err(name_span, format!("`{name}` was removed in CUDA 9"))
                    .help(format!("use `{name}_sync(0xffffffff, ...)`")))
            }
            "__activemask" => {
                // The lanes of the warp running this line: a ballot of `true` over them.
                self.arity(name, args, 0, 0, span, "__activemask()")?;
                let mask = int_const(0xffff_ffff, Scalar::U32, span);
                let pred = int_const(1, Scalar::Bool, span);
                intr(Intrinsic::Ballot, vec![mask, pred], u32t)
            }
            "__ballot_sync" | "__any_sync" | "__all_sync" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(0xffffffff, predicate)"))?;
                let mask = self.number_arg(&args[0], Scalar::U32, name)?;
                let pred = self.cond_expr(&args[1])?;
                let (which, ty) = match name {
                    "__ballot_sync" => (Intrinsic::Ballot, u32t),
                    "__any_sync" => (Intrinsic::Any, Type::Scalar(Scalar::I32)),
                    _ => (Intrinsic::All, Type::Scalar(Scalar::I32)),
                };
                intr(which, vec![mask, pred], ty)
            }
            "min" | "max" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(a, b)"))?;
                let v = self.args(args)?;
                let ty = usual(self.arith(&v[0], name)?, self.arith(&v[1], name)?);
                let v = v.into_iter().map(|a| scalar_cast(a, ty)).collect();
                let which = if name == "min" { Intrinsic::Min { ty } } else { Intrinsic::Max { ty } };
                intr(which, v, Type::Scalar(ty))
            }
            // The integer min/max of CUDA's math API, each in its one type (cuda-samples'
            // mergeSort: `umin(pos + stride, L)`).
            "umin" | "umax" | "llmin" | "llmax" | "ullmin" | "ullmax" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(a, b)"))?;
                let ty = match &name[..name.len() - 3] {
                    "u" => Scalar::U32,
                    "ll" => Scalar::I64,
                    _ => Scalar::U64,
                };
                let a = self.number_arg(&args[0], ty, name)?;
                let b = self.number_arg(&args[1], ty, name)?;
                let which = if name.ends_with("min") { Intrinsic::Min { ty } } else { Intrinsic::Max { ty } };
                intr(which, vec![a, b], Type::Scalar(ty))
            }
            // Clamped to [0, 1] (a NaN gives 0, as fmaxf(NaN, 0) does).
            "__saturatef" => {
                self.arity(name, args, 1, 1, span, "__saturatef(x)")?;
                let ty = Scalar::F32;
                let v = self.number_arg(&args[0], ty, name)?;
                let c = |f: f64| Expr { kind: ExprKind::FloatConst(f), ty: Type::Scalar(ty), span };
                let low = Expr {
                    kind: ExprKind::Intrinsic { which: Intrinsic::Max { ty }, args: vec![v, c(0.0)] },
                    ty: Type::Scalar(ty),
                    span,
                };
                intr(Intrinsic::Min { ty }, vec![low, c(1.0)], Type::Scalar(ty))
            }
            // Arithmetic rounded to nearest, which is what `+ - * /` do anyway (the `_rn`
            // spellings stop the compiler from contracting them into an fma).
            "__fadd_rn" | "__fsub_rn" | "__fmul_rn" | "__fdiv_rn" | "__dadd_rn" | "__dsub_rn" | "__dmul_rn"
            | "__ddiv_rn" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(a, b)"))?;
                let ty = if name.starts_with("__f") { Scalar::F32 } else { Scalar::F64 };
                let op = match &name[3..6] {
                    "add" => BinaryOp::Add,
                    "sub" => BinaryOp::Sub,
                    "mul" => BinaryOp::Mul,
                    _ => BinaryOp::Div,
                };
                let l = self.number_arg(&args[0], ty, name)?;
                let r = self.number_arg(&args[1], ty, name)?;
                Ok(Some(Expr {
                    kind: ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) },
                    ty: Type::Scalar(ty),
                    span,
                }))
            }
            "__frcp_rn" | "__drcp_rn" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let ty = if name == "__frcp_rn" { Scalar::F32 } else { Scalar::F64 };
                let x = self.number_arg(&args[0], ty, name)?;
                let one = Expr { kind: ExprKind::FloatConst(1.0), ty: Type::Scalar(ty), span };
                Ok(Some(Expr {
                    kind: ExprKind::Binary { op: BinaryOp::Div, lhs: Box::new(one), rhs: Box::new(x) },
                    ty: Type::Scalar(ty),
                    span,
                }))
            }
            // Conversions whose rounding is C's own: int to float rounds to nearest, float to
            // int truncates (`_rz`, toward zero).
            "__int2float_rn" | "__uint2float_rn" | "__ll2float_rn" | "__int2double_rn" | "__uint2double_rn"
            | "__double2float_rn" | "__float2int_rz" | "__float2uint_rz" | "__float2ll_rz" | "__double2int_rz"
            | "__double2ll_rz" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let scalar = |w: &str| match w {
                    "int" => Scalar::I32,
                    "uint" => Scalar::U32,
                    "ll" => Scalar::I64,
                    "float" => Scalar::F32,
                    _ => Scalar::F64,
                };
                let body = &name[2..name.len() - 3];
                let (from, to) = body.split_once('2').unwrap_or((body, body));
                let v = self.number_arg(&args[0], scalar(from), name)?;
                Ok(Some(scalar_cast(v, scalar(to))))
            }
            // Float to integer with the rounding the name says: `_rn` to nearest (halves to
            // even, as `lrintf`), `_rd` down, `_ru` up; `lroundf` halves away from zero.
            "__float2int_rn" | "__float2int_rd" | "__float2int_ru" | "__float2uint_rn" | "__float2uint_rd"
            | "__float2uint_ru" | "__float2ll_rn" | "__float2ll_rd" | "__float2ll_ru" | "__double2int_rn"
            | "__double2int_rd" | "__double2int_ru" | "__double2ll_rn" | "lrintf" | "llrintf" | "lrint" | "llrint"
            | "lroundf" | "llroundf" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let (from, to, f) = match name {
                    "lrintf" | "llrintf" => (Scalar::F32, Scalar::I64, MathFn::Rint),
                    "lrint" | "llrint" => (Scalar::F64, Scalar::I64, MathFn::Rint),
                    "lroundf" | "llroundf" => (Scalar::F32, Scalar::I64, MathFn::Round),
                    _ => {
                        let from = if name.starts_with("__float") { Scalar::F32 } else { Scalar::F64 };
                        let to = match name.split_once('2').map(|(_, rest)| &rest[..rest.len() - 3]) {
                            Some("uint") => Scalar::U32,
                            Some("ll") => Scalar::I64,
                            _ => Scalar::I32,
                        };
                        let f = match &name[name.len() - 2..] {
                            "rd" => MathFn::Floor,
                            "ru" => MathFn::Ceil,
                            _ => MathFn::Rint,
                        };
                        (from, to, f)
                    }
                };
                let v = self.number_arg(&args[0], from, name)?;
                let rounded = Expr {
                    kind: ExprKind::Intrinsic { which: Intrinsic::Math { f, ty: from, fast: false }, args: vec![v] },
                    ty: Type::Scalar(from),
                    span,
                };
                Ok(Some(scalar_cast(rounded, to)))
            }
            // Classification by the bits of the value (read once): exponent all ones with a
            // non-zero fraction is a NaN, with a zero one an infinity; the top bit is the sign.
            "isnan" | "isinf" | "isfinite" | "signbit" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let v = self.value_expr(&args[0])?;
                let float = match self.arith(&v, name)? {
                    Scalar::F32 => Scalar::F32,
                    _ => Scalar::F64,
                };
                let (bits, magnitude, inf) = if float == Scalar::F32 {
                    (Scalar::I32, 0x7fff_ffff_u64, 0x7f80_0000_u64)
                } else {
                    (Scalar::I64, 0x7fff_ffff_ffff_ffff, 0x7ff0_0000_0000_0000)
                };
                let raw = Expr {
                    kind: ExprKind::Unary { op: UnaryOp::Bits(bits), operand: Box::new(scalar_cast(v, float)) },
                    ty: Type::Scalar(bits),
                    span,
                };
                if name == "signbit" {
                    return self.binary(BinaryOp::Lt, raw, int_const(0, bits, span), span).map(Some);
                }
                let abs = self.binary(BinaryOp::BitAnd, raw, int_const(magnitude, bits, span), span)?;
                let op = match name {
                    "isnan" => BinaryOp::Gt,
                    "isinf" => BinaryOp::Eq,
                    _ => BinaryOp::Lt,
                };
                self.binary(op, abs, int_const(inf, bits, span), span).map(Some)
            }
            // `sincosf(x, &s, &c)`: `*s = sinf(x)` and `*c = cosf(x)`. `x` is read for each, so
            // it must be free of side effects (it nearly always is a variable or an element).
            "sincosf" | "sincos" | "__sincosf" => {
                self.arity(name, args, 3, 3, span, &format!("{name}(x, &s, &c)"))?;
                if has_effects(&args[0]) {
                    return Err(err(args[0].span, format!("the simulator reads `{name}`'s angle twice"))
                        .label("this changes something when it is read")
                        .help("compute the angle into a variable first, then pass the variable"));
                }
                let (sin, cos) = match name {
                    "sincosf" => ("sinf", "cosf"),
                    "sincos" => ("sin", "cos"),
                    _ => ("__sinf", "__cosf"),
                };
                let store = |f: &str, out: &syntax::Expr| syntax::Expr {
                    kind: syntax::ExprKind::Assign(
                        None,
                        Box::new(syntax::Expr {
                            kind: syntax::ExprKind::Unary(UnOp::Deref, Box::new(out.clone())),
                            span: out.span,
                        }),
                        Box::new(syntax::Expr {
                            kind: syntax::ExprKind::Call { name: f.into(), name_span, args: vec![args[0].clone()] },
                            span,
                        }),
                    ),
                    span,
                };
                let both = syntax::Expr {
                    kind: syntax::ExprKind::Comma(Box::new(store(sin, &args[1])), Box::new(store(cos, &args[2]))),
                    span,
                };
                self.value_expr(&both).map(Some)
            }
            // The high 32 bits of the 64-bit product.
            "__umulhi" | "__mulhi" => {
                self.arity(name, args, 2, 2, span, &format!("{name}(a, b)"))?;
                let (narrow, wide) =
                    if name == "__umulhi" { (Scalar::U32, Scalar::U64) } else { (Scalar::I32, Scalar::I64) };
                let a = scalar_cast(self.number_arg(&args[0], narrow, name)?, wide);
                let b = scalar_cast(self.number_arg(&args[1], narrow, name)?, wide);
                let product = self.binary(BinaryOp::Mul, a, b, span)?;
                let high = self.binary(BinaryOp::Shr, product, int_const(32, Scalar::I32, span), span)?;
                Ok(Some(scalar_cast(high, narrow)))
            }
            // A compile-time check (in a template, of its arguments): true passes and does
            // nothing, false is the program's error.
            "static_assert" => {
                self.arity(name, args, 1, 2, span, "static_assert(BLOCK % 32 == 0, \"a multiple of the warp\")")?;
                let c = self.cond_expr(&args[0])?;
                match const_eval(&c) {
                    Some(Num::I(0)) => {
                        let said = match args.get(1).map(|a| &a.kind) {
                            Some(syntax::ExprKind::Str(m)) => format!(": {m}"),
                            _ => String::new(),
                        };
                        Err(err(args[0].span, format!("static_assert failed{said}"))
                            .label("this is false")
                            .help("the condition must hold for the values this code is compiled with"))
                    }
                    Some(_) => Ok(Some(int_const(0, Scalar::I32, span))),
                    None => Err(err(args[0].span, "static_assert needs a condition known before the kernel runs")
                        .label("not a constant")
                        .help("test template arguments, `#define`d numbers and `const` values")),
                }
            }
            "abs" | "labs" | "llabs" => {
                self.arity(name, args, 1, 1, span, &format!("{name}(x)"))?;
                let v = self.value_expr(&args[0])?;
                let s = promote(self.arith(&v, name)?);
                let ty = if name == "abs" { s } else { Scalar::I64 };
                intr(Intrinsic::Abs { ty }, vec![scalar_cast(v, ty)], Type::Scalar(ty))
            }
            "__fdividef" => {
                self.arity(name, args, 2, 2, span, "__fdividef(a, b)")?;
                let l = self.number_arg(&args[0], Scalar::F32, name)?;
                let r = self.number_arg(&args[1], Scalar::F32, name)?;
                let kind = ExprKind::Binary { op: BinaryOp::Div, lhs: Box::new(l), rhs: Box::new(r) };
                Ok(Some(Expr { kind, ty: Type::Scalar(Scalar::F32), span }))
            }
            _ if name.starts_with("atomic") => self.atomic(name, name_span, args, span),
            _ => match self.bit_intrinsic(name, args, span)? {
                Some(e) => Ok(Some(e)),
                None => self.math(name, args, span),
            },
        }
    }

    /// An argument converted to a number type.
    fn number_arg(&mut self, a: &syntax::Expr, to: Scalar, func: &str) -> CResult<Expr> {
        let v = self.value_expr(a)?;
        self.arith(&v, func)?;
        Ok(scalar_cast(v, to))
    }

    fn math(&mut self, name: &str, args: &[syntax::Expr], span: Span) -> CResult<Option<Expr>> {
        let fast = FAST_MATH.iter().any(|m| m.0 == name);
        let found = MATH
            .iter()
            .find(|m| m.0 == name)
            .map(|m| (m.1, m.2, Some(Scalar::F32)))
            .or_else(|| FAST_MATH.iter().find(|m| m.0 == name).map(|m| (m.1, m.2, Some(Scalar::F32))))
            // The unsuffixed names are overloaded in CUDA C++: float arguments stay float.
            .or_else(|| MATH.iter().find(|m| m.0.strip_suffix('f') == Some(name)).map(|m| (m.1, m.2, None)));
        let Some((f, n, ty)) = found else { return Ok(None) };
        let usage = format!("{name}({})", ["x", "y", "z"][..n].join(", "));
        self.arity(name, args, n, n, span, &usage)?;
        let v = self.args(args)?;
        for a in &v {
            self.arith(a, name)?;
        }
        let ty = ty.unwrap_or_else(|| {
            if v.iter().all(|a| a.ty == Type::Scalar(Scalar::F32)) { Scalar::F32 } else { Scalar::F64 }
        });
        let v = v.into_iter().map(|a| scalar_cast(a, ty)).collect();
        Ok(Some(Expr {
            kind: ExprKind::Intrinsic { which: Intrinsic::Math { f, ty, fast }, args: v },
            ty: Type::Scalar(ty),
            span,
        }))
    }

    fn atomic(&mut self, name: &str, name_span: Span, args: &[syntax::Expr], span: Span) -> CResult<Option<Expr>> {
        let base = name.strip_suffix("_block").or_else(|| name.strip_suffix("_system")).unwrap_or(name);
        let op = match base {
            "atomicAdd" => AtomicOp::Add,
            "atomicSub" => AtomicOp::Sub,
            "atomicExch" => AtomicOp::Exch,
            "atomicMin" => AtomicOp::Min,
            "atomicMax" => AtomicOp::Max,
            "atomicInc" => AtomicOp::Inc,
            "atomicDec" => AtomicOp::Dec,
            "atomicCAS" => AtomicOp::Cas,
            "atomicAnd" => AtomicOp::And,
            "atomicOr" => AtomicOp::Or,
            "atomicXor" => AtomicOp::Xor,
            _ => return Ok(None),
        };
        let n = if op == AtomicOp::Cas { 3 } else { 2 };
        let usage = if op == AtomicOp::Cas {
            format!("{name}(&a[i], expected, value)")
        } else {
            format!("{name}(&a[i], value)")
        };
        self.arity(name, args, n, n, span, &usage)?;
        // `atomicAdd(&count, 1)` with `int *count`: the pointer is already the address.
        if let syntax::ExprKind::Unary(syntax::UnOp::AddrOf, inner) = &args[0].kind
            && let syntax::ExprKind::Name(var) = &inner.kind
            && let Some(Sym::Local(id)) = self.lookup(var)
            && self.locals[id as usize].ty.is_pointer()
        {
            // The learner's own value when it is a plain one (`1`, `v`), so the fix reads as
            // their line does.
            let simple = |e: &syntax::Expr, or: &str| match &e.kind {
                syntax::ExprKind::Int(v, _) => v.to_string(),
                syntax::ExprKind::Name(n) => n.clone(),
                _ => or.to_string(),
            };
            let rest = if op == AtomicOp::Cas {
                format!("{}, {}", simple(&args[1], "expected"), simple(&args[2], "value"))
            } else {
                simple(&args[1], "value")
            };
            return Err(err(args[0].span, format!("`&{var}` is the address of the pointer `{var}`, not of the memory it points to"))
                .label(format!("`{var}` is already a pointer"))
                .help(format!(
                    "`{var}` already holds the address of `{var}[0]`: write `{name}({var}, {rest})`, or `{name}(&{var}[i], {rest})` for element i"
                )));
        }
        let p = self.value_expr(&args[0])?;
        let Some(pointee) = p.ty.pointee().cloned() else {
            return Err(err(p.span, format!("the first argument of `{name}` must be a pointer"))
                .label(format!("this is `{}`", p.ty.c_name()))
                .help(format!("pass the address: {base}(&a[i], v)")));
        };
        if matches!(p.ty, Type::Ptr { is_const: true, .. }) {
            return Err(err(p.span, format!("`{name}` writes through this pointer, but it points to const data"))
                .help("remove `const` from the pointer's declaration"));
        }
        let ty = match pointee {
            Type::Scalar(s) => s,
            ref t => {
                return Err(err(p.span, format!("`{name}` cannot operate on `{}`", t.c_name()))
                    .help(format!("pass the address of one element: {base}(&a[i], v)")));
            }
        };
        use Scalar::*;
        let allowed: &[Scalar] = match op {
            AtomicOp::Add => &[I32, U32, I64, U64, F32, F64],
            AtomicOp::Exch => &[I32, U32, I64, U64, F32],
            AtomicOp::Inc | AtomicOp::Dec => &[U32],
            _ => &[I32, U32, I64, U64],
        };
        if !allowed.contains(&ty) {
            let names: Vec<&str> = allowed.iter().map(|s| s.c_name()).collect();
            return Err(err(p.span, format!("`{name}` does not support `{}`", ty.c_name()))
                .label("wrong element type")
                .help(format!("`{name}` works on {}", names.join(", "))));
        }
        let _ = name_span;
        let mut v = vec![p];
        for a in &args[1..] {
            let value_ty = if matches!(op, AtomicOp::Inc | AtomicOp::Dec) { U32 } else { ty };
            v.push(self.number_arg(a, value_ty, name)?);
        }
        Ok(Some(Expr {
            kind: ExprKind::Intrinsic { which: Intrinsic::Atomic { op, ty }, args: v },
            ty: Type::Scalar(ty),
            span,
        }))
    }

    fn printf(&mut self, args: &[syntax::Expr], span: Span) -> CResult<Expr> {
        let Some(syntax::Expr { kind: syntax::ExprKind::Str(format), .. }) = args.first() else {
            let at = args.first().map_or(span, |a| a.span);
            return Err(err(at, "printf's first argument must be a string literal")
                .help("write e.g. `printf(\"i = %d\\n\", i);`"));
        };
        if let Some(e) = self.printf_strings(args, span)? {
            return Ok(e);
        }
        let mut out = Vec::new();
        for a in &args[1..] {
            let v = self.value_expr(a)?;
            let v = match v.ty {
                Type::Scalar(Scalar::F32) => scalar_cast(v, Scalar::F64),
                Type::Scalar(s) => scalar_cast(v, promote(s)),
                Type::Ptr { .. } => v,
                _ => {
                    return Err(err(v.span, "printf cannot print this value")
                        .help("print numbers or pointers, e.g. `printf(\"%f\\n\", x)`"));
                }
            };
            out.push(v);
        }
        Ok(Expr { kind: ExprKind::Printf { format: format.clone(), args: out }, ty: Type::Scalar(Scalar::I32), span })
    }
}

/// For `float v[][4] = {...}`: the number of innermost elements per outer element.
pub(super) fn lens_after(fx: &mut Fx, dims: &[Option<syntax::Expr>]) -> CResult<u64> {
    let mut n = 1u64;
    for d in dims {
        let Some(e) = d else { return Ok(n) };
        let v = fx.value_expr(e)?;
        match const_eval(&v) {
            Some(Num::I(k)) if k > 0 => n = n.saturating_mul(k as u64),
            _ => return Err(not_constant(e.span)),
        }
    }
    Ok(n)
}

/// Whether evaluating `e` could change something: an assignment, `++`/`--`, or a call.
fn has_effects(e: &syntax::Expr) -> bool {
    use syntax::ExprKind as K;
    match &e.kind {
        K::Assign(..) | K::IncDec { .. } | K::Call { .. } | K::MethodCall { .. } | K::Construct { .. } => true,
        K::Member(b, ..) | K::Unary(_, b) | K::Cast(_, b) => has_effects(b),
        K::Binary(_, l, r) | K::Index(l, r) | K::Comma(l, r) => has_effects(l) || has_effects(r),
        K::Cond(c, a, b) => has_effects(c) || has_effects(a) || has_effects(b),
        _ => false,
    }
}

/// The built-in index variable `name` names, if any.
fn builtin_var(name: &str) -> Option<BuiltinVar> {
    Some(match name {
        "threadIdx" => BuiltinVar::ThreadIdx,
        "blockIdx" => BuiltinVar::BlockIdx,
        "blockDim" => BuiltinVar::BlockDim,
        "gridDim" => BuiltinVar::GridDim,
        _ => return None,
    })
}
