//! Markdown for the terminal: headings, emphasis, inline code, lists, quotes, tables and code
//! blocks (CUDA and gridlab highlighted as at the prompt), wrapped to the terminal's width.
//!
//! Lines break only between words: punctuation stays with the word before it (never a `.` alone
//! at the start of a line), and inline code wider than a whole line breaks at its own spaces
//! rather than where the terminal would cut it. Code blocks are never wrapped.
//!
//! Without colour, the Markdown marks that carry meaning stay visible (`code` keeps its
//! backticks), so a plain transcript still reads as the author meant.

use std::io::{self, Write};

use comfy_table::{Attribute, Cell, CellAlignment, Color, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::Style;
use crate::script::highlight::{Known, spans};

/// A piece of text and how many columns it takes on screen.
struct Word {
    text: String,
    width: usize,
    /// Glued to the previous word (no space between): punctuation after inline code, say.
    glued: bool,
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    style: &'a Style,
    /// The commands and kernels a code block may name, for its colours (they live above).
    known: &'a Known<'a>,
    /// Prefixes of the containers we are in (quote bars, list indents).
    prefix: Vec<String>,
    /// The first line of a list item shows its bullet instead of the indent.
    bullet: Option<String>,
    words: Vec<Word>,
    /// Inline styles in force.
    bold: usize,
    italic: usize,
    link: Vec<String>,
    /// Blank line owed before the next block.
    gap: bool,
    lists: Vec<Option<u64>>,
    heading: Option<HeadingLevel>,
    /// Whitespace came after the last word: the next one is not glued to it.
    space: bool,
}

/// A Markdown table being read: its rows of cells, the first row the header.
#[derive(Default)]
struct TableText {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<CellText>>,
}

/// One cell: its text, and whether all of it is inline code (coloured as code).
#[derive(Default)]
struct CellText {
    text: String,
    code: bool,
}

impl CellText {
    fn push(&mut self, piece: &str, code: bool) {
        if self.text.is_empty() {
            self.code = code;
        } else if !code {
            self.code = false;
        }
        self.text.push_str(piece);
    }
}

/// Render `md` to `out`; `known` names the commands and kernels its code blocks may use, which
/// are coloured as at the prompt.
pub fn write_markdown(out: &mut dyn Write, md: &str, style: &Style, known: &Known<'_>) -> io::Result<()> {
    // A lesson is someone else's text: escape sequences in it are shown, never obeyed.
    let md = crate::diag::printable(md);
    let md = md.as_ref();
    let mut w = Writer {
        out,
        style,
        known,
        prefix: Vec::new(),
        bullet: None,
        words: Vec::new(),
        bold: 0,
        italic: 0,
        link: Vec::new(),
        gap: false,
        lists: Vec::new(),
        heading: None,
        space: false,
    };
    let mut code: Option<(String, String)> = None;
    let mut table: Option<TableText> = None;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        if let Some(t) = table.as_mut() {
            if let Event::End(TagEnd::Table) = event {
                let t = table.take().unwrap_or_default();
                w.table(&t)?;
            } else {
                t.read(event, w.style.color);
            }
            continue;
        }
        if let Some((lang, text)) = code.as_mut() {
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, text) = (std::mem::take(lang), std::mem::take(text));
                    w.code_block(&lang, &text)?;
                    code = None;
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::Paragraph) => w.block_start()?,
            Event::End(TagEnd::Paragraph) => w.flush_paragraph()?,
            Event::Start(Tag::Heading { level, .. }) => {
                w.block_start()?;
                w.heading = Some(level);
                w.bold += 1;
            }
            Event::End(TagEnd::Heading(_)) => {
                w.bold -= 1;
                w.flush_paragraph()?;
                w.heading = None;
            }
            Event::Start(Tag::BlockQuote(_)) => {
                w.block_start()?;
                w.prefix.push(w.style.dim("│ "));
                w.gap = false;
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                w.flush_paragraph()?;
                w.prefix.pop();
                w.gap = true;
            }
            Event::Start(Tag::List(first)) => {
                w.flush_paragraph()?;
                if w.lists.is_empty() {
                    w.block_start()?;
                }
                w.lists.push(first);
            }
            Event::End(TagEnd::List(_)) => {
                w.flush_paragraph()?;
                w.lists.pop();
                w.gap = w.lists.is_empty();
            }
            Event::Start(Tag::Item) => {
                w.flush_paragraph()?;
                let bullet = match w.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_string(),
                };
                w.prefix.push(" ".repeat(bullet.chars().count()));
                w.bullet = Some(bullet);
                w.gap = false;
            }
            Event::End(TagEnd::Item) => {
                w.flush_paragraph()?;
                w.prefix.pop();
                w.gap = false;
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                w.flush_paragraph()?;
                w.block_start()?;
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::Start(Tag::Table(alignments)) => {
                w.flush_paragraph()?;
                w.block_start()?;
                table = Some(TableText { alignments, rows: Vec::new() });
            }
            Event::Start(Tag::Emphasis) => w.italic += 1,
            Event::End(TagEnd::Emphasis) => w.italic -= 1,
            Event::Start(Tag::Strong) => w.bold += 1,
            Event::End(TagEnd::Strong) => w.bold -= 1,
            Event::Start(Tag::Link { dest_url, .. }) => w.link.push(dest_url.to_string()),
            Event::End(TagEnd::Link) => {
                if let Some(url) = w.link.pop() {
                    let shown = w.style.dim(&format!("({url})"));
                    // Punctuation right after the link stays glued to it.
                    w.push_word(shown, url.chars().count() + 2, false);
                }
            }
            Event::Text(t) => w.text(&t),
            Event::Code(t) => w.code(&t),
            Event::SoftBreak => w.space = true,
            Event::HardBreak => w.flush_line()?,
            Event::Rule => {
                w.block_start()?;
                let rule = "─".repeat(w.style.width.saturating_sub(w.prefix_width()).min(60));
                let prefix = w.prefix.concat();
                writeln!(w.out, "{prefix}{}", w.style.dim(&rule))?;
            }
            Event::Html(t) | Event::InlineHtml(t) => w.text(&t),
            _ => {}
        }
    }
    w.flush_paragraph()
}

impl TableText {
    /// Take in one event inside the table.
    fn read(&mut self, event: Event, color: bool) {
        match event {
            Event::Start(Tag::TableHead | Tag::TableRow) => self.rows.push(Vec::new()),
            Event::Start(Tag::TableCell) => {
                if self.rows.is_empty() {
                    self.rows.push(Vec::new());
                }
                if let Some(row) = self.rows.last_mut() {
                    row.push(CellText::default());
                }
            }
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => self.push(&t, false),
            Event::Code(t) if color => self.push(&t, true),
            Event::Code(t) => self.push(&format!("`{t}`"), true),
            Event::SoftBreak | Event::HardBreak => self.push(" ", false),
            _ => {}
        }
    }

    fn push(&mut self, piece: &str, code: bool) {
        if let Some(cell) = self.rows.last_mut().and_then(|r| r.last_mut()) {
            cell.push(piece, code);
        }
    }
}

impl Writer<'_> {
    fn prefix_width(&self) -> usize {
        self.prefix.iter().map(|p| crate::render::text::strip_ansi(p.as_bytes()).chars().count()).sum()
    }

    /// Columns left for text behind the container prefixes.
    fn room(&self) -> usize {
        self.style.width.saturating_sub(self.prefix_width()).max(20)
    }

    /// Inline code: one word, glued to what comes right before it; or, when it is wider than a
    /// whole line, one word per space-separated piece, so that it breaks at its own spaces.
    fn code(&mut self, t: &str) {
        let color = self.style.color;
        let marks = if color { 0 } else { 2 };
        let glued = !self.space;
        let width = t.chars().count() + marks;
        if width <= self.room() || !t.contains(' ') {
            let shown = if color { self.style.accent(t) } else { format!("`{t}`") };
            self.push_word(shown, width, glued);
            return;
        }
        let pieces: Vec<&str> = t.split_whitespace().collect();
        for (i, piece) in pieces.iter().enumerate() {
            let (open, close) = match color {
                true => ("", ""),
                false => (if i == 0 { "`" } else { "" }, if i + 1 == pieces.len() { "`" } else { "" }),
            };
            let shown = if color { self.style.accent(piece) } else { format!("{open}{piece}{close}") };
            let width = piece.chars().count() + open.len() + close.len();
            self.push_word(shown, width, glued && i == 0);
        }
    }

    /// A Markdown table, drawn as gridlab's other tables are, to the width left.
    fn table(&mut self, t: &TableText) -> io::Result<()> {
        let Some((head, body)) = t.rows.split_first() else { return Ok(()) };
        let color = self.style.color;
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
        table.set_width(self.room().min(u16::MAX as usize) as u16);
        if color {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        let cell = |c: &CellText, header: bool| {
            let cell = Cell::new(&c.text);
            match (color, header, c.code) {
                (true, true, _) => cell.add_attribute(Attribute::Bold),
                // DarkCyan is ANSI colour 6, the cyan of inline code outside tables.
                (true, false, true) => cell.fg(Color::DarkCyan),
                _ => cell,
            }
        };
        table.set_header(head.iter().map(|c| cell(c, true)));
        for row in body {
            table.add_row(row.iter().map(|c| cell(c, false)));
        }
        for (i, alignment) in t.alignments.iter().enumerate() {
            let alignment = match alignment {
                Alignment::Center => CellAlignment::Center,
                Alignment::Right => CellAlignment::Right,
                Alignment::Left | Alignment::None => CellAlignment::Left,
            };
            if let Some(column) = table.column_mut(i) {
                column.set_cell_alignment(alignment);
            }
        }
        let prefix = self.prefix.concat();
        for line in table.to_string().lines() {
            writeln!(self.out, "{prefix}{line}")?;
        }
        self.gap = true;
        Ok(())
    }

    fn block_start(&mut self) -> io::Result<()> {
        self.flush_paragraph()?;
        if self.gap {
            let prefix = self.prefix.concat();
            writeln!(self.out, "{}", prefix.trim_end())?;
        }
        self.gap = true;
        Ok(())
    }

    fn paint(&self, s: &str) -> String {
        let mut s = s.to_string();
        if self.italic > 0 {
            s = if self.style.color { format!("\x1b[3m{s}\x1b[23m") } else { format!("_{s}_") };
        }
        if self.bold > 0 {
            s = self.style.bold(&s);
        }
        if self.heading.is_some() {
            s = self.style.accent(&s);
        }
        s
    }

    /// Split text into words; a word that starts right after the previous piece (no space)
    /// is glued to it.
    fn text(&mut self, t: &str) {
        if t.starts_with(char::is_whitespace) {
            self.space = true;
        }
        for word in t.split_whitespace() {
            let glued = !self.space;
            let painted = if self.italic > 0 && !self.style.color {
                // One pair of underscores around the whole span reads better than one per word.
                word.to_string()
            } else {
                self.paint(word)
            };
            let width = word.chars().count();
            self.push_word(painted, width, glued);
            self.space = true;
        }
        self.space = t.ends_with(char::is_whitespace);
    }

    fn push_word(&mut self, text: String, width: usize, glued: bool) {
        let glued = glued && !self.words.is_empty();
        self.words.push(Word { text, width, glued });
        self.space = false;
    }

    fn flush_line(&mut self) -> io::Result<()> {
        let words = std::mem::take(&mut self.words);
        self.emit(words)
    }

    fn flush_paragraph(&mut self) -> io::Result<()> {
        if self.words.is_empty() {
            return Ok(());
        }
        let words = std::mem::take(&mut self.words);
        self.emit(words)?;
        if self.heading == Some(HeadingLevel::H1) || self.heading == Some(HeadingLevel::H2) {
            let prefix = self.prefix.concat();
            let width = self.style.width.saturating_sub(self.prefix_width()).min(60);
            writeln!(self.out, "{prefix}{}", self.style.dim(&"─".repeat(width)))?;
        }
        Ok(())
    }

    /// Write words wrapped to the width, each line behind the container prefixes.
    fn emit(&mut self, words: Vec<Word>) -> io::Result<()> {
        let room = self.room();
        // A word and the words glued to it (`a[i]` and the comma after it) break as one: the
        // line ends before them when they do not fit, rather than running past the width.
        let mut units: Vec<(String, usize)> = Vec::new();
        for w in words {
            match units.last_mut() {
                Some((text, width)) if w.glued => {
                    text.push_str(&w.text);
                    *width += w.width;
                }
                _ => units.push((w.text, w.width)),
            }
        }
        let mut lines: Vec<(String, usize)> = vec![(String::new(), 0)];
        for (text, width) in units {
            let (line, used) = lines.last_mut().expect("never empty");
            if *used > 0 && *used + 1 + width > room {
                lines.push((text, width));
                continue;
            }
            if *used > 0 {
                line.push(' ');
                *used += 1;
            }
            line.push_str(&text);
            *used += width;
        }
        for (i, (line, _)) in lines.into_iter().enumerate() {
            let mut prefix = self.prefix.clone();
            if i == 0
                && let Some(b) = self.bullet.take()
                && let Some(last) = prefix.last_mut()
            {
                *last = b;
            }
            writeln!(self.out, "{}{line}", prefix.concat())?;
        }
        Ok(())
    }

    fn code_block(&mut self, lang: &str, text: &str) -> io::Result<()> {
        // Code is never wrapped (a line cut mid-token reads as another program), so a block
        // whose longest line would pass the screen's edge gives up some of its indent first.
        let outer = self.prefix.concat();
        let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        let room = self.style.width.saturating_sub(crate::render::text::visible_width(&outer) + longest);
        let prefix = format!("{outer}{}", " ".repeat(room.min(4)));
        let highlight =
            self.style.color && matches!(lang, "cuda" | "c" | "cpp" | "c++" | "gridlab" | "starter" | "solution");
        for line in text.trim_end_matches('\n').lines() {
            if highlight {
                let mut painted = String::new();
                for (kind, range) in spans(line, self.known) {
                    painted.push_str(&self.style.token(kind).paint(&line[range]).to_string());
                }
                writeln!(self.out, "{prefix}{painted}")?;
            } else if self.style.color {
                writeln!(self.out, "{prefix}{}", self.style.dim(line))?;
            } else {
                writeln!(self.out, "{prefix}{line}")?;
            }
        }
        self.gap = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(md: &str, width: usize) -> String {
        let mut out = Vec::new();
        write_markdown(&mut out, md, &Style { color: false, width, big: false, ..Style::plain() }, &Known::NOTHING)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_code_block_gives_up_its_indent_before_it_passes_the_edge() {
        let md = "```cuda\nint x = 1;\nfor (int i = 0; i < n; i += stride) {\n```\n";
        assert_eq!(plain(md, 80), "    int x = 1;\n    for (int i = 0; i < n; i += stride) {\n");
        assert_eq!(plain(md, 39), "  int x = 1;\n  for (int i = 0; i < n; i += stride) {\n");
        assert_eq!(plain(md, 20), "int x = 1;\nfor (int i = 0; i < n; i += stride) {\n", "never cut");
    }

    #[test]
    fn paragraphs_wrap_and_keep_their_marks() {
        let md = "A kernel is the body of a loop: each of *many* threads runs it once, on its own element, \
                  found with `blockIdx.x * blockDim.x + threadIdx.x`.";
        let text = plain(md, 40);
        insta::assert_snapshot!(text, @r"
        A kernel is the body of a loop: each of
        many threads runs it once, on its own
        element, found with
        `blockIdx.x * blockDim.x + threadIdx.x`.
        ");
        for line in text.lines() {
            assert!(line.chars().count() <= 40 || line.contains('`'), "{line}");
        }
    }

    #[test]
    fn lists_quotes_and_code_blocks() {
        let md = "Steps:\n\n- read `a[i]`\n- add 0.5\n\n1. one\n2. two\n\n> **In Numba**\n>\n> ```python\n> i = cuda.grid(1)\n> ```\n\n```cuda\n__global__ void k() {}\n```\n";
        insta::assert_snapshot!(plain(md, 80), @r"
        Steps:

        • read `a[i]`
        • add 0.5

        1. one
        2. two

        │ In Numba
        │
        │     i = cuda.grid(1)

            __global__ void k() {}
        ");
    }

    #[test]
    fn tables_are_drawn_with_their_columns() {
        let md = "Built-ins:\n\n| variable | what it is |\n| --- | --- |\n| `threadIdx.x` | this thread's number \
                  inside its block: 0 to threads - 1 |\n| `blockIdx.x` | this thread's block |\n";
        insta::assert_snapshot!(plain(md, 50), @r"
        Built-ins:

        ┌───────────────┬─────────────────────────────┐
        │ variable      ┆ what it is                  │
        ╞═══════════════╪═════════════════════════════╡
        │ `threadIdx.x` ┆ this thread's number inside │
        │               ┆ its block: 0 to threads - 1 │
        │ `blockIdx.x`  ┆ this thread's block         │
        └───────────────┴─────────────────────────────┘
        ");
        // In colour: no backticks, the header bold, code cells coloured as code.
        let mut out = Vec::new();
        write_markdown(&mut out, md, &Style { color: true, width: 50, big: false, ..Style::plain() }, &Known::NOTHING)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\x1b[1m variable") && text.contains("\x1b[38;5;6m threadIdx.x"), "{text:?}");
        assert!(!text.contains('`'), "{text:?}");
    }

    #[test]
    fn punctuation_stays_with_the_word_before_it() {
        // `a[i]`, and `x`. would run one column past the width if their punctuation were kept on
        // the line regardless; the terminal would then cut it off onto a line of its own.
        let md = "The 32 threads of a warp execute each instruction together, loads included: `a[i]`, \
                  then `b[i]`. See [the guide](https://docs.nvidia.com). Done.";
        for width in 30..=80 {
            let text = plain(md, width);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?} in\n{text}");
                assert!(!line.starts_with(['.', ',', ':', ';', ')']), "{width}: {line:?} in\n{text}");
            }
            assert!(text.contains("`a[i]`,") && text.contains("`b[i]`.") && text.contains("com)."), "{text}");
        }
    }

    #[test]
    fn inline_code_wider_than_a_line_breaks_at_its_own_spaces() {
        let md = "The summary reads `24 writes out of bounds (indices 1000 to 1023; length 1000), first by block 3`.";
        let text = plain(md, 40);
        insta::assert_snapshot!(text, @r"
        The summary reads `24 writes out of
        bounds (indices 1000 to 1023; length
        1000), first by block 3`.
        ");
        // Code that fits on a line is never broken.
        assert_eq!(plain("A `blockIdx.x * blockDim.x` b", 26), "A\n`blockIdx.x * blockDim.x`\nb\n");
    }

    #[test]
    fn colour_highlights_code_and_drops_backticks() {
        let mut out = Vec::new();
        write_markdown(
            &mut out,
            "Use `atomicAdd`.\n\n```cuda\n__global__ void k() {}\n```",
            &Style { color: true, width: 80, big: false, ..Style::plain() },
            &Known::NOTHING,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\x1b["), "{text:?}");
        assert!(!text.contains('`'), "{text:?}");
        assert!(crate::render::text::strip_ansi(text.as_bytes()).contains("Use atomicAdd."));
    }
}
