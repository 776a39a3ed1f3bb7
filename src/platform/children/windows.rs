//! Windows: no console for a worker process, every thread suspended for a freeze, and a
//! frozen one in a job object that ends with the dashboard.

use std::collections::HashSet;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::Mutex;

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, SuspendThread, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW,
    THREAD_SUSPEND_RESUME,
};

/// The words a screen uses for a kill, a freeze and a wake.
#[macro_export]
#[doc(hidden)]
macro_rules! __kill_word {
    () => {
        "TerminateProcess"
    };
}
#[macro_export]
#[doc(hidden)]
macro_rules! __stop_word {
    () => {
        "SuspendThread"
    };
}
#[macro_export]
#[doc(hidden)]
macro_rules! __wake_word {
    () => {
        "ResumeThread"
    };
}
pub use crate::{__kill_word as kill_word, __stop_word as stop_word, __wake_word as wake_word};

pub(super) fn detach(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
}

/// A job object whose handle this process holds; closed when dropped.
struct Job(HANDLE);
// SAFETY: a job handle may be used from any thread.
unsafe impl Send for Job {}

impl Job {
    /// A new job that kills what it holds when its last handle closes (this process's end,
    /// however it ends), holding `child`.
    fn holding(child: &Child) -> std::io::Result<Job> {
        // SAFETY: no attributes, no name: a new job owned by this process.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        let job = Job(handle);
        job.kill_on_close(true)?;
        // SAFETY: the job's handle and the child's live process handle.
        if unsafe { AssignProcessToJobObject(job.0, child.as_raw_handle() as HANDLE) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }

    fn kill_on_close(&self, kill: bool) -> std::io::Result<()> {
        // SAFETY: plain data; zeroed is a valid value for it.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        if kill {
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        }
        // SAFETY: the job's handle and a limits value of the size given.
        let ok = unsafe {
            SetInformationJobObject(
                self.0,
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: a handle this value owns, closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// The job of each frozen child, by its process id: a frozen child cannot read its
/// lifeline, so its job ends it if the dashboard dies. A running child is in no such job:
/// its lifeline ends it, after it gave its lease back.
static FROZEN: Mutex<Vec<(u32, Job)>> = Mutex::new(Vec::new());

fn keep_frozen_job(pid: u32, job: Option<Job>) {
    if let Some(old) = take_frozen_job(pid) {
        let_go(old);
    }
    if let (Ok(mut jobs), Some(job)) = (FROZEN.lock(), job) {
        jobs.push((pid, job));
    }
}

/// Close a job without killing what it holds; where its limit cannot be lifted, its handle
/// stays open (what it holds then ends with the dashboard, as a frozen child would).
fn let_go(job: Job) {
    if job.kill_on_close(false).is_err() {
        std::mem::forget(job);
    }
}

fn take_frozen_job(pid: u32) -> Option<Job> {
    let mut jobs = FROZEN.lock().ok()?;
    let at = jobs.iter().position(|(p, _)| *p == pid)?;
    Some(jobs.swap_remove(at).1)
}

/// The ids of the threads of process `pid` now.
fn threads(pid: u32) -> std::io::Result<Vec<u32>> {
    // SAFETY: a snapshot of every thread; its handle is closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: plain data; zeroed is a valid value for it.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut ids = Vec::new();
    // SAFETY: the snapshot's handle and an entry whose size is set.
    let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            ids.push(entry.th32ThreadID);
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot's handle, closed once.
    unsafe { CloseHandle(snapshot) };
    Ok(ids)
}

/// Suspend or resume thread `id`; false when it could not be opened (it ended).
fn suspend_or_resume(id: u32, suspend: bool) -> bool {
    // SAFETY: a thread id; the handle is closed below.
    let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, id) };
    if thread.is_null() {
        return false;
    }
    // SAFETY: a live thread handle with the right to suspend and resume it.
    let done = unsafe {
        if suspend {
            SuspendThread(thread)
        } else {
            ResumeThread(thread)
        }
    };
    // SAFETY: the thread's handle, closed once.
    unsafe { CloseHandle(thread) };
    done != u32::MAX
}

pub(super) fn set_frozen(child: &Child, frozen: bool) -> std::io::Result<()> {
    let pid = child.id();
    if !frozen {
        for id in threads(pid)? {
            suspend_or_resume(id, false);
        }
        // Awake, it reads its lifeline again: its job lets it go (closing it then kills
        // nothing).
        if let Some(job) = take_frozen_job(pid) {
            let_go(job);
        }
        return Ok(());
    }
    // Where the system will not take it into a job, it is frozen all the same.
    keep_frozen_job(pid, Job::holding(child).ok());
    // A thread may start another before it is suspended: look again until a look finds no
    // thread that is not suspended yet.
    let mut suspended = HashSet::new();
    loop {
        let new: Vec<u32> = threads(pid)?
            .into_iter()
            .filter(|id| !suspended.contains(id))
            .collect();
        if new.is_empty() {
            break;
        }
        for id in new {
            // A thread that ended meanwhile has nothing to suspend.
            suspend_or_resume(id, true);
            suspended.insert(id);
        }
    }
    if suspended.is_empty() {
        return Err(std::io::Error::other(
            "the process has no threads: it ended",
        ));
    }
    Ok(())
}

pub(super) fn own_group(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
}

pub(super) fn kill_group(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub(super) fn ended_how(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "ended".to_string(),
    }
}
