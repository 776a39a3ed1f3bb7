//! What differs between Linux, macOS and Windows stands behind the platform modules
//! (`src/platform/`, `crates/leaselab-engine/src/platform/`): no other production file names
//! a system, a system's crate or a system-only call. Each concern there has an
//! implementation for every supported system.

use std::path::{Path, PathBuf};

/// What only one system has, or a system named in a `cfg`. Each with why it is listed.
const SYSTEM_ONLY: &[(&str, &str)] = &[
    ("/proc", "Linux's process file system"),
    ("prctl", "a Linux system call"),
    (".init_array", "an ELF section"),
    ("__mod_init_func", "a Mach-O section"),
    ("link_section", "a section of one executable format"),
    ("libc::", "the C library of Unix systems"),
    ("std::os::unix", "Unix-only standard library"),
    ("std::os::linux", "Linux-only standard library"),
    ("std::os::macos", "macOS-only standard library"),
    ("std::os::windows", "Windows-only standard library"),
    ("std::os::fd", "Unix file descriptors"),
    ("windows_sys", "the Windows API"),
    ("signal_hook", "Unix signals"),
    ("process_group(", "Unix process groups"),
    ("pre_exec", "a Unix fork hook"),
    ("creation_flags", "Windows process creation"),
    ("cfg(unix", "a system named in a cfg"),
    ("cfg(windows", "a system named in a cfg"),
    ("cfg(not(unix", "a system named in a cfg"),
    ("cfg(not(windows", "a system named in a cfg"),
    ("target_os", "a system named in a cfg"),
    ("target_family", "a system named in a cfg"),
];

/// The system-only names in `code`, a production file's text up to its tests, comments
/// left out: `(line number, what, why)`.
fn system_only(code: &str) -> Vec<(usize, &'static str, &'static str)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        for (what, why) in SYSTEM_ONLY {
            if code.contains(what) {
                found.push((n + 1, *what, *why));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folders that may name systems.
fn platform_dirs() -> [PathBuf; 2] {
    [
        root().join("src/platform"),
        root().join("crates/leaselab-engine/src/platform"),
    ]
}

#[test]
fn no_production_file_outside_the_platform_modules_names_a_system() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates/leaselab-engine/src"), &mut files);
    let platform = platform_dirs();
    let mut outside = Vec::new();
    let mut looked = 0;
    for file in files
        .iter()
        .filter(|f| !platform.iter().any(|p| f.starts_with(p)))
    {
        looked += 1;
        let text = std::fs::read_to_string(file).unwrap();
        for (line, what, why) in system_only(&text) {
            let shown = file.strip_prefix(root()).unwrap().display();
            outside.push(format!("{shown}:{line}: {what} ({why})"));
        }
    }
    assert!(looked > 100, "only {looked} files looked at");
    assert!(
        outside.is_empty(),
        "system-only code outside the platform modules:\n{}",
        outside.join("\n")
    );
}

#[test]
fn the_check_finds_what_it_looks_for_and_skips_comments_and_tests() {
    let planted = "fn a() {\n    let _ = std::fs::read(\"/proc/self/status\");\n}\n\
                   #[cfg(target_os = \"linux\")]\nfn b() {}\n\
                   // unsafe { libc::kill(1, 0) } is only said here\n\
                   #[cfg(test)]\nmod tests { use std::os::unix::ffi::OsStrExt; }\n";
    let found: Vec<_> = system_only(planted)
        .into_iter()
        .map(|(line, what, _)| (line, what))
        .collect();
    assert_eq!(found, vec![(2, "/proc"), (4, "target_os")]);
}

#[test]
fn every_platform_concern_has_an_implementation_for_every_system() {
    let mut concerns = 0;
    for dir in platform_dirs() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_dir() {
                continue;
            }
            concerns += 1;
            let has = |name: &str| path.join(name).is_file();
            let shown = path.strip_prefix(root()).unwrap().display().to_string();
            assert!(has("windows.rs"), "{shown}: no Windows implementation");
            assert!(
                has("unix.rs") || (has("linux.rs") && has("macos.rs")),
                "{shown}: no implementation for Linux and macOS"
            );
            let front = std::fs::read_to_string(path.join("mod.rs")).unwrap();
            assert!(
                front.starts_with("//!") && front.contains("Windows"),
                "{shown}/mod.rs: its first lines say what each system offers"
            );
        }
    }
    assert!(concerns >= 6, "{concerns} concerns");
}
