//! Where the learner is in a course: the lesson and step to resume at, what they solved, and
//! their answers (what goes back in the editor when they return to a solved exercise).
//!
//! Kept as TOML in the platform's data folder (`$XDG_DATA_HOME/gridlab/progress/` on Linux), one
//! file per course. Every save writes a temporary file beside it and renames it over the old one,
//! so a crash leaves either the old progress or the new, never half of one. A file that cannot be
//! read (not TOML, not UTF-8, no permission) is set aside (`.bak`, never over an older backup)
//! with a note, never written over and never a reason to stop the learner; temporary files of
//! saves that were killed are removed by the next save.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The lesson id to resume at.
    #[serde(default)]
    pub current: Option<String>,
    /// The step (0-based) of `current`.
    #[serde(default)]
    pub step: usize,
    /// The language lessons are shown in (`cuda` or `python`); asked on the first start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    #[serde(default)]
    pub lessons: BTreeMap<String, LessonProgress>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LessonProgress {
    /// How many steps have been shown (the furthest step + 1).
    #[serde(default)]
    pub seen: usize,
    /// Steps (0-based) whose exercise passed its check.
    #[serde(default)]
    pub solved: Vec<usize>,
    /// Steps (0-based) whose inputs all ran: the step said it was done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub done: Vec<usize>,
    /// The learner's code that passed each check, as they typed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Answer>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub step: usize,
    pub code: String,
}

impl LessonProgress {
    /// The learner's answer to the exercise of `step`, if it was kept.
    pub fn answer(&self, step: usize) -> Option<&str> {
        self.answers.iter().find(|a| a.step == step).map(|a| a.code.as_str())
    }
}

impl Progress {
    pub fn lesson(&self, id: &str) -> Option<&LessonProgress> {
        self.lessons.get(id)
    }

    /// Note that step `step` of `id` is being shown, and resume there next time.
    pub fn visit(&mut self, id: &str, step: usize) {
        self.current = Some(id.to_string());
        self.step = step;
        let l = self.lessons.entry(id.to_string()).or_default();
        l.seen = l.seen.max(step + 1);
    }

    /// Note that step `step` of `id` is done: every input it offered ran.
    pub fn finish(&mut self, id: &str, step: usize) {
        let l = self.lessons.entry(id.to_string()).or_default();
        if !l.done.contains(&step) {
            l.done.push(step);
            l.done.sort_unstable();
        }
    }

    /// Note that the exercise of step `step` passed its check, with the learner's `answer`
    /// (their code that passed, when known; a later answer replaces an earlier one).
    pub fn solve(&mut self, id: &str, step: usize, answer: Option<String>) {
        let l = self.lessons.entry(id.to_string()).or_default();
        if !l.solved.contains(&step) {
            l.solved.push(step);
            l.solved.sort_unstable();
        }
        if let Some(code) = answer {
            l.answers.retain(|a| a.step != step);
            l.answers.push(Answer { step, code });
            l.answers.sort_unstable_by_key(|a| a.step);
        }
    }
}

/// The file a course's progress lives in (none when the platform has no data folder).
#[derive(Clone, Debug)]
pub struct Store {
    path: Option<PathBuf>,
}

impl Store {
    /// The store of the course named `course` (`gridlab`, or a folder).
    pub fn for_course(course: &str) -> Store {
        let file = if course == "gridlab" { "gridlab.toml".to_string() } else { format!("{}.toml", key(course)) };
        Store { path: dirs::data_dir().map(|d| d.join("gridlab").join("progress").join(file)) }
    }

    /// A store that keeps progress for this session only. A replayed script is someone else's
    /// input: its `:lesson` and `:check` must not change the learner's saved progress.
    pub fn in_memory() -> Store {
        Store { path: None }
    }

    /// A store at an exact path (tests).
    pub fn at(path: PathBuf) -> Store {
        Store { path: Some(path) }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The saved progress, and a note for the learner when it could not be read. A file that
    /// cannot be read (not TOML, not UTF-8, no permission) is set aside first, so the next save
    /// loses nothing.
    pub fn load(&self) -> (Progress, Option<String>) {
        let Some(path) = &self.path else { return (Progress::default(), None) };
        let why = match std::fs::read_to_string(path) {
            Ok(text) => match toml::from_str(&text) {
                Ok(p) => return (p, None),
                Err(e) => e.message().trim_end().to_string(),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (Progress::default(), None),
            Err(e) => e.to_string(),
        };
        let mut note = format!("your progress file {} could not be read ({why}); starting afresh", path.display());
        match set_aside(path) {
            Ok(bak) => note.push_str(&format!(" (the old file is kept as {})", bak.display())),
            Err(e) => note
                .push_str(&format!(" (it could not be set aside: {e}; your progress will not be saved until it can)")),
        }
        (Progress::default(), Some(note))
    }

    /// Write atomically: a temporary file in the same folder, flushed, then renamed over the old.
    /// A file already there that cannot be read is set aside first, never written over; when it
    /// cannot be set aside either, nothing is saved.
    pub fn save(&self, progress: &Progress) -> io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("progress");
        remove_stale_temporaries(dir, file);
        let readable = match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str::<Progress>(&text).is_ok(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if !readable {
            set_aside(path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{} cannot be read, and setting it aside failed ({e}): not writing over it",
                        path.display()
                    ),
                )
            })?;
        }
        let text = toml::to_string(progress).map_err(io::Error::other)?;
        let tmp = dir.join(format!(".{file}.{}.tmp", std::process::id()));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// Forget everything (`gridlab lessons --reset`). Returns whether there was anything.
    pub fn reset(&self) -> io::Result<bool> {
        let Some(path) = &self.path else { return Ok(false) };
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Move `path` to the first free name of `NAME.bak`, `NAME.bak.1`, ... beside it, so that
/// no earlier backup is written over. Returns where it went.
fn set_aside(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("progress.toml");
    for n in 0..1000 {
        let bak = path.with_file_name(if n == 0 { format!("{name}.bak") } else { format!("{name}.bak.{n}") });
        if bak.symlink_metadata().is_err() {
            std::fs::rename(path, &bak)?;
            return Ok(bak);
        }
    }
    Err(io::Error::other("too many backups beside it already"))
}

/// Remove the temporary files (`.FILE.PID.tmp`) that saves killed before their rename left in
/// `dir`: those of processes that no longer run, or older than an hour (no save takes that long).
fn remove_stale_temporaries(dir: &Path, file: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefix = format!(".{file}.");
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|n| n.strip_suffix(".tmp")) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 3600));
        if pid != std::process::id() && (old || !process_runs(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether a process with this id runs (signal 0 checks without sending anything).
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A file name for a course folder: its last component, made safe, and a short hash of the
/// whole path so that two folders named `lessons` do not share progress.
fn key(course: &str) -> String {
    use sha2::{Digest, Sha256};
    let last = Path::new(course).file_name().and_then(|n| n.to_str()).unwrap_or("course");
    let safe: String = last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let abs = std::fs::canonicalize(course).unwrap_or_else(|_| PathBuf::from(course));
    let hash = Sha256::digest(abs.to_string_lossy().as_bytes());
    format!("{safe}-{:02x}{:02x}{:02x}{:02x}", hash[0], hash[1], hash[2], hash[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_round_trips_and_resets() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("sub").join("p.toml"));
        assert_eq!(store.load(), (Progress::default(), None));
        let mut p = Progress::default();
        p.visit("01-a", 0);
        p.visit("01-a", 2);
        p.visit("01-a", 1);
        p.solve("01-a", 2, None);
        p.solve("01-a", 2, Some("__global__ void k() {\n}".into()));
        store.save(&p).unwrap();
        let (back, note) = store.load();
        assert_eq!(note, None);
        assert_eq!(back, p);
        assert_eq!(back.current.as_deref(), Some("01-a"));
        assert_eq!(back.step, 1);
        assert_eq!(back.lesson("01-a").unwrap().seen, 3);
        assert_eq!(back.lesson("01-a").unwrap().solved, [2]);
        assert_eq!(back.lesson("01-a").unwrap().answer(2), Some("__global__ void k() {\n}"));
        assert_eq!(back.lesson("01-a").unwrap().answer(1), None);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
        assert!(store.reset().unwrap());
        assert!(!store.reset().unwrap());
    }

    #[test]
    fn a_corrupt_file_is_set_aside_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "current = [oops").unwrap();
        let store = Store::at(path.clone());
        let (p, note) = store.load();
        assert_eq!(p, Progress::default());
        let note = note.unwrap();
        assert!(note.contains("could not be read") && note.contains("p.toml.bak"), "{note}");
        assert!(path.with_extension("toml.bak").exists());
        // The next save works as on a fresh machine.
        store.save(&p).unwrap();
        assert_eq!(store.load().1, None);
    }

    #[test]
    fn a_file_that_is_not_text_is_kept_before_the_next_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        let broken = b"current = \"01-\xff\"\n".to_vec();
        std::fs::write(&path, &broken).unwrap();
        let store = Store::at(path.clone());
        let (p, note) = store.load();
        assert_eq!(p, Progress::default());
        assert!(note.unwrap().contains("kept as"));
        store.save(&p).unwrap();
        assert_eq!(std::fs::read(path.with_extension("toml.bak")).unwrap(), broken);
        // A save straight over an unreadable file (one that appeared since, or was never
        // loaded) sets it aside too, beside the older backup rather than over it.
        std::fs::write(&path, b"\xfe\xfe").unwrap();
        store.save(&p).unwrap();
        assert_eq!(std::fs::read(path.with_extension("toml.bak")).unwrap(), broken);
        assert_eq!(std::fs::read(dir.path().join("p.toml.bak.1")).unwrap(), b"\xfe\xfe");
        assert_eq!(store.load(), (p, None));
    }

    #[test]
    fn temporary_files_of_killed_saves_are_removed_by_the_next_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        // A process id that runs no process (above the kernel's maximum), and this process's own.
        let stale = dir.path().join(".p.toml.4194305.tmp");
        let mine = dir.path().join(format!(".p.toml.{}.tmp", std::process::id()));
        let other = dir.path().join(".q.toml.4194305.tmp");
        for f in [&stale, &mine, &other] {
            std::fs::write(f, "current = \"01-a\"").unwrap();
        }
        Store::at(path.clone()).save(&Progress::default()).unwrap();
        assert!(!stale.exists() && !mine.exists(), "stale temporaries are gone");
        assert!(other.exists(), "another file's temporaries are not this store's to remove");
    }

    #[test]
    fn course_folders_get_distinct_keys() {
        assert_ne!(key("/a/lessons"), key("/b/lessons"));
        assert!(key("/a/my course").starts_with("my_course-"));
    }
}
