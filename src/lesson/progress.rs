//! Where the learner is in a course: the lesson and step to resume at, what they solved, and
//! their answers (what goes back in the editor when they return to a solved exercise).
//!
//! Kept as TOML in the platform's data folder (`$XDG_DATA_HOME/gridlab/progress/` on Linux), one
//! file per course. Every save writes a temporary file beside it and renames it over the old one,
//! so a crash leaves either the old progress or the new, never half of one. A file that cannot be
//! read is set aside (`.bak`) with a note, never a reason to stop the learner.

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

    /// A store at an exact path (tests).
    pub fn at(path: PathBuf) -> Store {
        Store { path: Some(path) }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The saved progress, and a note for the learner when it could not be read.
    pub fn load(&self) -> (Progress, Option<String>) {
        let Some(path) = &self.path else { return (Progress::default(), None) };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (Progress::default(), None),
            Err(e) => {
                return (Progress::default(), Some(format!("cannot read your progress in {}: {e}", path.display())));
            }
        };
        match toml::from_str(&text) {
            Ok(p) => (p, None),
            Err(e) => {
                let bak = path.with_extension("toml.bak");
                let kept = std::fs::rename(path, &bak).is_ok();
                let mut note = format!(
                    "your progress file {} could not be read ({}); starting afresh",
                    path.display(),
                    e.message().trim_end()
                );
                if kept {
                    note.push_str(&format!(" (the old file is kept as {})", bak.display()));
                }
                (Progress::default(), Some(note))
            }
        }
    }

    /// Write atomically: a temporary file in the same folder, flushed, then renamed over the old.
    pub fn save(&self, progress: &Progress) -> io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = toml::to_string(progress).map_err(io::Error::other)?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("progress"),
            std::process::id()
        ));
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
    fn course_folders_get_distinct_keys() {
        assert_ne!(key("/a/lessons"), key("/b/lessons"));
        assert!(key("/a/my course").starts_with("my_course-"));
    }
}
