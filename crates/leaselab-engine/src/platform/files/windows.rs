//! Windows: volume serial number and file index, plain opens, inherited access lists.

use std::fs::{File, OpenOptions};
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::{
    GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
};

pub(super) fn id_of_path(path: &Path) -> std::io::Result<(u64, u64)> {
    // Opened to read its attributes only, shared every way, so nobody else is hindered.
    let file = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    id_of_file(&file)
}

pub(super) fn id_of_file(file: &File) -> std::io::Result<(u64, u64)> {
    // SAFETY: plain data; zeroed is a valid value for it.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the file's live handle, and a place for its information.
    let ok = unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

pub(super) fn open_to_read(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

pub(super) fn open_to_write_in_place(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

pub(super) fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

pub(super) fn readable_by_all(_builder: &mut tempfile::Builder) {}

pub(super) fn executable(_meta: &std::fs::Metadata) -> bool {
    true
}
