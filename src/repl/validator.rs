//! Multi-line input: Enter inserts a new line instead of submitting while a bracket, a `/* */`
//! comment or a CUDA item is still open, with the same rule `replay` uses to split scripts.

use reedline::{ValidationResult, Validator};

use crate::script;

pub struct InputValidator;

impl Validator for InputValidator {
    fn validate(&self, line: &str) -> ValidationResult {
        if script::is_complete(line) { ValidationResult::Complete } else { ValidationResult::Incomplete }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(text: &str) -> bool {
        matches!(InputValidator.validate(text), ValidationResult::Complete)
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
    fn commands_and_blank_lines_are_complete() {
        assert!(complete(":help"));
        assert!(complete(":load missing {"));
        assert!(complete(""));
        assert!(complete("a"));
    }
}
