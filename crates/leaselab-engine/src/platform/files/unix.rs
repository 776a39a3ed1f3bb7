//! Unix (Linux and macOS alike): device and inode, `O_NONBLOCK`, file modes.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub(super) fn id_of_path(path: &Path) -> std::io::Result<(u64, u64)> {
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

pub(super) fn id_of_file(file: &File) -> std::io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

pub(super) fn open_to_read(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

pub(super) fn open_to_write_in_place(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => std::io::Error::other("a fifo nobody reads"),
            _ => e,
        })?;
    // SAFETY: fcntl on a descriptor this function owns, with flags read from it.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(file)
}

pub(super) fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
}

pub(super) fn readable_by_all(builder: &mut tempfile::Builder) {
    builder.permissions(std::fs::Permissions::from_mode(0o644));
}

pub(super) fn executable(meta: &std::fs::Metadata) -> bool {
    meta.permissions().mode() & 0o111 != 0
}
