//! The `[setup]` table: each number in its range, defaults for what it leaves out, and the
//! payments the lesson's steps count up to.

use std::ops::Range;

use toml::Spanned;

use crate::engine::outbox::{FinalizeGuard, RetryPolicy};
use crate::engine::provider::ProviderFaults;
use crate::engine::text::quoted;
use crate::engine::worker::MAX_BATCH;
use crate::lesson::format::{Setup, FORMAT_VERSION, MAX_ADD_PAYMENT, MAX_LESSON_MESSAGES};
use crate::setup::Reliability;

use super::error::Mistake;
use super::raw::{RawSetup, RawStep};
use super::source::Parser;

impl Parser<'_> {
    /// Messages a step may name: the seeded ones and every payment the lesson adds, at most
    /// [`MAX_LESSON_MESSAGES`]. A bad `add-payment` count is refused later, at its line.
    pub(super) fn lesson_messages(
        &self,
        steps: &[Spanned<RawStep>],
        seeded: u64,
    ) -> Result<u64, Mistake> {
        let mut total = seeded;
        for a in steps.iter().flat_map(|s| &s.get_ref().actions) {
            let mut words = a.get_ref().split_whitespace();
            if words.next() != Some("add-payment") {
                continue;
            }
            let n = match words.next().map(str::parse::<u64>) {
                None => 1,
                Some(Ok(n)) if (1..=MAX_ADD_PAYMENT as u64).contains(&n) => n,
                Some(_) => continue,
            };
            total += n;
            if total > MAX_LESSON_MESSAGES {
                return Err(self.err(
                    a.span(),
                    &format!(
                        "add-payment {n} brings the lesson to {total} payments, more than \
                         {MAX_LESSON_MESSAGES}"
                    ),
                ));
            }
        }
        Ok(total)
    }

    /// `max_attempts`, `backoff_ms` and `backoff_cap_ms` over the defaults.
    pub(super) fn retry(&self, s: &RawSetup) -> Result<RetryPolicy, Mistake> {
        let d = RetryPolicy::default();
        let max = self.number(&s.max_attempts, "max_attempts", 1, 1_000)?;
        let base = self.number(&s.backoff_ms, "backoff_ms", 0, 3_600_000)?;
        let cap = self.number(&s.backoff_cap_ms, "backoff_cap_ms", 0, 3_600_000)?;
        let base = base.unwrap_or(d.base_ms);
        RetryPolicy::new(
            base,
            cap.unwrap_or(d.cap_ms.max(base)),
            max.unwrap_or(d.max_attempts),
        )
        .map_err(|e| {
            let span = s.backoff_cap_ms.as_ref().map_or(0..0, |v| v.span());
            self.err(span, &e)
        })
    }

    pub(super) fn number(
        &self,
        v: &Option<Spanned<i64>>,
        what: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, Mistake> {
        match v {
            None => Ok(None),
            Some(n) if (min..=max).contains(n.get_ref()) => Ok(Some(*n.get_ref())),
            Some(n) => Err(self.err(
                n.span(),
                &format!("{what} = {} is outside {min}-{max}", n.get_ref()),
            )),
        }
    }

    pub(super) fn format_version(&self, v: &Option<Spanned<i64>>) -> Result<(), Mistake> {
        match v {
            None => Err(self.err(0..0, "format_version is missing (write format_version = 1)")),
            Some(v) if *v.get_ref() != FORMAT_VERSION => Err(self.err(
                v.span(),
                &format!(
                    "format_version {} is not supported (this leaselab reads {FORMAT_VERSION})",
                    v.get_ref()
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// The `[setup]` table, each number in its range, defaults for what it leaves out.
    pub(super) fn setup(&self, s: &RawSetup) -> Result<Setup, Mistake> {
        let d = Setup::default();
        let mut setup = Setup {
            workers: self
                .number(&s.workers, "workers", 1, 26)?
                .unwrap_or(d.workers as i64) as usize,
            messages: self
                .number(&s.messages, "messages", 1, 1_000)?
                .unwrap_or(d.messages as i64) as u64,
            lease_ms: self
                .number(&s.lease_ms, "lease_ms", 1, 3_600_000)?
                .unwrap_or(d.lease_ms),
            process_ms: self
                .number(&s.process_ms, "process_ms", 0, 600_000)?
                .unwrap_or(d.process_ms),
            leasing: s.leasing.unwrap_or(d.leasing),
            idempotent_provider: s.idempotent_provider.unwrap_or(d.idempotent_provider),
            reliability: Reliability {
                heartbeats: s.heartbeats.unwrap_or(d.reliability.heartbeats),
                heartbeat_ms: self.number(&s.heartbeat_ms, "heartbeat_ms", 1, 3_600_000)?,
                retry: self.retry(s)?,
                faults: ProviderFaults::default(),
            },
            batch: self
                .number(&s.batch, "batch", 1, MAX_BATCH as i64)?
                .unwrap_or(d.batch as i64) as usize,
            finalize_guard: self.finalize_guard(&s.finalize_guard)?,
            exercise: None,
        };
        if let Err(e) = setup.reliability.check(setup.lease_ms) {
            let span = s.heartbeat_ms.as_ref().map_or(0..0, |v| v.span());
            return Err(self.err(span, &e));
        }
        setup.reliability.faults = self.faults(s, setup.messages)?;
        Ok(setup)
    }

    /// `finalize_guard = "fencing-token"` (leaselab's) or `"owner"` (the owner's name only).
    pub(super) fn finalize_guard(
        &self,
        v: &Option<Spanned<String>>,
    ) -> Result<FinalizeGuard, Mistake> {
        let Some(v) = v else {
            return Ok(FinalizeGuard::default());
        };
        [FinalizeGuard::FencingToken, FinalizeGuard::OwnerOnly]
            .into_iter()
            .find(|g| g.name() == v.get_ref())
            .ok_or_else(|| {
                self.err(
                    v.span(),
                    &format!(
                        "finalize_guard = '{}' is not a guard (fencing-token or owner)",
                        v.get_ref()
                    ),
                )
            })
    }

    /// The provider failures a lesson asks for, each naming a seeded payment.
    pub(super) fn faults(&self, s: &RawSetup, messages: u64) -> Result<ProviderFaults, Mistake> {
        let key_of = |word: &str, span: Range<usize>| -> Result<String, Mistake> {
            let n = word
                .strip_prefix("PAY-")
                .and_then(|d| d.parse::<u64>().ok())
                .filter(|n| (1..=messages).contains(n))
                .ok_or_else(|| {
                    self.err(
                        span,
                        &format!(
                            "'{}' is not a seeded payment (PAY-001 to PAY-{messages:03})",
                            quoted(word)
                        ),
                    )
                })?;
            Ok(crate::engine::store::payment_key(n))
        };
        let mut faults = ProviderFaults::default();
        for (key, n) in s.fail_first.iter().flatten() {
            let n = self
                .number(&Some(n.clone()), "fail_first", 0, 1_000_000)?
                .unwrap_or(0);
            faults.fail_first.insert(key_of(key, 0..0)?, n as u64);
        }
        for key in s.fail_always.iter().flatten() {
            faults
                .fail_always
                .insert(key_of(key.get_ref(), key.span())?);
        }
        Ok(faults)
    }
}
