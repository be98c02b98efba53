//! A recursive-descent parser for one statement, with Python's operator precedence:
//! `or` < `and` < `not` < comparisons < `|` < `^` < `&` < shifts < `+ -` < `* / // %` < unary
//! `- + ~` < `**` < calls and indexing. `&&`, `||` and `!` are synonyms of `and`, `or`, `not`
//! (with their precedence, not C's). Comparisons don't chain: `0 <= i < n` is an error that
//! suggests `0 <= i and i < n`.

use crate::diag::{Diagnostic, SourceId, Span};
use crate::finding::FindingKind;

use super::ast::{BinOp, Declared, Dim, Expect, Expr, ExprKind, Index, Kwarg, Launch, Stmt, StmtKind, UnOp};
use super::habits;
use super::lexer::{Tok, Token, lex};

/// `, i32` for a buffer of the declared type, for messages.
fn dtype_suffix(d: Declared) -> String {
    match d {
        Declared::Integer { dtype, .. } => format!(", {dtype}"),
        Declared::Float { c_name: "double" } => ", f64".into(),
        _ => String::new(),
    }
}

/// `x = 5` for a name that is no `__constant__`/`__device__` variable: names get their values
/// with `let`. `eq_span` is the `=` in `text`, the whole statement.
pub fn needs_let(text: &str, name: &str, eq_span: Span) -> Diagnostic {
    let end = text.trim_end().len();
    let value = text.get(eq_span.hi as usize..end).unwrap_or("").trim().trim_end_matches(';').trim_end();
    let value = if value.is_empty() { "..." } else { value };
    // NumPy's or Numba's names in the value as well: say both at once.
    let (value, help) = match habits::plain_value(value) {
        Some(plain) => (plain.clone(), format!("gridlab's functions need no module: `{value}` is `{plain}` here")),
        None => (value.to_string(), format!("to compare, use `==`; to change a buffer's elements, `{name}[i] = ...`")),
    };
    Diagnostic::error(format!("a name gets its value with `let`: write `let {name} = {value}`"))
        .at(eq_span)
        .label("assignment needs `let`")
        .help(help)
}

/// Nesting deeper than this (parentheses, calls, unary operators, `**`) is refused rather than
/// risking the stack.
pub const MAX_DEPTH: usize = 200;
/// A flat chain like `1 + 2 + 3 + ...` nests only one level for a reader, but the tree it makes
/// is as deep as it is long, and evaluation walks it recursively: so the links of a chain count
/// towards this larger limit on the tree's depth, with a message about length, not nesting.
pub const MAX_TREE_DEPTH: usize = 1000;

/// Parse one statement (not CUDA, not a `:command`). A trailing `;` is allowed.
pub fn parse_statement(source: SourceId, text: &str) -> Result<Stmt, Diagnostic> {
    if let Some(host) = habits::host_statement(source, text) {
        return host;
    }
    let toks = lex(source, text)?;
    let mut p = Parser { toks, pos: 0, source, end: text.trim_end().len(), depth: 0, tree: 0, text };
    let stmt = p.statement()?;
    if p.eat(";") {
        // tolerated, as in C
    }
    if let Some(t) = p.peek() {
        let span = t.span;
        return Err(Diagnostic::error(format!("unexpected {} after the statement", describe(&t.tok)))
            .at(span)
            .label("expected the end of the line")
            .help("write one statement per line"));
    }
    Ok(stmt)
}

struct Parser<'t> {
    toks: Vec<Token>,
    pos: usize,
    source: SourceId,
    end: usize,
    depth: usize,
    /// The depth of the tree being built: nesting plus the links of operator chains.
    tree: usize,
    /// The statement, for messages that quote the learner's own text.
    text: &'t str,
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Int(v) => format!("number `{v}`"),
        Tok::Float(v) => format!("number `{v}`"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Str(s) => format!("string {s:?}"),
    }
}

const KEYWORDS: [&str; 7] = ["let", "expect", "and", "or", "not", "true", "false"];

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn is_punct(&self, p: &str) -> bool {
        // The first byte first: most tokens an expression's levels ask about differ there.
        matches!(self.peek(), Some(Token { tok: Tok::Punct(q), .. }) if q.as_bytes().first() == p.as_bytes().first() && *q == p)
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(q), .. }) if q == s)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        self.pos += 1;
        t
    }

    fn prev_span(&self) -> Span {
        self.toks.get(self.pos.wrapping_sub(1)).map_or(Span::new(self.source, 0, 0), |t| t.span)
    }

    /// The span of the next token, or an empty span at the end of the text.
    fn here(&self) -> Span {
        self.peek().map_or(Span::new(self.source, self.end, self.end), |t| t.span)
    }

    fn error_here(&self, what: &str) -> Diagnostic {
        let found = self.peek().map_or("the end of the line".to_string(), |t| describe(&t.tok));
        Diagnostic::error(format!("expected {what}, found {found}")).at(self.here())
    }

    fn expect_punct(&mut self, p: &str, what: &str, help: &str) -> Result<Span, Diagnostic> {
        if self.eat(p) { Ok(self.prev_span()) } else { Err(self.error_here(what).help(help)) }
    }

    fn statement(&mut self) -> Result<Stmt, Diagnostic> {
        let Some(first) = self.peek().cloned() else {
            return Err(Diagnostic::error("empty statement")
                .at(self.here())
                .help("write `let a = zeros(1024)`, a launch, `expect ...` or an expression"));
        };
        match &first.tok {
            Tok::Ident(kw) if kw == "let" => {
                self.pos += 1;
                let (name, name_span) = match self.peek() {
                    Some(Token { tok: Tok::Ident(n), span }) if !KEYWORDS.contains(&n.as_str()) => (n.clone(), *span),
                    _ => {
                        return Err(self
                            .error_here("a name after `let`")
                            .label("expected a name")
                            .help("write `let NAME = EXPR`, e.g. `let a = zeros(1024)`"));
                    }
                };
                self.pos += 1;
                if self.is_punct("==") {
                    return Err(self.error_here("`=`").help("`let` binds with a single `=`: `let n = 1024`"));
                }
                self.expect_punct("=", "`=` after the name", &format!("write `let {name} = EXPR`"))?;
                if let Some(launch) = self.cost_launch()? {
                    let span = first.span.to(launch.span);
                    return Ok(Stmt { kind: StmtKind::Cost { name: Some((name, name_span)), launch }, span });
                }
                let value = self.expr()?;
                let span = first.span.to(value.span);
                Ok(Stmt { kind: StmtKind::Let { name, name_span, value, declared: None }, span })
            }
            Tok::Ident(kw) if kw == "expect" => {
                self.pos += 1;
                let expect = if self.is_ident("clean") && self.peek_at(1).is_none_or(|t| *t == Tok::Punct(";")) {
                    self.pos += 1;
                    Expect::Clean
                } else if self.is_ident("finding") && matches!(self.peek_at(1), Some(Tok::Ident(_))) {
                    self.pos += 1;
                    let t = self.bump();
                    let Tok::Ident(name) = &t.tok else { unreachable!("checked above") };
                    let Some(kind) = FindingKind::parse(name) else {
                        let names: Vec<_> = FindingKind::ALL.iter().map(|k| format!("`{}`", k.name())).collect();
                        return Err(Diagnostic::error(format!("unknown finding `{name}`"))
                            .at(t.span)
                            .label("not a kind of finding")
                            .help(format!("the kinds are {}", names.join(", "))));
                    };
                    Expect::Finding(kind, t.span)
                } else if self.is_ident("printed")
                    && matches!(self.peek_at(1), Some(Tok::Str(_)) | Some(Tok::Ident(_)) | None)
                {
                    self.printed()?
                } else if self.peek().is_none() {
                    return Err(self
                        .error_here("a condition after `expect`")
                        .help("e.g. `expect all(a == 0.5)`, `expect clean` or `expect finding race`"));
                } else {
                    Expect::Expr(self.expr()?)
                };
                Ok(Stmt { kind: StmtKind::Expect(expect), span: first.span.to(self.prev_span()) })
            }
            Tok::Ident(kw) if kw == "cost" && matches!(self.peek_at(1), Some(Tok::Ident(_))) => {
                let Some(launch) = self.cost_launch()? else { unreachable!("`cost` then a name") };
                Ok(Stmt { span: first.span.to(launch.span), kind: StmtKind::Cost { name: None, launch } })
            }
            Tok::Ident(name) if self.peek_at(1) == Some(&Tok::Punct("<<<")) => {
                let launch = self.launch(name.clone(), first.span, None)?;
                Ok(Stmt { span: launch.span, kind: StmtKind::Launch(launch) })
            }
            Tok::Ident(name) if let Some(close) = self.template_launch() => {
                let args = self.toks[self.pos + 1].span.to(self.toks[close].span);
                let args = Span { lo: args.lo + 1, hi: args.hi - 1, ..args };
                self.pos = close;
                let launch = self.launch(name.clone(), first.span, Some(args))?;
                Ok(Stmt { span: launch.span, kind: StmtKind::Launch(launch) })
            }
            Tok::Ident(name) if self.peek_at(1) == Some(&Tok::Punct("=")) => {
                let eq_span = self.toks[self.pos + 1].span;
                self.pos += 2;
                // A value that does not parse is no `__constant__`'s: ask for `let`, as for any
                // name (the session asks the same when the name is no module variable).
                let value = match self.expr() {
                    Ok(v) if self.peek().is_none_or(|t| t.tok == Tok::Punct(";")) => v,
                    _ => return Err(needs_let(self.text, name, eq_span)),
                };
                Ok(Stmt {
                    span: first.span.to(value.span),
                    kind: StmtKind::SetSymbol { name: name.clone(), name_span: first.span, eq_span, value },
                })
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "exit" | "quit")
                    && (self.peek_at(1).is_none_or(|t| *t == Tok::Punct(";"))
                        || (self.peek_at(1) == Some(&Tok::Punct("("))
                            && self.peek_at(2) == Some(&Tok::Punct(")"))
                            && self.peek_at(3).is_none_or(|t| *t == Tok::Punct(";")))) =>
            {
                self.pos += if self.peek_at(1) == Some(&Tok::Punct("(")) { 3 } else { 1 };
                Ok(Stmt { kind: StmtKind::Quit, span: first.span.to(self.prev_span()) })
            }
            Tok::Ident(word) if word == "print" && self.peek_at(1) == Some(&Tok::Punct("(")) => {
                self.pos += 2;
                let mut args = Vec::new();
                // Labels as Python prints them: `print('Updated array:', a)`.
                loop {
                    if self.eat(")") {
                        break;
                    }
                    match self.peek().cloned() {
                        Some(Token { tok: Tok::Str(s), span })
                            if matches!(self.peek_at(1), Some(Tok::Punct(",")) | Some(Tok::Punct(")"))) =>
                        {
                            self.pos += 1;
                            args.push(Expr { kind: ExprKind::Str(s), span });
                        }
                        _ => args.push(self.expr()?),
                    }
                    if !self.eat(",") {
                        self.expect_punct(")", "`,` or `)`", "a value to show was expected here")?;
                        break;
                    }
                }
                if args.is_empty() {
                    return Err(Diagnostic::error("`print()` with nothing to show")
                        .at(first.span.to(self.prev_span()))
                        .help("write `print(a)`, or just `a`"));
                }
                Ok(Stmt { kind: StmtKind::Print(args), span: first.span.to(self.prev_span()) })
            }
            Tok::Ident(word) if habits::C_TYPE_WORDS.contains(&word.as_str()) && self.declaration_ahead() => {
                self.declaration()
            }
            _ => {
                let e = self.expr()?;
                if let Some(op) = self.assignment_op() {
                    return self.assignment(e, op);
                }
                if self.is_punct("(")
                    && let ExprKind::Index { target, indices } = &e.kind
                    && let ExprKind::Name(kernel) = &target.kind
                {
                    // Numba's launch, `kernel[blocks, threads](args)` or
                    // `kernel[blocks, threads, stream, shared_bytes](args)`.
                    let launch = self.numba_launch(kernel.clone(), target.span, indices, e.span)?;
                    return Ok(Stmt { span: launch.span, kind: StmtKind::Launch(launch) });
                }
                Ok(Stmt { span: e.span, kind: StmtKind::Inspect(e) })
            }
        }
    }

    /// After `expect printed`: `"TEXT"`, or `lines OP COUNT`.
    fn printed(&mut self) -> Result<Expect, Diagnostic> {
        self.pos += 1;
        let help = "write `expect printed \"Hello\"` (the text appears in what the last launch printed) or `expect printed lines == 8`";
        match self.peek().cloned() {
            Some(Token { tok: Tok::Str(text), span }) => {
                self.pos += 1;
                if text.is_empty() {
                    return Err(Diagnostic::error("`expect printed \"\"` checks nothing")
                        .at(span)
                        .help("put the text the kernel prints between the quotes"));
                }
                Ok(Expect::Printed { text, span })
            }
            Some(Token { tok: Tok::Ident(w), .. }) if w == "lines" => {
                self.pos += 1;
                let Some(op) = self.comparison_op().filter(|op| *op != BinOp::Approx) else {
                    return Err(self.error_here("`==`, `<`, `>`, ... after `lines`").help(help));
                };
                let op_span = self.bump().span;
                let count = self.bin_level(0)?;
                Ok(Expect::PrintedLines { op, op_span, count })
            }
            _ => Err(self.error_here("a string or `lines` after `expect printed`").help(help)),
        }
    }

    /// After an expression: `=`, or a compound assignment (`+=`, `-=`, `*=`, `/=`), as the
    /// operator it applies (`None` inside for plain `=`).
    fn assignment_op(&self) -> Option<Option<BinOp>> {
        let Some(Token { tok: Tok::Punct(p), .. }) = self.peek() else { return None };
        Some(match *p {
            "=" => None,
            "+=" => Some(BinOp::Add),
            "-=" => Some(BinOp::Sub),
            "*=" => Some(BinOp::Mul),
            "/=" => Some(BinOp::Div),
            _ => return None,
        })
    }

    /// `TARGET = VALUE` or `TARGET op= VALUE` (as `TARGET = TARGET op VALUE`): only a buffer's
    /// elements can be assigned; a name gets its value from `let`.
    fn assignment(&mut self, target: Expr, op: Option<BinOp>) -> Result<Stmt, Diagnostic> {
        let op_tok = self.bump();
        if let ExprKind::Name(name) = &target.kind {
            let value = self.text.get(self.here().lo as usize..self.end).unwrap_or("...").trim_end_matches(';').trim();
            let (message, help) = match op {
                Some(op) => (
                    format!(
                        "`{}` needs `let` here: write `let {name} = {name} {} {value}`",
                        self.text_of(op_tok.span),
                        op.symbol()
                    ),
                    format!(
                        "for a buffer, `{name}[:] {} {value}` changes every element in place",
                        self.text_of(op_tok.span)
                    ),
                ),
                None => (
                    format!("a name gets its value with `let`: write `let {name} = {value}`"),
                    "to compare, use `==`".to_string(),
                ),
            };
            return Err(Diagnostic::error(message).at(op_tok.span).label("assignment needs `let`").help(help));
        }
        if !matches!(target.kind, ExprKind::Index { .. }) {
            return Err(Diagnostic::error("only a buffer's elements can be assigned")
                .at(target.span)
                .help("write `a[3] = 5`, `a[2:6] = 0` or `a[a < 0] = 0`; a name gets a new value with `let`"));
        }
        let rhs = self.expr()?;
        let span = target.span.to(rhs.span);
        let value = match op {
            Some(op) => Self::binary(op, op_tok.span, target.clone(), rhs),
            None => rhs,
        };
        Ok(Stmt { kind: StmtKind::Assign { target, value }, span })
    }

    fn text_of(&self, span: Span) -> &str {
        self.text.get(span.lo as usize..span.hi as usize).unwrap_or("?")
    }

    /// At a C type word: whether a declaration follows (more type words, then a name or `*`),
    /// rather than an expression such as `int(x)`.
    fn declaration_ahead(&self) -> bool {
        let mut k = 0;
        while let Some(Tok::Ident(w)) = self.peek_at(k) {
            if !habits::C_TYPE_WORDS.contains(&w.as_str()) {
                return !KEYWORDS.contains(&w.as_str()) && k > 0;
            }
            k += 1;
        }
        k > 0 && self.peek_at(k) == Some(&Tok::Punct("*"))
    }

    /// A C declaration typed at the prompt: `int n = 1 << 20;`, `float s = 2.5f;`,
    /// `dim3 block(16, 16);`, `float x[N];`. Pointers and host functions get a message that says
    /// what to write instead.
    fn declaration(&mut self) -> Result<Stmt, Diagnostic> {
        let start = self.here();
        let mut words = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek_at(0) {
            if !habits::C_TYPE_WORDS.contains(&w.as_str()) {
                break;
            }
            words.push(w.clone());
            self.pos += 1;
        }
        let type_span = start.to(self.prev_span());
        let ty = words.join(" ");
        let word_refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let declared = habits::c_type(&word_refs);
        if self.is_punct("*") {
            while self.eat("*") {}
            let name = match self.peek() {
                Some(Token { tok: Tok::Ident(n), .. }) => n.clone(),
                _ => "d_x".to_string(),
            };
            let dtype = match declared {
                Some(Declared::Integer { dtype, .. }) => format!(", {dtype}"),
                Some(Declared::Float { c_name: "double" }) => ", f64".to_string(),
                _ => String::new(),
            };
            return Err(Diagnostic::error(format!("no pointers at the prompt: write `let {name} = zeros(N{dtype})`"))
                .at(start.to(self.here()))
                .help(format!("a buffer is made with its length; kernels take it where they take a `{ty} *`")));
        }
        let Some(Token { tok: Tok::Ident(name), span: name_span }) = self.peek().cloned() else {
            return Err(self.error_here("a name after the type"));
        };
        self.pos += 1;
        let Some(declared) = declared else {
            return Err(Diagnostic::error(format!("gridlab has no `{ty}` values")).at(type_span).help(format!(
                "declare `{name}` as `int`, `long long`, `float`, `double` or `dim3`, or write `let {name} = ...`"
            )));
        };
        if self.is_punct("(") && declared != Declared::Dim3 {
            return Err(Diagnostic::error(format!("`{name}` looks like a host function"))
                .at(name_span)
                .help("gridlab is the host program: type a function's statements at the prompt one by one; CUDA functions start with `__global__` or `__device__`"));
        }
        if self.is_punct("[") {
            return self.array_declaration(declared, &ty, type_span, name, name_span);
        }
        let value = if self.is_punct("(") || self.is_punct("{") {
            // `dim3 block(16, 16);` and `dim3 block{16, 16};`
            let open = self.bump();
            let close = if open.tok == Tok::Punct("(") { ")" } else { "}" };
            let args = self.comma_list(close, "a size")?;
            let span = open.span.to(self.prev_span());
            Expr { kind: ExprKind::Call { func: "dim3".into(), func_span: type_span, args, kwargs: Vec::new() }, span }
        } else if self.eat("=") {
            if self.is_punct("{") {
                return Err(Diagnostic::error("a brace list makes an array in C")
                    .at(self.here())
                    .help(format!("for a buffer, write `let {name} = array([1, 2, 3]{})`", dtype_suffix(declared))));
            }
            self.expr()?
        } else if declared == Declared::Dim3 {
            // `dim3 block;` is (1, 1, 1), as in CUDA.
            Expr {
                kind: ExprKind::Call {
                    func: "dim3".into(),
                    func_span: type_span,
                    args: Vec::new(),
                    kwargs: Vec::new(),
                },
                span: name_span,
            }
        } else if self.is_punct(",") {
            return Err(Diagnostic::error("one name per declaration at the prompt")
                .at(self.here())
                .help(format!("declare each on its own line: `{ty} {name} = ...;`")));
        } else {
            return Err(Diagnostic::error(format!("`{name}` needs a value"))
                .at(name_span)
                .label("declared without one")
                .help(format!("gridlab has no uninitialised variables: `{ty} {name} = 0;`")));
        };
        let span = start.to(value.span);
        Ok(Stmt { kind: StmtKind::Let { name, name_span, value, declared: Some(declared) }, span })
    }

    /// `float x[N];` (zeros) or `float A[N][M];`: a buffer of the declared type.
    fn array_declaration(
        &mut self,
        declared: Declared,
        ty: &str,
        type_span: Span,
        name: String,
        name_span: Span,
    ) -> Result<Stmt, Diagnostic> {
        let dtype = match declared {
            Declared::Integer { dtype, .. } => dtype,
            Declared::Float { c_name: "float" } => crate::dtype::DType::F32,
            Declared::Float { .. } => crate::dtype::DType::F64,
            _ => {
                return Err(Diagnostic::error(format!("gridlab has no buffers of `{ty}`"))
                    .at(type_span)
                    .help("buffers hold float, double, int, unsigned, long long or unsigned long long"));
            }
        };
        let mut dims = Vec::new();
        while self.eat("[") {
            if self.is_punct("]") {
                return Err(Diagnostic::error("give the array its length")
                    .at(self.here())
                    .help(format!("write `let {name} = array([1, 2, 3], {dtype})` for a buffer with these values")));
            }
            dims.push(self.expr()?);
            self.expect_punct("]", "`]`", "an array's length looks like `x[N]`")?;
        }
        if self.is_punct("=") {
            return Err(Diagnostic::error("no C array initialisers at the prompt")
                .at(self.here())
                .help(format!("write `let {name} = array([1, 2, 3], {dtype})`, or `{ty} {name}[N];` for zeros")));
        }
        let shape = match dims.len() {
            1 => dims.remove(0),
            2 => {
                let span = dims[0].span.to(dims[1].span);
                Expr { kind: ExprKind::Tuple(dims), span }
            }
            n => {
                return Err(Diagnostic::error(format!("buffers have 1 or 2 dimensions, not {n}"))
                    .at(name_span)
                    .help("a 3-D array is a 1-D buffer indexed `(z * ny + y) * nx + x` in the kernel"));
            }
        };
        let span = type_span.to(self.prev_span());
        let args = vec![shape, habits::name_expr(dtype.name(), type_span)];
        let value = Expr {
            kind: ExprKind::Call { func: "zeros".into(), func_span: type_span, args, kwargs: Vec::new() },
            span,
        };
        Ok(Stmt { kind: StmtKind::Let { name, name_span, value, declared: None }, span })
    }

    /// After `cost`: the launch it measures; `None` (nothing consumed) when the next word is
    /// not `cost` followed by a name.
    fn cost_launch(&mut self) -> Result<Option<Launch>, Diagnostic> {
        if !self.is_ident("cost") || !matches!(self.peek_at(1), Some(Tok::Ident(_))) {
            return Ok(None);
        }
        self.pos += 1;
        let first = self.peek().cloned().expect("checked above");
        let Tok::Ident(name) = &first.tok else { unreachable!("checked above") };
        if self.peek_at(1) == Some(&Tok::Punct("<<<")) {
            return self.launch(name.clone(), first.span, None).map(Some);
        }
        if let Some(close) = self.template_launch() {
            let args = self.toks[self.pos + 1].span.to(self.toks[close].span);
            let args = Span { lo: args.lo + 1, hi: args.hi - 1, ..args };
            self.pos = close;
            return self.launch(name.clone(), first.span, Some(args)).map(Some);
        }
        if self.peek_at(1) == Some(&Tok::Punct("[")) {
            // Numba's launch, `cost kernel[blocks, threads](args)`.
            let e = self.expr()?;
            if self.is_punct("(")
                && let ExprKind::Index { target, indices } = &e.kind
                && let ExprKind::Name(kernel) = &target.kind
            {
                return self.numba_launch(kernel.clone(), target.span, indices, e.span).map(Some);
            }
        }
        Err(Diagnostic::error("`cost` measures a launch").at(first.span).label("expected a launch here").help(format!(
            "write `cost {name}<<<grid, block>>>(args)`, e.g. `let c = cost {name}<<<4, 256>>>(a, len(a))`"
        )))
    }

    /// For `k<ARGS><<<`, the index of the `>` before `<<<`: a template kernel's launch.
    fn template_launch(&self) -> Option<usize> {
        if self.peek_at(1) != Some(&Tok::Punct("<")) {
            return None;
        }
        let mut i = self.pos + 2;
        while let Some(t) = self.toks.get(i) {
            match &t.tok {
                // `k<float, Max<float>><<<`: the last `>` of a `>>` closes the arguments.
                Tok::Punct(">" | ">>") if self.toks.get(i + 1).is_some_and(|n| n.tok == Tok::Punct("<<<")) => {
                    return Some(i);
                }
                Tok::Punct("<<<") | Tok::Punct(">>>") => return None,
                _ => i += 1,
            }
        }
        None
    }

    fn launch(&mut self, kernel: String, kernel_span: Span, template_args: Option<Span>) -> Result<Launch, Diagnostic> {
        self.pos += 2; // name and `<<<`
        let open = self.prev_span();
        let config_help =
            "a launch looks like `k<<<blocks, threads>>>(args)` or `k<<<grid, block, shared_bytes>>>(args)`";
        let grid = self.dim()?;
        if !self.eat(",") {
            return Err(self.error_here("`,` and the block size").help(config_help));
        }
        let block = self.dim()?;
        let shared = if self.eat(",") { Some(self.expr()?) } else { None };
        if !self.eat(">>>") {
            let d = self.error_here("`>>>`").help(config_help);
            return Err(if self.peek().is_none() { d.note(format!("`<<<` opened at byte {}", open.lo)) } else { d });
        }
        if !self.eat("(") {
            let help = format!("pass the kernel's arguments in parentheses: `{kernel}<<<grid, block>>>(a, n)`");
            return Err(self.error_here("`(` and the kernel's arguments").help(help));
        }
        let args = self.comma_list(")", "an argument or `)`")?;
        let span = kernel_span.to(self.prev_span());
        Ok(Launch { kernel, kernel_span, template_args, grid, block, shared, args, span })
    }

    /// After `kernel[...]`, at its `(`: the configuration in the brackets and the arguments.
    fn numba_launch(
        &mut self,
        kernel: String,
        kernel_span: Span,
        indices: &[Index],
        config: Span,
    ) -> Result<Launch, Diagnostic> {
        let help = "a Numba launch is `kernel[blocks, threads](args)` or `kernel[blocks, threads, stream, shared_bytes](args)`";
        let mut exprs = Vec::new();
        for i in indices {
            match i {
                Index::At(e) => exprs.push(e.clone()),
                Index::Slice { span, .. } => {
                    return Err(Diagnostic::error("a launch's configuration has no slices").at(*span).help(help));
                }
            }
        }
        if !(2..=4).contains(&exprs.len()) {
            return Err(Diagnostic::error(format!(
                "a launch gives blocks and threads (and optionally a stream and shared bytes), not {} value{}",
                exprs.len(),
                if exprs.len() == 1 { "" } else { "s" }
            ))
            .at(config)
            .help(help));
        }
        let dim = |e: Expr| -> Result<Dim, Diagnostic> {
            let span = e.span;
            let exprs = match e.kind {
                ExprKind::Tuple(items) | ExprKind::List(items) => items,
                kind => vec![Expr { kind, span }],
            };
            if exprs.is_empty() || exprs.len() > 3 {
                return Err(Diagnostic::error(format!("a grid or block has 1 to 3 dimensions, not {}", exprs.len()))
                    .at(span)
                    .help("write `n`, `(x, y)` or `(x, y, z)`"));
            }
            Ok(Dim { exprs, span })
        };
        let mut it = exprs.into_iter();
        let grid = dim(it.next().expect("two or more"))?;
        let block = dim(it.next().expect("two or more"))?;
        // The stream orders launches on a GPU; gridlab runs them in order anyway.
        let _stream = it.next();
        let shared = it.next();
        self.expect_punct("(", "`(` and the kernel's arguments", help)?;
        let args = self.comma_list(")", "an argument or `)`")?;
        let span = kernel_span.to(self.prev_span());
        Ok(Launch { kernel, kernel_span, template_args: None, grid, block, shared, args, span })
    }

    fn dim(&mut self) -> Result<Dim, Diagnostic> {
        let e = self.expr()?;
        let span = e.span;
        let exprs = match e.kind {
            ExprKind::Tuple(items) => items,
            ExprKind::Call { func, args, kwargs, .. } if func == "dim3" && kwargs.is_empty() => args,
            kind => vec![Expr { kind, span }],
        };
        if exprs.is_empty() || exprs.len() > 3 {
            return Err(Diagnostic::error(format!("a grid or block has 1 to 3 dimensions, not {}", exprs.len()))
                .at(span)
                .help("write `n`, `(x, y)`, `(x, y, z)` or `dim3(x, y, z)`"));
        }
        Ok(Dim { exprs, span })
    }

    /// Items separated by commas up to `close` (consumed); a trailing comma is allowed.
    fn comma_list(&mut self, close: &str, what: &str) -> Result<Vec<Expr>, Diagnostic> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.expr()?);
            if !self.eat(",") {
                if self.eat(close) {
                    return Ok(items);
                }
                return Err(self.error_here(&format!("`,` or `{close}`")).help(format!("{what} was expected here")));
            }
        }
    }

    pub fn expr(&mut self) -> Result<Expr, Diagnostic> {
        self.enter(self.here())?;
        let e = self.or_expr();
        self.leave();
        e
    }

    /// One more level of nesting (parentheses, an argument, a unary operator, an exponent).
    fn enter(&mut self, at: Span) -> Result<(), Diagnostic> {
        self.depth += 1;
        self.tree += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::error("expression nested too deeply")
                .at(at)
                .label(format!("more than {MAX_DEPTH} levels of nesting"))
                .help("split it with `let`"));
        }
        self.tree_limit(at)
    }

    fn leave(&mut self) {
        self.depth -= 1;
        self.tree -= 1;
    }

    /// One more link in a chain of operators (`+ x`): it deepens the tree only.
    fn enter_chain(&mut self, at: Span) -> Result<(), Diagnostic> {
        self.tree += 1;
        self.tree_limit(at)
    }

    fn tree_limit(&self, at: Span) -> Result<(), Diagnostic> {
        if self.tree > MAX_TREE_DEPTH {
            return Err(Diagnostic::error("this expression is too long")
                .at(at)
                .label(format!("more than {MAX_TREE_DEPTH} operators in one chain"))
                .help("add it up in parts with `let`, e.g. `let s1 = ...` then `let s = s1 + ...`"));
        }
        Ok(())
    }

    /// Run `f` as a chain of operators whose links [`Self::enter_chain`] counted, then forget them.
    fn chain<T>(&mut self, f: impl FnOnce(&mut Self, &mut usize) -> Result<T, Diagnostic>) -> Result<T, Diagnostic> {
        let mut links = 0;
        let r = f(self, &mut links);
        self.tree -= links;
        r
    }

    fn binary(op: BinOp, op_span: Span, lhs: Expr, rhs: Expr) -> Expr {
        let span = lhs.span.to(rhs.span);
        Expr { kind: ExprKind::Binary { op, op_span, lhs: Box::new(lhs), rhs: Box::new(rhs) }, span }
    }

    fn or_expr(&mut self) -> Result<Expr, Diagnostic> {
        self.chain(|p, links| {
            let mut lhs = p.and_expr()?;
            while p.is_ident("or") || p.is_punct("||") {
                let op_span = p.bump().span;
                p.enter_chain(op_span)?;
                *links += 1;
                let rhs = p.and_expr()?;
                lhs = Self::binary(BinOp::Or, op_span, lhs, rhs);
            }
            Ok(lhs)
        })
    }

    fn and_expr(&mut self) -> Result<Expr, Diagnostic> {
        self.chain(|p, links| {
            let mut lhs = p.not_expr()?;
            while p.is_ident("and") || p.is_punct("&&") {
                let op_span = p.bump().span;
                p.enter_chain(op_span)?;
                *links += 1;
                let rhs = p.not_expr()?;
                lhs = Self::binary(BinOp::And, op_span, lhs, rhs);
            }
            Ok(lhs)
        })
    }

    fn not_expr(&mut self) -> Result<Expr, Diagnostic> {
        if self.is_ident("not") || self.is_punct("!") {
            let op_span = self.bump().span;
            self.enter(op_span)?;
            let operand = self.not_expr();
            self.leave();
            let operand = operand?;
            let span = op_span.to(operand.span);
            return Ok(Expr { kind: ExprKind::Unary { op: UnOp::Not, op_span, operand: Box::new(operand) }, span });
        }
        self.comparison()
    }

    fn comparison_op(&self) -> Option<BinOp> {
        let Some(Token { tok: Tok::Punct(p), .. }) = self.peek() else { return None };
        Some(match *p {
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "~=" => BinOp::Approx,
            _ => return None,
        })
    }

    fn comparison(&mut self) -> Result<Expr, Diagnostic> {
        let lhs = self.bin_level(0)?;
        let Some(op) = self.comparison_op() else { return Ok(lhs) };
        let op_span = self.bump().span;
        let rhs = self.bin_level(0)?;
        if let Some(op2) = self.comparison_op() {
            return Err(Diagnostic::error("comparisons don't chain here")
                .at(self.here())
                .label("second comparison")
                .help(format!("join two comparisons with `and`: `x {} y and y {} z`", op.symbol(), op2.symbol())));
        }
        Ok(Self::binary(op, op_span, lhs, rhs))
    }

    /// Left-associative binary levels from `|` (0) to `* / // %` (5).
    fn bin_level(&mut self, level: usize) -> Result<Expr, Diagnostic> {
        const LEVELS: [&[(&str, BinOp)]; 6] = [
            &[("|", BinOp::BitOr)],
            &[("^", BinOp::BitXor)],
            &[("&", BinOp::BitAnd)],
            &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("//", BinOp::FloorDiv), ("%", BinOp::Mod)],
        ];
        let next = |p: &mut Self| if level + 1 < LEVELS.len() { p.bin_level(level + 1) } else { p.unary() };
        self.chain(|p, links| {
            let mut lhs = next(p)?;
            loop {
                let Some(&(_, op)) = LEVELS[level].iter().find(|(s, _)| p.is_punct(s)) else { return Ok(lhs) };
                let op_span = p.bump().span;
                p.enter_chain(op_span)?;
                *links += 1;
                let rhs = next(p)?;
                lhs = Self::binary(op, op_span, lhs, rhs);
            }
        })
    }

    fn unary(&mut self) -> Result<Expr, Diagnostic> {
        let op = match self.peek() {
            Some(Token { tok: Tok::Punct("-"), .. }) => Some(UnOp::Neg),
            Some(Token { tok: Tok::Punct("+"), .. }) => Some(UnOp::Plus),
            Some(Token { tok: Tok::Punct("~"), .. }) => Some(UnOp::Invert),
            _ => None,
        };
        if let Some(op) = op {
            let op_span = self.bump().span;
            self.enter(op_span)?;
            let operand = self.unary();
            self.leave();
            let operand = operand?;
            let span = op_span.to(operand.span);
            return Ok(Expr { kind: ExprKind::Unary { op, op_span, operand: Box::new(operand) }, span });
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, Diagnostic> {
        let base = self.postfix()?;
        if self.is_punct("**") {
            let op_span = self.bump().span;
            // Right-associative, and the exponent may carry a sign: `2 ** -1`. A chain of
            // `**` nests to the right, so each exponent is a level of nesting.
            self.enter(op_span)?;
            let exp = self.unary();
            self.leave();
            return Ok(Self::binary(BinOp::Pow, op_span, base, exp?));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Expr, Diagnostic> {
        let mut e = self.atom()?;
        self.chain(|p, links| {
            while p.is_punct("[") {
                p.enter_chain(p.here())?;
                *links += 1;
                p.pos += 1;
                let mut indices = Vec::new();
                loop {
                    indices.push(p.index()?);
                    if p.eat(",") {
                        continue;
                    }
                    p.expect_punct("]", "`]`", "indices look like `a[i]`, `a[i, j]` or `a[start:stop:step]`")?;
                    break;
                }
                let span = e.span.to(p.prev_span());
                e = Expr { kind: ExprKind::Index { target: Box::new(e), indices }, span };
            }
            Ok(e)
        })
    }

    fn index(&mut self) -> Result<Index, Diagnostic> {
        let lo = self.here();
        let start = if self.is_punct(":") { None } else { Some(Box::new(self.expr()?)) };
        if !self.eat(":") {
            return match start {
                Some(e) => Ok(Index::At(*e)),
                None => Err(self.error_here("an index")),
            };
        }
        let bound = |p: &mut Self| -> Result<Option<Box<Expr>>, Diagnostic> {
            if p.is_punct(":") || p.is_punct(",") || p.is_punct("]") {
                Ok(None)
            } else {
                p.expr().map(|e| Some(Box::new(e)))
            }
        };
        let stop = bound(self)?;
        let step = if self.eat(":") { bound(self)? } else { None };
        Ok(Index::Slice { start, stop, step, span: lo.to(self.prev_span()) })
    }

    fn atom(&mut self) -> Result<Expr, Diagnostic> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_here("an expression"));
        };
        self.pos += 1;
        let span = t.span;
        // numpy's functions and dtypes that gridlab has are gridlab's: `np.zeros(4, np.float32)`
        // is `zeros(4, float32)`; others keep their dot, for the message that says what to write.
        let numpy_name = |name: &str| -> Option<String> {
            let (module, rest) = name.split_once('.')?;
            let known = super::builtins::find(rest).is_some() || crate::dtype::DType::parse(rest).is_some();
            (matches!(module, "np" | "numpy") && known).then(|| rest.to_string())
        };
        let tok = match t.tok {
            Tok::Ident(name) => Tok::Ident(numpy_name(&name).unwrap_or(name)),
            tok => tok,
        };
        let kind = match tok {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Float(v) => ExprKind::Float(v),
            // numpy's names are gridlab's: `np.zeros(4, np.float32)` is `zeros(4, float32)`.
            Tok::Ident(name) => match name.as_str() {
                "true" | "True" => ExprKind::Bool(true),
                "false" | "False" => ExprKind::Bool(false),
                "let" | "expect" | "and" | "or" | "not" => {
                    return Err(Diagnostic::error(format!("`{name}` can't be used here"))
                        .at(span)
                        .label("a keyword")
                        .help(match name.as_str() {
                            "let" | "expect" => "`let` and `expect` start a line",
                            _ => "`and`, `or` and `not` combine conditions, e.g. `a > 0 and b > 0`",
                        }));
                }
                "sizeof" if let Some(ty) = self.sizeof_type() => {
                    // `sizeof(unsigned int)`, `sizeof(float *)`: a C type of several tokens.
                    let (ty, ty_span) = ty;
                    let args = vec![Expr { kind: ExprKind::Name(ty), span: ty_span }];
                    let kind = ExprKind::Call { func: name, func_span: span, args, kwargs: Vec::new() };
                    return Ok(Expr { kind, span: span.to(self.prev_span()) });
                }
                _ if self.is_punct("(") => {
                    self.pos += 1;
                    return self.call(name, span);
                }
                _ => ExprKind::Name(name),
            },
            Tok::Punct("(") => {
                if self.eat(")") {
                    return Err(Diagnostic::error("empty parentheses")
                        .at(span.to(self.prev_span()))
                        .help("put an expression or a shape like `(rows, cols)` inside"));
                }
                let first = self.expr()?;
                if self.eat(")") {
                    return Ok(Expr { kind: first.kind, span: span.to(self.prev_span()) });
                }
                if !self.is_punct(",") {
                    return Err(self.error_here("`)`").help("every `(` needs a matching `)`"));
                }
                self.pos += 1;
                let mut items = vec![first];
                items.extend(self.comma_list(")", "an expression")?);
                ExprKind::Tuple(items)
            }
            Tok::Punct("[") => ExprKind::List(self.comma_list("]", "a list element")?),
            Tok::Str(_) => {
                return Err(Diagnostic::error("a string can't be used here")
                    .at(span)
                    .label("text")
                    .help("text is only for checking printf output: `expect printed \"Hello\"`; names and numbers need no quotes"));
            }
            tok => {
                self.pos -= 1;
                let d = self.error_here("an expression");
                return Err(match tok {
                    Tok::Punct("=") => d.help("to compare, use `==`"),
                    Tok::Punct("{") | Tok::Punct("}") => {
                        d.help("CUDA code starts with `__global__` or `__device__`; lists use `[ ]`")
                    }
                    _ => d,
                });
            }
        };
        Ok(Expr { kind, span: span.to(self.prev_span()) })
    }

    /// After `sizeof`: `(WORD WORD... [*...])` with two words or more, or a `*`, read as one C type
    /// (consumed); `None` (nothing consumed) otherwise, for an ordinary call.
    fn sizeof_type(&mut self) -> Option<(String, Span)> {
        if !self.is_punct("(") {
            return None;
        }
        let mut k = 1;
        let mut words = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek_at(k) {
            words.push(w.clone());
            k += 1;
        }
        let mut stars = 0;
        while self.peek_at(k) == Some(&Tok::Punct("*")) {
            stars += 1;
            k += 1;
        }
        if words.is_empty() || (words.len() < 2 && stars == 0) || self.peek_at(k) != Some(&Tok::Punct(")")) {
            return None;
        }
        let span = self.toks[self.pos + 1].span.to(self.toks[self.pos + k - 1].span);
        self.pos += k + 1;
        Some((format!("{}{}", words.join(" "), if stars > 0 { " *" } else { "" }), span))
    }

    /// After `NAME(`: positional arguments, then keyword arguments (`seed=3`).
    fn call(&mut self, func: String, func_span: Span) -> Result<Expr, Diagnostic> {
        let mut args = Vec::new();
        let mut kwargs: Vec<Kwarg> = Vec::new();
        loop {
            if self.eat(")") {
                break;
            }
            if let (Some(Tok::Ident(name)), Some(Tok::Punct("="))) = (self.peek_at(0), self.peek_at(1)) {
                let name = name.clone();
                let name_span = self.bump().span;
                self.pos += 1;
                let value = self.expr()?;
                if kwargs.iter().any(|k| k.name == name) {
                    return Err(Diagnostic::error(format!("`{name}` is given twice")).at(name_span));
                }
                kwargs.push(Kwarg { name, name_span, value });
            } else {
                let e = self.expr()?;
                if let Some(k) = kwargs.last() {
                    return Err(Diagnostic::error("a positional argument after a keyword argument")
                        .at(e.span)
                        .help(format!("put it before `{}=`", k.name)));
                }
                args.push(e);
            }
            if !self.eat(",") {
                self.expect_punct(")", "`,` or `)`", &format!("close the call to `{func}` with `)`"))?;
                break;
            }
        }
        let span = func_span.to(self.prev_span());
        Ok(Expr { kind: ExprKind::Call { func, func_span, args, kwargs }, span })
    }
}
