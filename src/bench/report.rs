//! What a bench measured: each run's figures, where a leased message's time went, the
//! scaling of the per-message cost, and the report as text (JSON is its `Serialize`).

use serde::Serialize;

use super::options::Mode;
use super::pg_report::PgComparison;
use super::target::Target;

#[derive(Debug, Clone, Serialize)]
pub struct BenchRun {
    pub mode: Mode,
    /// Which round of the bench measured it (1 to `--rounds`).
    pub round: usize,
    pub workers: usize,
    pub batch: usize,
    pub msgs_per_s: f64,
    /// msgs_per_s over half the ceiling: a message costs two write transactions.
    pub ratio: f64,
    /// The ceiling measured around this run (mean of the bursts before and after it).
    pub ceiling_txn_per_s: f64,
    /// Messages each worker wrote a result for, in worker order.
    pub per_worker: Vec<u64>,
    pub seconds: f64,
    pub exactly_once: bool,
    pub passed: bool,
    pub busy_met: u64,
    /// Where a leased message's time went, summed over the workers, per message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSplit>,
}

/// Microseconds per message spent in each part of the leased loop, summed over the
/// workers (so with several workers they add up to more than the wall time per message):
/// the claim transaction, the provider call, the finalize transaction, and of the two
/// transactions the time spent writing their `LeaseEvents` rows. A transaction's time
/// includes its wait for the write lock.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct CostSplit {
    pub claim_us: f64,
    pub provider_us: f64,
    pub finalize_us: f64,
    pub events_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub small_messages: u64,
    pub large_messages: u64,
    pub small_us_per_msg: f64,
    pub large_us_per_msg: f64,
    /// large / small: 1.0 means a claim costs the same however long the backlog.
    pub cost_ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub synchronous: String,
    pub messages: u64,
    /// Median of every ceiling burst of the run.
    pub ceiling_txn_per_s: f64,
    pub runs: Vec<BenchRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// The targets with what this run measured (filled in by `run`).
    pub targets: Vec<Target>,
    /// The leased loop on PostgreSQL beside SQLite, with `--db postgres://...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<PgComparison>,
}

impl BenchReport {
    /// The targets of this lab on this kind of machine, with what this run measured: each
    /// the median of its figure over the rounds, every figure taken within one round.
    pub fn targets(&self) -> Vec<Target> {
        let ratio = |mode: Mode, round: usize| {
            self.runs
                .iter()
                .find(|r| r.mode == mode && r.workers == 4 && r.round == round)
                .map(|r| r.ratio)
        };
        let over = |mode: Mode| {
            move |k: usize| {
                ratio(Mode::Leased, k)
                    .zip(ratio(mode, k))
                    .map(|(leased, other)| leased / other.max(f64::MIN_POSITIVE))
            }
        };
        let last = self.runs.iter().map(|r| r.round).max().unwrap_or(1);
        let target = |what, bound, figure: &dyn Fn(usize) -> Option<f64>| {
            let rounds: Vec<f64> = (1..=last).filter_map(figure).collect();
            Target {
                what,
                bound,
                at_most: false,
                got: (!rounds.is_empty()).then(|| median(&rounds)),
                rounds,
            }
        };
        let mut v = vec![
            target("leased, 4 workers, ratio to half the ceiling", 0.5, &|k| {
                ratio(Mode::Leased, k)
            }),
            target(
                "batch claims, 4 workers, ratio to half the ceiling",
                1.0,
                &|k| ratio(Mode::Batch, k),
            ),
            target(
                "leased, 4 workers, over the plain claim loop with 4 workers",
                1.3,
                &over(Mode::Plain),
            ),
        ];
        if self.runs.iter().any(|r| r.mode == Mode::Effectum) {
            v.push(target(
                "leased, 4 workers, over effectum with 4 workers",
                1.5,
                &over(Mode::Effectum),
            ));
        }
        if let Some(s) = &self.scaling {
            v.push(Target {
                what: "per-message cost, largest outbox over 1,000 messages",
                bound: 1.3,
                at_most: true,
                got: Some(s.cost_ratio),
                rounds: vec![s.cost_ratio],
            });
        }
        v
    }

    pub fn passed(&self) -> bool {
        self.runs.iter().all(|r| r.passed || r.mode == Mode::Naive)
            && self.postgres.as_ref().is_none_or(PgComparison::passed)
    }

    /// Whether the runs were measured in more than one round (`--rounds`).
    fn in_rounds(&self) -> bool {
        self.runs.iter().any(|r| r.round > 1)
    }

    /// Where a leased message's time went, a line per leased run.
    fn cost_text(&self) -> String {
        let mut t = String::new();
        for r in &self.runs {
            let Some(c) = &r.cost else { continue };
            if t.is_empty() {
                t += "\nper leased message, summed over the workers (a transaction's time includes its wait for the lock):\n";
            }
            let round = if self.in_rounds() {
                format!(", round {}", r.round)
            } else {
                String::new()
            };
            t += &format!(
                "leased, {} worker{}{round}: claim {:.1} us, provider {:.1} us, finalize {:.1} us; of the two transactions, writing the event rows {:.1} us\n",
                r.workers,
                if r.workers == 1 { "" } else { "s" },
                c.claim_us,
                c.provider_us,
                c.finalize_us,
                c.events_us
            );
        }
        t
    }

    pub fn text(&self) -> String {
        let mut t = format!(
            "leaselab bench: {} messages, synchronous={}\nceiling: {:.0} write transactions/s on one connection (median of the bursts around each run; half of it, {:.0}/s, is the message ceiling: a message costs two)\n\n",
            self.messages,
            self.synchronous,
            self.ceiling_txn_per_s,
            self.ceiling_txn_per_s / 2.0
        );
        let rounds = self.in_rounds();
        t += if rounds {
            "mode     workers batch round     msgs/s  ceiling  ratio  once  per-worker share\n"
        } else {
            "mode     workers batch     msgs/s  ceiling  ratio  once  per-worker share\n"
        };
        for r in &self.runs {
            let total: u64 = r.per_worker.iter().sum::<u64>().max(1);
            let shares = r
                .per_worker
                .iter()
                .map(|n| format!("{:.0}%", 100.0 * *n as f64 / total as f64))
                .collect::<Vec<_>>()
                .join(" ");
            let round = if rounds {
                format!(" {:>5}", r.round)
            } else {
                String::new()
            };
            t += &format!(
                "{:<8} {:>7} {:>5}{round} {:>10.0} {:>8.0} {:>6.2}  {:<4}  {}\n",
                serde_json::to_value(r.mode)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                r.workers,
                r.batch,
                r.msgs_per_s,
                r.ceiling_txn_per_s,
                r.ratio,
                if r.exactly_once { "yes" } else { "NO" },
                shares
            );
        }
        t += &self.cost_text();
        if let Some(s) = &self.scaling {
            t += &format!(
                "\nper-message cost: {:.1} us at {} messages, {:.1} us at {} messages (x{:.2})\n",
                s.small_us_per_msg,
                s.small_messages,
                s.large_us_per_msg,
                s.large_messages,
                s.cost_ratio
            );
        }
        for target in self.targets() {
            t += &format!("target: {target}\n");
        }
        if let Some(pg) = &self.postgres {
            t += &pg.text();
        }
        t += "\nNaive runs with more than one worker process messages more than once: that is the lesson, not a bench failure.\n";
        t
    }
}

/// The middle value of `v` (the upper one of an even count), 0 when empty.
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// "1 worker", "4 workers".
pub(crate) fn workers(n: usize) -> String {
    format!("{n} worker{}", if n == 1 { "" } else { "s" })
}
