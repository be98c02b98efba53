//! Handouts: what `:export` writes, a document a learner can read on its own, as Markdown or as
//! one self-contained HTML file with the terminal's colours.
//!
//! A [`Document`] is a list of blocks (headings, prose, code, what ran and what it printed); the
//! lesson guide or the plain session fills it, and it writes itself in either form. The HTML
//! form turns the ANSI colour codes gridlab printed into `<span>`s with inline CSS
//! ([`ansi_to_html`]); everything else is escaped, so nothing in an output becomes markup.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// One input that ran and what it printed: plain for Markdown, with colour codes for HTML.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    pub input: String,
    pub output: String,
    pub colored: String,
    /// Where the session was when it ran (the open lesson's id), so a handout takes what ran
    /// in its own lesson only.
    pub chapter: Option<String>,
    /// The step of that lesson the learner was on, so that an attempt of their own is filed
    /// under the step it was typed in.
    pub step: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Heading(u8, String),
    /// Markdown prose.
    Prose(String),
    /// A short bold line before what it introduces ("The starter, the wrong version:").
    Label(String),
    /// Code shown, not run (`cuda` or `gridlab`).
    Code {
        lang: String,
        text: String,
    },
    /// A kernel that ran: its source, then what defining it printed.
    Kernel(Ran),
    /// Consecutive statements that ran, each followed by what it printed, in one block.
    Session(Vec<Ran>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn new(title: impl Into<String>) -> Document {
        Document { title: title.into(), blocks: Vec::new() }
    }

    /// Add what ran, a kernel in a block of its own, statements joined to the block before.
    pub fn ran(&mut self, ran: Ran, cuda: bool) {
        if cuda {
            self.blocks.push(Block::Kernel(ran));
        } else if let Some(Block::Session(runs)) = self.blocks.last_mut() {
            runs.push(ran);
        } else {
            self.blocks.push(Block::Session(vec![ran]));
        }
    }

    /// The inputs that ran and are in the document: kernels and statements.
    pub fn inputs(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| match b {
                Block::Kernel(_) => 1,
                Block::Session(runs) => runs.len(),
                _ => 0,
            })
            .sum()
    }

    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n", self.title);
        for block in &self.blocks {
            md.push('\n');
            match block {
                Block::Heading(level, text) => {
                    md.push_str(&format!("{} {text}\n", "#".repeat(usize::from((*level).clamp(2, 6)))))
                }
                Block::Prose(text) => md.push_str(&format!("{}\n", text.trim_end())),
                Block::Label(text) => md.push_str(&format!("**{text}**\n")),
                Block::Code { lang, text } => md.push_str(&fenced(lang, text)),
                Block::Kernel(ran) => {
                    md.push_str(&fenced("cuda", &ran.input));
                    if !ran.output.trim().is_empty() {
                        md.push('\n');
                        md.push_str(&fenced("text", &ran.output));
                    }
                }
                Block::Session(runs) => {
                    let mut text = String::new();
                    for ran in runs {
                        for (i, line) in ran.input.trim_end().lines().enumerate() {
                            text.push_str(if i == 0 { "> " } else { ". " });
                            text.push_str(line);
                            text.push('\n');
                        }
                        text.push_str(ran.output.trim_end());
                        if !ran.output.trim().is_empty() {
                            text.push('\n');
                        }
                    }
                    md.push_str(&fenced("text", &text));
                }
            }
        }
        md
    }

    /// One self-contained page: inline CSS, no scripts, no outside resources.
    pub fn html(&self) -> String {
        let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        h.push_str(&format!("<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n", escape(&self.title)));
        h.push_str(&format!("<h1>{}</h1>\n", escape(&self.title)));
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => {
                    let l = (*level).clamp(2, 6);
                    h.push_str(&format!("<h{l}>{}</h{l}>\n", escape(text)));
                }
                Block::Prose(text) => h.push_str(&markdown_to_html(text)),
                Block::Label(text) => h.push_str(&format!("<p class=\"label\">{}</p>\n", escape(text))),
                Block::Code { lang, text } => {
                    h.push_str(&format!("<pre class=\"code {}\">{}</pre>\n", escape(lang), escape(text.trim_end())))
                }
                Block::Kernel(ran) => {
                    h.push_str(&format!("<pre class=\"code cuda\">{}</pre>\n", escape(ran.input.trim_end())));
                    if !ran.output.trim().is_empty() {
                        h.push_str(&format!("<pre class=\"out\">{}</pre>\n", ansi_to_html(ran.colored.trim_end())));
                    }
                }
                Block::Session(runs) => {
                    h.push_str("<pre class=\"out\">");
                    for ran in runs {
                        h.push_str(&format!("<span class=\"in\">&gt; {}</span>\n", escape(ran.input.trim_end())));
                        if !ran.output.trim().is_empty() {
                            h.push_str(&ansi_to_html(ran.colored.trim_end()));
                            h.push('\n');
                        }
                    }
                    h.push_str("</pre>\n");
                }
            }
        }
        h.push_str("</body>\n</html>\n");
        h
    }
}

/// A dark page, as the terminal was; the colours of the ANSI palette are set inline.
const CSS: &str =
    "body { max-width: 60rem; margin: 2rem auto; padding: 0 1rem; font-family: sans-serif; line-height: 1.5; }
pre { padding: 0.75rem; overflow-x: auto; border-radius: 4px; }
pre.code { background: #f4f4f4; color: #111; }
pre.out { background: #1e1e1e; color: #e5e5e5; }
span.in { color: #ffffff; font-weight: bold; }
p.label { font-weight: bold; margin-bottom: 0.2rem; }
code { background: #f0f0f0; padding: 0 0.2rem; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 0.2rem 0.5rem; }
";

/// A fenced block whose fence no line of `body` can close.
fn fenced(lang: &str, body: &str) -> String {
    let longest = body.lines().map(|l| l.trim_start().chars().take_while(|&c| c == '`').count()).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", body.trim_end())
}

/// Text made safe inside HTML elements and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Other control characters would be invisible or worse: shown as a code.
            c if c.is_control() && c != '\n' && c != '\t' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The 16 colours of the ANSI palette, as xterm draws them.
const PALETTE: [&str; 16] = [
    "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5", "#666666", "#f14c4c",
    "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
];

/// An xterm 256-colour index as CSS.
fn color256(n: u8) -> String {
    match n {
        0..=15 => PALETTE[usize::from(n)].to_string(),
        16..=231 => {
            let n = n - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * u32::from(v) };
            format!("#{:02x}{:02x}{:02x}", level(n / 36), level((n / 6) % 6), level(n % 6))
        }
        _ => {
            let v = 8 + 10 * u32::from(n - 232);
            format!("#{v:02x}{v:02x}{v:02x}")
        }
    }
}

/// The text attributes an SGR sequence leaves in force.
#[derive(Clone, Default, PartialEq, Eq)]
struct Sgr {
    fg: Option<String>,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
}

impl Sgr {
    fn apply(&mut self, params: &str) {
        let codes: Vec<u32> = params.split(';').map(|p| p.parse().unwrap_or(0)).collect();
        let mut i = 0;
        while i < codes.len() {
            match codes[i] {
                0 => *self = Sgr::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                22 => (self.bold, self.dim) = (false, false),
                23 => self.italic = false,
                24 => self.underline = false,
                c @ 30..=37 => self.fg = Some(PALETTE[(c - 30) as usize].to_string()),
                c @ 90..=97 => self.fg = Some(PALETTE[(c - 90 + 8) as usize].to_string()),
                39 => self.fg = None,
                38 if codes.get(i + 1) == Some(&5) => {
                    self.fg = codes.get(i + 2).map(|&n| color256(n.min(255) as u8));
                    i += 2;
                }
                38 if codes.get(i + 1) == Some(&2) => {
                    let c = |k: usize| codes.get(i + k).copied().unwrap_or(0).min(255);
                    self.fg = Some(format!("#{:02x}{:02x}{:02x}", c(2), c(3), c(4)));
                    i += 4;
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn css(&self) -> String {
        let mut css = Vec::new();
        if let Some(fg) = &self.fg {
            css.push(format!("color:{fg}"));
        }
        if self.bold {
            css.push("font-weight:bold".into());
        }
        if self.dim {
            css.push("opacity:0.7".into());
        }
        if self.italic {
            css.push("font-style:italic".into());
        }
        if self.underline {
            css.push("text-decoration:underline".into());
        }
        css.join(";")
    }
}

/// Terminal output with ANSI colour codes as HTML: each run of one style in a `<span>` with
/// inline CSS, the text escaped, and any other escape sequence dropped.
pub fn ansi_to_html(text: &str) -> String {
    let mut out = String::new();
    let mut style = Sgr::default();
    let mut open = false;
    let mut chars = text.char_indices().peekable();
    let mut plain = String::new();
    let flush = |out: &mut String, plain: &mut String, style: &Sgr, open: &mut bool| {
        if plain.is_empty() {
            return;
        }
        let css = style.css();
        if !css.is_empty() {
            out.push_str(&format!("<span style=\"{css}\">"));
        }
        out.push_str(&escape(plain));
        if !css.is_empty() {
            out.push_str("</span>");
        }
        plain.clear();
        *open = false;
    };
    while let Some((at, c)) = chars.next() {
        if c != '\u{1b}' {
            plain.push(c);
            continue;
        }
        // ESC [ params final: a CSI sequence; only `m` (colours) means anything here.
        if chars.peek().map(|&(_, c)| c) == Some('[') {
            chars.next();
            let start = at + 2;
            let mut end = start;
            let mut last = None;
            for (i, c) in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    end = i;
                    last = Some(c);
                    break;
                }
            }
            if last == Some('m') {
                flush(&mut out, &mut plain, &style, &mut open);
                style.apply(&text[start..end]);
            }
        } else {
            // A lone escape or another kind of sequence: drop the escape and its next char.
            chars.next();
        }
    }
    flush(&mut out, &mut plain, &style, &mut open);
    out
}

/// Lesson prose as HTML: paragraphs, headings, emphasis, code, links, lists, quotes, tables
/// and code blocks; raw HTML in the lesson is shown as text, never passed through.
pub fn markdown_to_html(md: &str) -> String {
    let mut h = String::new();
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(tag) => h.push_str(&match tag {
                Tag::Paragraph => "<p>".to_string(),
                Tag::Heading { level, .. } => format!("<{}>", heading(level)),
                Tag::BlockQuote(_) => "<blockquote>".into(),
                Tag::CodeBlock(CodeBlockKind::Fenced(lang)) => format!("<pre class=\"code {}\">", escape(&lang)),
                Tag::CodeBlock(_) => "<pre class=\"code\">".into(),
                Tag::List(Some(1)) => "<ol>".into(),
                Tag::List(Some(n)) => format!("<ol start=\"{n}\">"),
                Tag::List(None) => "<ul>".into(),
                Tag::Item => "<li>".into(),
                Tag::Emphasis => "<em>".into(),
                Tag::Strong => "<strong>".into(),
                Tag::Link { dest_url, .. } => format!("<a href=\"{}\">", escape(&dest_url)),
                Tag::Table(_) => "<table>".into(),
                Tag::TableHead => "<thead><tr>".into(),
                Tag::TableRow => "<tr>".into(),
                Tag::TableCell => "<td>".into(),
                _ => String::new(),
            }),
            Event::End(tag) => h.push_str(&match tag {
                TagEnd::Paragraph => "</p>\n".to_string(),
                TagEnd::Heading(level) => format!("</{}>\n", heading(level)),
                TagEnd::BlockQuote(_) => "</blockquote>\n".into(),
                TagEnd::CodeBlock => "</pre>\n".into(),
                TagEnd::List(true) => "</ol>\n".into(),
                TagEnd::List(false) => "</ul>\n".into(),
                TagEnd::Item => "</li>\n".into(),
                TagEnd::Emphasis => "</em>".into(),
                TagEnd::Strong => "</strong>".into(),
                TagEnd::Link => "</a>".into(),
                TagEnd::Table => "</table>\n".into(),
                TagEnd::TableHead => "</tr></thead>\n".into(),
                TagEnd::TableRow => "</tr>\n".into(),
                TagEnd::TableCell => "</td>".into(),
                _ => String::new(),
            }),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => h.push_str(&escape(&t)),
            Event::Code(t) => h.push_str(&format!("<code>{}</code>", escape(&t))),
            Event::SoftBreak => h.push('\n'),
            Event::HardBreak => h.push_str("<br>\n"),
            Event::Rule => h.push_str("<hr>\n"),
            _ => {}
        }
    }
    h
}

fn heading(level: HeadingLevel) -> &'static str {
    // Prose sits under the step's own `<h2>`: its headings start below it.
    match level {
        HeadingLevel::H1 | HeadingLevel::H2 => "h3",
        HeadingLevel::H3 => "h4",
        HeadingLevel::H4 => "h5",
        _ => "h6",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every tag opened is closed, in order (void elements aside), and no `<` is left raw
    /// outside a tag.
    pub(crate) fn assert_well_formed(html: &str) {
        assert!(!html.contains('\u{1b}'), "a raw escape byte");
        let mut stack: Vec<String> = Vec::new();
        let mut rest = html;
        while let Some(at) = rest.find('<') {
            let end = rest[at..].find('>').map(|e| at + e).expect("a tag that never closes");
            let tag = &rest[at + 1..end];
            assert!(!tag.contains('<'), "a raw `<` in {tag:?}");
            let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            if tag.starts_with('!') || matches!(name.as_str(), "meta" | "br" | "hr") {
            } else if tag.starts_with('/') {
                assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "</{name}> closes the wrong tag");
            } else {
                stack.push(name);
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "tags never closed: {stack:?}");
    }

    #[test]
    fn colours_become_spans_and_everything_else_is_escaped() {
        let html = ansi_to_html("\x1b[31;1merror:\x1b[0m a <b> & \x1b[38;5;6mx\x1b[39m\x1b[2Kend\x1b]0;t\x07");
        assert_eq!(
            html,
            "<span style=\"color:#cd3131;font-weight:bold\">error:</span> a &lt;b&gt; &amp; <span style=\"color:#11a8cd\">x</span>end0;t\\x07"
        );
        assert_eq!(ansi_to_html("plain"), "plain");
    }

    #[test]
    fn a_document_is_well_formed_markdown_and_html() {
        let mut d = Document::new("Lesson 1: <Fill>");
        d.blocks.push(Block::Heading(2, "A kernel".into()));
        d.blocks.push(Block::Prose("This writes *every* `a[i]` <br> element.\n\n- one\n- two".into()));
        d.blocks.push(Block::Label("The starter, the wrong version:".into()));
        let ran = |input: &str, out: &str| Ran {
            input: input.into(),
            output: crate::render::text::strip_ansi(out.as_bytes()),
            colored: out.into(),
            chapter: None,
            step: None,
        };
        d.ran(ran("__global__ void k(float *a) { a[0] = 1; }", "defined kernel k(float *a)"), true);
        d.ran(ran("let a = zeros(4)", ""), false);
        d.ran(ran("k<<<1, 1>>>(a)", "\x1b[32mclean\x1b[0m"), false);
        assert_eq!(d.blocks.len(), 5, "the two statements share one block");
        assert_eq!(d.inputs(), 3, "what `:export` says it wrote");
        let md = d.markdown();
        assert!(md.contains("> let a = zeros(4)\n> k<<<1, 1>>>(a)\nclean\n"), "{md}");
        let html = d.html();
        assert_well_formed(&html);
        assert!(html.contains("k&lt;&lt;&lt;1, 1&gt;&gt;&gt;(a)"), "{html}");
        assert!(html.contains("<span style=\"color:#0dbc79\">clean</span>"), "{html}");
        assert!(html.contains("&lt;br&gt;"), "raw HTML in prose is shown, not obeyed: {html}");
    }
}
