//! `leaselab explore`: every schedule of a small world's worker steps and faults, run on a
//! real SQLite outbox, breadth first, so the first schedule found to break a check is a
//! shortest one. Each state reached is kept as the bytes of its database (an in-memory
//! SQLite copy, its pages shared with every state holding the same page) with the
//! provider's counts and the workers' memory; a state already seen is not explored again.

mod lesson;
mod world;

use std::collections::{HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::prelude::*;
use crate::engine::outbox::StoreShared;
use crate::engine::provider::{Provider, ProviderState};
use crate::engine::store::{Rules, Store};

pub use lesson::save_lesson;
pub use world::{Move, Seen, World, JUMP_MS};

/// What [`explore`] answers when its progress callback stopped it.
pub const STOPPED: &str = "stopped";

/// The lease every claim takes, as in the lessons.
pub const LEASE_MS: i64 = 3_000;

/// How the outbox is guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every worker loads every Pending message and processes it, owning nothing.
    NoLeasing,
    /// Leases, with a finalize that checks the owner's name only.
    OwnerGuard,
    /// Leases, with a finalize that also checks the lease version: leaselab's own rule.
    FencingToken,
}

impl Mode {
    pub const NAMES: [&'static str; 3] = ["no-leasing", "owner-guard", "fencing-token"];

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "no-leasing" => Some(Mode::NoLeasing),
            "owner-guard" => Some(Mode::OwnerGuard),
            "fencing-token" => Some(Mode::FencingToken),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::NoLeasing => "no-leasing",
            Mode::OwnerGuard => "owner-guard",
            Mode::FencingToken => "fencing-token",
        }
    }

    pub fn leasing(self) -> bool {
        self != Mode::NoLeasing
    }
}

/// The faults a scheduler may choose at any point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// A worker dies and its supervisor restarts it under the same name, empty-handed.
    pub crash: bool,
    /// The clock jumps past a whole lease.
    pub jump: bool,
    /// A worker stalls holding what it holds (a zombie); its supervisor starts a new one
    /// under the same name, and the stalled one may wake later. Once per worker.
    pub pause: bool,
}

impl Faults {
    pub fn all() -> Faults {
        Faults {
            crash: true,
            jump: true,
            pause: true,
        }
    }

    /// `crash,jump,pause` (any of them, each once), or `none`.
    /// The error follows the quoted input (`--faults: 'foo' is not a fault: ...`), so it
    /// names the unknown part only when the list has others beside it. A list that means
    /// nothing (empty, an empty item, a fault twice, none beside a fault) is refused.
    pub fn parse(s: &str) -> Result<Faults, String> {
        const CHOOSE: &str = "choose from crash, jump, pause (or none)";
        let mut f = Faults::default();
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.iter().all(|p| p.is_empty()) {
            return Err(format!("names no fault: {CHOOSE}"));
        }
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!("has an empty item: {CHOOSE}, comma-separated"));
        }
        if parts.len() > 1 && parts.contains(&"none") {
            return Err("puts none beside a fault: give none alone".into());
        }
        for (i, part) in parts.iter().enumerate() {
            if parts[..i].contains(part) {
                return Err(format!("names {part} twice"));
            }
            match *part {
                "crash" => f.crash = true,
                "jump" => f.jump = true,
                "pause" => f.pause = true,
                "none" => {}
                other => {
                    let what = if parts.len() == 1 {
                        "is not a fault".to_string()
                    } else {
                        format!(
                            "has an unknown fault '{}'",
                            crate::engine::text::quoted(other)
                        )
                    };
                    return Err(format!("{what}: {CHOOSE}"));
                }
            }
        }
        Ok(f)
    }

    pub fn shown(&self) -> String {
        let on: Vec<&str> = [
            (self.crash, "crash"),
            (self.jump, "jump"),
            (self.pause, "pause"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect();
        if on.is_empty() {
            "none".into()
        } else {
            on.join(",")
        }
    }
}

/// What every schedule must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// A message is Processed with no answer from the provider written.
    Lost,
    /// A message is finalized (or marked) Processed twice.
    ProcessedTwice,
    /// The provider did the work for one payment twice.
    SideEffectTwice,
    /// A finalize committed by a worker whose lease was not the row's newest.
    NonOwnerFinalize,
    /// A claim took a message under another worker's live lease.
    LeaseExclusivity,
    /// A message is unfinished and no step can change anything.
    Stuck,
}

impl Check {
    pub const ALL: [Check; 6] = [
        Check::Lost,
        Check::ProcessedTwice,
        Check::SideEffectTwice,
        Check::NonOwnerFinalize,
        Check::LeaseExclusivity,
        Check::Stuck,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Lost => "lost",
            Check::ProcessedTwice => "processed twice",
            Check::SideEffectTwice => "provider side effect twice",
            Check::NonOwnerFinalize => "finalize by a non-owner",
            Check::LeaseExclusivity => "lease exclusivity",
            Check::Stuck => "stuck",
        }
    }

    /// Ownership has no meaning without leases.
    pub fn applies(self, mode: Mode) -> bool {
        mode.leasing() || !matches!(self, Check::NonOwnerFinalize | Check::LeaseExclusivity)
    }

    /// What breaking it means, after a counterexample's last step.
    fn consequence(self, key: &str) -> String {
        match self {
            Check::Lost => format!("so {key} was marked Processed with its answer lost"),
            Check::ProcessedTwice => format!("so {key} was processed twice"),
            Check::SideEffectTwice => {
                format!("so the provider did the work for {key} twice")
            }
            Check::NonOwnerFinalize => {
                format!("so {key} was finalized by a worker that no longer owned it")
            }
            Check::LeaseExclusivity => {
                format!("so two workers held a live lease on {key} at once")
            }
            Check::Stuck => format!("so {key} is stuck: no worker's step can move it"),
        }
    }
}

/// What to explore.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    pub workers: usize,
    pub messages: u64,
    pub mode: Mode,
    pub idempotent: bool,
    pub faults: Faults,
    pub max_depth: usize,
    pub max_states: usize,
    /// Stop when the process holds more than this many MiB of memory.
    pub max_memory_mib: usize,
    /// Workers holding a lease may extend it (each heartbeat its own transaction).
    pub heartbeats: bool,
    /// The claim without its claimable condition: a planted defect for the tests.
    pub broken_claim: bool,
    /// A finalize that forgets the provider's answer: another planted defect.
    pub forget_answer: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            workers: 2,
            messages: 2,
            mode: Mode::FencingToken,
            idempotent: false,
            faults: Faults::all(),
            max_depth: 12,
            max_states: 300_000,
            max_memory_mib: 2_048,
            heartbeats: false,
            broken_claim: false,
            forget_answer: false,
        }
    }
}

/// A schedule step as a counterexample tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    pub mv: Move,
    /// The world before the step (who the workers were).
    pub before: World,
    pub text: String,
}

/// One check's verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub check: Check,
    /// Distinct states reached in which it is broken: each stands for every schedule that
    /// reaches it.
    pub count: u64,
    /// A shortest schedule that breaks it, and the message it broke on.
    pub shortest: Vec<Told>,
    pub about: String,
}

impl Verdict {
    pub fn steps(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .shortest
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{}. {}.", i + 1, capitalized(&t.text)))
            .collect();
        if let Some(last) = out.last_mut() {
            last.pop();
            last.push_str(&format!(": {}.", self.check.consequence(&self.about)));
        }
        out
    }
}

/// `1 worker`, `2 workers`.
pub fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Report {
    pub options: ExploreOptions,
    /// Nothing was cut by `--max-states` or `--max-memory`: every schedule up to the depth
    /// was run.
    pub exhaustive: bool,
    /// Which bound cut the search, if one did.
    pub cut: Option<Cut>,
    /// The whole reachable space was explored before the depth limit.
    pub closed: bool,
    pub states: u64,
    /// Steps taken from explored states: every schedule, up to merging equal states.
    pub schedules: u64,
    pub depth: usize,
    pub elapsed: Duration,
    pub verdicts: Vec<Verdict>,
}

/// The bound that stopped a search before it was exhaustive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    States,
    Memory,
}

impl Cut {
    pub fn flag(self) -> &'static str {
        match self {
            Cut::States => "max-states",
            Cut::Memory => "max-memory",
        }
    }
}

/// The memory this process holds (its resident set, `VmRSS`), in MiB, where the system
/// says.
fn resident_mib() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// A state's key as 128 bits, the two halves hashed apart: kept instead of the key itself
/// (about 280 bytes for 3 workers x 3 messages). Two different states share a fingerprint
/// with a chance of about n^2 / 2^129 for n states, under 10^-25 at five million.
fn fingerprint(key: &str) -> u128 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let half = |tag: u8| {
        let mut h = DefaultHasher::new();
        tag.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
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

/// One reached state: the world, how it was reached, and (until it is expanded) its
/// database image and the provider's state.
struct Node {
    world: World,
    parent: Option<(usize, Move, String)>,
    depth: usize,
    saved: Option<(Image, ProviderState)>,
}

/// A state's database image as its pages, each held once in [`Pages`] however many
/// states share it (most pages, the schema's among them, are the same in every state).
#[derive(Clone)]
struct Image(Rc<[Rc<[u8]>]>);

/// Every page some kept image holds, once each.
#[derive(Default)]
struct Pages {
    pool: HashSet<Rc<[u8]>>,
    /// Where an image is put back together before it is restored.
    joined: Vec<u8>,
}

impl Pages {
    /// The page size the explorer's databases use: small pages make small differences.
    const SIZE: usize = 512;

    fn keep(&mut self, bytes: &[u8]) -> Image {
        let pages = bytes
            .chunks(Self::SIZE)
            .map(|page| match self.pool.get(page) {
                Some(kept) => kept.clone(),
                None => {
                    let kept: Rc<[u8]> = Rc::from(page);
                    self.pool.insert(kept.clone());
                    kept
                }
            })
            .collect();
        Image(pages)
    }

    fn join(&mut self, image: &Image) -> &[u8] {
        self.joined.clear();
        for page in image.0.iter() {
            self.joined.extend_from_slice(page);
        }
        &self.joined
    }

    /// Let go of the pages no kept image holds any more.
    fn sweep(&mut self) {
        self.pool.retain(|page| Rc::strong_count(page) > 1);
    }
}

/// The explorer's own SQLite outbox, seeded, held in memory from the first state on.
struct Bench {
    store: Store,
    provider: Provider,
    pages: Pages,
    /// The file the first state was made in; removed at the end.
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new(opts: &ExploreOptions) -> Result<Bench, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
        let shared = Arc::new(StoreShared::new(crate::engine::outbox::Durability::Off));
        let (mut store, _) =
            Store::create(&dir.path().join("explore.db"), shared).map_err(|e| e.to_string())?;
        let provider = Provider::new();
        provider.set_idempotent(opts.idempotent);
        store
            .seed(&provider, opts.messages, SCENARIO_START_MS)
            .map_err(|e| e.to_string())?;
        store.set_rules(Rules {
            owner_only_finalize: opts.mode == Mode::OwnerGuard,
            broken_claim: opts.broken_claim,
            forget_answer: opts.forget_answer,
        });
        // Every state is kept as an image: small pages make small images.
        store
            .repage(Pages::SIZE as u32)
            .map_err(|e| e.to_string())?;
        let image = store.image().map_err(|e| e.to_string())?;
        store.restore_image(&image).map_err(|e| e.to_string())?;
        Ok(Bench {
            store,
            provider,
            pages: Pages::default(),
            _dir: dir,
        })
    }

    fn image(&mut self) -> Result<Image, String> {
        let bytes = self.store.image().map_err(|e| e.to_string())?;
        Ok(self.pages.keep(&bytes))
    }

    fn restore(&mut self, image: &Image) -> Result<(), String> {
        let bytes = self.pages.join(image);
        self.store.restore_image(bytes).map_err(|e| e.to_string())
    }
}

/// The breadth-first search's bookkeeping.
struct Search {
    opts: ExploreOptions,
    nodes: Vec<Node>,
    seen: HashSet<u128>,
    queue: VecDeque<usize>,
    schedules: u64,
    depth: usize,
    cut: Option<Cut>,
    counts: Vec<u64>,
    first: Vec<Option<(usize, String)>>,
}

/// Explore every schedule of `opts`' world up to its depth, calling `progress` after each
/// state's moves; the search stops (with an error) when it answers false.
pub fn explore(
    opts: &ExploreOptions,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Report, String> {
    let started = Instant::now();
    let mut bench = Bench::new(opts)?;
    let world = World::new(SCENARIO_START_MS, opts.workers, opts.messages);
    let seen = Seen::read(&bench.store, &bench.provider)?;
    let key = fingerprint(&world.key(&seen));
    let mut s = Search {
        opts: opts.clone(),
        nodes: vec![Node {
            world,
            parent: None,
            depth: 0,
            saved: Some((bench.image()?, bench.provider.state())),
        }],
        seen: HashSet::from([key]),
        queue: VecDeque::from([0]),
        schedules: 0,
        depth: 0,
        cut: None,
        counts: vec![0; Check::ALL.len()],
        first: vec![None; Check::ALL.len()],
    };
    let mut closed = true;
    let mut memory_mib = None;
    while let Some(i) = s.queue.pop_front() {
        if s.nodes[i].depth >= opts.max_depth {
            closed = false;
            continue;
        }
        s.expand(i, &mut bench)?;
        if i % 4096 == 0 {
            bench.pages.sweep();
        }
        // Reading the resident set costs a system call: every 256 states expanded.
        if i % 256 == 0 {
            memory_mib = resident_mib();
            if memory_mib.is_some_and(|mib| mib > opts.max_memory_mib) {
                s.cut = Some(Cut::Memory);
            }
        }
        let go_on = progress(Progress {
            states: s.nodes.len() as u64,
            schedules: s.schedules,
            depth: s.depth,
            memory_mib,
        });
        if !go_on {
            return Err(STOPPED.into());
        }
        if s.cut.is_some() {
            closed = false;
            break;
        }
    }
    Ok(s.report(closed, started.elapsed()))
}

impl Search {
    /// Take every move from node `i`, keeping each new state.
    fn expand(&mut self, i: usize, bench: &mut Bench) -> Result<(), String> {
        let (image, provider) = self.nodes[i].saved.take().ok_or("a state expanded twice")?;
        // What the database and the provider hold is read again here rather than kept
        // with every state waiting in the queue.
        bench.restore(&image)?;
        bench.provider.set_state(&provider);
        let seen = Seen::read(&bench.store, &bench.provider)?;
        let world = self.nodes[i].world.clone();
        let own_key = fingerprint(&world.key(&seen));
        let mut progressed = false;
        // The moves that leave the database alone come first: they need no restore, and
        // their states share the image. After a write, the image is put back.
        let beats = self.opts.heartbeats && self.opts.mode.leasing();
        let mut moves = world.moves(&self.opts.faults, beats, seen.live_lease(world.now));
        moves.sort_by_key(|m| world.writes(*m, self.opts.mode));
        let mut dirty = false;
        for mv in moves {
            if dirty {
                bench.restore(&image)?;
            }
            bench.provider.set_state(&provider);
            let mut next = world.clone();
            let done = next.apply(mv, self.opts.mode, &seen, &mut bench.store, &bench.provider)?;
            let wrote = world.writes(mv, self.opts.mode);
            dirty = wrote;
            self.schedules += 1;
            let key = fingerprint(&next.key(&done.seen));
            let is_fault = match mv {
                Move::Crash(_) | Move::Stall(_) => true,
                Move::Jump => !self.opts.faults.jump,
                Move::Step(_) | Move::Wake(_) | Move::Beat(_) => false,
            };
            if !is_fault && key != own_key {
                progressed = true;
            }
            if self.seen.contains(&key) {
                continue;
            }
            if self.nodes.len() >= self.opts.max_states {
                self.cut = Some(Cut::States);
                return Ok(());
            }
            self.seen.insert(key);
            let image = if wrote { bench.image()? } else { image.clone() };
            self.keep(i, mv, next, done, (image, bench.provider.state()));
        }
        if !seen.finished() && !progressed && !world.broken.contains(&Check::Stuck) {
            let about = about(Check::Stuck, &world, &seen, None);
            self.counts[Self::at(Check::Stuck)] += 1;
            self.found(Check::Stuck, i, &about);
        }
        Ok(())
    }

    /// A new state, reached from node `i` by `mv`: kept, queued, and counted for the
    /// checks it breaks.
    fn keep(
        &mut self,
        i: usize,
        mv: Move,
        next: World,
        done: world::Done,
        saved: (Image, ProviderState),
    ) {
        let depth = self.nodes[i].depth + 1;
        let before = &self.nodes[i].world.broken;
        let abouts: Vec<(Check, String)> = done
            .broke
            .iter()
            .filter(|c| !before.contains(c))
            .map(|c| (*c, about(*c, &next, &done.seen, done.key.as_deref())))
            .collect();
        for c in &next.broken {
            self.counts[Self::at(*c)] += 1;
        }
        self.nodes.push(Node {
            world: next,
            parent: Some((i, mv, done.text)),
            depth,
            saved: Some(saved),
        });
        let n = self.nodes.len() - 1;
        for (c, about) in abouts {
            self.found(c, n, &about);
        }
        self.depth = self.depth.max(depth);
        self.queue.push_back(n);
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

    /// The path from the first state to node `n`.
    fn path(&self, mut n: usize) -> Vec<Told> {
        let mut out = Vec::new();
        while let Some((parent, mv, text)) = &self.nodes[n].parent {
            out.push(Told {
                mv: *mv,
                before: self.nodes[*parent].world.clone(),
                text: text.clone(),
            });
            n = *parent;
        }
        out.reverse();
        out
    }

    fn report(&self, closed: bool, elapsed: Duration) -> Report {
        let verdicts = Check::ALL
            .iter()
            .enumerate()
            .filter(|(_, c)| c.applies(self.opts.mode))
            .map(|(at, c)| Verdict {
                check: *c,
                count: self.counts[at],
                shortest: self.first[at]
                    .as_ref()
                    .map(|(n, _)| self.path(*n))
                    .unwrap_or_default(),
                about: self.first[at]
                    .as_ref()
                    .map(|(_, a)| a.clone())
                    .unwrap_or_default(),
            })
            .collect();
        Report {
            options: self.opts.clone(),
            exhaustive: self.cut.is_none(),
            cut: self.cut,
            closed: closed && self.cut.is_none(),
            states: self.nodes.len() as u64,
            schedules: self.schedules,
            depth: self.depth,
            elapsed,
            verdicts,
        }
    }
}

/// The message a broken check is about: the one finalized twice, the one the provider
/// worked on twice, the one the move acted on, or the first unfinished one.
fn about(c: Check, world: &World, seen: &Seen, moved: Option<&str>) -> String {
    let key_of = |id: i64| seen.rows.iter().find(|r| r.id == id).map(|r| r.key.clone());
    let found = match c {
        Check::ProcessedTwice => world
            .finalized
            .iter()
            .position(|n| *n >= 2)
            .and_then(|id| key_of(id as i64)),
        Check::SideEffectTwice => seen
            .calls
            .iter()
            .find(|(_, k)| k.side_effects >= 2)
            .map(|(key, _)| key.clone()),
        Check::Lost => seen
            .rows
            .iter()
            .find(|r| {
                r.status == crate::engine::outbox::OutboxStatus::Processed
                    && r.payment_status == crate::engine::outbox::PaymentStatus::Pending
            })
            .map(|r| r.key.clone()),
        Check::NonOwnerFinalize | Check::LeaseExclusivity => moved.map(str::to_string),
        Check::Stuck => None,
    };
    found
        .or_else(|| {
            seen.rows
                .iter()
                .find(|r| r.status != crate::engine::outbox::OutboxStatus::Processed)
                .map(|r| r.key.clone())
        })
        .unwrap_or_default()
}

impl Report {
    pub fn bad_schedules(&self) -> u64 {
        self.verdicts.iter().map(|v| v.count).sum()
    }

    /// The report for `--json`.
    pub fn json(&self) -> serde_json::Value {
        let o = &self.options;
        serde_json::json!({
            "workers": o.workers,
            "messages": o.messages,
            "mode": o.mode.name(),
            "idempotent": o.idempotent,
            "faults": o.faults.shown(),
            "heartbeats": o.heartbeats,
            "max_depth": o.max_depth,
            "max_states": o.max_states,
            "max_memory_mib": o.max_memory_mib,
            "cut": self.cut.map(Cut::flag),
            "exhaustive": self.exhaustive,
            "closed": self.closed,
            "states": self.states,
            "schedules": self.schedules,
            "depth": self.depth,
            "seconds": self.elapsed.as_secs_f64(),
            "violations": self.verdicts.iter().map(|v| serde_json::json!({
                "check": v.check.name(),
                "count": v.count,
                "shortest": v.steps(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The report as text: the search's reach, then each check with its verdict and a
    /// shortest counterexample.
    pub fn text(&self) -> String {
        let o = &self.options;
        let mut out =
            format!(
            "explored {} x {}, {}{}, faults {}: {} states, {} schedules, depth {}{} in {:.1} s\n",
            plural(o.workers as u64, "worker"),
            plural(o.messages, "message"),
            o.mode.name(),
            if o.idempotent { " with the idempotent provider" } else { "" },
            o.faults.shown(),
            self.states,
            self.schedules,
            self.depth,
            match (self.cut, self.closed) {
                (None, true) => " (every reachable state)".to_string(),
                (None, false) => format!(" (every schedule up to {} steps)", o.max_depth),
                (Some(Cut::States), _) => {
                    format!(" (CUT at --max-states {}: not exhaustive)", o.max_states)
                }
                (Some(Cut::Memory), _) => format!(
                    " (CUT at --max-memory {} MiB: not exhaustive)",
                    o.max_memory_mib
                ),
            },
            self.elapsed.as_secs_f64()
        );
        for v in &self.verdicts {
            if v.count == 0 {
                out.push_str(&format!(
                    "  ok    {}: no schedule breaks it\n",
                    v.check.name()
                ));
                continue;
            }
            out.push_str(&format!(
                "  FAIL  {}: broken in {} states; a shortest schedule ({} steps):\n",
                v.check.name(),
                v.count,
                v.shortest.len()
            ));
            for line in v.steps() {
                out.push_str(&format!("        {line}\n"));
            }
            if v.check == Check::Stuck && !o.faults.jump {
                out.push_str(
                    "        (The clock stands still here: jump is not among the faults.)\n",
                );
            }
        }
        out
    }
}
