//! Tests of the parser, evaluation and `expect` messages together.

use std::collections::HashMap;

use crate::buffer::{Buffer, Num, Shape};
use crate::diag::Diagnostic;
use crate::dtype::DType;
use crate::finding::FindingKind;

use super::ast::{BinOp, Declared, Expect, ExprKind, Stmt, StmtKind};
use super::{Assignment, Env, eval, eval_assign, eval_expect, parse_statement};
use crate::value::{ArrayValue, Data, Value};

#[derive(Default)]
struct TestEnv {
    buffers: HashMap<String, Buffer>,
    scalars: HashMap<String, Value>,
}

impl Env for TestEnv {
    fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.get(name)
    }
    fn scalar(&self, name: &str) -> Option<&Value> {
        self.scalars.get(name)
    }
    fn max_alloc_bytes(&self) -> u64 {
        12 << 30
    }
    fn names(&self) -> Vec<String> {
        self.buffers.keys().chain(self.scalars.keys()).cloned().collect()
    }
}

fn env() -> TestEnv {
    let mut e = TestEnv::default();
    let f = |v: &[f64]| Buffer::from_nums(DType::F32, Shape::D1(v.len()), v.iter().map(|&x| Num::Float(x)));
    e.buffers.insert("a".into(), f(&[0.5, 1.5, -1.0, 0.0]));
    e.buffers.insert("b".into(), f(&[0.5, 0.5, 0.5, 0.5]));
    e.buffers.insert("c".into(), f(&[1.0, 2.0, 3.0]));
    e.buffers.insert("m".into(), Buffer::from_nums(DType::I32, Shape::D2(3, 4), (0..12).map(Num::Int)));
    let mut u = Buffer::empty(DType::F32, Shape::D1(4));
    u.set(1, Num::Float(2.5));
    e.buffers.insert("u".into(), u);
    e.scalars.insert("n".into(), Value::Int(3));
    e.scalars.insert("blk".into(), Value::Dim3([16, 8, 1]));
    e
}

/// Parse `let x = EXPR` style input as an inspect statement and evaluate it.
fn ev(text: &str) -> Result<Value, Diagnostic> {
    let stmt = parse_statement(0, text)?;
    let StmtKind::Inspect(e) = stmt.kind else { panic!("not an expression: {text}") };
    eval(&e, &env(), text)
}

fn floats(v: &Value) -> Vec<f64> {
    let Value::Array(a) = v else { panic!("not an array: {v:?}") };
    (0..a.len()).map(|i| a.num(i).as_f64()).collect()
}

fn expect(text: &str) -> (bool, String) {
    let src = format!("expect {text}");
    let stmt = parse_statement(0, &src).unwrap();
    let StmtKind::Expect(Expect::Expr(e)) = stmt.kind else { panic!("not an expect") };
    let o = eval_expect(&e, &env(), &src).unwrap();
    (o.passed, o.message)
}

fn err(text: &str) -> Diagnostic {
    match parse_statement(0, text) {
        Err(d) => d,
        // What the session says for a name that is no module variable.
        Ok(Stmt { kind: StmtKind::SetSymbol { name, eq_span, .. }, .. }) => {
            super::parser::needs_let(text, &name, eq_span)
        }
        Ok(stmt) => {
            let e = match stmt.kind {
                StmtKind::Inspect(e) | StmtKind::Let { value: e, .. } | StmtKind::Expect(Expect::Expr(e)) => e,
                _ => panic!("no error for {text}"),
            };
            let r = match parse_statement(0, text).unwrap().kind {
                StmtKind::Expect(_) => eval_expect(&e, &env(), text).map(|_| ()),
                _ => eval(&e, &env(), text).map(|_| ()),
            };
            r.expect_err(text)
        }
    }
}

fn span_text(text: &str, d: &Diagnostic) -> String {
    let s = d.span.expect("a span");
    text[s.lo as usize..s.hi as usize].to_string()
}

#[test]
fn parses_every_statement_kind() {
    let s = parse_statement(0, "let a = zeros(1 << 20)").unwrap();
    let StmtKind::Let { name, name_span, .. } = s.kind else { panic!() };
    assert_eq!((name.as_str(), name_span.lo, name_span.hi), ("a", 4, 5));

    let s = parse_statement(0, "add_half<<<(n + 255) / 256, 256>>>(a, n);").unwrap();
    let StmtKind::Launch(l) = s.kind else { panic!() };
    assert_eq!(l.kernel, "add_half");
    assert_eq!((l.grid.exprs.len(), l.block.exprs.len(), l.args.len()), (1, 1, 2));
    assert!(matches!(&l.args[0].kind, ExprKind::Name(n) if n == "a"));
    assert!(l.shared.is_none());

    let s = parse_statement(0, "k<<<dim3(4, 4), (16, 16, 1), 1024>>>(m, 2 * n)").unwrap();
    let StmtKind::Launch(l) = s.kind else { panic!() };
    assert_eq!((l.grid.exprs.len(), l.block.exprs.len()), (2, 3));
    assert!(l.shared.is_some());

    assert!(matches!(parse_statement(0, "a[2:10]").unwrap().kind, StmtKind::Inspect(_)));
    assert!(matches!(parse_statement(0, "expect clean").unwrap().kind, StmtKind::Expect(Expect::Clean)));
    assert!(matches!(
        parse_statement(0, "expect finding race").unwrap().kind,
        StmtKind::Expect(Expect::Finding(FindingKind::Race, _))
    ));
    assert!(matches!(
        parse_statement(0, "expect all(a == 0.5)  # ok").unwrap().kind,
        StmtKind::Expect(Expect::Expr(_))
    ));
}

#[test]
fn precedence_is_pythons() {
    let bin = |t: &str| match parse_statement(0, t).unwrap().kind {
        StmtKind::Inspect(e) => match e.kind {
            ExprKind::Binary { op, .. } => op,
            k => panic!("{k:?}"),
        },
        _ => panic!(),
    };
    assert_eq!(bin("1 + 2 * 3"), BinOp::Add);
    assert_eq!(bin("1 << 2 + 3"), BinOp::Shl);
    assert_eq!(bin("a == 1 and b > 2 or n"), BinOp::Or);
    assert_eq!(bin("1 | 2 ^ 3 & 4"), BinOp::BitOr);
    assert_eq!(ev("1 + 2 * 3 ** 2").unwrap(), Value::Int(19));
    assert_eq!(ev("-2 ** 2").unwrap(), Value::Int(-4));
    assert_eq!(ev("2 ** 3 ** 2").unwrap(), Value::Int(512));
    assert_eq!(ev("2 ** -1").unwrap(), Value::Float(0.5));
    assert_eq!(ev("1 << 2 + 3").unwrap(), Value::Int(32));
    assert_eq!(ev("not 1 == 2").unwrap(), Value::Bool(true));
    assert_eq!(ev("true && !false").unwrap(), Value::Bool(true));
    assert_eq!(ev("-7 // 2").unwrap(), Value::Int(-4));
    assert_eq!(ev("-7 % 3").unwrap(), Value::Int(2));
    assert_eq!(ev("0x1F + 0b101 + 1_000").unwrap(), Value::Int(1036));
    assert_eq!(ev(".5 + 2. + 1e-1").unwrap(), Value::Float(2.6));
}

#[test]
fn parse_errors_point_at_the_problem_with_help() {
    let d = err("let = 3");
    assert_eq!(span_text("let = 3", &d), "=");
    assert!(d.help.is_some());
    let d = err("a = 3");
    assert!(d.message.contains("let a = 3"));
    assert!(d.help.unwrap().contains("`a[i] = ...`"));
    let d = err("expect finding racy");
    assert_eq!(span_text("expect finding racy", &d), "racy");
    assert!(d.help.unwrap().contains("`out_of_bounds`"));
    let d = err("x = 0.5;");
    assert_eq!(d.message, "a name gets its value with `let`: write `let x = 0.5`");
    let d = err("0.5q");
    assert_eq!(d.message, "invalid suffix `q` on a number");
    let d = err("1f");
    assert_eq!(d.message, "invalid suffix `f` on a number");
    assert_eq!(d.help.unwrap(), "a float needs a point in C too: `1.0f` or `1.0`");
    let d = err("0 <= n < 4");
    assert!(d.message.contains("chain"));
    let d = err("k<<<1, 2>>(a)");
    assert!(d.message.contains(">>>"), "{}", d.message);
    let d = err("zeros(4");
    assert!(d.message.contains("`,` or `)`"), "{}", d.message);
}

#[test]
fn numpy_semantics_and_dtypes() {
    let v = ev("a + 0.5").unwrap();
    assert_eq!(v.type_name(), "f32[4]");
    assert_eq!(floats(&v), vec![1.0, 2.0, -0.5, 0.5]);
    assert_eq!(ev("m + 0.5").unwrap().type_name(), "f64[3, 4]");
    assert_eq!(ev("m * 2").unwrap().type_name(), "i32[3, 4]");
    assert_eq!(ev("m / 2").unwrap().type_name(), "i32[3, 4]");
    assert_eq!(ev("m / 2.0").unwrap().type_name(), "f64[3, 4]");
    assert_eq!(ev("a + m[0]").unwrap().type_name(), "f64[4]");
    assert_eq!(ev("a > 0").unwrap().type_name(), "bool[4]");
    assert_eq!(ev("count(a > 0)").unwrap(), Value::Int(2));
    assert_eq!(ev("sum(a)").unwrap(), Value::Float(1.0));
    assert_eq!(ev("len(m)").unwrap(), Value::Int(12));
    assert_eq!(ev("sum(m)").unwrap(), Value::Int(66));
    assert_eq!(ev("max(m)").unwrap(), Value::Int(11));
    assert_eq!(ev("mean(a)").unwrap(), Value::Float(0.25));
    assert_eq!(ev("all(b == 0.5) and any(a < 0)").unwrap(), Value::Bool(true));
    // NEP 50: the Python float is rounded to f32 before comparing with f32 elements.
    assert_eq!(ev("all(array([0.1]) == 0.1)").unwrap(), Value::Bool(true));
    assert_eq!(ev("sqrt(4)").unwrap(), Value::Float(2.0));
    assert_eq!(ev("int(2.9) + float(1)").unwrap(), Value::Float(3.0));
    assert_eq!(ev("1.0 ~= 1.0000001").unwrap(), Value::Bool(true));
    assert_eq!(
        ev("array([1, 2], u32) - 3").unwrap(),
        Value::Array(ArrayValue::numbers(Buffer::from_nums(
            DType::U32,
            Shape::D1(2),
            [Num::Int(4294967294), Num::Int(4294967295)]
        )))
    );
}

/// Narrow and boolean dtypes: buffers of `unsigned char`, `short`, `bool`... keep their type in
/// arithmetic with Python numbers and wrap as C does; mixed signedness widens as numpy does.
#[test]
fn narrow_dtypes_keep_their_type_and_wrap() {
    let v = ev("array([250, 3], u8) + 10").unwrap();
    assert_eq!(v.type_name(), "u8[2]");
    assert_eq!(floats(&v), vec![4.0, 13.0]);
    assert_eq!(floats(&ev("array([127], i8) + 1").unwrap()), vec![-128.0]);
    assert_eq!(floats(&ev("array([65535], u16) * 2").unwrap()), vec![65534.0]);
    assert_eq!(ev("array([1], u8) + array([1], i8)").unwrap().type_name(), "i16[1]");
    assert_eq!(ev("array([1], u16) + array([1], i16)").unwrap().type_name(), "i32[1]");
    assert_eq!(ev("array([1], u8) + array([1], i32)").unwrap().type_name(), "i32[1]");
    assert_eq!(ev("array([1], u64) + array([1], i8)").unwrap().type_name(), "f64[1]");
    assert_eq!(ev("sum(array([200, 200], u8))").unwrap(), Value::Int(400));
    let b = ev("array([2, 0, -1], bool)").unwrap();
    assert_eq!(b.type_name(), "bool[3]");
    assert_eq!(floats(&b), vec![1.0, 0.0, 1.0]);
    assert_eq!(ev("zeros(3, i16)").unwrap().type_name(), "i16[3]");
}

/// `/` between integers is C's division, as in the kernel beside it and in CUDA host code; a
/// float on either side makes a float division, as in C.
#[test]
fn slash_between_integers_divides_as_c_does() {
    assert_eq!(ev("(1000 + 255) / 256").unwrap(), Value::Int(4));
    assert_eq!(ev("7 / 2").unwrap(), Value::Int(3));
    assert_eq!(ev("-7 / 2").unwrap(), Value::Int(-3));
    assert_eq!(ev("7 / -2").unwrap(), Value::Int(-3));
    assert_eq!(ev("n / 2").unwrap(), Value::Int(1));
    assert_eq!(ev("7 / 2.0").unwrap(), Value::Float(3.5));
    assert_eq!(ev("7.0 / 2").unwrap(), Value::Float(3.5));
    assert_eq!(ev("float(7) / 2").unwrap(), Value::Float(3.5));
    // `//` still floors, as in Python.
    assert_eq!(ev("-7 // 2").unwrap(), Value::Int(-4));
    // Elements and integer arrays keep their dtype and truncate toward zero.
    assert_eq!(ev("m[1, 3] / 2").unwrap(), Value::Int(3));
    let halves = ev("array([-7, -1, 0, 5, 7], i32) / 2").unwrap();
    let want = Buffer::from_nums(DType::I32, Shape::D1(5), [-3, 0, 0, 2, 3].map(Num::Int));
    assert_eq!(halves, Value::Array(ArrayValue::numbers(want)));
    assert_eq!(ev("array([7], u32) / 2").unwrap().type_name(), "u32[1]");
    assert_eq!(floats(&ev("array([7, -7], i32) / 2.0").unwrap()), vec![3.5, -3.5]);
    assert_eq!(floats(&ev("a / 2").unwrap()), vec![0.25, 0.75, -0.5, 0.0]);
    assert_eq!(ev("a / 2").unwrap().type_name(), "f32[4]");
    // Division by zero: an error for integers, inf or nan for floats.
    let d = err("7 / 0");
    assert_eq!(d.message, "integer division by zero");
    assert!(d.help.unwrap().contains("float"));
    assert_eq!(err("m / 0").message, "integer division by zero (at element 0)");
    assert_eq!(err("m / (m - 5)").message, "integer division by zero (at element 5)");
    assert_eq!(ev("7 / 0.0").unwrap(), Value::Float(f64::INFINITY));
    assert!(err("(-170141183460469231731687303715884105727 - 1) / -1").message.contains("overflow"));
}

#[test]
fn indexing_slices_and_range_errors() {
    assert_eq!(ev("a[-1]").unwrap(), Value::Float(0.0));
    assert_eq!(ev("a[1]").unwrap(), Value::Float(1.5));
    assert_eq!(floats(&ev("a[1:3]").unwrap()), vec![1.5, -1.0]);
    assert_eq!(floats(&ev("a[::2]").unwrap()), vec![0.5, -1.0]);
    assert_eq!(floats(&ev("a[::-1]").unwrap()), vec![0.0, -1.0, 1.5, 0.5]);
    assert_eq!(floats(&ev("a[-2:]").unwrap()), vec![-1.0, 0.0]);
    assert_eq!(floats(&ev("a[:10]").unwrap()).len(), 4);
    assert_eq!(floats(&ev("a[a > 0]").unwrap()), vec![0.5, 1.5]);
    assert_eq!(ev("m[1, 2]").unwrap(), Value::Int(6));
    assert_eq!(ev("m[-1, -1]").unwrap(), Value::Int(11));
    assert_eq!(ev("m[1]").unwrap().type_name(), "i32[4]");
    assert_eq!(ev("m[:, 0]").unwrap().type_name(), "i32[3]");
    assert_eq!(ev("m[0:2, 1:3]").unwrap().type_name(), "i32[2, 2]");
    let d = err("a[5]");
    assert_eq!(d.message, "index 5 is out of range for `a` (length 4, valid 0..=3 or -4..=-1)");
    assert_eq!(span_text("a[5]", &d), "5");
    assert_eq!(err("m[3, 0]").message, "row index 3 is out of range for `m` (3 rows, valid 0..=2 or -3..=-1)");
    assert!(err("a[::0]").message.contains("zero"));
    assert!(err("n[0]").message.contains("not an array"));
}

#[test]
fn evaluation_errors() {
    let d = err("a + c");
    assert_eq!(d.message, "length mismatch: `a` has 4 elements, `c` has 3");
    assert_eq!(span_text("a + c", &d), "+");
    assert!(err("m // 0").message.contains("integer division by zero"));
    assert!(err("7 % 0").message.contains("integer division by zero"));
    assert_eq!(ev("a / 0").unwrap().type_name(), "f32[4]");
    assert!(err("x + 1").help.unwrap().contains("let x"));
    assert_eq!(err("aa + 1").help.unwrap(), "did you mean `a`?");
    assert_eq!(err("zeroes(3)").help.unwrap(), "did you mean `zeros`?");
    assert!(err("random(4, i32)").message.contains("floats"));
    assert!(err("a & 1").message.contains("integers"));
    assert!(err("(1 << 126) * 4").message.contains("overflow"));
    let d = err("zeros(1 << 40)");
    assert_eq!(d.message, "zeros(1 << 40) asks for 4.0 TiB, but only 12.0 GiB of the buffer limit is left");
    assert!(d.help.unwrap().contains("--max-alloc"));
}

#[test]
fn constructors() {
    assert_eq!(ev("zeros(3)").unwrap().type_name(), "f32[3]");
    assert_eq!(ev("ones((2, 3), i32)").unwrap().type_name(), "i32[2, 3]");
    assert_eq!(floats(&ev("full(2, 7, dtype=f64)").unwrap()), vec![7.0, 7.0]);
    assert_eq!(floats(&ev("arange(4)").unwrap()), vec![0.0, 1.0, 2.0, 3.0]);
    assert_eq!(floats(&ev("arange(1, 2, 0.25)").unwrap()), vec![1.0, 1.25, 1.5, 1.75]);
    assert_eq!(floats(&ev("arange(5, 0, -2, int)").unwrap()), vec![5.0, 3.0, 1.0]);
    assert_eq!(floats(&ev("linspace(0, 1, 5)").unwrap()), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(ev("[[1, 2], [3, 4]]").unwrap().type_name(), "f32[2, 2]");
    assert_eq!(ev("array([1, 2, 3], i64)").unwrap().type_name(), "i64[3]");
    assert_eq!(ev("copy(a)").unwrap().type_name(), "f32[4]");
    assert_eq!(ev("randint(100, 0, 10, seed=1)").unwrap().type_name(), "i32[100]");
    let r = floats(&ev("randint(1000, -3, 3, seed=1)").unwrap());
    assert!(r.iter().all(|&x| (-3.0..3.0).contains(&x)) && r.contains(&-3.0) && r.contains(&2.0));
}

#[test]
fn random_is_stable_forever() {
    // These exact values are a promise: scripts and lessons rely on them.
    let r = floats(&ev("random(3, seed=3)").unwrap());
    let r64 = floats(&ev("random(2, f64, seed=3)").unwrap());
    let r0 = floats(&ev("random(2)").unwrap());
    let ints = floats(&ev("randint(4, 0, 100, seed=7)").unwrap());
    assert_eq!(r, [0.05145138502120972, 0.6479175090789795, 0.8670140504837036]);
    assert_eq!(r64, [0.05145141894999983, 0.6479175461992682]);
    assert_eq!(r0, [0.3245752453804016, 0.38223928213119507]);
    assert_eq!(ints, [5.0, 17.0, 71.0, 42.0]);
    assert_eq!(r, floats(&ev("random(3, seed=3)").unwrap()));
    assert!(r.iter().all(|&x| (0.0..1.0).contains(&x)));
}

#[test]
fn expect_messages_quote_the_learner() {
    assert_eq!(expect("all(b == 0.5)"), (true, String::new()));
    assert_eq!(
        expect("a == 0.5"),
        (
            false,
            "3 of 4 elements differ: a[1] = 1.5 (expected 0.5), a[2] = -1 (expected 0.5), a[3] = 0 (expected 0.5)"
                .into()
        )
    );
    assert_eq!(expect("all(a > 0)"), (false, "a > 0 is false at 2 of 4 elements: a[2] = -1, a[3] = 0".into()));
    assert_eq!(expect("all(a + 1 >= b)").1, "a + 1 >= b is false at 1 of 4 elements: (a + 1)[2] = 0, b[2] = 0.5");
    assert_eq!(expect("sum(a) ~= 10"), (false, "sum(a) = 1, expected ~= 10".into()));
    assert_eq!(expect("n == 4"), (false, "n = 3, expected == 4".into()));
    assert_eq!(expect("n == len(c) + 1").1, "n = 3, expected == len(c) + 1 (len(c) + 1 = 4)");
    assert_eq!(expect("m[1] == m[0]").1.split(':').next().unwrap(), "4 of 4 elements differ");
    assert_eq!(
        expect("m == 0").1,
        "11 of 12 elements differ: m[0, 1] = 1 (expected 0), m[0, 2] = 2 (expected 0), m[0, 3] = 3 (expected 0), m[1, 0] = 4 (expected 0), m[1, 1] = 5 (expected 0), ..."
    );
    assert_eq!(expect("any(a > 5)").1, "a > 5 is false at all 4 elements");
    assert_eq!(expect("n == 3 and a[0] == 1").1, "a[0] = 0.5, expected == 1");
    assert!(expect("n == 2 or n == 3").0);
    assert_eq!(expect("all(a ~= b)").1.split(':').next().unwrap(), "3 of 4 elements differ");
    let src = "expect a";
    let StmtKind::Expect(Expect::Expr(e)) = parse_statement(0, src).unwrap().kind else { panic!() };
    let d = eval_expect(&e, &env(), src).unwrap_err();
    assert!(d.message.contains("needs a condition"), "{}", d.message);
    assert!(d.help.is_some());
}

#[test]
fn expect_over_a_million_elements_is_fast() {
    let mut e = env();
    e.buffers.insert(
        "big".into(),
        Buffer::from_nums(DType::F32, Shape::D1(1 << 20), std::iter::repeat_n(Num::Float(0.5), 1 << 20)),
    );
    let src = "expect all(big == 0.5)";
    let StmtKind::Expect(Expect::Expr(x)) = parse_statement(0, src).unwrap().kind else { panic!() };
    let t = std::time::Instant::now();
    assert!(eval_expect(&x, &e, src).unwrap().passed);
    // Generous for debug builds; release is a few milliseconds.
    assert!(t.elapsed().as_millis() < 2000);
}

mod never_panic {
    use proptest::prelude::*;

    use super::*;
    use crate::script::{is_complete, split_inputs};

    const SEEDS: [&str; 14] = [
        "int N = 1 << 20; float s = 2.5f; dim3 b(16, 16);",
        "m[1, -1] += a[0:2] / 3u; blk.x",
        "cudaMalloc((void**)&d_x, N * sizeof(unsigned int));",
        "for (int i = 0; i < n; i++) { a[i] = 2 * b[i] + i; s += a[i]; }",
        "printf(\"%f\\n\", a[0]); std::cout << a << std::endl; np.zeros_like(a)",
        "float x[n][2]; print(a, sizeof(float *)); k[4, (1, 2)](a)",
        "let a = zeros((3, 4), i32)",
        "k<<<dim3(4, 4), (16, 16), 64>>>(a, n * 2)",
        "expect all(a[1:3] ~= b[::2] + 0.5) and n == 3",
        "m[-1, :] // 0 ** -1 << 200",
        "random(4, seed=3)[a > 0]",
        "sum(a) % 0.0 + int(1e300) - ~m",
        "arange(1 << 62, 0, -1 << 61, u64)",
        "__global__ void k(float *a) {\n a[0] = '}'; /* { */\n}",
    ];

    fn check(text: &str) {
        let _ = split_inputs(text);
        let _ = is_complete(text);
        if let Ok(stmt) = parse_statement(0, text) {
            match stmt.kind {
                StmtKind::Inspect(e) | StmtKind::Let { value: e, declared: None, .. } => {
                    let _ = eval(&e, &env(), text);
                }
                StmtKind::Expect(Expect::Expr(e)) => {
                    let _ = eval_expect(&e, &env(), text);
                }
                StmtKind::Let { name, value, declared: Some(d), .. } => {
                    if let Ok(v) = eval(&value, &env(), text) {
                        let _ = crate::script::habits::convert_declared(v, d, &name, &value, text);
                    }
                }
                StmtKind::Assign { target, value } => {
                    let _ = eval_assign(&target, &value, &env(), text);
                }
                StmtKind::Print(es) => {
                    for e in es {
                        let _ = eval(&e, &env(), text);
                    }
                }
                _ => {}
            }
        }
    }

    proptest! {
        #[test]
        fn random_strings(text in "[ -~\n]{0,40}") {
            check(&text);
        }

        #[test]
        fn mutated_statements(seed in 0..SEEDS.len(), cut in 0usize..60, insert in "[-+*/%<>=!~&|^()\\[\\]:,.0-9a-z_ #]{0,4}") {
            let s = SEEDS[seed];
            let at = (0..=cut.min(s.len())).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
            check(&format!("{}{}{}", &s[..at], insert, &s[at..]));
            check(&s[..at]);
        }
    }
}

#[test]
fn extreme_integers_are_errors_or_values_not_panics() {
    assert!(err("(-170141183460469231731687303715884105727 - 1) // -1").message.contains("overflow"));
    assert_eq!(floats(&ev("a[::170141183460469231731687303715884105727]").unwrap()), vec![0.5]);
}

/// Every row of the built-in table is a function the evaluator knows (it may want other
/// arguments, but never says "unknown function"), and a name not in the table is unknown.
#[test]
fn the_builtin_table_is_what_evaluation_knows() {
    for b in crate::script::builtins::BUILTINS {
        // Inside `let`, so that `print(a)` is a call, not the statement.
        let text = format!("let x = {}(a)", b.name);
        let StmtKind::Let { value, .. } = parse_statement(0, &text).unwrap().kind else { panic!("{text}") };
        if let Err(d) = eval(&value, &env(), &text) {
            assert!(!d.message.contains("unknown function"), "{text}: {}", d.message);
        }
    }
    let d = err("zeors(3)");
    assert!(d.message.contains("unknown function"), "{}", d.message);
    assert_eq!(d.help.unwrap(), "did you mean `zeros`?");
    let d = err("frobnicate(3)");
    assert!(d.help.unwrap().contains(":help functions"));
}

/// Long and deep expressions end in a clear error or a value, never a stack overflow; the
/// limit on nesting counts nesting, and a long flat chain is told it is long. Run on a thread
/// with a small stack (a test thread's 2 MiB) to prove the limits leave room.
#[test]
fn long_chains_and_deep_nesting_are_bounded_with_clear_errors() {
    let run = || {
        // A flat sum within the limit evaluates, as it reads: one level of nesting.
        let within = vec!["1"; super::parser::MAX_TREE_DEPTH - 10].join(" + ");
        assert_eq!(ev(&within).unwrap(), Value::Int(super::parser::MAX_TREE_DEPTH as i128 - 10));
        // A 20,000-term sum and a 6,000-operand `**` chain: errors that say why.
        let sum = vec!["1"; 20_000].join(" + ");
        let d = err(&sum);
        assert_eq!(d.message, "this expression is too long", "{d:?}");
        let pow = vec!["1"; 6_000].join(" ** ");
        let d = err(&pow);
        assert_eq!(d.message, "expression nested too deeply", "{d:?}");
        // Other chains: indexing, `and`, `or`, comparisons in a chain of `and`s.
        for text in [
            format!("a{}", "[0:4]".repeat(20_000)),
            vec!["true"; 20_000].join(" and "),
            vec!["false"; 20_000].join(" or "),
            vec!["-"; 20_000].join("") + "1",
            format!("{}1{}", "(".repeat(20_000), ")".repeat(20_000)),
            format!("{}1{}", "abs(".repeat(20_000), ")".repeat(20_000)),
            format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000)),
        ] {
            let d = err(&text);
            assert!(d.message.contains("too long") || d.message.contains("too deeply"), "{}: {d:?}", &text[..20]);
        }
    };
    std::thread::Builder::new().name("small stack".into()).stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn messages_say_what_is_wrong_with_extreme_sizes_and_empty_sums() {
    assert_eq!(
        err("zeros(2**100)").message,
        "a size of 1267650600228229401496703205376 elements is more than any buffer can hold"
    );
    assert_eq!(err("zeros(-3)").message, "a size can't be negative (it is -3)");
    assert!(
        err("linspace(0, 1, 2**70)").message.starts_with("a count of 1180591620717411303424 elements is more than")
    );
    // An empty sum is 0, not -0 (Rust's float sums start from -0.0).
    let Value::Float(s) = ev("sum(zeros(0))").unwrap() else { panic!() };
    assert!(s == 0.0 && s.is_sign_positive(), "{s}");
    let Value::Float(s) = ev("sum(zeros(0, f64))").unwrap() else { panic!() };
    assert!(s.is_sign_positive(), "{s}");
}

/// An environment with one `f32[1000]` buffer `a` (4,000 bytes) and `limit` bytes left.
struct Tight {
    a: Buffer,
    limit: u64,
}

impl Env for Tight {
    fn buffer(&self, name: &str) -> Option<&Buffer> {
        (name == "a").then_some(&self.a)
    }
    fn scalar(&self, _: &str) -> Option<&Value> {
        None
    }
    fn max_alloc_bytes(&self) -> u64 {
        self.limit
    }
}

#[test]
fn arrays_take_their_dtype_size_and_temporaries_count_against_the_limit() {
    let env = Tight { a: Buffer::from_nums(DType::F32, Shape::D1(1000), (0..1000).map(Num::Int)), limit: 10_000 };
    let run = |text: &str| {
        let stmt = parse_statement(0, text).unwrap();
        match stmt.kind {
            StmtKind::Inspect(e) | StmtKind::Let { value: e, .. } => eval(&e, &env, text).map(|_| ()),
            StmtKind::Expect(Expect::Expr(e)) => eval_expect(&e, &env, text).map(|_| ()),
            _ => unreachable!(),
        }
    };
    // An array holds its elements in its dtype: 4 bytes an `f32`, not 8.
    let Value::Array(made) = ev("ones(1000)").unwrap() else { panic!() };
    assert_eq!(made.size_bytes(), 4000);
    assert_eq!(made.into_buffer().size_bytes(), 4000);
    // Reading `a` copies nothing; one temporary of 4,000 bytes fits, and so does a long chain,
    // whose operands are given back as it goes.
    run("a + a").unwrap();
    run("a + a + a + a + a + a").unwrap();
    run("expect a + a == 2 * a").unwrap();
    // Two temporaries and the sum of them do not: 12,000 bytes.
    let d = run("(a + a) + (a + a)").unwrap_err();
    assert!(d.message.contains("needs 3.9 KiB more, but only 2.0 KiB of the buffer limit is left"), "{}", d.message);
    // A copy of a buffer counts too; `sum` makes no array.
    let env = Tight { limit: 3000, ..env };
    let stmt = parse_statement(0, "let b = a").unwrap();
    let StmtKind::Let { value, .. } = stmt.kind else { panic!() };
    let d = eval(&value, &env, "let b = a").unwrap_err();
    assert!(d.message.starts_with("a needs 3.9 KiB"), "{}", d.message);
    let stmt = parse_statement(0, "sum(a)").unwrap();
    let StmtKind::Inspect(e) = stmt.kind else { panic!() };
    assert_eq!(eval(&e, &env, "sum(a)").unwrap(), Value::Float(499500.0));
}

/// Ctrl-C stops a statement over many elements (it is checked every million or so).
#[test]
fn a_long_statement_stops_at_ctrl_c() {
    struct Stopped(Buffer);
    impl Env for Stopped {
        fn buffer(&self, name: &str) -> Option<&Buffer> {
            (name == "z").then_some(&self.0)
        }
        fn scalar(&self, _: &str) -> Option<&Value> {
            None
        }
        fn max_alloc_bytes(&self) -> u64 {
            1 << 30
        }
        fn cancelled(&self) -> bool {
            true
        }
    }
    let env = Stopped(Buffer::zeros(DType::F32, Shape::D1(3 << 20)));
    for text in ["z + z + z", "sum(z)", "all(z == 0)", "-z", "sqrt(z)", "z[z == 0]", "arange(1 << 22)"] {
        let stmt = parse_statement(0, text).unwrap();
        let StmtKind::Inspect(e) = stmt.kind else { panic!() };
        let d = eval(&e, &env, text).unwrap_err();
        assert!(d.message.contains("was stopped (Ctrl-C)"), "{text}: {}", d.message);
    }
    let text = "expect z + z + z == 0";
    let stmt = parse_statement(0, text).unwrap();
    let StmtKind::Expect(Expect::Expr(e)) = stmt.kind else { panic!() };
    assert!(eval_expect(&e, &env, text).unwrap_err().message.contains("was stopped (Ctrl-C)"));
}

/// `let`, or a C declaration, evaluated and converted as the session does.
fn declare(text: &str) -> Result<(String, Value), Diagnostic> {
    let StmtKind::Let { name, value, declared, .. } = parse_statement(0, text)?.kind else {
        panic!("not a let: {text}")
    };
    let v = eval(&value, &env(), text)?;
    let v = match declared {
        Some(d) => super::habits::convert_declared(v, d, &name, &value, text)?,
        None => v,
    };
    Ok((name, v))
}

fn assign(text: &str) -> Result<Assignment, Diagnostic> {
    let StmtKind::Assign { target, value } = parse_statement(0, text)?.kind else {
        panic!("not an assignment: {text}")
    };
    eval_assign(&target, &value, &env(), text)
}

#[test]
fn numbers_may_carry_c_suffixes() {
    assert_eq!(ev("2.5f").unwrap(), Value::Float(2.5));
    assert_eq!(ev("1.f + 1e-1F").unwrap(), Value::Float(1.1));
    assert_eq!(ev("256u + 1ull + 2LL + 3ul").unwrap(), Value::Int(262));
    assert_eq!(ev("0xffu").unwrap(), Value::Int(255));
    // A suffix never changes what `/` does: `7u / 2` is an integer division, as in C.
    assert_eq!(ev("7u / 2").unwrap(), Value::Int(3));
    assert_eq!(ev("7.0f / 2").unwrap(), Value::Float(3.5));
}

#[test]
fn c_declarations_are_lets_with_the_c_types_meaning() {
    assert_eq!(declare("int N = 1 << 20;").unwrap(), ("N".into(), Value::Int(1 << 20)));
    assert_eq!(declare("float s = 2.5f;").unwrap(), ("s".into(), Value::Float(2.5)));
    // `float x = 1;` is a float, so `x / 2` is 0.5 as in C.
    assert_eq!(declare("float x = 1;").unwrap().1, Value::Float(1.0));
    assert_eq!(declare("double d = 7 / 2;").unwrap().1, Value::Float(3.0));
    assert_eq!(declare("int i = 7 / 2.0;").unwrap().1, Value::Int(3));
    assert_eq!(declare("int i = -2.7").unwrap().1, Value::Int(-2));
    assert_eq!(declare("unsigned int u = 4000000000u;").unwrap().1, Value::Int(4_000_000_000));
    assert_eq!(declare("long long big = 1 << 40;").unwrap().1, Value::Int(1 << 40));
    assert_eq!(declare("size_t bytes = n * sizeof(float);").unwrap().1, Value::Int(12));
    assert_eq!(declare("bool ok = n > 2;").unwrap().1, Value::Bool(true));
    assert_eq!(declare("auto k = n * 2;").unwrap().1, Value::Int(6));
    let StmtKind::Let { declared, .. } = parse_statement(0, "unsigned long long x = 1;").unwrap().kind else {
        panic!()
    };
    assert_eq!(declared, Some(Declared::Integer { c_name: "unsigned long long", dtype: DType::U64 }));
    // A declared type is a promise: values that don't fit are errors, not silently wrapped.
    let d = declare("int big = 1 << 40;").unwrap_err();
    assert_eq!(d.message, "`1 << 40` is 1099511627776, which does not fit in `int`");
    assert!(d.help.unwrap().contains("long long"));
    assert!(declare("unsigned u = -1;").unwrap_err().message.contains("does not fit in `unsigned int`"));
    assert!(declare("int a = zeros(3);").unwrap_err().help.unwrap().contains("let a = zeros(3)"));
    // C arrays are buffers of the declared type, zeroed.
    let (name, v) = declare("float x[10];").unwrap();
    assert_eq!((name.as_str(), v.type_name()), ("x", "f32[10]".to_string()));
    assert_eq!(declare("int grid[2][3];").unwrap().1.type_name(), "i32[2, 3]");
    assert_eq!(declare("double h[n];").unwrap().1.type_name(), "f64[3]");
    // What has no meaning here says what to write instead.
    let no = |t: &str| parse_statement(0, t).unwrap_err();
    assert_eq!(no("int n;").message, "`n` needs a value");
    assert_eq!(no("float *d_x;").message, "no pointers at the prompt: write `let d_x = zeros(N)`");
    assert_eq!(no("double *d = 0;").message, "no pointers at the prompt: write `let d = zeros(N, f64)`");
    assert_eq!(no("int a = 1, b = 2;").message, "unexpected `,` after the statement");
    assert_eq!(no("int a, b;").message, "one name per declaration at the prompt");
    assert_eq!(no("int main() {").message, "`main` looks like a host function");
    assert_eq!(no("short s = 1;").message, "gridlab has no `short` values");
    assert_eq!(no("int h[3] = {1, 2, 3};").message, "no C array initialisers at the prompt");
    assert!(no("int h[3] = {1, 2, 3};").help.unwrap().contains("array([1, 2, 3], i32)"));
    // Type words that start an expression are not declarations.
    assert_eq!(ev("int(2.9)").unwrap(), Value::Int(2));
    assert_eq!(ev("float(n) / 2").unwrap(), Value::Float(1.5));
}

#[test]
fn dim3_values_are_launch_sizes() {
    assert_eq!(ev("dim3(16, 16)").unwrap(), Value::Dim3([16, 16, 1]));
    assert_eq!(ev("dim3()").unwrap(), Value::Dim3([1, 1, 1]));
    assert_eq!(ev("dim3((1000 + 255) / 256)").unwrap(), Value::Dim3([4, 1, 1]));
    assert_eq!(declare("dim3 block(16, 16);").unwrap(), ("block".into(), Value::Dim3([16, 16, 1])));
    assert_eq!(declare("dim3 block{32, 8};").unwrap().1, Value::Dim3([32, 8, 1]));
    assert_eq!(declare("dim3 grid = dim3(4, 4);").unwrap().1, Value::Dim3([4, 4, 1]));
    assert_eq!(declare("dim3 threads = 256;").unwrap().1, Value::Dim3([256, 1, 1]));
    assert_eq!(declare("dim3 one;").unwrap().1, Value::Dim3([1, 1, 1]));
    assert_eq!(declare("let b = dim3(2, 3, 4)").unwrap().1, Value::Dim3([2, 3, 4]));
    // Fields, as in CUDA; and equality between two sizes.
    assert_eq!(ev("blk.x * blk.y * blk.z").unwrap(), Value::Int(128));
    assert_eq!(ev("blk == dim3(16, 8)").unwrap(), Value::Bool(true));
    assert_eq!(ev("blk != dim3(16, 8, 2)").unwrap(), Value::Bool(true));
    assert_eq!(err("blk.w").message, "a dim3 has no field `w`");
    let d = err("blk * 2");
    assert_eq!(d.message, "`blk` is a dim3, a launch size, not a number");
    assert!(d.help.unwrap().contains("`blk.x`"));
    assert_eq!(err("-blk").message, "`blk` is a dim3, a launch size, not a number");
    assert_eq!(err("sum(blk)").message, "`blk` is a dim3, a launch size, not a number");
    assert_eq!(err("dim3(-1)").message, "a dim3 size is between 0 and 4294967295, not -1");
    assert!(err("dim3(1, 2, 3, 4)").message.contains("0 to 3 arguments"));
    assert!(err("dim3(1.5)").message.contains("must be an integer"));
    assert!(err("(2, 2)").help.unwrap().contains("dim3(16, 16)"));
}

#[test]
fn sizeof_gives_bytes_of_c_types() {
    assert_eq!(ev("sizeof(float)").unwrap(), Value::Int(4));
    assert_eq!(ev("sizeof(double) * 2").unwrap(), Value::Int(16));
    assert_eq!(ev("sizeof(unsigned int)").unwrap(), Value::Int(4));
    assert_eq!(ev("sizeof(long long)").unwrap(), Value::Int(8));
    assert_eq!(ev("sizeof(float *)").unwrap(), Value::Int(8));
    assert_eq!(ev("sizeof(i64)").unwrap(), Value::Int(8));
    let d = err("sizeof(a)");
    assert_eq!(d.message, "`sizeof(a)` of a buffer");
    assert!(d.help.unwrap().contains("len(a)"));
    assert_eq!(err("sizeof(banana)").message, "`banana` is not a type `sizeof` knows");
    assert_eq!(err("sizeof(1)").message, "`sizeof` takes a type here");
}

#[test]
fn elements_of_a_buffer_can_be_assigned() {
    let a = assign("a[3] = 5").unwrap();
    assert_eq!(a, Assignment { name: "a".into(), positions: vec![3], values: vec![Num::Float(5.0)] });
    assert_eq!(assign("a[-1] = 0.1").unwrap().positions, vec![3]);
    // f32 buffers store the value rounded to f32.
    assert_eq!(assign("a[-1] = 0.1").unwrap().values, vec![Num::Float(0.1f32 as f64)]);
    assert_eq!(assign("a[1:3] = 7").unwrap().positions, vec![1, 2]);
    assert_eq!(assign("a[:] = 0").unwrap().positions, vec![0, 1, 2, 3]);
    assert_eq!(assign("a[a < 1] = 1").unwrap().positions, vec![0, 2, 3]);
    assert_eq!(assign("a[::2] = [8, 9]").unwrap().values, vec![Num::Float(8.0), Num::Float(9.0)]);
    let m = assign("m[1, -1] = 70").unwrap();
    assert_eq!((m.positions, m.values), (vec![7], vec![Num::Int(70)]));
    assert_eq!(assign("m[0] = 1").unwrap().positions, vec![0, 1, 2, 3]);
    assert_eq!(assign("m[:, 0] = 2.0").unwrap().positions, vec![0, 4, 8]);
    // `+=` and the other compound assignments apply the operator, with the buffer's dtype.
    assert_eq!(assign("a[1] += 1").unwrap().values, vec![Num::Float(2.5)]);
    assert_eq!(assign("m[1, 3] /= 2").unwrap().values, vec![Num::Int(3)]);
    assert_eq!(assign("m[0, 1] -= 5").unwrap().values, vec![Num::Int(-4)]);
    assert_eq!(assign("a[0] *= a[1]").unwrap().values, vec![Num::Float(0.75)]);
    // Bounds, as when reading.
    let d = assign("a[4] = 1").unwrap_err();
    assert_eq!(d.message, "index 4 is out of range for `a` (length 4, valid 0..=3 or -4..=-1)");
    assert!(assign("m[3, 0] = 1").unwrap_err().message.starts_with("row index 3 is out of range"));
    // Dtypes: nothing is silently truncated or wrapped.
    let d = assign("m[0, 0] = 2.5").unwrap_err();
    assert_eq!(d.message, "`m` holds i32, but 2.5 is not a whole number");
    assert!(d.help.unwrap().contains("int(2.5)"));
    assert_eq!(assign("m[0, 0] = 1 << 40").unwrap_err().message, "1099511627776 does not fit in `m`'s i32 elements");
    assert!(assign("a[0] = 1e39").unwrap_err().message.contains("too large for `a`, which holds f32"));
    assert_eq!(
        assign("m[0] = [1, 2, 3.5, 4]").unwrap_err().message,
        "`m` holds i32, but 3.5 is not a whole number (element 2 of the value)"
    );
    assert_eq!(assign("a[0:2] = [1, 2, 3]").unwrap_err().message, "`a[0:2]` selects 2 elements, but the value has 3");
    // Only buffers have elements.
    assert_eq!(assign("n[0] = 1").unwrap_err().message, "`n` is int, not a buffer");
    assert_eq!(assign("zz[0] = 1").unwrap_err().message, "`zz` is not defined");
    assert_eq!(parse_statement(0, "(a)[0] + 1 = 2").unwrap_err().message, "only a buffer's elements can be assigned");
    let d = parse_statement(0, "n += 1").unwrap_err();
    assert_eq!(d.message, "`+=` needs `let` here: write `let n = n + 1`");
}

#[test]
fn print_exit_and_quit_are_statements() {
    let StmtKind::Print(args) = parse_statement(0, "print(a, n + 1)").unwrap().kind else { panic!() };
    assert_eq!(args.len(), 2);
    assert_eq!(parse_statement(0, "print()").unwrap_err().message, "`print()` with nothing to show");
    assert!(err("1 + print(a)").message.contains("a line of its own"));
    for quit in ["exit", "quit", "exit()", "quit();", "exit;"] {
        assert_eq!(parse_statement(0, quit).unwrap().kind, StmtKind::Quit, "{quit}");
    }
    // A name that merely starts with the word is an expression.
    assert!(matches!(parse_statement(0, "exit + 1").unwrap().kind, StmtKind::Inspect(_)));
}

#[test]
fn host_code_and_numpy_say_what_to_write_instead() {
    let no = |t: &str| parse_statement(0, t).unwrap_err();
    let d = no("cudaMalloc(&d_x, N * sizeof(float));");
    assert_eq!(d.message, "no `cudaMalloc` at the prompt: write `let d_x = zeros(N)`");
    assert_eq!(span_text("cudaMalloc(&d_x, N * sizeof(float));", &d), "cudaMalloc");
    assert_eq!(
        no("cudaMalloc((void **)&d_y, sizeof(double) * (1 << 20));").message,
        "no `cudaMalloc` at the prompt: write `let d_y = zeros(1 << 20, f64)`"
    );
    assert_eq!(
        no("cudaMallocManaged(&x, n*sizeof(int));").message,
        "no `cudaMallocManaged` at the prompt: write `let x = zeros(n, i32)`"
    );
    assert_eq!(
        no("cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice);").message,
        "no `cudaMemcpy` at the prompt: pass `x` to the kernel itself"
    );
    assert_eq!(
        no("cudaMemcpy(y, d_y, bytes, cudaMemcpyDeviceToHost);").message,
        "no `cudaMemcpy` at the prompt: type `d_y` to see it"
    );
    assert_eq!(no("cudaMemset(d, 0, bytes);").message, "no `cudaMemset` at the prompt: write `d[:] = 0`");
    assert_eq!(
        no("printf(\"%f %d\\n\", y[0], n);").message,
        "no `printf` at the prompt: type each to see it: `y[0]`, `n`"
    );
    assert_eq!(no("printf(\"done\\n\");").message, "no `printf` at the prompt: type a name to see its value");
    assert_eq!(no("std::cout << y[0] << std::endl;").message, "no `std::cout` at the prompt: type `y[0]` to see it");
    assert!(matches!(parse_statement(0, "print(\"y =\", y)").unwrap().kind, StmtKind::Print(_)));
    assert_eq!(no("print(f\"y = {y}\", y)").message, "the prompt has no strings: type `y` to see it");
    for t in ["cudaDeviceSynchronize();", "cudaFree(d_x);", "cudaGetLastError();", "cuda.synchronize()", "return 0;"] {
        let StmtKind::Nothing { note } = parse_statement(0, t).unwrap().kind else { panic!("{t}") };
        assert!(note.starts_with("nothing to "), "{t}: {note}");
    }
    // numpy's names are gridlab's, as a Numba learner writes them.
    assert!(matches!(parse_statement(0, "np.zeros(10)").unwrap().kind, StmtKind::Inspect(_)));
    assert!(matches!(parse_statement(0, "np.arange(8, dtype=np.int32)").unwrap().kind, StmtKind::Inspect(_)));
    assert_eq!(err("numpy.zeros_like(a)").message, "no `numpy.zeros_like` in gridlab: write `zeros(len(a))`");
    assert_eq!(
        err("np.frobnicate(a)").message,
        "no `np.frobnicate` in gridlab: `frobnicate` is not one of gridlab's functions"
    );
    assert_eq!(err("cuda.to_device(a)").message, "no `cuda.to_device` in gridlab: pass `a` to the kernel itself");
    assert_eq!(err("cuda.device_array(n)").message, "no `cuda.device_array` in gridlab: write `zeros(n)`");
    // A rewrite keeps what it is given (a dtype) and is offered only when it runs.
    assert_eq!(
        err("np.ones_like(a, dtype=np.float32)").message,
        "no `np.ones_like` in gridlab: write `ones(len(a), dtype=np.float32)`"
    );
    assert_eq!(
        err("np.zeros_like(nothing_here)").message,
        "no `np.zeros_like` in gridlab: `zeros_like` is not one of gridlab's functions"
    );
    // A device array's method, on a name that never became a buffer: what it was for.
    let d = err("d.copy_to_host()");
    assert!(
        d.message.starts_with("no `d.copy_to_host` in gridlab: a buffer is on the host and the device"),
        "{}",
        d.message
    );
    assert!(d.help.unwrap().contains("there is no `d` here"));
    let copy = err("a.copy_to_host()");
    assert_eq!(copy.message, "buffers have no methods: type `a` to see it");
    assert!(copy.help.unwrap().contains("on the host and the device at once"));
    assert_eq!(err("a.sum()").message, "buffers have no methods: write `sum(a)`");
    assert_eq!(err("a.fill(0)").message, "buffers have no methods: write `a[:] = 0`");
    assert_eq!(err("a.shape").message, "a buffer has no `.shape`: write `len(a)` (or `a.size`)");
    // NumPy's `a.size` and `a.ndim`, as a Numba launch passes them.
    assert_eq!(ev("a.size * 2").unwrap(), Value::Int(8));
    assert_eq!(ev("a.ndim").unwrap(), Value::Int(1));
    assert_eq!(
        no("for (int i = 0; i < n; i++) { a[i] = 2 * b[i] + i; }").message,
        "no `for` at the prompt: write `a[:] = 2 * b + arange(len(a))`"
    );
    assert_eq!(no("while (n > 0) n--;").message, "no `while` at the prompt: loops run in kernels");
    // Numba's launch is a launch, with the stream and shared bytes when given.
    let StmtKind::Launch(l) = parse_statement(0, "add[4, 256](a, n)").unwrap().kind else { panic!() };
    assert_eq!((l.kernel.as_str(), l.args.len(), l.shared.is_none()), ("add", 2, true));
    let StmtKind::Launch(l) = parse_statement(0, "k[(2, 2), (16, 16), 0, 1024](a)").unwrap().kind else { panic!() };
    assert_eq!((l.grid.exprs.len(), l.block.exprs.len(), l.shared.is_some()), (2, 2, true));
    assert!(no("k[4](a)").message.contains("blocks and threads"));
    // And `cost` measures one.
    let StmtKind::Cost { launch, .. } = parse_statement(0, "let c = cost k[32, 256](x, t, n)").unwrap().kind else {
        panic!()
    };
    assert_eq!((launch.kernel.as_str(), launch.args.len()), ("k", 3));
}

/// Slices and single elements of a buffer cost what they select, not the buffer's length, so
/// they work however little of the limit is left.
#[test]
fn selecting_a_few_elements_of_a_large_buffer_needs_little_room() {
    let env = Tight { a: Buffer::from_nums(DType::F32, Shape::D1(1000), (0..1000).map(Num::Int)), limit: 200 };
    for text in ["a[3]", "a[-1]", "a[0:10]", "a[995:]", "a[::200]", "a[10:0:-3]", "sum(a[0:5])"] {
        let StmtKind::Inspect(e) = parse_statement(0, text).unwrap().kind else { panic!() };
        eval(&e, &env, text).unwrap_or_else(|d| panic!("{text}: {}", d.message));
    }
    let StmtKind::Inspect(e) = parse_statement(0, "a[0:500]").unwrap().kind else { panic!() };
    assert!(eval(&e, &env, "a[0:500]").unwrap_err().message.contains("buffer limit"));
    // The count of a slice is what the slice selects.
    let bounds = [None, Some(-12), Some(-3), Some(0), Some(2), Some(7), Some(12), Some(i128::MIN), Some(i128::MAX)];
    for len in [0, 1, 5, 10] {
        for start in bounds {
            for stop in bounds {
                for step in [-i128::MAX, -3, -1, 1, 2, 7, i128::MAX] {
                    let n = super::eval::slice_positions(len, start, stop, step).len();
                    assert_eq!(super::eval::slice_count(len, start, stop, step), n, "{len} {start:?} {stop:?} {step}");
                }
            }
        }
    }
    for (len, start, stop, step) in [
        (10, None, None, 1),
        (10, Some(-3), None, 1),
        (10, None, None, -2),
        (10, Some(8), Some(2), -3),
        (0, None, None, 1),
        (5, Some(9), Some(1), 1),
    ] {
        assert_eq!(
            super::eval::slice_count(len, start, stop, step),
            super::eval::slice_positions(len, start, stop, step).len()
        );
    }
}

#[test]
fn statements_reading_unwritten_elements_of_an_empty_buffer_say_so() {
    // What was written reads; its length and a copy need no values.
    assert_eq!(floats(&ev("u[1:2]").unwrap()), vec![2.5]);
    assert_eq!(ev("len(u)").unwrap(), Value::Int(4));
    let Value::Array(c) = ev("copy(u)").unwrap() else { panic!() };
    let Data::Num(b) = c.data() else { panic!() };
    assert_eq!(b.unset_count(), 3);
    let d = err("u[2]");
    assert_eq!(d.message, "`u` was made with `empty(4)` and element 2 was never written: it has no value to read");
    assert_eq!(d.notes, vec!["3 of its 4 elements have not been written".to_string()]);
    assert!(d.help.unwrap().contains("`u[:] = 0`"));
    assert_eq!(span_text("sum(u)", &err("sum(u)")), "u");
    assert!(err("u[1:3]").message.contains("element 2 was never written"));
    assert!(err("u + 1").message.contains("element 0 was never written"));
    let (passed, _) = expect("len(u) == 4");
    assert!(passed);
    // A new empty buffer, in any dtype and shape.
    let Value::Array(e) = ev("empty((2, 3), i32)").unwrap() else { panic!() };
    let Data::Num(b) = e.data() else { panic!() };
    assert_eq!((b.dtype(), b.shape(), b.unset_count()), (DType::I32, Shape::D2(2, 3), 6));
}

/// A list literal given a dtype holds exactly what was written: a value the dtype cannot hold is
/// an error naming it, where a C cast would wrap or truncate it. Converting a whole buffer with
/// `array(a, u8)` is that cast, and still wraps.
#[test]
fn list_literals_with_a_dtype_are_checked_to_fit() {
    assert_eq!(floats(&ev("array([0, 255], u8)").unwrap()), vec![0.0, 255.0]);
    assert_eq!(ev("array([1, 2, 3], u8)").unwrap().type_name(), "u8[3]");
    for (text, value, message) in [
        ("array([1, 300], u8)", "300", "`300` is out of range for u8"),
        ("array([-1], u32)", "-1", "`-1` is out of range for u32"),
        ("array([1.5, 2], i32)", "1.5", "`1.5` is not a whole number, and i32 holds integers"),
        ("array([[1, 2], [3, 40000]], i16)", "40000", "`40000` is out of range for i16"),
        ("full(4, 256, u8)", "256", "`256` is out of range for u8"),
        ("array([1e39], f32)", "1e39", "`1e39` is too large for f32"),
    ] {
        let d = err(text);
        assert_eq!((d.message.as_str(), span_text(text, &d).as_str()), (message, value), "{text}");
    }
    assert_eq!(err("array([300], u8)").label.as_deref(), Some("u8 holds 0 to 255"));
    // A whole float is a whole number; C's bool takes any number as a truth value.
    assert_eq!(floats(&ev("array([2.0], i8)").unwrap()), vec![2.0]);
    assert_eq!(floats(&ev("array([2, 0], bool)").unwrap()), vec![1.0, 0.0]);
    // Converting a buffer is a cast, as `(unsigned char)x` in C.
    assert_eq!(floats(&ev("array(array([300, -1], i32), u8)").unwrap()), vec![44.0, 255.0]);
}

/// What a kernel storing into the same type computes: same-type arithmetic wraps in the
/// buffer's type, Python numbers take the buffer's type, and reductions do not wrap.
#[test]
fn unsigned_and_narrow_arithmetic_stays_in_its_type() {
    let v = ev("arange(8, u8) * 40").unwrap();
    assert_eq!(v.type_name(), "u8[8]");
    assert_eq!(floats(&v), vec![0.0, 40.0, 80.0, 120.0, 160.0, 200.0, 240.0, 24.0]);
    assert_eq!(floats(&ev("full(2, 250, u8) + 10").unwrap()), vec![4.0, 4.0]);
    assert_eq!(floats(&ev("full(2, 3, u32) - 5").unwrap()), vec![4294967294.0; 2]);
    assert_eq!(floats(&ev("full(1, 32767, i16) + 1").unwrap()), vec![-32768.0]);
    assert_eq!(floats(&ev("full(1, 200, u8) + full(1, 100, u8)").unwrap()), vec![44.0]);
    assert_eq!(ev("full(1, 200, u8) + full(1, 100, i32)").unwrap().type_name(), "i32[1]");
    assert_eq!(ev("sum(full(256, 255, u8))").unwrap(), Value::Int(65280));
    assert_eq!(ev("sum(full(2, 4294967295, u32))").unwrap(), Value::Int(8589934590));
    assert!(expect("full(256, 16, u32) == full(256, 16, u32)").0);
    assert!(expect("all(full(4, 16, u32) == 16)").0);
}

fn symbol(text: &str, dtype: DType, len: usize) -> Result<Vec<Num>, Diagnostic> {
    let stmt = parse_statement(0, text)?;
    let StmtKind::SetSymbol { value, .. } = stmt.kind else { panic!("not a set: {text}") };
    let target = super::eval::SymbolTarget { name: "coef", c_type: dtype.c_name(), dtype, len };
    super::eval::eval_symbol(&value, &env(), text, target)
}

/// `NAME = VALUE` parses as setting a module variable; the session decides whether `NAME` is
/// one. Its values are checked against the variable's element type and length.
#[test]
fn module_variables_take_lists_buffers_and_numbers() {
    let s = parse_statement(0, "coef = [0.25, 0.5];").unwrap();
    let StmtKind::SetSymbol { name, eq_span, .. } = s.kind else { panic!() };
    assert_eq!((name.as_str(), eq_span.lo), ("coef", 5));
    assert_eq!(
        symbol("coef = [0.25, 0.5, 0.5, 0.25]", DType::F32, 4).unwrap(),
        [0.25, 0.5, 0.5, 0.25].map(Num::Float).to_vec()
    );
    assert_eq!(symbol("coef = [1, 2]", DType::I32, 4).unwrap(), vec![Num::Int(1), Num::Int(2)]);
    assert_eq!(symbol("coef = c", DType::F32, 3).unwrap().len(), 3);
    assert_eq!(symbol("coef = 7", DType::U8, 1).unwrap(), vec![Num::Int(7)]);
    assert_eq!(symbol("coef = [[1, 2], [3, 4]]", DType::I32, 4).unwrap().len(), 4);
    for (text, dtype, len, message) in [
        (
            "coef = [1, 2, 3, 4, 5]",
            DType::F32,
            4,
            "too many values: `coef` holds 4 floats, and `[1, 2, 3, 4, 5]` has 5",
        ),
        ("coef = c", DType::F64, 3, "`c` is f32[3], but `coef` holds double (f64)"),
        ("coef = [1.5]", DType::I32, 4, "`1.5` is not a whole number, and i32 holds integers"),
        ("coef = 300", DType::U8, 1, "`300` is out of range for u8"),
        ("coef = 2", DType::F32, 4, "`coef` holds 4 floats, but `2` is an int"),
        ("coef = u", DType::F32, 4, "`u` was made with `empty(4)`"),
    ] {
        let d = symbol(text, dtype, len).expect_err(text);
        assert!(d.message.starts_with(message), "{text}: {}", d.message);
    }
    // Any other `NAME = VALUE` that does not parse asks for `let`, as before.
    assert!(err("x = 5 5").message.starts_with("a name gets its value with `let`"));
}

/// Strings exist for `expect printed`; elsewhere they are an error that says where they belong.
#[test]
fn expect_printed_takes_a_string_or_a_count_of_lines() {
    let s = parse_statement(0, r#"expect printed "Hello \"GPU\"\n""#).unwrap();
    let StmtKind::Expect(Expect::Printed { text, span }) = s.kind else { panic!() };
    assert_eq!((text.as_str(), span.lo), ("Hello \"GPU\"\n", 15));
    let s = parse_statement(0, "expect printed lines >= 2 * n").unwrap();
    let StmtKind::Expect(Expect::PrintedLines { op: BinOp::Ge, count, .. }) = s.kind else { panic!() };
    assert!(matches!(count.kind, ExprKind::Binary { op: BinOp::Mul, .. }));
    for (text, message, at) in [
        (r#"let s = "hi""#, "a string can't be used here", r#""hi""#),
        (r#"expect printed "open"#, "this string has no closing `\"`", r#""open"#),
        (r#"expect printed "a\qb""#, "unknown escape `\\q` in a string", r"\q"),
        ("expect printed", "expected a string or `lines` after `expect printed`, found the end of the line", ""),
        ("expect printed lines 3", "expected `==`, `<`, `>`, ... after `lines`, found number `3`", "3"),
        (r#"expect printed """#, "`expect printed \"\"` checks nothing", r#""""#),
        ("let c = 'x'", "a string can't be used here", "'x'"),
    ] {
        let d = err(text);
        assert_eq!((d.message.as_str(), span_text(text, &d).as_str()), (message, at), "{text}");
    }
    // A buffer called `printed` is still a buffer.
    assert!(matches!(parse_statement(0, "expect printed == 3").unwrap().kind, StmtKind::Expect(Expect::Expr(_))));
}

/// An environment with one `u32` buffer `w = [4294967295, 2147483647]` beside `env()`'s.
fn env_u32() -> TestEnv {
    let mut e = env();
    e.buffers
        .insert("w".into(), Buffer::from_nums(DType::U32, Shape::D1(2), [Num::Int(4294967295), Num::Int(2147483647)]));
    e
}

fn expect_in(env: &TestEnv, text: &str) -> Result<(bool, String), Diagnostic> {
    let src = format!("expect {text}");
    let stmt = parse_statement(0, &src).unwrap();
    let StmtKind::Expect(Expect::Expr(e)) = stmt.kind else { panic!("not an expect") };
    eval_expect(&e, env, &src).map(|o| (o.passed, o.message))
}

#[test]
fn a_bare_list_beside_a_buffer_takes_its_dtype_and_compares_exactly() {
    let e = env_u32();
    assert!(expect_in(&e, "w == [4294967295, 2147483647]").unwrap().0);
    assert!(expect_in(&e, "[4294967295, 2147483647] == w").unwrap().0);
    // One apart is told apart, where an f32 list rounded both to the same value.
    let (passed, message) = expect_in(&e, "w == [4294967294, 2147483647]").unwrap();
    assert!(!passed);
    assert!(message.contains("4294967294"), "{message}");
    // A value the dtype cannot hold says so.
    let d = expect_in(&e, "w == [4294967296, 1]").unwrap_err();
    assert_eq!(d.message, "`4294967296` is out of range for u32");
    assert!(d.notes.iter().any(|n| n.contains("takes its dtype")), "{:?}", d.notes);
    // Assigned to the buffer, the list is stored as written.
    let StmtKind::Assign { target, value } = parse_statement(0, "w[0:2] = [4294967294, 7]").unwrap().kind else {
        panic!()
    };
    let a = eval_assign(&target, &value, &e, "w[0:2] = [4294967294, 7]").unwrap();
    assert_eq!(a.values, vec![Num::Int(4294967294), Num::Int(7)]);
}

#[test]
fn a_field_of_an_undefined_record_says_the_record_is_not_defined() {
    let d = err("c0.time_us");
    assert_eq!(d.message, "`c0` is not defined");
    // A scalar that is defined still has no fields.
    assert_eq!(err("n.time_us").message, "`n` has no field `time_us`");
}

#[test]
fn a_python_body_typed_without_indentation_stays_with_its_function_up_to_a_blank_line() {
    use crate::script::{InputKind, split_inputs};
    let text = "@cuda.jit\ndef k(a, n):\ni = cuda.grid(1)\nif i <= n:\na[i] += 0.5\n\nlet b = 1\n";
    let inputs = split_inputs(text).unwrap();
    let kinds: Vec<InputKind> = inputs.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [InputKind::Python, InputKind::Statement], "{inputs:?}");
    assert!(inputs[0].text.ends_with("a[i] += 0.5"), "{:?}", inputs[0].text);
    // Indented as Python wants, a function still ends where its indented lines do.
    let inputs = split_inputs("@cuda.jit\ndef k(a):\n    a[0] = 1\nlet b = 1\n").unwrap();
    assert_eq!(inputs.len(), 2, "{inputs:?}");
}

/// A line parsed once serves the input that runs it with that input's source id: the tree
/// given another id is the tree parsed under it, for every kind of statement and expression.
#[test]
fn a_parsed_line_takes_another_source_id_whole() {
    let lines = [
        "let x = -a[i, 2:n:2] + f(1, seed=3) ** 2",
        "int n = 1 << 20;",
        "dim3 block(16, 16);",
        "a[3] += 5",
        "coef = [0.25, 0.5]",
        "k<<<(n + 255) // 256, (16, 16), 64>>>(a, n, not b)",
        "k[32, 256](a[::2], (1, 2))",
        "matrixMul<16><<<g, b>>>(a)",
        "let c = cost k<<<1, 32>>>(a)",
        "print(\"label:\", a, 1.5)",
        "expect a[0] ~= 1 and n == 2",
        "expect clean",
        "expect finding race",
        "expect printed \"Hello\"",
        "expect printed lines >= 2 * n",
        "cudaDeviceSynchronize();",
        "exit",
        "a",
    ];
    for line in lines {
        let mut moved = parse_statement(0, line).unwrap_or_else(|d| panic!("{line}: {}", d.message));
        moved.set_source(7);
        assert_eq!(moved, parse_statement(7, line).unwrap(), "{line}");
        assert_ne!(moved, parse_statement(0, line).unwrap(), "{line}: the id is in its spans");
    }
}
