//! A course: the lessons of a folder, in the order of their numbers.
//!
//! The built-in course is compiled into the binary (so `gridlab` carries its lessons wherever it
//! is copied); `--course DIR` or `GRIDLAB_COURSE` reads another folder instead.

use std::path::{Path, PathBuf};

use super::{Lesson, LessonError, parse};

/// The built-in course, `lessons/` at build time. A test checks that this list and the folder
/// agree, so a new lesson cannot be forgotten here.
const BUILTIN: &[(&str, &str)] = &[
    ("01-first-kernel.md", include_str!("../../lessons/01-first-kernel.md")),
    ("02-race.md", include_str!("../../lessons/02-race.md")),
    ("03-one-thread-per-element.md", include_str!("../../lessons/03-one-thread-per-element.md")),
    ("04-bounds-checks.md", include_str!("../../lessons/04-bounds-checks.md")),
    ("05-grid-stride-loops.md", include_str!("../../lessons/05-grid-stride-loops.md")),
    ("06-launch-configuration.md", include_str!("../../lessons/06-launch-configuration.md")),
    ("07-launch-cost.md", include_str!("../../lessons/07-launch-cost.md")),
    ("08-shared-memory.md", include_str!("../../lessons/08-shared-memory.md")),
    ("09-reductions.md", include_str!("../../lessons/09-reductions.md")),
    ("10-matrix-multiply.md", include_str!("../../lessons/10-matrix-multiply.md")),
    ("11-memory-coalescing.md", include_str!("../../lessons/11-memory-coalescing.md")),
    ("12-bank-conflicts.md", include_str!("../../lessons/12-bank-conflicts.md")),
    ("13-divergence-and-occupancy.md", include_str!("../../lessons/13-divergence-and-occupancy.md")),
];

#[derive(Clone, Debug)]
pub struct Course {
    /// Names the course in messages and keys its progress: `gridlab` for the built-in course,
    /// otherwise the folder.
    pub name: String,
    pub lessons: Vec<Lesson>,
}

impl Course {
    /// The course compiled into gridlab.
    pub fn builtin() -> Result<Course, Vec<LessonError>> {
        let files = BUILTIN.iter().map(|(name, text)| (format!("lessons/{name}"), text.to_string())).collect();
        Course::from_files("gridlab".into(), files)
    }

    /// Every `NN-slug.md` in `dir` (other files are ignored).
    pub fn load(dir: &Path) -> Result<Course, Vec<LessonError>> {
        match Course::read(dir) {
            Ok((course, errors)) if errors.is_empty() => Ok(course),
            Ok((_, errors)) => Err(errors),
            Err(e) => Err(vec![e]),
        }
    }

    /// The lessons of `dir` that can be read, and the problems with the others (a lesson that
    /// does not parse, a numbered file not named `NN-slug.md`, two lessons with one number), so
    /// that `dev check` reports every problem at once. `Err` when there is no course to speak
    /// of: the folder is missing or unreadable, or holds no lesson files.
    pub fn read(dir: &Path) -> Result<(Course, Vec<LessonError>), LessonError> {
        let whole = |message: String| LessonError { path: dir.display().to_string(), line: 0, message };
        let entries = std::fs::read_dir(dir).map_err(|e| whole(format!("cannot read the course folder: {e}")))?;
        let mut files = Vec::new();
        let mut errors = Vec::new();
        let mut misnamed = 0;
        for entry in entries {
            let path = entry.map_err(|e| whole(format!("cannot read the course folder: {e}")))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let numbered = name.starts_with(|c: char| c.is_ascii_digit());
            if path.is_file() && name.ends_with(".md") && numbered && !is_lesson_file(&path) {
                // Numbered like a lesson but not named like one: it would silently drop out.
                misnamed += 1;
                errors.push(LessonError {
                    path: path.display().to_string(),
                    line: 0,
                    message: "not read as a lesson: a lesson's file is named NN-slug.md, two digits and lower-case words joined by `-` (e.g. `03-stencil.md`); rename it".into(),
                });
                continue;
            }
            if path.is_file() && path.extension().is_some_and(|e| e == "md") && is_lesson_file(&path) {
                let shown = path.display().to_string();
                match crate::script::input::read_script(&path) {
                    Ok(text) => files.push((shown, text)),
                    Err(e) => {
                        errors.push(LessonError { path: shown, line: 0, message: format!("cannot read it: {e}") })
                    }
                }
            }
        }
        if files.is_empty() && misnamed == 0 && errors.is_empty() {
            return Err(whole("no lessons here: a lesson is a file named NN-slug.md (e.g. 01-first-kernel.md)".into()));
        }
        files.sort();
        errors.sort_by(|a, b| a.path.cmp(&b.path));
        let (course, more) = Course::from_files_leniently(dir.display().to_string(), files);
        errors.extend(more);
        Ok((course, errors))
    }

    /// `--course DIR` when given, else `GRIDLAB_COURSE`, else the built-in course.
    pub fn chosen(dir: Option<&Path>) -> Result<Course, Vec<LessonError>> {
        let env = std::env::var_os("GRIDLAB_COURSE").filter(|v| !v.is_empty()).map(PathBuf::from);
        match dir.map(Path::to_path_buf).or(env) {
            Some(dir) => Course::load(&dir),
            None => Course::builtin(),
        }
    }

    /// [`Course::chosen`], read as [`Course::read`] does: the readable lessons and the problems.
    pub fn chosen_leniently(dir: Option<&Path>) -> Result<(Course, Vec<LessonError>), LessonError> {
        let env = std::env::var_os("GRIDLAB_COURSE").filter(|v| !v.is_empty()).map(PathBuf::from);
        match dir.map(Path::to_path_buf).or(env) {
            Some(dir) => Course::read(&dir),
            None => {
                let files = BUILTIN.iter().map(|(name, text)| (format!("lessons/{name}"), text.to_string())).collect();
                Ok(Course::from_files_leniently("gridlab".into(), files))
            }
        }
    }

    fn from_files(name: String, files: Vec<(String, String)>) -> Result<Course, Vec<LessonError>> {
        let (course, errors) = Course::from_files_leniently(name, files);
        if errors.is_empty() { Ok(course) } else { Err(errors) }
    }

    /// The lessons that parse, in order, and the errors of those that do not (and of lessons
    /// sharing a number, which are both kept).
    fn from_files_leniently(name: String, files: Vec<(String, String)>) -> (Course, Vec<LessonError>) {
        let mut lessons = Vec::new();
        let mut errors = Vec::new();
        let numbers: Vec<(PathBuf, u32)> =
            files.iter().filter_map(|(p, _)| Some((PathBuf::from(p), super::parse::file_name(p)?.0))).collect();
        for (path, text) in files {
            match parse(&path, &text) {
                Ok(l) => lessons.push(l),
                Err(e) => errors.push(e),
            }
        }
        if lessons.is_empty() && errors.is_empty() {
            errors.push(LessonError { path: name.clone(), line: 0, message: "the course has no lessons".into() });
        }
        lessons.sort_by_key(|l| l.number);
        errors.extend(duplicate_numbers(&numbers));
        (Course { name, lessons }, errors)
    }

    /// A lesson by number (`3`, `03`), id (`03-one-thread`) or slug, or a unique prefix of a slug.
    pub fn find(&self, query: &str) -> Result<usize, String> {
        let q = query.trim();
        let by = |f: &dyn Fn(&Lesson) -> bool| self.lessons.iter().position(f);
        if let Ok(n) = q.parse::<u32>()
            && let Some(i) = by(&|l| l.number == n)
        {
            return Ok(i);
        }
        if let Some(i) = by(&|l| l.id == q || l.slug == q) {
            return Ok(i);
        }
        let matches: Vec<usize> = (0..self.lessons.len()).filter(|&i| self.lessons[i].slug.starts_with(q)).collect();
        match matches.as_slice() {
            [i] if !q.is_empty() => Ok(*i),
            [] | [_] => Err(format!("no lesson `{q}`; `gridlab lessons` (or `:lessons`) lists them: {}", self.ids())),
            many => Err(format!(
                "`{q}` could be {}; say which",
                many.iter().map(|&i| self.lessons[i].id.as_str()).collect::<Vec<_>>().join(" or ")
            )),
        }
    }

    fn ids(&self) -> String {
        let ids: Vec<String> = self.lessons.iter().map(|l| format!("{} ({})", l.number, l.slug)).collect();
        ids.join(", ")
    }
}

/// Lessons of one folder that share a number (which `:lesson 3` could not tell apart): one error
/// for each file after the first of its number. `lessons` pairs a path with its number.
pub fn duplicate_numbers(lessons: &[(PathBuf, u32)]) -> Vec<LessonError> {
    let mut sorted: Vec<&(PathBuf, u32)> = lessons.iter().collect();
    sorted.sort_by(|a, b| (a.0.parent(), a.1, &a.0).cmp(&(b.0.parent(), b.1, &b.0)));
    sorted
        .windows(2)
        .filter(|w| w[0].0.parent() == w[1].0.parent() && w[0].1 == w[1].1)
        .map(|w| LessonError {
            path: w[1].0.display().to_string(),
            line: 0,
            message: format!("lesson number {:02} is also used by {}: renumber one", w[1].1, w[0].0.display()),
        })
        .collect()
}

/// `NN-slug.md`, the only files of a folder that are lessons.
pub fn is_lesson_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| super::parse::file_name(n).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/course")
    }

    #[test]
    fn the_builtin_list_is_the_lessons_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lessons");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| is_lesson_file(Path::new(n)))
            .collect();
        on_disk.sort();
        let built_in: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(built_in, on_disk, "add the new lesson to BUILTIN in src/lesson/course.rs");
        for (name, text) in BUILTIN {
            let on_disk =
                std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("lessons").join(name)).unwrap();
            assert_eq!(*text, on_disk);
        }
        Course::builtin().unwrap();
    }

    #[test]
    fn a_numbered_file_not_named_like_a_lesson_is_an_error_not_a_missing_lesson() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["01-fill.md", "02-guard.md"] {
            std::fs::copy(fixture().join(name), dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("README.md"), "# notes, not a lesson\n").unwrap();
        assert!(Course::load(dir.path()).is_ok(), "README.md is not a lesson, and that is fine");
        std::fs::write(dir.path().join("3-Stencil.md"), "+++\n").unwrap();
        let e = Course::load(dir.path()).unwrap_err();
        assert!(e[0].path.ends_with("3-Stencil.md") && e[0].message.contains("NN-slug.md"), "{e:?}");
    }

    #[test]
    fn lessons_are_found_by_number_id_slug_or_prefix() {
        let c = Course::load(&fixture()).unwrap();
        assert_eq!(c.lessons.len(), 2);
        assert_eq!(c.find("1"), Ok(0));
        assert_eq!(c.find("02"), Ok(1));
        assert_eq!(c.find("02-guard"), Ok(1));
        assert_eq!(c.find("guard"), Ok(1));
        assert_eq!(c.find("gu"), Ok(1));
        let e = c.find("7").unwrap_err();
        assert!(e.starts_with("no lesson `7`"), "{e}");
    }

    #[test]
    fn a_folder_without_lessons_says_what_a_lesson_is() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# not a lesson").unwrap();
        let e = Course::load(dir.path()).unwrap_err();
        assert!(e[0].message.contains("NN-slug.md"), "{}", e[0]);
    }
}
