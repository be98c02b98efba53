//! The CUDA C front end: a hand-written lexer and recursive-descent parser for the subset the
//! lessons use, and a checker that applies C's conversion rules and produces the typed AST in
//! [`ast`]. It serves both backends: kernel signatures for argument checking, the full AST for
//! the simulator.
//!
//! A session's CUDA code is one [`Module`] that grows snippet by snippet; redefining a function
//! replaces it, and every change is checked against the whole module at once.
//!
//! `#define`s and typedefs persist across snippets and apply from where they are written on:
//! items are kept as parse trees with macros already expanded, so redefining a macro affects
//! later snippets only (as re-running a C file top to bottom would), not code added before it.
//!
//! Structs, and function and struct templates (instantiated here, `template.rs`), are part of
//! the subset: they run on both backends. On the GPU backend, code outside the subset (vector
//! types such as `float4`, template argument deduction, intrinsics such as `__ldg`, anything
//! else NVRTC compiles) is kept as *GPU-only* items ([`GpuOnly`]): the front end's error says
//! which construct it met, [`sketch`] reads what the item defines and each kernel's signature,
//! and NVRTC is the judge of the rest. An item that uses a GPU-only item is GPU-only too. The
//! simulator refuses to launch GPU-only kernels, naming the construct.
//!
//! The front end runs in passes: `lexer.rs` (tokens; preprocessor lines read as directives),
//! `preprocess.rs` (macros and `#if`), `template.rs` and `coop.rs` (templates and cooperative
//! groups, rewritten on tokens), `parser.rs` (the untyped tree of `syntax.rs`) and `check/`
//! (types and C's conversions, to the typed [`ast`]); `fold.rs` folds a constant expression
//! while it is still tokens, for `#if` and for a template's value arguments. Every pass walks
//! tokens with `cursor.rs`, the one place that counts brackets, so a bracket the learner left
//! open or closed twice is an error at it in whichever pass meets it first.

pub mod ast;
pub mod check;
pub mod coop;
pub mod cursor;
pub mod fold;
pub mod goto;
pub mod lexer;
pub mod namespace;
pub mod parser;
pub mod preprocess;
pub mod sketch;
pub mod syntax;
pub mod template;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::diag::{Cause, Diagnostic, SourceId, Span};
use ast::{FuncKind, Function, Program, RowMajor, Type};
use lexer::Token;

/// The most kernels, functions, variables and typedefs a session keeps (see [`Module::add`]).
pub const MAX_ITEMS: usize = 1000;

/// The error for a snippet that would take the module past [`MAX_ITEMS`].
fn too_many(at: Span) -> Diagnostic {
    Diagnostic::error(format!("the session holds more than {MAX_ITEMS} kernels, functions and variables"))
        .at(at)
        .label("one too many")
        .help("gridlab checks the whole module at every change; `:reset` to start over, or redefine an existing name")
}

/// What a snippet defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Kernel,
    DeviceFunction,
    Global,
    Define,
    Typedef,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defined {
    pub name: String,
    pub kind: ItemKind,
    /// An item of the same name existed and was replaced.
    pub replaced: bool,
}

#[derive(Clone, Debug, Default)]
pub struct AddOutcome {
    pub defined: Vec<Defined>,
    pub warnings: Vec<Diagnostic>,
    /// Items that became GPU-only with this snippet (new ones, and older ones that use them),
    /// with the construct that made each one so.
    pub gpu_only: Vec<(String, String)>,
}

impl AddOutcome {
    /// The one line that says some of the snippet runs on the GPU only, e.g.
    /// ``note: `k` uses `float4`, which the simulator does not run; it runs on the GPU``.
    pub fn gpu_note(&self) -> Option<String> {
        let ((first, construct), rest) = self.gpu_only.split_first()?;
        let tail = if rest.is_empty() {
            "it runs on the GPU".to_string()
        } else {
            let names: Vec<String> = self.gpu_only.iter().map(|(n, _)| format!("`{n}`")).collect();
            let (last, most) = names.split_last().expect("two or more");
            format!("{} and {last} run on the GPU only", most.join(", "))
        };
        Some(format!("note: `{first}` uses {construct}, which the simulator does not run; {tail}"))
    }
}

/// Why an item runs on the GPU only, and what gridlab knows of it without parsing it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuOnly {
    /// The first construct outside the simulator's subset, as the front end named it
    /// (`` `float4` ``, `templates`), or a GPU-only item it uses (`` `sq` ``).
    pub construct: String,
    /// Where the front end met it.
    pub at: Span,
    /// For kernels: the signature, read by [`sketch`].
    pub kernel: Option<sketch::KernelSig>,
    /// For kernels whose every parameter gridlab can pass: the signature as a body-less
    /// [`Function`], which the launch checks take like any other kernel's.
    launchable: Option<Function>,
    /// `name(types)`: GPU-only functions may be overloaded (`operator+` for several types).
    overload: String,
}

impl GpuOnly {
    fn new(sketch: &sketch::Sketch, source: SourceId, offset: usize, construct: String, at: Span) -> GpuOnly {
        let mut kernel = sketch.kernel.clone();
        if let Some(k) = &mut kernel {
            for p in &mut k.params {
                p.lo += offset;
                p.hi += offset;
            }
        }
        let launchable = kernel.as_ref().filter(|k| !k.template).and_then(|k| {
            let params = k.launch_params(source).ok()?;
            let span = Span::new(source, sketch.lo + offset, sketch.hi + offset);
            Some(Function {
                name: k.name.clone(),
                kind: FuncKind::Kernel,
                ret: Type::Void,
                locals: Vec::new(),
                local_arrays: Vec::new(),
                shared: Vec::new(),
                body: Vec::new(),
                span,
                name_span: span,
                calls: Vec::new(),
                row_major: Vec::new(),
                params,
            })
        });
        GpuOnly { construct, at, kernel, launchable, overload: sketch.overload.clone() }
    }

    /// The kernel as the launch checks see it, or why it cannot be launched by name.
    pub fn launchable(&self, name: &str) -> Result<&Function, Diagnostic> {
        if let Some(f) = &self.launchable {
            return Ok(f);
        }
        let Some(k) = &self.kernel else {
            return Err(Diagnostic::error(format!("`{name}` is not a kernel")));
        };
        if k.template {
            return Err(Diagnostic::error(format!(
                "`{name}` is a template kernel: gridlab launches kernels by name, and a template needs its type arguments first"
            ))
            .help(format!(
                "make `{name}` a `template` `__device__` function and launch a plain kernel that calls it for one type, e.g. `__global__ void {name}_f32(float *a, int n) {{ {name}<float>(a, n); }}`"
            )));
        }
        let p = k.launch_params(0).expect_err("not launchable, so some parameter cannot be passed");
        Err(Diagnostic::error(format!(
            "gridlab cannot pass parameter `{}` of `{name}`: its type is `{}`",
            p.name, p.c_type
        ))
        .help("a launch passes buffers to pointers to float, double, int, unsigned, long long or unsigned long long (with `const` and `__restrict__` as you like), and numbers to those types; take plain pointers and numbers, and build the rest inside the kernel"))
    }

    /// `k(float4 *v, int n)` for a kernel, `sq(T)` for a function, else the name.
    pub fn signature(&self, name: &str) -> String {
        match &self.kernel {
            Some(k) if k.template => format!("template {}", k.render()),
            Some(k) => k.render(),
            None if self.overload.is_empty() => name.to_string(),
            None => self.overload.clone(),
        }
    }

    /// What the simulator says when asked to launch this kernel.
    pub fn sim_refusal(&self, name: &str) -> Diagnostic {
        Diagnostic::error(format!(
            "the simulator cannot run `{name}`: it uses {}, which runs on the GPU only",
            self.construct
        ))
        .at(self.at)
        .label("outside the simulator's subset")
        .help("switch to the GPU with `:backend gpu`; the session's other kernels keep running on the simulator")
    }
}

/// One item of the module as the learner wrote it: its parse tree and its text, so the whole
/// module can be re-checked and a GPU backend can regenerate CUDA source.
#[derive(Clone, Debug)]
pub struct ModuleItem {
    pub name: String,
    pub kind: ItemKind,
    pub source: SourceId,
    /// The item's own text (a whole function, declaration or `#define` line).
    pub text: String,
    pub span: Span,
    syntax: Option<syntax::Item>,
    /// For `#define`: the macro, expanded again in every later snippet.
    define_body: preprocess::Macro,
    /// Set for items only the GPU runs (they have no parse tree).
    gpu_only: Option<GpuOnly>,
    /// Set for a function or struct template, or a struct template's full specialisation (it
    /// has no parse tree; its instances do).
    template: Option<Box<template::Template>>,
    /// The template instances this item uses (`reduce<float, 256>`).
    instances: Vec<template::Instance>,
}

impl ModuleItem {
    /// The untyped parse tree (`None` for `#define`s, which live on as tokens, and for
    /// GPU-only items).
    pub fn syntax(&self) -> Option<&syntax::Item> {
        self.syntax.as_ref()
    }

    /// Why the item runs on the GPU only, when it does.
    pub fn gpu_only(&self) -> Option<&GpuOnly> {
        self.gpu_only.as_ref()
    }

    /// The function template this item defines, when it is one.
    pub fn template(&self) -> Option<&template::Template> {
        self.template.as_deref()
    }

    fn same_slot(&self, other: &ModuleItem) -> bool {
        let group = |k: &ItemKind| match k {
            ItemKind::Kernel | ItemKind::DeviceFunction => 0,
            ItemKind::Global => 1,
            ItemKind::Define => 2,
            ItemKind::Typedef => 3,
        };
        if self.name != other.name || group(&self.kind) != group(&other.kind) {
            return false;
        }
        // Two GPU-only device functions of the same name are overloads unless their
        // parameter types match; the simulator's functions (and kernels) are not overloaded.
        match (&self.gpu_only, &other.gpu_only) {
            (Some(a), Some(b)) if self.kind == ItemKind::DeviceFunction && other.kind == ItemKind::DeviceFunction => {
                a.overload == b.overload
            }
            _ => true,
        }
    }

    /// This item, kept for the GPU only because of `construct` at `at`.
    fn into_gpu_only(mut self, construct: String, at: Span) -> ModuleItem {
        let offset = self.span.lo as usize;
        let sketch =
            sketch::sketch(&self.text).into_iter().find(|s| s.name == self.name).unwrap_or_else(|| sketch::Sketch {
                name: self.name.clone(),
                kind: self.kind.clone(),
                lo: 0,
                hi: self.text.len(),
                overload: String::new(),
                kernel: None,
            });
        self.gpu_only = Some(GpuOnly::new(&sketch, self.source, offset, construct, at));
        self.syntax = None;
        self.template = None;
        self.instances = Vec::new();
        self.define_body = preprocess::Macro::default();
        self
    }
}

/// The session's CUDA code: parsed items in definition order plus the checked [`Program`].
#[derive(Clone, Debug, Default)]
pub struct Module {
    items: Vec<ModuleItem>,
    program: Program,
    generation: u64,
    /// Template kernels instantiated by launches (`matrixMul<16><<<...>>>`).
    launched: Vec<template::Instance>,
    /// Instances launches asked for whose code only the GPU compiles (the template uses a
    /// GPU-only struct, or a construct outside the subset): NVRTC makes them by name, and the
    /// launch checks take their signature, read from the instance with its body left out.
    gpu_instances: Vec<(template::Instance, GpuOnly)>,
    /// Kernels whose array parameters are row-major numpy arrays (`set_row_major`), by name,
    /// copied into the checked program each time it is made.
    row_major: Vec<(String, Vec<RowMajor>)>,
}

impl Module {
    pub fn new() -> Module {
        Module::default()
    }

    /// Parse `text` (registered in the session's source map as `source`) and add its items,
    /// replacing same-named ones; then check the whole module. On any error the module is left
    /// unchanged and every error found is returned.
    pub fn add(&mut self, source: SourceId, text: &str) -> Result<AddOutcome, Vec<Diagnostic>> {
        self.add_to(source, text, false)
    }

    /// As [`Module::add`], for a session on the GPU: code that fails the front end only because
    /// it is outside the simulator's subset (or uses GPU-only items) is kept as GPU-only items,
    /// for NVRTC to compile.
    pub fn add_for_gpu(&mut self, source: SourceId, text: &str) -> Result<AddOutcome, Vec<Diagnostic>> {
        self.add_to(source, text, true)
    }

    /// Whether [`Module::add_for_gpu`] could take code that [`Module::add`] refused with `errors`.
    pub fn gpu_could_take(&self, errors: &[Diagnostic], text: &str) -> bool {
        errors.iter().any(|d| self.gpu_reason(d, text).is_some())
    }

    fn add_to(&mut self, source: SourceId, text: &str, gpu: bool) -> Result<AddOutcome, Vec<Diagnostic>> {
        let new_items = match self.parse(&self.items, source, text) {
            Ok(items) => items,
            Err(d) if gpu && self.gpu_reason(&d, text).is_some() => self.parse_pieces(source, text)?,
            Err(d) => return Err(vec![self.explain(d, text)]),
        };
        if new_items.is_empty() {
            return Ok(AddOutcome::default());
        }
        // Every snippet re-checks the whole module, so the module's size is bounded to keep a
        // long script's total time in seconds rather than growing with its square. Counted
        // before copying anything, so that a refusal costs little.
        let checked = |i: &&ModuleItem| i.kind != ItemKind::Define;
        let kept = self.items.iter().filter(checked).filter(|o| !new_items.iter().any(|n| o.same_slot(n))).count();
        if kept + new_items.iter().filter(checked).count() > MAX_ITEMS {
            return Err(vec![too_many(new_items[0].span)]);
        }
        let mut items = self.items.clone();
        let mut defined = Vec::new();
        let mut errors = Vec::new();
        for (i, item) in new_items.iter().enumerate() {
            let twice = new_items[..i].iter().any(|o| o.same_slot(item));
            if twice && item.kind != ItemKind::Define {
                errors.push(
                    Diagnostic::error(format!("`{}` is defined twice in this snippet", item.name))
                        .at(item.span)
                        .label("second definition")
                        .help("rename one of them, or delete the older one"),
                );
                continue;
            }
            let before = items.len();
            // A variable declared again keeps its place: the GPU's source lists items in order,
            // and the kernels before it that use it must still see it declared above them. So
            // does a function defined again as it was (the helpers every Python kernel's C
            // brings, `py_floordiv`), which compiled where it stands.
            let kept_place = items
                .iter()
                .position(|o| o.same_slot(item))
                .filter(|&at| item.kind == ItemKind::Global || items[at].text == item.text);
            items.retain(|o| !o.same_slot(item));
            let replaced = items.len() < before && !twice;
            if let Some(d) = defined.iter_mut().find(|d: &&mut Defined| d.name == item.name && d.kind == item.kind) {
                d.replaced |= replaced;
            } else {
                defined.push(Defined { name: item.name.clone(), kind: item.kind.clone(), replaced });
            }
            match kept_place {
                Some(at) if at <= items.len() => items.insert(at, item.clone()),
                _ => items.push(item.clone()),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        if items.iter().filter(|i| i.kind != ItemKind::Define).count() > MAX_ITEMS {
            return Err(vec![too_many(new_items[0].span)]);
        }
        let mut gpu_only: Vec<(String, String)> =
            new_items.iter().filter_map(|i| Some((i.name.clone(), i.gpu_only.as_ref()?.construct.clone()))).collect();
        // Check what the simulator runs. On the GPU, an item whose error is about the subset
        // (or a GPU-only item it uses) becomes GPU-only itself, and the rest is checked again.
        let checked = loop {
            let errors = match check_items(&items, &self.launched) {
                Ok(checked) => break checked,
                Err(errors) => errors,
            };
            if !gpu {
                return Err(errors.into_iter().map(|d| self.explain(d, "")).collect());
            }
            let gpu_names = gpu_names(&items);
            let mut demote = Vec::new();
            if errors.is_empty() {
                return Err(errors);
            }
            for d in &errors {
                let found = d.span.and_then(|at| {
                    let k = items.iter().position(|i| {
                        i.gpu_only.is_none() && i.source == at.source && i.span.lo <= at.lo && at.lo <= i.span.hi
                    })?;
                    Some((k, at))
                });
                match found.and_then(|(k, at)| Some((k, reason(d, &items[k].text, &gpu_names)?, at))) {
                    Some(found) => demote.push(found),
                    None => return Err(errors),
                }
            }
            for (k, construct, at) in demote {
                if items[k].gpu_only.is_none() {
                    gpu_only.push((items[k].name.clone(), construct.clone()));
                    items[k] = items[k].clone().into_gpu_only(construct, at);
                }
            }
        };
        let warnings = checked.warnings.into_iter().filter(|w| w.span.is_none_or(|s| s.source == source)).collect();
        // Made again at their next launch, from the templates as they are now.
        self.gpu_instances.clear();
        self.items = items;
        self.program = checked.program;
        // A kernel defined again is what its new text says until told otherwise.
        self.row_major.retain(|(name, _)| !new_items.iter().any(|i| &i.name == name));
        self.apply_row_major();
        self.generation += 1;
        Ok(AddOutcome { defined, warnings, gpu_only })
    }

    /// The name of template `name`'s instance for `args` (the tokens of a launch's
    /// `<float, 256>`, without the brackets), made and checked if it is new: a launch calls this
    /// before looking the kernel up.
    pub fn instantiate(&mut self, name: &str, args: Vec<Vec<Token>>, span: Span) -> Result<String, Vec<Diagnostic>> {
        let Some(t) = self.template(name) else {
            let d = if self.items.iter().any(|i| i.name == name) {
                Diagnostic::error(format!("`{name}` is not a template"))
                    .at(span)
                    .help(format!("launch it without angle brackets: `{name}<<<grid, block>>>(...)`"))
            } else {
                Diagnostic::error(format!("no template kernel named `{name}`"))
                    .at(span)
                    .label("not defined")
                    .help(format!("define it first: `template <int N> __global__ void {name}(float *a) {{ ... }}`"))
            };
            return Err(vec![d]);
        };
        let mut defines: HashMap<String, preprocess::Macro> = preprocess::predefined(span.source).into_iter().collect();
        for item in self.items.iter().filter(|i| i.kind == ItemKind::Define) {
            defines.insert(item.name.clone(), item.define_body.clone());
        }
        let mut expanded = Vec::new();
        for a in args {
            expanded.push(preprocess::expand(a, &mut defines).map_err(|d| vec![d])?.0);
        }
        let inst = template::instance(name, &t.params, expanded, span).map_err(|d| vec![d])?;
        let instance = inst.name.clone();
        if self.program.function(&instance).is_some()
            || self.launched.iter().any(|l| l.name == instance)
            || self.gpu_instances.iter().any(|(l, _)| l.name == instance)
        {
            return Ok(instance);
        }
        let t = t.clone();
        self.launched.push(inst.clone());
        match check_items(&self.items, &self.launched) {
            Ok(checked) => {
                self.program = checked.program;
                self.apply_row_major();
                self.generation += 1;
                Ok(instance)
            }
            Err(errors) => {
                self.launched.pop();
                let Some(gpu) = self.gpu_instance(&t, &inst, &errors) else { return Err(errors) };
                self.gpu_instances.push((inst, gpu));
                self.generation += 1;
                Ok(instance)
            }
        }
    }

    /// For an instance the front end refused with `errors`: when they are about code only the
    /// GPU compiles, the instance as a GPU-only kernel, with the signature the launch checks
    /// need (read from the instance with an empty body).
    fn gpu_instance(
        &self,
        t: &template::Template,
        inst: &template::Instance,
        errors: &[Diagnostic],
    ) -> Option<GpuOnly> {
        let tokens = template::instantiate(t, inst);
        let names: Vec<&str> = gpu_names(&self.items).into_iter().filter(|n| *n != t.name).collect();
        let construct = errors
            .iter()
            .find_map(|d| match d.cause.as_deref() {
                Some(Cause::OutsideSubset(c)) => Some(c.clone()),
                Some(Cause::UnknownName(n)) if names.contains(&n.as_str()) => Some(format!("`{n}`")),
                _ => None,
            })
            .or_else(|| {
                tokens.iter().find_map(|tok| match &tok.tok {
                    lexer::Tok::Ident(w) if names.contains(&w.as_str()) => Some(format!("`{w}`")),
                    _ => None,
                })
            })?;
        // The signature: every token before the body's `{`, then an empty body.
        let mut depth = 0i32;
        let open = tokens.iter().position(|tok| {
            match tok.tok {
                lexer::Tok::Punct("(") => depth += 1,
                lexer::Tok::Punct(")") => depth -= 1,
                _ => {}
            }
            depth == 0 && matches!(tok.tok, lexer::Tok::Punct("{"))
        })?;
        let mut signature = tokens[..=open].to_vec();
        signature.push(Token { tok: lexer::Tok::Punct("}"), ..tokens[open].clone() });
        let mut typedefs = t.typedefs.clone();
        let parsed = parser::parse(&signature, &mut typedefs, t.span).ok()?;
        let mut syntax: Vec<&syntax::Item> = self.items.iter().filter_map(|i| i.syntax.as_ref()).collect();
        syntax.extend(parsed.iter());
        let checked = check::check(&syntax).ok()?;
        let f = checked.program.kernels().find(|f| f.name == inst.name)?.clone();
        let at = errors.iter().find_map(|d| d.span).unwrap_or(inst.span);
        Some(GpuOnly { construct, at, kernel: None, launchable: Some(f), overload: inst.name.clone() })
    }

    /// The function template named `name`, if there is one.
    pub fn template(&self, name: &str) -> Option<&template::Template> {
        self.items
            .iter()
            .rev()
            .find_map(|i| i.template.as_deref().filter(|t| t.name == name && !t.is_struct && t.specialises.is_none()))
    }

    /// The template instances launches asked for, in order (the GPU backend names them to NVRTC).
    pub fn launched_instances(&self) -> impl Iterator<Item = &template::Instance> {
        self.launched.iter().chain(self.gpu_instances.iter().map(|(i, _)| i))
    }

    /// Why the GPU could take code the front end refused with `d` (in `text`), if it could.
    fn gpu_reason(&self, d: &Diagnostic, text: &str) -> Option<String> {
        reason(d, text, &gpu_names(&self.items))
    }

    /// On the simulator, say so when an error is about a GPU-only item.
    fn explain(&self, d: Diagnostic, text: &str) -> Diagnostic {
        let names = gpu_names(&self.items);
        if matches!(d.cause.as_deref(), Some(Cause::OutsideSubset(_))) {
            return d;
        }
        if let Some(Cause::UnknownName(n)) = d.cause.as_deref()
            && self.template(n).is_some()
        {
            let note = format!(
                "`{n}` is a template: write its arguments, `{n}<float>(...)`, or switch with `:backend gpu`, which deduces them"
            );
            return d.note(note);
        }
        let used = names
            .iter()
            .find(|n| matches!(d.cause.as_deref(), Some(Cause::UnknownName(u)) if u == *n) || mentions(text, n));
        match used {
            Some(n) => {
                d.note(format!("`{n}` runs on the GPU only, so code that uses it does too: switch with `:backend gpu`"))
            }
            None => d,
        }
    }

    /// A snippet the front end cannot parse as a whole: take it item by item (as [`sketch`]
    /// splits it), each parsed on its own where it can be and kept GPU-only where it cannot.
    /// An item with an error that is not about the subset fails the snippet.
    fn parse_pieces(&self, source: SourceId, text: &str) -> Result<Vec<ModuleItem>, Vec<Diagnostic>> {
        let mut context = self.items.clone();
        let mut out = Vec::new();
        for piece in sketch::sketch(text) {
            // Blank out the rest of the snippet, keeping newlines, so spans stay the snippet's.
            let mut alone = String::with_capacity(text.len());
            for (i, c) in text.char_indices() {
                if (piece.lo..piece.hi).contains(&i) || c == '\n' {
                    alone.push(c);
                } else {
                    alone.extend(std::iter::repeat_n(' ', c.len_utf8()));
                }
            }
            let items = match self.parse(&context, source, &alone) {
                Ok(items) => items,
                Err(d) => {
                    let Some(construct) = reason(&d, &text[piece.lo..piece.hi], &gpu_names(&context)) else {
                        return Err(vec![d]);
                    };
                    let at = d.span.unwrap_or(Span::new(source, piece.lo, piece.lo));
                    vec![ModuleItem {
                        name: piece.name.clone(),
                        kind: piece.kind.clone(),
                        source,
                        text: text[piece.lo..piece.hi].to_string(),
                        span: Span::new(source, piece.lo, piece.hi),
                        syntax: None,
                        define_body: preprocess::Macro::default(),
                        gpu_only: Some(GpuOnly::new(&piece, source, 0, construct, at)),
                        template: None,
                        instances: Vec::new(),
                    }]
                }
            };
            for item in &items {
                context.retain(|o| !o.same_slot(item));
                context.push(item.clone());
            }
            out.extend(items);
        }
        Ok(out)
    }

    /// Lex, expand macros and parse one snippet into module items, in the order written, with
    /// the macros and typedefs of `context`.
    fn parse(&self, context: &[ModuleItem], source: SourceId, text: &str) -> Result<Vec<ModuleItem>, Diagnostic> {
        let tokens = lexer::lex(source, text)?;
        let mut defines: HashMap<String, preprocess::Macro> = preprocess::predefined(source).into_iter().collect();
        let mut typedefs = HashMap::new();
        for item in context {
            match (&item.kind, &item.syntax) {
                (ItemKind::Define, _) => {
                    defines.insert(item.name.clone(), item.define_body.clone());
                }
                (ItemKind::Typedef, Some(syntax::Item { kind: syntax::ItemKind::Typedef(t), .. })) => {
                    typedefs.insert(item.name.clone(), t.clone());
                }
                _ => {}
            }
        }
        let (tokens, new_defines) = preprocess::expand(tokens, &mut defines)?;
        let earlier: Vec<&str> = context
            .iter()
            .filter(|i| i.kind == ItemKind::Typedef && i.syntax.is_none() && i.gpu_only.is_none())
            .map(|i| i.text.as_str())
            .collect();
        let tokens = preprocess::strip_decorations(tokens)?;
        let (tokens, namespaces) = coop::rewrite(tokens, &earlier)?;
        let texts: Vec<&str> = context.iter().map(|i| i.text.as_str()).filter(|t| t.contains("namespace")).collect();
        let (tokens, spaces) = namespace::flatten(tokens, &namespace::declared_in(&texts))?;
        let (tokens, mut templates) = template::extract(tokens)?;
        let mut known = template_params(context);
        for t in templates.iter().filter(|t| t.specialises.is_none()) {
            known.insert(t.name.clone(), template::Known { params: t.params.clone(), is_struct: t.is_struct });
        }
        let (tokens, mut instances) = template::rewrite_uses(tokens, &known)?;
        // The structs the snippet makes from templates are types its code names: made here so
        // that the parser knows them, and made again at every check (`check_items`).
        for t in &mut templates {
            t.typedefs = typedefs.clone();
        }
        let set =
            Templates::new(context.iter().filter_map(|i| i.template.as_deref()).chain(templates.iter()), known.clone());
        set.make_structs(&instances, &mut typedefs, &mut Vec::new(), &mut std::collections::HashSet::new())?;
        let end = Span::new(source, text.len(), text.len());
        let parsed = parser::parse(&tokens, &mut typedefs, end)?;
        spaces.check(parsed.iter().map(|i| {
            let kernel = matches!(&i.kind, syntax::ItemKind::Function(f) if f.qual == syntax::FuncQual::Global);
            (i.name.as_str(), i.span, kernel)
        }))?;
        let slice = |span: Span| text.get(span.lo as usize..span.hi as usize).unwrap_or("").to_string();
        let mut items: Vec<ModuleItem> = new_defines
            .into_iter()
            .map(|(tok, name, body)| ModuleItem {
                name,
                kind: ItemKind::Define,
                source,
                text: slice(tok.span),
                span: tok.span,
                syntax: None,
                define_body: body,
                gpu_only: None,
                template: None,
                instances: Vec::new(),
            })
            .collect();
        // Namespace lines live on as items without a parse tree, like typedefs: later snippets
        // read them, and the GPU's source has them in place.
        for n in namespaces {
            items.push(ModuleItem {
                name: n.name,
                kind: ItemKind::Typedef,
                source,
                text: slice(n.span),
                span: n.span,
                syntax: None,
                define_body: preprocess::Macro::default(),
                gpu_only: None,
                template: None,
                instances: Vec::new(),
            });
        }
        for mut t in templates {
            t.typedefs = typedefs.clone();
            let (name, kind) = match (&t.specialises, t.is_struct) {
                (Some(_), _) => {
                    // A specialisation belongs to a template defined before it (or above it).
                    let name = match known.get(&t.name).filter(|k| k.is_struct == t.is_struct) {
                        Some(k) => t.specialised_name(&k.params),
                        None => None,
                    };
                    let Some(name) = name else {
                        let what = if t.is_struct { "struct" } else { "function" };
                        return Err(Diagnostic::error(format!(
                            "`template <>` specialises `{}`, but no {what} template of that name is defined before it",
                            t.name
                        ))
                        .at(t.span)
                        .help(format!(
                            "define the general template first, e.g. `template <typename T> {}`, then its specialisations",
                            if t.is_struct { format!("struct {} {{ ... }};", t.name) } else { format!("__device__ T {}(T x) {{ ... }}", t.name) }
                        )));
                    };
                    let kind = match (t.is_struct, t.is_kernel) {
                        (true, _) => ItemKind::Typedef,
                        (false, true) => ItemKind::Kernel,
                        (false, false) => ItemKind::DeviceFunction,
                    };
                    (name, kind)
                }
                (None, true) => (t.name.clone(), ItemKind::Typedef),
                (None, false) if t.is_kernel => (t.name.clone(), ItemKind::Kernel),
                (None, false) => (t.name.clone(), ItemKind::DeviceFunction),
            };
            items.push(ModuleItem {
                name,
                kind,
                source,
                text: spaces.wrap(t.span, slice(t.span)),
                span: t.span,
                syntax: None,
                define_body: preprocess::Macro::default(),
                gpu_only: None,
                template: Some(Box::new(t)),
                instances: Vec::new(),
            });
        }
        let mut last_span = None;
        for item in parsed {
            // Items read from one declaration (`enum { A, B };`, `__device__ int a, b;`) share
            // its span: the GPU's source must hold its text once, with the first of them.
            let repeated = last_span == Some(item.span);
            last_span = Some(item.span);
            let kind = match &item.kind {
                syntax::ItemKind::Function(f) if f.qual == syntax::FuncQual::Global => ItemKind::Kernel,
                syntax::ItemKind::Function(_) => ItemKind::DeviceFunction,
                syntax::ItemKind::Global(_) => ItemKind::Global,
                syntax::ItemKind::Typedef(_) => ItemKind::Typedef,
            };
            let (mine, others) = instances
                .into_iter()
                .partition(|i: &template::Instance| i.span.lo >= item.span.lo && i.span.hi <= item.span.hi);
            instances = others;
            // A member function's text is inside its struct's, which NVRTC reads whole.
            let is_member = matches!(&item.kind, syntax::ItemKind::Function(f) if f.method.is_some());
            items.push(ModuleItem {
                name: item.name.clone(),
                kind,
                source,
                text: if is_member || repeated { String::new() } else { spaces.wrap(item.span, slice(item.span)) },
                span: item.span,
                syntax: Some(item),
                define_body: preprocess::Macro::default(),
                gpu_only: None,
                template: None,
                instances: mine,
            });
        }
        items.sort_by_key(|i| i.span.lo);
        Ok(items)
    }

    /// Every item in definition order (a replaced item moves to the end; a variable declared again
    /// keeps its place).
    pub fn items(&self) -> &[ModuleItem] {
        &self.items
    }

    /// Object-like `#define`s with a body, as `(name, body text)`, in definition order: the
    /// session reads those that are numbers as constants (`#define TILE 16` makes `TILE` usable
    /// in a launch).
    pub fn defines(&self) -> impl Iterator<Item = (&str, &str)> {
        self.items.iter().filter(|i| i.kind == ItemKind::Define).filter_map(|i| {
            let rest = i.text.trim_start().strip_prefix("#")?.trim_start().strip_prefix("define")?;
            let rest = rest.trim_start().strip_prefix(i.name.as_str())?;
            // A function-like macro (`NAME(`) is not a constant.
            (!rest.starts_with('(')).then_some((i.name.as_str(), rest.trim()))
        })
    }

    /// Say that kernel `name`'s pointer parameters in `arrays` are row-major arrays with the
    /// extents in the parameters named there (a Python kernel's C, where `a[r, c]` became
    /// `a[r * a_cols + c]`), so the simulator checks each index against its own dimension as
    /// Numba's arrays have them. Holds until the kernel is defined again.
    pub fn set_row_major(&mut self, name: &str, arrays: Vec<RowMajor>) {
        self.row_major.retain(|(n, _)| n != name);
        if !arrays.is_empty() {
            self.row_major.push((name.to_string(), arrays));
        }
        self.apply_row_major();
        self.generation += 1;
    }

    fn apply_row_major(&mut self) {
        for f in &mut self.program.functions {
            f.row_major = self.row_major.iter().find(|(n, _)| *n == f.name).map(|(_, a)| a.clone()).unwrap_or_default();
        }
    }

    /// The checked program: every function and global, typed.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// A kernel the simulator can run (see [`Module::gpu_only_kernel`] for the others).
    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.program.kernels().find(|f| f.name == name)
    }

    /// A kernel only the GPU runs.
    pub fn gpu_only_kernel(&self, name: &str) -> Option<&GpuOnly> {
        self.items
            .iter()
            .filter(|i| i.kind == ItemKind::Kernel && i.name == name)
            .find_map(|i| i.gpu_only.as_ref())
            .or_else(|| self.gpu_instances.iter().find(|(i, _)| i.name == name).map(|(_, g)| g))
    }

    /// Every kernel's name, the simulator's and the GPU-only ones.
    pub fn kernel_names(&self) -> Vec<&str> {
        let gpu = self.items.iter().filter(|i| i.kind == ItemKind::Kernel && i.gpu_only.is_some());
        self.program.kernels().map(|k| k.name.as_str()).chain(gpu.map(|i| i.name.as_str())).collect()
    }

    /// A GPU-only function's signature, for the line under its definition.
    pub fn gpu_only_signature(&self, name: &str) -> Option<String> {
        let g = self.items.iter().filter(|i| i.name == name).find_map(|i| i.gpu_only.as_ref())?;
        Some(g.signature(name))
    }

    /// Changes whenever the module does, so backends can cache compiled kernels.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_empty(&self) -> bool {
        self.program.functions.is_empty()
            && self.program.globals.is_empty()
            && self.items.iter().all(|i| i.gpu_only.is_none() && i.template.is_none())
    }

    /// Forget everything (`:reset`).
    pub fn clear(&mut self) {
        let generation = self.generation + 1;
        *self = Module::default();
        self.generation = generation;
    }
}

/// The parameters of every template in `items` (specialisations aside), by name.
fn template_params(items: &[ModuleItem]) -> HashMap<String, template::Known> {
    items
        .iter()
        .filter_map(|i| i.template.as_deref())
        .filter(|t| t.specialises.is_none())
        .map(|t| (t.name.clone(), template::Known { params: t.params.clone(), is_struct: t.is_struct }))
        .collect()
}

/// The templates a parse or a check can make instances of: each by name (the latest
/// definition wins), and the full specialisations of struct templates.
struct Templates<'a> {
    by_name: HashMap<&'a str, &'a template::Template>,
    specialisations: Vec<&'a template::Template>,
    known: HashMap<String, template::Known>,
}

impl<'a> Templates<'a> {
    fn new(
        all: impl Iterator<Item = &'a template::Template>,
        known: HashMap<String, template::Known>,
    ) -> Templates<'a> {
        let mut by_name = HashMap::new();
        let mut specialisations = Vec::new();
        for t in all {
            if t.specialises.is_some() {
                specialisations.push(t);
            } else {
                by_name.insert(t.name.as_str(), t);
            }
        }
        Templates { by_name, specialisations, known }
    }

    /// What instance `inst` is made from: the full specialisation written for its arguments,
    /// else its template.
    fn source_of(&self, inst: &template::Instance) -> Option<&'a template::Template> {
        let primary = self.by_name.get(inst.template.as_str()).copied();
        let params = primary.map_or(&[][..], |p| &p.params[..]);
        self.specialisations
            .iter()
            .rev()
            .find(|s| s.name == inst.template && s.specialised_name(params).as_deref() == Some(inst.name.as_str()))
            .copied()
            .or(primary)
    }

    /// Make each struct instance among `wanted` (and the struct instances their members use)
    /// a type in `typedefs`, unless `made` has it already. Returns the function-template
    /// instances the structs' members ask for; `items` gets each struct and its member
    /// functions.
    fn make_structs(
        &self,
        wanted: &[template::Instance],
        typedefs: &mut HashMap<String, syntax::TypeName>,
        items: &mut Vec<syntax::Item>,
        made: &mut std::collections::HashSet<String>,
    ) -> Result<Vec<template::Instance>, Diagnostic> {
        let mut functions = Vec::new();
        for inst in wanted {
            let Some(t) = self.source_of(inst).filter(|t| t.is_struct) else {
                functions.push(inst.clone());
                continue;
            };
            if made.contains(&inst.name) {
                continue;
            }
            if made.len() >= template::MAX_INSTANCES {
                return Err(Diagnostic::error(format!(
                    "more than {} struct template instances",
                    template::MAX_INSTANCES
                ))
                .at(inst.span)
                .label(format!("`{}` is one too many", inst.name))
                .help(
                    "a struct template whose members use it with other arguments never stops; write the structs out",
                ));
            }
            made.insert(inst.name.clone());
            let tokens = template::instantiate(t, inst);
            let (tokens, more) = template::rewrite_uses(tokens, &self.known)?;
            // The structs its members use first (itself is known while its members are read).
            let mut inner = t.typedefs.clone();
            inner.extend(typedefs.iter().map(|(k, v)| (k.clone(), v.clone())));
            functions.extend(self.make_structs(&more, &mut inner, items, made)?);
            let parsed = parser::parse(&tokens, &mut inner, t.span).map_err(|d| {
                let d = d.note(format!("in `{}`, made from the template `{}` for the use here", inst.name, t.name));
                // The general template of a struct with specialisations is often not meant to
                // be made at all (NVIDIA's `SharedMemory<T>` is one per element type).
                let written: Vec<String> = self
                    .specialisations
                    .iter()
                    .filter(|s| s.name == inst.template)
                    .filter_map(|s| s.specialised_name(&t.params))
                    .map(|n| format!("`{n}`"))
                    .collect();
                if written.is_empty() || t.specialises.is_some() {
                    return d;
                }
                d.note(format!(
                    "`{}` is specialised as {} only: `{}` is made from its general form; write `template <> struct {}` for it",
                    inst.template,
                    written.join(", "),
                    inst.name,
                    inst.name
                ))
            })?;
            for (k, v) in inner {
                if k.contains('<') {
                    typedefs.insert(k, v);
                }
            }
            items.extend(parsed);
        }
        Ok(functions)
    }
}

/// Check `items` with every template instance they and `launched` ask for (instances that use
/// templates ask for more, up to [`template::MAX_INSTANCES`]).
fn check_items(items: &[ModuleItem], launched: &[template::Instance]) -> Result<check::Checked, Vec<Diagnostic>> {
    let set = Templates::new(items.iter().filter_map(|i| i.template.as_deref()), template_params(items));
    let known = &set.known;
    let mut queue: Vec<template::Instance> = items.iter().flat_map(|i| i.instances.iter().cloned()).collect();
    queue.extend(launched.iter().cloned());
    let mut made: Vec<syntax::Item> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // The structs made from templates so far, by instance name, as types.
    let mut structs: HashMap<String, syntax::TypeName> = HashMap::new();
    let mut structs_made = std::collections::HashSet::new();
    let mut next = 0;
    while next < queue.len() {
        let inst = queue[next].clone();
        next += 1;
        if structs_made.contains(&inst.name) {
            continue;
        }
        if set.source_of(&inst).is_some_and(|t| t.is_struct) {
            let more = set
                .make_structs(std::slice::from_ref(&inst), &mut structs, &mut made, &mut structs_made)
                .map_err(|d| vec![d])?;
            queue.extend(more);
            continue;
        }
        if !seen.insert(inst.name.clone()) {
            continue;
        }
        if seen.len() > template::MAX_INSTANCES {
            return Err(vec![
                Diagnostic::error(format!("more than {} template instances", template::MAX_INSTANCES))
                    .at(inst.span)
                    .label(format!("`{}` is one too many", inst.name))
                    .help("a template that uses itself with other arguments never stops without a specialisation, which gridlab does not have; use a loop"),
            ]);
        }
        // A template redefined as a plain function, or removed: its uses are checked as names.
        // A full specialisation written for the arguments is the instance itself.
        let Some(t) = set.source_of(&inst) else { continue };
        let tokens = template::instantiate(t, &inst);
        let (tokens, more) = template::rewrite_uses(tokens, known).map_err(|d| vec![d])?;
        let more = set.make_structs(&more, &mut structs, &mut made, &mut structs_made).map_err(|d| vec![d])?;
        queue.extend(more);
        let mut typedefs = t.typedefs.clone();
        typedefs.extend(structs.iter().map(|(k, v)| (k.clone(), v.clone())));
        let end = t.span;
        let parsed = parser::parse(&tokens, &mut typedefs, end).map_err(|d| {
            vec![d.note(format!("in `{}`, made from the template `{}` for the use here", inst.name, t.name))]
        })?;
        made.extend(parsed);
    }
    let mut syntax: Vec<&syntax::Item> = items.iter().filter_map(|i| i.syntax.as_ref()).collect();
    syntax.extend(made.iter());
    check::check(&syntax)
}

/// The names GPU-only items define.
/// Templates count too: code that calls one without its arguments is the GPU's, which deduces
/// them.
fn gpu_names(items: &[ModuleItem]) -> Vec<&str> {
    items
        .iter()
        .filter(|i| i.gpu_only.is_some() || i.template.as_deref().is_some_and(|t| !t.is_struct))
        .map(|i| i.name.as_str())
        .collect()
}

/// Why the GPU could take code (`text`) the front end refused with `d`: a construct outside the
/// subset, or a GPU-only item (of `gpu_names`) it names.
fn reason(d: &Diagnostic, text: &str, gpu_names: &[&str]) -> Option<String> {
    match d.cause.as_deref() {
        Some(Cause::OutsideSubset(construct)) => return Some(construct.clone()),
        Some(Cause::UnknownName(name)) if gpu_names.contains(&name.as_str()) => return Some(format!("`{name}`")),
        _ => {}
    }
    // A GPU-only type or template confuses the parser in many ways (`P p;` reads as an
    // expression, `sq<float>(x)` as comparisons): any error in code that names one.
    gpu_names.iter().find(|n| mentions(text, n)).map(|n| format!("`{n}`"))
}

/// Whether `text` has `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if name.is_empty() || !name.chars().all(ident) {
        return false;
    }
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[i + name.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after
    })
}

#[cfg(test)]
mod gpu_only_tests;
