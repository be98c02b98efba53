//! Figures a lesson's prose quotes: times, warp steps, ratios, percentages and bandwidths that
//! gridlab prints. `replay` and `dev check` hold each one against what the lesson's blocks
//! really printed, so prose and program cannot drift apart (an estimate that changed with the
//! cost model, a step count that changed with the engine) any more than an ` ```output ` block
//! can.
//!
//! A figure matches a printed one of the same kind when it is the printed value as written or
//! rounded to the prose's digits (`6 us` for a printed `6.1 us`, never `5 us` for `5.7 us`);
//! after "about", "around" or "roughly" it may also be off by 5% (`about 120 us` for a printed
//! `124 us`). Sentences about a real GPU's measurements ("An H100 measures ...", "measured with
//! ncu") are not the simulator's to check, and are skipped.

/// What a figure counts. Times are kept in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Time,
    WarpSteps,
    Ratio,
    Percent,
    Bandwidth,
}

/// One figure in prose.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// As written: `about 6.5 us`.
    pub text: String,
    pub kind: Kind,
    /// In the kind's unit (microseconds for times).
    pub value: f64,
    /// The place of the last digit written, in the kind's unit: 0.1 for `6.5 us`, 1000 for
    /// `7 ms`.
    pub place: f64,
    /// Written with "about" (or "around", "roughly", "nearly", "~").
    pub about: bool,
}

/// Words that make a sentence a real GPU's measurement rather than gridlab's output.
const MEASURED: &[&str] =
    &["H100", "H200", "A100", "GPU", "GPU's", "GPUs", "measured", "measures", "measure", "ncu", "Nsight", "nvcc"];

/// Words before a number that make it approximate.
const ABOUT: &[&str] = &["about", "around", "roughly", "nearly", "approximately", "~"];

/// The figures in `prose` (Markdown), leaving out code spans, fenced blocks and sentences about
/// a real GPU's measurements.
pub fn in_prose(prose: &str) -> Vec<Figure> {
    let text = without_code(prose);
    let mut figures = Vec::new();
    for sentence in sentences(&text) {
        let words: Vec<&str> = sentence.split_whitespace().collect();
        if words.iter().any(|w| MEASURED.contains(&w.trim_matches(|c: char| !c.is_alphanumeric()))) {
            continue;
        }
        figures.extend(scan(&words, true));
    }
    figures
}

/// The figures gridlab printed in `output` (plain text, tables included): numbers with their
/// units, every number of a table row labelled "warp steps" (`:time`'s), and the value after a
/// `time_us` field (`cost`'s).
pub fn printed(output: &str) -> Vec<Figure> {
    let mut out = Vec::new();
    for line in output.lines() {
        // Table borders and cell separators are not words.
        let cleaned: String =
            line.chars().map(|c| if "│┆|┃┊".contains(c) || c.is_control() { ' ' } else { c }).collect();
        let words: Vec<&str> = cleaned.split_whitespace().collect();
        out.extend(scan(&words, false));
        let steps_row = cleaned.contains("warp steps");
        for (i, word) in words.iter().enumerate() {
            let kind = match i.checked_sub(1).map(|j| words[j]) {
                _ if steps_row => Kind::WarpSteps,
                Some(label) if label.ends_with("time_us") || label.ends_with("time_us:") => Kind::Time,
                _ => continue,
            };
            let Some((number, "")) = split_number(word.trim_end_matches(',')) else { continue };
            if let Ok(value) = number.replace(',', "").parse::<f64>() {
                out.push(Figure { text: number.to_string(), kind, value, place: 1.0, about: false });
            }
        }
    }
    out
}

/// Whether `figure` is one of `printed`, as the module's rules say.
pub fn backed(figure: &Figure, printed: &[Figure]) -> bool {
    printed.iter().filter(|p| p.kind == figure.kind).any(|p| {
        let rounded = (p.value / figure.place).round() * figure.place;
        let same = (rounded - figure.value).abs() <= figure.place * 1e-6 || (p.value - figure.value).abs() < 1e-9;
        same || (figure.about && (p.value - figure.value).abs() <= 0.05 * figure.value.abs().max(p.value.abs()))
    })
}

/// Figures in a run of words: a number followed by a unit (`6 us`, `819,200 warp steps`), or a
/// number with its unit attached (`6.8x`, `25%`, `5.7us`).
fn scan(words: &[&str], prose: bool) -> Vec<Figure> {
    let mut out = Vec::new();
    for (i, raw) in words.iter().enumerate() {
        let word = raw.trim_start_matches(['(', '[', '"', '*', '_']);
        let Some((number, rest)) = split_number(word) else { continue };
        let rest = rest.trim_end_matches([',', '.', ';', ':', ')', ']', '"', '*', '_', '!', '?']);
        let next = words.get(i + 1).map(|w| w.trim_end_matches([',', '.', ';', ':', ')', ']', '*', '_']));
        let after = words.get(i + 2).map(|w| w.trim_end_matches([',', '.', ';', ':', ')', ']', '*', '_']));
        let (kind, scale, unit_words) = match (rest, next, after) {
            ("x", ..) => (Kind::Ratio, 1.0, 0),
            ("%", ..) => (Kind::Percent, 1.0, 0),
            ("us" | "µs", ..) => (Kind::Time, 1.0, 0),
            ("ms", ..) => (Kind::Time, 1e3, 0),
            ("", Some("us" | "µs"), _) => (Kind::Time, 1.0, 1),
            ("", Some("ms"), _) => (Kind::Time, 1e3, 1),
            ("", Some("GB/s"), _) => (Kind::Bandwidth, 1.0, 1),
            ("", Some("warp"), Some("steps" | "step")) => (Kind::WarpSteps, 1.0, 2),
            _ => continue,
        };
        let Ok(value) = number.replace(',', "").parse::<f64>() else { continue };
        let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
        let place = 10f64.powi(-(decimals as i32)) * scale;
        let about = prose && i > 0 && ABOUT.contains(&words[i - 1].to_ascii_lowercase().as_str());
        let text = if about {
            format!("{} {}", words[i - 1], figure_text(words, i, unit_words))
        } else {
            figure_text(words, i, unit_words)
        };
        out.push(Figure { text, kind, value: value * scale, place, about });
    }
    out
}

fn figure_text(words: &[&str], i: usize, unit_words: usize) -> String {
    words[i..=(i + unit_words).min(words.len() - 1)]
        .join(" ")
        .trim_end_matches([',', '.', ';', ':', ')', '*', '_'])
        .to_string()
}

/// `819,200` and the rest of the word, for a word that starts with a number (digits, commas
/// between groups of three, one decimal point).
fn split_number(word: &str) -> Option<(&str, &str)> {
    let end = word
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || (c == ',' || c == '.') && word[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
        })
        .map_or(word.len(), |(i, _)| i);
    if end == 0 || !word.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some((&word[..end], &word[end..]))
}

/// `prose` without fenced blocks and code spans, which hold code rather than quoted figures.
fn without_code(prose: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in prose.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for piece in line.split('`') {
            if !in_code {
                out.push_str(piece);
            } else {
                out.push_str(" code ");
            }
            in_code = !in_code;
        }
        out.push('\n');
    }
    out
}

/// Sentences, ending at `.`, `!` or `?` before a space, or at a blank line.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in text.split("\n\n") {
        let flat = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut start = 0;
        let bytes = flat.as_bytes();
        for i in 0..bytes.len() {
            let ends = matches!(bytes[i], b'.' | b'!' | b'?') && bytes.get(i + 1).is_none_or(|b| *b == b' ');
            // `6.5` has no space after its point; `e.g.` and `i.e.` are not ends.
            if ends && !flat[..=i].ends_with("e.g.") && !flat[..=i].ends_with("i.e.") {
                out.push(flat[start..=i].to_string());
                start = i + 1;
            }
        }
        if start < flat.len() {
            out.push(flat[start..].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(figures: &[Figure]) -> Vec<&str> {
        figures.iter().map(|f| f.text.as_str()).collect()
    }

    #[test]
    fn figures_in_prose_are_found_with_their_units() {
        let prose = "The estimate is about 6.5 us, 819,200 warp steps and 7 ms; it is 6.8x faster \
                     at 25% occupancy, 2,900 GB/s. A `6 us` code span and 256 threads are not figures.";
        let f = in_prose(prose);
        assert_eq!(texts(&f), ["about 6.5 us", "819,200 warp steps", "7 ms", "6.8x", "25%", "2,900 GB/s"]);
        assert_eq!(f[2].value, 7000.0);
        assert_eq!(f[2].place, 1000.0);
        assert!(f[0].about && !f[1].about);
        assert_eq!(f[3].kind, Kind::Ratio);
    }

    #[test]
    fn sentences_about_a_real_gpu_and_fenced_blocks_are_left_out() {
        let prose = "An H100 measures about 120 us here. The simulator says 124 us.\n\n```text\n5 us\n```\n";
        assert_eq!(texts(&in_prose(prose)), ["124 us"]);
    }

    #[test]
    fn a_figure_matches_what_was_printed_as_written_rounded_or_about() {
        let out = printed("│ estimated time on NVIDIA H100 ┆ 124 us ┆ 6.1 us │\n  950,272 warp steps, clean\n");
        let check = |prose: &str| backed(&in_prose(prose)[0], &out);
        assert!(check("It takes 124 us."));
        assert!(check("It takes 6 us."), "6.1 rounds to 6");
        assert!(check("It takes about 120 us."), "within 5%");
        assert!(check("It takes 950,272 warp steps."));
        assert!(!check("It takes 120 us."), "not rounded to the prose's digits without 'about'");
        assert!(!check("It takes about 6.5 us."), "off by more than 5%");
        assert!(!check("It takes 5 us."));
        assert!(!check("It takes 124 warp steps."), "another kind");
    }

    #[test]
    fn table_rows_and_fields_give_figures_too() {
        let out = printed("│ simulated warp steps ┆ 393,216 ┆ 393,216 │\n  c48.time_us        55.421\n");
        assert!(backed(&in_prose("It takes 393,216 warp steps.")[0], &out));
        assert!(backed(&in_prose("It takes about 55 us.")[0], &out));
        assert!(!backed(&in_prose("It takes 55 warp steps.")[0], &out));
    }

    #[test]
    fn times_compare_across_units() {
        let out = printed("estimated 7,400 us\n");
        assert!(backed(&in_prose("That is 7.4 ms.")[0], &out));
    }
}
