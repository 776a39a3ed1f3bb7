//! A student's statements in the explorer (`explore --sql FILE`): a worker's claim,
//! finalize and heartbeat are the exercise's operations, run on the explorer's own SQLite
//! database through the sandbox. An operation whose statements run each on its own takes
//! one move per statement, so another worker may run between two of them; one in a
//! transaction is one move. The checks judge what the statements did with the explorer's
//! own oracle, as they judge the engine's store.

use std::sync::Arc;

use crate::engine::clock::hms;
use crate::engine::outbox::{Lease, OutboxStatus};
use crate::engine::store::Store;
use crate::engine::student::{
    Exercise, OpKind, OpResult, OpRun, Shown, ShownStatement, Step, StudentError, StudentStore,
};
use crate::engine::text::printable;

use super::check::Check;
use super::error::ExploreError;
use super::options::LEASE_MS;
use super::oracle::{holds_live_lease, lease_holds};
use super::world::{Local, Seen, World};

/// The longest statement a step shows, in characters; a longer one ends with `…`.
const SHOWN_SQL_CHARS: usize = 600;

impl World {
    /// A worker's next step when its cycle runs a student's statements: the next statement
    /// of the claim, the finalize or the heartbeat it is in, or the first of one it starts.
    /// None when the step is not the student's (the provider call).
    pub(super) fn student_step(
        &mut self,
        i: usize,
        exercise: &Arc<Exercise>,
        (before, store): (&Seen, &mut Store),
        broke: &mut Vec<Check>,
    ) -> Result<Option<String>, ExploreError> {
        let now = self.now;
        let name = self.actors[i].name.clone();
        let run = match &self.actors[i].local {
            Local::Idle => OpRun::claim(&name, now, LEASE_MS),
            Local::Checked(lease, check) => OpRun::finalize(lease, check, now),
            Local::Running(run) if run.stale => return Ok(Some(self.busy(i, run.clone()))),
            Local::Running(run) => run.clone(),
            _ => return Ok(None),
        };
        self.run_statement(i, run, exercise, (before, store), broke)
            .map(Some)
    }

    /// A heartbeat of the lease worker `i` holds, the exercise's statements.
    pub(super) fn student_beat(
        &mut self,
        i: usize,
        exercise: &Arc<Exercise>,
        (before, store): (&Seen, &mut Store),
        broke: &mut Vec<Check>,
    ) -> Result<String, ExploreError> {
        let Local::Holding(lease) = &self.actors[i].local else {
            return Ok(format!(
                "{} holds nothing to extend",
                self.actors[i].shown()
            ));
        };
        let run = OpRun::heartbeat(lease, self.now, LEASE_MS);
        self.run_statement(i, run, exercise, (before, store), broke)
    }

    /// One step of `run` for worker `i`: what it ran, and when the operation is done, what
    /// the worker now holds and the checks its result broke.
    fn run_statement(
        &mut self,
        i: usize,
        mut run: OpRun,
        exercise: &Arc<Exercise>,
        (before, store): (&Seen, &mut Store),
        broke: &mut Vec<Check>,
    ) -> Result<String, ExploreError> {
        let who = self.actors[i].shown();
        let total = exercise
            .operation(run.kind)
            .map_or(0, |op| op.statements.len());
        let first = run.next;
        let mut student = StudentStore::new(&mut *store, exercise.clone()).deferred_in_two();
        let (step, shown) = match student.step(&mut run) {
            Ok(done) => done,
            // The schema refused what the statement wrote (a CHECK, a NOT NULL): as for a
            // real worker, the statement fails and the operation ends with nothing, its
            // transaction (if any) rolled back.
            Err(e) => match schema_refusal(&e) {
                Some(why) => {
                    let line = run.next.min(total.saturating_sub(1));
                    self.actors[i].local = Local::Idle;
                    return Ok(format!(
                        "{who} runs its {}, statement {} of {total}: the database refuses it \
                         ({why}), so the {} ends with nothing",
                        run.kind.name(),
                        line + 1,
                        run.kind.name()
                    ));
                }
                None => return Err(e.into()),
            },
        };
        let ran = told(&who, &run, (first, total), &shown);
        let (next, outcome) = match step {
            Step::Continue => (Local::Running(run), String::new()),
            Step::Done(result) => self.ended(i, &run, result, before, broke),
        };
        self.actors[i].local = next;
        Ok(format!("{ran}{outcome}"))
    }

    /// A deferred transaction's first write after another worker wrote since its reads:
    /// SQLite refuses it with `SQLITE_BUSY` at once (no busy handler is called for a read
    /// transaction asking for the write lock). The transaction rolls back, and the worker
    /// tries the operation again from its start, as a real one would.
    fn busy(&mut self, i: usize, run: OpRun) -> String {
        let who = self.actors[i].shown();
        let what = run.kind.name();
        self.actors[i].local = match (&run.lease, &run.answer) {
            (Some(lease), Some(answer)) => Local::Checked(lease.clone(), answer.clone()),
            (Some(lease), None) => Local::Holding(lease.clone()),
            _ => Local::Idle,
        };
        format!(
            "{who} runs the rest of its {what}: its first write meets SQLITE_BUSY (another \
             worker wrote after this transaction read, and SQLite does not wait for a read \
             transaction that asks to write), so the transaction rolls back and the {what} \
             will start again"
        )
    }

    /// Another worker than `i` committed a write: a deferred transaction of each other
    /// worker that has read and not yet written will meet `SQLITE_BUSY` at its first write.
    pub(super) fn others_wrote(&mut self, i: usize) {
        for (j, a) in self.actors.iter_mut().enumerate() {
            if let Local::Running(run) = &mut a.local {
                let deferred = self
                    .sql
                    .as_ref()
                    .and_then(|ex| ex.operation(run.kind))
                    .is_some_and(|op| op.transaction == crate::engine::student::TxMode::Deferred);
                if j != i && deferred && run.next > 0 {
                    run.stale = true;
                }
            }
        }
    }

    /// What an operation's result leaves worker `i` holding, told, with the checks broken.
    /// Ownership is judged by the explorer's own record of whose claim was accepted last
    /// (and of the leases the workers hold), not only by what the student's statements
    /// wrote in the row: a claim that never moves the fencing token must not pass.
    fn ended(
        &mut self,
        i: usize,
        run: &OpRun,
        result: OpResult,
        before: &Seen,
        broke: &mut Vec<Check>,
    ) -> (Local, String) {
        let now = self.now;
        let row = |id: i64| before.rows.iter().find(|r| r.id == id);
        match result {
            OpResult::Claimed(lease) => {
                // Another worker still holds a live lease on it, by the lease it was given,
                // or by the row as it was before this step.
                let held_elsewhere = self.actors.iter().enumerate().any(|(j, a)| {
                    j != i
                        && a.holds_lease()
                            .is_some_and(|l| l.id == lease.id && lease_holds(l.until_ms, now))
                });
                if held_elsewhere || row(lease.id).is_some_and(|r| holds_live_lease(r, now)) {
                    broke.push(Check::LeaseExclusivity);
                }
                if let Some(h) = self.holder.get_mut(lease.id as usize) {
                    *h = Some(i);
                }
                let text = format!(
                    ": it claims {} (lease v{}, until {})",
                    lease.key,
                    lease.version,
                    hms(lease.until_ms)
                );
                (Local::Holding(lease), text)
            }
            OpResult::NoRow => (Local::Idle, ": it finds nothing to claim".into()),
            OpResult::Accepted => match &run.lease {
                Some(lease) => (Local::Idle, self.finalized(i, lease, row(lease.id), broke)),
                None => (Local::Idle, String::new()),
            },
            OpResult::Rejected => (
                Local::Idle,
                ": finalize rejected, the lease is no longer its".into(),
            ),
            OpResult::Extended(until) => {
                let Some(mut lease) = run.lease.clone() else {
                    return (Local::Idle, String::new());
                };
                let was_held = self.holder.get(lease.id as usize) == Some(&Some(i))
                    && row(lease.id).is_some_and(|r| held(r, &lease));
                lease.until_ms = until;
                let mut text = format!(
                    ": its lease on {} (v{}) now runs until {}",
                    lease.key,
                    lease.version,
                    hms(until)
                );
                if !was_held {
                    // It now believes it holds a live lease on a row it does not own.
                    broke.push(Check::LeaseExclusivity);
                    text.push_str(", though the lease was no longer its");
                }
                (Local::Holding(lease), text)
            }
            OpResult::Lost => (
                Local::Idle,
                ": the lease is lost and it gives the message up".into(),
            ),
        }
    }

    /// Worker `i`'s finalize of `lease` was accepted: counted, and judged against whose
    /// claim came last and the row as it was (`row`), told.
    fn finalized(
        &mut self,
        i: usize,
        lease: &Lease,
        row: Option<&crate::engine::outbox::MessageRow>,
        broke: &mut Vec<Check>,
    ) -> String {
        let at = lease.id as usize;
        if let Some(n) = self.finalized.get_mut(at) {
            *n += 1;
        }
        let earlier = self.finisher.get(at).copied().flatten();
        if let Some(f) = self.finisher.get_mut(at) {
            *f = Some((i, lease.version));
        }
        let owner = self.holder.get(at) == Some(&Some(i));
        if row.is_some_and(|r| owner && held(r, lease)) {
            return format!(": finalize of {} accepted", lease.key);
        }
        broke.push(Check::NonOwnerFinalize);
        let (key, v) = (&lease.key, lease.version);
        let Some(r) = row.filter(|r| r.status == OutboxStatus::Processing) else {
            // The row was no longer Processing: say what it was, and who made it so.
            let was = match row.map(|r| r.status) {
                None => "gone (deleted)".to_string(),
                Some(OutboxStatus::Pending) => "released (Pending, owned by nobody)".to_string(),
                Some(other) => format!("already {}", other.as_str()),
            };
            let by = match earlier {
                Some((f, fv)) => format!(
                    " by {}'s finalize under lease v{fv}",
                    self.actors[f].shown()
                ),
                None => String::new(),
            };
            return format!(
                ": finalize of {key} under lease v{v} accepted, though the row was {was}{by}"
            );
        };
        // Whose claim came after this worker's, when the row cannot tell them apart (the
        // same name, the same fencing token).
        let since = match self.holder.get(lease.id as usize) {
            Some(&Some(h)) if h != i => format!(", claimed since by {}", self.actors[h].shown()),
            _ => String::new(),
        };
        format!(
            ": finalize of {key} under lease v{v} accepted, though the row was at lease v{} owned \
             by {}{since}",
            r.lease_version,
            printable(r.locked_by.as_deref().unwrap_or("nobody"))
        )
    }
}

/// The schema's own refusal behind a failed statement (`CHECK constraint failed: …`), if
/// that is what stopped it.
fn schema_refusal(e: &StudentError) -> Option<String> {
    let StudentError::Student {
        cause: Some(cause), ..
    } = e
    else {
        return None;
    };
    let rusqlite::Error::SqliteFailure(f, msg) = cause.as_ref() else {
        return None;
    };
    (f.code == rusqlite::ErrorCode::ConstraintViolation)
        .then(|| printable(msg.as_deref().unwrap_or("a constraint failed")).into_owned())
}

/// The row is Processing under this very lease: its owner and its fencing token.
fn held(row: &crate::engine::outbox::MessageRow, lease: &Lease) -> bool {
    row.status == OutboxStatus::Processing
        && row.locked_by.as_deref() == Some(lease.owner.as_str())
        && row.lease_version == lease.version
}

/// `Worker-A runs its claim, statement 1 of 2 (line 7)` and each statement it ran, with
/// its parameters and its effect, one per line.
fn told(who: &str, run: &OpRun, (first, total): (usize, usize), shown: &Shown) -> String {
    let what = match run.kind {
        OpKind::Claim => "claim",
        OpKind::Finalize => "finalize",
        OpKind::Heartbeat => "heartbeat",
    };
    let n = shown.statements.len();
    let which = match (n, total) {
        (_, 1) => String::new(),
        (1, _) => format!(", statement {} of {total}", first + 1),
        _ => format!(", statements {}-{} of {total}", first + 1, first + n),
    };
    let rolled = if shown.rolled_back {
        " (its transaction rolled back)"
    } else {
        ""
    };
    let mut out = format!("{who} runs its {what}{which}{rolled}");
    for s in &shown.statements {
        out.push_str(&statement_lines(s));
    }
    out
}

/// One statement as a counterexample prints it: `line 7: SELECT …`, its parameters and
/// its effect, each line after a newline.
fn statement_lines(s: &ShownStatement) -> String {
    let sql: String = one_line(&printable(&s.sql));
    let sql = match sql.char_indices().nth(SHOWN_SQL_CHARS) {
        Some((at, _)) => format!("{}…", &sql[..at]),
        None => sql,
    };
    let params: Vec<String> = s
        .parameters
        .iter()
        .map(|(name, value)| {
            format!(
                "{} = {}{}",
                printable(name),
                printable(value),
                at(name, value)
            )
        })
        .collect();
    let mut out = format!("\n  line {}: {sql}", s.line);
    if !params.is_empty() {
        out.push_str(&format!("\n    with {}", params.join(", ")));
    }
    out.push_str(&format!("\n    → {}", printable(&s.effect)));
    out
}

/// ` (09:00:03.000)` after a time the explorer bound (`:now`, `:lease_until`, in
/// milliseconds), so a schedule reads in the clock the dashboard shows; empty otherwise.
fn at(name: &str, value: &str) -> String {
    match (name, value.parse::<i64>()) {
        (":now" | ":lease_until", Ok(ms)) => format!(" ({})", hms(ms)),
        _ => String::new(),
    }
}

/// A statement's whitespace folded to single spaces.
fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::clock::SCENARIO_START_MS;
    use crate::engine::outbox::prelude::*;
    use crate::explore::options::ExploreOptions;
    use crate::explore::store::Lane;
    use crate::explore::world::{Move, Seen};

    /// The one-owner starter's claim (a read, then an update that asks nothing again) in a
    /// deferred transaction.
    fn deferred_starter() -> Exercise {
        let starter = crate::exercise::built_in("one-owner").unwrap().starter();
        let text = crate::exercise::built_in("one-owner")
            .unwrap()
            .start
            .replacen("transaction = \"none\"", "transaction = \"deferred\"", 1);
        let ex = Exercise::parse(&text, "deferred.toml").unwrap();
        assert_ne!(ex.claim.transaction, starter.claim.transaction);
        ex
    }

    /// Two workers each read in a deferred transaction; the first writes and commits. The
    /// second's write then meets SQLITE_BUSY, as on SQLite itself (no busy handler for a
    /// read transaction that asks to write): it rolls back and starts its claim again,
    /// and never owns the message the first took.
    #[test]
    fn a_deferred_read_then_write_meets_busy_when_another_worker_wrote_since_its_read() {
        let ex = Arc::new(deferred_starter());
        let opts = ExploreOptions {
            workers: 2,
            messages: 1,
            sql: Some(ex.clone()),
            ..ExploreOptions::default()
        };
        let mut lane = Lane::new(&opts).unwrap();
        let mut world = World {
            sql: Some(ex),
            time: opts
                .sql
                .as_ref()
                .map(|e| Arc::new(super::super::clock::TimeModel::of(e))),
            ..World::new(SCENARIO_START_MS, 2, 1)
        };
        let mut said = Vec::new();
        for mv in [Move::Step(0), Move::Step(1), Move::Step(0), Move::Step(1)] {
            let seen = Seen::read(&lane.store, &lane.provider, true).unwrap();
            let done = world
                .apply(mv, opts.mode, &seen, &mut lane.store, &lane.provider)
                .unwrap();
            said.push(done.text);
        }
        assert!(said[2].contains("it claims PAY-001"), "{said:#?}");
        assert!(said[3].contains("SQLITE_BUSY"), "{said:#?}");
        assert_eq!(world.actors[1].local, Local::Idle, "{said:#?}");
        assert!(world.broken.is_empty(), "{said:#?}");
    }

    /// The rows and payments the checks read are the same whether read from the database
    /// or from every cell of its two tables.
    #[test]
    fn the_rows_read_from_the_cells_are_the_rows_the_store_reads() {
        let ex = Arc::new(crate::exercise::built_in("takeover").unwrap().model());
        let opts = ExploreOptions {
            workers: 2,
            messages: 2,
            sql: Some(ex.clone()),
            ..ExploreOptions::default()
        };
        let mut lane = Lane::new(&opts).unwrap();
        let mut world = World {
            sql: Some(ex),
            ..World::new(SCENARIO_START_MS, 2, 2)
        };
        for mv in [Move::Step(0), Move::Step(0), Move::Step(1), Move::Step(0)] {
            let seen = Seen::read(&lane.store, &lane.provider, true).unwrap();
            assert_eq!(*seen.rows, lane.store.messages(0, 100).unwrap());
            assert_eq!(*seen.payments, lane.store.payments().unwrap());
            world
                .apply(mv, opts.mode, &seen, &mut lane.store, &lane.provider)
                .unwrap();
        }
        let seen = Seen::read(&lane.store, &lane.provider, true).unwrap();
        assert!(seen
            .rows
            .iter()
            .any(|r| r.status == OutboxStatus::Processed));
        assert!(seen.payments.iter().any(|p| p.transaction_id.is_some()));
        assert_eq!(*seen.rows, lane.store.messages(0, 100).unwrap());
        assert_eq!(*seen.payments, lane.store.payments().unwrap());
    }
}
