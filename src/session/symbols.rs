//! `coef = [0.25, 0.5, 0.5, 0.25]`: a `__constant__` or `__device__` variable of the module gets
//! its values from a statement, as host code's `cudaMemcpyToSymbol` gives them.
//!
//! The session keeps the values (the module's compiled form may be rebuilt at any time: the GPU
//! recompiles the whole module when a snippet changes it) and every launch, on either backend,
//! writes them over the variable's initial values before it starts (`LaunchSpec::symbols`). So
//! the values stay through later snippets, until the variable itself is declared again: a new
//! declaration is new memory, with its own initialiser, as a recompiled CUDA program's is; the
//! session says so when it forgets them. `:reset` and a lesson's fresh start forget them too.

use std::io::{self, Write};

use crate::buffer::{Buffer, Shape};
use crate::cuda::ast::{Global, Type};
use crate::cuda::{Defined, ItemKind};
use crate::diag::{Diagnostic, Span};
use crate::launch::SymbolWrite;
use crate::script::ast::Expr;
use crate::script::eval::{self, SymbolTarget};
use crate::script::parser::needs_let;

use super::{Session, Status};

/// The element type and element count of a module variable, or why it holds no numbers.
fn layout(g: &Global) -> Result<(crate::cuda::ast::Scalar, usize), String> {
    let mut ty = &g.var.ty;
    let mut len = 1usize;
    while let Type::Array { elem, len: n } = ty {
        len = len.saturating_mul(*n as usize);
        ty = elem;
    }
    match ty {
        Type::Scalar(s) => Ok((*s, len)),
        // `__constant__ float4 c[8]`: set as its members' one type, members in order.
        Type::Struct(def) => match def.uniform() {
            Some((s, per)) => Ok((s, len.saturating_mul(per as usize))),
            None => Err(def.name.clone()),
        },
        other => Err(other.c_name()),
    }
}

impl Session {
    /// `NAME = VALUE`: set the module variable `NAME`; for any other name, say that `let` gives a
    /// name its value (the parser cannot tell the two apart).
    pub(super) fn set_symbol(
        &mut self,
        name: &str,
        name_span: Span,
        eq_span: Span,
        value: &Expr,
        text: &str,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let globals = &self.work.module().program().globals;
        let Some(global) = globals.iter().find(|g| g.var.name == name && !g.is_shared) else {
            let d = self.not_a_symbol(name, name_span, eq_span, text);
            return self.report(&d, out);
        };
        let kind = if global.is_constant { "__constant__" } else { "__device__" };
        let (scalar, len) = match layout(global) {
            Ok(l) => l,
            Err(ty) => {
                let d = Diagnostic::error(format!("`{name}` is a {kind} `{ty}`: only numbers can be set from here"))
                    .at(name_span)
                    .help("a statement sets variables of numbers, arrays of numbers, or of structs whose members are all one type (`float4`), e.g. `__constant__ float coef[4];`");
                return self.report(&d, out);
            }
        };
        let Some(dtype) = super::launch::dtype_of(scalar) else {
            let d = Diagnostic::error(format!("`{name}` holds `{}`, which a statement cannot set", scalar.c_name()))
                .at(name_span);
            return self.report(&d, out);
        };
        let target = SymbolTarget { name, c_type: scalar.c_name(), dtype, len };
        let values = match eval::eval_symbol(value, self, text, target) {
            Ok(v) => v,
            Err(d) => return self.report(&d, out),
        };
        let bytes = Buffer::from_nums(dtype, Shape::D1(values.len()), values).bytes().to_vec();
        // Fewer values than before change the first elements only, as a shorter copy to the
        // symbol leaves the rest of device memory as it was.
        self.work.set_symbol(name, bytes);
        Ok(Status::Ok)
    }

    /// Why `name = ...` sets nothing: a kernel or function is no variable; a near miss of a
    /// variable's name is probably one; anything else is a name that wants `let`.
    fn not_a_symbol(&self, name: &str, name_span: Span, eq_span: Span, text: &str) -> Diagnostic {
        if self.work.module().program().function(name).is_some() || self.work.module().kernel_names().contains(&name) {
            return Diagnostic::error(format!("`{name}` is a function, not a `__constant__` or `__device__` variable"))
                .at(name_span)
                .help(
                    "a statement sets module variables such as `__constant__ float coef[4];`, and `let` names values",
                );
        }
        let is_session_name = self.work.is_bound(name);
        let variables =
            self.work.module().program().globals.iter().filter(|g| !g.is_shared).map(|g| g.var.name.as_str());
        if !is_session_name && let Some(near) = crate::diag::suggest::closest(name, variables) {
            return Diagnostic::error(format!("`{name}` is not a variable of the module"))
                .at(name_span)
                .label("unknown name")
                .help(format!("did you mean `{near}`? (or `let {name} = ...` for a new name)"));
        }
        needs_let(text, name, eq_span)
    }

    /// The values set from statements, for a launch: those whose variable the module still has.
    pub(super) fn symbol_writes(&self) -> Vec<SymbolWrite> {
        let globals = &self.work.module().program().globals;
        self.work
            .symbols()
            .iter()
            .filter(|w| globals.iter().any(|g| g.var.name == w.name && !g.is_shared))
            .cloned()
            .collect()
    }

    /// A snippet declared variables anew: their set values are gone, as a recompiled program's
    /// constant memory is. Says so, naming how to set them again.
    pub(super) fn forget_redeclared(&mut self, defined: &[Defined], out: &mut dyn Write) -> io::Result<()> {
        for d in defined.iter().filter(|d| d.kind == ItemKind::Global) {
            if self.work.forget_symbol(&d.name) {
                let note = format!(
                    "note: `{}` is declared anew and starts from its initialiser; set it again with `{} = ...`",
                    d.name, d.name
                );
                writeln!(out, "{}", self.options.style.dim(&note))?;
            }
        }
        Ok(())
    }
}
