//! Finding the CUDA driver and NVRTC before any cudarc call.
//!
//! cudarc loads libraries by name and panics when none of its candidate names loads; it also
//! does not know NVRTC 13's name when built for CUDA 12. So gridlab looks for the libraries
//! itself, in the places they are installed, and gives the worker process a private folder of
//! links under the names cudarc asks for, first on its `LD_LIBRARY_PATH`. A missing library is
//! then a message with what to install, never a panic.

use std::path::{Path, PathBuf};

/// What the search found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Libraries {
    /// `libcuda.so.1`, the driver.
    pub driver: Option<PathBuf>,
    /// `libnvrtc.so.13` or `.12` (the newest found).
    pub nvrtc: Option<PathBuf>,
    /// Every folder looked in, for `gridlab doctor`.
    pub searched: Vec<PathBuf>,
}

impl Libraries {
    /// Search the usual places (see [`candidate_dirs`]).
    pub fn find() -> Libraries {
        let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
        let dirs = candidate_dirs(
            std::env::var("LD_LIBRARY_PATH").ok().as_deref(),
            env("CUDA_HOME").as_deref(),
            env("CUDA_PATH").as_deref(),
            env("VIRTUAL_ENV").as_deref(),
            env("HOME").as_deref(),
        );
        Libraries::find_in(&dirs)
    }

    /// Search the given folders, in order.
    pub fn find_in(dirs: &[PathBuf]) -> Libraries {
        let mut found = Libraries { searched: dirs.to_vec(), ..Libraries::default() };
        for dir in dirs {
            if found.driver.is_none() {
                found.driver = ["libcuda.so.1", "libcuda.so"].iter().map(|n| dir.join(n)).find(|p| p.exists());
            }
            if found.nvrtc.is_none() {
                found.nvrtc = newest_nvrtc(dir);
            }
        }
        found
    }

    pub fn usable(&self) -> bool {
        self.driver.is_some() && self.nvrtc.is_some()
    }

    /// What to install, when something is missing.
    pub fn missing_advice(&self) -> Option<String> {
        match (&self.driver, &self.nvrtc) {
            (Some(_), Some(_)) => None,
            (None, _) => Some(
                "no NVIDIA driver library (libcuda.so.1) found: install the NVIDIA driver, or on a machine without an NVIDIA GPU use --backend sim".into(),
            ),
            (Some(_), None) => Some(
                "no NVRTC library (libnvrtc.so.12 or .13) found: install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc-cu12`, or set CUDA_HOME".into(),
            ),
        }
    }

    /// The environment for the worker: a private folder with links named as cudarc asks
    /// (`libnvrtc.so`, `libcuda.so`) first on `LD_LIBRARY_PATH`, then the libraries' own folders
    /// (NVRTC loads its builtins library from there).
    pub fn worker_library_path(&self) -> std::io::Result<String> {
        // One folder per user and pair of libraries: sessions started at the same moment (two
        // terminals, tests in parallel) with the same libraries share it, and others never
        // point it elsewhere under them.
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for lib in [&self.nvrtc, &self.driver] {
            h.update(lib.as_deref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default());
            h.update([0]);
        }
        let hash = h.finalize();
        let uid = unsafe { libc::getuid() };
        let links = std::env::temp_dir()
            .join(format!("gridlab-libs-{uid}-{:02x}{:02x}{:02x}{:02x}", hash[0], hash[1], hash[2], hash[3]));
        std::fs::create_dir_all(&links)?;
        let mut path = vec![links.clone()];
        for (lib, name) in [(&self.nvrtc, "libnvrtc.so"), (&self.driver, "libcuda.so")] {
            let Some(lib) = lib else { continue };
            let link = links.join(name);
            if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
                // Made under a name of this process's own, then renamed into place: a rename
                // replaces atomically, so a concurrent start never sees the link missing.
                static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let tmp = links.join(format!(".{name}.{}.{n}", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(lib, &tmp)?;
                std::fs::rename(&tmp, &link)?;
            }
            if let Some(dir) = lib.parent() {
                path.push(dir.to_path_buf());
            }
        }
        let mut s = std::env::join_paths(path).map_err(std::io::Error::other)?.to_string_lossy().into_owned();
        if let Ok(old) = std::env::var("LD_LIBRARY_PATH")
            && !old.is_empty()
        {
            s.push(':');
            s.push_str(&old);
        }
        Ok(s)
    }
}

/// The newest `libnvrtc.so.N` in `dir` (13 before 12), or an unversioned `libnvrtc.so`.
fn newest_nvrtc(dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(u32, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("libnvrtc.so") else { continue };
        let major = match rest.strip_prefix('.') {
            Some(v) => match v.split('.').next().and_then(|m| m.parse::<u32>().ok()) {
                Some(m) => m,
                None => continue,
            },
            None if rest.is_empty() => 0,
            None => continue,
        };
        if best.as_ref().is_none_or(|(m, _)| major > *m) {
            best = Some((major, entry.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// Expand `*` in the last-but-one and earlier components (one level each) by listing folders.
fn expand(pattern: &str) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/")];
    for part in Path::new(pattern).components().skip(1) {
        let part = part.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        for base in &out {
            if let Some((pre, post)) = part.split_once('*') {
                let Ok(entries) = std::fs::read_dir(base) else { continue };
                let mut names: Vec<String> =
                    entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                for n in names.into_iter().rev() {
                    if n.starts_with(pre) && n.ends_with(post) && n.len() >= pre.len() + post.len() {
                        next.push(base.join(n));
                    }
                }
            } else {
                next.push(base.join(part.as_ref()));
            }
        }
        out = next;
    }
    out.into_iter().filter(|p| p.is_dir()).collect()
}

/// Where CUDA libraries live, in the order searched: the loader path, CUDA_HOME and CUDA_PATH,
/// the system's library folders, `/usr/local/cuda*`, and the Python wheels (`nvidia-cuda-nvrtc`).
pub fn candidate_dirs(
    ld_library_path: Option<&str>,
    cuda_home: Option<&Path>,
    cuda_path: Option<&Path>,
    virtual_env: Option<&Path>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    };
    for d in ld_library_path.unwrap_or("").split(':').filter(|d| !d.is_empty()) {
        push(PathBuf::from(d));
    }
    for root in [cuda_home, cuda_path].into_iter().flatten() {
        for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
            push(root.join(sub));
        }
    }
    for d in [
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib/wsl/lib",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
    ] {
        push(PathBuf::from(d));
    }
    let mut patterns = vec![
        "/usr/local/cuda-*/lib64".to_string(),
        "/usr/local/cuda-*/targets/x86_64-linux/lib".to_string(),
        "/usr/local/lib/python3*/site-packages/nvidia/*/lib".to_string(),
        "/usr/local/lib/python3*/dist-packages/nvidia/*/lib".to_string(),
        "/usr/lib/python3/dist-packages/nvidia/*/lib".to_string(),
        "/opt/conda/lib".to_string(),
        "/opt/conda/lib/python3*/site-packages/nvidia/*/lib".to_string(),
    ];
    if let Some(v) = virtual_env {
        patterns.push(format!("{}/lib/python3*/site-packages/nvidia/*/lib", v.display()));
    }
    if let Some(h) = home {
        patterns.push(format!("{}/.local/lib/python3*/site-packages/nvidia/*/lib", h.display()));
    }
    for p in patterns {
        for d in expand(&p) {
            push(d);
        }
    }
    dirs
}

/// The folder of CUDA's own headers (`cooperative_groups.h`, `cuda_fp16.h`), for NVRTC's `-I`:
/// NVRTC knows the built-in ones but not these. Looked for beside the NVRTC library gridlab
/// loads, under CUDA_HOME and CUDA_PATH, in `/usr/local/cuda`, and in the Python wheels. Only
/// this folder is given: a kernel's other `#include`s find nothing.
pub fn cuda_include_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(lib) = Libraries::find().nvrtc.as_ref().and_then(|p| p.parent().map(Path::to_path_buf)) {
        // lib64/ -> include/; targets/x86_64-linux/lib/ -> targets/x86_64-linux/include/;
        // nvidia/cuda_nvrtc/lib/ -> nvidia/cuda_runtime/include/ (wheels).
        if let Some(up) = lib.parent() {
            dirs.push(up.join("include"));
            if let Some(nvidia) = up.parent() {
                dirs.push(nvidia.join("cuda_runtime/include"));
                dirs.push(nvidia.join("cuda_cccl/include"));
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("include"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/include"));
    dirs.push(PathBuf::from("/usr/include"));
    dirs.into_iter().find(|d| d.join("cooperative_groups.h").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_starting_together_all_get_their_links() {
        let dir = tempfile::tempdir().unwrap();
        let (nvrtc, driver) = (dir.path().join("libnvrtc.so.13"), dir.path().join("libcuda.so.1"));
        std::fs::write(&nvrtc, "").unwrap();
        std::fs::write(&driver, "").unwrap();
        let libs = Libraries { driver: Some(driver.clone()), nvrtc: Some(nvrtc.clone()), searched: vec![] };
        let paths: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16).map(|_| s.spawn(|| libs.worker_library_path().unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(paths.windows(2).all(|w| w[0] == w[1]));
        let links = PathBuf::from(paths[0].split(':').next().unwrap());
        assert_eq!(std::fs::read_link(links.join("libnvrtc.so")).unwrap(), nvrtc);
        assert_eq!(std::fs::read_link(links.join("libcuda.so")).unwrap(), driver);
    }

    #[test]
    fn finds_the_newest_nvrtc_and_the_driver_in_the_first_folders_that_have_them() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for f in ["libnvrtc.so.12", "libnvrtc.so.12.4.127", "libnvrtc-builtins.so.12.4"] {
            std::fs::write(a.join(f), b"").unwrap();
        }
        for f in ["libnvrtc.so.13", "libcuda.so.1"] {
            std::fs::write(b.join(f), b"").unwrap();
        }
        let found = Libraries::find_in(&[a.clone(), b.clone()]);
        let nvrtc = found.nvrtc.clone().unwrap();
        assert!(nvrtc.starts_with(&a), "the first folder with NVRTC wins");
        assert!(nvrtc.file_name().unwrap().to_string_lossy().starts_with("libnvrtc.so.12"));
        assert_eq!(found.driver, Some(b.join("libcuda.so.1")));
        assert!(found.usable());
        let only_b = Libraries::find_in(std::slice::from_ref(&b));
        assert_eq!(only_b.nvrtc, Some(b.join("libnvrtc.so.13")));
    }

    #[test]
    fn nothing_found_gives_advice_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let found = Libraries::find_in(&[tmp.path().to_path_buf()]);
        assert!(!found.usable());
        assert!(found.missing_advice().unwrap().contains("libcuda.so.1"));
    }

    #[test]
    fn search_order_starts_with_the_loader_path_and_cuda_home() {
        let dirs = candidate_dirs(Some("/x:/y"), Some(Path::new("/opt/cuda")), None, None, None);
        assert_eq!(&dirs[..3], &[PathBuf::from("/x"), PathBuf::from("/y"), PathBuf::from("/opt/cuda/lib64")]);
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/lib64")));
    }
}
