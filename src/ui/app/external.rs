//! Workers that are processes, not threads of this dashboard: `--watch` follows workers
//! started elsewhere (other terminals, other machines); `--processes` starts them itself as
//! `leaselab worker` children. Either way what they do arrives through the events table,
//! turned into the same events that thread workers send, so the ledger, timeline, log and
//! history check work unchanged. The clock is the wall clock: it cannot pause or jump.

use std::collections::HashSet;
use std::time::Instant;

use crate::engine::backend::Db;
use crate::engine::outbox::Reading;

use crate::engine::events::Event;
use crate::engine::events_table::{Tail, TAIL_EVERY};
use crate::engine::ledger::{HistoryStep, Ledger};
use crate::engine::outbox::{Fact, Lease, LeaseEventKind, MessageRow, OutboxStatus};
use crate::engine::worker::{WorkerState, WorkerStatus};
use crate::engine::worker_id::WorkerId;
use crate::engine::{Engine, EngineConfig};
use crate::processes::{ProcessSettings, ProcessState, WorkerProcesses};
use crate::scenario::Scenario;
use crate::setup::Timing;
use crate::ui::snapshot::WorkerView;

use super::keys::Action;
use super::witness::{Fate, Witness};
use super::{App, DashboardOptions, Theme};
use crate::ui::DashboardError;
use presence::WhoIsHere;

mod presence;

/// What the dashboard knows of workers it follows through the events table.
pub struct External {
    /// Dropped first: the worker processes die before the database they use goes away.
    pub(super) children: Option<WorkerProcesses>,
    /// What reads the events table as workers write it; none in a replay.
    tail: Option<Tail>,
    /// What the events say of each worker: its name, a recorded crash, freeze or leaving,
    /// its settings.
    pub(super) witness: Witness,
    /// Worker processes of this dashboard already counted as crashed, by name.
    reaped: HashSet<String>,
    /// `--processes` opens with its children stopped, like free play opens paused: the
    /// first space starts them all.
    pub(super) started: bool,
    /// When the events table stopped answering (a lost connection): the view is as it stood
    /// then, and nothing counts down.
    pub(super) stale_since: Option<i64>,
    /// The tail ended for good (a refusal, a SQLite file deleted or replaced), and why: the
    /// view stays stale.
    pub(super) tail_ended: Option<String>,
    /// The table reader's connection went away: the attempts at a new one so far, and when
    /// the next is due.
    reader_lost: Option<(u32, Instant)>,
    /// Who is connected or still runs now, and whether the teacher holds the class.
    pub(super) who: WhoIsHere,
}

impl External {
    /// The workers of a recorded run: known from its events alone.
    pub(super) fn replaying() -> External {
        External {
            children: None,
            tail: None,
            witness: Witness::default(),
            reaped: HashSet::new(),
            started: true,
            stale_since: None,
            tail_ended: None,
            reader_lost: None,
            who: WhoIsHere::default(),
        }
    }

    /// Is anything it shows no longer current: the tail ended or reconnects, or the table
    /// could not be read (`read_failed`)?
    pub(super) fn stale(&self, read_failed: bool) -> bool {
        read_failed || self.tail_ended.is_some() || self.tail.as_ref().is_some_and(Tail::lost)
    }

    /// Stale, and trying new connections (rather than ended for good).
    pub(super) fn reconnecting(&self) -> bool {
        self.tail_ended.is_none()
            && (self.reader_lost.is_some() || self.tail.as_ref().is_some_and(Tail::lost))
    }

    /// Look who is here now (`external/presence.rs`): only for workers followed live (not a
    /// replay), and not for this dashboard's own children, whose parent knows.
    pub(super) fn look_who_is_here(&mut self, reader: &dyn Reading) {
        if self.tail.is_some() && self.children.is_none() {
            self.who.look(reader, &self.witness);
        }
    }

    /// Take in one event from the table.
    pub(super) fn saw(&mut self, ev: &Event) {
        // A worker that joins has its session already: ask again rather than show it gone.
        if matches!(ev.kind, crate::engine::events::EventKind::Joined { .. }) {
            self.who.ask_again();
        }
        self.witness.saw(ev);
    }

    /// Worker processes of this dashboard found gone since the last look (killed, or ended
    /// on their own), with how each ended.
    pub(super) fn reap(&mut self) -> Vec<(usize, String, String)> {
        let Some(c) = self.children.as_mut() else {
            return Vec::new();
        };
        let mut gone = Vec::new();
        for slot in 0..c.len() {
            let name = c.name(slot).unwrap_or_default().to_string();
            if c.state(slot) != ProcessState::Gone || !self.reaped.insert(name.clone()) {
                continue;
            }
            let how = c.ended(slot).unwrap_or("ended").to_string();
            gone.push((slot, name, how));
        }
        gone
    }

    pub(super) fn count(&self) -> usize {
        let children = self.children.as_ref().map_or(0, WorkerProcesses::len);
        children.max(self.witness.count())
    }

    /// One line per slot for the workers panel.
    /// One line per slot for the workers panel. A held lease is read again from its row
    /// (`row_of`), whose expiry a heartbeat may have moved on.
    pub(super) fn views(
        &mut self,
        now_ms: i64,
        ledger: &Ledger,
        row_of: impl Fn(i64) -> Option<MessageRow>,
    ) -> Vec<WorkerView> {
        (0..self.count())
            .map(|slot| {
                let name = self
                    .children
                    .as_ref()
                    .and_then(|c| c.name(slot))
                    .map(str::to_string)
                    .or_else(|| self.witness.names.get(slot).cloned())
                    .unwrap_or_default();
                // A new process's claim of an older incarnation's lease is not its own.
                let lease = ledger
                    .holdings
                    .of(slot)
                    .filter(|l| l.owner == name || self.children.is_none())
                    .cloned()
                    .map(|l| match row_of(l.id) {
                        Some(row) if row.locked_by.as_deref() == Some(l.owner.as_str()) => Lease {
                            until_ms: row.locked_until_ms.unwrap_or(l.until_ms),
                            ..l
                        },
                        _ => l,
                    });
                let taken_by = lease.as_ref().and_then(|l| taken_by(ledger, l));
                let process = self.children.as_mut().map(|c| c.state(slot));
                let state = state_of(process, self.witness.fate(slot), lease.as_ref(), {
                    let run_out = lease.as_ref().is_some_and(|l| !l.is_live(now_ms));
                    run_out || taken_by.is_some()
                });
                let gone = self.children.is_none() && self.who.gone(&self.witness, slot, &name);
                let state = if gone { WorkerState::Left } else { state };
                let base = WorkerId::parse(&name).map_or(name.clone(), |id| id.base().to_string());
                WorkerView {
                    slot,
                    status: WorkerStatus {
                        name,
                        state,
                        paused: state == WorkerState::Paused,
                        lease,
                        ..WorkerStatus::default()
                    },
                    done: ledger.per_worker.get(&base).copied().unwrap_or(0),
                    frozen: state == WorkerState::Paused,
                    taken_by,
                    namesake: None,
                    software: self.witness.software(slot).cloned(),
                }
            })
            .collect()
    }
}

/// What a worker the dashboard did not start is doing, as far as anyone knows: its process
/// (for `--processes`, whose parent knows), else what its rows recorded. A lease that ran
/// out, or that another worker took, with nothing recorded about its holder is `unknown`:
/// a crash, a sleeping laptop and a slow worker look alike from the database.
fn state_of(
    process: Option<ProcessState>,
    fate: Fate,
    lease: Option<&Lease>,
    lease_ran_out: bool,
) -> WorkerState {
    match (process, fate) {
        (Some(ProcessState::Held), _) => WorkerState::Held,
        (Some(ProcessState::Gone), _) | (None, Fate::Crashed) => WorkerState::Crashed,
        (Some(ProcessState::Stopped), _) | (None, Fate::Frozen) => WorkerState::Paused,
        (None, Fate::Left) => WorkerState::Left,
        _ if lease.is_none() => WorkerState::Idle,
        // Woken, it works on with what it believed, whatever became of its lease meanwhile.
        (None, Fate::Woken) => WorkerState::Processing,
        // Its parent knows a running process is at work, whatever its lease says.
        (Some(ProcessState::Running), _) => WorkerState::Processing,
        _ if lease_ran_out => WorkerState::Unknown,
        _ => WorkerState::Processing,
    }
}

/// Space under `--processes`: the first one starts every child (they open held), later
/// ones stop or wake the selected one. The signal sent, if any, and the answer to the key.
fn toggle_pause(
    c: &mut WorkerProcesses,
    slot: usize,
    started: bool,
) -> (Option<&'static str>, String) {
    if !started {
        for s in 0..c.len() {
            c.set_stopped(s, false);
        }
        return (
            None,
            concat!(
                "the worker processes start: space now stops or wakes the selected one (",
                crate::platform::children::stop_word!(),
                " / ",
                crate::platform::children::wake_word!(),
                ")"
            )
            .into(),
        );
    }
    let name = c.name(slot).unwrap_or_default().to_string();
    let stop = !c.is_stopped(slot);
    if !c.set_stopped(slot, stop) {
        return (None, format!("{name} is gone: r starts a new process"));
    }
    let (signal, what) = if stop {
        (
            crate::platform::children::stop_word!(),
            "it holds its lease while the clock runs on; space wakes it",
        )
    } else {
        (
            crate::platform::children::wake_word!(),
            "it carries on where it stood",
        )
    };
    (Some(signal), format!("{signal} sent to {name}: {what}"))
}

/// Start `--processes`' children, stopped until the first space: a class sees the seeded
/// outbox before anything happens, as in free play.
fn start_stopped(
    settings: ProcessSettings,
    count: usize,
) -> Result<WorkerProcesses, DashboardError> {
    Ok(WorkerProcesses::start_held(settings, count)?)
}

/// Who claimed the message of `lease` after it, if anyone.
fn taken_by(ledger: &Ledger, lease: &Lease) -> Option<String> {
    let m = ledger.messages.get(&lease.id)?;
    m.steps.iter().rev().find_map(|(_, step)| match step {
        HistoryStep::Claim { owner, version, .. } if *version > lease.version => {
            Some(owner.to_string())
        }
        _ => None,
    })
}

/// The outbox row of message `id`, read through the dashboard's reader. Ids are dense
/// from 1, so a message's row is at offset id - 1.
pub(super) fn row_at(reader: &dyn Reading, id: i64) -> Option<MessageRow> {
    let offset = u64::try_from(id - 1).ok()?;
    reader
        .messages(offset, 1)
        .ok()?
        .into_iter()
        .find(|r| r.id == id)
}

/// What a worker's `--db` says for this database. A PostgreSQL URL is not repeated on
/// screen (it may hold a password).
fn opts_db_arg(db: &Db) -> String {
    match db {
        Db::Sqlite(path) => path.display().to_string(),
        Db::Postgres(_) => "URL".to_string(),
    }
}

/// What the engine of an external dashboard is given: no threads, the workers' settings.
fn config_of(opts: &DashboardOptions, timing: &Timing) -> EngineConfig {
    EngineConfig {
        workers: 0,
        messages: opts
            .messages
            .unwrap_or(Scenario::OutboxLeasing.default_messages()),
        lease_ms: timing.lease_ms,
        process_ms: timing.process_ms,
        // Worker processes run on the wall clock: an idle one asks again every quarter second.
        idle_ms: crate::setup::MAX_IDLE_MS,
        leasing: !opts.no_leasing,
        db: opts.db.clone().map(Db::from),
        durability: Default::default(),
        reliability: opts.reliability.clone(),
        exercise: None,
    }
}

/// The engine of an external dashboard: a guest that only watches, or the holder of the
/// database that its worker processes share, seeded on the wall clock.
fn open_engine(mode: ExternalMode, config: EngineConfig) -> Result<Engine, DashboardError> {
    match mode {
        ExternalMode::Watch => {
            let Some(db) = config.db.clone() else {
                return Err(DashboardError::WatchNeedsDb);
            };
            Ok(Engine::guest(&db, config)?)
        }
        ExternalMode::Processes => {
            let mut engine = Engine::start(config, true)?;
            // The dashboard's tail reads its seeding and added payments back from the table.
            engine.events_from_table();
            engine.reseed_on_wall_clock()?;
            Ok(engine)
        }
    }
}

/// Which kind of outside workers a dashboard shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExternalMode {
    /// `--watch`: workers someone else started.
    Watch,
    /// `--processes`: `leaselab worker` children of this dashboard.
    Processes,
}

impl App {
    /// A dashboard of worker processes: watched (`--watch --db PATH`) or started here.
    pub fn external(
        mode: ExternalMode,
        opts: DashboardOptions,
        theme: Theme,
    ) -> Result<App, DashboardError> {
        // Worker processes run on the wall clock: a speed means nothing to them.
        let timing = Timing {
            speed: Timing::DASHBOARD.speed,
            ..opts.timing
        };
        let leasing = !opts.no_leasing;
        let engine = open_engine(mode, config_of(&opts, &timing))?;
        let reader = engine.db.open_reader()?;
        let tail = Tail::start(&engine.db, TAIL_EVERY, engine.events_sender())?;
        let children = match mode {
            ExternalMode::Watch => None,
            ExternalMode::Processes => Some(start_stopped(
                ProcessSettings {
                    db: match &engine.db {
                        Db::Sqlite(path) => path.clone(),
                        Db::Postgres(url) => url.into(),
                    },
                    lease_ms: timing.lease_ms,
                    process_ms: timing.process_ms,
                    leasing,
                    reliability: opts.reliability.clone(),
                },
                opts.workers,
            )?),
        };
        let started = children.is_none();
        let messages = engine.config.messages;
        let mut app = App::around(engine, reader, theme, Scenario::OutboxLeasing, messages);
        app.stage.begin_external(External {
            children,
            tail: Some(tail),
            witness: Witness::default(),
            reaped: HashSet::new(),
            started,
            stale_since: None,
            tail_ended: None,
            reader_lost: None,
            who: WhoIsHere::default(),
        });
        // The rows come from `leaselab worker` processes, which claim only the next
        // message (or a batch, as their settings say).
        app.sql.processes = true;
        app.paused = false;
        app.absorb_events();
        if mode == ExternalMode::Watch && app.join_command().is_some() {
            // The strip shows the students' join command until the first one joins.
            return Ok(app);
        }
        app.ui.say(match mode {
            ExternalMode::Watch => format!(
                "watching {}: start workers with `leaselab worker --db {} --name NAME`",
                app.engine.db_shown(),
                opts_db_arg(&app.engine.db)
            ),
            ExternalMode::Processes => {
                concat!(
                    "worker processes wait, stopped: space starts them all; then c kills the selected one (",
                    crate::platform::children::kill_word!(),
                    "), space stops or wakes it, r starts a new one"
                )
                .to_string()
            }
        });
        Ok(app)
    }

    /// Record each worker process found gone on its own (not killed from here, which was
    /// recorded when it was sent) as a crash: its parent knows how it ended.
    pub(super) fn reap_processes(&mut self) {
        let Some(x) = self.stage.external_mut() else {
            return;
        };
        for (slot, name, how) in x.reap() {
            self.record_process_fact(slot, &name, LeaseEventKind::Crashed, &how);
        }
    }

    /// Record what the dashboard did to one of its worker processes (SIGKILL, SIGSTOP,
    /// SIGCONT, a new process), or found of it, with the lease it holds. Its event comes
    /// back through the events table, like the workers' own rows.
    fn record_process_fact(&mut self, slot: usize, name: &str, kind: LeaseEventKind, how: &str) {
        let reader = &self.reader;
        let held = self
            .ledger
            .holdings
            .of(slot)
            .filter(|l| l.owner == name)
            .cloned();
        // The row says whether the lease is still its own, and until when. A finished row
        // keeps its last owner's name: only a row in Processing under this very lease is.
        let held = held.and_then(|l| {
            let row = row_at(reader.as_ref(), l.id)?;
            let own = row.status == OutboxStatus::Processing
                && row.lease_version == l.version
                && row.locked_by.as_deref() == Some(name);
            own.then(|| Lease {
                until_ms: row.locked_until_ms.unwrap_or(l.until_ms),
                ..l
            })
        });
        let fact = Fact::of(kind, self.engine.clock.now(), name, how).holding(
            held.as_ref()
                .map(|l| (l.id, l.key.as_str(), l.version, l.until_ms)),
        );
        if let Err(e) = self.engine.record(&fact) {
            self.ui
                .say(format!("could not record it in the events table: {e}"));
        }
    }

    /// Start a new process in `slot` (after `previous`): a restart, as the ledger counts it.
    fn restart_process(&mut self, slot: usize, previous: String) -> String {
        let Some(c) = self.stage.external_mut().and_then(|x| x.children.as_mut()) else {
            return String::new();
        };
        match c.restart(slot) {
            Ok(name) => {
                self.record_process_fact(slot, &name, LeaseEventKind::Restarted, &previous);
                format!("{name} started as a new process")
            }
            Err(e) => e.to_string(),
        }
    }

    /// How many workers the panels show.
    pub fn worker_count(&self) -> usize {
        match self.stage.external() {
            Some(x) => x.count(),
            None => self.engine.workers().len(),
        }
    }

    /// The pids of the worker processes this dashboard started, while they live.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.stage
            .external()
            .and_then(|x| x.children.as_ref())
            .map_or_else(Vec::new, WorkerProcesses::pids)
    }

    /// A key among workers that are processes. True when it was handled here.
    pub(super) fn act_on_external(&mut self, action: Action) -> bool {
        let Some(x) = self.stage.external_mut() else {
            return false;
        };
        let slot = self.ui.selected;
        let x_started = x.started;
        if action == Action::TogglePause && x.children.is_some() {
            x.started = true;
        }
        let why = match (&mut x.children, action) {
            (Some(c), Action::Crash) => {
                let name = c.name(slot).unwrap_or_default().to_string();
                if c.kill(slot) {
                    x.reaped.insert(name.clone());
                    self.record_process_fact(
                        slot,
                        &name,
                        LeaseEventKind::Crashed,
                        crate::platform::children::kill_word!(),
                    );
                    format!(
                        concat!(
                            "{name} killed with ",
                            crate::platform::children::kill_word!(),
                            "; its lease stays until it runs out"
                        ),
                        name = name
                    )
                } else {
                    format!("{name} is already gone: r starts a new process")
                }
            }
            (Some(c), Action::Restart) => {
                let previous = c.name(slot).unwrap_or_default().to_string();
                // A live one is killed first: that is a crash, recorded as one.
                if c.kill(slot) {
                    x.reaped.insert(previous.clone());
                    self.record_process_fact(
                        slot,
                        &previous,
                        LeaseEventKind::Crashed,
                        crate::platform::children::kill_word!(),
                    );
                }
                self.restart_process(slot, previous)
            }
            (Some(c), Action::TogglePause) => {
                let name = c.name(slot).unwrap_or_default().to_string();
                // A wake is recorded before SIGCONT (the worker's next row may follow at once),
                // a stop after SIGSTOP (it held what it held from then on).
                let waking =
                    x_started && c.is_stopped(slot) && c.state(slot) == ProcessState::Stopped;
                if waking {
                    self.record_process_fact(
                        slot,
                        &name,
                        LeaseEventKind::Resumed,
                        crate::platform::children::wake_word!(),
                    );
                }
                let Some(c) = self.stage.external_mut().and_then(|x| x.children.as_mut()) else {
                    return true;
                };
                let (signal, said) = toggle_pause(c, slot, x_started);
                if signal == Some(crate::platform::children::stop_word!()) {
                    self.record_process_fact(
                        slot,
                        &name,
                        LeaseEventKind::Paused,
                        crate::platform::children::stop_word!(),
                    );
                }
                said
            }
            _ => return false,
        };
        self.ui.say(why);
        true
    }
}

impl App {
    /// The table reader's connection went away (a server restart): open a new one when the
    /// wait since the last attempt is over (`crate::engine::reconnect`), so the table is read
    /// again at the next frame. Only for workers followed through a database.
    pub(super) fn reopen_reader(&mut self) {
        let Some(x) = self.stage.external_mut() else {
            return;
        };
        let (attempt, due) = *x.reader_lost.get_or_insert((0, Instant::now()));
        if Instant::now() < due {
            return;
        }
        match self.engine.db.open_reader() {
            Ok(reader) => {
                self.reader = reader;
                x.reader_lost = None;
            }
            Err(_) => {
                let wait = crate::engine::reconnect::wait_before(attempt + 1);
                x.reader_lost = Some((attempt + 1, Instant::now() + wait));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::engine::clock::wall_now_ms;
    use crate::engine::outbox::prelude::*;
    use crate::engine::outbox::{ClaimOutcome, StoreShared};
    use crate::engine::provider::{ProviderStatus, StatusCheck};
    use crate::engine::store::Store;
    use crate::ui::{DashboardOptions, Theme};

    use super::*;

    /// What the dashboard records of a worker process it signals names the lease the
    /// worker holds then. Its view of the events lags the table, and a finished row keeps
    /// its last owner's name: a message the worker has finished is not one it holds.
    #[test]
    fn a_signalled_worker_is_not_recorded_holding_a_message_it_finished() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("class.db");
        let opts = DashboardOptions {
            db: Some(db.clone()),
            messages: Some(2),
            watch: true,
            ..DashboardOptions::default()
        };
        let mut app = App::external(ExternalMode::Watch, opts, Theme::plain()).unwrap();
        let mut worker = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
        let ClaimOutcome::Claimed(lease) = worker
            .claim_next("Worker-A", wall_now_ms(), 600_000)
            .unwrap()
            .value
        else {
            panic!("nothing to claim");
        };
        let start = Instant::now();
        while app.ledger.holdings.of(0).is_none() {
            assert!(start.elapsed() < Duration::from_secs(60), "no claim seen");
            std::thread::sleep(Duration::from_millis(10));
            app.absorb_events();
        }
        // Finished while the dashboard has not looked again.
        let paid = StatusCheck {
            status: ProviderStatus::Paid,
            transaction_id: Some("tx-1".into()),
        };
        worker.finalize(&lease, &paid, wall_now_ms()).unwrap();
        app.record_process_fact(0, "Worker-A", LeaseEventKind::Paused, "SIGSTOP");
        let paused = Store::open_read_only(&db)
            .unwrap()
            .all_events()
            .unwrap()
            .into_iter()
            .find(|r| r.kind == LeaseEventKind::Paused)
            .expect("the stop is recorded");
        assert_eq!(paused.id, None, "{paused:?}");
    }
}
