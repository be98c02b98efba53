//! `:map`: which block and thread wrote each element of each written buffer.
//!
//! A 1-D buffer is a strip of cells, a 2-D buffer of a 2-D launch a grid of them. A cell is one
//! element, or a bucket of neighbours when the buffer is longer than the screen. A cell is the
//! block's index as a character (`0-9a-zA-Z`, then around again), so the map reads
//! `0000000011111111` as the lessons say; with colour it is also in its block's colour, lighter
//! for lower thread indices (the digit tells blocks apart where colours are hard to tell).
//! `·` nobody wrote it, `!` it was written twice or more, red cells after `│` are writes past
//! the end (not performed).

use std::io::{self, Write};

use owo_colors::OwoColorize;

use super::Style;
use crate::buffer::Shape;
use crate::diag::text::thousands;
use crate::finding::ThreadRef;
use crate::launch::{Dim3, WriteTrace};

/// One launch buffer with its write trace.
#[derive(Clone, Debug)]
pub struct MapBuffer {
    pub name: String,
    pub shape: Shape,
    pub trace: WriteTrace,
}

#[derive(Clone, Debug)]
pub struct MapView {
    /// `kernel<<<grid, block>>>`.
    pub launch: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub buffers: Vec<MapBuffer>,
}

const BLOCK_CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const HUES: [(u8, u8, u8); 8] = [
    (80, 140, 255),
    (80, 200, 120),
    (255, 170, 60),
    (180, 110, 255),
    (60, 200, 200),
    (230, 210, 80),
    (255, 120, 200),
    (200, 140, 90),
];
/// 1-D strips take at most this many rows of cells.
const MAX_STRIP_ROWS: usize = 8;
/// 2-D maps take at most this many rows.
const MAX_GRID_ROWS: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Nobody,
    Writer(u32),
    Many,
}

fn mark(t: &WriteTrace, lo: usize, hi: usize) -> Mark {
    let mut m = Mark::Nobody;
    for i in lo..hi.min(t.writes.len()) {
        match t.writes[i] {
            0 => {}
            1 if m == Mark::Nobody => m = Mark::Writer(t.last_writer[i]),
            1 => {}
            _ => return Mark::Many,
        }
    }
    m
}

struct Painter<'a> {
    style: &'a Style,
    block_threads: u64,
}

impl Painter<'_> {
    fn cell(&self, m: Mark) -> String {
        match m {
            Mark::Nobody => self.style.dim("·"),
            Mark::Many => self.style.error("!"),
            Mark::Writer(t) => {
                let block = t as u64 / self.block_threads;
                let digit = (BLOCK_CHARS[block as usize % BLOCK_CHARS.len()] as char).to_string();
                self.paint(&digit, t)
            }
        }
    }

    /// `text` in the colour of thread `t`'s block, lighter for lower thread indices.
    fn paint(&self, text: &str, t: u32) -> String {
        if !self.style.color {
            return text.to_string();
        }
        let block = t as u64 / self.block_threads;
        let (r, g, b) = HUES[block as usize % HUES.len()];
        let thread = t as u64 % self.block_threads;
        // Lower thread indices lighter, down to 55% for the last thread of the block.
        let f = 1.0 - 0.45 * thread as f64 / self.block_threads.max(1) as f64;
        let s = |c: u8| (c as f64 * f) as u8;
        text.truecolor(s(r), s(g), s(b)).to_string()
    }

    fn swatch(&self, block: u64) -> String {
        let t = (block * self.block_threads) as u32;
        format!("{}{}", block, self.paint("█", t))
    }
}

/// Who a global linear thread id is.
fn who(t: u32, grid: Dim3, block: Dim3) -> ThreadRef {
    let coords = |linear: u64, d: Dim3| {
        let (x, y) = (d.x.max(1) as u64, d.y.max(1) as u64);
        [(linear % x) as u32, ((linear / x) % y) as u32, (linear / (x * y)) as u32]
    };
    let bt = block.count().max(1);
    let ranks = [grid.rank(), block.rank()];
    ThreadRef { block: coords(t as u64 / bt, grid), thread: coords(t as u64 % bt, block), ranks }
}

pub fn write_map(out: &mut dyn Write, v: &MapView, style: &Style) -> io::Result<()> {
    let rest = format!("who wrote each element (grid {}, block {}; on the simulator)", v.grid, v.block);
    super::write_heading(out, &v.launch, &rest, style)?;
    let p = Painter { style, block_threads: v.block.count().max(1) };
    let two_d = v.grid.y > 1 || v.block.y > 1;
    let mut any = false;
    for b in &v.buffers {
        let written = b.trace.writes.iter().filter(|&&n| n > 0).count();
        if written == 0 && b.trace.out_of_bounds_total == 0 {
            writeln!(out, "{}: not written", style.bold(&b.name))?;
            continue;
        }
        any = true;
        let many = b.trace.writes.iter().filter(|&&n| n > 1).count();
        let len = b.trace.writes.len();
        let shape = match b.shape {
            Shape::D1(n) => format!("[{n}]"),
            Shape::D2(r, c) => format!("[{r}, {c}]"),
        };
        let mut parts = vec![format!("{} of {} written", thousands(written as u64), thousands(len as u64))];
        if many > 0 {
            parts.push(style.error(&format!("{} written twice or more", thousands(many as u64))));
        }
        if b.trace.out_of_bounds_total > 0 {
            let n = b.trace.out_of_bounds_total;
            parts.push(style.error(&format!("{} write{} out of bounds", thousands(n), if n == 1 { "" } else { "s" })));
        }
        writeln!(out, "{}{shape}: {}", style.bold(&b.name), parts.join(", "))?;
        let bucket = match b.shape {
            Shape::D2(r, c) if two_d && r > 0 && c > 0 => write_grid(out, &p, b, r, c, style.width)?,
            _ => write_strip(out, &p, b, style.width)?,
        };
        if bucket != "1 element" {
            writeln!(out, "{}", style.dim(&format!("       each cell = {bucket}")))?;
        }
        write_out_of_bounds(out, b, v, style)?;
    }
    if !any {
        return Ok(());
    }
    let key = if style.color {
        "character and colour = block, lighter = lower thread index"
    } else {
        "character = block index"
    };
    let mut items = vec![key, "· nobody wrote it", "! written twice or more"];
    if v.buffers.iter().any(|b| b.trace.out_of_bounds_total > 0) {
        items.push("× past the end");
    }
    writeln!(out, "{}", style.dim(&legend(&items, style.width)))?;
    if !style.color {
        return Ok(());
    }
    let blocks = v.grid.count();
    let mut line = String::from("blocks:");
    let mut w = line.len();
    for k in 0..blocks {
        let s = p.swatch(k);
        let sw = k.to_string().len() + 2;
        if w + sw + 4 > style.width {
            line.push_str(" ...");
            break;
        }
        line.push(' ');
        line.push_str(&s);
        w += sw;
    }
    writeln!(out, "{line}")
}

/// The legend's items joined with `; `, a line broken between items only, so that a mark stays
/// with its meaning (never `!` at the end of one line and `written twice` on the next).
fn legend(items: &[&str], width: usize) -> String {
    let mut text = String::new();
    let mut used = 0;
    for (i, item) in items.iter().enumerate() {
        let item = if i + 1 < items.len() { format!("{item};") } else { item.to_string() };
        let len = item.chars().count();
        if used > 0 && used + 1 + len > width {
            text.push('\n');
            used = 0;
        } else if used > 0 {
            text.push(' ');
            used += 1;
        }
        text.push_str(&item);
        used += len;
    }
    text
}

/// A 1-D strip, wrapped over up to [`MAX_STRIP_ROWS`] rows; returns what a cell holds.
fn write_strip(out: &mut dyn Write, p: &Painter, b: &MapBuffer, width: usize) -> io::Result<String> {
    let len = b.trace.writes.len();
    let cols = width.saturating_sub(8).max(8);
    let bucket = len.div_ceil(cols * MAX_STRIP_ROWS).max(1);
    let cells = len.div_ceil(bucket);
    let oob_after: Vec<i64> = b.trace.out_of_bounds.iter().map(|(i, _)| *i).filter(|&i| i >= len as i64).collect();
    for row in 0..cells.div_ceil(cols).max(1) {
        let first = row * cols;
        let mut line = format!("{:>6} ", first * bucket);
        for c in first..(first + cols).min(cells) {
            line.push_str(&p.cell(mark(&b.trace, c * bucket, (c + 1) * bucket)));
        }
        let last_row = (row + 1) * cols >= cells;
        if last_row && !oob_after.is_empty() {
            let max = oob_after.iter().copied().max().unwrap_or(len as i64);
            let room = cols.saturating_sub(cells - first + 1).clamp(1, 16);
            let n = ((max - len as i64) as usize / bucket + 1).min(room);
            line.push('│');
            line.push_str(&p.style.error(&"×".repeat(n)));
        }
        writeln!(out, "{line}")?;
    }
    Ok(if bucket == 1 { "1 element".into() } else { format!("{bucket} elements") })
}

/// A 2-D buffer as a grid of rows x cols, bucketed to fit; returns what a cell holds.
fn write_grid(
    out: &mut dyn Write,
    p: &Painter,
    b: &MapBuffer,
    rows: usize,
    cols: usize,
    width: usize,
) -> io::Result<String> {
    let cb = cols.div_ceil(width.saturating_sub(8).max(8)).max(1);
    let rb = rows.div_ceil(MAX_GRID_ROWS).max(1);
    for r0 in (0..rows).step_by(rb) {
        let mut line = format!("{r0:>6} ");
        for c0 in (0..cols).step_by(cb) {
            let mut m = Mark::Nobody;
            for r in r0..(r0 + rb).min(rows) {
                let lo = r * cols + c0;
                match (m, mark(&b.trace, lo, lo + cb.min(cols - c0))) {
                    (_, Mark::Many) => m = Mark::Many,
                    (Mark::Nobody, w) => m = w,
                    _ => {}
                }
            }
            line.push_str(&p.cell(m));
        }
        writeln!(out, "{line}")?;
    }
    Ok(match (rb, cb) {
        (1, 1) => "1 element".into(),
        (r, c) => format!("{r} x {c} elements"),
    })
}

fn write_out_of_bounds(out: &mut dyn Write, b: &MapBuffer, v: &MapView, style: &Style) -> io::Result<()> {
    let t = &b.trace;
    let Some(&(first, thread)) = t.out_of_bounds.first() else { return Ok(()) };
    let min = t.out_of_bounds.iter().map(|o| o.0).min().unwrap_or(first);
    let max = t.out_of_bounds.iter().map(|o| o.0).max().unwrap_or(first);
    let range = if min == max { format!("index {min}") } else { format!("indices {min} to {max}") };
    let more = if t.out_of_bounds_total > t.out_of_bounds.len() as u64 { " among those kept" } else { "" };
    writeln!(
        out,
        "{}",
        style.error(&super::prose(
            &format!(
                "× {} write{} out of bounds ({range}{more}; length {}), first by {}: not performed",
                thousands(t.out_of_bounds_total),
                if t.out_of_bounds_total == 1 { "" } else { "s" },
                t.writes.len(),
                who(thread, v.grid, v.block).describe()
            ),
            style
        ))
    )
}
