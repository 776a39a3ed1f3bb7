//! What a search found: each check's verdict with a shortest counterexample, told step by
//! step, and the report as text or JSON.

use std::time::Duration;

use super::check::Check;
use super::options::ExploreOptions;
use super::world::{Move, World};

/// A schedule step as a counterexample tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    pub mv: Move,
    /// The world before the step (who the workers were).
    pub before: World,
    pub text: String,
}

/// One check's verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub check: Check,
    /// Distinct states reached in which it is broken: each stands for every schedule that
    /// reaches it.
    pub count: u64,
    /// A shortest schedule that breaks it, and the message it broke on.
    pub shortest: Vec<Told>,
    pub about: String,
}

impl Verdict {
    pub fn steps(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .shortest
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{}. {}.", i + 1, capitalized(&t.text)))
            .collect();
        if let Some(last) = out.last_mut() {
            last.pop();
            last.push_str(&format!(": {}.", self.check.consequence(&self.about)));
        }
        out
    }
}

/// `1 worker`, `2 workers`.
pub fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What the world has beside its mode: ` with the idempotent provider and heartbeats`.
fn with(o: &ExploreOptions) -> String {
    // A student's statements are graded with the provider that honours the idempotency
    // key, as the live `--sql` dashboard's: the checks judge the SQL, not the provider.
    let provider = match o.sql {
        Some(_) => {
            "the idempotent provider (as the live --sql dashboard's: the checks judge \
                    the SQL, not the provider)"
        }
        None => "the idempotent provider",
    };
    let on: Vec<&str> = [(o.idempotent, provider), (o.heartbeats, "heartbeats")]
        .into_iter()
        .filter_map(|(on, what)| on.then_some(what))
        .collect();
    match on.is_empty() {
        true => String::new(),
        false => format!(" with {}", on.join(" and ")),
    }
}

fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Report {
    pub options: ExploreOptions,
    /// Nothing was cut by `--max-states` or `--max-memory`: every schedule up to the depth
    /// was run.
    pub exhaustive: bool,
    /// Which bound cut the search, if one did.
    pub cut: Option<Cut>,
    /// The whole reachable space was explored before the depth limit.
    pub closed: bool,
    pub states: u64,
    /// Steps taken from explored states: every schedule, up to merging equal states.
    pub schedules: u64,
    pub depth: usize,
    pub elapsed: Duration,
    pub verdicts: Vec<Verdict>,
    /// A move was held back somewhere by `--max-expiries`, `--max-faults` or
    /// `--max-beats`: the verdicts hold for schedules within those bounds.
    pub bounded: bool,
    /// The longest schedule run: `--max-depth`, or less when the search stopped a few steps
    /// after a failure.
    pub searched_depth: usize,
    /// The file multiplies or divides the clock itself (`:now / 1000`): the instants its
    /// comparisons change at are not all known, so stuck is not judged and no verdict is
    /// safe; a schedule found to break a check still does.
    pub scaled: bool,
}

/// Said where a search of a file that scales the clock cannot judge.
const SCALED: &str = "the file multiplies or divides :now or :lease_until, so its times are \
     in other units and the search does not know every instant at which its comparisons \
     change";

/// What a search may say of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The search closed under its stated bounds and no check broke.
    Safe,
    /// A check broke: a schedule shows it.
    Broken,
    /// No check broke in what the search reached, but it did not reach every state: not a
    /// pass.
    Unfinished,
}

impl Outcome {
    /// The exit code of `explore` (and of a grade): 0 safe, 1 broken, 4 not finished.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Safe => 0,
            Outcome::Broken => 1,
            Outcome::Unfinished => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Safe => "safe",
            Outcome::Broken => "broken",
            Outcome::Unfinished => "unfinished",
        }
    }
}

/// The bound that stopped a search before it was exhaustive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    States,
    Memory,
    Time,
}

impl Cut {
    pub fn flag(self) -> &'static str {
        match self {
            Cut::States => "max-states",
            Cut::Memory => "max-memory",
            Cut::Time => "max-seconds",
        }
    }
}

impl Report {
    /// The checks some schedule broke, in the report's order.
    pub fn broken(&self) -> Vec<Check> {
        self.verdicts
            .iter()
            .filter(|v| v.count > 0)
            .map(|v| v.check)
            .collect()
    }

    pub fn bad_schedules(&self) -> u64 {
        self.verdicts
            .iter()
            .filter(|v| v.check.fails())
            .map(|v| v.count)
            .sum()
    }

    /// Safe only of a search that closed under its stated bounds.
    pub fn outcome(&self) -> Outcome {
        if self.bad_schedules() > 0 {
            Outcome::Broken
        } else if self.closed && self.cut.is_none() && !self.scaled {
            Outcome::Safe
        } else {
            Outcome::Unfinished
        }
    }

    /// The bound a verdict holds within, in words: `with at most 2 lease expiries per
    /// message`, or nothing when no move of the clock was held back.
    fn within(&self) -> String {
        let o = &self.options;
        match self.bounded {
            true => format!(
                " with at most {} per message, {} and {}",
                plural(u64::from(o.max_expiries), "lease expiry").replace("expirys", "expiries"),
                match o.max_faults {
                    1 => "1 crash or stall".to_string(),
                    n => format!("{n} crashes or stalls"),
                },
                plural(u64::from(o.max_beats), "heartbeat")
            ),
            false => String::new(),
        }
    }

    /// What "no schedule breaks it" may truly say of this search.
    fn none_breaks(&self) -> String {
        let within = self.within();
        match (self.cut, self.closed) {
            (None, true) => format!("no schedule{within} breaks it"),
            (None, false) => format!(
                "no schedule of up to {}{within} breaks it",
                plural(self.searched_depth as u64, "step")
            ),
            (Some(cut), _) => format!(
                "no schedule the search ran{within} breaks it (cut at --{})",
                cut.flag()
            ),
        }
    }

    /// Why a search that found nothing is not a pass, and what to try.
    fn unfinished(&self) -> String {
        let o = &self.options;
        let why = match self.cut {
            None if self.closed => SCALED.to_string(),
            None => format!(
                "schedules longer than {} were not run",
                plural(o.max_depth as u64, "step")
            ),
            Some(Cut::States) => format!("it stopped at --max-states {}", o.max_states),
            Some(Cut::Memory) => format!("it stopped at --max-memory {} MiB", o.max_memory_mib),
            Some(Cut::Time) => format!("it stopped at --max-seconds {}", o.max_seconds),
        };
        format!(
            "NOT A PASS: the search did not reach every state ({why}), so a longer schedule may \
             still break a check. Try a larger --max-depth, --max-states or --max-seconds, or a \
             smaller world (--messages 1).\n"
        )
    }

    /// The report for `--json`.
    pub fn json(&self) -> serde_json::Value {
        let o = &self.options;
        serde_json::json!({
            "workers": o.workers,
            "messages": o.messages,
            "mode": if o.sql.is_some() { "sql" } else { o.mode.name() },
            "sql": o.sql.as_ref().map(|ex| crate::engine::text::printable(&ex.file).into_owned()),
            "idempotent": o.idempotent,
            "faults": o.faults.shown(),
            "heartbeats": o.heartbeats,
            "max_depth": o.max_depth,
            "max_states": o.max_states,
            "max_memory_mib": o.max_memory_mib,
            "max_seconds": o.max_seconds,
            "max_expiries": o.sql.as_ref().map(|_| o.max_expiries),
            "max_faults": o.sql.as_ref().map(|_| o.max_faults),
            "max_beats": o.sql.as_ref().map(|_| o.max_beats),
            "bounded": self.bounded,
            "searched_depth": self.searched_depth,
            "scaled_clock": self.scaled,
            "outcome": self.outcome().name(),
            "cut": self.cut.map(Cut::flag),
            "exhaustive": self.exhaustive,
            "closed": self.closed,
            "reduction": if o.reduced() { "workers" } else { "none" },
            "states": self.states,
            "schedules": self.schedules,
            "depth": self.depth,
            "seconds": self.elapsed.as_secs_f64(),
            "violations": self.verdicts.iter().filter(|v| v.check.fails()).map(|v| serde_json::json!({
                "check": v.check.name(),
                "count": v.count,
                "shortest": v.steps(),
            })).collect::<Vec<_>>(),
            "gave_up": self.verdicts.iter().filter(|v| !v.check.fails()).map(|v| serde_json::json!({
                "count": v.count,
                "shortest": v.steps(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The report as text: the search's reach, then each check with its verdict and a
    /// shortest counterexample.
    /// The search's reach: its world, its states, and whether it closed or was cut.
    fn header(&self) -> String {
        let o = &self.options;
        format!(
            "explored {} x {}, {}{}, faults {}: {}{}, {} schedules, depth {}{} in {:.1} s\n",
            plural(o.workers as u64, "worker"),
            plural(o.messages, "message"),
            match &o.sql {
                Some(ex) => format!(
                    "the statements of {}",
                    crate::engine::text::quoted(&ex.file)
                ),
                None => o.mode.name().to_string(),
            },
            with(o),
            o.faults.shown(),
            plural(self.states, "state"),
            // The states kept: under the reduction, states equal up to renaming the
            // workers are one (`--no-reduction` counts every state).
            if o.reduced() {
                " up to renaming the workers"
            } else {
                ""
            },
            self.schedules,
            self.depth,
            match (self.cut, self.closed) {
                (None, true) => " (every reachable state)".to_string(),
                (None, false) if self.searched_depth < o.max_depth => format!(
                    " (every schedule up to {}: the search stopped a few steps after the first \
                     failure)",
                    plural(self.searched_depth as u64, "step")
                ),
                (None, false) => format!(
                    " (every schedule up to {})",
                    plural(o.max_depth as u64, "step")
                ),
                (Some(Cut::States), _) => {
                    format!(" (CUT at --max-states {}: not exhaustive)", o.max_states)
                }
                (Some(Cut::Memory), _) => format!(
                    " (CUT at --max-memory {} MiB: not exhaustive)",
                    o.max_memory_mib
                ),
                (Some(Cut::Time), _) =>
                    format!(" (CUT at --max-seconds {}: not exhaustive)", o.max_seconds),
            },
            self.elapsed.as_secs_f64()
        )
    }

    pub fn text(&self) -> String {
        let o = &self.options;
        let mut out = self.header();
        for v in &self.verdicts {
            if v.count == 0 && !v.check.fails() {
                continue;
            }
            if v.count == 0 && self.scaled && v.check == Check::Stuck {
                out.push_str(&format!("  --    stuck: not judged: {SCALED}\n"));
                continue;
            }
            if v.count == 0 {
                out.push_str(&format!(
                    "  ok    {}: {}\n",
                    v.check.name(),
                    self.none_breaks()
                ));
                continue;
            }
            let (label, how) = match v.check.fails() {
                true => ("FAIL", "broken"),
                false => ("note", "reached"),
            };
            out.push_str(&format!(
                "  {label}  {}: {how} in {}; a shortest schedule ({}):\n",
                v.check.name(),
                plural(v.count, "state"),
                plural(v.shortest.len() as u64, "step")
            ));
            for step in v.steps() {
                // A student's step carries its statements on the lines after its own.
                for (n, line) in step.lines().enumerate() {
                    let indent = if n == 0 { "        " } else { "           " };
                    out.push_str(&format!("{indent}{line}\n"));
                }
            }
            if v.check == Check::Stuck && !o.faults.jump {
                out.push_str(
                    "        (The clock stands still here: jump is not among the faults.)\n",
                );
            }
        }
        if self.outcome() == Outcome::Unfinished {
            out.push_str(&self.unfinished());
        }
        out
    }
}
