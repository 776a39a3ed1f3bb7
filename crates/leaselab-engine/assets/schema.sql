-- leaselab outbox schema. Times are integer milliseconds on the scenario clock.
-- A CHECK of one value among several is written as ORs, not IN: for an IN list of more
-- than two constants SQLite builds a temporary b-tree every time a statement runs, and
-- every claim and finalize runs the CHECKs of the rows it writes.
CREATE TABLE IF NOT EXISTS Payments (
    IdempotencyKey TEXT PRIMARY KEY,
    Amount         INTEGER NOT NULL CHECK (Amount >= 0),
    PaymentStatus  TEXT NOT NULL DEFAULT 'Pending'
                   CHECK (PaymentStatus = 'Pending' OR PaymentStatus = 'Paid'
                          OR PaymentStatus = 'Failed'),
    TransactionId  TEXT,
    CreatedAtUtc   INTEGER NOT NULL
) WITHOUT ROWID;

-- Every seeding of the outbox, never emptied: its numbers never repeat in one database.
CREATE TABLE IF NOT EXISTS Seedings (
    Seeding        INTEGER PRIMARY KEY,
    AtUtc          INTEGER NOT NULL,
    -- the last LeaseEvents Seq before the outbox was emptied for the next seeding: the
    -- floor that keeps Seq rising across resets
    LastSeq        INTEGER
);

CREATE TABLE IF NOT EXISTS OutboxMessages (
    Id             INTEGER PRIMARY KEY,
    PaymentKey     TEXT NOT NULL UNIQUE REFERENCES Payments (IdempotencyKey),
    Status         TEXT NOT NULL DEFAULT 'Pending'
                   CHECK (Status = 'Pending' OR Status = 'Processing' OR Status = 'Processed'
                          OR Status = 'DeadLettered'),
    LockedBy       TEXT,
    LockedUntilUtc INTEGER,
    -- fencing token: +1 on every successful claim
    LeaseVersion   INTEGER NOT NULL DEFAULT 0,
    -- the seeding that made the row: a lease fences on it and on LeaseVersion, so a lease
    -- taken before a reseed never matches a row after it
    Seeding        INTEGER NOT NULL DEFAULT 0,
    Attempts       INTEGER NOT NULL DEFAULT 0,
    -- a Pending message is not claimed before this time (the backoff after a failed attempt)
    AvailableAtUtc INTEGER NOT NULL DEFAULT 0,
    -- the provider's error of the last failed attempt
    LastError      TEXT,
    CreatedAtUtc   INTEGER NOT NULL,
    -- when the message was finished: processed, or given up as a dead letter (a redrive
    -- clears it); NULL exactly while it is work to do
    ProcessedAtUtc INTEGER,
    -- a Processing row always has an owner and an expiry
    CHECK (Status <> 'Processing' OR (LockedBy IS NOT NULL AND LockedUntilUtc IS NOT NULL)),
    CHECK ((Status = 'Pending' OR Status = 'Processing') = (ProcessedAtUtc IS NULL))
);

-- One index of the unfinished messages in claim order. A claim reads it from the oldest
-- and takes the first row it finds claimable (an available Pending message, or an expired
-- lease); rows still backing off are skipped in the index. Neither its columns nor its
-- condition are ones a claim changes, so a claim writes no page of it: only a finished
-- row (processed, or dead-lettered) leaves it, so the index stays as small as the work.
CREATE INDEX IF NOT EXISTS IX_Outbox_Unfinished
    ON OutboxMessages (CreatedAtUtc, Id, AvailableAtUtc)
    WHERE ProcessedAtUtc IS NULL;
-- Dead letters are few: counted and redriven without reading the rest of the outbox.
CREATE INDEX IF NOT EXISTS IX_Outbox_DeadLettered
    ON OutboxMessages (PaymentKey) WHERE Status = 'DeadLettered';

-- One row per claim, heartbeat, finalize, failed attempt, mark and seeding, written in the
-- same transaction as the change it describes; and one row, in a transaction of its own
-- when it happened, per fact the lab knows for certain outside the outbox: a worker crashed,
-- frozen, woken or restarted, a provider call and its answer, the settings a run used, a
-- worker process joining or leaving. SQLite has one writer at a time, so Seq is
-- commit order: a dashboard tails it by Seq. Each insert gives it one more than the
-- largest so far, or than Seedings.LastSeq when the table was emptied, so it is never
-- reused (AUTOINCREMENT would write sqlite_sequence in every transaction for that).
CREATE TABLE IF NOT EXISTS LeaseEvents (
    Seq            INTEGER PRIMARY KEY,
    AtUtc          INTEGER NOT NULL,
    Worker         TEXT NOT NULL,
    Kind           TEXT NOT NULL
                   CHECK (Kind = 'Seeded' OR Kind = 'Added' OR Kind = 'Claimed'
                          OR Kind = 'Heartbeat' OR Kind = 'Finalized'
                          OR Kind = 'FinalizeRejected' OR Kind = 'Marked' OR Kind = 'Retry'
                          OR Kind = 'DeadLettered' OR Kind = 'LeaseLost' OR Kind = 'Redriven'
                          OR Kind = 'Crashed' OR Kind = 'Paused' OR Kind = 'Resumed'
                          OR Kind = 'Restarted' OR Kind = 'Checked' OR Kind = 'Settings'
                          OR Kind = 'Joined' OR Kind = 'Left'),
    MessageId      INTEGER,
    PaymentKey     TEXT,
    LeaseVersion   INTEGER,
    -- the lease's expiry, for a claim or a heartbeat
    LockedUntilUtc INTEGER,
    -- the provider's answer (Checked, Finalized, Marked), the error (Retry, DeadLettered),
    -- the number of payments seeded (Seeded), the settings (Settings, Joined), or how a
    -- worker was crashed, frozen, woken or stopped (Crashed, Paused, Resumed, Left; a
    -- restart names the worker it replaced)
    Detail         TEXT
);
