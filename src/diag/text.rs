//! Numbers written the way gridlab writes them everywhere (`1,048,576`, `4.0 MiB`, `16.8 MB`,
//! `12.3 us`). One home for each, so that a byte count reads the same in `:buffers`, `doctor`,
//! a simulator refusal and an error; it sits here, at the bottom, because the engines that
//! refuse a launch or an allocation quote numbers as much as the views do.

/// Binary byte counts, as memory sizes are quoted: `512 B`, `41.0 KiB`, `12.0 GiB`.
pub fn human_bytes(n: impl Into<u128>) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let n = n.into();
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// Decimal byte counts, as bandwidths and traffic are quoted: `16.8 MB`.
pub fn decimal_bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

/// Microseconds as `12.3 us` or `1.250 ms`.
pub fn format_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.3} ms", us / 1000.0)
    } else if us >= 10.0 {
        format!("{us:.1} us")
    } else {
        format!("{us:.2} us")
    }
}

/// Items in prose: "`a`", "`a` and `b`", "`a`, `b` and `c`".
pub fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `1048576` -> `1,048,576`.
pub fn thousands(n: impl Into<u128>) -> String {
    let s = n.into().to_string();
    if s.len() <= 3 {
        return s;
    }
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_prose() {
        let items = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(list(&items(&[])), "");
        assert_eq!(list(&items(&["`a`"])), "`a`");
        assert_eq!(list(&items(&["`a`", "`b`"])), "`a` and `b`");
        assert_eq!(list(&items(&["`a`", "`b`", "`c`"])), "`a`, `b` and `c`");
    }

    #[test]
    fn numbers_read_the_same_everywhere() {
        assert_eq!(human_bytes(512u64), "512 B");
        assert_eq!(human_bytes(41_984u64), "41.0 KiB");
        assert_eq!(human_bytes(4u128 << 40), "4.0 TiB");
        assert_eq!(decimal_bytes(16.8e6), "16.8 MB");
        assert_eq!(format_us(1250.0), "1.250 ms");
        assert_eq!(thousands(1_048_576u64), "1,048,576");
    }
}
