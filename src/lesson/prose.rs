//! Markdown for the terminal: headings, emphasis, inline code, lists, quotes and code blocks
//! (CUDA and gridlab highlighted as at the prompt), wrapped to the terminal's width.
//!
//! Without colour, the Markdown marks that carry meaning stay visible (`code` keeps its
//! backticks), so a plain transcript still reads as the author meant.

use std::io::{self, Write};

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::render::Style;
use crate::render::style::token;
use crate::script::highlight::{Known, spans};
use crate::session::command;

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

/// Render `md` to `out`.
pub fn write_markdown(out: &mut dyn Write, md: &str, style: &Style) -> io::Result<()> {
    // A lesson is someone else's text: escape sequences in it are shown, never obeyed.
    let md = crate::diag::printable(md);
    let md = md.as_ref();
    let mut w = Writer {
        out,
        style,
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
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
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
            Event::Start(Tag::Emphasis) => w.italic += 1,
            Event::End(TagEnd::Emphasis) => w.italic -= 1,
            Event::Start(Tag::Strong) => w.bold += 1,
            Event::End(TagEnd::Strong) => w.bold -= 1,
            Event::Start(Tag::Link { dest_url, .. }) => w.link.push(dest_url.to_string()),
            Event::End(TagEnd::Link) => {
                if let Some(url) = w.link.pop() {
                    let shown = w.style.dim(&format!("({url})"));
                    w.push_word(shown, url.chars().count() + 2, false);
                    w.space = true;
                }
            }
            Event::Text(t) => w.text(&t),
            Event::Code(t) => {
                let shown = if w.style.color { w.style.accent(&t) } else { format!("`{t}`") };
                let width = t.chars().count() + if w.style.color { 0 } else { 2 };
                let glued = !w.space;
                w.push_word(shown, width, glued);
            }
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

impl Writer<'_> {
    fn prefix_width(&self) -> usize {
        self.prefix.iter().map(|p| crate::render::text::strip_ansi(p.as_bytes()).chars().count()).sum()
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
        let room = self.style.width.saturating_sub(self.prefix_width()).max(20);
        let mut lines: Vec<(String, usize)> = vec![(String::new(), 0)];
        for w in words {
            let (line, used) = lines.last_mut().expect("never empty");
            let sep = if *used == 0 || w.glued { 0 } else { 1 };
            if *used > 0 && *used + sep + w.width > room && !w.glued {
                lines.push((w.text, w.width));
                continue;
            }
            if sep == 1 {
                line.push(' ');
            }
            line.push_str(&w.text);
            *used += sep + w.width;
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
        let prefix = format!("{}    ", self.prefix.concat());
        let highlight =
            self.style.color && matches!(lang, "cuda" | "c" | "cpp" | "c++" | "gridlab" | "starter" | "solution");
        for line in text.trim_end_matches('\n').lines() {
            if highlight {
                let mut painted = String::new();
                let is_command = |w: &str| command::find(&command::listing(super::guide::COMMANDS), w).is_some();
                let known = Known { is_kernel: &|_| false, is_command: &is_command };
                for (kind, range) in spans(line, &known) {
                    painted.push_str(&token(kind).paint(&line[range]).to_string());
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
        write_markdown(&mut out, md, &Style { color: false, width, big: false }).unwrap();
        String::from_utf8(out).unwrap()
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
    fn colour_highlights_code_and_drops_backticks() {
        let mut out = Vec::new();
        write_markdown(
            &mut out,
            "Use `atomicAdd`.\n\n```cuda\n__global__ void k() {}\n```",
            &Style { color: true, width: 80, big: false },
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\x1b["), "{text:?}");
        assert!(!text.contains('`'), "{text:?}");
        assert!(crate::render::text::strip_ansi(text.as_bytes()).contains("Use atomicAdd."));
    }
}
