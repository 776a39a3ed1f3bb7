//! An `expect` line: a figure and the value it must have.

use std::ops::Range;

use toml::Spanned;

use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::engine::text::quoted;
use crate::lesson::format::{ledger_figure, Expect, Figure, LEDGER_FIGURES};

use super::ctx::Ctx;
use super::error::Mistake;
use super::words::names;

impl Ctx<'_> {
    pub(super) fn expect(&self, e: &Spanned<String>) -> Result<Expect, Mistake> {
        let span = e.span();
        // Read as its words, and shown as them one space apart: a tab, a line or paragraph
        // separator or a control character that counts as a space (\u000b, \u0085) between
        // two words never reaches the screen, and `side\u0085effects` reads as it parsed.
        let raw = e.get_ref();
        let words: Vec<&str> = raw.split_whitespace().collect();
        let text = words.join(" ");
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        // The longest: `provider PAY-001 side effects 1`; a ledger name too long to be
        // one is said to be unknown below, with the names there are.
        if words.len() > 5 && words.first() != Some(&"ledger") {
            return bad(&format!(
                "unexpected '{}' in '{}'",
                quoted(words[5]),
                quoted(&text)
            ));
        }
        let (figure, value) = match words.first().copied() {
            Some("ledger") => {
                // `ledger NAME N`, the name one or two words. The words after `ledger` that
                // name a figure whole are that figure with its number missing, not a name
                // of one word fewer and a number (`ledger dead letters`).
                let rest = words.get(1..).unwrap_or(&[]).join(" ");
                let (name, n) = match words.len() {
                    _ if ledger_figure(&rest).is_some() => (rest, None),
                    0..=2 => (rest, None),
                    k => (words[1..k - 1].join(" "), words.last().copied()),
                };
                let Some(f) = ledger_figure(&name) else {
                    let known: Vec<&str> = LEDGER_FIGURES.iter().map(|f| f.name).collect();
                    return bad(&format!(
                        "unknown ledger figure '{}'{} (known: {})",
                        quoted(&name),
                        not_ascii(&name),
                        known.join(", ")
                    ));
                };
                let v = self.count(&span, n, f.name)?;
                (Figure::Ledger(f.name), v.to_string())
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
            Some("provider") => self.provider_figure(&span, &words)?,
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

    /// `provider calls N`, `provider side effects N`, and the same for one key:
    /// `provider PAY-001 calls N` (`effects` is read as `side effects`).
    fn provider_figure(
        &self,
        span: &Range<usize>,
        words: &[&str],
    ) -> Result<(Figure, String), Mistake> {
        let bad = |msg: &str| Err(self.p.err(span.clone(), msg));
        let is_figure = |w: &str| matches!(w, "calls" | "side" | "effects");
        let (key, rest) = match words.get(1).copied() {
            None => return bad("provider takes calls or side effects"),
            Some(w) if is_figure(w) => (None, &words[1..]),
            Some(k) => (Some(self.message(span, k)?), words.get(2..).unwrap_or(&[])),
        };
        let (name, n) = match rest {
            [] => ("", None),
            [name] => (*name, None),
            [name, rest @ ..] if *name != "side" => (*name, rest.first().copied()),
            ["side", "effects", rest @ ..] => ("side effects", rest.first().copied()),
            [name, ..] => (*name, None),
        };
        let figure = match name {
            "calls" => Figure::ProviderCalls(key),
            "side effects" | "effects" => Figure::ProviderEffects(key),
            w => {
                return bad(&format!(
                    "'{}' is not a provider figure (calls, side effects)",
                    quoted(w)
                ))
            }
        };
        let shown = if name == "calls" {
            "calls"
        } else {
            "side effects"
        };
        let v = self.count(span, n, shown)?;
        if let Some(extra) = rest.get(if name == "side effects" { 3 } else { 2 }) {
            return bad(&format!("unexpected '{}'", quoted(extra)));
        }
        Ok((figure, v.to_string()))
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

/// `, whose 'е' is U+0435, not a plain letter`: said of a name with a character outside
/// ASCII, which every figure's name is written in, so that a look-alike (a Cyrillic `е`, a
/// zero-width space) is told from the name it looks like; empty for a plain name.
fn not_ascii(name: &str) -> String {
    match name.chars().find(|c| !c.is_ascii()) {
        Some(c) => format!(
            ", whose '{}' is U+{:04X}, not a plain letter",
            quoted(&c.to_string()),
            u32::from(c)
        ),
        None => String::new(),
    }
}
