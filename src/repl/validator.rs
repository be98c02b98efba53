//! Multi-line input: Enter inserts a new line instead of submitting while a bracket, a `/* */`
//! comment or a CUDA item is still open, with the same rule `replay` uses to split scripts.

use reedline::{ValidationResult, Validator};

use crate::script;

/// Complete inputs run on Enter; open ones keep reading. A lesson's pre-filled input, as it was
/// put there, is complete: a Python kernel would otherwise wait for the blank line that ends a
/// block typed at Python's prompt, and "Enter runs it" would be untrue.
pub struct InputValidator {
    pub prefill: super::prefill::Prefill,
}

impl Validator for InputValidator {
    fn validate(&self, line: &str) -> ValidationResult {
        if script::is_complete(line) || self.prefill.is_offered(line) || script::trailing_command(line).is_some() {
            ValidationResult::Complete
        } else {
            ValidationResult::Incomplete
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(text: &str) -> bool {
        matches!(InputValidator { prefill: Default::default() }.validate(text), ValidationResult::Complete)
    }

    #[test]
    fn a_prefilled_python_kernel_runs_on_enter_and_a_typed_one_waits_for_a_blank_line() {
        let kernel = "@cuda.jit\ndef k(a):\n    a[0] = 1";
        assert!(!complete(kernel));
        let prefill = crate::repl::prefill::Prefill::default();
        prefill.set(Some(kernel.to_string()));
        let v = InputValidator { prefill };
        assert!(matches!(v.validate(kernel), ValidationResult::Complete));
        assert!(matches!(v.validate("@cuda.jit\ndef k(a):\n    a[0] = 2"), ValidationResult::Incomplete));
    }

    #[test]
    fn a_python_kernel_typed_without_indentation_ends_at_a_blank_line_rather_than_never() {
        let flat = "@cuda.jit\ndef k(a, n):\ni = cuda.grid(1)\nif i <= n:\na[i] += 0.5";
        assert!(!complete(flat), "the blank line is still to come");
        assert!(complete(&format!("{flat}\n")), "a blank line ends it, so its error can be shown");
        assert!(!complete("@cuda.jit\n"), "a decorator alone waits for its function");
        assert!(!complete("@cuda.jit\ndef k(a):\n    a[0] = 1\n    if a[0] > 0:"), "an open block goes on");
    }

    #[test]
    fn open_kernels_and_brackets_keep_reading() {
        assert!(!complete("__global__ void k(int *a) {"));
        assert!(!complete("__global__ void k(int *a) {\n  a[0] = 1;"));
        assert!(complete("__global__ void k(int *a) {\n  a[0] = 1;\n}"));
        assert!(!complete("let a = [1, 2,"));
        assert!(complete("let a = [1, 2,\n 3]"));
        assert!(!complete("k<<<1, 1>>>(a,"));
        assert!(!complete("/* a comment"));
    }

    #[test]
    fn a_command_under_an_unfinished_kernel_runs() {
        assert!(complete("__global__ void k(int *a) {\n  a[0] = 1;\n:next"));
        assert_eq!(
            script::trailing_command("__global__ void k(int *a) {\n  a[0] = 1;\n:next\n"),
            Some((":next", "__global__ void k(int *a) {\n  a[0] = 1;"))
        );
        // The end of a `?:` is not a command, and nor is a command under finished text.
        assert!(!complete("__global__ void k(int *a) {\n  a[0] = 1 ? 2\n  : 3;"));
        assert_eq!(script::trailing_command("let a = 1\n:next"), None);
    }

    #[test]
    fn commands_and_blank_lines_are_complete() {
        assert!(complete(":help"));
        assert!(complete(":load missing {"));
        assert!(complete(""));
        assert!(complete("a"));
    }
}
