//! The CUDA source NVRTC compiles: gridlab's prelude, then every item of the session's module
//! in definition order, each behind a `#line` directive naming its snippet, so that NVRTC's
//! errors come back as the learner's own file and line. Kernels get `extern "C"` so their names
//! are not mangled (GPU-only ones too, unless they are templates, which C linkage cannot have,
//! or say `extern "C"` already). Template kernels' instances are launched by the mangled names
//! NVRTC gives for their name expressions (`matrixMul<16>`).
//!
//! GPU-only items (`cuda::GpuOnly`: templates, structs, vector types, ...) are in the module as
//! the learner wrote them, in definition order like the rest.

use crate::cuda::{ItemKind, Module};
use crate::diag::{Diagnostic, SourceMap, Span};

/// gridlab's helpers for kernels on the GPU (documented in the file itself).
pub const PRELUDE: &str = include_str!("../../../assets/prelude.cuh");

/// The whole module as one translation unit.
pub fn generate(module: &Module, sources: &SourceMap) -> String {
    let mut out = String::new();
    // The simulator reads cooperative groups without their header, which the learner's
    // `#include` line (not an item of the module) would have brought in. It comes before the
    // prelude, whose constants only fill in what CUDA's headers leave undefined.
    let cg = module.items().iter().any(|i| i.text.contains("cooperative_groups") || i.text.contains("cg::"));
    if cg {
        out.push_str("#include <cooperative_groups.h>\n");
    }
    out.push_str(PRELUDE);
    out.push('\n');
    if cg {
        // `cg` is the simulator's name for the namespace even where no line says so.
        if !module.items().iter().any(|i| i.text.contains("namespace cg =")) {
            out.push_str("namespace cg = cooperative_groups;\n");
        }
    }
    for item in module.items() {
        let line = line_in_source(sources, item.span);
        out.push_str(&format!("#line {line} \"@{}\"\n", item.source));
        let c_linkage = match item.gpu_only().and_then(|g| g.kernel.as_ref()) {
            Some(k) => !k.template && !k.extern_c,
            // Template kernels keep C++ linkage; launches find their instances by the mangled
            // names NVRTC gives their name expressions.
            None => item.kind == ItemKind::Kernel && item.template().is_none(),
        };
        let text = without_file_includes(&item.text);
        // `#include <cuda_fp16.h>` typed above a kernel is part of its item: the directive
        // lines go first, and `extern "C"` before the kernel itself (`extern "C" #include` is
        // no C++).
        let (directives, code) = leading_directives(&text);
        if c_linkage && !directives.is_empty() {
            out.push_str(directives);
            out.push_str(&format!("#line {} \"@{}\"\n", line + directives.matches('\n').count(), item.source));
            out.push_str("extern \"C\" ");
            out.push_str(code);
        } else {
            if c_linkage {
                out.push_str("extern \"C\" ");
            }
            out.push_str(&text);
        }
        out.push('\n');
    }
    out
}

/// The lines at the start of `text` that are preprocessor directives (or blank), and the rest.
fn leading_directives(text: &str) -> (&str, &str) {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if !(t.starts_with('#') || t.is_empty()) || !line.ends_with('\n') {
            break;
        }
        at += line.len();
    }
    text.split_at(at)
}

/// `text` with every `#include` that could read a local file blanked out (the line stays, so
/// NVRTC's line numbers still match). The front end refuses such lines already; this is the
/// last gate before the compiler, which would read the file and quote it in its errors.
fn without_file_includes(text: &str) -> std::borrow::Cow<'_, str> {
    let refused = |line: &str| {
        let t = line.trim_start();
        let Some(directive) = t.strip_prefix('#') else { return false };
        let directive = directive.trim_start();
        directive.strip_prefix("include").is_some_and(|rest| crate::cuda::lexer::include_refusal(rest).is_some())
    };
    if !text.lines().any(refused) {
        return std::borrow::Cow::Borrowed(text);
    }
    let kept: Vec<&str> = text.lines().map(|l| if refused(l) { "" } else { l }).collect();
    std::borrow::Cow::Owned(kept.join("\n"))
}

/// 1-based line of a span within its own source text (what `#line` counts).
fn line_in_source(sources: &SourceMap, span: Span) -> usize {
    let text = sources.get(span.source).map_or("", |f| f.text.as_str());
    text[..(span.lo as usize).min(text.len())].matches('\n').count() + 1
}

/// Turn NVRTC's log into diagnostics on the learner's lines. Lines look like
/// `@3(5): error: identifier "x" is undefined`; those from the prelude or without a place are
/// kept as notes of the first diagnostic (or a diagnostic of their own).
pub fn map_log(log: &str, sources: &SourceMap) -> Vec<Diagnostic> {
    let mut diags: Vec<Diagnostic> = Vec::new();
    for line in log.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        match parse_line(line) {
            Some((source, lineno, severity, message)) => {
                let mut d =
                    if severity == "warning" { Diagnostic::warning(message) } else { Diagnostic::error(message) };
                if let Some(span) = line_span(sources, source, lineno) {
                    d = d.at(span).label("NVRTC");
                }
                diags.push(d);
            }
            None if line.contains("compilation terminated")
                || line.ends_with("detected in the compilation of \"gridlab.cu\".") => {}
            None => match diags.last_mut() {
                Some(d) => d.notes.push(line.trim().to_string()),
                None => diags.push(Diagnostic::error(line.trim().to_string())),
            },
        }
    }
    diags
}

fn parse_line(line: &str) -> Option<(u32, usize, &str, String)> {
    let rest = line.strip_prefix('@')?;
    let (id, rest) = rest.split_once('(')?;
    let (lineno, rest) = rest.split_once("): ")?;
    let (severity, message) = rest.split_once(": ")?;
    let severity = severity.trim();
    if !matches!(severity, "error" | "warning" | "catastrophic error") {
        return None;
    }
    Some((id.parse().ok()?, lineno.parse().ok()?, severity, message.trim().to_string()))
}

/// The span of a line's text (without leading blanks) in a source.
fn line_span(sources: &SourceMap, source: u32, lineno: usize) -> Option<Span> {
    let text = &sources.get(source)?.text;
    let start: usize = text.split_inclusive('\n').take(lineno.checked_sub(1)?).map(str::len).sum();
    let line = text[start..].lines().next()?;
    let indent = line.len() - line.trim_start().len();
    Some(Span::new(source, start + indent, start + line.trim_end().len().max(indent + 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_that_read_files_never_reach_nvrtc() {
        let text = "#include <cuda_fp16.h>\n#include \"/etc/passwd\"\n# include <../../secret>\n__global__ void k() {}";
        assert_eq!(without_file_includes(text), "#include <cuda_fp16.h>\n\n\n__global__ void k() {}");
    }

    fn session(snippets: &[&str]) -> (Module, SourceMap) {
        let mut map = SourceMap::new();
        let mut module = Module::new();
        for (i, s) in snippets.iter().enumerate() {
            let id = map.add(format!("<input {}>", i + 1), *s, 10 * i as u32 + 1);
            module.add_for_gpu(id, s).unwrap();
        }
        (module, map)
    }

    #[test]
    fn gpu_only_items_are_in_the_source_with_their_lines() {
        let (module, map) = session(&[
            "union P { float x, y; };\n\ntemplate <typename T> __device__ T sq(T x) { return x * x; }",
            "__global__ void k(float4 *v, P *p) {\n  v[0].x = sq(p[0].x);\n}\ntemplate <typename T> __global__ void t(T *a) {}",
            "__global__ void plain(float *a) { a[0] = 1.0f; }",
        ]);
        // The union, and the kernel that uses it (and deduces `sq`'s argument), are GPU-only;
        // the templates are the front end's own.
        for i in module.items() {
            let expect_gpu_only = i.name == "P" || i.name == "k";
            assert_eq!(i.gpu_only().is_some(), expect_gpu_only, "{}", i.name);
            assert_eq!(i.template().is_some(), i.name == "sq" || i.name == "t", "{}", i.name);
        }
        let src = generate(&module, &map);
        assert!(src.contains("#line 1 \"@0\"\nunion P { float x, y; };\n"), "{src}");
        assert!(src.contains("#line 3 \"@0\"\ntemplate <typename T> __device__ T sq(T x)"), "{src}");
        assert!(src.contains("#line 1 \"@1\"\nextern \"C\" __global__ void k(float4 *v, P *p) {\n  v[0].x"), "{src}");
        // A template kernel cannot have C linkage.
        assert!(src.contains("#line 4 \"@1\"\ntemplate <typename T> __global__ void t"), "{src}");
        assert!(src.contains("#line 1 \"@2\"\nextern \"C\" __global__ void plain"), "{src}");
        // Definition order: the struct before the kernel that uses it.
        assert!(src.find("union P").unwrap() < src.find("void k(").unwrap());
    }

    #[test]
    fn every_item_gets_a_line_directive_and_kernels_extern_c() {
        let (module, map) = session(&[
            "#define N 4",
            "__device__ float sq(float x) { return x * x; }\n__global__ void k(float *a) {\n  a[0] = sq(N);\n}",
        ]);
        let src = generate(&module, &map);
        assert!(src.starts_with(PRELUDE));
        assert!(src.contains("#line 1 \"@0\"\n#define N 4\n"));
        assert!(src.contains("#line 1 \"@1\"\n__device__ float sq"));
        assert!(src.contains("#line 2 \"@1\"\nextern \"C\" __global__ void k(float *a) {"));
    }

    #[test]
    fn an_include_above_a_kernel_comes_before_its_extern_c() {
        assert_eq!(
            leading_directives("#include <cuda_fp16.h>\n__global__ void k() {}"),
            ("#include <cuda_fp16.h>\n", "__global__ void k() {}")
        );
        assert_eq!(leading_directives("__global__ void k() {}"), ("", "__global__ void k() {}"));
    }

    #[test]
    fn nvrtc_errors_point_at_the_learners_line() {
        let (_, map) = session(&["__global__ void k(float *a) {\n    a[0] = 1.0f;\n}"]);
        let log =
            "@0(2): error: identifier \"b\" is undefined\n\n1 error detected in the compilation of \"gridlab.cu\".\n";
        let diags = map_log(log, &map);
        assert_eq!(diags.len(), 1);
        let text = diags[0].to_plain(&map);
        assert!(text.contains("<input 1>:2:5"), "{text}");
        assert!(text.contains("identifier \"b\" is undefined"), "{text}");
    }

    #[test]
    fn lines_without_a_place_are_kept() {
        let map = SourceMap::new();
        let diags = map_log("nvrtc: error: invalid value for --gpu-architecture (-arch)\n", &map);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].message.contains("--gpu-architecture"));
    }
}
