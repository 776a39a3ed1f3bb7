//! The workers an action names: `Worker-A`, and after a stall the two of one name.

use std::ops::Range;

use crate::engine::text::quoted;
use crate::engine::worker_id::WorkerId;
use crate::lesson::format::Action;

use super::ctx::Ctx;
use super::error::Mistake;

impl Ctx<'_> {
    /// A worker an action names, from `words`: `Worker-A`, or after a stall of Worker-A,
    /// `Worker-A (stalled)` or `Worker-A (new)`. The slot, and how many words it took.
    pub(super) fn worker_ref(
        &self,
        span: &Range<usize>,
        words: &[&str],
    ) -> Result<(usize, usize), Mistake> {
        let word = words.first().copied();
        let base = self.worker(span, word)?;
        let word = word.unwrap_or_default();
        let stall = self.stalls.borrow().iter().find(|s| s.0 == base).copied();
        let qualifier = words.get(1).copied().filter(|w| w.starts_with('('));
        let err = |msg: String| Err(self.p.err(span.clone(), &msg));
        match (qualifier, stall) {
            (None, None) => Ok((base, 1)),
            (None, Some((_, _, line))) => err(format!(
                "'{word}' is two workers since the stall at line {line}: write \
                 '{word} (stalled)' or '{word} (new)'"
            )),
            (Some("(stalled)"), Some((stalled, _, _))) => Ok((stalled, 2)),
            (Some("(new)"), Some((_, new, _))) => Ok((new, 2)),
            (Some(q), Some(_)) => err(format!(
                "unknown '{q}' after {word} (write (stalled) or (new))"
            )),
            (Some(q), None) => err(format!(
                "'{word} {q}': {word} has not stalled (a 'stall {word}' comes first)"
            )),
        }
    }

    /// `stall W`: a worker of the setup that has not stalled yet; the new worker takes the
    /// next slot after the setup's workers and the new workers of earlier stalls.
    pub(super) fn stall(
        &self,
        span: &Range<usize>,
        words: &[&str],
    ) -> Result<(Action, usize), Mistake> {
        let (slot, used) = self.worker_ref(span, words)?;
        if used > 1 {
            let msg = format!(
                "'{}' cannot stall: a worker stalls once, and the one started in its name \
                 does not",
                words[..used].join(" ")
            );
            return Err(self.p.err(span.clone(), &msg));
        }
        let mut stalls = self.stalls.borrow_mut();
        let new = self.workers + stalls.len();
        stalls.push((slot, new, self.p.line_of(span.start)));
        Ok((Action::Stall { slot, new }, 1 + used))
    }

    /// A lesson that stalls a worker keeps its crew: `workers N` would stop or renumber
    /// the worker started in a stalled one's name.
    pub(super) fn crew_and_stalls(&self) -> Vec<Mistake> {
        match (self.crew_change.get(), self.stalls.borrow().first()) {
            (Some(line), Some((_, _, stall))) => vec![self.p.mistake(
                line,
                format!(
                    "workers N cannot change the crew of a lesson that stalls a worker \
                     (line {stall})"
                ),
            )],
            _ => Vec::new(),
        }
    }

    pub(super) fn worker(&self, span: &Range<usize>, word: Option<&str>) -> Result<usize, Mistake> {
        let word = word.ok_or_else(|| self.p.err(span.clone(), "a worker is missing"))?;
        // `Worker-A#2` (a restart) is the same worker as `Worker-A`.
        let base = WorkerId::parse(word).map(WorkerId::base);
        (0..self.workers)
            .find(|slot| base == Some(WorkerId::first(*slot)))
            .ok_or_else(|| {
                let known: Vec<String> = (0..self.workers)
                    .map(|s| WorkerId::first(s).to_string())
                    .collect();
                self.p.err(
                    span.clone(),
                    &format!(
                        "unknown worker '{}' (this lesson has {})",
                        quoted(word),
                        known.join(", ")
                    ),
                )
            })
    }
}
