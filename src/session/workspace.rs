//! What the learner made in a session: the CUDA module and the sources it was read from, the
//! buffers (host copies, the single source of truth) and scalars, the module's numeric
//! constants, the values statements gave module variables, the Python kernels, and the kernels
//! whose last definition was refused. A backend only ever borrows buffers for one launch; a
//! lesson check sets the buffers aside while it runs and puts them back.

use crate::backend::LaunchBuffers;
use crate::buffer::Buffer;
use crate::cuda::Module;
use crate::cuda::ast::{ExprKind as CExpr, Scalar, Type};
use crate::diag::{SourceMap, Span};
use crate::launch::SymbolWrite;
use crate::script;
use crate::script::ast::StmtKind;
use crate::script::eval::{self, Env};
use crate::value::Value;

use super::python::PythonKernels;

/// The learner's workspace (see the module's documentation).
#[derive(Default)]
pub(crate) struct Workspace {
    sources: SourceMap,
    module: Module,
    buffers: Vec<(String, Buffer)>,
    scalars: Vec<(String, Value)>,
    /// The module's `#define`s that are numbers, usable in statements like scalars (a `let` of
    /// the same name wins).
    constants: Vec<(String, Value)>,
    /// Values statements gave the module's `__constant__`/`__device__` variables (`coef = [...]`),
    /// written before every launch (see `symbols.rs`).
    symbols: Vec<SymbolWrite>,
    /// Kernels and functions whose definition was refused, with where: launching one points
    /// there instead of saying "define it first".
    refused: Vec<(String, Span)>,
    /// `@cuda.jit` kernels and device functions, and the CUDA C each was lowered to.
    python: PythonKernels,
}

/// What [`Workspace::set_aside`] took out: the data a lesson check replaces.
pub(crate) struct Data {
    buffers: Vec<(String, Buffer)>,
    scalars: Vec<(String, Value)>,
    symbols: Vec<SymbolWrite>,
}

impl Workspace {
    /// Every input's text, for error locations.
    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    pub fn sources_mut(&mut self) -> &mut SourceMap {
        &mut self.sources
    }

    /// The CUDA module: everything defined so far.
    pub fn module(&self) -> &Module {
        &self.module
    }

    pub fn module_mut(&mut self) -> &mut Module {
        &mut self.module
    }

    /// Go back to a module kept before a change the GPU's compiler refused.
    pub fn restore_module(&mut self, module: Module) {
        self.module = module;
    }

    /// Read the module's numeric constants again, after it changed.
    pub fn refresh_constants(&mut self) {
        self.constants = constants(&self.module);
    }

    /// The module's numeric constants, in the order they were defined.
    pub fn constants(&self) -> &[(String, Value)] {
        &self.constants
    }

    /// Every buffer, by name, in the order they were made.
    pub fn buffers(&self) -> &[(String, Buffer)] {
        &self.buffers
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    pub fn buffer_mut(&mut self, name: &str) -> Option<&mut Buffer> {
        self.buffers.iter_mut().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// Every buffer, by name, to change in place (a launch writes them; results the GPU left
    /// on the device are read back into them).
    pub fn buffers_mut(&mut self) -> impl Iterator<Item = (&str, &mut Buffer)> {
        self.buffers.iter_mut().map(|(n, b)| (n.as_str(), b))
    }

    /// The module and the buffers `names` (in that order, each named once, all existing), lent
    /// together for one launch.
    pub fn for_launch(&mut self, names: &[String]) -> (&Module, LaunchBuffers<'_>) {
        let mut picked: Vec<Option<&mut Buffer>> = Vec::new();
        picked.resize_with(names.len(), || None);
        for (n, b) in self.buffers.iter_mut() {
            if let Some(i) = names.iter().position(|x| x == n) {
                picked[i] = Some(b);
            }
        }
        let buffers = picked.into_iter().map(|b| b.expect("launch buffers are resolved from session names")).collect();
        (&self.module, LaunchBuffers { names: names.to_vec(), buffers })
    }

    /// Set buffer `name` to `buffer`, where it is in the order when it exists.
    pub fn set_buffer(&mut self, name: &str, buffer: Buffer) {
        match self.buffer_mut(name) {
            Some(b) => *b = buffer,
            None => self.buffers.push((name.to_string(), buffer)),
        }
    }

    /// The bytes every buffer holds, together.
    pub fn total_bytes(&self) -> u64 {
        self.buffers.iter().map(|(_, b)| b.size_bytes() as u64).sum()
    }

    /// Every scalar, by name, in the order they were made.
    pub fn scalars(&self) -> &[(String, Value)] {
        &self.scalars
    }

    /// A scalar by name, or else a module constant of that name (the latest of each wins).
    pub fn scalar(&self, name: &str) -> Option<&Value> {
        fn named<'a>(list: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
            list.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
        }
        named(&self.scalars, name).or_else(|| named(&self.constants, name))
    }

    /// Add a scalar after the others (the fields of a `cost` record, `c.time_us`, ...).
    pub fn push_scalar(&mut self, name: String, value: Value) {
        self.scalars.push((name, value));
    }

    /// Forget the scalars `gone` says so of.
    pub fn remove_scalars(&mut self, gone: impl Fn(&str) -> bool) {
        self.scalars.retain(|(n, _)| !gone(n));
    }

    /// Bind `name` to `value`: an array becomes a buffer (without a copy), anything else a
    /// scalar; whatever the name held before is gone.
    pub fn bind(&mut self, name: String, value: Value) {
        self.buffers.retain(|(n, _)| *n != name);
        self.scalars.retain(|(n, _)| *n != name);
        match value {
            Value::Array(a) => self.buffers.push((name, a.into_buffer())),
            scalar => self.scalars.push((name, scalar)),
        }
    }

    /// Whether `name` is a buffer or a scalar.
    pub fn is_bound(&self, name: &str) -> bool {
        self.buffers.iter().map(|(n, _)| n).chain(self.scalars.iter().map(|(n, _)| n)).any(|n| n == name)
    }

    /// How many buffers and scalars there are.
    pub fn name_count(&self) -> usize {
        self.buffers.len() + self.scalars.len()
    }

    /// Every name a statement can use: buffers, scalars and constants.
    pub fn names(&self) -> Vec<String> {
        let scalars = self.scalars.iter().chain(&self.constants);
        self.buffers.iter().map(|(n, _)| n.clone()).chain(scalars.map(|(n, _)| n.clone())).collect()
    }

    /// The values statements gave module variables, in the order they were first set.
    pub fn symbols(&self) -> &[SymbolWrite] {
        &self.symbols
    }

    /// Give module variable `name` these bytes from the next launch on. Fewer values than
    /// before change the first elements only, as a shorter copy to the symbol leaves the rest of
    /// device memory as it was.
    pub fn set_symbol(&mut self, name: &str, bytes: Vec<u8>) {
        match self.symbols.iter_mut().find(|w| w.name == name) {
            Some(w) if w.bytes.len() > bytes.len() => w.bytes[..bytes.len()].copy_from_slice(&bytes),
            Some(w) => w.bytes = bytes,
            None => self.symbols.push(SymbolWrite { name: name.to_string(), bytes }),
        }
    }

    /// Forget the value a statement gave module variable `name` (it was declared again).
    pub fn forget_symbol(&mut self, name: &str) -> bool {
        let Some(i) = self.symbols.iter().position(|w| w.name == name) else { return false };
        self.symbols.remove(i);
        true
    }

    /// Where the last definition of kernel or function `name` was refused, if it was.
    pub fn refused(&self, name: &str) -> Option<Span> {
        self.refused.iter().find(|(n, _)| n == name).map(|(_, at)| *at)
    }

    /// The definition of `name` at `at` was refused.
    pub fn refuse(&mut self, name: &str, at: Span) {
        self.refused.retain(|(n, _)| n != name);
        self.refused.push((name.to_string(), at));
    }

    /// `name` is defined now.
    pub fn accept(&mut self, name: &str) {
        self.refused.retain(|(n, _)| n != name);
    }

    /// The Python kernels and the CUDA C each was lowered to.
    pub fn python(&self) -> &PythonKernels {
        &self.python
    }

    pub fn python_mut(&mut self) -> &mut PythonKernels {
        &mut self.python
    }

    /// Forget everything made (`:reset`); the sources stay, for what still points at them.
    pub fn reset(&mut self) {
        self.module.clear();
        self.python.clear();
        self.refused.clear();
        self.constants.clear();
        self.clear_data();
    }

    /// Forget buffers, scalars and module variables' values, keeping kernels.
    pub fn clear_data(&mut self) {
        self.symbols.clear();
        self.buffers.clear();
        self.scalars.clear();
    }

    /// Take the buffers and scalars out, and keep a copy of the module variables' values, for
    /// a check to run in a scratch copy; the module stays.
    pub fn set_aside(&mut self) -> Data {
        Data {
            buffers: std::mem::take(&mut self.buffers),
            scalars: std::mem::take(&mut self.scalars),
            symbols: self.symbols.clone(),
        }
    }

    /// Put back what [`Workspace::set_aside`] took, dropping what a check made meanwhile.
    pub fn put_back(&mut self, data: Data) {
        self.buffers = data.buffers;
        self.scalars = data.scalars;
        self.symbols = data.symbols;
    }
}

/// The module's `#define`s whose bodies are numbers (`16`, `1.5f`, `(1 << 10)`), as values, so
/// that a launch can say `<<<n / TILE, TILE>>>` after `#define TILE 16`; then its file-scope
/// `const` numbers (`const int N = 1 << 20;`, CUDA source since it starts with `const`), with
/// the values the checker gave them.
fn constants(module: &Module) -> Vec<(String, Value)> {
    /// The constants so far: a body may use the macros defined before it (`#define N (TILE * 4)`).
    struct Earlier(Vec<(String, Value)>);
    impl Env for Earlier {
        fn buffer(&self, _: &str) -> Option<&Buffer> {
            None
        }
        fn scalar(&self, name: &str) -> Option<&Value> {
            self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
        }
        fn max_alloc_bytes(&self) -> u64 {
            0
        }
    }
    let mut out = Earlier(Vec::new());
    for (name, body) in module.defines() {
        // C's literal suffixes (`16u`, `1.5f`) mean nothing to the session language.
        let body: String = body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_')).fold(
            body.to_string(),
            |text, word| {
                let bare = word.trim_end_matches(['f', 'F', 'u', 'U', 'l', 'L']);
                let numeric = bare.chars().next().is_some_and(|c| c.is_ascii_digit()) && !bare.contains(['x', 'X']);
                if numeric && bare != word { text.replacen(word, bare, 1) } else { text }
            },
        );
        let text = format!("let {name} = {body}");
        let Ok(stmt) = script::parse_statement(0, &text) else { continue };
        if let StmtKind::Let { value, .. } = stmt.kind
            && let Ok(v @ (Value::Int(_) | Value::Float(_))) = eval::eval(&value, &out, &text)
        {
            out.0.push((name.to_string(), v));
        }
    }
    // File-scope constants as the checker folded them (macros expanded, converted to their
    // declared type): `const int blocks = imin(32, (N + 255) / 256);` is a number here too.
    for (name, e) in &module.program().constants {
        let v = match (&e.kind, &e.ty) {
            (CExpr::FloatConst(f), _) => Value::Float(*f),
            (CExpr::IntConst(bits), Type::Scalar(Scalar::Bool)) => Value::Bool(*bits != 0),
            (CExpr::IntConst(bits), Type::Scalar(s)) if s.is_signed() => Value::Int(*bits as i64 as i128),
            (CExpr::IntConst(bits), Type::Scalar(s)) => {
                let width = s.size() * 8;
                let bits = if width >= 64 { *bits } else { *bits & ((1u64 << width) - 1) };
                Value::Int(bits as i128)
            }
            _ => continue,
        };
        out.0.push((name.clone(), v));
    }
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Shape;
    use crate::dtype::DType;
    use crate::value::Array;

    fn array(n: usize) -> Value {
        Value::Array(Array::numbers(Buffer::zeros(DType::F32, Shape::D1(n))))
    }

    #[test]
    fn a_name_holds_one_thing_and_binding_it_again_replaces_it_of_either_kind() {
        let mut w = Workspace::default();
        w.bind("a".into(), Value::Int(1));
        w.bind("b".into(), array(4));
        assert_eq!((w.scalar("a"), w.buffer("b").map(Buffer::len)), (Some(&Value::Int(1)), Some(4)));
        w.bind("a".into(), array(2));
        w.bind("b".into(), Value::Float(0.5));
        assert_eq!(w.scalar("a"), None);
        assert_eq!(w.buffer("a").map(Buffer::len), Some(2));
        assert_eq!(w.buffer("b"), None);
        assert_eq!(w.scalar("b"), Some(&Value::Float(0.5)));
        assert_eq!(w.name_count(), 2);
        assert_eq!(w.names(), ["a", "b"]);
    }

    #[test]
    fn a_shorter_value_for_a_module_variable_changes_its_first_bytes_only() {
        let mut w = Workspace::default();
        w.set_symbol("coef", vec![1, 2, 3, 4]);
        w.set_symbol("coef", vec![9, 9]);
        assert_eq!(w.symbols()[0].bytes, [9, 9, 3, 4]);
        w.set_symbol("coef", vec![5, 5, 5, 5, 5]);
        assert_eq!(w.symbols()[0].bytes, [5, 5, 5, 5, 5]);
        assert!(w.forget_symbol("coef"));
        assert!(!w.forget_symbol("coef"));
    }

    #[test]
    fn a_check_sets_the_data_aside_and_gets_it_back_as_it_was() {
        let mut w = Workspace::default();
        w.bind("a".into(), array(3));
        w.bind("n".into(), Value::Int(3));
        w.set_symbol("coef", vec![1]);
        let data = w.set_aside();
        assert_eq!((w.buffers().len(), w.scalars().len()), (0, 0));
        w.bind("scratch".into(), Value::Int(0));
        w.set_symbol("coef", vec![2]);
        w.put_back(data);
        assert_eq!(w.names(), ["a", "n"]);
        assert_eq!(w.symbols()[0].bytes, [1]);
    }
}
