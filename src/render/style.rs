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
