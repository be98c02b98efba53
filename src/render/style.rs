//! Colour and width choices shared by every renderer. Renderers take a `Style` instead of
//! asking the terminal themselves, so tests render plain and coloured output without one.
//!
//! Every colour gridlab draws is chosen here, by role (error, ok, warning, accent, a token
//! kind), for the terminal's background ([`Theme`]) and for a projector (`big`): there, nothing
//! the audience reads is dim or dark grey, which a projector washes out.

use owo_colors::OwoColorize;

use crate::script::highlight::Token;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    /// Emit ANSI colour codes.
    pub color: bool,
    /// Columns available; renderers wrap or elide to fit.
    pub width: usize,
    /// Sized for a projector (`gridlab demo --big`): roomier tables, longer bars, no dim text.
    pub big: bool,
    /// The terminal's background, which the colours must read on.
    pub theme: Theme,
    /// Rows of the screen, 0 when not known; a view sized for a projector fits in them.
    pub rows: usize,
}

/// The terminal's background: `--theme light` for dark text on a light background.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    #[default]
    Dark,
    Light,
}

/// The rows a projector shows when the screen's own are not known (`gridlab demo --big` is
/// made to fit 100x30).
pub const PROJECTOR_ROWS: usize = 30;

impl Default for Style {
    fn default() -> Style {
        Style::plain()
    }
}

impl Style {
    /// No colour, 80 columns: what scripts, files and tests get.
    pub fn plain() -> Style {
        Style { color: false, width: 80, big: false, theme: Theme::Dark, rows: 0 }
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
        // Yellow is unreadable on white: magenta there.
        match self.theme {
            Theme::Dark => self.paint(s, |s| s.yellow().to_string()),
            Theme::Light => self.paint(s, |s| s.magenta().to_string()),
        }
    }

    /// Text of less weight (notes, what to press next). On a projector dim text washes out, so
    /// under `big` it is plain.
    pub fn dim(&self, s: &str) -> String {
        if self.big {
            return s.to_string();
        }
        self.paint(s, |s| s.dimmed().to_string())
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint(s, |s| s.bold().to_string())
    }

    pub fn accent(&self, s: &str) -> String {
        // Cyan is faint on white: blue there.
        match self.theme {
            Theme::Dark => self.paint(s, |s| s.cyan().to_string()),
            Theme::Light => self.paint(s, |s| s.blue().to_string()),
        }
    }

    /// An element a launch changed, in a printed array.
    pub fn changed(&self, s: &str) -> String {
        match self.theme {
            Theme::Dark => self.paint(s, |s| s.yellow().bold().to_string()),
            Theme::Light => self.paint(s, |s| s.magenta().bold().to_string()),
        }
    }

    /// The rows a view may take, when it should fit the screen (`big`); `None` when it need not.
    pub fn screen_rows(&self) -> Option<usize> {
        self.big.then_some(if self.rows > 0 { self.rows } else { PROJECTOR_ROWS })
    }
}

impl Style {
    /// Make a filled table roomier for a projector, when `big`: two spaces of padding in every
    /// cell, and a rule between rows when the table, the `around` lines of the view that come
    /// with it and the command line above and prompt below still fit the screen (a rule that
    /// pushed the command or the answer off the screen would cost more than it gives).
    pub fn enlarge(&self, table: &mut comfy_table::Table, around: usize) {
        let Some(screen) = self.screen_rows() else { return };
        let rows = table.row_iter().count() + usize::from(table.header().is_some());
        // Top and bottom borders, a line per row, and a rule under the header or between rows.
        let condensed = rows + 2 + usize::from(rows > 1);
        let ruled = 2 * rows + 1;
        if ruled + around + 2 <= screen {
            table.load_preset(comfy_table::presets::UTF8_FULL);
        } else if condensed + around + 2 > screen {
            // Even condensed it does not fit: keep it as narrow as it is too.
            return;
        }
        // The roomier cells only where the table still fits the screen's width with them: a
        // border that wraps onto a line of its own costs more than the room gives.
        let widths = table.column_max_content_widths();
        let padded: usize = widths.iter().map(|w| usize::from(*w) + 4).sum::<usize>() + widths.len() + 1;
        if padded > self.width {
            return;
        }
        for column in table.column_iter_mut() {
            column.set_padding((2, 2));
        }
    }

    /// The colour of each kind of token, in the prompt's editor and in lesson code blocks, for
    /// this background; on a projector comments are light grey, not dark grey on black.
    pub fn token(&self, kind: Token) -> nu_ansi_term::Style {
        use nu_ansi_term::{Color, Style};
        match self.theme {
            Theme::Dark => match kind {
                Token::Comment if self.big => Style::new().fg(Color::LightGray).italic(),
                _ => token(kind),
            },
            Theme::Light => match kind {
                Token::Plain => Style::new(),
                Token::Keyword => Color::Magenta.bold(),
                Token::Type => Style::new().fg(Color::Fixed(130)),
                Token::Qualifier => Color::Blue.bold(),
                Token::Builtin => Style::new().fg(Color::Fixed(24)),
                Token::Kernel => Style::new().bold(),
                Token::Number => Style::new().fg(Color::Fixed(90)),
                Token::String => Style::new().fg(Color::Green),
                Token::Comment => Style::new().fg(Color::Fixed(242)).italic(),
                Token::Preprocessor => Style::new().fg(Color::Magenta),
                Token::Launch => Color::Fixed(24).bold(),
                Token::Command => Color::Green.bold(),
                Token::UnknownCommand => Color::Red.bold(),
            },
        }
    }
}

/// The colour of each kind of token on a dark background ([`Style::token`] chooses for the
/// style's background).
fn token(kind: Token) -> nu_ansi_term::Style {
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
