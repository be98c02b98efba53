//! Member functions, constructors and operators of structs, as the simulator runs them: each is
//! an ordinary `__device__` function whose object is a first parameter named `this`, taken by
//! reference (constructors build their object in a local `this` and return it). Operators and
//! constructors may be overloaded; a call picks the overload whose parameters its arguments
//! match best: exact types first, then number conversions.

use super::*;

/// How well an argument fits a parameter: exactly, by a number conversion, or not at all.
fn fit(arg: &Expr, param: &Param) -> Option<u32> {
    let strip = |t: &Type| match t {
        Type::Ptr { pointee, .. } => Type::Ptr { pointee: pointee.clone(), is_const: false },
        t => t.clone(),
    };
    if strip(&arg.ty) == strip(&param.ty) {
        return Some(0);
    }
    match (&arg.ty, &param.ty) {
        _ if param.by_ref => None,
        (Type::Scalar(_), Type::Scalar(_)) => Some(1),
        (Type::Ptr { .. }, Type::Ptr { .. }) if pointee_compatible(&arg.ty, &param.ty) => Some(1),
        _ => None,
    }
}

impl Fx<'_> {
    /// For a member function: `this` is its first parameter. For a constructor: declare the
    /// object `this`, then run the member initialisers (`: r(a), i(b)`) as assignments.
    pub(super) fn enter_method(&mut self, f: &syntax::FuncDef, body: &mut Vec<Stmt>) -> CResult<()> {
        let Some(method) = &f.method else { return Ok(()) };
        let def = method.of.clone();
        let Some(inits) = &method.ctor else {
            self.object = Some((0, def));
            return Ok(());
        };
        self.ctor = true;
        let id = self.locals.len() as LocalId;
        self.locals.push(LocalVar { name: "this".into(), ty: Type::Struct(def.clone()), span: f.name_span });
        self.local_const.push(false);
        self.declare("this", f.name_span, Sym::Local(id))?;
        body.push(Stmt { kind: StmtKind::Decl { local: id, init: None }, span: f.name_span });
        self.object = Some((id, def.clone()));
        for (member, span, args) in inits {
            let Some((i, field)) = def.field(member) else {
                return Err(err(*span, format!("`{}` has no member `{member}` to initialise", def.name))
                    .help("initialise the struct's own members, e.g. `: x(a), y(b)`"));
            };
            let target = Expr {
                kind: ExprKind::Member {
                    base: Box::new(Expr { kind: ExprKind::Local(id), ty: Type::Struct(def.clone()), span: *span }),
                    field: i as u32,
                },
                ty: field.ty.clone(),
                span: *span,
            };
            let value = match (args.as_slice(), &field.ty) {
                ([one], ty) => {
                    let v = self.value_expr(one)?;
                    self.convert(v, ty, "initialise")?
                }
                ([], ty) => self.zero_value(ty, *span)?,
                (many, Type::Struct(sub)) => {
                    let items: Vec<Init> = many.iter().cloned().map(Init::Expr).collect();
                    self.struct_init(&sub.clone(), &items, *span)?
                }
                _ => {
                    return Err(err(*span, format!("the member `{member}` takes one value"))
                        .help(format!("write `{member}(value)`")));
                }
            };
            let ty = target.ty.clone();
            let assign = ExprKind::Assign { lhs: Box::new(target), rhs: Box::new(value) };
            body.push(Stmt { kind: StmtKind::Expr(Expr { kind: assign, ty, span: *span }), span: *span });
        }
        Ok(())
    }

    /// Inside a member function, a member's name alone means the object's member.
    pub(super) fn implicit_member(&self, name: &str, span: Span) -> Option<Expr> {
        let (id, def) = self.object.as_ref()?;
        let (i, field) = def.field(name)?;
        let this = Expr { kind: ExprKind::Local(*id), ty: Type::Struct(def.clone()), span };
        Some(Expr { kind: ExprKind::Member { base: Box::new(this), field: i as u32 }, ty: field.ty.clone(), span })
    }

    /// The overloads of `base` (`Complex::magnitude2`, `operator+`), by id.
    fn overloads(&self, base: &str) -> Vec<FuncId> {
        let mut ids: Vec<FuncId> = self
            .m
            .funcs
            .iter()
            .filter(|(name, _)| name.strip_prefix(base).is_some_and(|rest| rest.starts_with('(')))
            .map(|(_, &id)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The overload of `base` that `args` fit best, if any fits.
    fn pick(&self, base: &str, args: &[Expr]) -> Option<FuncId> {
        self.overloads(base)
            .into_iter()
            .filter_map(|id| {
                let sig = &self.m.sigs[id as usize];
                let required = sig.defaults.iter().take_while(|d| d.is_none()).count();
                if args.len() < required || args.len() > sig.params.len() {
                    return None;
                }
                let cost: Option<u32> = args.iter().zip(&sig.params).map(|(a, p)| fit(a, p)).sum();
                Some((cost?, id))
            })
            .min()
            .map(|(_, id)| id)
    }

    /// A call of `id` with arguments already checked: the object first for a member function
    /// (any value of its struct: a temporary object is copied), the rest converted.
    pub(super) fn call_values(&mut self, id: FuncId, args: Vec<Expr>, span: Span) -> CResult<Expr> {
        let sig = &self.m.sigs[id as usize];
        let (params, ret) = (sig.params.clone(), sig.ret.clone());
        let mut out = Vec::new();
        for (a, p) in args.into_iter().zip(&params) {
            if p.by_ref && p.name != "this" && !is_lvalue(&a) {
                return Err(err(a.span, format!("`{}` is taken by reference", p.name))
                    .label("not a variable")
                    .help(format!("pass a variable of type `{}`", p.ty.c_name())));
            }
            out.push(if p.by_ref { a } else { self.convert(a, &p.ty, "pass")? });
        }
        if !self.calls.contains(&id) {
            self.calls.push(id);
        }
        Ok(Expr { kind: ExprKind::Call { func: id, args: out }, ty: ret, span })
    }

    /// The names and parameter lists of `base`'s overloads, for a message.
    fn candidates(&self, base: &str) -> String {
        let mut names: Vec<&str> = self
            .overloads(base)
            .iter()
            .filter_map(|&id| self.m.funcs.iter().find(|(_, i)| **i == id))
            .map(|(n, _)| *n)
            .collect();
        names.sort_unstable();
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    }

    fn arg_types(args: &[Expr]) -> String {
        args.iter().map(|a| a.ty.c_name()).collect::<Vec<_>>().join(", ")
    }

    /// The conversion operator of `def` (`operator float *()`) that gives `to`: the one that
    /// gives exactly `to`, else one whose value converts to it (a pointer to const from a
    /// pointer, one number from another).
    pub(super) fn conversion(&self, def: &Arc<StructDef>, to: &Type) -> Option<FuncId> {
        let base = format!("{}::operator ", def.name);
        let mut best: Option<(u32, FuncId)> = None;
        for (name, &id) in &self.m.funcs {
            if !name.starts_with(&base) {
                continue;
            }
            let ret = &self.m.sigs[id as usize].ret;
            let cost = match (ret, to) {
                _ if ret == to => 0,
                (Type::Ptr { .. }, Type::Ptr { is_const: true, .. }) if pointee_compatible(ret, to) => 1,
                (Type::Scalar(_), Type::Scalar(_)) => 2,
                (Type::Ptr { .. }, Type::Scalar(Scalar::Bool)) => 3,
                _ => continue,
            };
            if best.is_none_or(|(c, b)| (cost, id) < (c, b)) {
                best = Some((cost, id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// `a + b` where an operand is a struct: its `operator+`, as a member of the left operand's
    /// struct or as a free function. `None` when no operand is a struct.
    pub(super) fn operator_call(&mut self, sym: &str, args: Vec<Expr>, span: Span) -> CResult<Option<Expr>> {
        if !args.iter().any(|a| matches!(a.ty, Type::Struct(_))) {
            return Ok(None);
        }
        if let Type::Struct(def) = &args[0].ty {
            let member = format!("{}::operator{sym}", def.name);
            if let Some(id) = self.pick(&member, &args) {
                return self.call_values(id, args, span).map(Some);
            }
        }
        let free = format!("operator{sym}");
        if let Some(id) = self.pick(&free, &args) {
            return self.call_values(id, args, span).map(Some);
        }
        // No operator fits: the number check explains, naming the struct.
        Ok(None)
    }

    /// `obj.name(args)`: a member function of `obj`'s struct.
    pub(super) fn method_call(
        &mut self,
        object: &syntax::Expr,
        name: &str,
        name_span: Span,
        args: &[syntax::Expr],
        span: Span,
    ) -> CResult<Expr> {
        let obj = self.expr(object)?;
        let Type::Struct(def) = &obj.ty else {
            return Err(err(
                object.span.to(name_span),
                format!("`.{name}(...)` needs a struct, but this is `{}`", obj.ty.c_name()),
            )
            .help("member functions are called on a struct: `c.magnitude2()`"));
        };
        let def = def.clone();
        let mut values = vec![obj];
        for a in args {
            values.push(self.value_expr(a)?);
        }
        let base = format!("{}::{name}", def.name);
        match self.pick(&base, &values) {
            Some(id) => self.call_values(id, values, span),
            None if self.overloads(&base).is_empty() => {
                let mut names: Vec<String> = self
                    .m
                    .funcs
                    .keys()
                    .filter_map(|k| k.strip_prefix(&format!("{}::", def.name)))
                    .filter_map(|k| k.split('(').next())
                    .filter(|k| *k != def.name)
                    .map(String::from)
                    .collect();
                names.dedup();
                let d = err(name_span, format!("`{}` has no member function `{name}`", def.name)).label("not defined");
                Err(match suggest::did_you_mean(name, names.iter().map(String::as_str)) {
                    Some(h) => d.help(h),
                    None => {
                        d.help(format!("define it inside `struct {} {{ ... }}` as a `__device__` function", def.name))
                    }
                })
            }
            None => Err(err(span, format!("no `{base}` takes ({})", Self::arg_types(&values[1..])))
                .help(format!("the member functions of that name are {}", self.candidates(&base)))),
        }
    }

    /// Inside a member function, `other(args)` calls another member function on the object.
    pub(super) fn implicit_method_call(
        &mut self,
        name: &str,
        name_span: Span,
        args: &[syntax::Expr],
        span: Span,
    ) -> CResult<Option<Expr>> {
        let Some((_, def)) = self.object.clone() else { return Ok(None) };
        if self.overloads(&format!("{}::{name}", def.name)).is_empty() {
            return Ok(None);
        }
        let this = syntax::Expr { kind: syntax::ExprKind::Name("this".into()), span: name_span };
        let object = syntax::Expr { kind: syntax::ExprKind::Unary(UnOp::Deref, Box::new(this)), span: name_span };
        self.method_call(&object, name, name_span, args, span).map(Some)
    }

    /// `Complex z;`: the value its default constructor makes, when the struct has constructors
    /// (`None` for a plain struct, which starts uninitialised, as in C).
    pub(super) fn default_construct(&mut self, def: &Arc<StructDef>, at: Span) -> CResult<Option<Expr>> {
        let base = format!("{}::{}", def.name, def.name);
        if def.name == "dim3" && def.vector {
            // `dim3 block;` is (1, 1, 1), as CUDA's default constructor makes it.
            return self.construct_dim3(def, &[], at).map(Some);
        }
        if self.overloads(&base).is_empty() {
            return Ok(None);
        }
        match self.pick(&base, &[]) {
            Some(id) => self.call_values(id, Vec::new(), at).map(Some),
            None => Err(err(at, format!("`{}` has no constructor without arguments", def.name)).help(format!(
                "give it its arguments, e.g. `{} z(...);`; its constructors are {}",
                def.name,
                self.candidates(&base)
            ))),
        }
    }

    /// `Complex(a, b)`, `Complex{a, b}`, `Complex c(a, b);`: by a constructor when the struct has
    /// any, otherwise member by member.
    pub(super) fn construct(&mut self, ty: &TypeName, args: &[syntax::Expr], span: Span) -> CResult<Expr> {
        let Some(def) = ty.strukt.clone() else {
            return Err(err(span, "only a struct is made this way").help("write a value of the type instead"));
        };
        let base = format!("{}::{}", def.name, def.name);
        // A copy (`Vec3 b(a);`, `dim3 t(threadIdx);`): C++'s implicit copy constructor.
        if let [one] = args {
            let v = self.value_expr(one)?;
            if let Type::Struct(from) = &v.ty
                && (from.name == def.name
                    || matches!((from.name.as_str(), def.name.as_str()), ("uint3", "dim3") | ("dim3", "uint3")))
            {
                return self.convert(v, &Type::Struct(def.clone()), "initialise");
            }
        }
        if def.name == "dim3" && def.vector {
            return self.construct_dim3(&def, args, span);
        }
        if self.overloads(&base).is_empty() {
            let items: Vec<Init> = args.iter().cloned().map(Init::Expr).collect();
            return self.struct_init(&def, &items, span);
        }
        let mut values = Vec::new();
        for a in args {
            values.push(self.value_expr(a)?);
        }
        match self.pick(&base, &values) {
            Some(id) => self.call_values(id, values, span),
            None => Err(err(span, format!("no constructor of `{}` takes ({})", def.name, Self::arg_types(&values)))
                .help(format!("its constructors are {}", self.candidates(&base)))),
        }
    }

    /// `dim3 grid(n)`, `dim3(16, 16)`: the sizes left out are 1, as CUDA's constructor says.
    fn construct_dim3(&mut self, def: &Arc<StructDef>, args: &[syntax::Expr], span: Span) -> CResult<Expr> {
        if args.len() > 3 {
            return Err(err(span, "`dim3` takes at most three sizes").help("write `dim3(x, y, z)`"));
        }
        let mut items: Vec<Init> = args.iter().cloned().map(Init::Expr).collect();
        while items.len() < 3 {
            items.push(Init::Expr(syntax::Expr { kind: syntax::ExprKind::Int(1, Scalar::U32), span }));
        }
        self.struct_init(def, &items, span)
    }
}
