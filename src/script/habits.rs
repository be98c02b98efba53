//! Habits learners bring to the prompt from CUDA host code, NumPy and Numba, and what gridlab
//! makes of them. Where the meaning is plain it is done: `int n = 1 << 20;` and
//! `dim3 block(16, 16);` are declarations (read by the parser with [`c_type`]),
//! `sizeof(float)` is 4 ([`c_type_size`]), `cudaDeviceSynchronize();` does nothing and says why.
//! Otherwise one message says what to write instead: `cudaMalloc(&d_x, n * sizeof(float))` is
//! `let d_x = zeros(n)`, `np.zeros(10)` is `zeros(10)`, `printf("%f", y[0])` is `y[0]`.
//!
//! [`host_statement`] looks at a statement's text before it is lexed, since host code often
//! holds what the session language cannot lex (strings, `&`, `std::`).

use crate::diag::{Diagnostic, SourceId, Span};
use crate::dtype::DType;
use crate::value::Value;

use super::ast::{Declared, Expr, ExprKind, Stmt, StmtKind};

/// The C type named by `words` (`["unsigned", "int"]`), as a declaration at the prompt means it.
/// `None` when the words are not a type gridlab declares.
pub fn c_type(words: &[&str]) -> Option<Declared> {
    let words: Vec<&str> = words.iter().copied().filter(|w| !matches!(*w, "const" | "constexpr" | "static")).collect();
    let int = |c_name, dtype| Some(Declared::Integer { c_name, dtype });
    match words[..] {
        ["int"] | ["signed"] | ["signed", "int"] | ["int32_t"] => int("int", DType::I32),
        ["unsigned"] | ["unsigned", "int"] | ["uint32_t"] | ["uint"] => int("unsigned int", DType::U32),
        ["long"] | ["long", "int"] | ["long", "long"] | ["long", "long", "int"] | ["int64_t"] => {
            int("long long", DType::I64)
        }
        ["unsigned", "long"] | ["unsigned", "long", "long"] | ["size_t"] | ["uint64_t"] => {
            int("unsigned long long", DType::U64)
        }
        ["float"] => Some(Declared::Float { c_name: "float" }),
        ["double"] => Some(Declared::Float { c_name: "double" }),
        ["bool"] => Some(Declared::Bool),
        ["auto"] => Some(Declared::Auto),
        ["dim3"] => Some(Declared::Dim3),
        _ => None,
    }
}

/// Words that may start a C declaration at the prompt.
pub const C_TYPE_WORDS: &[&str] = &[
    "int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "auto", "dim3", "size_t",
    "int32_t", "uint32_t", "int64_t", "uint64_t", "uint",
];

/// `sizeof(TYPE)` in bytes, on the platforms CUDA runs on (LP64); `TYPE` may be a dtype name or
/// a pointer (`float *`).
pub fn c_type_size(ty: &str) -> Option<usize> {
    if ty.ends_with('*') {
        return Some(8);
    }
    let words: Vec<&str> = ty.split_whitespace().filter(|w| !matches!(*w, "const" | "volatile")).collect();
    Some(match words[..] {
        ["char"] | ["signed", "char"] | ["unsigned", "char"] | ["bool"] | ["int8_t"] | ["uint8_t"] => 1,
        ["short"] | ["unsigned", "short"] | ["int16_t"] | ["uint16_t"] => 2,
        ["dim3"] => 12,
        [one] if DType::parse(one).is_some() => DType::parse(one)?.size(),
        _ => match c_type(&words)? {
            Declared::Integer { dtype, .. } => dtype.size(),
            Declared::Float { c_name: "float" } => 4,
            Declared::Float { .. } => 8,
            _ => return None,
        },
    })
}

/// The value of a declaration (`int n = 7 / 2;`) converted to its C type, as C would: integers
/// truncate floats toward zero and must fit the type; `float x = 1;` makes a float.
pub fn convert_declared(v: Value, declared: Declared, name: &str, e: &Expr, src: &str) -> Result<Value, Diagnostic> {
    let text = e.text(src);
    let wrong = |what: &str, help: String| {
        Diagnostic::error(format!("`{name}` is declared {what}, but `{text}` is {}", v.type_name()))
            .at(e.span)
            .help(help)
    };
    if let Value::Array(_) = v
        && declared != Declared::Auto
    {
        return Err(wrong(
            "as one number",
            format!("a buffer is made with `let`: `let {name} = {text}` (its dtype comes from the constructor)"),
        ));
    }
    Ok(match declared {
        Declared::Auto => v,
        Declared::Integer { c_name, dtype } => {
            let i = match v {
                Value::Int(i) => i,
                Value::Bool(b) => b as i128,
                Value::Float(f) if f.is_finite() => f.trunc() as i128,
                Value::Float(f) => {
                    return Err(Diagnostic::error(format!("`{name}` is `{c_name}`, which can't hold {f}")).at(e.span));
                }
                Value::Dim3(_) => return Err(wrong(&format!("`{c_name}`"), format!("write `dim3 {name} = {text};`"))),
                Value::Array(_) => unreachable!("refused above"),
            };
            if crate::value::wrap(i, dtype) != i {
                return Err(Diagnostic::error(format!("`{text}` is {i}, which does not fit in `{c_name}`"))
                    .at(e.span)
                    .label(format!("`{name}` is `{c_name}`"))
                    .help("declare it `long long` (or `size_t`), or write `let`: gridlab's scalars are exact 128-bit integers"));
            }
            Value::Int(i)
        }
        Declared::Float { c_name } => match v {
            Value::Int(i) => Value::Float(i as f64),
            Value::Bool(b) => Value::Float(b as u8 as f64),
            Value::Float(f) => Value::Float(f),
            _ => return Err(wrong(&format!("`{c_name}`"), format!("write `dim3 {name} = {text};`"))),
        },
        Declared::Bool => match v {
            Value::Int(i) => Value::Bool(i != 0),
            Value::Float(f) => Value::Bool(f != 0.0),
            Value::Bool(b) => Value::Bool(b),
            _ => return Err(wrong("`bool`", format!("write `dim3 {name} = {text};`"))),
        },
        Declared::Dim3 => match v {
            Value::Dim3(d) => Value::Dim3(d),
            Value::Int(i) => match u32::try_from(i) {
                Ok(x) => Value::Dim3([x, 1, 1]),
                Err(_) => {
                    return Err(
                        Diagnostic::error(format!("a dim3 size is between 0 and {}, not {i}", u32::MAX)).at(e.span)
                    );
                }
            },
            _ => {
                return Err(wrong(
                    "`dim3`",
                    format!("a dim3 holds whole numbers of blocks or threads: `dim3 {name}(16, 16);`"),
                ));
            }
        },
    })
}

/// A call written with a dot (`np.zeros(10)`, `cuda.to_device(x)`, `a.sum()`): the language has
/// no modules and no methods, so the message says what to write instead. `bound` says whether a
/// name is a buffer or scalar of the session; `runs` whether an expression evaluates there: a
/// rewrite is offered only when it does, so that following the advice never fails.
pub fn dotted_call(
    func: &str,
    func_span: Span,
    call: &Expr,
    src: &str,
    bound: &dyn Fn(&str) -> bool,
    runs: &dyn Fn(&str) -> bool,
) -> Diagnostic {
    let (prefix, rest) = func.split_once('.').unwrap_or(("", func));
    let text = call.text(src);
    let args = text.find('(').map_or("()", |i| &text[i..]);
    let inner = args.strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or("").trim();
    let say = |instead: String, help: &str| {
        Diagnostic::error(format!("no `{func}` in gridlab: {instead}")).at(func_span).help(help.to_string())
    };
    // `np.ones_like(a, dtype=np.float32)`: the array, then the rest (a dtype) kept as given.
    let parts = call_args(args).unwrap_or_default();
    let (first, more) = match parts.split_first() {
        Some((f, m)) => (f.trim().to_string(), m.iter().map(|a| format!(", {}", a.trim())).collect::<String>()),
        None => (String::new(), String::new()),
    };
    if matches!(prefix, "np" | "numpy" | "cp" | "cupy" | "jnp" | "torch") {
        let plain = match rest {
            "zeros_like" => Some(format!("zeros(len({first}){more})")),
            "empty_like" => Some(format!("empty(len({first}){more})")),
            "ones_like" => Some(format!("ones(len({first}){more})")),
            "asarray" => Some(format!("array{args}")),
            "random.rand" | "random.random" => Some(format!("random{args}")),
            _ if super::builtins::find(rest).is_some() => Some(format!("{rest}{args}")),
            _ => None,
        };
        let plain = plain.filter(|p| runs(p));
        let help = format!("gridlab's functions need no `{prefix}.`; `:help functions` lists them");
        return match plain {
            Some(p) => say(format!("write `{p}`"), &help),
            None => say(format!("`{rest}` is not one of gridlab's functions"), &help),
        };
    }
    if prefix == "cuda" {
        let no_copies = "one buffer is used by kernels and shown at the prompt: there is nothing to copy";
        return match rest {
            "to_device" => say(format!("pass `{inner}` to the kernel itself"), no_copies),
            "copy_to_host" => say("type the buffer's name to see it".into(), no_copies),
            "device_array" | "device_array_like" | "managed_array" | "pinned_array" => {
                let n = if rest.ends_with("_like") { format!("len({first}){more}") } else { inner.to_string() };
                let zeros = format!("zeros({n})");
                if runs(&zeros) {
                    say(format!("write `{zeros}`"), "every gridlab buffer is usable by kernels")
                } else {
                    say("make the buffer with `zeros(n)`".into(), "every gridlab buffer is usable by kernels")
                }
            }
            "grid" | "gridsize" | "threadIdx" | "blockIdx" | "blockDim" | "gridDim" => say(
                "that belongs inside a kernel".into(),
                "gridlab's kernels are CUDA C: `int i = blockIdx.x * blockDim.x + threadIdx.x;`",
            ),
            _ => say(
                "kernels are CUDA C here".into(),
                "write a `__global__` function and launch it as `k<<<blocks, threads>>>(args)`",
            ),
        };
    }
    if bound(prefix) {
        let instead = match rest {
            "copy_to_host" => format!("type `{prefix}` to see it"),
            "copy" => format!("write `copy({prefix})`"),
            "size" | "shape" | "len" | "__len__" => format!("write `len({prefix})`"),
            "astype" => format!("write `array({prefix}, {inner})`"),
            "fill" => format!("write `{prefix}[:] = {inner}`"),
            _ if super::builtins::find(rest).is_some() => format!("write `{rest}({prefix})`"),
            _ => "functions take the buffer, e.g. `sum(a)`, `len(a)`".to_string(),
        };
        // Numba's copies between host and device have nothing to do here: say why, not where
        // the functions are listed.
        let help = match rest {
            "copy_to_host" | "copy_to_device" | "to_host" | "get" => {
                "a gridlab buffer is on the host and the device at once: there is nothing to copy"
            }
            _ => "`:help functions` lists the functions",
        };
        return Diagnostic::error(format!("buffers have no methods: {instead}")).at(func_span).help(help);
    }
    // A method of a device array whose name is not a buffer here (its `cuda.to_device` failed):
    // what the method was for, and that the name is not there.
    let device = match rest {
        "copy_to_host" | "to_host" | "get" => {
            Some("a buffer is on the host and the device at once: type its name to see it")
        }
        "copy_to_device" | "to_device" => {
            Some("a buffer is on the host and the device at once: pass it to the kernel itself")
        }
        _ => None,
    };
    if let Some(instead) = device {
        return Diagnostic::error(format!("no `{func}` in gridlab: {instead}")).at(func_span).help(format!(
            "there is no `{prefix}` here: make a buffer with `let {prefix} = zeros(n)` and pass it to kernels"
        ));
    }
    Diagnostic::error(format!("unknown function `{func}`"))
        .at(func_span)
        .help("there are no modules or methods here: `:help functions` lists the functions")
}

/// Host code recognised by its first word, before lexing: CUDA's runtime calls, `printf`,
/// `std::cout`, a `print` with strings, Numba's `cuda.synchronize()`, `return 0;`. `None` when
/// the statement is none of these. Each message's first line says what to write instead.
pub fn host_statement(source: SourceId, text: &str) -> Option<Result<Stmt, Diagnostic>> {
    let t = text.trim_start();
    let lead = text.len() - t.len();
    let head_len = t.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.'))).unwrap_or(t.len());
    let head = &t[..head_len];
    let after = t[head_len..].trim_start();
    let span = Span::new(source, lead, lead + head_len);
    let whole = Span::new(source, lead, text.trim_end().len().max(lead));
    let args = after.starts_with('(').then(|| call_args(after)).flatten();
    let nothing = |note: &str| Some(Ok(Stmt { kind: StmtKind::Nothing { note: note.to_string() }, span: whole }));
    let err = |instead: String, help: &str| {
        Some(Err(Diagnostic::error(format!("no `{head}` at the prompt: {instead}")).at(span).help(help.to_string())))
    };
    let no_copies =
        "a gridlab buffer is on the host and the device at once: kernels use it, and typing its name shows it";
    if let Some(d) = address_of_in_launch(source, text) {
        return Some(Err(d));
    }
    if t.starts_with('@') {
        // A Numba (or Python) decorator: the kernel under it would be Python.
        let deco = t.split_whitespace().next().unwrap_or("@");
        return Some(Err(Diagnostic::error(format!(
            "no `{deco}` at the prompt: gridlab's kernels are CUDA C, not Python"
        ))
        .at(Span::new(source, lead, lead + deco.len()))
        .help(
            "write `__global__ void name(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; ... }` \
             (Numba's `cuda.grid(1)` is that `i`) and launch it as `name<<<blocks, threads>>>(a, len(a))`",
        )));
    }
    match head {
        "import" | "from" if !after.is_empty() && !after.starts_with(['(', '=']) => {
            nothing("nothing to import: `zeros`, `arange`, `random` and the rest are built in, and kernels are CUDA C")
        }
        "cudaMalloc" | "cudaMallocManaged" | "cudaMallocHost" if args.is_some() => {
            let args = args.unwrap_or_default();
            let name = args.first().and_then(|a| last_name(a)).unwrap_or_else(|| "d_x".to_string());
            let (count, dtype) = args.get(1).map_or(("N".to_string(), None), |a| element_count(a));
            let dtype = dtype.map_or(String::new(), |d| format!(", {d}"));
            let help = if head == "cudaMallocManaged" {
                "every gridlab buffer is like managed memory: kernels use it and you can inspect it"
            } else {
                "gridlab allocates a buffer when you make one (f32 unless you give a dtype), and kernels use it directly"
            };
            err(format!("write `let {name} = zeros({count}{dtype})`"), help)
        }
        "cudaMemcpy" | "cudaMemcpyAsync" if args.is_some() => {
            let args = args.unwrap_or_default();
            let simple = |i: usize| args.get(i).filter(|a| is_name(a)).cloned();
            let (dst, src, kind) = (simple(0), simple(1), args.get(3).map_or("", |k| k.trim()));
            let instead = match (dst, src) {
                (Some(_), Some(src)) if kind.ends_with("HostToDevice") => format!("pass `{src}` to the kernel itself"),
                (Some(_), Some(src)) if kind.ends_with("DeviceToHost") => format!("type `{src}` to see it"),
                (Some(dst), Some(src)) => format!("`let {dst} = copy({src})` makes a copy"),
                _ => "pass the buffer to kernels and type its name to see it".to_string(),
            };
            err(instead, no_copies)
        }
        "cudaMemset" if args.is_some() => {
            let args = args.unwrap_or_default();
            let name = args.first().filter(|a| is_name(a)).cloned().unwrap_or_else(|| "a".to_string());
            match args.get(1).map_or("0", |v| v.trim()) {
                "0" => err(format!("write `{name}[:] = 0`"), "it sets every element; `a[2:6] = 0` sets a few"),
                _ => err(
                    format!("write `{name}[:] = VALUE`"),
                    "`cudaMemset` sets bytes; gridlab sets elements: `a[:] = 1.5` sets every one",
                ),
            }
        }
        "cudaDeviceSynchronize" | "cudaThreadSynchronize" | "cudaStreamSynchronize" | "cuda.synchronize" => {
            nothing("nothing to wait for: a launch has finished when the prompt comes back")
        }
        "cudaGetLastError" | "cudaPeekAtLastError" => {
            nothing("nothing to ask: a launch that fails says so itself, at once")
        }
        "cudaFree" | "cudaFreeHost" | "free" if args.is_some() => {
            nothing("nothing to free: a buffer lives until its name is bound again or `:reset`")
        }
        "cudaDeviceReset" => nothing("nothing to reset: `:reset` starts over if you want to"),
        "return" => nothing("nothing to return from: the prompt is not inside a function"),
        "printf" | "std::printf" if args.is_some() => {
            let args = args.unwrap_or_default();
            let values: Vec<String> = args.iter().skip(1).map(|a| a.trim().to_string()).collect();
            err(show(&values), "`printf` prints from inside kernels; at the prompt a value shows itself")
        }
        "std::cout" | "cout" | "std::cerr" | "cerr" if after.starts_with("<<") => {
            let values: Vec<String> = after
                .trim_end()
                .trim_end_matches(';')
                .split("<<")
                .map(str::trim)
                .filter(|p| {
                    !p.is_empty() && !p.starts_with(['"', '\'']) && !matches!(*p, "std::endl" | "endl" | "std::flush")
                })
                .map(str::to_string)
                .collect();
            err(show(&values), "at the prompt a value shows itself: `a`, `a[3]`, `sum(a)`")
        }
        "for" | "while" if after.starts_with('(') => {
            let instead = match loop_as_slices(after) {
                Some(lines) => format!("write `{}`", lines.join("` and `")),
                None => "loops run in kernels".to_string(),
            };
            err(
                instead,
                "the prompt runs one statement at a time: `a[:] = 1.0` sets every element, `a[:] = b * 2` computes them all, `sum(a)` and `max(abs(a - 3))` reduce; loops belong in kernels",
            )
        }
        "print" if after.contains(['"', '\'']) => {
            let args = args.unwrap_or_default();
            // Plain labels print, as in Python (`print('sum:', s)`); formatted text does not.
            let plain = |a: &str| {
                let a = a.trim();
                a.starts_with(['"', '\'']) && a.ends_with(a.chars().next().unwrap_or('"')) && a.len() >= 2
            };
            let formatted = |a: &str| {
                let a = a.trim();
                a.trim_start_matches(['f', 'r']).starts_with(['"', '\'']) && !plain(a)
            };
            if !args.iter().any(|a| formatted(a)) {
                return None;
            }
            let is_string = |a: &str| a.trim_start_matches(['f', 'r']).starts_with(['"', '\'']);
            let values: Vec<String> =
                args.iter().map(|a| a.trim()).filter(|a| !is_string(a)).map(str::to_string).collect();
            Some(Err(Diagnostic::error(format!("the prompt has no strings: {}", show(&values)))
                .at(span)
                .help("`print(a)` and typing `a` show a value with its name")))
        }
        _ => None,
    }
}

/// `k<<<g, b>>>(&a[4], n)`: C's pointer to an element, which a launch writes `a + 4` (the
/// statement language has no `&`).
fn address_of_in_launch(source: SourceId, text: &str) -> Option<Diagnostic> {
    let args_at = text.find(">>>")? + 3;
    // An `&` that starts an argument: `(&a[4]` or `, &a[4]`, not `n & m`.
    let amp = text[args_at..]
        .match_indices('&')
        .map(|(i, _)| args_at + i)
        .find(|&i| text[..i].trim_end().ends_with(['(', ',']) && !text[i + 1..].starts_with('&'))?;
    let after = &text[amp + 1..];
    let name_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
    let name = &after[..name_len];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let tail = &after[name_len..];
    let (instead, end) = match tail.strip_prefix('[') {
        Some(inner) => {
            let close = inner.find(']')?;
            let index = inner[..close].trim();
            (format!("`{name} + {index}`"), amp + 1 + name_len + 1 + close + 1)
        }
        None => (format!("`{name}`"), amp + 1 + name_len),
    };
    Some(
        Diagnostic::error(format!("a launch passes a pointer into a buffer as {instead}, not with `&`"))
            .at(Span::new(source, amp, end))
            .help(format!(
                "`{name} + i` points to element i of `{name}`, as `&{name}[i]` does in C (`{name}[i:]` says the same); a buffer by its name is a pointer to its start"
            )),
    )
}

/// A value written with NumPy's or Numba's names in gridlab's words, for the message that asks
/// for `let`: `np.arange(10, dtype=np.float32)` is `arange(10, f32)`, `cuda.to_device(a)` is
/// `copy(a)` (a device copy that kernels change while `a` stays). `None` when nothing changes.
/// Whether `text` is host code gridlab answers with a habit's message (`cudaMemcpy(...)`,
/// `printf(...)`): that message is the one to show, even where the text is also Python.
pub fn is_habit(source: SourceId, text: &str) -> bool {
    matches!(host_statement(source, text), Some(Err(_)))
}

pub fn plain_value(text: &str) -> Option<String> {
    let (prefix, rest) = text.split_once('.')?;
    let (func, args) = rest.split_once('(')?;
    let args = args.strip_suffix(')')?;
    let plain_args = |args: &str| -> String {
        args.split(',')
            .map(|a| {
                let a = a.trim();
                let value = a.strip_prefix("dtype").map(|v| v.trim_start().trim_start_matches('=').trim()).unwrap_or(a);
                let name = value.rsplit('.').next().unwrap_or(value).trim_matches(['"', '\'']);
                match crate::dtype::DType::parse(name) {
                    Some(d) if value != a || value.contains('.') || value.starts_with(['"', '\'']) => {
                        d.name().to_string()
                    }
                    _ => a.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match prefix {
        "np" | "numpy" | "cp" | "cupy" if super::builtins::find(func).is_some() => {
            Some(format!("{func}({})", plain_args(args)))
        }
        "cuda" if func == "to_device" && is_name(args.trim()) => Some(format!("copy({})", args.trim())),
        "cuda" if func == "device_array" => Some(format!("zeros({})", plain_args(args))),
        _ => None,
    }
}

/// A host loop over a buffer's elements as whole-buffer statements:
/// `(int i = 0; i < N; i++) { x[i] = 1.0f; y[i] = x[i] * i; }` is `x[:] = 1.0f` and
/// `y[:] = x * arange(len(y))`. `None` unless every statement of the body is an element
/// assignment indexed by the loop's variable.
fn loop_as_slices(after: &str) -> Option<Vec<String>> {
    let close = matching_paren(after)?;
    let header = &after[1..close];
    let init = header.split(';').next()?.trim();
    let var = init.split('=').next()?.split_whitespace().last()?.to_string();
    if !is_name(&var) {
        return None;
    }
    let body = after[close + 1..].trim().trim_start_matches('{').trim_end().trim_end_matches('}');
    let mut out = Vec::new();
    for stmt in body.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (lhs, op, rhs) = ["+=", "-=", "*=", "/=", "="]
            .iter()
            .find_map(|op| stmt.split_once(op).map(|(l, r)| (l.trim(), *op, r.trim())))?;
        if rhs.is_empty() {
            return None;
        }
        let whole = rhs.replace(&format!("[{var}]"), "");
        // A sum over the elements: `total += x[i]` is `let total = total + sum(x)`.
        if is_name(lhs) && op == "+=" && whole != rhs && replace_words(&whole, &var, "") == whole {
            out.push(format!("let {lhs} = {lhs} + sum({whole})"));
            continue;
        }
        let name = lhs.strip_suffix(&format!("[{var}]"))?.trim();
        if !is_name(name) {
            return None;
        }
        out.push(format!("{name}[:] {op} {}", replace_words(&whole, &var, &format!("arange(len({name}))"))));
    }
    (!out.is_empty()).then_some(out)
}

/// The index of the `)` that closes the `(` at the start of `text`.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with every whole word `word` replaced by `with`.
fn replace_words(text: &str, word: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        let part_of_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        out.push_str(&rest[..at]);
        out.push_str(if part_of_word(before) || part_of_word(after) { word } else { with });
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// "type `x` to see it" for the values a print statement wanted to show.
fn show(values: &[String]) -> String {
    match values {
        [] => "type a name to see its value".to_string(),
        [one] => format!("type `{one}` to see it"),
        more => format!("type each to see it: `{}`", more.join("`, `")),
    }
}

/// The arguments of `(a, b(c, d), "x, y")`: split at the commas outside brackets and strings.
/// `None` when the parentheses don't close.
fn call_args(text: &str) -> Option<Vec<String>> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut prev = '\0';
    for c in text.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if c == q && prev != '\\' {
                quote = None;
            }
            prev = c;
            continue;
        }
        match c {
            '"' | '\'' => {
                quote = Some(c);
                cur.push(c);
            }
            '(' | '[' | '{' => {
                depth += 1;
                if depth > 1 {
                    cur.push(c);
                }
            }
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    if !cur.trim().is_empty() {
                        args.push(cur.trim().to_string());
                    }
                    return Some(args);
                }
                cur.push(c);
            }
            ',' if depth == 1 => args.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
        prev = c;
    }
    None
}

fn is_name(text: &str) -> bool {
    let t = text.trim();
    t.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The last name in `(void **)&d_x`: `d_x`.
fn last_name(text: &str) -> Option<String> {
    let t = text.trim();
    let end = t.len();
    let start = t.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = &t[start..end];
    is_name(name).then(|| name.to_string())
}

/// `N * sizeof(float)` as an element count (`N`) and, for another type than `float`, the dtype
/// to give `zeros`.
fn element_count(bytes: &str) -> (String, Option<&'static str>) {
    let b = bytes.trim();
    let Some(at) = b.find("sizeof") else { return (format!("{b} / 4"), None) };
    let open = b[at..].find('(').map(|i| at + i);
    let close = open.and_then(|o| b[o..].find(')').map(|i| o + i));
    let (Some(open), Some(close)) = (open, close) else { return ("N".to_string(), None) };
    let ty = b[open + 1..close].trim();
    let dtype = match ty {
        "float" => None,
        "double" => Some("f64"),
        "int" => Some("i32"),
        "unsigned" | "unsigned int" => Some("u32"),
        "long long" | "long" => Some("i64"),
        "unsigned long long" | "size_t" => Some("u64"),
        _ => None,
    };
    let before = b[..at].trim_end().trim_end_matches('*').trim();
    let after = b[close + 1..].trim_start().trim_start_matches('*').trim();
    let count = match (before.is_empty(), after.is_empty()) {
        (false, true) => before,
        (true, false) => after,
        (true, true) => "1",
        (false, false) => return ("N".to_string(), dtype),
    };
    let count = count.strip_prefix('(').and_then(|c| c.strip_suffix(')')).unwrap_or(count);
    (count.to_string(), dtype)
}

/// `ExprKind::Name` of a synthesized node, for the parser's rewrites.
pub(crate) fn name_expr(name: &str, span: Span) -> Expr {
    Expr { kind: ExprKind::Name(name.to_string()), span }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_byte_counts_as_element_counts() {
        assert_eq!(element_count("N * sizeof(float)"), ("N".into(), None));
        assert_eq!(element_count("sizeof(double) * n"), ("n".into(), Some("f64")));
        assert_eq!(element_count("(1 << 20) * sizeof(int)"), ("1 << 20".into(), Some("i32")));
        assert_eq!(element_count("bytes"), ("bytes / 4".into(), None));
        assert_eq!(last_name("(void **)&d_x"), Some("d_x".into()));
        assert_eq!(call_args("(a, f(b, c), \"x, y\")"), Some(vec!["a".into(), "f(b, c)".into(), "\"x, y\"".into()]));
        assert_eq!(call_args("(a, b"), None);
    }

    #[test]
    fn host_loops_become_whole_buffer_statements() {
        let slices = |t: &str| loop_as_slices(t).map(|v| v.join(" and "));
        assert_eq!(
            slices("(int i = 0; i < N; i++) {\n  x[i] = 1.0f;\n  y[i] = 2.0f;\n}").as_deref(),
            Some("x[:] = 1.0f and y[:] = 2.0f")
        );
        assert_eq!(slices("(int i = 0; i < n; i++) y[i] += a * x[i];").as_deref(), Some("y[:] += a * x"));
        assert_eq!(
            slices("(int k = 0; k < n; ++k) { v[k] = k * 0.5f; }").as_deref(),
            Some("v[:] = arange(len(v)) * 0.5f")
        );
        assert_eq!(slices("(int i = 0; i < n; i++) { s += x[i] * y[i]; }").as_deref(), Some("let s = s + sum(x * y)"));
        assert_eq!(slices("(int i = 0; i < n; i++) { s += i; }"), None);
        assert_eq!(slices("(int i = 0; i < n; i++) { m[i * 2] = 0; }"), None);
    }

    #[test]
    fn a_launch_with_c_address_of_says_to_add_the_offset() {
        let d = address_of_in_launch(0, "k<<<1, 32>>>(a, &d_x[n / 2], n)").expect("refused");
        assert_eq!(d.message, "a launch passes a pointer into a buffer as `d_x + n / 2`, not with `&`");
        let d = address_of_in_launch(0, "k<<<1, 32>>>(&a)").expect("refused");
        assert_eq!(d.message, "a launch passes a pointer into a buffer as `a`, not with `&`");
        // `&` as an operator is left to the parser.
        assert!(address_of_in_launch(0, "k<<<1, 32>>>(a, n &m)").is_none());
        assert!(address_of_in_launch(0, "let x = a & b").is_none());
    }

    #[test]
    fn sizes_of_c_types() {
        assert_eq!(c_type_size("float"), Some(4));
        assert_eq!(c_type_size("unsigned int"), Some(4));
        assert_eq!(c_type_size("long long"), Some(8));
        assert_eq!(c_type_size("float *"), Some(8));
        assert_eq!(c_type_size("char"), Some(1));
        assert_eq!(c_type_size("f64"), Some(8));
        assert_eq!(c_type_size("banana"), None);
    }
}
