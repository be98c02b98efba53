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

pub mod ast;
pub mod check;
pub mod lexer;
pub mod parser;
pub mod suggest;
pub mod syntax;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::diag::{Diagnostic, SourceId, Span};
use ast::{Function, Program};
use lexer::Token;

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
    /// For `#define`: the body's tokens, expanded again in every later snippet.
    define_body: Vec<Token>,
}

impl ModuleItem {
    /// The untyped parse tree (`None` for `#define`s, which live on as tokens).
    pub fn syntax(&self) -> Option<&syntax::Item> {
        self.syntax.as_ref()
    }

    fn same_slot(&self, other: &ModuleItem) -> bool {
        let group = |k: &ItemKind| match k {
            ItemKind::Kernel | ItemKind::DeviceFunction => 0,
            ItemKind::Global => 1,
            ItemKind::Define => 2,
            ItemKind::Typedef => 3,
        };
        self.name == other.name && group(&self.kind) == group(&other.kind)
    }
}

/// The session's CUDA code: parsed items in definition order plus the checked [`Program`].
#[derive(Clone, Debug, Default)]
pub struct Module {
    items: Vec<ModuleItem>,
    program: Program,
    generation: u64,
}

impl Module {
    pub fn new() -> Module {
        Module::default()
    }

    /// Parse `text` (registered in the session's source map as `source`) and add its items,
    /// replacing same-named ones; then check the whole module. On any error the module is left
    /// unchanged and every error found is returned.
    pub fn add(&mut self, source: SourceId, text: &str) -> Result<AddOutcome, Vec<Diagnostic>> {
        let new_items = self.parse(source, text).map_err(|d| vec![d])?;
        if new_items.is_empty() {
            return Ok(AddOutcome::default());
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
            items.retain(|o| !o.same_slot(item));
            let replaced = items.len() < before && !twice;
            if let Some(d) = defined.iter_mut().find(|d: &&mut Defined| d.name == item.name && d.kind == item.kind) {
                d.replaced |= replaced;
            } else {
                defined.push(Defined { name: item.name.clone(), kind: item.kind.clone(), replaced });
            }
            items.push(item.clone());
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let syntax: Vec<&syntax::Item> = items.iter().filter_map(|i| i.syntax.as_ref()).collect();
        let checked = check::check(&syntax)?;
        let warnings = checked.warnings.into_iter().filter(|w| w.span.is_none_or(|s| s.source == source)).collect();
        self.items = items;
        self.program = checked.program;
        self.generation += 1;
        Ok(AddOutcome { defined, warnings })
    }

    /// Lex, expand macros and parse one snippet into module items, in the order written.
    fn parse(&self, source: SourceId, text: &str) -> Result<Vec<ModuleItem>, Diagnostic> {
        let tokens = lexer::lex(source, text)?;
        let mut defines: HashMap<String, Vec<Token>> = lexer::predefined(source).into_iter().collect();
        let mut typedefs = HashMap::new();
        for item in &self.items {
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
        let (tokens, new_defines) = lexer::expand(tokens, &mut defines)?;
        let end = Span::new(source, text.len(), text.len());
        let parsed = parser::parse(&tokens, &mut typedefs, end)?;
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
            })
            .collect();
        for item in parsed {
            let kind = match &item.kind {
                syntax::ItemKind::Function(f) if f.qual == syntax::FuncQual::Global => ItemKind::Kernel,
                syntax::ItemKind::Function(_) => ItemKind::DeviceFunction,
                syntax::ItemKind::Global(_) => ItemKind::Global,
                syntax::ItemKind::Typedef(_) => ItemKind::Typedef,
            };
            items.push(ModuleItem {
                name: item.name.clone(),
                kind,
                source,
                text: slice(item.span),
                span: item.span,
                syntax: Some(item),
                define_body: Vec::new(),
            });
        }
        items.sort_by_key(|i| i.span.lo);
        Ok(items)
    }

    /// Every item in definition order (a replaced item moves to the end).
    pub fn items(&self) -> &[ModuleItem] {
        &self.items
    }

    /// The checked program: every function and global, typed.
    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.program.kernels().find(|f| f.name == name)
    }

    /// Changes whenever the module does, so backends can cache compiled kernels.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_empty(&self) -> bool {
        self.program.functions.is_empty() && self.program.globals.is_empty()
    }

    /// Forget everything (`:reset`).
    pub fn clear(&mut self) {
        let generation = self.generation + 1;
        *self = Module::default();
        self.generation = generation;
    }
}
