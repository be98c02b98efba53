//! Tests of the parser, evaluation and `expect` messages together.

use std::collections::HashMap;

use crate::buffer::{Buffer, Num, Shape};
use crate::diag::Diagnostic;
use crate::dtype::DType;
use crate::finding::FindingKind;

use super::ast::{BinOp, Expect, ExprKind, StmtKind};
use super::{Env, eval, eval_expect, parse_statement};
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
    e.scalars.insert("n".into(), Value::Int(3));
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
    assert!(d.help.unwrap().contains("let a"));
    let d = err("expect finding racy");
    assert_eq!(span_text("expect finding racy", &d), "racy");
    assert!(d.help.unwrap().contains("`out_of_bounds`"));
    let d = err("x = 0.5f");
    assert_eq!(d.message, "invalid suffix `f` on a number");
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
        Value::Array(ArrayValue::new(Shape::D1(2), Data::Int(DType::U32, vec![4294967294, 4294967295])))
    );
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
    assert_eq!(halves, Value::Array(ArrayValue::new(Shape::D1(5), Data::Int(DType::I32, vec![-3, 0, 0, 2, 3]))));
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

    const SEEDS: [&str; 8] = [
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
                StmtKind::Inspect(e) | StmtKind::Let { value: e, .. } => {
                    let _ = eval(&e, &env(), text);
                }
                StmtKind::Expect(Expect::Expr(e)) => {
                    let _ = eval_expect(&e, &env(), text);
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
        let text = format!("{}(a)", b.name);
        if let Err(d) = ev(&text) {
            assert!(!d.message.contains("unknown function"), "{text}: {}", d.message);
        }
    }
    let d = err("zeors(3)");
    assert!(d.message.contains("unknown function"), "{}", d.message);
    assert_eq!(d.help.unwrap(), "did you mean `zeros`?");
    let d = err("frobnicate(3)");
    assert!(d.help.unwrap().contains(":help functions"));
}
