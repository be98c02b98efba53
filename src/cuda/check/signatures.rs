//! Signatures and globals: what a function takes and returns, and file-scope variables
//! (`__constant__`, `__device__`, `const`), checked before any body.

use super::*;

pub(super) fn signature(f: &syntax::FuncDef) -> CResult<Sig> {
    let kind = match f.qual {
        syntax::FuncQual::Global => FuncKind::Kernel,
        syntax::FuncQual::Device => FuncKind::Device,
        syntax::FuncQual::Host => {
            return Err(Diagnostic::error(format!("`{}` is host code", f.name))
                .at(f.name_span)
                .label("no `__global__` or `__device__`")
                .help("mark it `__global__` (a kernel) or `__device__` (called from kernels)"));
        }
    };
    refuse_auto(&f.ret, "a return type in the simulator")?;
    let ret = resolve_type(&f.ret, &[]);
    if kind == FuncKind::Kernel && ret != Type::Void {
        return Err(Diagnostic::error("kernels must return void")
            .at(f.ret.span)
            .label(format!("returns `{}`", ret.c_name()))
            .help("write results through a pointer parameter and declare the kernel `__global__ void`"));
    }
    let mut params = Vec::new();
    let mut defaults = Vec::new();
    let mut seen = HashSet::new();
    for p in &f.params {
        refuse_auto(&p.ty, "a parameter's type")?;
        let mut ty = resolve_type(&p.ty, &[]);
        for _ in 0..p.array_dims {
            ty = Type::Ptr { pointee: Box::new(ty), is_const: p.ty.is_const && p.ty.ptrs.is_empty() };
        }
        if ty == Type::Void {
            return Err(Diagnostic::error("a parameter cannot have type `void`")
                .at(p.span)
                .help("give the parameter a type such as `float *` or `int`"));
        }
        let Some((name, span)) = &p.name else {
            return Err(Diagnostic::error("this parameter has no name").at(p.span).help("name it, e.g. `float *a`"));
        };
        if !seen.insert(name.as_str()) {
            return Err(Diagnostic::error(format!("two parameters are named `{name}`"))
                .at(*span)
                .help("rename one of them"));
        }
        if kind == FuncKind::Kernel && ty.pointee().is_some_and(Type::is_pointer) {
            // A launch passes each buffer as one pointer to its elements: a pointer to
            // pointers has nothing to point to.
            let elem = ty.pointee().and_then(Type::pointee).map_or("float".to_string(), Type::c_name);
            return Err(Diagnostic::error(format!(
                "a launch cannot pass `{}` to the kernel parameter `{name}`",
                ty.c_name().replace("* *", "**")
            ))
            .at(p.span)
            .label("a pointer to pointers")
            .help(format!(
                "buffers reach a kernel as flat pointers, a 2-D buffer row after row: declare `{elem} *{name}` and index it as `{name}[row * width + col]`"
            )));
        }
        if kind == FuncKind::Kernel && p.by_ref {
            return Err(Diagnostic::error(format!("the kernel parameter `{name}` has a reference"))
                .at(p.span)
                .label("a launch copies every argument from the host")
                .help(format!("take `{name}` by value, or as a pointer into a buffer (`{} *{name}`)", ty.c_name())));
        }
        if p.default.is_none() && defaults.iter().any(Option::is_some) {
            return Err(Diagnostic::error(format!("the parameter `{name}` needs a default value"))
                .at(*span)
                .label("after a parameter with a default")
                .help("in C++, every parameter after one with a default has one too: give it one, or move it first"));
        }
        // A `const` reference cannot be written through, so passing it by value is the same.
        let by_ref = p.by_ref && !(p.ty.is_const && p.ty.ptrs.is_empty());
        params.push(Param { name: name.clone(), ty, restrict: p.ty.restrict, by_ref, default: None, span: *span });
        defaults.push(p.default.clone());
    }
    Ok(Sig { kind, ret, params, defaults, name_span: f.name_span })
}

pub(super) fn global(m: &mut Module, decl: &Decl) -> CResult<()> {
    let d = &decl.declarators[0];
    if m.globals.contains_key(&d.name) {
        return Err(Diagnostic::error(format!("`{}` is defined twice", d.name))
            .at(d.name_span)
            .help("give one of them another name"));
    }
    let mut fx = Fx::new(m, None);
    let base = match fx.auto_type(decl, d)? {
        Some((ty, _)) => ty,
        None => resolve_type(&decl.ty, &d.ptrs),
    };
    let is_const = object_const(&decl.ty, &d.ptrs);
    match decl.storage {
        Storage::Constant | Storage::Device => {}
        Storage::Shared | Storage::ExternShared => return shared_global(m, decl, base),
        Storage::Auto | Storage::Static if is_const && d.dims.is_empty() && base.scalar().is_some() => {
            let Some(Init::Expr(init)) = &d.init else {
                return Err(Diagnostic::error(format!("the constant `{}` needs a value", d.name))
                    .at(d.name_span)
                    .help(format!("write `const {} {} = ...;`", base.c_name(), d.name)));
            };
            let e = fx.value_expr(init)?;
            let e = fx.convert(e, &base, "initialise")?;
            let Some(n) = const_eval(&e) else {
                return Err(not_constant(e.span));
            };
            let value = const_to_expr(n, &base, d.name_span);
            m.constants.push((d.name.clone(), value.clone()));
            m.globals.insert(d.name.clone(), Sym::Const(value));
            return Ok(());
        }
        _ => {
            return Err(Diagnostic::error("file-scope variables need `__device__` or `__constant__`")
                .at(d.name_span)
                .label("a host variable, invisible to kernels")
                .help(format!(
                    "write `__device__ {} {}` (or `__constant__` for read-only data)",
                    base.c_name(),
                    d.name
                )));
        }
    }
    if base.is_pointer() || base == Type::Void {
        return Err(Diagnostic::error(format!("`{}` global variables are not supported", base.c_name()))
            .at(d.name_span)
            .help("pass buffers to the kernel as pointer parameters instead"));
    }
    let ty = fx.array_type(base, &d.dims, d.init.as_ref(), d.name_span)?;
    let elem = ty.innermost().scalar().unwrap_or(Scalar::I32);
    let mut init = Vec::new();
    if let Some(i) = &d.init {
        for v in fx.flatten_init(&ty, i)? {
            match v {
                None => init.push(0),
                Some(e) => match const_eval(&e) {
                    Some(n) => init.push(const_bits(n, elem)),
                    None => return Err(not_constant(e.span)),
                },
            }
        }
        while init.last() == Some(&0) {
            init.pop();
        }
    }
    let id = m.global_vars.len() as u32;
    let is_constant = decl.storage == Storage::Constant;
    let var = MemVar { name: d.name.clone(), ty: ty.clone(), is_extern: false, span: d.name_span };
    m.global_vars.push(Global { var, is_constant, is_shared: false, init });
    m.global_const.push(is_constant || is_const);
    m.globals.insert(d.name.clone(), Sym::Mem(MemId::Global(id), ty));
    Ok(())
}

/// A file-scope `__shared__` array or variable (or `extern __shared__ T name[];`, sized at
/// launch): the same rules as one declared in a kernel.
fn shared_global(m: &mut Module, decl: &Decl, base: Type) -> CResult<()> {
    let d = &decl.declarators[0];
    let is_extern = decl.storage == Storage::ExternShared;
    if let Some(init) = &d.init {
        let span = match init {
            Init::Expr(e) => e.span,
            Init::List(_, s) => *s,
        };
        return Err(Diagnostic::error("`__shared__` variables cannot have an initialiser")
            .at(span)
            .help("assign it in the kernel (e.g. from thread 0), then call __syncthreads()"));
    }
    if base.is_pointer() || base == Type::Void {
        return Err(Diagnostic::error(format!("`{}` shared variables are not supported", base.c_name()))
            .at(d.name_span)
            .help("declare an array of numbers or structs"));
    }
    let ty = if is_extern {
        if d.dims.len() != 1 || d.dims[0].is_some() {
            return Err(Diagnostic::error("`extern __shared__` declares an unsized array")
                .at(d.name_span)
                .help(format!("write `extern __shared__ {} {}[];`", base.c_name(), d.name)));
        }
        Type::Array { elem: Box::new(base), len: 0 }
    } else {
        if d.dims.first().is_some_and(Option::is_none) {
            return Err(Diagnostic::error("a `__shared__` array needs a size")
                .at(d.name_span)
                .help("give the size, or write `extern __shared__` to size it at launch"));
        }
        Fx::new(m, None).array_type(base, &d.dims, None, d.name_span)?
    };
    let id = m.global_vars.len() as u32;
    let var = MemVar { name: d.name.clone(), ty: ty.clone(), is_extern, span: d.name_span };
    m.global_vars.push(Global { var, is_constant: false, is_shared: true, init: Vec::new() });
    m.global_const.push(false);
    m.globals.insert(d.name.clone(), Sym::Mem(MemId::Global(id), ty));
    Ok(())
}

pub(super) fn not_constant(span: Span) -> Diagnostic {
    Diagnostic::error("this value is not a compile-time constant")
        .at(span)
        .label("must be known before the kernel runs")
        .help("use numbers, #define'd names and const values here")
}
