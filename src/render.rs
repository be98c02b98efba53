//! Everything gridlab shows: arrays, findings, launch summaries and tables. Renderers write to
//! `&mut dyn Write` and take a [`Style`], never the terminal directly.

pub mod advice;
pub mod array;
pub mod batched;
pub mod cost;
pub mod findings;
pub mod handout;
pub mod info;
pub mod launch;
pub mod listing;
pub mod map;
pub mod markdown;
pub mod pager;
pub mod profile;
pub mod race;
pub mod style;
pub mod text;
pub mod timing;
pub mod why;

pub use style::Style;

use std::io::{self, Write};

use crate::cuda::ast::Function;

/// Output whose reader may go away (`gridlab replay ... | head -1`): once it has, what is
/// written is dropped instead of failing, so the command runs to its end and exits with its own
/// status; a closed pipe must not turn a failure into success, nor end a run half done.
pub struct Closable<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> Closable<W> {
    pub fn new(inner: W) -> Closable<W> {
        Closable { inner, closed: false }
    }
}

impl<W: Write> Write for Closable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            r => r,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            r => r,
        }
    }
}

/// Echo an input the way `replay` and `:load` show it: `>>> ` before the first line, `... `
/// before continuation lines.
pub fn write_echo(out: &mut dyn Write, text: &str, style: &Style) -> io::Result<()> {
    for (i, line) in text.lines().enumerate() {
        let prompt = if i == 0 { ">>> " } else { "... " };
        writeln!(out, "{}{}", style.dim(prompt), crate::diag::printable(line))?;
    }
    Ok(())
}

/// A heading: `title: rest` on one line when it fits, else the title, then `rest` wrapped and
/// indented under it.
pub fn write_heading(out: &mut dyn Write, title: &str, rest: &str, style: &Style) -> io::Result<()> {
    if title.chars().count() + 2 + rest.chars().count() <= style.width {
        writeln!(out, "{}: {rest}", style.bold(title))
    } else {
        writeln!(out, "{}\n  {}", style.bold(title), crate::diag::wrap(rest, style.width, 2))
    }
}

/// Prose wrapped to the terminal's width.
pub fn prose(text: &str, style: &Style) -> String {
    crate::diag::wrap(text, style.width, 0)
}

/// `add_half(float *a, int n)`.
pub fn signature(f: &Function) -> String {
    // Overloadable functions (operators, members) are named with their parameter types,
    // `operator+(float2, float2)`; a member function's object is its hidden `this`.
    let name = crate::cuda::ast::display_name(&f.name);
    let member = name != f.name && name.contains("::");
    let params: Vec<String> = f
        .params
        .iter()
        .filter(|p| !(member && p.name == "this"))
        .map(|p| {
            let ty = p.ty.c_name();
            let amp = if p.by_ref { "&" } else { "" };
            if ty.ends_with('*') { format!("{ty}{amp}{}", p.name) } else { format!("{ty} {amp}{}", p.name) }
        })
        .collect();
    format!("{name}({})", params.join(", "))
}

/// A table that wraps its cells to fit `width` columns: the listings (`listing.rs`) and `:info`.
pub fn fitted_table(width: usize) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    t.set_width(width.min(u16::MAX as usize) as u16);
    t
}
