//! The compile cache on disk: NVRTC takes 50 to 500 ms per module, and a session (or a replayed
//! script, or a restarted worker) compiles the same source again and again. Entries live in
//! `dirs::cache_dir()/gridlab/kernels/`, one file per module, named by a SHA-256 of everything
//! that decides the compiled image: the generated source, the NVRTC options, the device's
//! architecture and NVRTC's version.
//!
//! Every function here is pure file handling, so it is tested without a GPU; the worker calls
//! them around NVRTC. A file that is truncated, corrupt or of another format version reads as a
//! miss, and the worker's next compile writes it again. Writes go to a temporary file renamed into
//! place, so a reader never sees half an entry, even with two sessions compiling at once.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The first bytes of every entry.
const MAGIC: &[u8; 8] = b"GLKCACHE";
/// Bumped when the entry's layout or the meaning of its key changes: old entries then miss.
const VERSION: u32 = 2;
/// Magic, version, payload length, payload SHA-256.
const HEADER: usize = 8 + 4 + 8 + 32;
/// Entry files end with this; temporary files do not, so they are never read as entries.
const EXT: &str = "kernel";

/// A compiled module as the worker loads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// What NVRTC compiled for: `sm_90` (a CUBIN) or `compute_90` (PTX, NUL-terminated).
    pub arch: String,
    /// NVRTC's log, so warnings show on a cache hit too.
    pub log: String,
    pub image: Vec<u8>,
    /// Template kernel instances and their mangled names (`matrixMul<16>` -> `_Z9matrixMulILi16EEvPf`).
    #[serde(default)]
    pub lowered: Vec<(String, String)>,
}

/// The platform's cache folder for compiled kernels, if the platform has one.
pub fn dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("gridlab").join("kernels"))
}

/// The entry's name: a hex SHA-256 over every input that changes the compiled image. Each part
/// is length-prefixed, so no two different inputs hash the same bytes.
pub fn key(source: &str, options: &[String], arch: &str, nvrtc_version: (i32, i32)) -> String {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(&VERSION.to_le_bytes());
    part(canonical(source).as_bytes());
    part(&(options.len() as u64).to_le_bytes());
    for o in options {
        part(o.as_bytes());
    }
    part(arch.as_bytes());
    part(&nvrtc_version.0.to_le_bytes());
    part(&nvrtc_version.1.to_le_bytes());
    hex(&h.finalize())
}

/// `source` with each snippet's id in its `#line N "@ID"` directives replaced by the order in
/// which the snippet first appears. Ids count every input of a session, so the same kernel typed
/// again (or in the next session, after other inputs) has a new id: without this it would never
/// hit the cache. The ids only name snippets in NVRTC's messages and the line table; a compile
/// that fails is not cached, so a hit never has to map a message back.
fn canonical(source: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::with_capacity(source.len());
    for line in source.split_inclusive('\n') {
        let id = line
            .strip_prefix("#line ")
            .and_then(|rest| rest.split_once(" \"@"))
            .and_then(|(n, rest)| Some((n, rest.split_once('"')?)));
        match id {
            Some((n, (id, tail))) if n.chars().all(|c| c.is_ascii_digit()) => {
                let k = seen.iter().position(|s| *s == id).unwrap_or_else(|| {
                    seen.push(id);
                    seen.len() - 1
                });
                out.push_str(&format!("#line {n} \"@{k}\"{tail}"));
            }
            _ => out.push_str(line),
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An entry's bytes: the header (magic, version, payload length, payload SHA-256), then the
/// payload (postcard).
pub fn encode(entry: &Entry) -> Vec<u8> {
    let payload = postcard::to_stdvec(entry).expect("an entry always serialises");
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&payload));
    out.extend_from_slice(&payload);
    out
}

/// The entry in `bytes`, or `None` when they are not a whole, intact entry of this version.
pub fn decode(bytes: &[u8]) -> Option<Entry> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    let len = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let payload = &bytes[HEADER..];
    if version != VERSION || payload.len() as u64 != len || Sha256::digest(payload).as_slice() != &bytes[20..52] {
        return None;
    }
    postcard::from_bytes(payload).ok()
}

fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.{EXT}"))
}

/// The entry for `key` in `dir`; `None` when there is none or it cannot be used.
pub fn read(dir: &Path, key: &str) -> Option<Entry> {
    decode(&fs::read(path(dir, key)).ok()?)
}

/// Store `entry` under `key`, replacing whatever was there, atomically.
pub fn write(dir: &Path, key: &str, entry: &Entry) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    remove_stale_temporaries(dir);
    // A name of its own per process: two workers writing one key never share a temporary file.
    let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&encode(entry))?;
        f.sync_all()?;
        fs::rename(&tmp, path(dir, key))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Remove the temporary files (`.KEY.PID.tmp`) of writes that were killed before their rename:
/// those of processes that no longer run, or older than an hour.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.starts_with('.'))
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
            .and_then(|(_, pid)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let old =
            entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|a| a.as_secs() > 3600));
        // SAFETY: signal 0 only checks that the process exists.
        let runs = unsafe { libc::kill(pid, 0) } == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        if pid as u32 != std::process::id() && (old || !runs) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// How many entries `dir` holds and their total size in bytes (for `gridlab doctor`).
pub fn usage(dir: &Path) -> (u64, u64) {
    let Ok(list) = fs::read_dir(dir) else { return (0, 0) };
    list.filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == EXT))
        .filter_map(|e| e.metadata().ok())
        .fold((0, 0), |(n, bytes), m| (n + 1, bytes + m.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            arch: "sm_90".into(),
            log: "a warning\n".into(),
            image: (0..=255u8).cycle().take(5000).collect(),
            lowered: vec![("k<16>".into(), "_Z1kILi16EEvPf".into())],
        }
    }

    #[test]
    fn temporary_files_of_killed_writes_are_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".abc.4194305.tmp");
        fs::write(&stale, "half").unwrap();
        write(dir.path(), "key", &entry()).unwrap();
        assert!(!stale.exists());
        assert_eq!(read(dir.path(), "key"), Some(entry()));
    }

    fn opts() -> Vec<String> {
        vec!["-lineinfo".into(), "--std=c++17".into()]
    }

    #[test]
    fn every_input_changes_the_key() {
        let base = key("__global__ void k() {}", &opts(), "sm_90", (12, 4));
        assert_eq!(base, key("__global__ void k() {}", &opts(), "sm_90", (12, 4)));
        assert_eq!(base.len(), 64);
        assert!(base.chars().all(|c| c.is_ascii_hexdigit()));
        let others = [
            key("__global__ void j() {}", &opts(), "sm_90", (12, 4)),
            key("__global__ void k() {}", &["-lineinfo".into()], "sm_90", (12, 4)),
            key("__global__ void k() {}", &opts(), "sm_80", (12, 4)),
            key("__global__ void k() {}", &opts(), "sm_90", (12, 8)),
            key("__global__ void k() {}", &opts(), "sm_90", (13, 4)),
        ];
        for k in &others {
            assert_ne!(&base, k);
        }
        // The same snippets typed again (new ids) are the same key; a different layout is not.
        let a = "#line 1 \"@3\"\n__global__ void k() {}\n#line 1 \"@7\"\n__global__ void j() {}\n";
        let b = "#line 1 \"@12\"\n__global__ void k() {}\n#line 1 \"@40\"\n__global__ void j() {}\n";
        let c = "#line 1 \"@12\"\n__global__ void k() {}\n#line 1 \"@12\"\n__global__ void j() {}\n";
        assert_eq!(key(a, &opts(), "sm_90", (12, 4)), key(b, &opts(), "sm_90", (12, 4)));
        assert_ne!(key(a, &opts(), "sm_90", (12, 4)), key(c, &opts(), "sm_90", (12, 4)));
        // Length prefixes: moving a boundary between parts changes the key.
        assert_ne!(key("ab", &["c".into()], "x", (1, 0)), key("a", &["bc".into()], "x", (1, 0)));
    }

    #[test]
    fn entries_round_trip() {
        assert_eq!(decode(&encode(&entry())), Some(entry()));
    }

    #[test]
    fn truncated_corrupt_or_foreign_entries_are_misses() {
        let good = encode(&entry());
        assert_eq!(decode(&good[..good.len() - 1]), None, "truncated");
        assert_eq!(decode(&good[..HEADER - 1]), None, "header only");
        assert_eq!(decode(&[]), None);
        let mut flipped = good.clone();
        flipped[HEADER + 100] ^= 1;
        assert_eq!(decode(&flipped), None, "a flipped bit");
        let mut other_version = good.clone();
        other_version[8] = 99;
        assert_eq!(decode(&other_version), None, "another version");
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None, "trailing bytes");
        assert_eq!(decode(b"not a cache entry at all, but long enough for a header......"), None);
    }

    #[test]
    fn a_corrupt_entry_is_a_miss_and_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("src", &opts(), "sm_90", (12, 4));
        assert_eq!(read(dir.path(), &k), None, "empty cache");
        write(dir.path(), &k, &entry()).unwrap();
        assert_eq!(read(dir.path(), &k), Some(entry()));
        // Truncate it, as a crash or a full disk might.
        let file = path(dir.path(), &k);
        let bytes = fs::read(&file).unwrap();
        fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(read(dir.path(), &k), None, "truncated entry");
        let fresh = Entry { log: String::new(), ..entry() };
        write(dir.path(), &k, &fresh).unwrap();
        assert_eq!(read(dir.path(), &k), Some(fresh));
        // No temporary files are left behind, and only entries are counted.
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let (n, bytes) = usage(dir.path());
        assert_eq!((n, bytes), (1, fs::metadata(&file).unwrap().len()));
    }

    #[test]
    fn a_missing_folder_is_created_and_counts_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("gridlab").join("kernels");
        assert_eq!(usage(&nested), (0, 0));
        write(&nested, "abc", &entry()).unwrap();
        assert_eq!(read(&nested, "abc"), Some(entry()));
        assert_eq!(usage(&nested).0, 1);
    }

    #[test]
    fn the_cache_folder_is_under_the_platform_cache() {
        if let Some(d) = dir() {
            assert!(d.ends_with("gridlab/kernels"), "{}", d.display());
        }
    }
}
