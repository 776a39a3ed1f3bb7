//! Runs `--messages` jobs through effectum with `--workers` workers of one job at a time on a
//! fresh queue file, then prints one JSON line: jobs per second from the workers' start to
//! the last job's completion being written, each worker's count, and whether every job
//! ended Succeeded. Exits 2 on bad arguments, 1 when the queue fails.
//!
//!   effectum-reference --db NEW_FILE --messages N --workers W [--as-shipped]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use effectum::{Job, JobRunner, JobState, Queue, RunningJob, Worker};

/// The largest run this program accepts.
const MOST_MESSAGES: u64 = 10_000_000;
const MOST_WORKERS: usize = 64;

struct Args {
    db: PathBuf,
    /// Put the new file in WAL mode first (the default); `--as-shipped` leaves it to effectum.
    wal: bool,
    messages: u64,
    workers: usize,
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut db, mut messages, mut workers, mut wal) = (None, None, None, true);
    while let Some(flag) = argv.next() {
        if flag == "--as-shipped" {
            wal = false;
            continue;
        }
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--db" => db = Some(PathBuf::from(value)),
            "--messages" => {
                messages = value
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=MOST_MESSAGES).contains(n))
            }
            "--workers" => {
                workers = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MOST_WORKERS).contains(n))
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        db: db.ok_or("--db FILE is required")?,
        wal,
        messages: messages.ok_or(format!("--messages must be 1 to {MOST_MESSAGES}"))?,
        workers: workers.ok_or(format!("--workers must be 1 to {MOST_WORKERS}"))?,
    })
}

/// The job does nothing: the figure is the queue's own cost per job.
async fn empty_job(_job: RunningJob, _context: ()) -> Result<(), String> {
    Ok(())
}

/// Exit when the parent that started this program is gone.
fn follow_parent() {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(1);
        }
    });
}

async fn measure(args: &Args) -> Result<String, String> {
    let err = |e: effectum::Error| e.to_string();
    if args.db.exists() {
        return Err(format!(
            "{} exists; give a path for a new queue file",
            args.db.display()
        ));
    }
    // effectum asks for WAL with `PRAGMA journal = wal`, a name SQLite ignores, and so
    // commits in rollback-journal mode, an fsync per job. Its intent is WAL with
    // synchronous=normal, the bench's setting: a new file is put in WAL mode (which the
    // file keeps) before effectum opens it.
    if args.wal {
        let conn = rusqlite::Connection::open(&args.db).map_err(|e| e.to_string())?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        if mode != "wal" {
            return Err(format!(
                "{} would not go into WAL mode ({mode})",
                args.db.display()
            ));
        }
    }
    let queue = Arc::new(Queue::new(&args.db).await.map_err(err)?);
    let mut ids = Vec::with_capacity(args.messages as usize);
    let mut left = args.messages;
    while left > 0 {
        let n = left.min(1_000);
        let jobs = (0..n).map(|_| Job::builder("empty").build()).collect();
        ids.extend(queue.add_jobs(jobs).await.map_err(err)?);
        left -= n;
    }
    let runner = JobRunner::builder("empty", empty_job).build();
    let start = Instant::now();
    let workers: Vec<Worker> = futures::future::try_join_all((0..args.workers).map(|_| {
        Worker::builder(&queue, ())
            .jobs([runner.clone()])
            .max_concurrency(1)
            .build()
    }))
    .await
    .map_err(err)?;
    // A job counts as finished once its completion is written.
    loop {
        let done: u64 = workers.iter().map(|w| w.counts().finished).sum();
        if done >= args.messages {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    let per_worker: Vec<u64> = workers.iter().map(|w| w.counts().finished).collect();
    let mut all_succeeded = true;
    for id in ids {
        let status = queue.get_job_status(id).await.map_err(err)?;
        all_succeeded &= status.state == JobState::Succeeded;
    }
    drop(workers);
    queue.close(Duration::from_secs(10)).await.map_err(err)?;
    Ok(format!(
        "{{\"jobs_per_s\":{:.1},\"per_worker\":[{}],\"all_succeeded\":{}}}",
        args.messages as f64 / seconds,
        per_worker
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        all_succeeded
    ))
}

fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(why) => {
            eprintln!("effectum-reference: {why}");
            std::process::exit(2);
        }
    };
    follow_parent();
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match rt.block_on(measure(&args)) {
        Ok(line) => println!("{line}"),
        Err(why) => {
            eprintln!("effectum-reference: {why}");
            std::process::exit(1);
        }
    }
}
