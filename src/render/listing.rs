//! The listing tables of the session's commands (`:buffers`, `:kernels`, `:device`,
//! `:reference`): the session gathers their rows, this room draws them.

use std::io::{self, Write};

use comfy_table::{Cell, CellAlignment, ColumnConstraint, Table};

/// Rows under a header.
#[derive(Debug, Default)]
pub struct Listing {
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
    /// Columns kept at their content's width (kinds, places); the others wrap when the table
    /// is fitted.
    pub whole: Vec<usize>,
    /// Columns of figures, aligned right.
    pub right: Vec<usize>,
    /// Fitted to the terminal's width, wrapping cells; otherwise as wide as its content.
    pub fit: bool,
}

impl Listing {
    /// A listing under `header`, fitted to the terminal.
    pub fn new(header: &[&'static str]) -> Listing {
        Listing { header: header.to_vec(), fit: true, ..Listing::default() }
    }

    pub fn row(&mut self, cells: impl IntoIterator<Item = impl Into<String>>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

/// Draw `listing`, `width` columns wide at most when it is fitted.
pub fn write_listing(out: &mut dyn Write, width: usize, listing: &Listing) -> io::Result<()> {
    let mut t = if listing.fit {
        super::fitted_table(width)
    } else {
        let mut t = Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.force_no_tty();
        t
    };
    t.set_header(listing.header.iter().copied());
    for row in &listing.rows {
        t.add_row(row.iter().enumerate().map(|(i, s)| {
            let cell = Cell::new(s);
            if listing.right.contains(&i) { cell.set_alignment(CellAlignment::Right) } else { cell }
        }));
    }
    for &i in &listing.whole {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    writeln!(out, "{t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_listing_wraps_to_the_width_and_keeps_whole_columns_whole() {
        let mut l = Listing::new(&["kind", "signature"]);
        l.whole = vec![0];
        l.row(["__global__", "void k(float *a, int n, float *b, float *c, float *d, float *e, float *f)"]);
        let mut out = Vec::new();
        write_listing(&mut out, 40, &l).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().all(|line| line.chars().count() <= 40), "{text}");
        assert!(text.contains("__global__"), "{text}");
    }

    #[test]
    fn figures_align_right_in_a_listing_as_wide_as_its_content() {
        let mut l = Listing { header: vec!["name", "SMs"], right: vec![1], ..Listing::default() };
        l.row(["h100", "132"]);
        l.row(["l4", "58"]);
        let mut out = Vec::new();
        write_listing(&mut out, 10, &l).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("┆  58 │") || text.contains("  58 │"), "{text}");
        assert!(text.lines().any(|line| line.chars().count() > 10), "not fitted: {text}");
    }
}
