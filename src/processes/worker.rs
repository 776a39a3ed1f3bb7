//! `leaselab worker`: one worker as its own OS process, on the wall clock, sharing a
//! database with other processes (and machines). It runs the same claim / provider /
//! finalize cycle as a worker thread, because it is one: the engine's worker thread, started
//! alone in this process, with its events printed instead of drawn. On PostgreSQL it joins
//! without the engine's hold on the database, as on SQLite it takes no lock file.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{select, Receiver};

use crate::engine::backend::{Db, Outbox};
use crate::engine::clock::{hms, Clock};
use crate::engine::events::{Event, EventKind};
use crate::engine::file_identity::{self, OpenedFile};
use crate::engine::outbox::OutboxError;
use crate::engine::outbox::{
    DbOrigin, Durability, Fact, FailOutcome, Lease, LeaseClock, LeaseEventKind, RetryPolicy,
    Stamped, StoreShared, RELEASED,
};
use crate::engine::provider::Provider;
use crate::engine::worker::{self, Control, Settings, WorkerContext};

pub use super::name::{check_name, NameError, MAX_NAME};

/// How a worker process is set up.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// A SQLite file, or a `postgres://` URL.
    pub db: PathBuf,
    pub name: String,
    pub lease_ms: i64,
    pub process_ms: i64,
    /// After an empty claim, wait this long before asking again.
    pub idle_ms: i64,
    pub leasing: bool,
    /// Payments seeded when this worker creates the database.
    pub messages: u64,
    /// `--messages` was given: a database already there, which it does not seed, is said.
    pub messages_asked: bool,
    /// Heartbeats, retries and provider failures, as for thread workers.
    pub reliability: crate::setup::Reliability,
    /// How far ahead (negative: behind) this worker's clock runs, on purpose.
    pub clock_skew_ms: i64,
    /// On PostgreSQL, lease times from this worker's clock instead of the server's.
    pub local_clock: bool,
}

/// Why a worker process could not go on, in the one line it prints.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The name cannot be a worker's: nothing was done.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The database cannot be used (not ours, a bad path): nothing was done.
    #[error(transparent)]
    Unusable(OutboxError),
    /// The database is leaselab's, of a schema version this leaselab does not speak: nothing
    /// was done. What to do is to run the leaselab the database was made with.
    #[error(
        "{name} cannot join {}: the database has leaselab schema version {}, this leaselab \
         ({version}) speaks schema version {}; run the leaselab the database was made with \
         (in a class, the teacher's: `leaselab --version` shows yours)",
        schema.shown,
        schema.found,
        schema.known
    )]
    OtherSchema {
        name: String,
        version: &'static str,
        schema: crate::engine::outbox::OtherSchema,
    },
    /// An owner runs on the database on the scenario clock: nothing was done.
    #[error(
        "{db} is in use by {owner}, which runs on the scenario clock (seeded at {seeded}): its \
         leases are not in wall-clock time and a worker process would take them over; \
         let it end, or start worker processes with `leaselab --processes`"
    )]
    OffTheWallClock {
        db: String,
        owner: String,
        seeded: String,
    },
    /// A database error while working.
    #[error(transparent)]
    Database(OutboxError),
    #[error("the worker thread ended")]
    ThreadEnded,
    /// The worker thread said it stopped on an error, or panicked.
    #[error("{0}")]
    Stopped(String),
    /// A live worker holds the name already (`present.rs` says what live means).
    #[error(
        "--name {name} is taken by a worker at work now (names in use: {in_use}); choose \
         another"
    )]
    NameInUse { name: String, in_use: String },
    /// The SQLite file it works on was deleted or replaced (the words say which).
    #[error("{name} stopped: {why} while it worked on it")]
    FileGone { name: String, why: String },
}

impl Failure {
    /// Was the worker given what it cannot use (exit 2), rather than failing while it worked?
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Failure::Name(_)
                | Failure::NameInUse { .. }
                | Failure::Unusable(_)
                | Failure::OtherSchema { .. }
                | Failure::OffTheWallClock { .. }
        )
    }
}

/// How the worker process ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// SIGTERM, SIGHUP or SIGINT (its number): the worker stopped between two actions.
    Interrupted(i32),
    /// Its output could not be written (`line` said so): it stopped between two actions.
    OutputLost,
}

/// A `--processes` child held until the dashboard's first space: it waits, before it
/// touches the database, until its lifeline (a pipe from the dashboard) gives a byte. Held
/// so, it can hold no lock. A stopping signal, or the dashboard's end, ends the wait.
fn wait_for_the_start(interrupts: &Receiver<i32>, started: &Receiver<()>) -> Option<i32> {
    select! {
        recv(interrupts) -> signo => Some(signo.unwrap_or(crate::signals::TERMINATE)),
        recv(started) -> byte => byte.err().map(|_| crate::signals::DASHBOARD_GONE),
    }
}

/// Run one worker until a stopping signal arrives. Each event is handed to `line` as one
/// line of text; `line` returning false (the output is gone) stops the worker. Errors (a database it cannot use, a database error while working) are one
/// line.
pub fn run(
    opts: &WorkerOptions,
    interrupts: &Receiver<i32>,
    mut line: impl FnMut(&str) -> bool,
) -> Result<Ended, Failure> {
    check_name(&opts.name)?;
    // Every PostgreSQL session of this process says whose it is (`present.rs`).
    crate::engine::pg::name_sessions(&opts.name);
    if std::env::var_os(super::flags::CHILD_ENV).is_some() {
        let started = super::lifeline::watch();
        if std::env::var_os(super::flags::HOLD_ENV).is_some() {
            if let Some(signo) = wait_for_the_start(interrupts, &started) {
                return Ok(Ended::Interrupted(signo));
            }
        }
    }
    let joined = match join(opts, interrupts, &mut line) {
        Ok(joined) => joined,
        // A stopping signal cancels the statement running: a join it broke off is stopped
        // by the signal, not failed.
        Err(e) => return crate::signals::received().map(Ended::Interrupted).ok_or(e),
    };
    let (ctx, events, leaving, joined_on) = match joined {
        Joined::Ready(ctx, events, leaving, store) => (ctx, events, leaving, Some(store)),
        Joined::Interrupted(signo) => return Ok(Ended::Interrupted(signo)),
    };
    // On SQLite, whether the file is still the one opened, looked at now and then.
    let (opened, looks) = match &ctx.db {
        Db::Sqlite(path) => (
            OpenedFile::at(path),
            crossbeam_channel::tick(file_identity::LOOK_EVERY),
        ),
        Db::Postgres(_) => (None, crossbeam_channel::never()),
    };
    let mut handle = worker::spawn_named(ctx, 0, 1, opts.name.clone(), false);
    let mut joined_on = joined_on;
    let mut idle = false;
    loop {
        select! {
            recv(looks) -> _ => {
                if let Some(gone) = file_gone(&mut handle, opened.as_ref(), &opts.name) {
                    return Err(gone);
                }
            },
            recv(events) -> ev => {
                let Ok(ev) = ev else { return Err(Failure::ThreadEnded) };
                drop(joined_on.take());
                if let Some(error) = failure(&ev) {
                    // A stopping signal cancels the statement running: the failure is the
                    // signal's, and the worker stops as a signal stops it.
                    if let Some(signo) = crate::signals::received() {
                        return Ok(stopped(&mut handle, &leaving, signo, &mut line));
                    }
                    handle.join();
                    // A file deleted under the worker may fail its statements: say why.
                    return Err(match opened.as_ref().and_then(OpenedFile::gone) {
                        Some(why) => Failure::FileGone { name: opts.name.clone(), why },
                        None => Failure::Stopped(error),
                    });
                }
                // One line when the outbox runs dry, not one per empty claim.
                let empty = matches!(ev.kind, EventKind::ClaimEmpty | EventKind::Loaded { count: 0 });
                let said = empty && idle
                    || line(&format!("{} {} {}", hms(ev.at_ms), ev.actor, ev.describe()));
                if !said {
                    return Ok(output_lost(&mut handle, &leaving, &mut line));
                }
                idle = empty;
            },
            recv(interrupts) -> signo => {
                // A wait for the lock ends now, so the worker can be joined.
                crate::engine::stop_waiting();
                let signo = signo.unwrap_or(crate::signals::TERMINATE);
                return Ok(stopped(&mut handle, &leaving, signo, &mut line));
            },
        }
    }
}

/// The SQLite file the worker opened is gone (deleted, or another file in its place): the
/// worker thread ends, and nothing is recorded, since the file that would take the row is
/// gone.
fn file_gone(
    handle: &mut worker::WorkerHandle,
    opened: Option<&OpenedFile>,
    name: &str,
) -> Option<Failure> {
    let why = opened.and_then(OpenedFile::gone)?;
    handle.send(Control::Shutdown);
    handle.join();
    Some(Failure::FileGone {
        name: name.to_string(),
        why,
    })
}

/// Nobody reads the worker's lines any more (a closed pipe or terminal, a full disk): it
/// stops working and gives its lease back, as a signal makes it do; a closed terminal's
/// SIGHUP names the leaving when it came first.
fn output_lost(
    handle: &mut worker::WorkerHandle,
    leaving: &Leaving,
    line: &mut impl FnMut(&str) -> bool,
) -> Ended {
    if let Some(signo) = crate::signals::received() {
        return stopped(handle, leaving, signo, line);
    }
    handle.send(Control::Shutdown);
    handle.join();
    crate::engine::wait_again();
    leaving.leave(handle, "its output closed", &mut |_| true);
    Ended::OutputLost
}

/// Stopped by `signo`: the worker thread ends, its lease is given back, its leaving is
/// recorded.
fn stopped(
    handle: &mut worker::WorkerHandle,
    leaving: &Leaving,
    signo: i32,
    line: &mut impl FnMut(&str) -> bool,
) -> Ended {
    handle.send(Control::Shutdown);
    handle.join();
    // Another worker leaving at the same moment may hold the lock for an instant.
    crate::engine::wait_again();
    leaving.leave(handle, &crate::signals::name(signo), line);
    Ended::Interrupted(signo)
}

/// A worker process that has joined its database, or the signal that stopped it first.
enum Joined {
    /// What its thread needs to start, where its events come, what it needs to record
    /// its leaving, and the connection it joined on: on PostgreSQL its session holds the
    /// name until the worker thread's own is open (its first event).
    Ready(WorkerContext, Receiver<Event>, Leaving, Box<dyn Outbox>),
    /// A stopping signal came while it waited for the write lock.
    Interrupted(i32),
}

/// Join the database and record this worker's settings there (a `Joined` row).
fn join(
    opts: &WorkerOptions,
    interrupts: &Receiver<i32>,
    line: &mut impl FnMut(&str) -> bool,
) -> Result<Joined, Failure> {
    // On PostgreSQL every lease time is the server's (machines' clocks differ), unless
    // --local-clock asks for the harm.
    let lease_clock = if opts.local_clock {
        LeaseClock::Caller
    } else {
        LeaseClock::Server
    };
    let shared = Arc::new(StoreShared::new(Durability::Full).on(lease_clock));
    let clock = Arc::new(Clock::wall_shifted(opts.clock_skew_ms));
    let provider = Arc::new(Provider::new());
    let db = Db::parse(&opts.db);
    let (mut store, origin) = db
        .join(shared.clone(), &provider, opts.messages, clock.now())
        .map_err(|e| match e {
            OutboxError::OtherSchema(schema) => Failure::OtherSchema {
                name: opts.name.clone(),
                version: crate::version::VERSION,
                schema,
            },
            e if e.is_bad_input() => Failure::Unusable(e),
            e => Failure::Database(e),
        })?;
    let server_now = store.server_clock_ms().ok().flatten();
    if let Some(why) = owner_off_the_wall_clock(store.as_ref(), server_now, clock.now(), &db) {
        return Err(why);
    }
    refuse_a_name_in_use(store.as_ref(), &opts.name, clock.now())?;
    if let Some(said) = clock_note(opts, &clock, store.as_ref(), server_now) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "leaselab: {said}");
    }
    provider.set_faults(opts.reliability.faults.clone());
    let settings = Arc::new(settings(opts));
    // Another process may hold the write lock (stopped inside its transaction): the row
    // waits as the worker's own writes do.
    wait_for_the_lock_as_long_as_it_takes(&opts.name);
    let detail = joined_detail(&settings);
    let fact = Fact::of(LeaseEventKind::Joined, clock.now(), &opts.name, &detail);
    if let Err(e) = store.record(&fact) {
        return match interrupts.try_recv() {
            Ok(signo) => Ok(Joined::Interrupted(signo)),
            Err(_) => Err(Failure::Database(e)),
        };
    }
    line(&joined(opts, &db, origin));
    let leaving = Leaving {
        db: db.clone(),
        shared: shared.clone(),
        clock: clock.clone(),
        name: opts.name.clone(),
    };
    let (events_tx, events) = crossbeam_channel::unbounded();
    let ctx = WorkerContext {
        db,
        shared,
        clock,
        provider,
        settings,
        events: events_tx,
        exercise: None,
    };
    Ok(Joined::Ready(ctx, events, leaving, store))
}

/// A `Joined` row's detail: the worker's settings are its own (a watching dashboard shows
/// these, not its own), which leaselab it runs on which system (the teacher sees who runs
/// what), and which process it is (a watch on this machine tells so whether it still runs).
fn joined_detail(settings: &Settings) -> String {
    let mut detail = settings.recorded().detail();
    for more in [
        crate::version::software().detail(),
        crate::engine::process_identity::ProcessIdentity::of_this_process()
            .map(|me| me.detail())
            .unwrap_or_default(),
    ] {
        if !more.is_empty() {
            detail = format!("{detail} {more}");
        }
    }
    detail
}

/// Refuse to join under a name a live worker holds. A `--processes` child is not asked:
/// its dashboard names its children apart, and starts a new one under a killed one's
/// name at once, maybe before the server has seen the old session go.
fn refuse_a_name_in_use(store: &dyn Outbox, name: &str, now_ms: i64) -> Result<(), Failure> {
    if std::env::var_os(super::flags::CHILD_ENV).is_some() {
        return Ok(());
    }
    let taken = super::present::held_by_another(store, name, now_ms).map_err(Failure::Database)?;
    if !taken {
        return Ok(());
    }
    let in_use = super::present::names_in_use(store, now_ms).map_err(Failure::Database)?;
    Err(Failure::NameInUse {
        name: name.to_string(),
        in_use: super::present::listed(&in_use),
    })
}

/// What a worker process needs to record that it left.
struct Leaving {
    db: Db,
    shared: Arc<StoreShared>,
    clock: Arc<Clock>,
    name: String,
}

impl Leaving {
    /// Stopped by a signal, or its output gone (`how`): give the lease it holds back at
    /// once, then record that it left, holding nothing when the release went through.
    fn leave(&self, handle: &worker::WorkerHandle, how: &str, line: &mut impl FnMut(&str) -> bool) {
        let held = handle.status().lease;
        let still = held.and_then(|lease| self.give_back(lease, how, line));
        self.record_holding(still, how);
    }

    /// Give `lease` back: Pending and claimable at once, by the release a failed attempt
    /// writes, guarded by owner, lease version and seeding, with its `Retry` row (error
    /// `released: HOW`, available now). Says what it released, or that the lease was taken
    /// over meanwhile. Returns the lease when it is still held (the release failed).
    fn give_back(
        &self,
        lease: Lease,
        how: &str,
        line: &mut impl FnMut(&str) -> bool,
    ) -> Option<Lease> {
        let what = format!("{} (lease v{})", lease.key, lease.version);
        let released = self.db.open(self.shared.clone()).and_then(|mut store| {
            let why = format!("{RELEASED}{how}");
            store.fail_attempt(&lease, &why, self.clock.now(), &RetryPolicy::RELEASE)
        });
        let (said, still) = match released {
            Ok(Stamped {
                value: FailOutcome::Retry { .. },
                ..
            }) => (format!("released {what}"), None),
            Ok(_) => (
                format!("did not release {what}: its lease was taken over meanwhile"),
                None,
            ),
            Err(e) => (
                format!("could not release {what} ({e}): it stays held until its lease runs out"),
                Some(lease),
            ),
        };
        line(&format!("{} {} {said}", hms(self.clock.now()), self.name));
        still
    }

    /// Record that the worker left (`how`), with the lease it still holds, which stays until
    /// it runs out. On a fresh connection: a wait for the lock that a signal ended may have
    /// left the worker's own one failing. A database that cannot take the row goes without
    /// it: a watcher then sees the lease run out, and says only that. (A signal has already
    /// ended every wait for a locked SQLite file, so a locked one is given up at once rather
    /// than holding the process.)
    fn record_holding(&self, held: Option<Lease>, how: &str) {
        let fact = Fact::of(LeaseEventKind::Left, self.clock.now(), &self.name, how).holding(
            held.as_ref()
                .map(|l| (l.id, l.key.as_str(), l.version, l.until_ms)),
        );
        if let Ok(mut store) = self.db.open(self.shared.clone()) {
            let _ = store.record(&fact);
        }
    }
}

/// The worker's first line: the database it works on, and whether it created it.
fn joined(opts: &WorkerOptions, db: &Db, origin: DbOrigin) -> String {
    match origin {
        DbOrigin::Created => format!(
            "{} works on {} (created it with {} payment{})",
            opts.name,
            db.shown(),
            opts.messages,
            if opts.messages == 1 { "" } else { "s" }
        ),
        DbOrigin::Reused if opts.messages_asked => format!(
            "{} works on {} (already there: --messages seeds only a new database; a teacher adds \
             payments with `leaselab class new-round`)",
            opts.name,
            db.shown()
        ),
        DbOrigin::Reused => format!("{} works on {}", opts.name, db.shown()),
    }
}

/// Another worker process may be stopped (SIGSTOP) inside its write transaction: wait for
/// the lock as long as that lasts, and say so once per wait.
fn wait_for_the_lock_as_long_as_it_takes(name: &str) {
    let who = name.to_string();
    crate::engine::store::wait_for_the_lock_without_limit(move |waited| {
        use std::io::Write;
        let held = if waited.as_secs() > 0 {
            format!("{} s", waited.as_secs())
        } else {
            format!("{} ms", waited.as_millis())
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{who} waiting for the write lock (held {held})");
        let _ = out.flush();
    });
}

/// What a worker says on stderr at join about its clock: on PostgreSQL when it is off from
/// the server's ([`skew`]); on SQLite when `--clock-skew-ms` put it off on purpose.
fn clock_note(
    opts: &WorkerOptions,
    clock: &Clock,
    store: &dyn Outbox,
    server_now: Option<i64>,
) -> Option<String> {
    if server_now.is_some() {
        return skew(opts, clock, store);
    }
    // One machine, one clock: a skewed worker's leases are off by its skew.
    (opts.clock_skew_ms != 0).then(|| {
        format!(
            "{}'s clock runs {:.1} s {} on purpose (--clock-skew-ms): on SQLite every lease goes by the worker's own clock",
            opts.name,
            opts.clock_skew_ms.abs() as f64 / 1000.0,
            if opts.clock_skew_ms > 0 { "ahead" } else { "behind" },
        )
    })
}

/// What a worker says at join when its clock and the database server's differ by more
/// than a tenth of its lease. Its leases stay safe either way: they go by the server's
/// clock, and its own paces only its work; unless `--local-clock` asked for the harm.
fn skew(opts: &WorkerOptions, clock: &Clock, store: &dyn Outbox) -> Option<String> {
    let before = clock.now();
    let server = store.server_clock_ms().ok()??;
    let local = before + (clock.now() - before) / 2;
    let off = local - server;
    if off.abs() * 10 <= opts.lease_ms {
        return None;
    }
    let way = if off > 0 { "ahead of" } else { "behind" };
    let so = if opts.local_clock {
        "with --local-clock its leases go by its own clock: it may take over live leases, or lose its own"
    } else {
        "its leases go by the server's clock and stay safe; the times it prints are its own"
    };
    Some(format!(
        "{}'s clock is {:.1} s {way} the database server's (more than a tenth of its {} ms lease): {so}",
        opts.name,
        off.abs() as f64 / 1000.0,
        opts.lease_ms
    ))
}

/// How far a seeding's time may be from the wall clock and still be on it: a wall-clock
/// owner seeded a moment ago, a scenario-clock one at 2026-01-15 09:00 plus a few minutes.
const WALL_CLOCK_SLACK_MS: i64 = 3_600_000;

/// Why a worker process must not join: an owner runs on the database now, on the scenario
/// clock (a `run`, free play, a lesson). Its leases are not in wall-clock time: this
/// worker would read every live lease as long expired and take it over.
fn owner_off_the_wall_clock(
    store: &dyn Outbox,
    server_now: Option<i64>,
    now: i64,
    db: &Db,
) -> Option<Failure> {
    let owner = store.owner().ok()??;
    let seeded = store.seeded_at().ok()??;
    // A worker on the server's clock compares the seeding with the server's time.
    let now = server_now.unwrap_or(now);
    ((seeded - now).abs() > WALL_CLOCK_SLACK_MS).then(|| Failure::OffTheWallClock {
        db: db.shown(),
        owner,
        seeded: crate::engine::clock::iso(seeded),
    })
}

/// The error that stopped the worker thread, if this event says it stopped.
fn failure(ev: &Event) -> Option<String> {
    match &ev.kind {
        EventKind::Failed { error } => Some(format!("{} stopped: {error}", ev.actor)),
        EventKind::Crashed { panic: Some(p), .. } => Some(format!("{} panicked: {p}", ev.actor)),
        _ => None,
    }
}

/// The worker's settings: the cycle's timing, then heartbeats and retries.
fn settings(opts: &WorkerOptions) -> Settings {
    let s = Settings::new(
        opts.leasing,
        opts.lease_ms,
        opts.process_ms,
        opts.idle_ms.max(1),
    );
    s.apply(&opts.reliability, opts.lease_ms);
    // A server restart is a blip, not the end of the class.
    s.reconnects
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // A class's teacher may hold every worker (`leaselab class hold`).
    s.follows_teacher
        .store(true, std::sync::atomic::Ordering::SeqCst);
    s
}
