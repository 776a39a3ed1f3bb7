//! An `expect` line: a figure and the value it must have.

use std::ops::Range;

use toml::Spanned;

use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::engine::text::quoted;
use crate::lesson::format::{Expect, Figure, LEDGER_FIGURES};

use super::ctx::Ctx;
use super::error::Mistake;
use super::words::names;

impl Ctx<'_> {
    pub(super) fn expect(&self, e: &Spanned<String>) -> Result<Expect, Mistake> {
        let span = e.span();
        let text = e.get_ref().trim().to_string();
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        if words.len() > 4 {
            return bad(&format!(
                "unexpected '{}' in '{}'",
                quoted(words[4]),
                quoted(&text)
            ));
        }
        let (figure, value) = match words.first().copied() {
            Some("ledger") => {
                let name = words.get(1).copied().unwrap_or("");
                let Some((name, _)) = LEDGER_FIGURES.iter().find(|(n, _)| *n == name) else {
                    let known: Vec<&str> = LEDGER_FIGURES.iter().map(|(n, _)| *n).collect();
                    return bad(&format!(
                        "unknown ledger figure '{}' (known: {})",
                        quoted(name),
                        known.join(", ")
                    ));
                };
                let v = self.count(&span, words.get(2).copied(), name)?;
                (Figure::Ledger(name), v.to_string())
            }
            Some("outbox") => {
                let status = self.status(&span, words.get(1).copied(), OutboxStatus::ALL)?;
                let v = self.count(&span, words.get(2).copied(), status.as_str())?;
                (Figure::Outbox(status), v.to_string())
            }
            Some("payments") => {
                let status = self.status(&span, words.get(1).copied(), PaymentStatus::ALL)?;
                let v = self.count(&span, words.get(2).copied(), status.as_str())?;
                (Figure::Payments(status), v.to_string())
            }
            Some("provider") => {
                // `provider calls N` or `provider PAY-001 calls N`.
                let (key, rest) = match words.get(1).copied() {
                    Some(w @ ("calls" | "effects")) => (None, (w, words.get(2).copied())),
                    Some(k) => (
                        Some(self.message(&span, k)?),
                        (words.get(2).copied().unwrap_or(""), words.get(3).copied()),
                    ),
                    None => return bad("provider takes calls or effects"),
                };
                let v = self.count(&span, rest.1, rest.0)?;
                match rest.0 {
                    "calls" => (Figure::ProviderCalls(key), v.to_string()),
                    "effects" => (Figure::ProviderEffects(key), v.to_string()),
                    w => {
                        return bad(&format!(
                            "'{}' is not a provider figure (calls, effects)",
                            quoted(w)
                        ))
                    }
                }
            }
            Some(m) => self.message_figure(&span, m, &words, &text)?,
            None => return bad("an empty expectation"),
        };
        Ok(Expect {
            text,
            line: self.p.line_of(span.start),
            figure,
            value,
        })
    }

    /// `PAY-001 status Processed` and the other figures of one message.
    pub(super) fn message_figure(
        &self,
        span: &Range<usize>,
        m: &str,
        words: &[&str],
        text: &str,
    ) -> Result<(Figure, String), Mistake> {
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        let one_of =
            |word: Option<&str>, allowed: &[String], what: &str| -> Result<String, Mistake> {
                match word {
                    Some(w) if allowed.iter().any(|a| a == w) => Ok(w.to_string()),
                    Some(w) => Err(self.p.err(
                        span.clone(),
                        &format!(
                            "'{}' is not a {what} (one of {})",
                            quoted(w),
                            allowed.join(", ")
                        ),
                    )),
                    None => Err(self.p.err(span.clone(), &format!("the {what} is missing"))),
                }
            };
        let msg = self.message(span, m)?;
        let value = words.get(2).copied();
        let figure = match words.get(1).copied() {
            Some("status") => (
                Figure::Status(msg),
                one_of(value, &names(OutboxStatus::ALL), "status")?,
            ),
            Some("payment") => (
                Figure::Payment(msg),
                one_of(value, &names(PaymentStatus::ALL), "payment status")?,
            ),
            Some("owner") => {
                let w = value.ok_or_else(|| self.p.err(span.clone(), "the owner is missing"))?;
                // A name as LockedBy holds it: two workers of one name are one owner here.
                if w != "none" {
                    self.worker(span, Some(w))?;
                }
                (Figure::Owner(msg), w.to_string())
            }
            Some("lease") => (
                Figure::Lease(msg),
                self.count(span, value, "lease")?.to_string(),
            ),
            Some("processed") => (
                Figure::Processed(msg),
                self.count(span, value, "processed")?.to_string(),
            ),
            Some("attempts") => (
                Figure::Attempts(msg),
                self.count(span, value, "attempts")?.to_string(),
            ),
            Some(w) => {
                return bad(&format!(
                    "unknown message figure '{}' (known: status, owner, lease, payment, processed, attempts)",
                    quoted(w)
                ))
            }
            None => {
                return bad(
                    "a message figure is missing (status, owner, lease, payment, processed, attempts)",
                )
            }
        };
        if words.len() > 3 {
            return bad(&format!(
                "unexpected '{}' in '{}'",
                quoted(words[3]),
                quoted(text)
            ));
        }
        Ok(figure)
    }
}
