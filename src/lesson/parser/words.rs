//! The words of an action or an expectation: a message, a status, a number in its range,
//! on or off, a condition.

use std::ops::Range;

use crate::engine::text::quoted;
use crate::lesson::format::{Condition, MessageSel, MAX_EXPECTED};

use super::ctx::Ctx;
use super::error::Mistake;

impl Ctx<'_> {
    pub(super) fn message(&self, span: &Range<usize>, word: &str) -> Result<MessageSel, Mistake> {
        let digits = word.strip_prefix("PAY-").unwrap_or(word);
        let n: u64 = digits
            .parse()
            .ok()
            .filter(|_| digits.chars().all(|c| c.is_ascii_digit()))
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "'{}' is not a message (write PAY-001 or an outbox id)",
                        quoted(word)
                    ),
                )
            })?;
        if n == 0 || n > self.messages {
            return Err(self.p.err(
                span.clone(),
                &format!(
                    "unknown message '{}' (this lesson has PAY-001 to {})",
                    quoted(word),
                    crate::engine::store::payment_key(self.messages)
                ),
            ));
        }
        Ok(MessageSel {
            id: n as i64,
            key: crate::engine::store::payment_key(n),
        })
    }

    /// A status named in any case, one of `all`.
    pub(super) fn status<S: Copy + std::fmt::Display>(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
        all: &[S],
    ) -> Result<S, Mistake> {
        let word = word.unwrap_or("");
        all.iter()
            .copied()
            .find(|s| s.to_string().eq_ignore_ascii_case(word))
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "'{}' is not a status (one of {})",
                        quoted(word),
                        names(all).join(", ")
                    ),
                )
            })
    }

    /// A whole number from 0 to [`MAX_EXPECTED`].
    pub(super) fn count(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
        what: &str,
    ) -> Result<i64, Mistake> {
        self.bounded(span, word, what, 0, MAX_EXPECTED)
    }

    /// A whole number from `min` to `max`, written in digits alone.
    pub(super) fn bounded(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
        what: &str,
        min: i64,
        max: i64,
    ) -> Result<i64, Mistake> {
        let word = word.ok_or_else(|| self.p.err(span.clone(), &format!("{what} is missing")))?;
        let n = word
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| word.parse::<i64>().ok())
            .flatten()
            .ok_or_else(|| {
                self.p.err(
                    span.clone(),
                    &format!(
                        "bad number '{}' for {what} (a whole number, {min}-{max})",
                        quoted(word)
                    ),
                )
            })?;
        if !(min..=max).contains(&n) {
            let msg = format!("{what} {n} is outside {min}-{max}");
            return Err(self.p.err(span.clone(), &msg));
        }
        Ok(n)
    }

    pub(super) fn on_off(
        &self,
        span: &Range<usize>,
        verb: &str,
        word: Option<&str>,
    ) -> Result<bool, Mistake> {
        match word {
            Some("on") => Ok(true),
            Some("off") => Ok(false),
            _ => Err(self.p.err(span.clone(), &format!("{verb} takes on or off"))),
        }
    }

    pub(super) fn condition(
        &self,
        span: &Range<usize>,
        word: Option<&str>,
    ) -> Result<Condition, Mistake> {
        match word {
            Some("drained") => Ok(Condition::Drained),
            Some(w) => Err(self.p.err(
                span.clone(),
                &format!(
                    "unknown condition '{}' for run-until (known: drained)",
                    quoted(w)
                ),
            )),
            None => Err(self
                .p
                .err(span.clone(), "run-until needs a condition: drained")),
        }
    }
}

/// The spellings of a status type's values, as the schema stores them.
pub(super) fn names<S: std::fmt::Display>(all: &[S]) -> Vec<String> {
    all.iter().map(|s| s.to_string()).collect()
}
