//! Colour and width choices shared by every renderer. Renderers take a `Style` instead of
//! asking the terminal themselves, so tests render plain and coloured output without one.

use owo_colors::OwoColorize;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    /// Emit ANSI colour codes.
    pub color: bool,
    /// Columns available; renderers wrap or elide to fit.
    pub width: usize,
    /// Sized for a projector (`gridlab demo --big`): roomier tables, longer bars.
    pub big: bool,
}

impl Default for Style {
    fn default() -> Style {
        Style::plain()
    }
}

impl Style {
    /// No colour, 80 columns: what scripts, files and tests get.
    pub fn plain() -> Style {
        Style { color: false, width: 80, big: false }
    }

    fn paint(&self, s: &str, f: impl Fn(&str) -> String) -> String {
        if self.color { f(s) } else { s.to_string() }
    }

    pub fn error(&self, s: &str) -> String {
        self.paint(s, |s| s.red().bold().to_string())
    }

    pub fn ok(&self, s: &str) -> String {
        self.paint(s, |s| s.green().to_string())
    }

    pub fn warn(&self, s: &str) -> String {
        self.paint(s, |s| s.yellow().to_string())
    }

    pub fn dim(&self, s: &str) -> String {
        self.paint(s, |s| s.dimmed().to_string())
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint(s, |s| s.bold().to_string())
    }

    pub fn accent(&self, s: &str) -> String {
        self.paint(s, |s| s.cyan().to_string())
    }
}

impl Style {
    /// Make a filled table roomier for a projector, when `big`: a rule between rows and two
    /// spaces of padding in every cell.
    pub fn enlarge(&self, table: &mut comfy_table::Table) {
        if !self.big {
            return;
        }
        table.load_preset(comfy_table::presets::UTF8_FULL);
        for column in table.column_iter_mut() {
            column.set_padding((2, 2));
        }
    }

    /// The options for printing an array, with elements the last launch changed (if known).
    pub fn array(&self, changed: Option<Vec<bool>>) -> super::array::ArrayStyle {
        super::array::ArrayStyle { color: self.color, width: self.width, changed }
    }
}

/// What a piece of the input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    Plain,
    /// Control flow and gridlab's own statement words: `if`, `for`, `return`, `let`, `expect`.
    Keyword,
    /// C types, `dim3` and dtype names (`f32`, `i64`).
    Type,
    /// CUDA qualifiers: `__global__`, `__shared__`, ...
    Qualifier,
    /// CUDA built-in variables and functions (`threadIdx`, `atomicAdd`) and gridlab functions
    /// (`zeros`, `arange`, `sum`).
    Builtin,
    /// A kernel or device function the session knows.
    Kernel,
    Number,
    String,
    Comment,
    Preprocessor,
    /// `<<<` and `>>>`.
    Launch,
    /// A known `:command`.
    Command,
    /// A `:word` that is not a command.
    UnknownCommand,
}

/// The colour of each kind of token, in the prompt's editor and in lesson code blocks.
pub fn token(kind: Token) -> nu_ansi_term::Style {
    use nu_ansi_term::{Color, Style};
    match kind {
        Token::Plain => Style::new(),
        Token::Keyword => Color::Magenta.bold(),
        Token::Type => Style::new().fg(Color::Yellow),
        Token::Qualifier => Color::LightBlue.bold(),
        Token::Builtin => Style::new().fg(Color::Cyan),
        Token::Kernel => Style::new().bold(),
        Token::Number => Style::new().fg(Color::LightMagenta),
        Token::String => Style::new().fg(Color::Green),
        Token::Comment => Style::new().fg(Color::DarkGray).italic(),
        Token::Preprocessor => Style::new().fg(Color::Magenta),
        Token::Launch => Color::Cyan.bold(),
        Token::Command => Color::Green.bold(),
        Token::UnknownCommand => Color::Red.bold(),
    }
}
