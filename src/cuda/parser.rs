//! Recursive-descent parser from (macro-expanded) tokens to the untyped [`syntax`] tree.
//!
//! The parser knows which names are types (keywords and the session's typedefs) because C
//! needs that to tell `real x;` from `a * b;`. Constructs outside the subset are recognised
//! and rejected with a message that names them, so a learner never sees "expected `;`" for a
//! template. Nesting is capped so hostile input cannot overflow the stack.

use std::collections::HashMap;

use std::sync::Arc;

use super::ast::{self, BinaryOp, Scalar, StructDef, Type};
use super::cursor::Cursor;
use super::lexer::{Tok, Token, describe};
use super::syntax::*;
use crate::diag::suggest;
use crate::diag::{Diagnostic, Span};

/// Deeper nesting than this (parentheses, blocks, nested calls) is an error, not a crash.
pub const MAX_DEPTH: usize = 128;
/// A flat chain like `a + b + c + ...` nests only one level for a reader, but the tree it makes
/// is as deep as it is long, and the checker and compiler walk it recursively: so chains count
/// towards this larger limit on the tree's depth instead of towards [`MAX_DEPTH`].
pub const MAX_TREE_DEPTH: usize = 1024;
/// A struct larger than this is surely a mistake (each thread would hold a copy of it).
const MAX_STRUCT_BYTES: u64 = 1 << 20;

type PResult<T> = Result<T, Diagnostic>;

/// Words that start a type.
const TYPE_WORDS: &[&str] = &[
    "void",
    "bool",
    "char",
    "int",
    "unsigned",
    "signed",
    "long",
    "float",
    "double",
    "size_t",
    "const",
    "constexpr",
    "volatile",
    "__restrict__",
    "short",
    "auto",
    "uint32_t",
    "int32_t",
    "uint64_t",
    "int64_t",
    "uint8_t",
    "int8_t",
    "uint16_t",
    "int16_t",
    "clock_t",
];

/// The fixed-width integer names of `<stdint.h>`, which CUDA code uses without a typedef of its
/// own (NVRTC gets them from gridlab's prelude), and the type each is.
fn fixed_width(name: &str) -> Option<Scalar> {
    Some(match name {
        "int8_t" => Scalar::I8,
        "uint8_t" => Scalar::U8,
        "int16_t" => Scalar::I16,
        "uint16_t" => Scalar::U16,
        "int32_t" => Scalar::I32,
        "uint32_t" => Scalar::U32,
        "int64_t" => Scalar::I64,
        "uint64_t" => Scalar::U64,
        // `clock()` returns a `clock_t`, a `long` on the 64-bit platforms CUDA runs on (NVRTC
        // knows it without a header, as it knows `clock`).
        "clock_t" => Scalar::I64,
        _ => return None,
    })
}

/// Spellings offered as suggestions for a misspelt type.
pub const TYPE_NAMES: &[&str] =
    &["void", "bool", "char", "int", "unsigned", "long", "float", "double", "size_t", "const"];

pub struct Parser<'a> {
    /// Where the parser is in the snippet's tokens.
    cur: Cursor<'a>,
    typedefs: &'a mut HashMap<String, TypeName>,
    /// Member functions of the structs read so far, emitted after their struct's item.
    methods: Vec<Item>,
    depth: usize,
    /// The depth of the tree being built: nesting plus the links of operator chains.
    tree: usize,
    /// Names taken the address of (`&x`) in the function being read.
    addressed: Vec<String>,
    /// How many `*` the last `type_name` read after the type's words: in `float *a, *b;` they
    /// belong to the first declarator, not to the type every declarator shares.
    written_ptrs: usize,
}

/// An overloadable function's name with its parameters' types, `operator+(float2, float2)`:
/// overloads are told apart by it (the simulator's other functions are not overloaded).
/// References count as their type.
fn overload_name(name: &str, params: &[ParamDecl]) -> String {
    let types: Vec<String> = params.iter().map(|p| p.ty.resolve(&[]).c_name()).collect();
    format!("{name}({})", types.join(", "))
}

/// The type name of a struct defined at `span`.
fn struct_type(def: Arc<StructDef>, span: Span) -> TypeName {
    TypeName { base: None, strukt: Some(def), is_const: false, ptrs: Vec::new(), restrict: false, auto: false, span }
}

/// Parse a whole snippet. `typedefs` holds the session's typedefs and receives the snippet's.
pub fn parse(toks: &[Token], typedefs: &mut HashMap<String, TypeName>, end: Span) -> PResult<Vec<Item>> {
    let cur = Cursor::new(toks, end);
    let mut p =
        Parser { cur, typedefs, methods: Vec::new(), depth: 0, tree: 0, addressed: Vec::new(), written_ptrs: 0 };
    let mut items = Vec::new();
    while !p.cur.done() {
        if p.cur.eat(";") {
            continue;
        }
        items.extend(p.item()?);
        items.append(&mut p.methods);
    }
    Ok(items)
}

/// A message and hint for a type name the simulator does not support, if `name` is one.
/// (The construct the error is marked with is the name itself.)
fn unsupported_type(name: &str) -> Option<(String, &'static str)> {
    let (msg, help) = match name {
        "half" | "__half" | "half2" | "__half2" | "__nv_bfloat16" | "__nv_bfloat162" => (
            format!("`{name}` runs on the GPU backend only"),
            "use `float` in the simulator; the GPU backend runs half precision (`:backend gpu`, or `--backend gpu` for a script)",
        ),
        _ => return None,
    };
    Some((msg, help))
}

impl Parser<'_> {
    // ----- messages about the token here (`cur` walks the tokens) -----

    fn found(&self) -> String {
        match self.cur.peek() {
            Some(t) => describe(t),
            None => "the end of the input".into(),
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        let help = match self.cur.peek() {
            None => "the code ends too early: is a `}` or `)` missing?",
            Some(Tok::Punct(_)) => "check for a missing or extra symbol just before this point",
            Some(_) => "check the code just before this point for a typo or a missing operator",
        };
        Diagnostic::error(format!("expected {what}, found {}", self.found())).at(self.cur.span()).help(help)
    }

    fn expect(&mut self, p: &str) -> PResult<Span> {
        if self.cur.is(p) {
            self.cur.advance(1);
            return Ok(self.cur.prev_span());
        }
        if p == ";" {
            // Point just after the previous token: that is where the `;` is missing.
            let prev = self.cur.prev_span();
            let at = Span { lo: prev.hi, hi: prev.hi, ..prev };
            return Err(Diagnostic::error(format!("expected `;`, found {}", self.found()))
                .at(at)
                .label("add `;` here")
                .help("every statement and declaration ends with `;`"));
        }
        Err(self.expected(&format!("`{p}`")))
    }

    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.cur.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.cur.advance(1);
                Ok((s, self.cur.prev_span()))
            }
            _ => Err(self.expected(what)),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        self.tree += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::error("the code is nested too deeply")
                .at(self.cur.span())
                .label(format!("more than {MAX_DEPTH} levels of nesting"))
                .help("split the expression or block into smaller pieces"));
        }
        self.tree_limit()
    }

    fn leave(&mut self) {
        self.depth -= 1;
        self.tree -= 1;
    }

    /// One more link in a chain of operators (`+ x`, `[i]`, `, y`): it deepens the tree only.
    fn enter_chain(&mut self) -> PResult<()> {
        self.tree += 1;
        self.tree_limit()
    }

    fn tree_limit(&self) -> PResult<()> {
        if self.tree > MAX_TREE_DEPTH {
            return Err(Diagnostic::error("this expression is too long")
                .at(self.cur.span())
                .label(format!("more than {MAX_TREE_DEPTH} operators in one chain"))
                .help("add it up in several statements, e.g. `s += ...;` a part at a time"));
        }
        Ok(())
    }

    // ----- constructs outside the subset -----

    /// Reject a word that starts something the subset does not have; unsupported type names
    /// only when `types` (elsewhere they may be ordinary names, like a function `half`).
    fn reject_unsupported_word(&self, types: bool) -> PResult<()> {
        let Some(Tok::Ident(w)) = self.cur.peek() else { return Ok(()) };
        let code = format!("`{w}`");
        let (msg, help, construct): (String, &str, String) = match w.as_str() {
            // File-scope function and struct templates were taken out before parsing
            // (`template::extract`): what is left is some other kind.
            "template" | "typename" => (
                "this kind of template runs on the GPU backend only".into(),
                "the simulator takes function and struct templates at file scope (`template <typename T> struct Box { T v; };`, `template <> struct Box<int> { ... };`); member templates, union templates and `typename` inside code run on the GPU (`:backend gpu`)",
                "templates".into(),
            ),
            "union" => {
                ("unions run on the GPU backend only".into(), "use a struct, or separate variables", "unions".into())
            }
            // `enum Dir d;`: the elaborated name of an enum defined before.
            "enum" if matches!(self.cur.peek_at(1), Some(Tok::Ident(n)) if self.typedefs.contains_key(n)) => {
                return Ok(());
            }
            "enum" => (
                "enums are not supported by the simulator here".into(),
                "define it at file scope, `enum { A, B };` (plain, not `enum class`), or use `#define NAME value` constants",
                "enums".into(),
            ),
            "case" => (
                "`case` belongs inside a `switch`".into(),
                "write `switch (x) { case 1: ... break; }`",
                "`case`".into(),
            ),
            // Inline PTX: `asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));`. The simulator
            // runs CUDA C, not PTX; the usual uses have a CUDA C spelling.
            "asm" | "__asm__" | "__asm"
                if matches!(self.cur.peek_at(1), Some(Tok::Punct("(")))
                    || matches!(self.cur.peek_at(1), Some(Tok::Ident(v)) if matches!(v.as_str(), "volatile" | "__volatile__" | "goto")) =>
            {
                (
                    "inline PTX (`asm`) is not supported by the simulator".into(),
                    "write it in CUDA C: the lane is `threadIdx.x % 32` (or `& 31`), `%%lanemask_lt` is `(1u << lane) - 1`, `%%clock64` is `clock64()`, `%%smid`/`%%warpid` have no simulator meaning",
                    "inline PTX (`asm`)".into(),
                )
            }
            // Namespaces were taken apart before parsing (`namespace::flatten`); what is left is
            // some other use (`using T = float;`, a namespace alias).
            "namespace" | "using" => (
                format!("this `{w}` is not supported by the simulator"),
                "write `namespace name { ... }` around functions, `name::f(...)` or `using namespace name;`; for a type, `typedef float T;`",
                code,
            ),
            "new" | "delete" | "malloc" | "free" | "throw" | "try" => {
                (format!("`{w}` is not supported in kernels"), "allocate buffers in the gridlab session", code)
            }
            "long" if matches!(self.cur.peek_at(1), Some(Tok::Ident(n)) if n == "double") => {
                // NVRTC has no `long double` in device code either: a plain error.
                return Err(Diagnostic::error("`long double` is not supported")
                    .at(self.cur.span())
                    .label("not supported")
                    .help("use `double`"));
            }
            _ if !types => return Ok(()),
            w => match unsupported_type(w) {
                Some((msg, help)) => (msg, help, code),
                None => return Ok(()),
            },
        };
        Err(Diagnostic::error(msg).at(self.cur.span()).label("not supported").help(help).outside_subset(construct))
    }

    // ----- types -----

    fn at_type(&self) -> bool {
        match self.cur.peek() {
            Some(Tok::Ident(w)) => self.names_type(w, 0),
            _ => false,
        }
    }

    /// Whether the word `ahead` tokens on (`w`) starts a type: a type word, a typedef, a struct
    /// or vector type, or `struct P` for a struct `P`.
    fn names_type(&self, w: &str, ahead: usize) -> bool {
        TYPE_WORDS.contains(&w)
            || self.typedefs.contains_key(w)
            || ast::is_vector_type(w)
            || (matches!(w, "struct" | "class" | "enum")
                && matches!(self.cur.peek_at(ahead + 1), Some(Tok::Ident(n)) if self.typedefs.contains_key(n)))
    }

    fn at_type_at(&self, ahead: usize) -> bool {
        match self.cur.peek_at(ahead) {
            Some(Tok::Ident(w)) => self.names_type(w, ahead) || unsupported_type(w).is_some(),
            _ => false,
        }
    }

    /// An identifier where a type belongs but that names no type: report it with a suggestion.
    fn unknown_type(&self) -> Diagnostic {
        let (name, span) = match (self.cur.peek(), self.cur.span()) {
            (Some(Tok::Ident(n)), s) => (n.clone(), s),
            _ => return self.expected("a type"),
        };
        let names: Vec<&str> = TYPE_NAMES.iter().copied().chain(self.typedefs.keys().map(String::as_str)).collect();
        let d =
            Diagnostic::error(format!("unknown type name `{name}`")).at(span).label("not a type").unknown_name(&name);
        match suggest::did_you_mean(&name, names) {
            Some(h) => d.help(h),
            None => d.help("use a type such as `float`, `int` or `unsigned`, or declare it with `typedef`"),
        }
    }

    /// Type specifiers and qualifiers, then `*`s: `const unsigned long long *__restrict__`.
    fn type_name(&mut self) -> PResult<TypeName> {
        let start = self.cur.span();
        self.reject_unsupported_word(true)?;
        let mut is_const = false;
        let mut restrict = false;
        let (mut unsigned, mut signed, mut longs) = (false, false, 0);
        let mut base: Option<&'static str> = None;
        let mut from_typedef: Option<TypeName> = None;
        loop {
            let nothing_yet = base.is_none() && from_typedef.is_none() && !unsigned && !signed && longs == 0;
            self.reject_unsupported_word(nothing_yet)?;
            let Some(Tok::Ident(w)) = self.cur.peek() else { break };
            let w = w.clone();
            match w.as_str() {
                // A `constexpr` local is a `const` one whose value is known, which the checker
                // folds anyway.
                "const" | "constexpr" => is_const = true,
                "volatile" => {}
                "__restrict__" => restrict = true,
                "unsigned" => unsigned = true,
                "signed" => signed = true,
                "long" => longs += 1,
                "auto" if base.is_none() && from_typedef.is_none() && !unsigned && !signed && longs == 0 => {
                    // A placeholder: the checker takes the type from the initialiser.
                    from_typedef = Some(TypeName { auto: true, ..TypeName::scalar(Scalar::I32, self.cur.span()) });
                }
                // `short int` is `short`.
                "int" if base == Some("short") => {}
                "void" | "bool" | "char" | "short" | "int" | "float" | "double" | "size_t" if base.is_none() => {
                    base = Some(match w.as_str() {
                        "void" => "void",
                        "bool" => "bool",
                        "char" => "char",
                        "short" => "short",
                        "int" => "int",
                        "float" => "float",
                        "double" => "double",
                        _ => "size_t",
                    })
                }
                w if fixed_width(w).is_some()
                    && base.is_none()
                    && from_typedef.is_none()
                    && !unsigned
                    && !signed
                    && longs == 0 =>
                {
                    let s = fixed_width(w).expect("checked");
                    from_typedef = Some(TypeName {
                        base: Some(s),
                        strukt: None,
                        is_const: false,
                        ptrs: Vec::new(),
                        restrict: false,
                        auto: false,
                        span: self.cur.span(),
                    });
                }
                "void" | "bool" | "char" | "short" | "int" | "float" | "double" | "size_t" => {
                    return Err(Diagnostic::error("two types in one declaration")
                        .at(self.cur.span())
                        .label("a second type")
                        .help("write one type, e.g. `float x;`"));
                }
                _ if base.is_none()
                    && from_typedef.is_none()
                    && !unsigned
                    && !signed
                    && longs == 0
                    && self.typedefs.contains_key(&w) =>
                {
                    from_typedef = self.typedefs.get(&w).cloned();
                }
                w if nothing_yet && StructDef::vector(w).is_some() => {
                    from_typedef = Some(TypeName {
                        base: None,
                        strukt: StructDef::vector(w),
                        is_const: false,
                        ptrs: Vec::new(),
                        restrict: false,
                        auto: false,
                        span: self.cur.span(),
                    });
                }
                // `enum Dir d;`: an enum defined before is `int`.
                "enum"
                    if nothing_yet
                        && matches!(self.cur.peek_at(1), Some(Tok::Ident(n)) if self.typedefs.contains_key(n)) => {}
                // `struct P p;`: C's elaborated name for a struct defined before.
                "struct" | "class"
                    if nothing_yet
                        && matches!(self.cur.peek_at(1), Some(Tok::Ident(n)) if self.typedefs.get(n).is_some_and(|t| t.strukt.is_some())) =>
                    {}
                _ => break,
            }
            self.cur.advance(1);
        }
        let bad = |msg: &str| Diagnostic::error(msg.to_string()).at(start).help("write a supported type such as `int`");
        let base = if let Some(t) = from_typedef {
            is_const |= t.is_const;
            let mut t = TypeName { is_const, restrict, span: start.to(self.cur.prev_span()), ..t };
            let before = t.ptrs.len();
            self.pointers(&mut t.ptrs, &mut t.restrict);
            self.written_ptrs = t.ptrs.len() - before;
            t.span = start.to(self.cur.prev_span());
            return Ok(t);
        } else {
            if base.is_none() && !unsigned && !signed && longs == 0 {
                return Err(if matches!(self.cur.peek(), Some(Tok::Ident(_))) {
                    self.unknown_type()
                } else {
                    self.expected("a type")
                });
            }
            Scalar::from_words(base, signed, unsigned, longs)
                .ok_or_else(|| bad("this combination of type words is not a supported type"))?
        };
        if unsigned && signed {
            return Err(bad("a type cannot be both `signed` and `unsigned`"));
        }
        let mut ptrs = Vec::new();
        self.pointers(&mut ptrs, &mut restrict);
        self.written_ptrs = ptrs.len();
        Ok(TypeName { base, strukt: None, is_const, ptrs, restrict, auto: false, span: start.to(self.cur.prev_span()) })
    }

    /// `*`, `* const`, `* __restrict__` ...
    fn pointers(&mut self, ptrs: &mut Vec<bool>, restrict: &mut bool) {
        while self.cur.eat("*") {
            let mut c = false;
            loop {
                if self.cur.eat_word("const") {
                    c = true;
                } else if self.cur.eat_word("__restrict__") {
                    *restrict = true;
                } else if !self.cur.eat_word("volatile") {
                    break;
                }
            }
            ptrs.push(c);
        }
    }

    // ----- items -----

    fn item(&mut self) -> PResult<Vec<Item>> {
        let start = self.cur.span();
        if self.cur.is_word("typedef") && self.cur.peek_at(1).is_some_and(|t| matches!(t, Tok::Ident(w) if w == "enum"))
        {
            // `typedef enum { A, B } Mode;`
            self.cur.advance(1);
            return self.enumeration(start, true);
        }
        if self.cur.is_word("typedef") {
            return self.typedef().map(|i| vec![i]);
        }
        if self.cur.is_word("enum") && !self.cur.is_at(2, ";") {
            return self.enumeration(start, false);
        }
        if (self.cur.is_word("struct") || self.cur.is_word("class")) && self.struct_body_ahead() {
            self.cur.advance(1);
            let (tag, def) = self.struct_def()?;
            let Some(name) = tag else {
                return Err(Diagnostic::error("this struct has no name")
                    .at(start)
                    .help("name it, `struct Point { ... };`, or write `typedef struct { ... } Point;`"));
            };
            // `struct P { ... } p;` declares a variable too: not in the subset's file scope.
            if !self.cur.is(";") {
                return Err(self.expected("`;` after the struct's closing brace"));
            }
            self.cur.advance(1);
            let tn = struct_type(def, start.to(self.cur.prev_span()));
            return Ok(vec![Item { name, kind: ItemKind::Typedef(tn), span: start.to(self.cur.prev_span()) }]);
        }
        let mut storage = Storage::Auto;
        let (mut global, mut device, mut host) = (false, false, false);
        let mut constexpr = false;
        let mut extern_ = false;
        loop {
            self.reject_unsupported_word(true)?;
            let Some(Tok::Ident(w)) = self.cur.peek() else { break };
            match w.as_str() {
                "__global__" => global = true,
                "__device__" => device = true,
                "__host__" => host = true,
                "__forceinline__" | "__noinline__" | "inline" | "static" | "__inline__" => {}
                // On a variable, `constexpr` is a `const` whose value is known (the checker
                // requires that of a file-scope constant anyway); on a function it adds nothing.
                "constexpr" => constexpr = true,
                // (`extern "C"` was taken out with the other decorations: `preprocess::strip_decorations`.)
                "extern" => extern_ = true,
                "__constant__" => storage = Storage::Constant,
                // File-scope shared memory: one copy per block, seen by every function.
                "__shared__" => storage = Storage::Shared,
                "__launch_bounds__" => {
                    self.cur.advance(1);
                    self.skip_parens()?;
                    continue;
                }
                _ => break,
            }
            self.cur.advance(1);
        }
        let mut ty = self.type_name()?;
        if self.cur.is("&")
            && (matches!(self.cur.peek_at(1), Some(Tok::Ident(w)) if w == "operator") || self.cur.is_at(2, "("))
        {
            // A function returning a reference: gridlab returns the value.
            self.cur.advance(1);
        }
        if self.cur.eat_word("__launch_bounds__") {
            self.skip_parens()?;
        }
        let (name, name_span) =
            if self.cur.is_word("operator") { self.operator_name()? } else { self.ident("a name")? };
        if self.cur.is("(") {
            let qual = match (global, device, host) {
                (true, _, _) => FuncQual::Global,
                (false, true, _) => FuncQual::Device,
                _ => FuncQual::Host,
            };
            return Ok(self.function(start, qual, ty, name, name_span)?.into_iter().collect());
        }
        if global {
            return Err(Diagnostic::error("`__global__` applies to functions only")
                .at(start)
                .help("remove `__global__`, or write `__device__` or `__constant__` for a variable"));
        }
        ty.is_const |= constexpr;
        let storage = match storage {
            Storage::Shared if extern_ => Storage::ExternShared,
            Storage::Shared => Storage::Shared,
            _ if extern_ => {
                return Err(Diagnostic::error("`extern` variables are not supported at file scope")
                    .at(start)
                    .help("define the variable here with `__device__` or `__constant__`"));
            }
            Storage::Constant => Storage::Constant,
            _ if device => Storage::Device,
            _ => Storage::Auto,
        };
        let decl = self.declarators(start, storage, ty, Some((name, name_span)))?;
        Ok(decl_items(decl))
    }

    /// At `struct`/`class`: whether a definition follows (`struct [__align__(n)] [Name] {`), not
    /// a use of a struct defined before (`struct P *p`).
    fn struct_body_ahead(&self) -> bool {
        let mut i = 1;
        if matches!(self.cur.peek_at(i), Some(Tok::Ident(w)) if w == "__align__" || w == "__builtin_align__") {
            let mut open = self.cur;
            open.advance(2);
            let Some(past) = open.closing("(", ")") else { return false };
            i = past - self.cur.pos();
        }
        if matches!(self.cur.peek_at(i), Some(Tok::Ident(_))) {
            i += 1;
        }
        self.cur.is_at(i, "{")
    }

    /// After `struct`: `[__align__(n)] [Name] { members }`. Registers a named struct as a type
    /// at once, so its members may point to it (`struct Node { Node *next; }`) and later code
    /// can use it. Member functions, constructors and operators are outside the simulator's
    /// subset and make the struct GPU-only.
    fn struct_def(&mut self) -> PResult<(Option<String>, Arc<StructDef>)> {
        let start = self.cur.span();
        let mut min_align = 1u64;
        if self.cur.eat_word("__align__") || self.cur.eat_word("__builtin_align__") {
            self.expect("(")?;
            match self.cur.peek().cloned() {
                Some(Tok::Int(n, _)) if n.is_power_of_two() && n <= 4096 => {
                    min_align = n;
                    self.cur.advance(1);
                }
                _ => {
                    return Err(Diagnostic::error("`__align__` takes a power of two")
                        .at(self.cur.span())
                        .help("write e.g. `struct __align__(16) Particle { ... };`"));
                }
            }
            self.expect(")")?;
        }
        let tag = match self.cur.peek() {
            Some(Tok::Ident(_)) => Some(self.ident("the struct's name")?),
            _ => None,
        };
        self.expect("{")?;
        // A struct may hold pointers to itself: known by name (empty) while its members are read.
        if let Some((name, span)) = &tag {
            let placeholder = StructDef::new(name, Vec::new(), 1);
            self.typedefs.insert(name.clone(), struct_type(Arc::new(placeholder), *span));
        }
        let mut fields: Vec<(String, Type, Span)> = Vec::new();
        let mut methods: Vec<usize> = Vec::new();
        while !self.cur.eat("}") {
            if self.cur.peek().is_none() {
                return Err(self.expected("`}` to close the struct"));
            }
            if self.cur.eat(";") {
                continue;
            }
            // `public:`, `private:`: access makes no difference to the layout.
            if (self.cur.is_word("public") || self.cur.is_word("private") || self.cur.is_word("protected"))
                && self.cur.is_at(1, ":")
            {
                self.cur.advance(2);
                continue;
            }
            let member_start = self.cur.span();
            let looks_like_function = (0..64)
                .map_while(|i| self.cur.peek_at(i))
                .take_while(|t| !matches!(t, Tok::Punct(";" | "{" | "}" | "=")))
                .any(|t| matches!(t, Tok::Punct("(")));
            if looks_like_function
                || self.cur.is_word("__device__")
                || self.cur.is_word("__host__")
                || self.cur.is_word("operator")
            {
                // Read once the layout is known: a member function may use the struct itself.
                methods.push(self.cur.pos());
                self.skip_member_function(member_start)?;
                continue;
            }
            let mut tn = self.type_name()?;
            // `float *x, *y;`: the first `*` is the first member's, as for variables.
            let own = self.written_ptrs.min(tn.ptrs.len());
            let mut first_ptrs = Some(tn.ptrs.split_off(tn.ptrs.len() - own));
            loop {
                let mut ptrs = first_ptrs.take().unwrap_or_default();
                let mut restrict = false;
                self.pointers(&mut ptrs, &mut restrict);
                let (name, span) = self.ident("a member name")?;
                let mut ty = tn.resolve(&ptrs);
                let mut dims = Vec::new();
                while self.cur.eat("[") {
                    match self.cur.peek().cloned() {
                        Some(Tok::Int(n, _)) if n > 0 && n <= 1 << 20 => {
                            self.cur.advance(1);
                            dims.push(n as u32);
                        }
                        _ => {
                            return Err(Diagnostic::error("a member array's size must be a number")
                                .at(self.cur.span())
                                .help("write e.g. `float v[4];`, or a `#define`d size"));
                        }
                    }
                    self.expect("]")?;
                }
                for &n in dims.iter().rev() {
                    ty = Type::Array { elem: Box::new(ty), len: n };
                }
                if ty == Type::Void {
                    return Err(Diagnostic::error(format!("the member `{name}` cannot have type `void`"))
                        .at(span)
                        .help("give it a type such as `float`"));
                }
                if let (Type::Struct(d), Some((tag, _))) = (ty.innermost(), &tag)
                    && &d.name == tag
                {
                    return Err(Diagnostic::error(format!("`{tag}` cannot contain itself"))
                        .at(span)
                        .help(format!("hold a pointer instead: `{tag} *{name};`")));
                }
                if self.cur.is("=") {
                    return Err(Diagnostic::error("member initialisers run on the GPU backend only")
                        .at(self.cur.span())
                        .help("give the member its value where the struct is made, e.g. `P p = {1, 2};`")
                        .outside_subset("member initialisers"));
                }
                if fields.iter().any(|(n, _, _)| *n == name) {
                    return Err(Diagnostic::error(format!("the struct has two members named `{name}`"))
                        .at(span)
                        .label("a second member with this name")
                        .help("give each member its own name"));
                }
                fields.push((name, ty, span));
                if !self.cur.eat(",") {
                    break;
                }
            }
            self.expect(";")?;
        }
        let name = tag.as_ref().map_or_else(|| "(unnamed struct)".to_string(), |(n, _)| n.clone());
        let def = Arc::new(StructDef::new(&name, fields.into_iter().map(|(n, t, _)| (n, t)).collect(), min_align));
        if def.size > MAX_STRUCT_BYTES {
            return Err(Diagnostic::error(format!(
                "`{name}` is {} bytes, more than gridlab's limit of 1 MiB",
                def.size
            ))
            .at(start)
            .help("hold large data in a buffer passed as a pointer, not inside a struct"));
        }
        if let Some((name, span)) = &tag {
            self.typedefs.insert(name.clone(), struct_type(def.clone(), *span));
        }
        if !methods.is_empty() {
            if tag.is_none() {
                return Err(Diagnostic::error("member functions need a named struct")
                    .at(self.cur.span())
                    .help("name it: `struct Complex { ... };`"));
            }
            let end = self.cur.pos();
            for at in methods {
                self.cur.seek(at);
                let f = self.member_function(&def)?;
                self.methods.push(f);
            }
            self.cur.seek(end);
        }
        Ok((tag.map(|(n, _)| n), def))
    }

    /// Past a member function's definition, without reading it: to its body's closing `}`.
    fn skip_member_function(&mut self, start: Span) -> PResult<()> {
        let mut seen_params = false;
        loop {
            let prev_ident = matches!(self.cur.peek_back(),
                Some(Tok::Ident(w)) if !matches!(w.as_str(), "const" | "noexcept" | "override"));
            match self.cur.peek() {
                None => {
                    return Err(Diagnostic::error("this member function has no end")
                        .at(start)
                        .help("close its body with `}` before the struct's `}`"));
                }
                // Past the parameters (or an attribute's arguments) whole.
                Some(Tok::Punct("(")) => match self.cur.closing("(", ")") {
                    Some(end) => {
                        self.cur.seek(end);
                        seen_params = true;
                        continue;
                    }
                    None => {
                        return Err(Diagnostic::error("this member function has no end")
                            .at(start)
                            .help("close its parameters with `)` and its body with `}` before the struct's `}`"));
                    }
                },
                // A `)` that closes nothing: the parser says so where it reads it.
                Some(Tok::Punct(")")) => seen_params = true,
                Some(Tok::Punct(";")) => {
                    return Err(Diagnostic::error("a member function declared here is defined elsewhere")
                        .at(start)
                        .help("define it inside the struct, body and all: `__device__ float f() { ... }`")
                        .outside_subset("member functions defined outside their struct"));
                }
                // `: x{a}` in a constructor's initialisers follows a name; the body does not.
                Some(Tok::Punct("{")) if seen_params && !prev_ident => {
                    self.skip_braces()?;
                    return Ok(());
                }
                Some(Tok::Punct("{")) => {
                    self.skip_braces()?;
                    continue;
                }
                _ => {}
            }
            self.cur.advance(1);
        }
    }

    /// Past a balanced `{ ... }` starting here.
    fn skip_braces(&mut self) -> PResult<()> {
        if !self.cur.is("{") {
            return self.expect("{").map(|_| ());
        }
        match self.cur.closing("{", "}") {
            Some(end) => {
                self.cur.seek(end);
                Ok(())
            }
            None => Err(Diagnostic::error("unclosed `{`")
                .at(self.cur.span())
                .label("this `{` has no matching `}`")
                .help("add `}` at the end of the block")),
        }
    }

    /// A member function, constructor or operator of `def`, read where
    /// [`Parser::skip_member_function`] left it.
    fn member_function(&mut self, def: &Arc<StructDef>) -> PResult<Item> {
        let start = self.cur.span();
        let (mut device, mut host) = (false, false);
        loop {
            match self.cur.peek() {
                Some(Tok::Ident(w)) if w == "__device__" => device = true,
                Some(Tok::Ident(w)) if w == "__host__" => host = true,
                Some(Tok::Ident(w))
                    if matches!(w.as_str(), "__forceinline__" | "inline" | "__inline__" | "constexpr") => {}
                Some(Tok::Ident(w)) if matches!(w.as_str(), "static" | "virtual" | "friend" | "explicit") => {
                    let w = w.clone();
                    if w == "explicit" {
                        self.cur.advance(1);
                        continue;
                    }
                    return Err(Diagnostic::error(format!("`{w}` member functions run on the GPU backend only"))
                        .at(self.cur.span())
                        .help("write it as a plain `__device__` member function, or a free function")
                        .outside_subset(format!("`{w}` member functions")));
                }
                _ => break,
            }
            self.cur.advance(1);
        }
        let _ = host;
        let qual = if device { FuncQual::Device } else { FuncQual::Host };
        if self.cur.is("~") {
            return Err(Diagnostic::error("destructors run on the GPU backend only")
                .at(self.cur.span())
                .help("a struct in device code needs no destructor: remove it")
                .outside_subset("destructors"));
        }
        let is_ctor = self.cur.is_word(&def.name) && self.cur.is_at(1, "(");
        let (ret, name, name_span) = if is_ctor {
            let (name, span) = self.ident("the constructor's name")?;
            (struct_type(def.clone(), span), name, span)
        } else if self.cur.is_word("operator") && self.at_type_at(1) {
            // `operator float *()`: a conversion, named by the type it gives.
            let at = self.cur.span();
            self.cur.advance(1);
            let ret = self.type_name()?;
            self.cur.eat("&");
            let name = format!("operator {}", ret.resolve(&[]).c_name());
            (ret, name, at.to(self.cur.prev_span()))
        } else {
            let ret = self.type_name()?;
            // `Complex &operator+=(...)`: the result is returned as a value.
            self.cur.eat("&");
            if self.cur.is_word("operator") {
                let (name, span) = self.operator_name()?;
                (ret, name, span)
            } else {
                let (name, span) = self.ident("a member function's name")?;
                (ret, name, span)
            }
        };
        self.expect("(")?;
        let mut params = Vec::new();
        if !is_ctor {
            // The object, by reference, as the hidden first parameter.
            params.push(ParamDecl {
                ty: struct_type(def.clone(), name_span),
                name: Some(("this".to_string(), name_span)),
                array_dims: 0,
                by_ref: true,
                default: None,
                span: name_span,
            });
        }
        params.extend(self.param_list_after_open()?);
        while self.cur.eat_word("const") || self.cur.eat_word("noexcept") || self.cur.eat_word("override") {}
        let mut inits = Vec::new();
        if is_ctor && self.cur.eat(":") {
            loop {
                let (member, span) = self.ident("a member to initialise")?;
                let (open, close) = if self.cur.is("{") { ("{", "}") } else { ("(", ")") };
                self.expect(open)?;
                let args = self.expr_list(close)?;
                inits.push((member, span, args));
                if !self.cur.eat(",") {
                    break;
                }
            }
        }
        let saved = std::mem::take(&mut self.addressed);
        let body = self.block();
        let addressed = std::mem::replace(&mut self.addressed, saved);
        let StmtKind::Block(body) = body?.kind else { unreachable!("block() returns a block") };
        let span = start.to(self.cur.prev_span());
        let written = name.clone();
        let key = overload_name(&format!("{}::{name}", def.name), &params[usize::from(!is_ctor)..]);
        let method = Method { of: def.clone(), name: written, ctor: is_ctor.then_some(inits) };
        let f =
            FuncDef { method: Some(method), qual, ret, name: key.clone(), name_span, params, body, span, addressed };
        Ok(Item { name: key, kind: ItemKind::Function(f), span })
    }

    /// `(a, b)` or `{a, b}` after a struct's name.
    fn construct_args(&mut self) -> PResult<Vec<Expr>> {
        let close = if self.cur.eat("{") {
            "}"
        } else {
            self.expect("(")?;
            ")"
        };
        self.expr_list(close)
    }

    /// Comma-separated expressions after an opening bracket, through `close`.
    fn expr_list(&mut self, close: &str) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if !self.cur.is(close) {
            loop {
                args.push(self.assign()?);
                if !self.cur.eat(",") {
                    break;
                }
            }
        }
        self.expect(close)?;
        Ok(args)
    }

    /// `operator+`, `operator+=`, `operator[]`, `operator()` ... after the word `operator`.
    fn operator_name(&mut self) -> PResult<(String, Span)> {
        let start = self.cur.span();
        self.cur.advance(1);
        let op = match self.cur.peek().cloned() {
            Some(Tok::Punct("(")) if self.cur.is_at(1, ")") => {
                self.cur.advance(1);
                "()".to_string()
            }
            Some(Tok::Punct("[")) if self.cur.is_at(1, "]") => {
                self.cur.advance(1);
                "[]".to_string()
            }
            Some(Tok::Punct(p)) if p != "(" => p.to_string(),
            _ => return Err(self.expected("an operator after `operator`, e.g. `operator+`")),
        };
        self.cur.advance(1);
        Ok((format!("operator{op}"), start.to(self.cur.prev_span())))
    }

    fn skip_parens(&mut self) -> PResult<()> {
        if !self.cur.is("(") {
            return self.expect("(").map(|_| ());
        }
        match self.cur.closing("(", ")") {
            Some(end) => {
                self.cur.seek(end);
                Ok(())
            }
            None => {
                // Said where the input ends, where the `)` is missing.
                self.cur.to_end();
                Err(self.expected("`)`"))
            }
        }
    }

    /// An unscoped `enum` at file scope, `enum Dir { UP, DOWN = 4, LEFT };` (after `typedef`
    /// when `aliased`, `typedef enum { A, B } Mode;`): each enumerator is a file-scope
    /// `const int` (0, then one more than the one before unless it says `= value`), and the
    /// enum's name is `int`, which is what the enumerators convert to wherever they are used.
    fn enumeration(&mut self, start: Span, aliased: bool) -> PResult<Vec<Item>> {
        self.cur.advance(1);
        if self.cur.is_word("class") || self.cur.is_word("struct") {
            return Err(Diagnostic::error("scoped enums (`enum class`) are not supported by the simulator")
                .at(start.to(self.cur.span()))
                .label("not supported")
                .help("write a plain `enum { A, B };` and use the bare names, or `#define` constants")
                .outside_subset("`enum class`"));
        }
        let int_type = |span| TypeName::scalar(Scalar::I32, span);
        let tag = match self.cur.peek() {
            Some(Tok::Ident(_)) => Some(self.ident("the enum's name")?),
            _ => None,
        };
        if self.cur.eat(":") {
            // The underlying type (`enum E : unsigned char`): the enumerators are still
            // numbers; they are `int` constants here.
            self.type_name()?;
        }
        self.expect("{")?;
        let mut items = Vec::new();
        let mut prev: Option<(String, Span)> = None;
        while !self.cur.is("}") {
            let (name, name_span) = self.ident("an enumerator's name")?;
            let value = if self.cur.eat("=") {
                self.assign()?
            } else {
                let one = |span| Expr { kind: ExprKind::Int(1, Scalar::I32), span };
                match &prev {
                    Some((p, pspan)) => Expr {
                        kind: ExprKind::Binary(
                            BinaryOp::Add,
                            Box::new(Expr { kind: ExprKind::Name(p.clone()), span: *pspan }),
                            Box::new(one(name_span)),
                        ),
                        span: name_span,
                    },
                    None => Expr { kind: ExprKind::Int(0, Scalar::I32), span: name_span },
                }
            };
            let mut ty = int_type(name_span);
            ty.is_const = true;
            let decl = Decl {
                storage: Storage::Auto,
                ty,
                declarators: vec![Declarator {
                    name: name.clone(),
                    name_span,
                    ptrs: Vec::new(),
                    dims: Vec::new(),
                    init: Some(Init::Expr(value)),
                }],
                span: name_span,
            };
            items.push(Item { name: name.clone(), span: name_span, kind: ItemKind::Global(decl) });
            prev = Some((name, name_span));
            if !self.cur.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        let alias = if aliased { Some(self.ident("the new type's name")?) } else { None };
        self.expect(";")?;
        let whole = start.to(self.cur.prev_span());
        for (name, _) in [tag, alias].into_iter().flatten() {
            let ty = int_type(whole);
            self.typedefs.insert(name.clone(), ty.clone());
            items.push(Item { name, kind: ItemKind::Typedef(ty), span: whole });
        }
        // Every item is the whole enum: the GPU's source takes its text once (`Module::parse`).
        for item in &mut items {
            item.span = whole;
        }
        Ok(items)
    }

    fn typedef(&mut self) -> PResult<Item> {
        let start = self.cur.span();
        self.cur.advance(1);
        // `typedef struct [Tag] { ... } Name;`
        if (self.cur.is_word("struct") || self.cur.is_word("class")) && self.struct_body_ahead() {
            self.cur.advance(1);
            let (tag, def) = self.struct_def()?;
            let (alias, _) = self.ident("the new type's name")?;
            self.expect(";")?;
            let mut def = (*def).clone();
            if tag.is_none() {
                def.name = alias.clone();
            }
            let tn = struct_type(Arc::new(def), start.to(self.cur.prev_span()));
            self.typedefs.insert(alias.clone(), tn.clone());
            return Ok(Item { name: alias, kind: ItemKind::Typedef(tn), span: start.to(self.cur.prev_span()) });
        }
        let mut ty = self.type_name()?;
        let (name, _) = self.ident("the new type's name")?;
        if self.cur.is("[") || self.cur.is("(") {
            return Err(Diagnostic::error("only typedefs of scalar and pointer types are supported")
                .at(self.cur.span())
                .help("write e.g. `typedef float real;`"));
        }
        self.expect(";")?;
        ty.span = start.to(self.cur.prev_span());
        self.typedefs.insert(name.clone(), ty.clone());
        Ok(Item { name, kind: ItemKind::Typedef(ty), span: start.to(self.cur.prev_span()) })
    }

    fn function(
        &mut self,
        start: Span,
        qual: FuncQual,
        ret: TypeName,
        name: String,
        name_span: Span,
    ) -> PResult<Option<Item>> {
        let params = self.param_list()?;
        while self.cur.eat_word("const") || self.cur.eat_word("noexcept") {}
        if self.cur.eat(";") {
            // A prototype: the module resolves calls by name in any order, so it adds nothing.
            return Ok(None);
        }
        if !self.cur.is("{") {
            return Err(self.expected("`{` to start the function body"));
        }
        let saved = std::mem::take(&mut self.addressed);
        let body = self.block();
        let addressed = std::mem::replace(&mut self.addressed, saved);
        let StmtKind::Block(body) = body?.kind else { unreachable!("block() returns a block") };
        let span = start.to(self.cur.prev_span());
        // Operators are overloaded by their operands' types: the item's name says which.
        let name = if name.starts_with("operator") { overload_name(&name, &params) } else { name };
        let f = FuncDef { method: None, qual, ret, name: name.clone(), name_span, params, body, span, addressed };
        Ok(Some(Item { name, kind: ItemKind::Function(f), span }))
    }

    /// `(float *a, int n)`, `()` or `(void)`.
    fn param_list(&mut self) -> PResult<Vec<ParamDecl>> {
        self.expect("(")?;
        self.param_list_after_open()
    }

    /// A parameter list after its `(`, through its `)`.
    fn param_list_after_open(&mut self) -> PResult<Vec<ParamDecl>> {
        let mut params = Vec::new();
        if self.cur.is_word("void") && self.cur.is_at(1, ")") {
            self.cur.advance(1);
        }
        if !self.cur.is(")") {
            loop {
                params.push(self.param()?);
                if !self.cur.eat(",") {
                    break;
                }
            }
        }
        self.expect(")")?;
        Ok(params)
    }

    fn param(&mut self) -> PResult<ParamDecl> {
        let start = self.cur.span();
        if self.cur.is("...") {
            return Err(Diagnostic::error("variadic functions are not supported")
                .at(start)
                .help("give the function a fixed list of parameters")
                .outside_subset("variadic functions"));
        }
        if let Some(Tok::Ident(w)) = self.cur.peek()
            && !self.at_type()
            && unsupported_type(w).is_none()
            && !["template", "struct", "class", "union", "enum"].contains(&w.as_str())
        {
            return Err(self.unknown_type());
        }
        let ty = self.type_name()?;
        if self.cur.is("&&") {
            return Err(Diagnostic::error("rvalue references (`&&`) are not supported by the simulator")
                .at(self.cur.span())
                .label("an rvalue reference")
                .help("take the parameter by value (`float x`) or by reference (`float &x`)")
                .outside_subset("rvalue references"));
        }
        let by_ref = self.cur.eat("&");
        let name = match self.cur.peek() {
            Some(Tok::Ident(_)) => Some(self.ident("a parameter name")?),
            _ => None,
        };
        let mut array_dims = 0;
        // The text of each `[...]`, for the message about 2-D arrays.
        let mut sizes: Vec<String> = Vec::new();
        while self.cur.eat("[") {
            let mut size = String::new();
            while !self.cur.is("]") && self.cur.peek().is_some() {
                match self.cur.peek() {
                    Some(Tok::Ident(w)) => size.push_str(w),
                    Some(Tok::Int(v, _)) => size.push_str(&v.to_string()),
                    Some(Tok::Punct(p)) => size.push_str(p),
                    _ => size.push('?'),
                }
                self.cur.advance(1);
            }
            self.expect("]")?;
            array_dims += 1;
            sizes.push(size);
        }
        if array_dims >= 2 {
            // `float A[N][N]` is a pointer to rows of N floats in C; gridlab's buffers, 2-D ones
            // included, reach a kernel as one flat pointer, so say how to index that.
            let (pname, elem) =
                (name.as_ref().map_or("a", |(n, _)| n.as_str()), ty.base.map_or("void", |b| b.c_name()));
            let star = if ty.ptrs.is_empty() { String::new() } else { "*".repeat(ty.ptrs.len()) };
            let dims: String = sizes.iter().map(|d| format!("[{d}]")).collect();
            // `A[row * N + col]`; `A[(i * N + j) * M + k]` for three dimensions.
            let vars: &[&str] = if array_dims == 2 { &["row", "col"] } else { &["i", "j", "k", "l", "m"] };
            let mut index = vars[0].to_string();
            for (k, d) in sizes.iter().enumerate().skip(1) {
                let d = if d.is_empty() { "size" } else { d.as_str() };
                let v = vars.get(k).copied().unwrap_or("x");
                index = if k == 1 { format!("{index} * {d} + {v}") } else { format!("({index}) * {d} + {v}") };
            }
            let index = format!("{pname}[{index}]");
            return Err(Diagnostic::error(format!(
                "`{elem} {star}{pname}{dims}` is a {array_dims}-D array parameter, which gridlab cannot pass"
            ))
            .at(start.to(self.cur.prev_span()))
            .label("a pointer to rows, in C")
            .help(format!(
                "buffers reach a kernel as flat pointers, a 2-D buffer row after row: declare `{elem} {star}*{pname}` and index it as `{index}`"
            )));
        }
        let default = if self.cur.eat("=") { Some(self.assign()?) } else { None };
        Ok(ParamDecl { ty, name, array_dims, by_ref, default, span: start.to(self.cur.prev_span()) })
    }

    /// The declarators after a type: `a = 1, *p, v[4] = {1, 2}` and the closing `;`.
    fn declarators(
        &mut self,
        start: Span,
        storage: Storage,
        mut ty: TypeName,
        mut first: Option<(String, Span)>,
    ) -> PResult<Decl> {
        // The `*`s written after the type (`float *src = a, *dst = b;`) are the first
        // declarator's: the others start again from the bare type (`float`), as in C.
        let own = self.written_ptrs.min(ty.ptrs.len());
        let mut first_ptrs = Some(ty.ptrs.split_off(ty.ptrs.len() - own));
        let mut declarators = Vec::new();
        loop {
            let mut ptrs = first_ptrs.take().unwrap_or_default();
            let (name, name_span) = match first.take() {
                Some(n) => n,
                None => {
                    let mut restrict = false;
                    self.pointers(&mut ptrs, &mut restrict);
                    self.ident("a variable name")?
                }
            };
            let mut dims = Vec::new();
            while self.cur.eat("[") {
                if self.cur.eat("]") {
                    dims.push(None);
                } else {
                    let e = self.expr()?;
                    self.expect("]")?;
                    dims.push(Some(e));
                }
            }
            if (self.cur.is("(") || self.cur.is("{")) && ty.strukt.is_some() && ptrs.is_empty() && dims.is_empty() {
                // `Complex c(a, b);`, `Complex c{a, b};`: made by the constructor.
                let at = self.cur.span();
                let args = self.construct_args()?;
                let span = at.to(self.cur.prev_span());
                let e = Expr { kind: ExprKind::Construct { ty: ty.clone(), args }, span };
                declarators.push(Declarator { name, name_span, ptrs, dims, init: Some(Init::Expr(e)) });
                if !self.cur.eat(",") {
                    break;
                }
                continue;
            }
            if self.cur.is("(") {
                return Err(Diagnostic::error("constructor-style initialisation is not supported")
                    .at(self.cur.span())
                    .help(format!("write `{name} = value;`"))
                    .outside_subset("constructor-style initialisation"));
            }
            let init = if self.cur.eat("=") { Some(self.init()?) } else { None };
            declarators.push(Declarator { name, name_span, ptrs, dims, init });
            if !self.cur.eat(",") {
                break;
            }
        }
        self.expect(";")?;
        Ok(Decl { storage, ty, declarators, span: start.to(self.cur.prev_span()) })
    }

    fn init(&mut self) -> PResult<Init> {
        if !self.cur.is("{") {
            return Ok(Init::Expr(self.assign()?));
        }
        let start = self.cur.span();
        self.enter()?;
        self.cur.advance(1);
        let mut items = Vec::new();
        while !self.cur.is("}") {
            items.push(self.init()?);
            if !self.cur.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        self.leave();
        Ok(Init::List(items, start.to(self.cur.prev_span())))
    }

    // ----- statements -----

    fn block(&mut self) -> PResult<Stmt> {
        let start = self.expect("{")?;
        self.enter()?;
        let mut stmts = Vec::new();
        while !self.cur.is("}") {
            if self.cur.peek().is_none() {
                return Err(Diagnostic::error("unclosed `{`")
                    .at(start)
                    .label("this `{` has no matching `}`")
                    .help("add `}` at the end of the block"));
            }
            stmts.push(self.stmt()?);
        }
        self.cur.advance(1);
        self.leave();
        Ok(Stmt { kind: StmtKind::Block(stmts), span: start.to(self.cur.prev_span()) })
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let s = self.stmt_inner();
        self.leave();
        s
    }

    fn stmt_inner(&mut self) -> PResult<Stmt> {
        let start = self.cur.span();
        let done = |p: &Self, kind| Ok(Stmt { kind, span: start.to(p.cur.prev_span()) });
        if self.cur.is("{") {
            return self.block();
        }
        if self.cur.eat(";") {
            return done(self, StmtKind::Empty);
        }
        let declares = matches!(self.cur.peek_at(1), Some(Tok::Ident(_)));
        self.reject_unsupported_word(declares)?;
        let word = match self.cur.peek() {
            Some(Tok::Ident(w)) => w.clone(),
            _ => String::new(),
        };
        match word.as_str() {
            "if" => {
                self.cur.advance(1);
                // `if constexpr (Big)`: in a template the condition is a constant either way,
                // and the branch not taken never runs.
                self.cur.eat_word("constexpr");
                let cond = self.paren_expr()?;
                let then = Box::new(self.stmt()?);
                let else_ = if !self.cur.eat_word("else") {
                    None
                } else if self.cur.is_word("if") {
                    // `else if` chains are flat for a reader, however long: a link of the chain
                    // deepens the tree only.
                    self.tree += 1;
                    // With room left for the branch's own code, so that this error, not one about
                    // its condition, says what is too long.
                    if self.tree + 64 > MAX_TREE_DEPTH {
                        return Err(Diagnostic::error("this `if` ... `else if` chain is too long")
                            .at(self.cur.span())
                            .label(format!("more than {} branches", MAX_TREE_DEPTH - 64))
                            .help("look the value up in an array, or use a `switch`"));
                    }
                    let s = self.stmt_inner();
                    self.tree -= 1;
                    Some(Box::new(s?))
                } else {
                    Some(Box::new(self.stmt()?))
                };
                return done(self, StmtKind::If(cond, then, else_));
            }
            "while" => {
                self.cur.advance(1);
                let cond = self.paren_expr()?;
                let body = Box::new(self.stmt()?);
                return done(self, StmtKind::While(cond, body));
            }
            "do" => {
                self.cur.advance(1);
                let body = Box::new(self.stmt()?);
                if !self.cur.eat_word("while") {
                    return Err(self.expected("`while` after the body of `do`"));
                }
                let cond = self.paren_expr()?;
                self.expect(";")?;
                return done(self, StmtKind::DoWhile(body, cond));
            }
            "for" => return self.for_stmt(),
            "switch" => {
                self.cur.advance(1);
                let value = self.paren_expr()?;
                self.enter()?;
                let r = self.switch_body();
                self.leave();
                return done(self, StmtKind::Switch(value, r?));
            }
            "break" | "continue" => {
                self.cur.advance(1);
                self.expect(";")?;
                return done(self, if word == "break" { StmtKind::Break } else { StmtKind::Continue });
            }
            "return" => {
                self.cur.advance(1);
                let value = if self.cur.is(";") { None } else { Some(self.expr()?) };
                self.expect(";")?;
                return done(self, StmtKind::Return(value));
            }
            "else" => {
                return Err(Diagnostic::error("`else` without an `if`")
                    .at(start)
                    .help("check the braces of the `if` before it"));
            }
            "typedef" => {
                return Err(Diagnostic::error("typedefs belong at file scope")
                    .at(start)
                    .help("move the typedef out of the function"));
            }
            "__global__" | "__device__" | "__constant__" => {
                return Err(Diagnostic::error(format!("`{word}` is not allowed inside a function"))
                    .at(start)
                    .help("declare it at file scope, outside every function"));
            }
            _ => {}
        }
        if self.cur.is_word("goto") && matches!(self.cur.peek_at(1), Some(Tok::Ident(_))) && self.cur.is_at(2, ";") {
            self.cur.advance(1);
            let (label, _) = self.ident("a label")?;
            self.expect(";")?;
            return done(self, StmtKind::Goto(label));
        }
        if let Some(decl) = self.local_decl()? {
            return Ok(Stmt { span: decl.span, kind: StmtKind::Decl(decl) });
        }
        if let Some(Tok::Ident(label)) = self.cur.peek()
            && self.cur.is_at(1, ":")
            && !self.cur.is_at(1, "::")
        {
            // A label names the statement after it (at the end of a block, an empty one).
            let label = label.clone();
            self.cur.advance(2);
            let target = if self.cur.is("}") { Stmt { kind: StmtKind::Empty, span: start } } else { self.stmt()? };
            let span = start.to(target.span);
            return Ok(Stmt { kind: StmtKind::Labeled(label, Box::new(target)), span });
        }

        let e = self.expr()?;
        self.expect(";")?;
        done(self, StmtKind::Expr(e))
    }

    /// A declaration inside a function, if one starts here.
    fn local_decl(&mut self) -> PResult<Option<Decl>> {
        let start = self.cur.span();
        let mut storage = Storage::Auto;
        if self.cur.eat_word("__shared__") {
            storage = Storage::Shared;
        } else if self.cur.is_word("extern") {
            self.cur.advance(1);
            if !self.cur.eat_word("__shared__") {
                return Err(Diagnostic::error("only `extern __shared__` is allowed inside a function")
                    .at(start)
                    .help("write `extern __shared__ float buf[];`"));
            }
            storage = Storage::ExternShared;
        } else if self.cur.eat_word("static") {
            storage = Storage::Static;
        }
        while self.cur.eat_word("__shared__") || self.cur.eat_word("static") {
            if storage == Storage::Static {
                storage = Storage::Shared;
            }
        }
        if storage == Storage::Auto && !self.at_type() {
            // `flaot x` / `flaot *x`: a name followed by a declarator is a misspelt type.
            if let (Some(Tok::Ident(w)), Some(Tok::Ident(_))) = (self.cur.peek(), self.cur.peek_at(1))
                && w != "sizeof"
            {
                return Err(self.unknown_type());
            }
            return Ok(None);
        }
        if storage == Storage::Shared && self.cur.is_word("extern") {
            return Err(Diagnostic::error("write `extern __shared__`, in that order")
                .at(self.cur.span())
                .help("write `extern __shared__ float buf[];`"));
        }
        let ty = self.type_name()?;
        Ok(Some(self.declarators(start, storage, ty, None)?))
    }

    fn for_stmt(&mut self) -> PResult<Stmt> {
        let start = self.cur.span();
        self.cur.advance(1);
        self.expect("(")?;
        let init = if self.cur.eat(";") {
            None
        } else if let Some(decl) = self.local_decl()? {
            Some(Box::new(Stmt { span: decl.span, kind: StmtKind::Decl(decl) }))
        } else {
            let s = self.cur.span();
            let e = self.expr()?;
            self.expect(";")?;
            Some(Box::new(Stmt { kind: StmtKind::Expr(e), span: s.to(self.cur.prev_span()) }))
        };
        let cond = if self.cur.is(";") { None } else { Some(self.expr()?) };
        self.expect(";")?;
        let step = if self.cur.is(")") { None } else { Some(self.expr()?) };
        self.expect(")")?;
        let body = Box::new(self.stmt()?);
        Ok(Stmt { kind: StmtKind::For { init, cond, step, body }, span: start.to(self.cur.prev_span()) })
    }

    /// `{ case 1: ... default: ... }` after `switch (value)`.
    fn switch_body(&mut self) -> PResult<Vec<SwitchPart>> {
        self.expect("{")?;
        let mut parts = Vec::new();
        while !self.cur.eat("}") {
            if self.cur.peek().is_none() {
                return Err(self.expected("`}` to close the `switch`"));
            }
            if self.cur.eat_word("case") {
                let e = self.binary(0)?;
                self.expect(":")?;
                parts.push(SwitchPart::Case(e));
            } else if self.cur.is_word("default") && matches!(self.cur.peek_at(1), Some(Tok::Punct(":"))) {
                let span = self.cur.span();
                self.cur.advance(2);
                parts.push(SwitchPart::Default(span));
            } else {
                parts.push(SwitchPart::Stmt(self.stmt()?));
            }
        }
        Ok(parts)
    }

    fn paren_expr(&mut self) -> PResult<Expr> {
        if !self.cur.is("(") {
            return Err(self.expected("`(`"));
        }
        self.cur.advance(1);
        let e = self.expr()?;
        self.expect(")")?;
        Ok(e)
    }

    // ----- expressions -----

    pub fn expr(&mut self) -> PResult<Expr> {
        let mut lhs = self.assign()?;
        let mut chain = 0;
        while self.cur.eat(",") {
            self.enter_chain()?;
            chain += 1;
            let rhs = self.assign()?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr { kind: ExprKind::Comma(Box::new(lhs), Box::new(rhs)), span };
        }
        self.tree -= chain;
        Ok(lhs)
    }

    fn assign(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.assign_inner();
        self.leave();
        r
    }

    fn assign_inner(&mut self) -> PResult<Expr> {
        let lhs = self.cond()?;
        let op = match self.cur.peek() {
            Some(Tok::Punct(p)) => match *p {
                "=" => None,
                "+=" => Some(BinaryOp::Add),
                "-=" => Some(BinaryOp::Sub),
                "*=" => Some(BinaryOp::Mul),
                "/=" => Some(BinaryOp::Div),
                "%=" => Some(BinaryOp::Rem),
                "<<=" => Some(BinaryOp::Shl),
                ">>=" => Some(BinaryOp::Shr),
                "&=" => Some(BinaryOp::BitAnd),
                "|=" => Some(BinaryOp::BitOr),
                "^=" => Some(BinaryOp::BitXor),
                _ => return Ok(lhs),
            },
            _ => return Ok(lhs),
        };
        self.cur.advance(1);
        let rhs = self.assign()?;
        let span = lhs.span.to(rhs.span);
        Ok(Expr { kind: ExprKind::Assign(op, Box::new(lhs), Box::new(rhs)), span })
    }

    fn cond(&mut self) -> PResult<Expr> {
        let c = self.binary(0)?;
        if !self.cur.eat("?") {
            return Ok(c);
        }
        let then = self.expr()?;
        self.expect(":")?;
        // `a ? x : b ? y : z` chains are flat for a reader: the part after `:` is a link.
        self.enter_chain()?;
        let else_ = self.assign_inner();
        self.tree -= 1;
        let else_ = else_?;
        let span = c.span.to(else_.span);
        Ok(Expr { kind: ExprKind::Cond(Box::new(c), Box::new(then), Box::new(else_)), span })
    }

    fn binop(&self) -> Option<(BinaryOp, usize)> {
        let Some(Tok::Punct(p)) = self.cur.peek() else { return None };
        Some(match *p {
            "||" => (BinaryOp::LogOr, 1),
            "&&" => (BinaryOp::LogAnd, 2),
            "|" => (BinaryOp::BitOr, 3),
            "^" => (BinaryOp::BitXor, 4),
            "&" => (BinaryOp::BitAnd, 5),
            "==" => (BinaryOp::Eq, 6),
            "!=" => (BinaryOp::Ne, 6),
            "<" => (BinaryOp::Lt, 7),
            "<=" => (BinaryOp::Le, 7),
            ">" => (BinaryOp::Gt, 7),
            ">=" => (BinaryOp::Ge, 7),
            "<<" => (BinaryOp::Shl, 8),
            ">>" => (BinaryOp::Shr, 8),
            "+" => (BinaryOp::Add, 9),
            "-" => (BinaryOp::Sub, 9),
            "*" => (BinaryOp::Mul, 10),
            "/" => (BinaryOp::Div, 10),
            "%" => (BinaryOp::Rem, 10),
            _ => return None,
        })
    }

    /// Precedence climbing over the left-associative binary operators.
    fn binary(&mut self, min_prec: usize) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        let result = loop {
            let Some((op, prec)) = self.binop() else { break Ok(lhs) };
            if prec <= min_prec {
                break Ok(lhs);
            }
            self.cur.advance(1);
            // A long left-leaning chain is as deep as a nested one for the checker.
            if let Err(e) = self.enter_chain() {
                break Err(e);
            }
            chain += 1;
            let rhs = match self.binary(prec) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            let span = lhs.span.to(rhs.span);
            lhs = Expr { kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span };
        };
        self.tree -= chain;
        result
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.leave();
        r
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let start = self.cur.span();
        let op = match self.cur.peek() {
            Some(Tok::Punct("-")) => Some(UnOp::Neg),
            Some(Tok::Punct("+")) => Some(UnOp::Plus),
            Some(Tok::Punct("!")) => Some(UnOp::LogNot),
            Some(Tok::Punct("~")) => Some(UnOp::BitNot),
            Some(Tok::Punct("*")) => Some(UnOp::Deref),
            Some(Tok::Punct("&")) => Some(UnOp::AddrOf),
            _ => None,
        };
        if let Some(op) = op {
            self.cur.advance(1);
            let e = self.unary()?;
            if let (UnOp::AddrOf, ExprKind::Name(n)) = (op, &e.kind)
                && !self.addressed.contains(n)
            {
                self.addressed.push(n.clone());
            }
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), span });
        }
        if self.cur.is("++") || self.cur.is("--") {
            let increment = self.cur.is("++");
            self.cur.advance(1);
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::IncDec { operand: Box::new(e), increment, prefix: true }, span });
        }
        if self.cur.is_word("sizeof") {
            self.cur.advance(1);
            if self.cur.is("(") && self.at_type_at(1) {
                self.cur.advance(1);
                let ty = self.type_name()?;
                self.expect(")")?;
                return Ok(Expr { kind: ExprKind::SizeofType(ty), span: start.to(self.cur.prev_span()) });
            }
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::SizeofExpr(Box::new(e)), span });
        }
        if self.cur.is("(") && self.at_type_at(1) {
            self.cur.advance(1);
            let ty = self.type_name()?;
            self.expect(")")?;
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::Cast(ty, Box::new(e)), span });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut chain = 0;
        let result = loop {
            if let Err(err) = self.enter_chain() {
                break Err(err);
            }
            chain += 1;
            let step = self.postfix_step(e);
            match step {
                Ok((next, true)) => e = next,
                Ok((next, false)) => break Ok(next),
                Err(err) => break Err(err),
            }
        };
        self.tree -= chain;
        result
    }

    /// One postfix operator applied to `e`; `false` when there was none.
    fn postfix_step(&mut self, e: Expr) -> PResult<(Expr, bool)> {
        let start = e.span;
        if self.cur.eat("[") {
            let index = self.expr()?;
            self.expect("]")?;
            let span = start.to(self.cur.prev_span());
            return Ok((Expr { kind: ExprKind::Index(Box::new(e), Box::new(index)), span }, true));
        }
        if self.cur.eat(".") {
            let (field, field_span) = self.ident("a member name such as `x`")?;
            let span = start.to(field_span);
            return Ok((Expr { kind: ExprKind::Member(Box::new(e), field, field_span), span }, true));
        }
        if self.cur.eat("->") {
            // `p->x` is `(*p).x`.
            let (field, field_span) = self.ident("a member name")?;
            let span = start.to(field_span);
            let target = Expr { kind: ExprKind::Unary(UnOp::Deref, Box::new(e)), span: start };
            return Ok((Expr { kind: ExprKind::Member(Box::new(target), field, field_span), span }, true));
        }
        if self.cur.is("++") || self.cur.is("--") {
            let increment = self.cur.is("++");
            self.cur.advance(1);
            let span = start.to(self.cur.prev_span());
            return Ok((
                Expr { kind: ExprKind::IncDec { operand: Box::new(e), increment, prefix: false }, span },
                true,
            ));
        }
        if self.cur.is("(")
            && let ExprKind::Member(object, name, name_span) = &e.kind
        {
            let (object, name, name_span) = (object.clone(), name.clone(), *name_span);
            self.cur.advance(1);
            let args = self.expr_list(")")?;
            let span = start.to(self.cur.prev_span());
            return Ok((Expr { kind: ExprKind::MethodCall { object, name, name_span, args }, span }, true));
        }
        if self.cur.is("(") {
            let ExprKind::Name(name) = &e.kind else {
                return Err(Diagnostic::error("only named functions can be called")
                    .at(self.cur.span())
                    .help("call a function by its name, e.g. `square(x)`"));
            };
            let name = name.clone();
            self.cur.advance(1);
            let args = self.expr_list(")")?;
            let span = start.to(self.cur.prev_span());
            return Ok((Expr { kind: ExprKind::Call { name, name_span: start, args }, span }, true));
        }
        if self.cur.is("<<") && self.cur.is_at(1, "<") && matches!(e.kind, ExprKind::Name(_)) {
            return Err(Diagnostic::error("kernels cannot be launched from CUDA code here")
                .at(self.cur.span())
                .label("a launch inside a kernel (dynamic parallelism)")
                .help("launch kernels from the gridlab prompt, e.g. `kernel<<<1, 32>>>(a, n)`"));
        }
        Ok((e, false))
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.cur.span();
        let Some(tok) = self.cur.peek().cloned() else {
            return Err(self.expected("an expression"));
        };
        let kind = match tok {
            Tok::Int(v, ty) => ExprKind::Int(v, ty),
            Tok::Float(v, ty) => ExprKind::Float(v, ty),
            Tok::Char(c) => ExprKind::Char(c),
            Tok::Str(s) => {
                let mut s = s;
                while let Some(Tok::Str(more)) = self.cur.peek_at(1) {
                    s.push_str(more);
                    self.cur.advance(1);
                }
                ExprKind::Str(s)
            }
            Tok::Punct("(") => {
                self.cur.advance(1);
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(Expr { kind: e.kind, span: start.to(self.cur.prev_span()) });
            }
            // `::atomicCAS(...)`, `::fmaxf(x, y)`: the global namespace, which is where every
            // name the simulator knows lives.
            Tok::Punct("::") if matches!(self.cur.peek_at(1), Some(Tok::Ident(_))) => {
                self.cur.advance(1);
                let e = self.primary()?;
                return Ok(Expr { kind: e.kind, span: start.to(e.span) });
            }
            // `[=](float x) { ... }`: a lambda.
            Tok::Punct("[") => {
                return Err(Diagnostic::error("lambdas are not supported by the simulator")
                    .at(start)
                    .label("a lambda starts here")
                    .help("write the lambda's body as a `__device__` function and call that")
                    .outside_subset("lambdas"));
            }
            Tok::Ident(w) if w == "true" || w == "false" => ExprKind::Bool(w == "true"),
            Tok::Ident(w) if matches!(w.as_str(), "static_cast" | "reinterpret_cast" | "const_cast") => {
                return self.cpp_cast(w);
            }
            Tok::Ident(w)
                if (self.cur.is_at(1, "(") || self.cur.is_at(1, "{"))
                    && (w == "dim3"
                        || self.typedefs.get(&w).is_some_and(|t| t.strukt.is_some() && t.ptrs.is_empty())) =>
            {
                // `Complex(a, b)`, `dim3(x, y)`: a struct made in an expression.
                let ty = self.type_name()?;
                let args = self.construct_args()?;
                return Ok(Expr { kind: ExprKind::Construct { ty, args }, span: start.to(self.cur.prev_span()) });
            }
            // `float(i)`: C++'s functional cast, the same as `(float)i`.
            Tok::Ident(w)
                if self.cur.is_at(1, "(")
                    && (matches!(
                        w.as_str(),
                        "float" | "double" | "int" | "char" | "bool" | "short" | "unsigned" | "size_t"
                    ) || fixed_width(&w).is_some()
                        || self.typedefs.get(&w).is_some_and(|t| t.strukt.is_none())) =>
            {
                let ty = self.type_name()?;
                self.expect("(")?;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(Expr { kind: ExprKind::Cast(ty, Box::new(e)), span: start.to(self.cur.prev_span()) });
            }
            Tok::Ident(w) => {
                self.reject_unsupported_word(false)?;
                if self.at_type() {
                    return Err(Diagnostic::error(format!("expected an expression, found the type `{w}`"))
                        .at(start)
                        .help("declarations go at the start of a statement; casts are written `(float)x`"));
                }
                ExprKind::Name(w)
            }
            _ => return Err(self.expected("an expression")),
        };
        self.cur.advance(1);
        Ok(Expr { kind, span: start })
    }

    /// `static_cast<T>(x)`, and `reinterpret_cast`/`const_cast`, which in device code convert
    /// between pointer types (`reinterpret_cast<float4 *>(a)` for vector loads): all three
    /// are C casts to the checker, which allows what C allows.
    fn cpp_cast(&mut self, _which: String) -> PResult<Expr> {
        let start = self.cur.span();
        self.cur.advance(1);
        self.expect("<")?;
        let ty = self.type_name()?;
        self.expect(">")?;
        self.expect("(")?;
        let e = self.expr()?;
        self.expect(")")?;
        Ok(Expr { kind: ExprKind::Cast(ty, Box::new(e)), span: start.to(self.cur.prev_span()) })
    }
}

/// A file-scope declaration becomes one item per declarator, so each can be replaced alone.
fn decl_items(decl: Decl) -> Vec<Item> {
    decl.declarators
        .into_iter()
        .map(|d| Item {
            name: d.name.clone(),
            span: decl.span,
            kind: ItemKind::Global(Decl {
                storage: decl.storage,
                ty: decl.ty.clone(),
                declarators: vec![d],
                span: decl.span,
            }),
        })
        .collect()
}
