//! The commands on the learner's files: `:load` a script, `:save` the session as one, `:export`
//! a handout. A room of their own because they are the only commands that reach outside the
//! session: what a replayed script may reach is decided here ([`FileAccess`]), an existing file
//! is written over only when asked, and a lesson may run none of them.

use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use super::command::{Args, Call, CommandSpec};
use super::{FileAccess, Session, Status};

/// The commands on files, listed after the extensions' commands (`:help` reads settings and
/// views first, then what an extension adds, then files, then leaving).
pub const FILE_COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "export",
        args: Args::Path("[--force] FILE.md|FILE.html"),
        aliases: &[],
        summary: "write this session as a handout (Markdown or HTML)",
        help: "Writes a handout to read on its own: with a lesson open, the lesson's headings and prose with each step's code and what it printed in order (the starter labelled as the wrong version); otherwise everything typed and what it printed. `FILE.html` is one self-contained page with the terminal's colours; any other name gets Markdown. Findings name the kernel and line (`kernel add_one, line 3`). An existing file is not written over unless you say yes (or give `--force`).",
        run: export,
    },
    CommandSpec {
        name: "load",
        args: Args::Path("FILE"),
        aliases: &[],
        summary: "run a .gridlab script in this session",
        help: "Runs every input of FILE in this session, echoing each, as `gridlab replay` does.",
        run: load,
    },
    CommandSpec {
        name: "save",
        args: Args::Path("[--force] FILE"),
        aliases: &[],
        summary: "save this session as a replayable script",
        help: "Writes every input that ran (kernels, lets, launches, expects, seed and schedule changes) to FILE; `gridlab replay FILE` or `:load FILE` runs it again. An existing file is not written over unless you say yes (or give `--force`). In a replayed script, `:load`, `:save` and `:export` reach only files in the script's own folder.",
        run: save,
    },
];

/// The file `arg` names, if this session may `verb` it (see [`FileAccess`]).
fn reachable(session: &Session, verb: &str, arg: &str) -> Result<PathBuf, String> {
    let FileAccess::Within(folder) = &session.options.files else { return Ok(PathBuf::from(arg)) };
    let path = Path::new(arg);
    let escapes = path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    let refuse = || {
        format!(
            "a replayed script may only {verb} files in its own folder ({}): `{arg}` is outside it; name a file there with a relative path, without `..`",
            folder.display()
        )
    };
    if escapes {
        return Err(refuse());
    }
    let joined = folder.join(path);
    // A link inside the folder may still point out of it.
    let real_folder = folder.canonicalize().map_err(|e| format!("cannot read the script's folder: {e}"))?;
    let mut probe = joined.clone();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    if probe.exists() && !probe.canonicalize().is_ok_and(|p| p.starts_with(&real_folder)) {
        return Err(refuse());
    }
    Ok(joined)
}

/// `--force` before a file name: write over an existing file.
fn force_flag(args: &str) -> (bool, &str) {
    match args.trim().strip_prefix("--force") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => (true, rest.trim()),
        _ => (false, args.trim()),
    }
}

fn load(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    if args.is_empty() {
        return call.usage(session, out, "which file?");
    }
    let path = match reachable(session, "load", args) {
        Ok(p) => p,
        Err(why) => {
            writeln!(out, "{} {why}", session.style().error("error:"))?;
            return Ok(Status::Error);
        }
    };
    let path = path.as_path();
    // A script that loads itself, or two that load each other, would never end.
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(at) = session.loading.iter().position(|p| *p == key) {
        let chain: Vec<String> = session.loading[at..].iter().chain([&key]).map(|p| p.display().to_string()).collect();
        writeln!(
            out,
            "{} {} is already being loaded ({}): a script that loads itself would never end",
            session.style().error("error:"),
            path.display(),
            chain.join(" -> ")
        )?;
        return Ok(Status::Error);
    }
    if session.loading.len() >= MAX_LOAD_DEPTH {
        writeln!(
            out,
            "{} `:load {}` would nest more than {MAX_LOAD_DEPTH} scripts deep",
            session.style().error("error:"),
            path.display()
        )?;
        return Ok(Status::Error);
    }
    let text = match crate::script::input::read_script(path) {
        Ok(t) => t,
        Err(e) => {
            writeln!(out, "{} cannot read {}: {e}", session.style().error("error:"), path.display())?;
            return Ok(Status::Error);
        }
    };
    // The file is a script: `exit` in it does not leave the prompt.
    session.leave.loading += 1;
    session.loading.push(key);
    let status = session.eval_text(&path.display().to_string(), &text, true, out);
    session.loading.pop();
    session.leave.loading -= 1;
    status
}

/// Scripts that `:load` others may nest this deep.
const MAX_LOAD_DEPTH: usize = 16;

fn save(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    let (force, args) = force_flag(args);
    if args.is_empty() {
        return call.usage(session, out, "which file?");
    }
    let Some(path) = writable(session, "save", args, force, out)? else { return Ok(Status::Error) };
    let path = path.as_path();
    let mut text = String::from("# saved by gridlab: replay with `gridlab replay FILE` or `:load FILE`\n");
    for input in session.record.history() {
        text.push_str(input.trim_end());
        text.push('\n');
    }
    let n = session.record.history().len();
    let what = format!("saved {n} input{} to {}", if n == 1 { "" } else { "s" }, path.display());
    write_file(session, path, &text, &what, out)
}

/// `:export FILE.md`: the session so far as Markdown, each input in a fenced block followed by
/// its output.
fn export(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    let (force, args) = force_flag(args);
    if args.is_empty() {
        return call.usage(session, out, "which file? e.g. `:export session.md`");
    }
    let Some(path) = writable(session, "export", args, force, out)? else { return Ok(Status::Error) };
    let path = path.as_path();
    let backend = session.backend_label();
    let doc = session
        .extension
        .as_deref()
        .and_then(|e| e.handout(session.record.transcript()))
        .unwrap_or_else(|| session_document(session.record.transcript(), &backend));
    let html = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let text = if html { doc.html() } else { doc.markdown() };
    // What the file holds, not what the session ran: a lesson's handout takes that lesson's
    // inputs only, and leaves out the commands that moved about it.
    let n = doc.inputs();
    let what = format!("wrote {n} input{} and their output to {}", if n == 1 { "" } else { "s" }, path.display());
    write_file(session, path, &text, &what, out)
}

/// The file `:save`/`:export` may write, or `None` after saying why not: outside a script's
/// folder, or an existing file without `--force` (the REPL then asks whether to write over it).
fn writable(
    session: &mut Session,
    verb: &str,
    arg: &str,
    force: bool,
    out: &mut dyn Write,
) -> io::Result<Option<PathBuf>> {
    let path = match reachable(session, verb, arg) {
        Ok(p) => p,
        Err(why) => {
            writeln!(out, "{} {why}", session.style().error("error:"))?;
            return Ok(None);
        }
    };
    if path.exists() && !force {
        writeln!(
            out,
            "{} {} exists: `:{verb} --force {arg}` writes over it",
            session.style().error("error:"),
            path.display()
        )?;
        session.ask(format!("{} exists. Write over it? [y/N] ", path.display()), format!(":{verb} --force {arg}"));
        return Ok(None);
    }
    Ok(Some(path))
}

/// Write a file the learner named, saying `done` or why not.
fn write_file(session: &Session, path: &Path, text: &str, done: &str, out: &mut dyn Write) -> io::Result<Status> {
    match std::fs::write(path, text) {
        Ok(()) => {
            writeln!(out, "{done}")?;
            Ok(Status::Ok)
        }
        Err(e) => {
            writeln!(out, "{} cannot write {}: {e}", session.style().error("error:"), path.display())?;
            Ok(Status::Error)
        }
    }
}

/// The handout of a session without a lesson: every input and what it printed, kernels in
/// blocks of their own, consecutive statements together.
pub fn session_document(transcript: &[crate::render::handout::Ran], backend: &str) -> crate::render::handout::Document {
    use crate::render::handout::{Block, Document};
    let mut doc = Document::new("A gridlab session");
    doc.blocks.push(Block::Prose(format!(
        "Kernels ran on `{backend}`. Each input (after `>`) is followed by what gridlab printed."
    )));
    for ran in transcript {
        doc.ran(ran.clone(), is_cuda(&ran.input));
    }
    doc
}

/// Whether an input is CUDA source (a kernel, a function), not a statement.
pub fn is_cuda(input: &str) -> bool {
    crate::script::split_inputs(input)
        .is_ok_and(|inputs| inputs.iter().any(|i| i.kind == crate::script::InputKind::Cuda))
}
