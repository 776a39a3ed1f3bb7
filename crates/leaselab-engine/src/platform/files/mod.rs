//! Files as each system tells them apart and opens them:
//!
//! - identity: Unix names a file by its device and inode, read with `stat` on the path,
//!   which opens no descriptor (closing any descriptor of a SQLite file would drop this
//!   process's POSIX locks on it); Windows by its volume's serial number and its file
//!   index, read from a handle opened for that alone (`GetFileInformationByHandle`).
//! - a database made new is readable by every user (mode 0644) on Unix; Windows files take
//!   their folder's access list, and nothing is set.
//! - a path opened without waiting: on Unix a fifo would hold an open until its other end
//!   came (`O_NONBLOCK` makes it answer at once); Windows has no fifos in its file system,
//!   and a plain open never waits.
//! - a program file: Unix runs a file with an execute bit; Windows any file, by its
//!   extension.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

use std::fs::File;
use std::path::Path;

/// Which file a path or an open file is, as its system tells files apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId(u64, u64);

/// The file `path` names now (a symlink followed).
pub fn id_of_path(path: &Path) -> std::io::Result<FileId> {
    system::id_of_path(path).map(|(a, b)| FileId(a, b))
}

/// The file `file` is.
pub fn id_of_file(file: &File) -> std::io::Result<FileId> {
    system::id_of_file(file).map(|(a, b)| FileId(a, b))
}

/// Open `path` to read it, without waiting if it is a fifo with no writer; what it is
/// (a regular file or not) is then asked of the opened file.
pub fn open_to_read(path: &Path) -> std::io::Result<File> {
    system::open_to_read(path)
}

/// Open an existing `path` to write it in place (a device, a fifo): a fifo nobody reads is
/// refused at once ("a fifo nobody reads"), then writes block as usual.
pub fn open_to_write_in_place(path: &Path) -> std::io::Result<File> {
    system::open_to_write_in_place(path)
}

/// Make `path` new (never an existing file) to write, with the permissions a plain write
/// gives a new file (Unix: 0666 less the umask).
pub fn create_new(path: &Path) -> std::io::Result<File> {
    system::create_new(path)
}

/// Whether the file `meta` describes can be run as a program: on Unix, a regular file with
/// an execute bit; on Windows any regular file (what runs is said by its name's extension).
pub fn runnable(meta: &std::fs::Metadata) -> bool {
    meta.is_file() && system::executable(meta)
}

/// A database file made by `builder` is readable by every user of the machine.
pub fn readable_by_all(builder: &mut tempfile::Builder) {
    system::readable_by_all(builder);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_and_its_open_file_are_one_file_and_a_replacement_is_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        std::fs::write(&path, b"one").unwrap();
        let before = id_of_path(&path).unwrap();
        let file = open_to_read(&path).unwrap();
        assert_eq!(id_of_file(&file).unwrap(), before);
        drop(file);
        let other = dir.path().join("y.db");
        let mut made = create_new(&other).unwrap();
        std::io::Write::write_all(&mut made, b"two").unwrap();
        drop(made);
        assert!(create_new(&other).is_err(), "made new, never over a file");
        assert_ne!(id_of_path(&other).unwrap(), before);
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(id_of_path(&path).unwrap(), before);
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
    }
}
