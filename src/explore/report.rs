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
    let on: Vec<&str> = [
        (o.idempotent, "the idempotent provider"),
        (o.heartbeats, "heartbeats"),
    ]
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
}

/// The bound that stopped a search before it was exhaustive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    States,
    Memory,
}

impl Cut {
    pub fn flag(self) -> &'static str {
        match self {
            Cut::States => "max-states",
            Cut::Memory => "max-memory",
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
        self.verdicts.iter().map(|v| v.count).sum()
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
            "cut": self.cut.map(Cut::flag),
            "exhaustive": self.exhaustive,
            "closed": self.closed,
            "reduction": if o.reduced() { "workers" } else { "none" },
            "states": self.states,
            "schedules": self.schedules,
            "depth": self.depth,
            "seconds": self.elapsed.as_secs_f64(),
            "violations": self.verdicts.iter().map(|v| serde_json::json!({
                "check": v.check.name(),
                "count": v.count,
                "shortest": v.steps(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The report as text: the search's reach, then each check with its verdict and a
    /// shortest counterexample.
    pub fn text(&self) -> String {
        let o = &self.options;
        let mut out = format!(
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
            },
            self.elapsed.as_secs_f64()
        );
        for v in &self.verdicts {
            if v.count == 0 {
                out.push_str(&format!(
                    "  ok    {}: no schedule breaks it\n",
                    v.check.name()
                ));
                continue;
            }
            out.push_str(&format!(
                "  FAIL  {}: broken in {}; a shortest schedule ({}):\n",
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
        out
    }
}
