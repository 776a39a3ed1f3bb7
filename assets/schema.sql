-- leaselab outbox schema. Times are integer milliseconds on the scenario clock.
CREATE TABLE IF NOT EXISTS Payments (
    IdempotencyKey TEXT PRIMARY KEY,
    Amount         INTEGER NOT NULL CHECK (Amount >= 0),
    PaymentStatus  TEXT NOT NULL DEFAULT 'Pending'
                   CHECK (PaymentStatus IN ('Pending', 'Paid', 'Failed')),
    TransactionId  TEXT,
    CreatedAtUtc   INTEGER NOT NULL
) WITHOUT ROWID;

-- Every seeding of the outbox, never emptied: its numbers never repeat in one database.
CREATE TABLE IF NOT EXISTS Seedings (
    Seeding        INTEGER PRIMARY KEY,
    AtUtc          INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS OutboxMessages (
    Id             INTEGER PRIMARY KEY,
    PaymentKey     TEXT NOT NULL UNIQUE REFERENCES Payments (IdempotencyKey),
    Status         TEXT NOT NULL DEFAULT 'Pending'
                   CHECK (Status IN ('Pending', 'Processing', 'Processed', 'DeadLettered')),
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
    ProcessedAtUtc INTEGER,
    -- a Processing row always has an owner and an expiry
    CHECK (Status <> 'Processing' OR (LockedBy IS NOT NULL AND LockedUntilUtc IS NOT NULL))
);

-- The claim asks two questions, each answered by its own small index so that a
-- claim stops at the first row instead of reading the whole backlog:
--   the oldest available Pending message, and the longest-expired Processing lease.
-- AvailableAtUtc is in the Pending index so rows still backing off are skipped in the index.
CREATE INDEX IF NOT EXISTS IX_Outbox_Pending
    ON OutboxMessages (CreatedAtUtc, Id, AvailableAtUtc) WHERE Status = 'Pending';
CREATE INDEX IF NOT EXISTS IX_Outbox_Leased
    ON OutboxMessages (LockedUntilUtc) WHERE Status = 'Processing';
-- Dead letters are few: counted and redriven without reading the rest of the outbox.
CREATE INDEX IF NOT EXISTS IX_Outbox_DeadLettered
    ON OutboxMessages (PaymentKey) WHERE Status = 'DeadLettered';

-- One row per claim, heartbeat, finalize, failed attempt, mark and seeding, written in the
-- same transaction as the change it describes. SQLite has one writer at a time, so Seq
-- (never reused, also after a reset) is commit order: a dashboard tails it by Seq.
CREATE TABLE IF NOT EXISTS LeaseEvents (
    Seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    AtUtc          INTEGER NOT NULL,
    Worker         TEXT NOT NULL,
    Kind           TEXT NOT NULL
                   CHECK (Kind IN ('Seeded', 'Added', 'Claimed', 'Heartbeat', 'Finalized',
                                   'FinalizeRejected', 'Marked', 'Retry', 'DeadLettered',
                                   'LeaseLost')),
    MessageId      INTEGER,
    PaymentKey     TEXT,
    LeaseVersion   INTEGER,
    -- the lease's expiry, for a claim or a heartbeat
    LockedUntilUtc INTEGER,
    -- the provider's answer (Finalized, Marked), the error (Retry, DeadLettered), or the
    -- number of payments seeded (Seeded)
    Detail         TEXT
);
