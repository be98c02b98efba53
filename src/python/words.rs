//! CUDA C's words as Numba's Python says them, in text *about* kernels rather than in kernels: a
//! finding's advice about a Python kernel (`render::findings`), a lesson's statements and prose
//! read in Python (`lesson::lang`). One table, so that advice and lessons say the same thing the
//! same way (`cuda.syncthreads()`, `cuda.atomic.add(a, i, v)`, `k[blocks, threads](a)`).
//!
//! These are rewrites of short quotes, not a translator: what has no one-line Numba spelling
//! (a pointer parameter, a `__shared__` declaration) is left for a lesson's author to say in a
//! ` ```md numba ` twin.

/// Numba's atomics (`cuda.atomic.NAME`): the CUDA C function each one is, and how many arguments
/// the Numba call takes. The one table for lowering a Python kernel (`python::lower`) and for
/// saying C's atomics in Numba's words; where two share a C function, the first is its Numba name.
pub const ATOMICS: &[(&str, &str, usize)] = &[
    ("add", "atomicAdd", 3),
    ("sub", "atomicSub", 3),
    ("max", "atomicMax", 3),
    ("min", "atomicMin", 3),
    ("inc", "atomicInc", 3),
    ("dec", "atomicDec", 3),
    ("exch", "atomicExch", 3),
    ("and_", "atomicAnd", 3),
    ("or_", "atomicOr", 3),
    ("xor", "atomicXor", 3),
    ("cas", "atomicCAS", 4),
    // On `array[0]`, as Numba's older spelling.
    ("compare_and_swap", "atomicCAS", 3),
];

/// Other words with one Numba spelling each.
const NAMES: &[(&str, &str)] = &[
    ("__syncthreads", "cuda.syncthreads"),
    ("__syncwarp", "cuda.syncwarp"),
    ("__threadfence", "cuda.threadfence"),
    ("__shared__", "cuda.shared.array"),
    ("__global__", "@cuda.jit"),
    ("warpSize", "cuda.warpsize"),
];

/// The built-in index variables, said `cuda.threadIdx.x` in Numba.
const INDICES: &[&str] = &["threadIdx", "blockIdx", "blockDim", "gridDim"];

/// C's declared types, dropped from a declaration quoted as Python (`int i = 0;` is `i = 0`).
const TYPES: &[&str] =
    &["int", "float", "double", "long", "unsigned", "size_t", "bool", "char", "short", "const", "auto"];

/// The names and idioms of CUDA C wherever they stand in `text`, in Numba's words: launches in
/// brackets, `cuda.` before the index variables and barriers, atomics with Numba's arguments,
/// `and`/`or`, float literals without their `f`, `a[i][j]` as `a[i, j]`.
pub fn words(text: &str) -> String {
    let mut s = launches(text);
    for (i, (op, c, _)) in ATOMICS.iter().enumerate() {
        if ATOMICS[..i].iter().any(|(_, earlier, _)| earlier == c) {
            continue;
        }
        let py = format!("cuda.atomic.{op}");
        s = atomic_calls(&s, c, &py);
        s = replace_word(&s, c, &py);
    }
    for (c, py) in NAMES {
        s = replace_word(&s, c, py);
    }
    for v in INDICES {
        s = replace_word(&s, v, &format!("cuda.{v}"));
    }
    for (c, py) in [("&&", "and"), ("||", "or")] {
        s = s.replace(&format!(" {c} "), &format!(" {py} "));
    }
    float_literals(&s).replace("][", ", ")
}

/// One quoted piece of code (a Markdown code span) in Numba's words: [`words`], and a C
/// statement's shape as Python writes it: no `;`, no declared type, `if (c)` as `if c:`, a
/// counting `for` as `range`.
pub fn code(span: &str) -> String {
    let s = words(span.trim());
    let s = s.strip_suffix(';').unwrap_or(&s).trim_end().to_string();
    if let Some(py) = counting_for(&s) {
        return py;
    }
    if let Some(cond) = s.strip_prefix("if (").and_then(|c| c.strip_suffix(')')) {
        return format!("if {cond}:");
    }
    without_declared_type(&s)
}

/// The extents a lowered kernel takes beside each array (`python::lower` names them `m_rows`,
/// `m_cols`, `a_size`, `t_shape2`), said as the learner's Python says them (`m.shape[0]`,
/// `m.shape[1]`, `a.size`, `t.shape[2]`), wherever they stand in `text`. `c` is the lowered
/// kernel: only a name it declares as an extent beside a pointer of that array's name is
/// rewritten, never a variable of the learner's that happens to end in `_size`.
pub fn extents(text: &str, c: &str) -> String {
    let mut s = text.to_string();
    for decl in c.split("long long ").skip(1) {
        let word: String = decl.chars().take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_').collect();
        let Some((array, py)) = extent_in_python(&word) else { continue };
        if c.contains(&format!("*{array},")) || c.contains(&format!("*{array})")) {
            s = replace_word(&s, &word, &py);
        }
    }
    s
}

/// `m_rows` as `("m", "m.shape[0]")`, the inverse of `python::lower`'s names for extents.
fn extent_in_python(word: &str) -> Option<(&str, String)> {
    let (array, what) = word.rsplit_once('_')?;
    let py = match what {
        "size" => format!("{array}.size"),
        "rows" => format!("{array}.shape[0]"),
        "cols" => format!("{array}.shape[1]"),
        d => format!("{array}.shape[{}]", d.strip_prefix("shape")?.parse::<usize>().ok()?),
    };
    (!array.is_empty()).then_some((array, py))
}

/// `k<<<g, b>>>(a)` as Numba writes it, `k[g, b](a)`, wherever a launch appears in `text`
/// (statements, `:race`, `:time`, `cost` ...): `dim3(x, y)` becomes `(x, y)`, and the shared
/// bytes and stream of `<<<g, b, bytes, stream>>>` trade places as Numba orders them
/// (`[g, b, stream, bytes]`). Text with no launch comes back as it was.
pub fn launches(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<<<") {
        let Some(close) = rest[open..].find(">>>").map(|c| open + c) else { break };
        let inner = &rest[open + 3..close];
        let parts: Vec<String> = split_top_level(inner).into_iter().map(|p| integer_division(&dim(p.trim()))).collect();
        out.push_str(&rest[..open]);
        let config = match parts.as_slice() {
            [g, b] if !g.is_empty() && !b.is_empty() => format!("{g}, {b}"),
            [g, b, bytes] => format!("{g}, {b}, 0, {bytes}"),
            [g, b, bytes, stream] => format!("{g}, {b}, {stream}, {bytes}"),
            _ => {
                // Not a launch gridlab knows how to write in brackets: left as written.
                out.push_str(&rest[open..close + 3]);
                rest = &rest[close + 3..];
                continue;
            }
        };
        out.push('[');
        out.push_str(&config);
        out.push(']');
        rest = &rest[close + 3..];
    }
    out.push_str(rest);
    out
}

/// Split at commas outside parentheses, brackets and braces.
pub fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A launch's sizes are whole numbers, and Python's `/` gives a float, which Numba refuses as
/// a grid: `n / T` is written `n // T` (what C's `/` of two integers is).
fn integer_division(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        out.push(c);
        let single = c == '/' && chars.get(i + 1) != Some(&'/') && (i == 0 || chars[i - 1] != '/');
        if single {
            out.push('/');
        }
    }
    out
}

/// `dim3(x, y)` as a tuple `(x, y)`, `dim3(x)` as `x`; anything else as it is.
fn dim(text: &str) -> String {
    let Some(args) = text.strip_prefix("dim3").map(str::trim_start).and_then(|t| t.strip_prefix('(')) else {
        return text.to_string();
    };
    let Some(args) = args.strip_suffix(')') else { return text.to_string() };
    let items = split_top_level(args);
    match items.as_slice() {
        [one] => one.trim().to_string(),
        many => format!("({})", many.iter().map(|s| s.trim()).collect::<Vec<_>>().join(", ")),
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `word` replaced by `by` where it stands as a whole word and is not already `cuda.`'s.
fn replace_word(text: &str, word: &str, by: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back().or_else(|| out.chars().next_back());
        let after = rest[at + word.len()..].chars().next();
        let whole = !before.is_some_and(|c| is_ident(c) || c == '.') && !after.is_some_and(is_ident);
        out.push_str(&rest[..at]);
        out.push_str(if whole { by } else { word });
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// `atomicAdd(&a[i], v)` as `cuda.atomic.add(a, i, v)`, `atomicAdd(&x, v)` as
/// `cuda.atomic.add(x, 0, v)` (Numba's atomics take an array and an index).
fn atomic_calls(text: &str, c: &str, py: &str) -> String {
    let open = format!("{c}(&");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&open) {
        out.push_str(&rest[..at]);
        let args = &rest[at + open.len()..];
        let end = args.find([',', ')']).unwrap_or(args.len());
        let target = args[..end].trim();
        let (array, index) = match target.split_once('[') {
            Some((array, index)) if index.ends_with(']') => (array, &index[..index.len() - 1]),
            _ => (target, "0"),
        };
        // A 2-D element is one index in Numba, a tuple: `cuda.atomic.add(m, (r, 0), v)`.
        let index = if index.contains("][") { format!("({})", index.replace("][", ", ")) } else { index.to_string() };
        out.push_str(&format!("{py}({array}, {index}"));
        rest = &args[end..];
    }
    out.push_str(rest);
    out
}

/// Float literals without C's `f` suffix: `0.5f` is `0.5`, `1e-3f` is `1e-3`.
fn float_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit() && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '.'));
        if !starts_number {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || chars[j] == '.'
                || matches!(chars[j], 'e' | 'E')
                || (matches!(chars[j], '+' | '-') && matches!(chars[j - 1], 'e' | 'E')))
        {
            j += 1;
        }
        let number: String = chars[i..j].iter().collect();
        out.push_str(&number);
        let suffix = j < chars.len() && matches!(chars[j], 'f' | 'F');
        let hex = number == "0" && j < chars.len() && matches!(chars[j], 'x' | 'X');
        if suffix && !hex && !chars.get(j + 1).is_some_and(|c| is_ident(*c)) {
            j += 1;
        }
        i = j;
    }
    out
}

/// `for (int i = a; i < b; i++)` as `for i in range(a, b)` (`range(b)` from 0, a third argument
/// for `i += s`); `None` for any other text.
fn counting_for(s: &str) -> Option<String> {
    let inner = s.strip_prefix("for (")?.strip_suffix(')')?;
    let [init, cond, step] = <[&str; 3]>::try_from(inner.split(';').map(str::trim).collect::<Vec<_>>()).ok()?;
    let init = without_declared_type(init);
    let (var, from) = init.split_once('=').map(|(v, f)| (v.trim(), f.trim()))?;
    let to = cond.strip_prefix(var)?.trim_start().strip_prefix('<')?.trim();
    if to.starts_with('=') || !var.chars().all(is_ident) {
        return None;
    }
    let by = if step == format!("{var}++") || step == format!("++{var}") || step == format!("{var} += 1") {
        None
    } else {
        Some(step.strip_prefix(var)?.trim_start().strip_prefix("+=")?.trim())
    };
    Some(match (from, by) {
        ("0", None) => format!("for {var} in range({to})"),
        (from, None) => format!("for {var} in range({from}, {to})"),
        (from, Some(by)) => format!("for {var} in range({from}, {to}, {by})"),
    })
}

/// A declaration's type left out: `int c = x` is `c = x`; anything else as it is.
fn without_declared_type(s: &str) -> String {
    let mut words = s.split_whitespace().peekable();
    let mut dropped = 0;
    while words.peek().is_some_and(|w| TYPES.contains(w)) {
        words.next();
        dropped += 1;
    }
    let rest: Vec<&str> = words.collect();
    match rest.as_slice() {
        [name, "=", ..] if dropped > 0 && name.chars().all(is_ident) => rest.join(" "),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2d_atomic_takes_a_tuple_index() {
        assert_eq!(words("`atomicAdd(&out[3][0], ...)`"), "`cuda.atomic.add(out, (3, 0), ...)`");
    }

    #[test]
    fn extents_are_said_as_the_arrays_shape() {
        let c = "__global__ void k(float *m, long long m_rows, long long m_cols, float *a, long long a_size) {\n    long long block_size;\n";
        assert_eq!(
            extents("`r <= m_rows` and `c < m_cols`, `i < a_size`, block_size", c),
            "`r <= m.shape[0]` and `c < m.shape[1]`, `i < a.size`, block_size"
        );
    }

    #[test]
    fn launches_are_written_in_numbas_brackets() {
        assert_eq!(launches("k<<<4, 256>>>(a, n)"), "k[4, 256](a, n)");
        assert_eq!(launches(":race add<<<(n + 255) / 256, 256>>>(a)"), ":race add[(n + 255) // 256, 256](a)");
        assert_eq!(launches("t<<<dim3(n / T, n / T), dim3(T, 8)>>>(a)"), "t[(n // T, n // T), (T, 8)](a)");
        assert_eq!(launches("k<<<n // 2, 32>>>(a, n / 2)"), "k[n // 2, 32](a, n / 2)");
        assert_eq!(
            launches("let c = cost mm<<<dim3(4, 4), dim3(16, 16)>>>(a, b, c, n)"),
            "let c = cost mm[(4, 4), (16, 16)](a, b, c, n)"
        );
        assert_eq!(launches("k<<<dim3(8), 32, 1024>>>(a)"), "k[8, 32, 0, 1024](a)");
        assert_eq!(launches("k<<<g, b, 1024, s>>>(a)"), "k[g, b, s, 1024](a)");
        assert_eq!(launches(":compare k1<<<1, 32>>>(a) k2<<<2, 16>>>(a)"), ":compare k1[1, 32](a) k2[2, 16](a)");
        assert_eq!(launches("let x = 1 << 3"), "let x = 1 << 3");
        assert_eq!(launches("x >> 2"), "x >> 2");
        assert_eq!(launches("instead of `<<< >>>`"), "instead of `<<< >>>`");
    }

    #[test]
    fn cuda_names_read_as_numbas() {
        assert_eq!(words("threadIdx.x"), "cuda.threadIdx.x");
        assert_eq!(words("cuda.threadIdx.x"), "cuda.threadIdx.x", "already Numba's");
        assert_eq!(words("b * blockDim.x + threadIdx.y"), "b * cuda.blockDim.x + cuda.threadIdx.y");
        assert_eq!(words("__syncthreads()"), "cuda.syncthreads()");
        assert_eq!(words("__shared__"), "cuda.shared.array");
        assert_eq!(words("warpSize"), "cuda.warpsize");
        assert_eq!(words("myThreadIdx"), "myThreadIdx", "only whole words");
        assert_eq!(words("atomicAdd"), "cuda.atomic.add");
        assert_eq!(words("atomicAdd(&a[i], 1)"), "cuda.atomic.add(a, i, 1)");
        assert_eq!(words("atomicMax(&best, v)"), "cuda.atomic.max(best, 0, v)");
        assert_eq!(words("a[i] += 0.5f"), "a[i] += 0.5");
        assert_eq!(words("x * 2.0f + 1e-3f"), "x * 2.0 + 1e-3");
        assert_eq!(words("0x1f + buf2f"), "0x1f + buf2f", "hex and names keep their f");
        assert_eq!(words("tile[threadIdx.x][j]"), "tile[cuda.threadIdx.x, j]");
        assert_eq!(words("i < n && ok"), "i < n and ok");
        assert_eq!(words("kernel<<<blocks, threads>>>"), "kernel[blocks, threads]");
    }

    #[test]
    fn quoted_statements_take_pythons_shape() {
        assert_eq!(
            code("int c = blockIdx.x * blockDim.x + threadIdx.x;"),
            "c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x"
        );
        assert_eq!(code("for (int i = 0; i < n; i++)"), "for i in range(n)");
        assert_eq!(code("for (int i = tid; i < n; i += stride)"), "for i in range(tid, n, stride)");
        assert_eq!(code("for (int i = 0; i <= n; i++)"), "for (int i = 0; i <= n; i++)", "no one-line range");
        assert_eq!(code("if (i < n)"), "if i < n:");
        assert_eq!(code("int"), "int", "a type alone is a word, not a declaration");
        assert_eq!(code("__syncthreads()"), "cuda.syncthreads()");
    }
}
