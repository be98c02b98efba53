//! "Did you mean ...?" by edit distance, for every misspelt name gridlab meets: `:` commands and
//! help topics, statement functions and variables, CUDA types, functions and identifiers. One
//! distance and one threshold, so a typo is caught the same way wherever it is typed.

/// The closest candidate within a distance that still looks like a typo of `name`.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (distance(name, c), c))
        // A one-letter name is "close" to every other one-letter name: only suggest where
        // something of the typed name survives.
        .filter(|(d, c)| *d <= limit && *d < name.chars().count().max(c.chars().count()))
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

/// Damerau-Levenshtein (optimal string alignment) distance: a swap of two neighbours is one
/// edit, since `flaot` is one slip of the fingers from `float`.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// `help` text for an unknown name, when something close exists.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_and_typos_are_close() {
        assert_eq!(distance("flaot", "float"), 1);
        assert_eq!(closest("flaot", ["int", "float", "double"]), Some("float"));
        assert_eq!(closest("threadIdz", ["threadIdx", "blockIdx"]), Some("threadIdx"));
        assert_eq!(closest("zzz", ["float"]), None);
        assert_eq!(closest("x", ["a"]), None, "nothing of `x` is in `a`");
        assert_eq!(closest("hepl", ["help", "hint"]), Some("help"));
        assert_eq!(closest("zeors", ["zeros", "ones"]), Some("zeros"));
    }
}
