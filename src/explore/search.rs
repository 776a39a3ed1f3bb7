//! The breadth-first search over every schedule of a small world's worker steps and
//! faults, so the first schedule found to break a check is a shortest one; a state already
//! seen is known by its fingerprint and not explored again.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::provider::ProviderState;

use super::check::Check;
use super::clock::TimeModel;
use super::error::ExploreError;
use super::options::ExploreOptions;
use super::report::{Cut, Report, Told, Verdict};
use super::store::{Image, Lane, Pages};
use super::world::{done_with, Done, Held, Move, Seen, World};

/// The memory this process holds (its resident set), in MiB, where the system says.
fn resident_mib() -> Option<usize> {
    let bytes = crate::platform::memory::resident_bytes()?;
    usize::try_from(bytes >> 20).ok()
}

/// How far the search has got, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub states: u64,
    pub schedules: u64,
    pub depth: usize,
    /// The process's resident memory in MiB when last read (every 256 states), where the
    /// system says.
    pub memory_mib: Option<usize>,
}

/// One reached state: how it was reached, and until it is expanded what it holds. Once
/// expanded a state keeps only the move that reached it: a schedule is told by playing
/// its moves again from the first state.
struct Node {
    parent: Option<(u32, Move)>,
    depth: u16,
    /// Its world, database image and provider's state, until it is expanded; none for a
    /// state at the depth limit, which is never expanded.
    open: Option<Box<Open>>,
    /// The first message not yet Processed, by its Id (`None`: every message is).
    unfinished: Option<(i64, i64)>,
    /// Every move from this state was taken (it was not cut off by the depth or a limit).
    complete: bool,
}

/// What a state to expand holds: the world, its database's image, the provider's state.
#[derive(Clone)]
struct Open {
    world: World,
    image: Image,
    provider: ProviderState,
}

/// The breadth-first search's bookkeeping.
struct Search {
    opts: ExploreOptions,
    nodes: Vec<Node>,
    /// The first state, kept to play a schedule again from.
    root: Open,
    /// Each state reached, by its fingerprint: the node it is.
    seen: HashMap<u128, u32>,
    /// The moves that are not faults, from state to state: what the stuck check follows.
    steps: Vec<(u32, u32)>,
    queue: VecDeque<usize>,
    schedules: u64,
    depth: usize,
    cut: Option<Cut>,
    counts: Vec<u64>,
    first: Vec<Option<(usize, String)>>,
    /// A move of the clock was held back somewhere by `--max-expiries`.
    bounded: bool,
}

/// How many steps past its first failure a `--sql` search goes on, for the other checks'
/// shortest schedules.
const AFTER_FAILURE: usize = 4;

/// How many states a lane expands between two merges: enough that the threads run long,
/// few enough that the moves they hand back stay small.
const CHUNK: usize = 16;

/// Explore every schedule of `opts`' world up to its depth, calling `progress` after each
/// state's moves; the search stops with [`ExploreError::Stopped`] when it answers false.
/// The states of one round are expanded on every core, each on its own copy of the
/// database, and what they found is merged in the order one core would have found it: the
/// report is the same whatever the number of cores.
pub fn explore(
    opts: &ExploreOptions,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Report, ExploreError> {
    let started = Instant::now();
    let cores = match opts.cores {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        n => n.min(4),
    };
    let mut lanes = (0..cores)
        .map(|_| Lane::new(opts))
        .collect::<Result<Vec<_>, _>>()?;
    let mut pages = Pages::default();
    let world = World {
        sql: opts.sql.clone(),
        time: opts.sql.as_ref().map(|ex| Arc::new(TimeModel::of(ex))),
        max_expiries: opts.max_expiries,
        exact_clock: opts.exact_clock,
        max_crashes_and_stalls: if opts.sql.is_some() {
            opts.max_faults
        } else {
            u8::MAX
        },
        max_beats: if opts.sql.is_some() {
            opts.max_beats
        } else {
            u8::MAX
        },
        ..World::new(SCENARIO_START_MS, opts.workers, opts.messages)
    };
    let first = &mut lanes[0];
    let seen = Seen::read(&first.store, &first.provider, opts.sql.is_some())?;
    let key = state_key(opts, &world, &seen);
    let root = Open {
        world,
        image: pages.keep(&first.image()?),
        provider: first.provider.state(),
    };
    let mut s = Search {
        opts: opts.clone(),
        nodes: vec![Node {
            parent: None,
            depth: 0,
            open: Some(Box::new(root.clone())),
            unfinished: unfinished(&seen),
            complete: false,
        }],
        root,
        seen: HashMap::from([(key, 0)]),
        steps: Vec::new(),
        queue: VecDeque::from([0]),
        schedules: 0,
        depth: 0,
        cut: None,
        counts: vec![0; Check::ALL.len()],
        first: vec![None; Check::ALL.len()],
        bounded: false,
    };
    let closed = s.run(&mut lanes, &mut pages, progress)?;
    s.find_stuck();
    s.report(closed, started.elapsed(), &mut lanes[0])
}

/// The first message of `seen` not yet Processed.
fn unfinished(seen: &Seen) -> Option<(i64, i64)> {
    seen.rows
        .iter()
        .find(|r| !done_with(r.status))
        .map(|r| (r.id, r.attempts))
}

/// The key a state is known by: its fingerprint, or under the reduction its class's.
fn state_key(opts: &ExploreOptions, world: &World, seen: &Seen) -> u128 {
    // As `opts.reduced()`, the file's use of names worked out once, not at every state.
    let names_only = world.time.as_ref().is_none_or(|m| m.names_only);
    if opts.reduction && opts.workers <= super::options::MAX_RENAMED && names_only {
        world.class_fingerprint(seen)
    } else {
        world.fingerprint(seen)
    }
}

/// A state handed to a lane: its world, its database image and the provider's state.
struct Task {
    node: usize,
    open: Box<Open>,
    /// Its moves reach the depth limit: the states they reach are never expanded, and
    /// need no image.
    last: bool,
}

/// One move from a state, as a lane found it.
struct Child {
    mv: Move,
    next: World,
    done: Done,
    key: u128,
    is_fault: bool,
    /// The move wrote to the database (else the database is the state's own).
    wrote: bool,
    /// The database after a move that wrote, unless its state was known before the round.
    image: Option<Vec<u8>>,
    /// The provider's state after the move, unless its state was known before the round.
    provider: Option<ProviderState>,
}

/// Take every move from `task`'s state on `lane`, in the order the search keeps them. A
/// state in `known` (the states found before this round) needs no image.
fn expand(
    lane: &mut Lane,
    opts: &ExploreOptions,
    known: &HashMap<u128, u32>,
    task: &Task,
) -> Result<(Vec<Child>, Held), ExploreError> {
    let Open {
        world,
        image,
        provider,
    } = &*task.open;
    lane.restore(image)?;
    lane.provider.set_state(provider);
    let seen = Seen::read(&lane.store, &lane.provider, opts.sql.is_some())?;
    // The moves that leave the database alone come first: they need no restore, and their
    // states share the image. After a write, the image is put back.
    let beats = opts.heartbeats && opts.mode.leasing();
    let (mut moves, held) = world.moves(&opts.faults, beats, &seen);
    moves.sort_by_key(|m| world.writes(*m, opts.mode));
    let mut dirty = false;
    // Only a worker's step calls the provider: after another move it holds the state's.
    let mut called = false;
    let mut out = Vec::with_capacity(moves.len());
    for mv in moves {
        if dirty {
            lane.restore(image)?;
        }
        if called {
            lane.provider.set_state(provider);
        }
        called = matches!(mv, Move::Step(_) | Move::Beat(_));
        let mut next = world.clone();
        let done = next.apply(mv, opts.mode, &seen, &mut lane.store, &lane.provider)?;
        dirty = world.writes(mv, opts.mode);
        let key = state_key(opts, &next, &done.seen);
        let is_fault = match mv {
            Move::Crash(_) | Move::Stall(_) => true,
            Move::Jump | Move::Tick(_) => !opts.faults.jump,
            Move::Step(_) | Move::Wake(_) | Move::Beat(_) => false,
        };
        // A state known before the round needs neither image nor provider's state.
        let new = !task.last && !known.contains_key(&key);
        let image = if dirty && new {
            Some(lane.image()?)
        } else {
            None
        };
        out.push(Child {
            mv,
            next,
            done,
            key,
            is_fault,
            wrote: dirty,
            image,
            provider: new.then(|| lane.provider.state()),
        });
    }
    Ok((out, held))
}

/// Each task of `tasks` expanded, the lanes sharing them out, in the tasks' order.
fn expand_all(
    lanes: &mut [Lane],
    opts: &ExploreOptions,
    known: &HashMap<u128, u32>,
    tasks: &[Task],
) -> Vec<Result<(Vec<Child>, Held), ExploreError>> {
    if let [lane] = lanes {
        return tasks.iter().map(|t| expand(lane, opts, known, t)).collect();
    }
    let per = tasks.len().div_ceil(lanes.len()).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = lanes
            .iter_mut()
            .zip(tasks.chunks(per))
            .map(|(lane, part)| {
                scope.spawn(move || {
                    part.iter()
                        .map(|t| expand(lane, opts, known, t))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

impl Search {
    /// The search itself, a round of states at a time; whether it closed (no state was
    /// left unexpanded by the depth or a limit).
    fn run(
        &mut self,
        lanes: &mut [Lane],
        pages: &mut Pages,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<bool, ExploreError> {
        let mut closed = true;
        let mut memory_mib = None;
        let started = Instant::now();
        loop {
            let mut round = Vec::new();
            while round.len() < CHUNK * lanes.len() {
                let Some(i) = self.queue.pop_front() else {
                    break;
                };
                if usize::from(self.nodes[i].depth) >= self.limit() {
                    closed = false;
                    continue;
                }
                round.push(i);
            }
            if round.is_empty() {
                return Ok(closed);
            }
            let mut tasks = Vec::with_capacity(round.len());
            for &i in &round {
                let open = self.nodes[i].open.take();
                tasks.push(Task {
                    node: i,
                    open: open.ok_or(ExploreError::ExpandedTwice)?,
                    last: usize::from(self.nodes[i].depth) + 1 >= self.limit(),
                });
            }
            let found = expand_all(lanes, &self.opts, &self.seen, &tasks);
            for (task, children) in tasks.into_iter().zip(found) {
                let i = task.node;
                let (children, held) = children?;
                self.merge(&task, children, pages)?;
                // A move of the clock or a heartbeat held back by its bound: what lies
                // beyond it is not known, as for a state at the depth limit. A fault held
                // back changes nothing of that: stuck is judged without faults.
                self.nodes[i].complete &= !held.steps;
                self.bounded |= held.steps || held.faults;
                if i % 4096 == 0 {
                    pages.sweep();
                }
                // Reading the resident set costs a system call: every 256 states expanded.
                if i % 256 == 0 {
                    memory_mib = resident_mib();
                    if memory_mib.is_some_and(|mib| mib > self.opts.max_memory_mib) {
                        self.cut = Some(Cut::Memory);
                    }
                }
                let go_on = progress(Progress {
                    states: self.nodes.len() as u64,
                    schedules: self.schedules,
                    depth: self.depth,
                    memory_mib,
                });
                if !go_on {
                    return Err(ExploreError::Stopped);
                }
                if started.elapsed().as_secs() >= self.opts.max_seconds {
                    self.cut = Some(Cut::Time);
                }
                if self.cut.is_some() {
                    return Ok(false);
                }
            }
        }
    }

    /// Keep what node `task`'s moves found, in their order: each new state once.
    fn merge(
        &mut self,
        task: &Task,
        children: Vec<Child>,
        pages: &mut Pages,
    ) -> Result<(), ExploreError> {
        let i = task.node;
        for c in children {
            self.schedules += 1;
            let to = match self.seen.get(&c.key) {
                Some(&known) => known,
                None => {
                    if self.nodes.len() >= self.opts.max_states {
                        self.cut = Some(Cut::States);
                        return Ok(());
                    }
                    let n = self.nodes.len() as u32;
                    self.seen.insert(c.key, n);
                    let kept = match (&c.image, c.wrote, c.provider) {
                        _ if task.last => None,
                        (_, _, None) => return Err(ExploreError::NoImage),
                        (Some(bytes), _, Some(p)) => Some((pages.keep(bytes), p)),
                        (None, false, Some(p)) => Some((task.open.image.clone(), p)),
                        (None, true, Some(_)) => return Err(ExploreError::NoImage),
                    };
                    self.keep(task, c.mv, c.next, kept, &c.done);
                    n
                }
            };
            if !c.is_fault && to as usize != i {
                self.steps.push((i as u32, to));
            }
        }
        self.nodes[i].complete = true;
        Ok(())
    }

    /// A new state, reached from node `i` by `mv`: kept, queued, and counted for the
    /// checks it breaks.
    fn keep(
        &mut self,
        task: &Task,
        mv: Move,
        next: World,
        saved: Option<(Image, ProviderState)>,
        done: &Done,
    ) {
        let i = task.node;
        let depth = self.nodes[i].depth + 1;
        let before = &task.open.world.broken;
        let abouts: Vec<(Check, String)> = done
            .broke
            .iter()
            .filter(|c| !before.contains(c))
            .map(|c| {
                (
                    *c,
                    super::state::about(*c, &next, &done.seen, done.key.as_deref()),
                )
            })
            .collect();
        for c in &next.broken {
            self.counts[Self::at(*c)] += 1;
        }
        let open = saved.map(|(image, provider)| {
            Box::new(Open {
                world: next,
                image,
                provider,
            })
        });
        self.nodes.push(Node {
            parent: Some((i as u32, mv)),
            depth,
            open,
            unfinished: unfinished(&done.seen),
            complete: false,
        });
        let n = self.nodes.len() - 1;
        for (c, about) in abouts {
            self.found(c, n, &about);
        }
        self.depth = self.depth.max(usize::from(depth));
        self.queue.push_back(n);
    }

    /// The states from which no schedule without a fault finishes every message: not
    /// one where every move leaves it as it is, but also one whose moves only go round (a
    /// claim that reads a message, fails to take it and starts again). A state counts as
    /// able to finish when it is finished, when its moves were cut off by the depth or a
    /// limit (what lies beyond is not known), or when a move that is not a fault leads to
    /// such a state. The first stuck state in the search's order is a shallowest one.
    fn find_stuck(&mut self) {
        // A file that scales the clock itself may compare at instants the search never
        // stands at: a message that looks stuck may only be waiting for one.
        if self.scaled() {
            return;
        }
        let n = self.nodes.len();
        // The moves turned round, as one array: the states each state is reached from.
        let mut start = vec![0u32; n + 1];
        for &(_, to) in &self.steps {
            start[to as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut from = vec![0u32; self.steps.len()];
        for &(f, to) in &self.steps {
            from[fill[to as usize] as usize] = f;
            fill[to as usize] += 1;
        }
        let mut can_finish: Vec<bool> = self
            .nodes
            .iter()
            .map(|node| node.unfinished.is_none() || !node.complete)
            .collect();
        let mut todo: Vec<usize> = (0..n).filter(|&k| can_finish[k]).collect();
        while let Some(k) = todo.pop() {
            for &f in &from[start[k] as usize..start[k + 1] as usize] {
                if !can_finish[f as usize] {
                    can_finish[f as usize] = true;
                    todo.push(f as usize);
                }
            }
        }
        // A message left unclaimed after attempts, by a claim that asks how many it had,
        // was given up on purpose; any other is stuck.
        let asks_attempts = self
            .opts
            .sql
            .as_ref()
            .is_some_and(|ex| super::clock::claim_asks_attempts(ex));
        for k in (0..n).filter(|&k| !can_finish[k]) {
            let Some((id, attempts)) = self.nodes[k].unfinished else {
                continue;
            };
            let check = match asks_attempts && attempts > 0 {
                true => Check::GaveUp,
                false => Check::Stuck,
            };
            self.counts[Self::at(check)] += 1;
            self.found(check, k, &crate::engine::outbox::payment_key(id as u64));
        }
    }

    /// The file multiplies or divides the clock (`clock::TimeModel::scaled`).
    fn scaled(&self) -> bool {
        self.root.world.time.as_ref().is_some_and(|m| m.scaled)
    }

    /// The depth no state is expanded beyond: `--max-depth`, or, once a check has failed,
    /// a few steps past the first failure ([`AFTER_FAILURE`]): the verdict is then known,
    /// and a class is not kept waiting for the rest.
    fn limit(&self) -> usize {
        let failed = Check::ALL
            .iter()
            .enumerate()
            .filter(|(_, c)| c.fails())
            .filter_map(|(at, _)| self.first[at].as_ref())
            .map(|(n, _)| usize::from(self.nodes[*n].depth))
            .min();
        match failed {
            Some(d) if self.opts.sql.is_some() => self.opts.max_depth.min(d + AFTER_FAILURE),
            _ => self.opts.max_depth,
        }
    }

    fn at(c: Check) -> usize {
        Check::ALL.iter().position(|x| *x == c).unwrap_or(0)
    }

    /// The first (so a shortest) schedule found to break `c`.
    fn found(&mut self, c: Check, node: usize, about: &str) {
        let at = Self::at(c);
        if self.first[at].is_none() {
            self.first[at] = Some((node, about.to_string()));
        }
    }

    /// The moves from the first state to node `n`.
    fn moves_to(&self, mut n: usize) -> Vec<Move> {
        let mut out = Vec::new();
        while let Some((parent, mv)) = self.nodes[n].parent {
            out.push(mv);
            n = parent as usize;
        }
        out.reverse();
        out
    }

    /// The schedule to node `n`, told: its moves played again on `lane` from the first
    /// state (the search keeps no words for the states it expanded). Each move does what
    /// it did in the search, on the same database and provider; the schedule must break
    /// `c` again.
    fn path(&self, n: usize, c: Check, lane: &mut Lane) -> Result<Vec<Told>, ExploreError> {
        lane.restore(&self.root.image)?;
        lane.provider.set_state(&self.root.provider);
        let mut world = self.root.world.clone();
        let mut out = Vec::new();
        for mv in self.moves_to(n) {
            let seen = Seen::read(&lane.store, &lane.provider, self.opts.sql.is_some())?;
            let mut next = world.clone();
            let done = next.apply(mv, self.opts.mode, &seen, &mut lane.store, &lane.provider)?;
            out.push(Told {
                mv,
                before: world,
                text: done.text,
            });
            world = next;
        }
        let endless = matches!(c, Check::Stuck | Check::GaveUp);
        if !endless && !world.broken.contains(&c) {
            return Err(ExploreError::Unrepeated(c.name()));
        }
        if endless && self.opts.sql.is_some() {
            self.past_the_leases(world, lane, &mut out)?;
        }
        Ok(out)
    }

    /// A stuck schedule told on: the clock moved past every lease still running, then each
    /// worker free to claim tries once, so the schedule shows that no step takes the
    /// message even when every lease has ended. Every state on the way is stuck too: a
    /// stuck state reaches only stuck states.
    fn past_the_leases(
        &self,
        mut world: World,
        lane: &mut Lane,
        out: &mut Vec<Told>,
    ) -> Result<(), ExploreError> {
        let sql = self.opts.sql.is_some();
        let play = |world: &mut World, mv: Move, out: &mut Vec<Told>, lane: &mut Lane| {
            let seen = Seen::read(&lane.store, &lane.provider, sql)?;
            let mut next = world.clone();
            let done = next.apply(mv, self.opts.mode, &seen, &mut lane.store, &lane.provider)?;
            out.push(Told {
                mv,
                before: std::mem::replace(world, next),
                text: done.text,
            });
            Ok::<Seen, ExploreError>(done.seen)
        };
        // At most as many moves of the clock as a lease's instants, bounded.
        for _ in 0..12 {
            let seen = Seen::read(&lane.store, &lane.provider, sql)?;
            let held =
                |a: &super::world::Actor| a.holds_lease().is_some_and(|l| l.until_ms >= world.now);
            if !seen.live_lease(world.now) && !world.actors.iter().any(held) {
                break;
            }
            let (moves, _) = world.moves(&self.opts.faults, false, &seen);
            let Some(tick) = moves.into_iter().find(|m| matches!(m, Move::Tick(_))) else {
                break;
            };
            play(&mut world, tick, out, lane)?;
        }
        let free: Vec<usize> = (0..world.actors.len())
            .filter(|&i| !world.actors[i].stalled && world.actors[i].holds_lease().is_none())
            .collect();
        for i in free {
            // One whole claim: a statement a step, until the worker is free again.
            for _ in 0..crate::engine::student::MAX_STATEMENTS {
                play(&mut world, Move::Step(i), out, lane)?;
                if matches!(world.actors[i].local, super::world::Local::Idle) {
                    break;
                }
            }
        }
        Ok(())
    }

    fn report(
        &self,
        closed: bool,
        elapsed: Duration,
        lane: &mut Lane,
    ) -> Result<Report, ExploreError> {
        let mut verdicts = Vec::new();
        for (at, c) in Check::ALL.iter().enumerate() {
            if !c.applies(self.opts.mode, self.opts.sql.is_some()) {
                continue;
            }
            let (shortest, about) = match &self.first[at] {
                Some((n, about)) => (self.path(*n, *c, lane)?, about.clone()),
                None => (Vec::new(), String::new()),
            };
            verdicts.push(Verdict {
                check: *c,
                count: self.counts[at],
                shortest,
                about,
            });
        }
        Ok(Report {
            options: self.opts.clone(),
            exhaustive: self.cut.is_none(),
            cut: self.cut,
            closed: closed && self.cut.is_none(),
            states: self.nodes.len() as u64,
            schedules: self.schedules,
            depth: self.depth,
            elapsed,
            verdicts,
            bounded: self.bounded,
            searched_depth: self.limit(),
            scaled: self.scaled(),
        })
    }
}
