//! Plain-text helpers every view shares: measuring and cleaning coloured text. Numbers are
//! written by `diag::text` (`1,048,576`, `4.0 MiB`), below the engines that quote them too.

/// Remove ANSI escape sequences (colour codes), for transcripts and reports meant for files.
pub fn strip_ansi(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Columns a line takes on screen: characters, less ANSI escape sequences. Counts without
/// building the stripped string, since tables measure every cell.
pub fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    for c in s.chars() {
        match (esc, c) {
            (false, '\u{1b}') => esc = true,
            (true, c) if c.is_ascii_alphabetic() => esc = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_take_no_columns() {
        let red = "\u{1b}[31mred\u{1b}[0m!";
        assert_eq!(visible_width(red), 4);
        assert_eq!(strip_ansi(red.as_bytes()), "red!");
    }
}
