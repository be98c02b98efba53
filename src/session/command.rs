//! What a `:` command is, defined once as a typed row ([`CommandSpec`]): its name and aliases,
//! what it takes after the name ([`Args`]: a choice of words, a file, a lesson, a command, or
//! free text), a one-line summary, the long help, and the function that runs it. Dispatch and
//! `:help` (`dispatch.rs`), Tab completion, the highlighter and the lesson loader's refusal of
//! file commands all read the rows, so a new row is run, documented, completed and coloured at
//! once.
//!
//! The rows themselves live with what they run: settings, listings and views in `settings.rs`,
//! files in `files.rs`, `:help` and `:quit` in `dispatch.rs`; a layer above adds more through
//! an `Extension` (the lesson guide's `:lesson`, `:next`, `:check` ...).

use std::io::{self, Write};

use super::{Session, Status};

/// What runs a command: the session, how it was called, where to write.
pub type Run = fn(&mut Session, Call<'_>, &mut dyn Write) -> io::Result<Status>;

/// How a command was called: the name typed (its own or an alias), the text after it, and the
/// command's row.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    pub name: &'a str,
    pub args: &'a str,
    pub spec: &'a CommandSpec,
}

impl Call<'_> {
    /// The arguments were wrong: say why, and show the command's synopsis.
    pub fn usage(&self, session: &Session, out: &mut dyn Write, msg: &str) -> io::Result<Status> {
        writeln!(out, "{} {msg}", session.style().error("error:"))?;
        writeln!(out, "usage: :{} {}", self.spec.name, self.spec.args.synopsis())?;
        Ok(Status::Error)
    }

    /// The word typed is none of the command's choices: the one message for it, from the row
    /// (what a word names, and the words in the synopsis). Dispatch says it before the command
    /// runs ([`Args::accepts`]), so a command's function meets only its own words.
    pub fn not_a_choice(&self, session: &Session, out: &mut dyn Write) -> io::Result<Status> {
        let what = match self.spec.args {
            Args::Choice { what, .. } => what,
            Args::None => {
                writeln!(
                    out,
                    "{} `:{}` takes nothing after its name (`{}` was typed after it)",
                    session.style().error("error:"),
                    self.name,
                    self.args
                )?;
                return Ok(Status::Error);
            }
            _ => "what it takes",
        };
        self.usage(session, out, &format!("`{}` is not {what}", self.args))
    }
}

/// What a command takes after its name: `:help` shows it as a synopsis, Tab completes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Args {
    /// Nothing.
    None,
    /// Optionally one of `words`, or a `value` of the learner's (`[N|default]`): Tab offers
    /// the words. Without a `value`, dispatch refuses any other word before the command runs,
    /// saying it is not `what` (`a schedule`) and listing the words.
    Choice { value: Option<&'static str>, words: &'static [&'static str], what: &'static str },
    /// A file of the learner's, as the synopsis says (`[--force] FILE`): Tab offers paths, and a
    /// lesson may not run the command (a course never reads or writes the learner's files).
    Path(&'static str),
    /// Optionally a lesson of the course (`[ID]`): Tab offers ids and slugs.
    Lesson,
    /// Optionally a command or a help topic (`[topic]`): Tab offers command names.
    Command,
    /// Anything else, as the synopsis says (`LAUNCH [xN]`): nothing to offer.
    Text(&'static str),
}

impl Args {
    /// The synopsis `:help` and a usage error show: `[sim|gpu|auto]`, `[N|default]`, `FILE`.
    pub fn synopsis(&self) -> String {
        match self {
            Args::None => String::new(),
            Args::Choice { value, words, .. } => {
                format!("[{}]", value.iter().chain(words.iter()).copied().collect::<Vec<_>>().join("|"))
            }
            Args::Path(s) | Args::Text(s) => s.to_string(),
            Args::Lesson => "[ID]".into(),
            Args::Command => "[topic]".into(),
        }
    }

    /// Whether `args` (trimmed) may reach the command: anything, but for a choice of words
    /// alone, nothing or one of them. The command judges the rest (a number, a path).
    pub fn accepts(&self, args: &str) -> bool {
        match self {
            Args::Choice { value: None, words, .. } => args.is_empty() || words.contains(&args),
            // `:next 5` would quietly do what `:next` does: a word it ignores is refused.
            Args::None => args.is_empty(),
            _ => true,
        }
    }
}

/// Another name of a command (`:q` for `:quit`), listed after it with a summary of its own.
#[derive(Debug)]
pub struct Alias {
    pub name: &'static str,
    pub summary: &'static str,
}

pub struct CommandSpec {
    pub name: &'static str,
    pub args: Args,
    pub aliases: &'static [Alias],
    pub summary: &'static str,
    pub help: &'static str,
    pub run: Run,
}

/// One name a command answers to, as `:help` and completion list them: the command's own, or
/// one of its aliases.
pub struct Entry<'a> {
    pub name: &'a str,
    pub summary: &'a str,
    pub spec: &'a CommandSpec,
}

/// Every name of `commands`, each command's own and then its aliases, in `:help`'s order.
pub fn entries<'a>(commands: &[&'a CommandSpec]) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    for &spec in commands {
        out.push(Entry { name: spec.name, summary: spec.summary, spec });
        out.extend(spec.aliases.iter().map(|a| Entry { name: a.name, summary: a.summary, spec }));
    }
    out
}

/// The row of the command named `name` (or aliased so) among `commands` (from
/// `dispatch::listing`).
pub fn find<'a>(commands: &[&'a CommandSpec], name: &str) -> Option<&'a CommandSpec> {
    commands.iter().copied().find(|c| c.name == name || c.aliases.iter().any(|a| a.name == name))
}
