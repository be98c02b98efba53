//! The untyped parse tree: what the learner wrote, with spans, before names are resolved and
//! C's conversions applied. The parser builds it; the checker turns it into [`super::ast`].

use std::sync::Arc;

use super::ast::{BinaryOp, Scalar, StructDef, Type};
use crate::diag::Span;

/// A type as written, without its array dimensions (those belong to the declarator).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    /// `None` is `void` (or a struct, when `strukt` is set).
    pub base: Option<Scalar>,
    /// A struct or vector type (`float4`, `struct Particle`), laid out when it was defined.
    pub strukt: Option<Arc<StructDef>>,
    pub is_const: bool,
    /// One entry per `*`, outermost last; `true` when that pointer itself is `const`.
    pub ptrs: Vec<bool>,
    pub restrict: bool,
    /// `auto`: the type comes from the initialiser (`base` is a placeholder).
    pub auto: bool,
    pub span: Span,
}

impl TypeName {
    /// A plain scalar type (`int`), as gridlab writes one into a tree it rewrites.
    pub fn scalar(base: Scalar, span: Span) -> TypeName {
        TypeName {
            base: Some(base),
            strukt: None,
            is_const: false,
            ptrs: Vec::new(),
            restrict: false,
            auto: false,
            span,
        }
    }

    /// The type this name spells plus a declarator's extra `*`s (arrays are added separately).
    pub fn resolve(&self, extra_ptrs: &[bool]) -> Type {
        let mut ty = match (&self.strukt, self.base) {
            (Some(def), _) => Type::Struct(def.clone()),
            (None, None) => Type::Void,
            (None, Some(s)) => Type::Scalar(s),
        };
        let mut is_const = self.is_const;
        for &c in self.ptrs.iter().chain(extra_ptrs) {
            ty = Type::Ptr { pointee: Box::new(ty), is_const };
            is_const = c;
        }
        ty
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Expr(Expr),
    List(Vec<Init>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    pub name: String,
    pub name_span: Span,
    /// `*` written on this declarator (`float *a, b;`): `true` when that level is `const`.
    pub ptrs: Vec<bool>,
    /// `[N]` dimensions, outermost first; `None` for `[]`.
    pub dims: Vec<Option<Expr>>,
    pub init: Option<Init>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A plain local (or a file-scope `const`, which acts as a named constant).
    Auto,
    Shared,
    ExternShared,
    Constant,
    Device,
    Static,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub storage: Storage,
    pub ty: TypeName,
    pub declarators: Vec<Declarator>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    BitNot,
    LogNot,
    Deref,
    AddrOf,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(u64, Scalar),
    Float(f64, Scalar),
    Char(u8),
    Str(String),
    Bool(bool),
    Name(String),
    /// `threadIdx.x`: the member name and its span.
    Member(Box<Expr>, String, Span),
    Unary(UnOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `lhs = rhs` (`None`) or `lhs op= rhs`.
    Assign(Option<BinaryOp>, Box<Expr>, Box<Expr>),
    IncDec {
        operand: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(TypeName, Box<Expr>),
    Call {
        name: String,
        name_span: Span,
        args: Vec<Expr>,
    },
    Index(Box<Expr>, Box<Expr>),
    /// `obj.name(args)` (and `p->name(args)`, with `obj` being `*p`): a member function call.
    MethodCall {
        object: Box<Expr>,
        name: String,
        name_span: Span,
        args: Vec<Expr>,
    },
    /// `Complex(a, b)` or `Complex{a, b}`: a struct made by its constructor, or member by
    /// member when it has none. Also `Complex c(a, b);` as an initialiser.
    Construct {
        ty: TypeName,
        args: Vec<Expr>,
    },
    Comma(Box<Expr>, Box<Expr>),
    SizeofType(TypeName),
    SizeofExpr(Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    Decl(Decl),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    DoWhile(Box<Stmt>, Expr),
    /// `switch (value) { case 1: ... default: ... }`: labels and statements in order.
    Switch(Expr, Vec<SwitchPart>),
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        step: Option<Expr>,
        body: Box<Stmt>,
    },
    Break,
    Continue,
    Return(Option<Expr>),
    Block(Vec<Stmt>),
    Empty,
    /// `goto label;`: written out as flags and breaks before checking (`goto::lower`).
    Goto(String),
    /// `label: statement`.
    Labeled(String, Box<Stmt>),
}

/// One piece of a `switch` body: a label or a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum SwitchPart {
    Case(Expr),
    Default(Span),
    Stmt(Stmt),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncQual {
    Global,
    Device,
    /// No `__global__`/`__device__`: host code, which the checker rejects with a hint.
    Host,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub ty: TypeName,
    /// `None` for an unnamed parameter in a prototype.
    pub name: Option<(String, Span)>,
    /// `float a[]` / `float a[N]` parameters, which are pointers in C.
    pub array_dims: usize,
    /// `float &x`: a reference to the caller's variable.
    pub by_ref: bool,
    /// `float d = 1.0f`: the value a call that leaves the argument out passes.
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FuncDef {
    /// A member function, constructor or operator of a struct: the struct, and for
    /// constructors their member initialisers (`: r(a), i(b)`).
    pub method: Option<Method>,
    pub qual: FuncQual,
    pub ret: TypeName,
    pub name: String,
    pub name_span: Span,
    pub params: Vec<ParamDecl>,
    pub body: Vec<Stmt>,
    pub span: Span,
    /// Names the body takes the address of (`&x`): a local of that name lives in memory.
    pub addressed: Vec<String>,
}

/// What makes a function a member of a struct. A member function or operator takes the object
/// as a first parameter named `this`, by reference; a constructor has none, and returns the
/// object it builds.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    pub of: Arc<StructDef>,
    /// The name as written: `magnitude2`, `operator*`, or the struct's name for a constructor.
    pub name: String,
    /// `Some` for a constructor: each member initialiser, its span and its arguments.
    pub ctor: Option<Vec<(String, Span, Vec<Expr>)>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    Function(FuncDef),
    /// A file-scope variable declaration: one item per declarator.
    Global(Decl),
    /// `typedef <supported type> NAME;`
    Typedef(TypeName),
}

/// One top-level thing a snippet defines, with the text the learner wrote for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub name: String,
    pub kind: ItemKind,
    pub span: Span,
}
