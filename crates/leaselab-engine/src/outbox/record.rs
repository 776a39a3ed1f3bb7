//! The rows of `LeaseEvents` as both stores read and write them, and what a row records
//! besides a change to the outbox: the settings a run used, a worker's crash or freeze, a
//! provider call. Whoever knows such a fact for certain writes it when it happens, so a
//! replay or a watching dashboard shows it where it happened and infers nothing.

use super::LeaseEventKind;

/// One row of `LeaseEvents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseEventRow {
    /// Commit order: never reused, also after the outbox is emptied.
    pub seq: u64,
    pub at_ms: i64,
    pub worker: String,
    pub kind: LeaseEventKind,
    pub id: Option<i64>,
    pub key: Option<String>,
    pub version: Option<i64>,
    /// The lease's expiry, for a claim or a heartbeat; a retried attempt's next chance.
    pub until_ms: Option<i64>,
    /// The provider's answer, the error of a failed attempt, the number seeded, the
    /// settings recorded, or how a worker was crashed, frozen or woken.
    pub detail: Option<String>,
}

/// A fact to record in a row of its own (not a change to the outbox, which its own
/// transaction records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub at_ms: i64,
    pub worker: String,
    pub kind: LeaseEventKind,
    /// The message it is about, with the lease the worker held on it, if any.
    pub id: Option<i64>,
    pub key: Option<String>,
    pub version: Option<i64>,
    pub until_ms: Option<i64>,
    pub detail: Option<String>,
}

impl Fact {
    /// A fact about a worker, about no message.
    pub fn of(kind: LeaseEventKind, at_ms: i64, worker: &str, detail: &str) -> Fact {
        Fact {
            at_ms,
            worker: worker.to_string(),
            kind,
            id: None,
            key: None,
            version: None,
            until_ms: None,
            detail: Some(detail.to_string()),
        }
    }

    /// The same fact about the lease `(id, key, version, until)` the worker held.
    pub fn holding(self, lease: Option<(i64, &str, i64, i64)>) -> Fact {
        match lease {
            Some((id, key, version, until)) => Fact {
                id: Some(id),
                key: Some(key.to_string()),
                version: Some(version),
                until_ms: Some(until),
                ..self
            },
            None => self,
        }
    }
}

/// A `Crashed` row's `Detail` when the lab crashed the worker (a key, a lesson's action).
/// A panic's is `panic: MESSAGE`; a worker process's says how it ended (`SIGKILL`,
/// `exited with status 3`).
pub const CRASH_TOLD: &str = "crash";
pub const CRASH_PANIC: &str = "panic: ";

/// A `LeaseLost` row's `Detail` when the lease was one of a batch's and ran out before its
/// worker got to it (a heartbeat's loss has none).
pub const QUEUED_RAN_OUT: &str = "ran out waiting in its batch";

/// A `Checked` row's `Detail` when the provider replayed its first answer for the key (an
/// idempotent provider): the call did no new work.
pub const REPLAYED: &str = " replayed";

/// A `Checked` row's `Detail`: the answer, and whether the call did new work at the provider
/// (`Paid`, or `Paid replayed` when an idempotent provider answered from its record).
pub fn checked_detail(status: crate::provider::ProviderStatus, effect: bool) -> String {
    format!("{}{}", status.as_str(), if effect { "" } else { REPLAYED })
}

/// One of a student's statements as it ran: its file line, its text, the parameters bound
/// and its effect (`1 row changed`, `returned Id = 2, LeaseVersion = 1`, `no row`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudentStatement {
    pub line: u32,
    pub sql: String,
    pub parameters: Vec<(String, String)>,
    pub effect: String,
}

/// Writing a [`Fact`]: one row in a transaction of its own. Returns the engine's stamp of
/// the write, which orders it among the workers' writes as the database committed them.
pub trait Recording {
    fn record(&mut self, fact: &Fact) -> super::Result<super::Stamped<()>>;

    /// The statements the last claim, finalize or heartbeat ran, when they are a student's
    /// (an exercise's store): the worker's event carries them to the SQL pane. None for the
    /// lab's own stores, whose statements the pane knows from the event.
    fn student_statements(&self) -> Option<std::sync::Arc<[StudentStatement]>> {
        None
    }

    /// The last claim or finalize ran one step of a student's operation that goes on at
    /// the next call (a stepwise `StudentStore`): its answer stands for nothing yet.
    fn partway(&self) -> bool {
        false
    }
}

/// The longest value a recorded setting may take, in milliseconds: a day.
const MAX_SETTING_MS: i64 = 86_400_000;
/// The largest claim batch a recorded setting may name.
const MAX_SETTING_BATCH: i64 = 100;

/// The settings a run's workers use, as a `Settings` row (the engine's, for its threads)
/// or a `Joined` row (a worker process's own) records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    pub lease_ms: i64,
    pub process_ms: i64,
    pub leasing: bool,
    pub heartbeats: bool,
    pub heartbeat_ms: i64,
    /// Messages a claim takes in one transaction.
    pub batch: i64,
    /// A finalize checks the owner's name only (a lesson's weaker guard), not the token.
    pub owner_only: bool,
    /// The workers ran a student's exercise (`leaselab --sql`): their claims, finalizes and
    /// heartbeats were the exercise's statements, which the rows do not record.
    pub student: bool,
}

impl RunSettings {
    /// The row's `Detail`: `lease_ms=3000 process_ms=1200 leasing=on heartbeats=on
    /// heartbeat_ms=1000 batch=1 guard=token` (`guard=owner` for the owner-only guard).
    pub fn detail(&self) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        let student = if self.student {
            " statements=student"
        } else {
            ""
        };
        format!(
            "lease_ms={} process_ms={} leasing={} heartbeats={} heartbeat_ms={} batch={} guard={}{student}",
            self.lease_ms,
            self.process_ms,
            on(self.leasing),
            on(self.heartbeats),
            self.heartbeat_ms,
            self.batch,
            if self.owner_only { "owner" } else { "token" }
        )
    }

    /// Read a row's `Detail` back: every key once, each value in its range, or why not.
    pub fn parse(detail: &str) -> Result<RunSettings, String> {
        let mut values: [Option<&str>; 8] = [None; 8];
        const KEYS: [&str; 8] = [
            "lease_ms",
            "process_ms",
            "leasing",
            "heartbeats",
            "heartbeat_ms",
            "batch",
            "guard",
            // Optional: written only for a student's exercise.
            "statements",
        ];
        for pair in detail.split(' ') {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| "settings are not KEY=VALUE pairs".to_string())?;
            // A worker process's identity and its software, after its settings: no setting.
            if key == crate::process_identity::PROCESS_KEY || crate::software::Software::is_key(key)
            {
                continue;
            }
            let at = KEYS
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| "settings name an unknown key".to_string())?;
            if values[at].replace(value).is_some() {
                return Err(format!("settings name {key} twice"));
            }
        }
        let get = |i: usize| values[i].ok_or_else(|| format!("settings lack {}", KEYS[i]));
        let ms = |i: usize, min: i64, max: i64| -> Result<i64, String> {
            get(i)?
                .parse::<i64>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| {
                    format!("settings' {} is not a whole number in {min}-{max}", KEYS[i])
                })
        };
        let switch = |i: usize| match get(i)? {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => Err(format!("settings' {} is neither on nor off", KEYS[i])),
        };
        Ok(RunSettings {
            lease_ms: ms(0, 1, MAX_SETTING_MS)?,
            process_ms: ms(1, 0, MAX_SETTING_MS)?,
            leasing: switch(2)?,
            heartbeats: switch(3)?,
            heartbeat_ms: ms(4, 1, MAX_SETTING_MS)?,
            batch: ms(5, 1, MAX_SETTING_BATCH)?,
            owner_only: match get(6)? {
                "owner" => true,
                "token" => false,
                _ => return Err("settings' guard is neither owner nor token".into()),
            },
            student: match values[7] {
                None => false,
                Some("student") => true,
                Some(_) => return Err("settings' statements is not student".into()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_back_what_they_wrote_and_refuse_the_rest() {
        let s = RunSettings {
            lease_ms: 500,
            process_ms: 0,
            leasing: false,
            heartbeats: true,
            heartbeat_ms: 166,
            batch: 4,
            owner_only: true,
            student: false,
        };
        assert_eq!(RunSettings::parse(&s.detail()), Ok(s));
        // A worker process's identity after them is not a setting.
        let joined = format!(
            "{} leaselab=0.1.0 commit=f3fb608 target=aarch64-apple-darwin process=42:7:0a-1b:4026531836",
            s.detail()
        );
        assert_eq!(RunSettings::parse(&joined), Ok(s));
        let student = RunSettings { student: true, ..s };
        assert!(student.detail().ends_with(" statements=student"));
        assert_eq!(RunSettings::parse(&student.detail()), Ok(student));
        for bad in [
            "",
            "lease_ms=500",
            "lease_ms=0 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1 guard=token",
            "lease_ms=5 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1 guard=nope",
            "lease_ms=5 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1",
            "lease_ms=9999999999999 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1",
            "lease_ms=5 process_ms=0 leasing=yes heartbeats=on heartbeat_ms=1 batch=1",
            "lease_ms=5 lease_ms=5 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1",
            "lease_ms=5 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1 color=red",
            "lease_ms=5 process_ms=0 leasing=on heartbeats=on heartbeat_ms=1 batch=1 guard=token statements=lab",
        ] {
            assert!(RunSettings::parse(bad).is_err(), "{bad}");
        }
    }
}
