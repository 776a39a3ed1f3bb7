//! The lesson author's reference: every setup key, action and expectation the parser
//! reads, each with an example. The parser names its actions from [`ACTIONS`], and the
//! tests check that every example here parses and that the parser reads no key, verb or
//! figure missing from these tables, so `docs/lesson-reference.md` (this module's output,
//! also `leaselab lessons --reference`) cannot drift from the code.

use std::fmt::Write as _;

use super::format::{
    FORMAT_VERSION, LEDGER_FIGURES, MAX_ADD_PAYMENT, MAX_CLOCK_MS, MAX_EXPECTED,
    MAX_LESSON_MESSAGES, MAX_REPORTED_ERRORS, MAX_SQL_PATH, MAX_WORK_BEATS,
};

/// One entry: how it is written, an example, and what it means.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub form: &'static str,
    pub example: &'static str,
    pub meaning: &'static str,
}

const fn entry(form: &'static str, example: &'static str, meaning: &'static str) -> Entry {
    Entry {
        form,
        example,
        meaning,
    }
}

/// The `[setup]` keys: each example is one `key = value` line.
pub const SETUP_KEYS: &[Entry] = &[
    entry("workers", "workers = 3", "worker threads, 1-26 (default 2)"),
    entry("messages", "messages = 4", "payments seeded, 1-1000 (default 6)"),
    entry("lease_ms", "lease_ms = 3000", "lease length in ms, 1-3600000 (default 3000)"),
    entry(
        "process_ms",
        "process_ms = 1200",
        "processing time in free play, 0-600000 (default 1200; steps skip it)",
    ),
    entry("leasing", "leasing = false", "claims take leases (default true)"),
    entry(
        "idempotent_provider",
        "idempotent_provider = true",
        "the provider answers a repeated call from its first answer, with no new side effect (default false)",
    ),
    entry(
        "heartbeats",
        "heartbeats = false",
        "a working worker extends its lease (default true; `heartbeat` is read too)",
    ),
    entry(
        "heartbeat_ms",
        "heartbeat_ms = 1000",
        "heartbeat interval, shorter than the lease (default a third of it)",
    ),
    entry("max_attempts", "max_attempts = 3", "attempts before the dead letter, 1-1000 (default 5)"),
    entry(
        "backoff_ms",
        "backoff_ms = 200",
        "backoff after the first failed attempt, doubled after each further one, 0-3600000 (default 100)",
    ),
    entry("backoff_cap_ms", "backoff_cap_ms = 1000", "the longest backoff, 0-3600000 (default 2000)"),
    entry(
        "fail_first",
        "fail_first = { \"PAY-002\" = 2 }",
        "the provider fails a key's first N status checks (a transient fault)",
    ),
    entry(
        "fail_always",
        "fail_always = [\"PAY-003\"]",
        "the provider fails every status check of a key (a poison message)",
    ),
    entry("batch", "batch = 4", "messages a worker claims per transaction, 1-100 (default 1)"),
    entry(
        "finalize_guard",
        "finalize_guard = \"owner\"",
        "what a finalize checks: `fencing-token` (default: owner, lease version and seeding, leaselab's rule) or `owner` (the owner's name only, the weaker guard, to show a stalled worker's finalize accepted)",
    ),
];

/// The `do` actions. `W` is a worker (`Worker-A`, or a restarted `Worker-A#2`); a message
/// is `PAY-001` or its outbox id.
pub const ACTIONS: &[Entry] = &[
    entry("claim W [PAY-001]", "claim Worker-A PAY-001", "claim the oldest claimable message, or that one"),
    entry(
        "load W",
        "load Worker-A",
        "with leasing off, the worker reads every Pending row to work through (LOADED); with leasing on, a claim",
    ),
    entry("act W", "act Worker-A", "the worker's next action: claim, provider call or finalize"),
    entry("beat W", "beat Worker-A", "the worker extends the lease it holds, once (heartbeats on)"),
    entry("crash W", "crash Worker-B", "the worker dies where it is, holding what it holds"),
    entry("restart W", "restart Worker-B", "a new start of a crashed worker"),
    entry(
        "freeze W",
        "freeze Worker-A",
        "the worker freezes holding what it holds (a long GC pause), as z does in free play; FROZEN on screen (`pause W` is read too)",
    ),
    entry(
        "stall W",
        "stall Worker-A",
        "the worker freezes holding what it holds, and its supervisor starts a new worker under its very name (the same LockedBy); from then on the two are `Worker-A (stalled)` and `Worker-A (new)`",
    ),
    entry(
        "wake W",
        "wake Worker-A",
        "a frozen or stalled worker goes on with what it believed (`resume W` is read too)",
    ),
    entry("advance MS", "advance 3100", "a clock jump: nobody beats"),
    entry(
        "work MS",
        "work 4000",
        "the clock moves one heartbeat interval at a time; every live worker holding a lease beats after each",
    ),
    entry("heartbeats on|off", "heartbeats on", "switch heartbeats (`heartbeat` is read too)"),
    entry("redrive PAY-002|all", "redrive all", "dead letters back to Pending with fresh attempts"),
    entry("heal PAY-002|all", "heal PAY-002", "the provider stops failing that key"),
    entry("leasing on|off", "leasing off", "claims take leases, or workers load every Pending row"),
    entry("idempotency on|off", "idempotency on", "the provider honours idempotency keys"),
    entry("workers N", "workers 3", "start or stop workers so N remain (1-26)"),
    entry("batch K", "batch 4", "each worker's next claims take up to K messages (1-100)"),
    entry("add-payment [N]", "add-payment 2", "add one payment, or N, each with its outbox row"),
    entry(
        "run-until drained",
        "run-until drained",
        "every live, unpaused worker acts in turn until nothing is left",
    ),
];

/// The `expect` forms: a figure and the value it must have.
pub const EXPECTATIONS: &[Entry] = &[
    entry(
        "PAY-001 status STATUS",
        "PAY-001 status Processing",
        "the outbox row's Status: Pending, Processing, Processed or DeadLettered",
    ),
    entry(
        "PAY-001 owner W|none",
        "PAY-001 owner Worker-A",
        "the row's LockedBy",
    ),
    entry(
        "PAY-001 lease N",
        "PAY-001 lease 1",
        "the row's LeaseVersion (the fencing token)",
    ),
    entry(
        "PAY-001 attempts N",
        "PAY-001 attempts 1",
        "the row's Attempts",
    ),
    entry(
        "PAY-001 payment STATUS",
        "PAY-001 payment Pending",
        "the payment row: Pending, Paid or Failed",
    ),
    entry(
        "PAY-001 processed N",
        "PAY-001 processed 0",
        "results written for it: how often it was processed",
    ),
    entry(
        "ledger FIGURE N",
        "ledger claims 1",
        "a ledger figure (below)",
    ),
    entry(
        "outbox STATUS N",
        "outbox Pending 5",
        "outbox rows with that Status",
    ),
    entry(
        "payments STATUS N",
        "payments Paid 0",
        "payment rows with that status",
    ),
    entry(
        "provider calls N",
        "provider calls 0",
        "calls the provider received (each a payment status check; failed ones count)",
    ),
    entry(
        "provider side effects N",
        "provider side effects 0",
        "calls that did work at the provider (`effects` is read too)",
    ),
    entry(
        "provider PAY-001 calls N",
        "provider PAY-001 calls 0",
        "calls the provider received for one key",
    ),
    entry(
        "provider PAY-001 side effects N",
        "provider PAY-001 side effects 0",
        "side effects for one key",
    ),
];

/// The verbs of [`ACTIONS`], as the parser names them in an error.
pub fn action_verbs() -> Vec<&'static str> {
    ACTIONS
        .iter()
        .filter_map(|a| a.form.split_whitespace().next())
        .collect()
}

fn table(out: &mut String, entries: &[Entry]) {
    out.push_str("| Form | Example | Meaning |\n|---|---|---|\n");
    for e in entries {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} |",
            e.form,
            e.example.replace('|', "\\|"),
            e.meaning
        );
    }
}

/// The reference as Markdown.
pub fn reference() -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "# Lesson file reference\n\n\
         Generated by `leaselab lessons --reference` from the tables the parser reads; a \
         test keeps this file equal to that output. Start from a working lesson with \
         `leaselab lesson atomic-claim --print > my-lesson.toml`.\n\n\
         A lesson is a TOML file: `format_version = {FORMAT_VERSION}`, a `title`, an \
         optional `summary`, an optional `[setup]` table, and one `[[step]]` table per \
         step, each with `do` (a list of actions), `say` (the narration) and `expect` (a \
         list of expectations, checked after the actions). A step may also ask a \
         question before it runs: `ask` (the question) and `choices`, {lo}-{hi} of \
         `{{ answer = \"...\", expect = \"...\" }}`, each an answer and an expectation \
         written as in `expect`. In the dashboard the first `n` shows the question, keys \
         1-{hi} record a prediction, and the next `n` runs the step and says whether the \
         prediction was right; the answer is the one choice whose expectation holds after \
         the actions, and `--check` fails the step unless exactly one does. A step may \
         open a pane once it has run: `show = \"sql\"` opens the SQL pane (each worker's \
         last statements, as its store ran them; `s` hides it). An optional top-level \
         `sql = \"my-claim.toml\"` names an exercise file (`leaselab exercise NAME --start` \
         writes one): a path relative to the lesson file, of at most {MAX_SQL_PATH} \
         characters, read and sandboxed as `leaselab explore --sql` reads it. The \
         lesson's workers then run the exercise's claim, finalize and heartbeat \
         statements on SQLite, and the SQL pane shows them. What the exercise does not \
         define is refused at its line: `leasing = false`, `finalize_guard = \"owner\"`, \
         `batch` above 1, `fail_first` and `fail_always`, `claim W PAY-001`, `redrive`, \
         `leasing off`, and without its `[heartbeat]` `beat W` and `heartbeats on` (its \
         heartbeats are off). A mistake is \
         reported as `FILE:LINE: what`; every mistake in the steps is reported in one run \
         (at most {MAX_REPORTED_ERRORS}).\n\n## `[setup]`\n\n",
        lo = super::format::CHOICES.start(),
        hi = super::format::CHOICES.end()
    );
    table(&mut out, SETUP_KEYS);
    out.push_str(
        "\n## Actions (`do`)\n\n`W` is a worker: `Worker-A`, `Worker-B`, ... (a restarted \
         `Worker-A#2` names the same worker). After `stall Worker-A` two workers have that \
         name: each action names one, `Worker-A (stalled)` or `Worker-A (new)`, and plain \
         `Worker-A` is refused; a worker stalls once, and a lesson that stalls one keeps its \
         crew (no `workers N`). An expectation's owner is a name as `LockedBy` holds it, \
         without `(stalled)` or `(new)`. A message is `PAY-001` or its outbox id.\n\n",
    );
    table(&mut out, ACTIONS);
    out.push_str("\n## Expectations (`expect`)\n\n");
    table(&mut out, EXPECTATIONS);
    out.push_str(
        "\n## Ledger figures (`ledger FIGURE N`)\n\nEach figure has one name: the words after \
         `ledger`, the label in the Ledgers panel, and the word the narrations use. `run --json` \
         reports it under its key. A lesson file may still use the one word in brackets.\n\n\
         | Figure | Counts | JSON key |\n|---|---|---|\n",
    );
    for f in LEDGER_FIGURES {
        let older = f.older.map(|o| format!(" (`{o}`)")).unwrap_or_default();
        let _ = writeln!(out, "| `{}`{older} | {} | `{}` |", f.name, f.counts, f.json);
    }
    let _ = write!(
        out,
        "\n## Limits\n\n\
         - A lesson file is a regular file of at most 1 MiB.\n\
         - `advance` and `work` move the clock 0-{MAX_CLOCK_MS} ms; one `work` covers at \
         most {MAX_WORK_BEATS} heartbeat intervals.\n\
         - `add-payment N` adds 1-{MAX_ADD_PAYMENT}; a lesson holds at most \
         {MAX_LESSON_MESSAGES} payments, seeded and added.\n\
         - An expectation states a figure of 0-{MAX_EXPECTED}.\n"
    );
    out
}
