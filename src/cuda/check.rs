//! The checker: resolves names and applies C's rules to the [`syntax`] tree, producing the
//! typed [`ast::Program`] where every conversion is an explicit node.
//!
//! The whole module is checked at once (items may call each other in any order). Each function
//! stops at its first error, so one mistake never turns into a cascade of nonsense.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::ast::*;
use super::goto;
use super::syntax::{self, Decl, Init, ItemKind, Storage, TypeName, UnOp};
use crate::diag::suggest;
use crate::diag::{Diagnostic, Span};

mod builtins;
mod cas;
mod consteval;
mod functions;
mod signatures;
mod types;

pub use builtins::builtin_names;
pub(crate) use builtins::{BUILTIN_FUNCS, BUILTIN_VARS, FAST_MATH, MATH};
use consteval::*;
use functions::*;
use signatures::*;
pub use types::usual;
use types::*;

type CResult<T> = Result<T, Diagnostic>;

/// More elements than this in one array is surely a mistake (and would exhaust the simulator).
const MAX_ARRAY_ELEMS: u64 = 1 << 26;
/// Initialisers are expanded element by element, so they get a smaller cap.
const MAX_INIT_ELEMS: usize = 1 << 16;

/// A checked module and the warnings found along the way.
#[derive(Debug)]
pub struct Checked {
    pub program: Program,
    pub warnings: Vec<Diagnostic>,
}

/// What a name means in a scope.
#[derive(Clone, Debug)]
enum Sym {
    Local(LocalId),
    Mem(MemId, Type),
    /// A file-scope `const int N = 256;`: a named constant, substituted where used.
    Const(Expr),
}

struct Sig {
    kind: FuncKind,
    ret: Type,
    params: Vec<Param>,
    /// Each parameter's default argument, checked at each call that leaves it out.
    defaults: Vec<Option<syntax::Expr>>,
    name_span: Span,
}

/// What every function can see: functions by name, file-scope variables and constants.
struct Module<'a> {
    funcs: HashMap<&'a str, FuncId>,
    sigs: Vec<Sig>,
    globals: HashMap<String, Sym>,
    global_vars: Vec<Global>,
    global_const: Vec<bool>,
    constants: Vec<(String, Expr)>,
}

/// Check every function and global of the module, in definition order.
pub fn check(items: &[&syntax::Item]) -> Result<Checked, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut m = Module {
        funcs: HashMap::new(),
        sigs: Vec::new(),
        globals: HashMap::new(),
        global_vars: Vec::new(),
        global_const: Vec::new(),
        constants: Vec::new(),
    };
    let funcs: Vec<&syntax::FuncDef> = items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Function(f) => Some(f),
            _ => None,
        })
        .collect();
    for f in &funcs {
        m.funcs.insert(f.name.as_str(), m.sigs.len() as FuncId);
        match signature(f) {
            Ok(sig) => m.sigs.push(sig),
            Err(e) => {
                errors.push(e);
                let name_span = f.name_span;
                m.sigs.push(Sig {
                    kind: FuncKind::Device,
                    ret: Type::Void,
                    params: Vec::new(),
                    defaults: Vec::new(),
                    name_span,
                });
            }
        }
    }
    for item in items {
        if let ItemKind::Global(decl) = &item.kind {
            if let Some(&id) = m.funcs.get(item.name.as_str()) {
                errors.push(
                    Diagnostic::error(format!("`{}` is already defined as a function", item.name))
                        .at(decl.declarators[0].name_span)
                        .help("give the variable another name"),
                );
                let _ = id;
                continue;
            }
            if let Err(e) = global(&mut m, decl) {
                errors.push(e);
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut functions = Vec::new();
    // As C++ makes a struct template's member functions only where they are called, an error
    // in one counts only if something calls it (`Ops<float>::bits` using `>>` is no error
    // until a kernel calls it). It stands in as a body-less function meanwhile.
    let mut lazy_errors: Vec<(FuncId, Diagnostic)> = Vec::new();
    for (id, f) in funcs.iter().enumerate() {
        let mut fx = Fx::new(&m, Some(id as FuncId));
        match fx.function(f) {
            Ok(func) => {
                warnings.append(&mut fx.warnings);
                functions.push(func);
            }
            Err(e) if made_from_template(f) => {
                let e = e.note(format!("in `{}`, a member of a struct made from a template", f.name));
                lazy_errors.push((id as FuncId, e));
                let sig = &m.sigs[id];
                functions.push(Function {
                    name: f.name.clone(),
                    kind: sig.kind,
                    ret: sig.ret.clone(),
                    params: sig.params.clone(),
                    locals: Vec::new(),
                    local_arrays: Vec::new(),
                    shared: Vec::new(),
                    body: Vec::new(),
                    span: f.span,
                    name_span: f.name_span,
                    calls: Vec::new(),
                    row_major: Vec::new(),
                });
            }
            Err(e) => errors.push(e),
        }
    }
    // (With other errors, `functions` lacks the functions that failed: those errors are enough.)
    if !lazy_errors.is_empty() && errors.is_empty() {
        // What the code as written calls, through any chain of calls.
        let mut called = vec![false; functions.len()];
        let mut stack: Vec<usize> = (0..funcs.len()).filter(|&i| !made_from_template(funcs[i])).collect();
        while let Some(i) = stack.pop() {
            for &c in functions.get(i).map_or(&[][..], |f| &f.calls[..]) {
                if called.get(c as usize) == Some(&false) {
                    called[c as usize] = true;
                    stack.push(c as usize);
                }
            }
        }
        errors
            .extend(lazy_errors.into_iter().filter(|(id, _)| called.get(*id as usize) == Some(&true)).map(|(_, e)| e));
    }
    if errors.is_empty()
        && let Some(e) = find_recursion(&functions)
    {
        errors.push(e);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Checked { program: Program { functions, globals: m.global_vars, constants: m.constants }, warnings })
}

/// Whether `f` is a member function of a struct made from a struct template
/// (`SharedMemory<float>::operator float *()`).
fn made_from_template(f: &syntax::FuncDef) -> bool {
    f.method.as_ref().is_some_and(|m| m.of.name.contains('<'))
}

/// The first cycle in the call graph, reported at the function where it starts.
fn find_recursion(functions: &[Function]) -> Option<Diagnostic> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    fn visit(f: usize, fs: &[Function], state: &mut [u8], stack: &mut Vec<usize>) -> Option<Vec<usize>> {
        state[f] = 1;
        stack.push(f);
        for &c in &fs[f].calls {
            let c = c as usize;
            if state[c] == 1 {
                let at = stack.iter().position(|&s| s == c).unwrap_or(0);
                return Some(stack[at..].to_vec());
            }
            if state[c] == 0
                && let Some(cycle) = visit(c, fs, state, stack)
            {
                return Some(cycle);
            }
        }
        stack.pop();
        state[f] = 2;
        None
    }
    let mut state = vec![0u8; functions.len()];
    for f in 0..functions.len() {
        if state[f] == 0 {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(f, functions, &mut state, &mut stack) {
                let first = &functions[cycle[0]];
                let path: Vec<&str> = cycle.iter().chain(&cycle[..1]).map(|&i| functions[i].name.as_str()).collect();
                let label = if cycle.len() == 1 {
                    format!("`{}` calls itself", first.name)
                } else {
                    format!("calls go {}", path.join(" -> "))
                };
                return Some(
                    Diagnostic::error("recursive __device__ functions are not supported by the simulator")
                        .at(first.name_span)
                        .label(label)
                        .help("rewrite the recursion as a loop")
                        .outside_subset("recursion"),
                );
            }
        }
    }
    None
}
