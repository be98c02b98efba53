//! The interactive prompt: a reedline editor around a [`Session`].
//!
//! With a terminal on both ends, input is edited with reedline: multi-line kernels
//! ([`validator`]), colours ([`highlighter`]), Tab completion ([`completer`]), a prompt naming the
//! backend ([`prompt`]), history in the platform's state folder with Ctrl-R search and hints,
//! Ctrl-C to clear the line or stop a running launch, Ctrl-D (or `:q`, `:quit`, `exit`, `quit`) to
//! leave. Otherwise input is read line by line: piped input runs like a script (echoed, with its
//! own line numbers, exit code 1 when something failed) and stops at `exit`.

pub mod arrows;
pub mod completer;
pub mod highlighter;
pub mod prefill;
pub mod prompt;
pub mod signals;
pub mod validator;

#[cfg(test)]
mod proptests;

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nu_ansi_term::{Color, Style as AnsiStyle};
use reedline::{
    ColumnarMenu, DefaultHinter, Emacs, FileBackedHistory, History, KeyCode, KeyModifiers, MenuBuilder, Reedline,
    ReedlineEvent, ReedlineMenu, Signal, default_emacs_keybindings,
};

use crate::cuda::ast::FuncKind;
use crate::lesson::guide::Guide;
use crate::lesson::progress::Store;
use crate::lesson::{Course, LessonError, Lessons};
use crate::runner::ScriptResult;
use crate::runner::{Expect, Runner};
use crate::script;
use crate::session::{self, Options, Session, Status};

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 10_000;

/// How the session starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// No lesson (`--no-lesson`).
    Free,
    /// The course where the learner left off (the first lesson the first time). Piped input
    /// is a script, so it starts free.
    Resume,
    /// `gridlab learn ID`.
    Learn(String),
    /// `gridlab demo ID`: a lesson presented live.
    Demo(String),
}

/// What the completer and highlighter know of the session: a snapshot taken after each input,
/// so that completing never waits for (or blocks) a running launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub kernels: Vec<String>,
    pub device_functions: Vec<String>,
    pub buffers: Vec<String>,
    pub scalars: Vec<String>,
    /// The course's lessons: `(id, title)`.
    pub lessons: Vec<(String, String)>,
}

pub type SharedNames = Arc<Mutex<Names>>;

impl Names {
    pub fn of(session: &Session) -> Names {
        let functions = &session.module().program().functions;
        let named = |kind: FuncKind| functions.iter().filter(|f| f.kind == kind).map(|f| f.name.clone()).collect();
        // GPU-only kernels and functions (see `cuda::GpuOnly`) complete and colour the same.
        let gpu_only = |kind: crate::cuda::ItemKind| {
            let items = session.module().items().iter();
            items.filter(move |i| i.kind == kind && i.gpu_only().is_some()).map(|i| i.name.clone())
        };
        let mut device_functions: Vec<String> = named(FuncKind::Device);
        for f in gpu_only(crate::cuda::ItemKind::DeviceFunction) {
            if !device_functions.contains(&f) {
                device_functions.push(f);
            }
        }
        Names {
            kernels: session.module().kernel_names().into_iter().map(str::to_string).collect(),
            device_functions,
            buffers: session.buffers().iter().map(|(n, _)| n.clone()).collect(),
            scalars: session.scalars().iter().map(|(n, _)| n.clone()).collect(),
            lessons: session.lessons(),
        }
    }
}

/// The line editor when stdin and stdout are terminals, line by line otherwise.
pub fn run(options: Options, start: &Start) -> io::Result<ExitCode> {
    if io::stdin().is_terminal() && io::stdout().is_terminal() {
        interactive(options, start)
    } else {
        lines(options, start)
    }
}

/// The guide a session starts with, or `Err` with the exit code when the course or the lesson
/// asked for cannot be had (the reasons are printed).
fn open_guide(options: &Options, start: &Start, out: &mut dyn Write) -> io::Result<Result<Option<Guide>, ExitCode>> {
    let style = &options.style;
    let (id, demo) = match start {
        Start::Free => return Ok(Ok(None)),
        Start::Resume => (None, false),
        Start::Learn(id) => (Some(id.as_str()), false),
        Start::Demo(id) => (Some(id.as_str()), true),
    };
    let course = match Course::chosen(options.course.as_deref()) {
        Ok(c) => c,
        Err(errors) => {
            report_course_errors(&errors, out, style)?;
            return Ok(Err(ExitCode::from(2)));
        }
    };
    let store = Store::for_course(&course.name);
    let (mut guide, note) = match id {
        None => Guide::resume(course, store),
        Some(id) => match course.find(id) {
            Ok(i) => Guide::open(course, store, i, demo),
            Err(e) => {
                writeln!(out, "{} {e}", style.error("error:"))?;
                return Ok(Err(ExitCode::from(2)));
            }
        },
    };
    if let Some(note) = note {
        writeln!(out, "{}", style.warn(&format!("note: {note}")))?;
    }
    if let Some(lang) = options.lang {
        guide.set_lang(lang, out, style)?;
    }
    Ok(Ok(Some(guide)))
}

/// Show the guide's step, after catching up on the steps before it when it resumes mid-lesson.
fn start_guide(session: &mut Session, mut guide: Guide, out: &mut dyn Write) -> io::Result<()> {
    let style = session.style().clone();
    if guide.step > 0 {
        let steps = guide.catch_up(session)?;
        let what = if steps == 1 { "step 1".to_string() } else { format!("steps 1 to {steps}") };
        writeln!(
            out,
            "{}",
            style.dim(&format!(
                "Welcome back. (Ran the kernels and statements of {what} again, so this step has what it builds on.)"
            ))
        )?;
    }
    guide.show(out, &style)?;
    if let Some(lessons) = session.extension_mut::<Lessons>() {
        lessons.guide = Some(guide);
    }
    Ok(())
}

fn report_course_errors(errors: &[LessonError], out: &mut dyn Write, style: &crate::render::Style) -> io::Result<()> {
    for e in errors {
        writeln!(out, "{} {e}", style.error("error:"))?;
    }
    writeln!(out, "{}", style.dim("Fix the course, or start without it: `gridlab --no-lesson`."))
}

/// Say once, at start, which backend runs kernels and why (when the learner did not pin `sim`).
fn announce_backend(session: &mut Session, out: &mut impl Write, width: usize) -> io::Result<()> {
    if session.options().backend != crate::backend::BackendKind::Sim {
        writeln!(out, "{}", crate::diag::wrap(&session.resolve_backend(), width, 0))?;
    }
    Ok(())
}

/// Columns of the terminal on stdout, or `COLUMNS`, or 80.
pub fn terminal_width() -> usize {
    let from_tty = io::stdout().is_terminal().then(crossterm::terminal::size).and_then(Result::ok).map(|(w, _)| w);
    let from_env = || std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    from_tty.filter(|w| *w > 0).or_else(from_env).map_or(80, |w: u16| usize::from(w).max(40))
}

/// Rows of the terminal on stdout, or `LINES`, or 0 when not known.
pub fn terminal_rows() -> usize {
    let from_tty = io::stdout().is_terminal().then(crossterm::terminal::size).and_then(Result::ok).map(|(_, h)| h);
    let from_env = || std::env::var("LINES").ok().and_then(|c| c.parse().ok());
    from_tty.filter(|h| *h > 0).or_else(from_env).map_or(0, usize::from)
}

/// Where history is kept: `$XDG_STATE_HOME/gridlab/history` (or the platform's equivalent),
/// falling back to the local data folder.
pub fn history_path() -> Option<PathBuf> {
    Some(dirs::state_dir().or_else(dirs::data_local_dir)?.join("gridlab").join("history"))
}

/// The history file, or an in-memory history and the reason why not.
fn open_history() -> (Box<dyn History>, Result<PathBuf, String>) {
    let Some(path) = history_path() else {
        return (memory_history(), Err("no state or data folder is known for this user".to_string()));
    };
    match FileBackedHistory::with_file(HISTORY_SIZE, path.clone()) {
        Ok(h) => (Box::new(h), Ok(path)),
        Err(e) => (memory_history(), Err(format!("cannot use {}: {e}", path.display()))),
    }
}

fn memory_history() -> Box<dyn History> {
    Box::new(FileBackedHistory::new(HISTORY_SIZE).expect("an in-memory history of nonzero size"))
}

fn editor(
    names: &SharedNames,
    style: &crate::render::Style,
    history: Box<dyn History>,
    prefill: &prefill::Prefill,
    stop: &Arc<AtomicBool>,
) -> Reedline {
    let mut keys = default_emacs_keybindings();
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![ReedlineEvent::Menu("completion".to_string()), ReedlineEvent::MenuNext]),
    );
    keys.add_binding(KeyModifiers::SHIFT, KeyCode::BackTab, ReedlineEvent::MenuPrevious);
    let menu = ColumnarMenu::default().with_name("completion");
    let caret = arrows::Caret::default();
    let color = style.color;
    let editor = Reedline::create().with_history(history).with_break_signal(stop.clone());
    // A hint is told from typed text only by its colour: without colour, no hints; nor on a
    // projector, where its grey is unreadable and the audience would take it for typed text.
    let editor = if color && !style.big {
        let hinter = DefaultHinter::default().with_style(AnsiStyle::new().fg(Color::DarkGray));
        editor.with_hinter(Box::new(prefill::PrefillHinter::new(hinter, prefill.clone())))
    } else {
        editor
    };
    editor
        .with_validator(Box::new(validator::InputValidator { prefill: prefill.clone() }))
        .with_highlighter(Box::new(arrows::CaretHighlighter::new(
            highlighter::InputHighlighter::new(names.clone(), style.clone()),
            caret.clone(),
        )))
        .with_completer(Box::new(completer::InputCompleter::new(names.clone())))
        .with_quick_completions(true)
        .with_partial_completions(true)
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        // The pre-fill sees every key first: an arrow key touches it, so typing after a recall
        // edits the recalled input rather than replacing it.
        .with_edit_mode(Box::new(prefill::PrefillEditMode::new(
            arrows::LineArrows::new(Emacs::new(keys), caret),
            prefill.clone(),
        )))
        .with_ansi_colors(color)
}

fn interactive(mut options: Options, start: &Start) -> io::Result<ExitCode> {
    // Ctrl-C while the editor reads is a key (the terminal is raw); while an input runs it is
    // SIGINT, which this handler turns into a request to stop the launch at its next step.
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let can_stop = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).is_ok();
    if can_stop {
        options.sim.cancel = Some(cancel.clone());
    }
    // A launch that runs for more than a second says how far it has got, on stderr.
    if io::stderr().is_terminal() {
        options.sim.progress = Some(crate::backend::sim::ProgressSink(Arc::new(show_progress)));
    }
    // SIGTERM and SIGHUP stop a launch as Ctrl-C does, and make the editor return, so the
    // terminal is restored and the history kept before gridlab exits.
    let stop = Arc::new(AtomicBool::new(false));
    signals::install(&[&stop, &cancel]);
    signals::watch(&[&stop, &cancel]);
    options.style.width = terminal_width();
    options.style.rows = terminal_rows();
    let mut guide = match open_guide(&options, start, &mut io::stdout().lock())? {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    if let Some(g) = guide.as_mut().filter(|g| g.lang_unchosen()) {
        let lang = ask_lang(&options.style)?;
        g.set_lang(lang, &mut io::stdout().lock(), &options.style)?;
        options.lang = Some(lang);
    }
    let mut session = crate::lesson::session(options.clone(), None);
    session.allow_quit();
    {
        let mut out = io::stdout().lock();
        let style = &options.style;
        writeln!(out, "{}", style.bold("gridlab: write a CUDA kernel, launch it, see what every thread did."))?;
        let keys = if guide.as_ref().is_some_and(|g| g.demo) {
            // A demo records nothing: the presenter's own progress is left as it was.
            "A demo: Enter on an empty line shows the next part; Ctrl-D leaves. Progress is not saved."
        } else if guide.is_some() {
            "Type :help for help, :lessons for the course, Ctrl-D to leave (your place is saved)."
        } else {
            "Type :help for help, :lessons for the course, Tab to complete, Ctrl-D to leave."
        };
        // Wrapped at words: the terminal would cut `saved` into `sav` / `ed` at 80 columns.
        let width = terminal_width();
        writeln!(out, "{}", style.dim(&crate::diag::wrap(keys, width, 0)))?;
        announce_backend(&mut session, &mut out, width)?;
        if let Some(guide) = guide {
            start_guide(&mut session, guide, &mut out)?;
        }
        writeln!(out)?;
    }
    let (history, saved_in) = open_history();
    if let Err(why) = &saved_in {
        println!("{}", options.style.warn(&format!("note: {why}; history is kept for this session only")));
    }
    let names: SharedNames = Arc::new(Mutex::new(Names::of(&session)));
    let prefill = prefill::Prefill::default();
    let mut editor = editor(&names, &options.style, history, &prefill, &stop);
    let mut prompt = prompt::GridlabPrompt::new(session.backend_label());
    // The learner's unfinished input, left in the editor by a `:` command typed under it.
    let mut unfinished: Option<String> = None;
    // The tall input last shown in full: offered again (after a command typed instead of it),
    // it is named in one line rather than printed again over the command's own output.
    let mut shown_tall: Option<String> = None;
    loop {
        prompt.lesson = session.prompt_label();
        let mut suggestion = session.take_suggestion();
        // An input taller than the terminal cannot be pre-filled: reedline repaints its whole
        // buffer from the top, over the lines above it (a lesson's prose). It is shown instead,
        // and Enter on the empty line runs it.
        let tall = suggestion.take_if(|s| too_tall(s, prompt.continuation_width(), terminal_width(), terminal_rows()));
        if let Some(text) = &tall {
            let mut out = io::stdout().lock();
            if shown_tall.as_ref() == Some(text) {
                remind_tall(&mut out, text, &options.style)?;
            } else {
                show_tall(&mut out, text, &names, &options.style)?;
            }
        }
        shown_tall = tall.clone();
        if let Some(text) = suggestion.as_ref().or(unfinished.as_ref()) {
            editor
                .run_edit_commands(&[reedline::EditCommand::Clear, reedline::EditCommand::InsertString(text.clone())]);
        }
        let prefilled = suggestion.is_some() || tall.is_some();
        match (suggestion, unfinished.take()) {
            (None, Some(own)) => prefill.set_own(own),
            (offered, _) => prefill.set(offered),
        }
        let read = editor.read_line(&prompt);
        prefill.set(None);
        match read {
            Ok(Signal::Success(text)) => {
                let text = match tall {
                    Some(tall) if text.trim().is_empty() => tall,
                    _ => text,
                };
                // A `:` command on a line of its own under an unfinished kernel runs alone; the
                // kernel stays in the editor (the whole text is in history too).
                let (text, left) = match script::trailing_command(&text) {
                    Some((command, rest)) => (command.to_string(), Some(rest.to_string())),
                    None => (text, None),
                };
                // Kept as it is made: a crash, SIGTERM or a closed terminal loses nothing.
                let _ = editor.sync_history();
                session.set_screen(terminal_width(), terminal_rows());
                let mut out = io::stdout().lock();
                if text.trim().is_empty() {
                    // In a demo, Enter on an empty line moves the presentation on.
                    session.empty_input(&mut out)?;
                    continue;
                }
                cancel.store(false, Ordering::SeqCst);
                let status = session.eval_typed(&text, &mut out)?;
                out.flush()?;
                // A Ctrl-C that came after the launch (or with none) must not stop the next one.
                cancel.store(false, Ordering::SeqCst);
                if session.wants_to_quit() || signals::received().is_some() {
                    break;
                }
                if let Some(question) = session.take_question() {
                    drop(out);
                    if confirm(&mut editor, &question.ask)? {
                        session.eval_typed(&question.then, &mut io::stdout().lock())?;
                    }
                    out = io::stdout().lock();
                }
                // What goes in the editor next: the step's next input, or the one still to run
                // after a command of the learner's own.
                let style = session.style().clone();
                let own_suggestion = session.has_suggestion();
                session.input_ran(&text, status, true, &mut out)?;
                if let Some(left) = left {
                    if own_suggestion {
                        // The command put something in the editor itself (`:next`, `:solution`).
                        writeln!(out, "{}", style.dim("(what you were typing is in history: Up brings it back)"))?;
                    } else {
                        // Not the step's input again: the learner's own text wins.
                        session.take_suggestion();
                        unfinished = Some(left);
                    }
                }
                if let Ok(mut n) = names.lock() {
                    *n = Names::of(&session);
                }
                prompt.backend = session.backend_label();
            }
            // reedline has already cleared the line; a cleared lesson input stays pending.
            Ok(Signal::CtrlC) => {
                if prefilled {
                    session.set_aside();
                }
            }
            Ok(Signal::ExternalBreak(_)) if signals::received().is_some() => break,
            Ok(Signal::CtrlD) => break,
            Ok(_) => {}
            Err(e) => return Err(io::Error::other(e)),
        }
    }
    let synced = editor.sync_history();
    if let Some(signal) = signals::received() {
        // The terminal may be gone (SIGHUP): say nothing, and exit as the signal would.
        return Ok(ExitCode::from(128 + signal as u8));
    }
    let style = &options.style;
    match (saved_in, synced) {
        (Ok(path), Ok(())) => println!("{}", style.dim(&format!("bye; history is saved in {}", path.display()))),
        (Ok(path), Err(e)) => {
            println!("{}", style.warn(&format!("bye; history could not be saved in {}: {e}", path.display())))
        }
        (Err(_), _) => println!("{}", style.dim("bye; history was kept in memory only")),
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `text` in the editor, after a prompt of `indent` columns on every line, would need
/// more rows than the terminal has (less one for the line under it). Unknown rows: never.
fn too_tall(text: &str, indent: usize, width: usize, rows: usize) -> bool {
    if rows == 0 || width <= indent {
        return false;
    }
    let needed: usize =
        text.lines().map(|l| (indent + crate::render::text::visible_width(l)).div_ceil(width).max(1)).sum();
    needed + 1 > rows
}

/// An input too tall for the editor, shown in the prompt's colours with what Enter does.
fn show_tall(out: &mut impl Write, text: &str, names: &SharedNames, style: &crate::render::Style) -> io::Result<()> {
    use reedline::Highlighter;
    let painter = highlighter::InputHighlighter::new(names.clone(), style.clone());
    for line in text.lines() {
        writeln!(out, "  {}", painter.highlight(line, 0).render_simple())?;
    }
    // Under the code, next to the prompt, where the eye is.
    let lines = text.lines().count();
    writeln!(
        out,
        "{}",
        style.dim(&crate::render::prose(
            &format!(
                "(the input above is {lines} lines, taller than this terminal, so it is not put in the editor: Enter on the empty line runs it; on a taller terminal it goes in the editor, to change)"
            ),
            style
        ))
    )?;
    out.flush()
}

/// The tall input shown before, named again under a command typed instead of running it.
fn remind_tall(out: &mut impl Write, text: &str, style: &crate::render::Style) -> io::Result<()> {
    let lines = text.lines().count();
    let said = format!(
        "(Enter on the empty line still runs the {lines}-line input shown further up; `:step` shows the step again)"
    );
    writeln!(out, "{}", style.dim(&crate::render::prose(&said, style)))?;
    out.flush()
}

/// One line on stderr, rewritten in place while a long launch runs, and cleared when it ends.
fn show_progress(p: crate::backend::sim::Progress) {
    use crate::diag::text::thousands;
    let mut err = io::stderr().lock();
    let _ = if p.done {
        write!(err, "\r\x1b[2K")
    } else {
        let percent = p.blocks_started.saturating_mul(100) / p.blocks.max(1);
        write!(
            err,
            "\r\x1b[2K  running: block {} of {} ({percent}%), {} warp steps, {} s; Ctrl-C stops it",
            thousands(p.blocks_started),
            thousands(p.blocks),
            thousands(p.steps),
            p.elapsed.as_secs()
        )
    };
    let _ = err.flush();
}

/// The course's first start: which language the learner writes kernels in. Asked before the
/// editor starts, on the terminal's own line discipline; anything unclear is CUDA C, the
/// default, and `:lang` changes it at any time.
fn ask_lang(style: &crate::render::Style) -> io::Result<crate::session::Lang> {
    use crate::session::Lang;
    let mut out = io::stdout().lock();
    writeln!(out, "{}", style.bold("Which language do you want to write kernels in?"))?;
    // Each choice with a kernel and a launch in that language: on one line where the terminal
    // is wide enough, else the example under the name, so no code is cut mid-word.
    let choices = [
        ("1", "CUDA C", "__global__ void add(float *a) { ... }", "add<<<blocks, threads>>>(a)"),
        ("2", "Python (Numba)", "@cuda.jit  def add(a): ...", "add[blocks, threads](a)"),
    ];
    for (key, name, kernel, launch) in choices {
        if style.width >= 92 {
            writeln!(out, "  {key}  {name:<16} {kernel:<38}  {launch}")?;
        } else {
            writeln!(out, "  {key}  {name}")?;
            writeln!(out, "{}", style.dim(&format!("       {kernel}  {launch}")))?;
        }
    }
    write!(out, "{}", style.dim("1 or 2 (Enter: CUDA C; `:lang` switches any time): "))?;
    out.flush()?;
    let mut answer = String::new();
    if io::stdin().read_line(&mut answer)? == 0 {
        return Ok(Lang::Cuda);
    }
    let lang = match answer.trim() {
        "2" => Lang::Python,
        other => Lang::parse(other).unwrap_or(Lang::Cuda),
    };
    writeln!(out, "{}", style.dim(&format!("Lessons will be in {}.", lang.title())))?;
    Ok(lang)
}

/// Ask a yes/no question in the editor; anything but `y`/`yes` is no.
fn confirm(editor: &mut Reedline, question: &str) -> io::Result<bool> {
    let prompt = prompt::QuestionPrompt(question.to_string());
    match editor.read_line(&prompt) {
        Ok(Signal::Success(answer)) => Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")),
        Ok(_) => Ok(false),
        Err(e) => Err(io::Error::other(e)),
    }
}

/// Without a terminal: read lines, gather each input until it is complete, and run it. Piped
/// input is a script: echoed, with errors at its own line numbers, exit code 1 on failure.
fn lines(options: Options, start: &Start) -> io::Result<ExitCode> {
    let stdin = io::stdin();
    let tty = stdin.is_terminal();
    let mut out = crate::render::Closable::new(io::stdout().lock());
    // Piped input is a script: it opens a lesson only when asked to (`gridlab learn 2 < x`).
    let start = if *start == Start::Resume && !tty { &Start::Free } else { start };
    let guide = match open_guide(&options, start, &mut out)? {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let mut session = crate::lesson::session(options, None);
    session.allow_quit();
    if let Some(guide) = guide {
        start_guide(&mut session, guide, &mut out)?;
    }
    // Piped input is a script: echoed, with its own line numbers, tallied as `replay` does.
    let mut runner = Runner::new(&mut session, ScriptResult::new("<stdin>".into()), false, &mut out).recording();
    let mut worst = Status::Ok;
    let mut pending = String::new();
    let mut scan = script::input::Pending::default();
    let mut first_line = 1u32;
    let mut line_no = 0u32;
    let prompt = |out: &mut dyn Write, more: bool| -> io::Result<()> {
        if tty {
            write!(out, "{}", if more { "... " } else { "sim> " })?;
            out.flush()?;
        }
        Ok(())
    };
    prompt(runner.out(), false)?;
    let mut input = stdin.lock();
    loop {
        let line = match read_line(&mut input)? {
            Line::End => break,
            Line::Text(line) => line,
            Line::Refused(why) => {
                // Not a script (`gridlab < /dev/zero`, a binary file): stop reading it.
                let error = runner.session.style().error("error:");
                writeln!(runner.out(), "{error} <stdin>:{}: {why}; stopped reading", line_no + 1)?;
                pending.clear();
                worst = Status::Error;
                break;
            }
        };
        line_no += 1;
        if pending.is_empty() {
            first_line = line_no;
        }
        if pending.len() + line.len() >= script::input::MAX_INPUT_BYTES {
            let why = script::input::too_large(&" ".repeat(script::input::MAX_INPUT_BYTES + 1)).unwrap_or_default();
            let error = runner.session.style().error("error:");
            writeln!(runner.out(), "{error} <stdin>:{first_line}: {why}; stopped reading")?;
            pending.clear();
            worst = Status::Error;
            break;
        }
        pending.push_str(&line);
        pending.push('\n');
        // Whether the input is whole, from the new line alone: linear in a long input's length.
        scan.push_line(&line);
        if !scan.is_complete() {
            prompt(runner.out(), true)?;
            continue;
        }
        let text = std::mem::take(&mut pending);
        scan = script::input::Pending::default();
        let status = if tty {
            let (session, out) = runner.parts();
            session.eval_typed(&text, out)?
        } else {
            runner.run_text_at("<stdin>", &text, first_line, Expect::Ok, None)?
        };
        worst = session::worse(worst, status);
        if runner.session.wants_to_quit() {
            pending.clear();
            break;
        }
        // The lesson follows piped inputs as it follows typed ones (a step is done when its
        // inputs have run); with no editor, what it would put there is dropped.
        let (session, out) = runner.parts();
        session.take_suggestion();
        session.input_ran(&text, status, false, out)?;
        session.take_suggestion();
        // No editor to ask in: say how to answer instead.
        if let Some(otherwise) = runner.session.take_question().and_then(|q| q.otherwise) {
            writeln!(runner.out(), "{otherwise}")?;
        }
        prompt(runner.out(), false)?;
    }
    if !pending.trim().is_empty() {
        // An input still open at the end (a brace or bracket never closed) runs as it is, so
        // its error points at its own lines.
        let status = if tty {
            let (session, out) = runner.parts();
            session.eval_typed(&pending, out)?
        } else {
            runner.run_text_at("<stdin>", &pending, first_line, Expect::Ok, None)?
        };
        worst = session::worse(worst, status);
    }
    if tty {
        writeln!(runner.out())?;
        return Ok(ExitCode::SUCCESS);
    }
    runner.settle(None)?;
    Ok(if worst == Status::Ok && runner.result.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// One line of input read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    End,
    /// A line that is not text a script could hold: why.
    Refused(String),
}

/// Read one line (without its newline), refusing one longer than an input may be, one with a
/// NUL byte, or one that is not UTF-8, after reading at most one byte past the limit: endless
/// input (`/dev/zero`) costs bounded memory.
fn read_line(input: &mut impl BufRead) -> io::Result<Line> {
    let limit = script::input::MAX_INPUT_BYTES;
    let mut bytes = Vec::new();
    io::Read::take(&mut *input, limit as u64 + 1).read_until(b'\n', &mut bytes)?;
    if bytes.is_empty() {
        return Ok(Line::End);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    } else if bytes.len() > limit {
        return Ok(Line::Refused(format!("a line longer than {} MiB", limit >> 20)));
    }
    if bytes.contains(&0) {
        return Ok(Line::Refused("a NUL byte: binary input, not a script".into()));
    }
    Ok(match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.ends_with('\r') {
                s.pop();
            }
            Line::Text(s)
        }
        Err(_) => Line::Refused("text that is not UTF-8".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_or_binary_input_is_refused_after_a_bounded_read() {
        let mut zeros = io::BufReader::new(io::repeat(0));
        assert!(matches!(read_line(&mut zeros).unwrap(), Line::Refused(why) if why.contains("longer than")));
        let mut text = io::Cursor::new(b"let a = 1\r\nx\0y\n\xff\nlast".to_vec());
        assert_eq!(read_line(&mut text).unwrap(), Line::Text("let a = 1".into()));
        assert!(matches!(read_line(&mut text).unwrap(), Line::Refused(why) if why.contains("NUL")));
        assert!(matches!(read_line(&mut text).unwrap(), Line::Refused(why) if why.contains("UTF-8")));
        assert_eq!(read_line(&mut text).unwrap(), Line::Text("last".into()));
        assert_eq!(read_line(&mut text).unwrap(), Line::End);
    }

    #[test]
    fn an_input_is_too_tall_when_its_wrapped_lines_and_the_one_under_them_pass_the_rows() {
        let kernel = "__global__ void k(float *a) {\n    a[0] = 1.0f;\n}";
        // Three lines and the one under them: four rows.
        assert!(!too_tall(kernel, 17, 80, 4));
        assert!(too_tall(kernel, 17, 80, 3));
        // At 30 columns the first line (17 + 29) wraps onto a second row.
        assert!(too_tall(kernel, 17, 30, 4));
        // Rows not known (not a terminal): never.
        assert!(!too_tall(kernel, 17, 80, 0));
    }
}
