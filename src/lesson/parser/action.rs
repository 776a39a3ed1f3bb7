//! A `do` line: its verb and what follows, read into an [`Action`].

use std::ops::Range;

use toml::Spanned;

use crate::engine::text::quoted;
use crate::engine::worker::MAX_BATCH;
use crate::engine::MAX_WORKERS;
use crate::lesson::format::{Action, MAX_ADD_PAYMENT, MAX_CLOCK_MS, MAX_WORK_BEATS};

use super::ctx::Ctx;
use super::error::Mistake;

impl Ctx<'_> {
    pub(super) fn action(&self, a: &Spanned<String>) -> Result<Action, Mistake> {
        let span = a.span();
        let words: Vec<&str> = a.get_ref().split_whitespace().collect();
        let verb = words.first().copied().unwrap_or("");
        let (action, used) = match verb {
            // `load W` is a claim's name with leasing off, where the worker loads every
            // Pending row: the word the event log (LOADED) uses.
            "load" => {
                let (slot, used) = self.worker_ref(&span, &words[1..])?;
                (
                    Action::Claim {
                        slot,
                        message: None,
                    },
                    1 + used,
                )
            }
            "claim" => {
                let (slot, used) = self.worker_ref(&span, &words[1..])?;
                let message = words
                    .get(1 + used)
                    .map(|w| self.message(&span, w))
                    .transpose()?;
                (Action::Claim { slot, message }, 2 + used)
            }
            "act" | "beat" | "crash" | "restart" | "freeze" | "wake" | "pause" | "resume" => {
                let (slot, used) = self.worker_ref(&span, &words[1..])?;
                (worker_action(verb, slot), 1 + used)
            }
            "stall" => self.stall(&span, &words[1..])?,
            "advance" | "work" => (self.clock_action(&span, verb, words.get(1).copied())?, 2),
            "redrive" | "heal" => (self.message_action(&span, verb, words.get(1).copied())?, 2),
            "heartbeats" | "heartbeat" | "leasing" | "idempotency" => {
                let on = self.on_off(&span, verb, words.get(1).copied())?;
                let action = match verb {
                    "heartbeats" | "heartbeat" => Action::Heartbeats(on),
                    "leasing" => Action::Leasing(on),
                    _ => Action::Idempotency(on),
                };
                (action, 2)
            }
            "workers" | "batch" => (self.crew_action(&span, verb, words.get(1).copied())?, 2),
            "add-payment" => {
                let n = match words.get(1) {
                    Some(w) => self.bounded(&span, Some(w), "add-payment", 1, MAX_ADD_PAYMENT)?,
                    None => 1,
                };
                (Action::AddPayment(n as u64), 2)
            }
            "run-until" => {
                let c = self.condition(&span, words.get(1).copied())?;
                (Action::RunUntil(c), 2)
            }
            "" => return Err(self.p.err(span, "an empty action")),
            other => {
                return Err(self.p.err(
                    span,
                    &format!(
                        "unknown action '{}' (known: {})",
                        quoted(other),
                        crate::lesson::reference::action_verbs().join(", ")
                    ),
                ))
            }
        };
        match words.get(used) {
            Some(w) => Err(self.p.err(
                span,
                &format!(
                    "unexpected '{}' in '{}'",
                    quoted(w),
                    quoted(a.get_ref().trim())
                ),
            )),
            None => self.allowed_by_exercise(span, action),
        }
    }

    /// `workers N` and `batch K`.
    pub(super) fn crew_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        n: Option<&str>,
    ) -> Result<Action, Mistake> {
        let (max, what) = match verb {
            "workers" => (MAX_WORKERS, "workers"),
            _ => (MAX_BATCH, "batch"),
        };
        let n = self.bounded(span, n, what, 1, max as i64)? as usize;
        Ok(if verb == "workers" {
            if self.crew_change.get().is_none() {
                self.crew_change.set(Some(self.p.line_of(span.start)));
            }
            Action::Workers(n)
        } else {
            Action::Batch(n)
        })
    }

    /// `advance MS` and `work MS` (an `ms` suffix is allowed).
    pub(super) fn clock_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        word: Option<&str>,
    ) -> Result<Action, Mistake> {
        let ms = self.bounded(
            span,
            word.map(|w| w.strip_suffix("ms").unwrap_or(w)),
            verb,
            0,
            MAX_CLOCK_MS,
        )?;
        if verb == "advance" {
            return Ok(Action::Advance { ms });
        }
        // Each interval is a round of heartbeats: a short interval makes a long step slow.
        let beats = (ms + self.beat_ms - 1) / self.beat_ms;
        if beats > MAX_WORK_BEATS {
            return Err(self.p.err(
                span.clone(),
                &format!(
                    "work {ms} is {beats} heartbeat intervals of {} ms, more than \
                     {MAX_WORK_BEATS} in one step",
                    self.beat_ms
                ),
            ));
        }
        Ok(Action::Work { ms })
    }

    /// `redrive PAY-002|all` and `heal PAY-002|all`.
    pub(super) fn message_action(
        &self,
        span: &Range<usize>,
        verb: &str,
        word: Option<&str>,
    ) -> Result<Action, Mistake> {
        let which = match word {
            Some("all") => None,
            Some(w) => Some(self.message(span, w)?),
            None => {
                return Err(self
                    .p
                    .err(span.clone(), &format!("{verb} takes a message or all")))
            }
        };
        Ok(if verb == "redrive" {
            Action::Redrive(which)
        } else {
            Action::Heal(which)
        })
    }
}

/// `act W`, `beat W`, `crash W`, `restart W`, `freeze W`, `wake W` (`pause W` and
/// `resume W`, the words older files used, read as freeze and wake).
pub(super) fn worker_action(verb: &str, slot: usize) -> Action {
    match verb {
        "act" => Action::Act { slot },
        "beat" => Action::Beat { slot },
        "crash" => Action::Crash { slot },
        "restart" => Action::Restart { slot },
        "freeze" | "pause" => Action::Pause { slot },
        _ => Action::Resume { slot },
    }
}
