//! The article's lease-expiry story, told as a lesson: headless `run` carries it out with
//! the lessons' runner, and the dashboard steps it in its one lesson mode.

use crate::engine::EngineConfig;
use crate::lesson::{Action, Lesson, MessageSel, Pane, Setup, Step};

/// Worker-A claims message 1 and crashes; Worker-B is blocked, the lease runs out, Worker-B
/// reclaims and processes it once. One action a step, on the outbox `config` describes.
pub fn lease_expiry_story(config: &EngineConfig) -> Lesson {
    let lease_ms = config.lease_ms;
    let first = MessageSel {
        id: 1,
        key: crate::engine::store::payment_key(1),
    };
    let claim = |slot| Action::Claim {
        slot,
        message: Some(first.clone()),
    };
    let steps = [
        (
            claim(0),
            "Worker-A claims the first payment and holds its lease.",
        ),
        (
            Action::Crash { slot: 0 },
            "Worker-A crashes holding the lease: the row still names it as owner.",
        ),
        (
            claim(1),
            "Worker-B is refused: the lease has not run out, so the row is not its to take.",
        ),
        (
            Action::Advance { ms: lease_ms + 100 },
            "The clock passes the end of Worker-A's lease; the row is claimable again.",
        ),
        (
            claim(1),
            "Worker-B reclaims the payment with a new lease version: a fencing token.",
        ),
        (
            Action::Act { slot: 1 },
            "Worker-B asks the provider, under its own lease.",
        ),
        (
            Action::Act { slot: 1 },
            "Worker-B finalizes: processed once, after its first owner died holding it.",
        ),
    ];
    Lesson {
        name: "lease-expiry".into(),
        path: String::new(),
        title: "The lease-expiry story".into(),
        summary: "Worker-A claims and crashes; Worker-B waits for the lease to run out".into(),
        setup: Setup {
            workers: config.workers,
            messages: config.messages,
            lease_ms,
            process_ms: config.process_ms,
            leasing: config.leasing,
            idempotent_provider: false,
            reliability: config.reliability.clone(),
            batch: 1,
            finalize_guard: Default::default(),
            exercise: config.exercise.clone(),
        },
        steps: steps
            .into_iter()
            .map(|(action, say)| Step {
                // A claim opens the SQL pane: the story's claims are its statements.
                show: matches!(action, Action::Claim { .. }).then_some(Pane::Sql),
                actions_text: vec![action.describe()],
                actions: vec![action],
                say: say.into(),
                expects: Vec::new(),
                quiz: None,
            })
            .collect(),
    }
}
