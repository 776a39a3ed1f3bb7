//! What a search is asked: how the outbox is guarded, which faults a scheduler may choose,
//! and the world's size and the search's bounds.

use super::error::FaultsError;

/// The most workers the reduction renames (every order of them is built once): the
/// command line's bound. The library may ask for more; they are searched over every state.
pub const MAX_RENAMED: usize = 3;

pub use super::clock::LEASE_MS;

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
    pub fn parse(s: &str) -> Result<Faults, FaultsError> {
        let mut f = Faults::default();
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.iter().all(|p| p.is_empty()) {
            return Err(FaultsError::NoFault);
        }
        if parts.iter().any(|p| p.is_empty()) {
            return Err(FaultsError::EmptyItem);
        }
        if parts.len() > 1 && parts.contains(&"none") {
            return Err(FaultsError::NoneBeside);
        }
        for (i, part) in parts.iter().enumerate() {
            if parts[..i].contains(part) {
                return Err(FaultsError::Twice(part.to_string()));
            }
            match *part {
                "crash" => f.crash = true,
                "jump" => f.jump = true,
                "pause" => f.pause = true,
                "none" => {}
                _ if parts.len() == 1 => return Err(FaultsError::NotAFault),
                other => {
                    let quoted = crate::engine::text::quoted(other);
                    return Err(FaultsError::Unknown(quoted));
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
    /// Stop after this many seconds: the whole search's budget.
    pub max_seconds: u64,
    /// The most times one message's lease may run out in a schedule of a `--sql` search:
    /// a move of the clock that would let it run out once more is not taken, and the
    /// verdict names the bound.
    pub max_expiries: u8,
    /// The most crashes and stalls, together, in a schedule of a `--sql` search.
    pub max_faults: u8,
    /// The most heartbeats in a schedule of a `--sql` search.
    pub max_beats: u8,
    /// A `--sql` search keeps each time's exact distance from the clock instead of where it
    /// stands among the instants an answer may change: slower, the same verdicts (tests).
    pub exact_clock: bool,
    /// Workers holding a lease may extend it (each heartbeat its own transaction).
    pub heartbeats: bool,
    /// The claim without its claimable condition: a planted defect for the tests.
    pub broken_claim: bool,
    /// A finalize that forgets the provider's answer: another planted defect.
    pub forget_answer: bool,
    /// The workers run a student's statements (`explore --sql FILE`) instead of the
    /// engine's claim, finalize and heartbeat.
    pub sql: Option<std::sync::Arc<crate::engine::student::Exercise>>,
    /// How many cores expand states at once, each on its own copy of the database; 0 for
    /// as many as the machine has (at most 4). The report is the same whatever the number.
    pub cores: usize,
    /// Keep one state for each class of states equal up to renaming the workers (see
    /// `symmetry.rs`); false runs the search over every state (`--no-reduction`). See
    /// [`ExploreOptions::reduced`] for a student's statements.
    pub reduction: bool,
}

impl ExploreOptions {
    /// Whether the search keeps a state per class of states equal up to renaming the
    /// workers: asked for, a world of at most [`MAX_RENAMED`] workers (the renamings
    /// built), and for a student's statements only when they treat a worker's name as a
    /// name only (`clock::names_only`): statements that sort by it or compare it otherwise
    /// are searched over every state.
    pub fn reduced(&self) -> bool {
        self.reduction
            && self.workers <= MAX_RENAMED
            && self
                .sql
                .as_ref()
                .is_none_or(|ex| super::clock::names_only(ex))
    }
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
            max_seconds: 600,
            max_expiries: 1,
            max_faults: 1,
            max_beats: 1,
            exact_clock: false,
            heartbeats: false,
            broken_claim: false,
            forget_answer: false,
            sql: None,
            cores: 0,
            reduction: true,
        }
    }
}
