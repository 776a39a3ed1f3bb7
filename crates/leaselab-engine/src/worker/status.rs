//! What a worker is doing, as the dashboard and the engine read it.

use crate::outbox::{Lease, MessageRef};
use crate::worker_id::WorkerId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkerState {
    #[default]
    Idle,
    Claiming,
    Processing,
    Finalizing,
    Paused,
    /// Found nothing claimable while another worker's live lease holds a message.
    Blocked,
    Crashed,
    Stopped,
    /// A worker process started held, waiting for the dashboard's first space.
    Held,
    /// A worker process that stopped between two actions (Ctrl-C), as its row records.
    Left,
    /// Nothing recorded says what it does: its lease ran out, or was taken, with no result,
    /// no crash and no freeze recorded (a killed process and a sleeping laptop look alike).
    Unknown,
}

impl WorkerState {
    pub fn label(self) -> &'static str {
        match self {
            WorkerState::Idle => "idle",
            WorkerState::Claiming => "claiming",
            WorkerState::Processing => "processing",
            WorkerState::Finalizing => "finalizing",
            WorkerState::Paused => "paused",
            WorkerState::Blocked => "BLOCKED",
            WorkerState::Crashed => "CRASHED",
            WorkerState::Stopped => "stopped",
            WorkerState::Held => "held",
            WorkerState::Left => "left",
            WorkerState::Unknown => "unknown",
        }
    }
}

/// The worker's next action, shown before a single step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NextAction {
    #[default]
    Claim,
    Load,
    CallProvider(String),
    Finalize(String),
    Mark(String),
    Nothing,
}

impl NextAction {
    pub fn describe(&self) -> String {
        match self {
            NextAction::Claim => "claim the oldest claimable message".into(),
            NextAction::Load => "load every Pending message (no claim)".into(),
            NextAction::CallProvider(k) => format!("call the provider for {k}"),
            NextAction::Finalize(k) => format!("finalize {k} (ownership-guarded)"),
            NextAction::Mark(k) => format!("mark {k} Processed (unguarded)"),
            NextAction::Nothing => "nothing (crashed)".into(),
        }
    }
}

/// What a worker shows of itself; the dashboard reads it each frame.
#[derive(Debug, Clone, Default)]
pub struct WorkerStatus {
    pub id: WorkerId,
    pub name: String,
    pub state: WorkerState,
    pub paused: bool,
    pub lease: Option<Lease>,
    /// Leasing off: the message it works on without owning it, and how many are queued.
    pub working_on: Option<MessageRef>,
    pub queued: usize,
    pub next: NextAction,
    /// Results this incarnation wrote (finalized or marked).
    pub processed: u64,
    /// Processing or idling: the scenario time its next action waits for.
    pub waiting_until: Option<i64>,
    /// Actions started so far; unchanged between two looks means it did nothing between.
    pub acts: u64,
    /// Its last claim found nothing claimable but this message under a live lease.
    pub blocked_on: Option<BlockedOn>,
    /// The scenario time of its last heartbeat for the lease it holds (None: none yet).
    pub last_beat_ms: Option<i64>,
    /// Stopped on its own: why, in the one line its `Failed` event says.
    pub stopped_why: Option<String>,
}

/// The message a blocked claim waits for, its owner and when that lease runs out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedOn {
    pub id: i64,
    pub key: String,
    pub owner: String,
    pub until_ms: i64,
}

impl WorkerStatus {
    /// Holds no lease and no unowned work: its next action can only look for more.
    pub fn empty_handed(&self) -> bool {
        self.lease.is_none()
            && self.working_on.is_none()
            && self.queued == 0
            && !matches!(
                self.state,
                WorkerState::Processing | WorkerState::Finalizing
            )
    }
}
