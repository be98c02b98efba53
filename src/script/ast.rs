//! The syntax tree of one session statement. Spans index into the statement's own text, so
//! messages can quote the learner's sub-expressions verbatim.

use crate::diag::{SourceId, Span};
use crate::finding::FindingKind;

/// One statement: `let`, a launch, a bare expression to show, or an `expect`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `let NAME = EXPR`, or a C declaration typed as host code (`int n = 1 << 20;`,
    /// `dim3 block(16, 16);`), whose value is converted to the declared type.
    Let {
        name: String,
        name_span: Span,
        value: Expr,
        declared: Option<Declared>,
    },
    /// `a[3] = 5`, `a[2:6] = 0`, `m[1, -1] += 1`: elements of a buffer get new values.
    Assign {
        target: Expr,
        value: Expr,
    },
    /// `coef = [0.25, 0.5]`: a `__constant__` or `__device__` variable of the module gets its
    /// values from the host, as `cudaMemcpyToSymbol` does. The parser cannot tell such a name
    /// from a buffer's: the session decides, and for any other name says that `let` is needed
    /// (`parser::needs_let`).
    SetSymbol {
        name: String,
        name_span: Span,
        /// The `=`, where the message that asks for `let` points.
        eq_span: Span,
        value: Expr,
    },
    Launch(Launch),
    Inspect(Expr),
    /// `print(a, b)`: each value shown as if typed alone.
    Print(Vec<Expr>),
    Expect(Expect),
    /// `exit`, `quit`, `exit()`, `quit()`: leave the prompt (the caller decides what that means).
    Quit,
    /// Host code that has nothing to do here (`cudaDeviceSynchronize();`): does nothing, and says
    /// why in `note`.
    Nothing {
        note: String,
    },
    /// `[let NAME =] cost K<<<...>>>(...)`: run the launch and bind what it would cost on the
    /// reference GPU as the record `NAME` (fields `NAME.time_us`, ...).
    Cost {
        name: Option<(String, Span)>,
        launch: Launch,
    },
}

/// The C type of a declaration typed at the prompt: what its value is converted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declared {
    /// `int`, `unsigned`, `long long`, `size_t`, ...: the value is truncated toward zero and must
    /// fit the type's range (that of `dtype`).
    Integer { c_name: &'static str, dtype: crate::dtype::DType },
    /// `float`, `double`: the value is a float, so `float x = 1;` then `x / 2` is 0.5.
    Float { c_name: &'static str },
    /// `bool`
    Bool,
    /// `auto`: as `let`.
    Auto,
    /// `dim3`: a launch size.
    Dim3,
}

/// `KERNEL<<<GRID, BLOCK[, SHARED_BYTES]>>>(ARGS)`, parsed but not checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: String,
    pub kernel_span: Span,
    /// A template kernel's arguments, `<16>` in `matrixMul<16><<<...>>>`: the span of the text
    /// between the angle brackets (the CUDA front end reads it).
    pub template_args: Option<Span>,
    pub grid: Dim,
    pub block: Dim,
    pub shared: Option<Expr>,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// A grid or block size: `n`, `(x, y)`, `(x, y, z)` or `dim3(...)`; one to three expressions.
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    pub exprs: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// `expect COND`
    Expr(Expr),
    /// `expect clean`: the last launch reported no findings.
    Clean,
    /// `expect finding race`: the last launch reported a finding of this kind.
    Finding(FindingKind, Span),
    /// `expect printed "Hello"`: the text appears in what the last launch printed.
    Printed { text: String, span: Span },
    /// `expect printed lines == 8`: how many lines the last launch printed.
    PrintedLines { op: BinOp, op_span: Span, count: Expr },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    /// Covers the whole expression, including the parentheses around it when it has them.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i128),
    Float(f64),
    Bool(bool),
    /// Text: a label in `print("label:", a)`, and nowhere else.
    Str(String),
    /// A buffer, scalar or dtype name (dtype names are only meaningful as constructor arguments).
    Name(String),
    /// `[1, 2, 3]`
    List(Vec<Expr>),
    /// `(rows, cols)`: two or more expressions in parentheses.
    Tuple(Vec<Expr>),
    Call {
        func: String,
        func_span: Span,
        args: Vec<Expr>,
        kwargs: Vec<Kwarg>,
    },
    /// `a[i]`, `a[i, j]`, `a[2:10]`, `a[::2]`
    Index {
        target: Box<Expr>,
        indices: Vec<Index>,
    },
    Unary {
        op: UnOp,
        op_span: Span,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        op_span: Span,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
}

/// `seed=3` in a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Kwarg {
    pub name: String,
    pub name_span: Span,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    At(Expr),
    Slice { start: Option<Box<Expr>>, stop: Option<Box<Expr>>, step: Option<Box<Expr>>, span: Span },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    /// `~`: bitwise not on integers, logical not on booleans.
    Invert,
    /// `not` and `!`
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Pow,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Add,
    Sub,
    Shl,
    Shr,
    BitAnd,
    BitXor,
    BitOr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `~=`: approximately equal (see `eval::approx_eq`).
    Approx,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Pow => "**",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::BitOr => "|",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Approx => "~=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Approx)
    }
}

impl Expr {
    /// The learner's text of this expression, sliced from the statement it was parsed from.
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.span.lo as usize..self.span.hi as usize).unwrap_or("?")
    }

    /// The expressions directly inside this one, in the order they are written (a call's
    /// arguments, then its keyword arguments' values; an index's target, then its indices).
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Str(_) | ExprKind::Name(_) => {
                Vec::new()
            }
            ExprKind::List(items) | ExprKind::Tuple(items) => items.iter().collect(),
            ExprKind::Call { args, kwargs, .. } => args.iter().chain(kwargs.iter().map(|k| &k.value)).collect(),
            ExprKind::Index { target, indices } => std::iter::once(&**target)
                .chain(indices.iter().flat_map(|i| match i {
                    Index::At(e) => vec![e],
                    Index::Slice { start, stop, step, .. } => {
                        [start, stop, step].into_iter().flatten().map(|b| &**b).collect()
                    }
                }))
                .collect(),
            ExprKind::Unary { operand, .. } => vec![&**operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![&**lhs, &**rhs],
        }
    }
}

impl Stmt {
    /// Give every span the source `id`: the tree of a line parsed once (to ask whether it is a
    /// launch) serves the input that runs it, whose source is only known then. Spans index into
    /// the statement's own text, so nothing else about them changes. The patterns name every
    /// field, so a span added to the tree is a compile error here until it is stamped too.
    pub fn set_source(&mut self, id: SourceId) {
        let Stmt { kind, span } = self;
        span.source = id;
        match kind {
            StmtKind::Let { name: _, name_span, value, declared: _ } => {
                name_span.source = id;
                value.set_source(id);
            }
            StmtKind::Assign { target, value } => {
                target.set_source(id);
                value.set_source(id);
            }
            StmtKind::SetSymbol { name: _, name_span, eq_span, value } => {
                name_span.source = id;
                eq_span.source = id;
                value.set_source(id);
            }
            StmtKind::Launch(launch) => launch.set_source(id),
            StmtKind::Inspect(e) => e.set_source(id),
            StmtKind::Print(items) => items.iter_mut().for_each(|e| e.set_source(id)),
            StmtKind::Expect(expect) => match expect {
                Expect::Expr(e) => e.set_source(id),
                Expect::Clean => {}
                Expect::Finding(_, span) => span.source = id,
                Expect::Printed { text: _, span } => span.source = id,
                Expect::PrintedLines { op: _, op_span, count } => {
                    op_span.source = id;
                    count.set_source(id);
                }
            },
            StmtKind::Quit | StmtKind::Nothing { .. } => {}
            StmtKind::Cost { name, launch } => {
                if let Some((_, span)) = name {
                    span.source = id;
                }
                launch.set_source(id);
            }
        }
    }
}

impl Launch {
    fn set_source(&mut self, id: SourceId) {
        let Launch { kernel: _, kernel_span, template_args, grid, block, shared, args, span } = self;
        kernel_span.source = id;
        span.source = id;
        if let Some(t) = template_args {
            t.source = id;
        }
        for dim in [grid, block] {
            let Dim { exprs, span } = dim;
            span.source = id;
            exprs.iter_mut().for_each(|e| e.set_source(id));
        }
        shared.iter_mut().chain(args.iter_mut()).for_each(|e| e.set_source(id));
    }
}

impl Expr {
    fn set_source(&mut self, id: SourceId) {
        let Expr { kind, span } = self;
        span.source = id;
        match kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Str(_) | ExprKind::Name(_) => {}
            ExprKind::List(items) | ExprKind::Tuple(items) => items.iter_mut().for_each(|e| e.set_source(id)),
            ExprKind::Call { func: _, func_span, args, kwargs } => {
                func_span.source = id;
                args.iter_mut().for_each(|e| e.set_source(id));
                for Kwarg { name: _, name_span, value } in kwargs {
                    name_span.source = id;
                    value.set_source(id);
                }
            }
            ExprKind::Index { target, indices } => {
                target.set_source(id);
                for index in indices {
                    match index {
                        Index::At(e) => e.set_source(id),
                        Index::Slice { start, stop, step, span } => {
                            span.source = id;
                            [start, stop, step].into_iter().flatten().for_each(|e| e.set_source(id));
                        }
                    }
                }
            }
            ExprKind::Unary { op: _, op_span, operand } => {
                op_span.source = id;
                operand.set_source(id);
            }
            ExprKind::Binary { op: _, op_span, lhs, rhs } => {
                op_span.source = id;
                lhs.set_source(id);
                rhs.set_source(id);
            }
        }
    }
}
