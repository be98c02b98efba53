//! The prompt: the backend that runs launches (`sim`, or the GPU's short name) and the current
//! lesson and step when there is one, e.g. `sim> ` or `H100 lesson 3.2> `.

use std::borrow::Cow;

use reedline::{Prompt, PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus};

pub struct GridlabPrompt {
    /// The backend's short name.
    pub backend: String,
    /// The lesson and step being worked on, e.g. `lesson 3.2`.
    pub lesson: Option<String>,
}

impl GridlabPrompt {
    pub fn new(backend: impl Into<String>) -> GridlabPrompt {
        GridlabPrompt { backend: backend.into(), lesson: None }
    }

    fn left(&self) -> String {
        match &self.lesson {
            Some(lesson) => format!("{} {lesson}", self.backend),
            None => self.backend.clone(),
        }
    }

    /// The columns before the input on each of its lines: the label and `> `, or the `...`
    /// padded to the same width under it.
    pub fn continuation_width(&self) -> usize {
        self.left().chars().count() + 2
    }
}

impl Prompt for GridlabPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Owned(self.left())
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("> ")
    }

    /// Dots as wide as the prompt, so continuation lines line up with the first.
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        let width = self.continuation_width();
        Cow::Owned(format!("{:<width$}", "..."))
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failing = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failing}reverse-search: {}) ", search.term))
    }
}

/// A one-off question (`:solution` asks before it shows one).
pub struct QuestionPrompt(pub String);

impl Prompt for QuestionPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_history_search_indicator(&self, _search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_backend_and_the_lesson() {
        let mut p = GridlabPrompt::new("sim");
        assert_eq!(
            format!("{}{}", p.render_prompt_left(), p.render_prompt_indicator(PromptEditMode::Default)),
            "sim> "
        );
        assert_eq!(p.render_prompt_multiline_indicator(), "...  ");
        p.lesson = Some("lesson 2".into());
        assert_eq!(p.render_prompt_left(), "sim lesson 2");
    }
}
