//! Random and mutated input through what runs on every key press: the highlighter
//! ([`super::highlighter::classify`]) and the completer ([`super::completer::complete`]). They
//! must never panic, the highlighter's pieces must cover the text contiguously on character
//! boundaries, and every completion must replace a range of the line that starts and ends on
//! character boundaries.

use proptest::prelude::*;

use super::Names;
use super::completer::complete;
use super::highlighter::classify;

/// Lines people type, from the test scripts and the course, to mutate.
fn corpus() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = Vec::new();
    for dir in ["tests/scripts", "tests/cuda-corpus", "lessons"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if let Ok(text) = std::fs::read_to_string(&f) {
                lines.extend(text.lines().map(str::to_string));
            }
        }
    }
    lines.push(":load tests/scripts/".into());
    lines.push(":lesson 0".into());
    lines
}

fn names() -> Names {
    Names {
        kernels: vec!["add_half".into(), "k".into(), "é".into()],
        device_functions: vec!["twice".into()],
        buffers: vec!["a".into(), "βuf".into()],
        scalars: vec!["n".into()],
        lessons: vec![("01-first".into(), "First".into())],
    }
}

/// The highlighter's and the completer's promises for `text` with the cursor at byte `pos`
/// (anywhere, even inside a character).
fn check(text: &str, pos: usize) {
    let names = names();
    let mut end = 0;
    for (_, r) in classify(text, &names) {
        assert_eq!(r.start, end, "pieces are contiguous in {text:?}");
        assert!(r.start < r.end, "no empty piece in {text:?}");
        assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end), "{r:?} in {text:?}");
        end = r.end;
    }
    assert_eq!(end, text.len(), "pieces cover {text:?}");
    for c in complete(text, pos, &names) {
        assert!(c.start <= c.end && c.end <= text.len(), "{c:?} in {text:?} at {pos}");
        assert!(text.is_char_boundary(c.start) && text.is_char_boundary(c.end), "{c:?} in {text:?} at {pos}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_text(text in "(?s).{0,60}", pos in 0usize..70) {
        check(&text, pos);
    }

    #[test]
    fn random_typing_of_gridlab_and_cuda(text in "[ -~\n\t\"'é#:/*<>]{0,60}", pos in 0usize..70) {
        check(&text, pos);
    }

    #[test]
    fn mutated_lines(
        which in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<bool>(), any::<prop::sample::Index>(), any::<char>()), 0..6),
        joined in any::<bool>(),
        pos in any::<prop::sample::Index>(),
    ) {
        let corpus = corpus();
        let mut chars: Vec<char> = which.get(&corpus).chars().collect();
        for (delete, at, c) in edits {
            let i = at.index(chars.len() + 1);
            if delete && i < chars.len() {
                chars.remove(i);
            } else {
                chars.insert(i, c);
            }
        }
        let mut text: String = chars.into_iter().collect();
        if joined {
            // Several lines at once, as a pasted kernel is.
            text = format!("{text}\n{}\n{text}", which.get(&corpus));
        }
        let pos = pos.index(text.len() + 2);
        check(&text, pos);
    }
}
