//! What a statement may not do although it stays inside `OutboxMessages` and `Payments`:
//! call a function whose value is not the rows' (this computer's clock, chance, what ran
//! before on the connection), change what a row is (its `Id`,
//! its payment's key, its seeding), or add a row the lab did not seed. A graded statement
//! must answer the same whenever the grader replays a schedule, from the rows alone.

/// The date and time functions: with `'now'` (or no time at all) each reads this
/// computer's clock. The lab's times are integer milliseconds on the scenario clock, so no
/// statement needs them, and all are refused.
pub const CLOCK: [&str; 7] = [
    "datetime",
    "date",
    "time",
    "julianday",
    "unixepoch",
    "strftime",
    "timediff",
];

/// `CURRENT_TIMESTAMP`, `CURRENT_DATE` and `CURRENT_TIME`, as the authorizer names them.
pub const NOW: [&str; 3] = ["current_timestamp", "current_date", "current_time"];

/// Chance.
pub const CHANCE: [&str; 2] = ["random", "randomblob"];

/// What ran before on the connection (the lab's own writes included), not the rows.
pub const HISTORY: [&str; 3] = ["changes", "total_changes", "last_insert_rowid"];

/// Functions that reach outside the database: a file, an extension.
pub const OUTSIDE: [&str; 5] = [
    "load_extension",
    "fts3_tokenizer",
    "readfile",
    "writefile",
    "edit",
];

fn among(list: &[&str], name: &str) -> bool {
    list.iter().any(|f| f.eq_ignore_ascii_case(name))
}

/// Why calling the function `name` is refused, or None. `only` is said after a refusal of
/// what reaches outside the database.
pub fn function(name: &str, only: &str) -> Option<String> {
    let f = crate::text::quoted(name).to_lowercase();
    const USE_NOW: &str =
        "the lab's times are integer milliseconds on the scenario clock: use :now";
    if among(&CLOCK, name) {
        Some(format!(
            "calls {f}(), which reads this computer's clock (for 'now'); {USE_NOW}"
        ))
    } else if among(&NOW, name) {
        Some(format!(
            "uses {}, which reads this computer's clock; {USE_NOW}",
            f.to_uppercase()
        ))
    } else if among(&CHANCE, name) {
        Some(format!(
            "calls {f}(), which is chance: a graded statement must do the same whenever a \
             schedule is run; choose by what the rows hold (ORDER BY CreatedAtUtc, Id)"
        ))
    } else if among(&HISTORY, name) {
        Some(format!(
            "calls {f}(), whose value is what ran before on this connection (the lab's own \
             writes included), not what the rows hold; use RETURNING, or let a statement \
             that changes no row end the operation"
        ))
    } else if among(&OUTSIDE, name) {
        Some(format!("may not call {f}; {only}"))
    } else {
        None
    }
}

/// The columns that say what a row is, with what each is to the lab: never changed by a
/// student's statement.
pub const IDENTITY: [(&str, &str, &str); 5] = [
    (
        "OutboxMessages",
        "Id",
        "the message's Id, which the lab knows it by",
    ),
    (
        "OutboxMessages",
        "ROWID",
        "the message's rowid, which is its Id",
    ),
    (
        "OutboxMessages",
        "PaymentKey",
        "the key that ties the message to its payment",
    ),
    (
        "OutboxMessages",
        "Seeding",
        "the seeding that made the row, which leases are fenced on",
    ),
    (
        "Payments",
        "IdempotencyKey",
        "the key that ties the payment to its message",
    ),
];

/// Why changing `column` of `table` is refused, or None.
pub fn update(table: &str, column: &str) -> Option<String> {
    IDENTITY
        .iter()
        .find(|(t, c, _)| t.eq_ignore_ascii_case(table) && c.eq_ignore_ascii_case(column))
        .map(|(t, c, what)| format!("may not change {t}.{c}, {what}"))
}

/// Why inserting into `table`, one of the two tables, is refused.
pub fn insert(table: &str) -> String {
    format!(
        "may not insert into {}: the lab seeds the messages and their payments, and a \
         claim takes one of those",
        crate::text::quoted(table)
    )
}
