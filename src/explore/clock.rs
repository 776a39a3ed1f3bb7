//! The clock of a `--sql` search. A student's statement can only compare a time a row holds
//! with `:now` (or `:lease_until`, which is `:now` plus the lease), plus or minus a number
//! written in the file. So the answer of every comparison changes only at an instant
//! `t + k`, for a time `t` some row (or a worker's memory) holds and an offset `k` among the
//! file's numbers and the lease. The search moves the clock to just before, at and just
//! after the nearest such instant, and again from there: every instant at which an answer
//! may change is reached, and none between two of them is needed.
//!
//! A state keeps its times relative to the clock. A time older than every offset compares
//! the same way with every `:now ± k` from then on, so such times are kept by their order
//! alone: the search then closes. A file with a number of a million or more may compare a
//! time with a moment of the day itself; the clock's own time is then kept too.

use std::collections::BTreeSet;

use crate::engine::student::Exercise;

/// The lease every claim takes, as in the lessons.
pub const LEASE_MS: i64 = 3_000;

/// The time columns of the tables a statement may read: (table, column).
pub const TIME_COLUMNS: [(&str, &str); 5] = [
    ("OutboxMessages", "CreatedAtUtc"),
    ("OutboxMessages", "LockedUntilUtc"),
    ("OutboxMessages", "AvailableAtUtc"),
    ("OutboxMessages", "ProcessedAtUtc"),
    ("Payments", "CreatedAtUtc"),
];

/// A number this large may be a moment of the day (the scenario clock starts at 09:00,
/// 32,400,000 ms), not an offset: the clock's own time is then part of a state.
const ABSOLUTE_FROM: i64 = 1_000_000;

/// How far ahead of the clock a time may lie and still be reached: a lease that ends
/// later than this after the clock's time (beyond the file's largest offset) is taken
/// for one that never ends.
pub const HORIZON_MS: i64 = 60_000;

/// What the search knows of the file's use of time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeModel {
    /// Every offset `d` such that a comparison may change its answer when the clock
    /// passes `t + d`, for a time `t`: 0, each number the file adds to or subtracts from a
    /// time or the clock (both ways where the file does not say), and minus the lease
    /// where `:lease_until` is read.
    pub offsets: Vec<i64>,
    /// What a statement run now may write, as offsets from the clock: `:now` plus each
    /// offset, and `:lease_until` (the lease) likewise.
    pub written: Vec<i64>,
    /// A time this far or more before the clock is old: kept by its order alone.
    pub window: i64,
    /// The farthest ahead of the clock the search moves it.
    pub horizon: i64,
    /// The file holds a number that may be a moment of the day.
    pub absolute: bool,
    /// How the file uses each column it names (lowercased, the most it does with it);
    /// none when it may read every column (`*`, `NATURAL`).
    uses: Option<std::collections::BTreeMap<String, Use>>,
    /// How it uses each time column, worked out once: `(table, column, use)`.
    times: Vec<(&'static str, &'static str, Use)>,
    /// The file multiplies or divides the clock itself (`:now / 1000`): its times are in
    /// other units, and the instants at which its comparisons change are not all known. A
    /// search of it finds real schedules, but cannot say that none breaks it, nor that a
    /// message is stuck.
    pub scaled: bool,
    /// The file treats a worker's name as a name only ([`names_only`]): renaming the
    /// workers is a symmetry of its searches.
    pub names_only: bool,
    /// Each table's columns' classes ([`TimeModel::class`]), in the order the cells hold
    /// them, worked out at the first state.
    columns: std::sync::OnceLock<Vec<Vec<Option<Use>>>>,
}

impl TimeModel {
    /// The model of `exercise`'s statements.
    pub fn of(exercise: &Exercise) -> TimeModel {
        let mut numbers = BTreeSet::new();
        let mut words = Vec::new();
        let mut every = false;
        let mut computed: BTreeSet<i64> = BTreeSet::new();
        let mut scaled = false;
        for op in [Some(&exercise.claim), Some(&exercise.finalize)]
            .into_iter()
            .chain([exercise.heartbeat.as_ref()])
            .flatten()
        {
            for s in &op.statements {
                every |= scan(&s.sql, &mut numbers, &mut words);
                let t = tokens(&s.sql);
                computed.extend(computed_of(&t));
                scaled |= scales_the_clock(&t);
            }
        }
        // (Of the numbers the file writes: a product is an offset, not a moment.)
        let absolute = numbers
            .iter()
            .any(|n| n.unsigned_abs() >= ABSOLUTE_FROM as u64 && *n != -LEASE_MS);
        // A threshold the file computes (`30 * 1000`, `(:now - t) / 1000 > 2`) is reached
        // as one it writes, both ways.
        for c in computed {
            numbers.extend([c, c.saturating_neg()]);
        }
        let mut offsets: BTreeSet<i64> = numbers.into_iter().collect();
        offsets.insert(0);
        let offsets: Vec<i64> = offsets.into_iter().collect();
        let largest = offsets
            .iter()
            .map(|d| d.saturating_abs())
            .max()
            .unwrap_or(0);
        let mut uses = std::collections::BTreeMap::new();
        for (w, how) in words {
            let kept = uses.entry(w).or_insert(how);
            *kept = (*kept).max(how);
        }
        let mut written: BTreeSet<i64> = BTreeSet::from([0, LEASE_MS]);
        for d in &offsets {
            written.extend([
                *d,
                -*d,
                LEASE_MS.saturating_add(*d),
                LEASE_MS.saturating_sub(*d),
            ]);
        }
        let mut model = TimeModel {
            written: written.into_iter().collect(),
            window: largest.saturating_add(2),
            horizon: largest.saturating_add(HORIZON_MS),
            absolute,
            offsets,
            uses: (!every).then_some(uses),
            times: Vec::new(),
            columns: std::sync::OnceLock::new(),
            names_only: names_only(exercise),
            scaled,
        };
        model.times = TIME_COLUMNS
            .iter()
            .map(|(t, c)| (*t, *c, model.use_of(c)))
            .collect();
        model
    }

    /// Each column's class, table by table, as `cells` hold them (the same in every state).
    pub fn classes(&self, cells: &[crate::engine::store::TableCells]) -> &[Vec<Option<Use>>] {
        self.columns.get_or_init(|| {
            cells
                .iter()
                .map(|t| t.columns.iter().map(|c| self.class(t.table, c)).collect())
                .collect()
        })
    }

    /// How the statements use `column` of `table` when it holds a time; None for a column
    /// that holds none. (Worked out when the model was made: this is asked of every cell.)
    pub fn class(&self, table: &str, column: &str) -> Option<Use> {
        self.times
            .iter()
            .find(|(t, c, _)| c.eq_ignore_ascii_case(column) && t.eq_ignore_ascii_case(table))
            .map(|(_, _, u)| *u)
    }

    /// How the statements use `column`. The lease's end is always compared: the checks
    /// compare it with the clock.
    pub fn use_of(&self, column: &str) -> Use {
        if column.eq_ignore_ascii_case("LockedUntilUtc") {
            return Use::Compared;
        }
        match &self.uses {
            None => Use::Compared,
            Some(uses) => uses
                .get(&column.to_ascii_lowercase())
                .copied()
                .unwrap_or(Use::Unread),
        }
    }

    /// Whether a statement may compare `column` with the clock.
    pub fn reads(&self, column: &str) -> bool {
        self.use_of(column) == Use::Compared
    }

    /// Whether `column` of `table` holds a time.
    pub fn is_time(table: &str, column: &str) -> bool {
        TIME_COLUMNS
            .iter()
            .any(|(t, c)| t.eq_ignore_ascii_case(table) && c.eq_ignore_ascii_case(column))
    }

    /// The move of the clock from `now`, as how far it goes: to the next instant that is
    /// just before, at or just after an instant at which a comparison of one of `times`
    /// may change its answer, within the horizon. None when no such instant lies ahead.
    /// Taken again and again, interleaved with every worker's steps, it stands the clock at
    /// each of them in turn.
    pub fn ticks(&self, now: i64, times: impl Iterator<Item = i64>) -> Vec<i64> {
        let mut next: Option<i64> = None;
        for t in times {
            for d in &self.offsets {
                let c = t.saturating_add(*d);
                for at in [c.saturating_sub(1), c, c.saturating_add(1)] {
                    if at > now && next.is_none_or(|n| at < n) {
                        next = Some(at);
                    }
                }
            }
        }
        next.filter(|t| t - now <= self.horizon)
            .map(|t| vec![t - now])
            .unwrap_or_default()
    }
}

/// A time as a state keeps it: how far from the clock, or, when older than every offset,
/// its place among the old times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rel {
    At(i64),
    Old(usize),
}

/// The times of one state, to keep relative to its clock.
pub struct Relative {
    now: i64,
    window: i64,
    absolute: bool,
    old: Vec<i64>,
}

impl Relative {
    /// For the state at `now` holding `times` (every time its fingerprint keeps).
    pub fn new(model: &TimeModel, now: i64, times: impl Iterator<Item = i64>) -> Relative {
        let window = model.window;
        let mut old: Vec<i64> = times
            .filter(|t| now.saturating_sub(*t) > window && !model.absolute)
            .collect();
        old.sort_unstable();
        old.dedup();
        Relative {
            now,
            window,
            absolute: model.absolute,
            old,
        }
    }

    pub fn rel(&self, t: i64) -> Rel {
        if self.absolute {
            return Rel::At(t);
        }
        if self.now.saturating_sub(t) > self.window {
            return Rel::Old(self.old.binary_search(&t).unwrap_or(0));
        }
        Rel::At(t.saturating_sub(self.now))
    }

    /// The clock's own time, as the fingerprint keeps it: only when the file may compare
    /// a time with a moment of the day.
    pub fn clock(&self) -> Option<i64> {
        self.absolute.then_some(self.now)
    }
}

/// How the file's statements use a time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Use {
    /// Never read: only written (`SET col = ...`), or never named. Its value cannot reach
    /// an answer; whether it is NULL can (the schema's CHECKs ask).
    Unread,
    /// Only ordered by (`ORDER BY col`): its values' order among the rows matters.
    Ordered,
    /// Read anywhere else: compared, computed with, returned.
    Compared,
}

/// One token of a statement: a word (an identifier or keyword, lowercased; a quoted
/// identifier too), a parameter, a number, or a piece of punctuation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Param(String),
    Number(String),
    Punct(String),
}

/// The tokens of `sql`, its string literals and comments left out.
fn tokens(sql: &str) -> Vec<Token> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                // A string that holds a number compares as one: `'1000'`.
                let end = past(b, i + 1, b"'");
                let inner = sql.get(i + 1..end.saturating_sub(1)).unwrap_or("").trim();
                if !inner.is_empty() && inner.parse::<f64>().is_ok() {
                    out.push(Token::Number(inner.to_string()));
                }
                i = end;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => i = past(b, i, b"\n"),
            b'/' if b.get(i + 1) == Some(&b'*') => i = past(b, i + 2, b"*/"),
            b'"' | b'`' | b'[' => {
                let close: &[u8] = match c {
                    b'"' => b"\"",
                    b'`' => b"`",
                    _ => b"]",
                };
                let end = past(b, i + 1, close);
                let inner = sql
                    .get(i + 1..end.saturating_sub(close.len()))
                    .unwrap_or("");
                out.push(Token::Word(inner.to_ascii_lowercase()));
                i = end;
            }
            b':' | b'@' | b'$' | b'?' => {
                let start = i;
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Token::Param(sql[start..i].to_ascii_lowercase()));
            }
            _ if starts_number(b, i) => {
                let end = number_end(b, i);
                out.push(Token::Number(sql[i..end].to_string()));
                i = end;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80)
                {
                    i += 1;
                }
                out.push(Token::Word(sql[start..i].to_ascii_lowercase()));
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                let two = sql.get(i..i + 2).unwrap_or("");
                let n = if ["<=", ">=", "<>", "!=", "==", "||"].contains(&two) {
                    2
                } else {
                    1
                };
                out.push(Token::Punct(sql.get(i..i + n).unwrap_or("?").to_string()));
                i += n;
            }
        }
    }
    out
}

/// The columns of the two tables that hold no time: a number beside one of them is no
/// offset of a time.
const OTHER_COLUMNS: [&str; 7] = [
    "id",
    "leaseversion",
    "attempts",
    "amount",
    "seeding",
    "status",
    "paymentstatus",
];

const OPERATORS: [&str; 10] = ["+", "-", "<", "<=", ">", ">=", "=", "==", "<>", "!="];

/// What `sql` tells of its use of time: every number that may be an offset of a time (the
/// lease's length among them when `:lease_until` is read, not only written), and how each
/// time column is used; true when it may read every column (`*`, `NATURAL`).
fn scan(sql: &str, numbers: &mut BTreeSet<i64>, uses: &mut Vec<(String, Use)>) -> bool {
    let t = tokens(sql);
    let word = |i: usize| match t.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let punct = |i: usize, p: &str| matches!(t.get(i), Some(Token::Punct(q)) if q == p);
    let mut every = false;
    let mut depth = 0usize;
    // The depth at which an UPDATE's SET list, or an ORDER BY, is open.
    let (mut set_at, mut order_at): (Option<usize>, Option<usize>) = (None, None);
    for i in 0..t.len() {
        match &t[i] {
            Token::Punct(p) if p == "(" => depth += 1,
            Token::Punct(p) if p == ")" => {
                depth = depth.saturating_sub(1);
                set_at = set_at.filter(|d| *d <= depth);
                order_at = order_at.filter(|d| *d <= depth);
            }
            Token::Punct(p) if p == "*" => every = true,
            Token::Param(p) if p == ":lease_until" => {
                // `SET LockedUntilUtc = :lease_until` only writes it; anything else compares
                // a time with the clock plus the lease.
                let written = set_at == Some(depth)
                    && i >= 2
                    && punct(i - 1, "=")
                    && word(i - 2).is_some()
                    && (t.get(i + 1).is_none()
                        || punct(i + 1, ",")
                        || matches!(word(i + 1), Some("where" | "returning" | "from")));
                if !written {
                    numbers.insert(-LEASE_MS);
                }
            }
            Token::Number(n) => offsets_at(&t, i, n, numbers),
            Token::Word(w) => {
                match w.as_str() {
                    "natural" => every = true,
                    "set" => set_at = Some(depth),
                    "where" | "from" | "returning" if set_at == Some(depth) => set_at = None,
                    "order" if word(i + 1) == Some("by") => order_at = Some(depth),
                    "limit" | "offset" if order_at == Some(depth) => order_at = None,
                    _ => {}
                }
                let after = |p: &str| i > 0 && (punct(i - 1, p) || word(i - 1) == Some(p));
                let assigned =
                    set_at == Some(depth) && (after("set") || after(",")) && punct(i + 1, "=");
                let ends_item = t.get(i + 1).is_none()
                    || punct(i + 1, ",")
                    || punct(i + 1, ")")
                    || matches!(
                        word(i + 1),
                        Some("asc" | "desc" | "limit" | "offset" | "nulls")
                    );
                let ordered = order_at == Some(depth) && (after("by") || after(",")) && ends_item;
                let how = if assigned {
                    Use::Unread
                } else if ordered {
                    Use::Ordered
                } else {
                    Use::Compared
                };
                uses.push((w.clone(), how));
            }
            _ => {}
        }
    }
    every
}

/// Whether the claim compares a message's `Attempts` with something: a claim that stops
/// taking a message after some attempts gives it up on purpose.
pub fn claim_asks_attempts(exercise: &Exercise) -> bool {
    const COMPARE: [&str; 8] = ["<", "<=", ">", ">=", "=", "==", "<>", "!="];
    exercise.claim.statements.iter().any(|s| {
        let t = tokens(&s.sql);
        let cmp =
            |i: usize| matches!(t.get(i), Some(Token::Punct(p)) if COMPARE.contains(&p.as_str()));
        let assigned = |i: usize| {
            i > 0
                && (matches!(&t[i - 1], Token::Word(w) if w == "set")
                    || matches!(&t[i - 1], Token::Punct(p) if p == ","))
        };
        (0..t.len()).any(|i| {
            matches!(&t[i], Token::Word(w) if w == "attempts")
                && ((cmp(i + 1) && !assigned(i))
                    || (i >= 2 && cmp(i - 1) && !assigned(i - 2))
                    || (i == 1 && cmp(0)))
        })
    })
}

/// The offsets the number `n` (token `i` of `t`) may stand for: none beside `LIMIT` or a
/// column that holds no time.
fn offsets_at(t: &[Token], i: usize, n: &str, numbers: &mut BTreeSet<i64>) {
    let word = |i: usize| match t.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let operator =
        |i: usize| matches!(t.get(i), Some(Token::Punct(q)) if OPERATORS.contains(&q.as_str()));
    let other = |i: usize| word(i).is_some_and(|w| OTHER_COLUMNS.contains(&w));
    let limit = i > 0 && matches!(word(i - 1), Some("limit" | "offset"));
    let beside_other =
        (i >= 2 && operator(i - 1) && other(i - 2)) || (operator(i + 1) && other(i + 2));
    if !limit && !beside_other {
        // `:now - k` meets a time t at t + k, `:now + k` at t - k, and
        // `:lease_until + k` at t - lease - k; `t + k` meets the clock at t + k.
        let sign = match (i >= 2).then(|| &t[i - 1]) {
            Some(Token::Punct(p)) if p == "+" => 1,
            Some(Token::Punct(p)) if p == "-" => -1,
            _ => 0,
        };
        let before = if sign != 0 { t.get(i - 2) } else { None };
        for k in integers(n) {
            match before {
                Some(Token::Param(p)) if p == ":now" => {
                    numbers.insert(-sign * k);
                }
                Some(Token::Param(p)) if p == ":lease_until" => {
                    numbers.insert(-LEASE_MS - sign * k);
                }
                Some(Token::Word(w)) if is_time_word(w) => {
                    numbers.insert(sign * k);
                }
                _ => {
                    numbers.insert(k);
                    numbers.insert(-k);
                }
            }
        }
    }
}

/// Whether the file treats a worker's name as a name only, so that renaming the workers
/// of a state gives a state that behaves alike: `:worker` is only compared with `LockedBy`
/// for (in)equality or written to it, `LockedBy` is only so compared, compared with NULL,
/// written NULL, or returned at the top level; no string names a worker; nothing reads
/// every column. Anything else (sorting by the owner, `LockedBy < :worker`, `length(...)`,
/// a copy of `:worker` in another column) keeps the search over every state.
pub fn names_only(exercise: &Exercise) -> bool {
    const EQ: [&str; 4] = ["=", "==", "<>", "!="];
    let ops = [Some(&exercise.claim), Some(&exercise.finalize)]
        .into_iter()
        .chain([exercise.heartbeat.as_ref()])
        .flatten();
    ops.flat_map(|op| op.statements.iter()).all(|s| {
        // A string that may name a worker: only the parameter and the column may.
        if literal_names_worker(&s.sql) {
            return false;
        }
        let t = tokens(&s.sql);
        let word = |i: usize| match t.get(i) {
            Some(Token::Word(w)) => Some(w.as_str()),
            _ => None,
        };
        let eq = |i: usize| matches!(t.get(i), Some(Token::Punct(p)) if EQ.contains(&p.as_str()));
        let param = |i: usize| matches!(t.get(i), Some(Token::Param(p)) if p == ":worker");
        let owner = |i: usize| word(i) == Some("lockedby");
        let mut depth = 0usize;
        for i in 0..t.len() {
            match &t[i] {
                Token::Punct(p) if p == "(" => depth += 1,
                Token::Punct(p) if p == ")" => depth = depth.saturating_sub(1),
                Token::Punct(p) if p == "*" => return false,
                Token::Word(w) if w == "natural" => return false,
                Token::Param(p) if p == ":worker" => {
                    let beside =
                        (i >= 2 && eq(i - 1) && owner(i - 2)) || (eq(i + 1) && owner(i + 2));
                    if !beside {
                        return false;
                    }
                }
                Token::Word(w) if w == "lockedby" => {
                    let null = |i: usize| word(i) == Some("null");
                    let compared = (eq(i + 1) && (param(i + 2) || null(i + 2)))
                        || (i >= 2 && eq(i - 1) && param(i - 2))
                        || (word(i + 1) == Some("is")
                            && (null(i + 2) || (word(i + 2) == Some("not") && null(i + 3))));
                    let listed = depth == 0
                        && i >= 1
                        && (matches!(word(i - 1), Some("select" | "returning"))
                            || matches!(&t[i - 1], Token::Punct(p) if p == ","))
                        && (t.get(i + 1).is_none()
                            || matches!(word(i + 1), Some("from"))
                            || matches!(t.get(i + 1), Some(Token::Punct(p)) if p == ","));
                    if !(compared || listed) {
                        return false;
                    }
                }
                _ => {}
            }
        }
        true
    })
}

/// A string literal of `sql` that holds the word "worker" (any case).
fn literal_names_worker(sql: &str) -> bool {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            let end = past(b, i + 1, b"'");
            let inner = sql.get(i + 1..end.saturating_sub(1)).unwrap_or("");
            if inner.to_ascii_lowercase().contains("worker") {
                return true;
            }
            i = end;
        } else {
            i += 1;
        }
    }
    false
}

/// The thresholds a statement computes: each product `a * b` of two numbers it writes, and
/// for each number it divides by (`/ f`), every other number it writes times `f`, and one
/// more and one less times `f` (`x / 1000 > 2` holds from `x = 3000`). At most 64.
fn computed_of(t: &[Token]) -> Vec<i64> {
    let op = |i: usize, o: &str| matches!(t.get(i), Some(Token::Punct(p)) if p == o);
    let number = |i: usize| match t.get(i) {
        Some(Token::Number(n)) => integers(n),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    let mut divisors = Vec::new();
    let mut plain = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        if !matches!(tok, Token::Number(_)) {
            continue;
        }
        if op(i + 1, "*") {
            for a in number(i) {
                out.extend(number(i + 2).into_iter().map(|b| a.saturating_mul(b)));
            }
        }
        if i > 0 && op(i - 1, "/") {
            divisors.extend(number(i).into_iter().filter(|f| *f > 1));
        } else if !(op(i + 1, "*") || (i > 0 && op(i - 1, "*"))) {
            plain.extend(number(i));
        }
    }
    for f in &divisors {
        for n in &plain {
            for m in [n - 1, *n, n + 1] {
                out.push(m.saturating_mul(*f));
            }
        }
    }
    out.truncate(64);
    out
}

/// Whether a statement multiplies or divides `:now` or `:lease_until` itself.
fn scales_the_clock(t: &[Token]) -> bool {
    let by = |i: usize| matches!(t.get(i), Some(Token::Punct(p)) if p == "*" || p == "/");
    t.iter().enumerate().any(|(i, tok)| {
        matches!(tok, Token::Param(p) if p == ":now" || p == ":lease_until")
            && ((i > 0 && by(i - 1)) || by(i + 1))
    })
}

/// A word that names a time column.
fn is_time_word(w: &str) -> bool {
    TIME_COLUMNS.iter().any(|(_, c)| c.eq_ignore_ascii_case(w))
}

/// The index just past the first `close` at or after `from` (the end, if none).
fn past(b: &[u8], from: usize, close: &[u8]) -> usize {
    let mut i = from;
    while i + close.len() <= b.len() {
        if &b[i..i + close.len()] == close {
            return i + close.len();
        }
        i += 1;
    }
    b.len()
}

/// A number starts at `i`: a digit, or a point before a digit, not inside a word.
fn starts_number(b: &[u8], i: usize) -> bool {
    let in_word = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let digit =
        b[i].is_ascii_digit() || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
    !in_word && digit
}

fn number_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len()
        && (b[j].is_ascii_alphanumeric()
            || b[j] == b'.'
            || (matches!(b[j], b'+' | b'-') && j > i && matches!(b[j - 1], b'e' | b'E')))
    {
        j += 1;
    }
    j
}

/// The integers a numeric literal may stand for as an offset: itself, or the two around
/// a number that is not whole.
fn integers(text: &str) -> Vec<i64> {
    let t = text.to_ascii_lowercase();
    if let Some(hex) = t.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16)
            .map(|n| vec![n])
            .unwrap_or_default();
    }
    if let Ok(n) = t.parse::<i64>() {
        return vec![n];
    }
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x.abs() < 9.0e18 => {
            let (lo, hi) = (x.floor() as i64, x.ceil() as i64);
            if lo == hi {
                vec![lo]
            } else {
                vec![lo, hi]
            }
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(sql: &str) -> (Vec<i64>, Vec<(String, Use)>, bool) {
        let (mut n, mut w) = (BTreeSet::new(), Vec::new());
        let every = scan(sql, &mut n, &mut w);
        (n.into_iter().collect(), w, every)
    }

    fn use_of(sql: &str, column: &str) -> Use {
        let (_, w, _) = scanned(sql);
        w.iter()
            .filter(|(c, _)| c == column)
            .map(|(_, u)| *u)
            .max()
            .unwrap_or(Use::Unread)
    }

    #[test]
    fn numbers_outside_comments_and_parameters_are_offsets() {
        let (n, _, every) = scanned(
            "SELECT Id FROM OutboxMessages WHERE LockedUntilUtc < :now - 1000 -- 77\n\
             AND LastError <> '55' AND x2 = 0x10 AND y = 2.5 /* 99 */ LIMIT 1",
        );
        // `:now - 1000` meets a time t when the clock passes t + 1000; a number the file
        // does not tie to a time or the clock is taken both ways.
        // A number in a string compares as one.
        assert_eq!(n, vec![-55, -16, -3, -2, 2, 3, 16, 55, 1000]);
        assert!(!every);
    }

    #[test]
    fn a_number_beside_a_column_that_holds_no_time_is_no_offset() {
        let (n, _, _) = scanned(
            "UPDATE OutboxMessages SET Attempts = Attempts + 1, LeaseVersion = 1 + LeaseVersion \
             WHERE Attempts < 3 AND AvailableAtUtc <= :now + 250",
        );
        assert_eq!(n, vec![-250]);
    }

    #[test]
    fn a_column_only_written_or_only_ordered_by_is_not_compared() {
        let claim = "UPDATE OutboxMessages SET Status = 'Processing', ProcessedAtUtc = :now \
             WHERE Id = (SELECT Id FROM OutboxMessages ORDER BY CreatedAtUtc, Id LIMIT 1) \
             RETURNING Id, LeaseVersion";
        assert_eq!(use_of(claim, "processedatutc"), Use::Unread);
        assert_eq!(use_of(claim, "createdatutc"), Use::Ordered);
        let compared = "SELECT Id FROM OutboxMessages WHERE ProcessedAtUtc < :now ORDER BY \
             CreatedAtUtc < :now LIMIT 1";
        assert_eq!(use_of(compared, "processedatutc"), Use::Compared);
        assert_eq!(use_of(compared, "createdatutc"), Use::Compared);
        let returned = "UPDATE OutboxMessages SET LockedUntilUtc = :lease_until WHERE Id = :id \
             RETURNING Id, LeaseVersion, AvailableAtUtc";
        assert_eq!(use_of(returned, "availableatutc"), Use::Compared);
    }

    #[test]
    fn a_claim_asks_attempts_when_it_compares_them_not_when_it_counts_them() {
        let claim = |sql: &str| {
            let text = format!(
                "name = \"t\"\ntitle = \"t\"\ntask = \"t\"\n[claim]\ntransaction = \"immediate\"\n\
                 statements = [\"\"\"{sql}\"\"\"]\n[finalize]\ntransaction = \"immediate\"\n\
                 statements = [\"UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now \
                 WHERE Id = :id\"]\n"
            );
            claim_asks_attempts(&Exercise::parse(&text, "t.toml").expect("it loads"))
        };
        let counts = "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, \
             LockedUntilUtc = :lease_until, Attempts = Attempts + 1, LeaseVersion = LeaseVersion + 1 \
             WHERE Id = (SELECT Id FROM OutboxMessages WHERE Status = 'Pending' LIMIT 1) \
             RETURNING Id, LeaseVersion";
        assert!(!claim(counts));
        let asks = counts.replace(
            "WHERE Status = 'Pending'",
            "WHERE Status = 'Pending' AND Attempts < 3",
        );
        assert!(claim(&asks));
        let asks = counts.replace(
            "WHERE Status = 'Pending'",
            "WHERE Status = 'Pending' AND 3 > Attempts",
        );
        assert!(claim(&asks));
    }

    fn names_only_of(claim: &str) -> bool {
        let text = format!(
            "name = \"t\"\ntitle = \"t\"\ntask = \"t\"\n[claim]\ntransaction = \"immediate\"\n\
             statements = [\"\"\"{claim}\"\"\"]\n[finalize]\ntransaction = \"immediate\"\n\
             statements = [\"UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, \
             LockedBy = NULL WHERE Id = :id AND LockedBy = :worker\"]\n"
        );
        names_only(&Exercise::parse(&text, "t.toml").expect("it loads"))
    }

    #[test]
    fn a_file_treats_names_as_names_only_when_it_only_compares_and_writes_them() {
        let take = "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, \
             LockedUntilUtc = :lease_until WHERE Id = (SELECT Id FROM OutboxMessages WHERE \
             Status = 'Pending' OR LockedBy IS NULL ORDER BY Id LIMIT 1) RETURNING Id, LeaseVersion";
        assert!(names_only_of(take));
        assert!(!names_only_of(
            &take.replace("ORDER BY Id", "ORDER BY LockedBy")
        ));
        assert!(!names_only_of(
            &take.replace("LockedBy IS NULL", "LockedBy < :worker")
        ));
        assert!(!names_only_of(
            &take.replace("LockedBy IS NULL", "LockedBy = 'Worker-A'")
        ));
        assert!(!names_only_of(
            &take.replace("LockedBy = :worker", "LastError = :worker")
        ));
        assert!(!names_only_of(&take.replace(
            "SELECT Id FROM OutboxMessages",
            "SELECT Id FROM OutboxMessages NATURAL JOIN Payments"
        )));
    }

    #[test]
    fn the_lease_is_an_offset_only_where_lease_until_is_read() {
        let written = "UPDATE OutboxMessages SET LockedUntilUtc = :lease_until, Attempts = 1 \
             WHERE Id = :id RETURNING Id, LeaseVersion";
        assert!(scanned(written).0.is_empty());
        let read = "UPDATE OutboxMessages SET LockedUntilUtc = MAX(LockedUntilUtc, :lease_until) \
             WHERE Id = :id";
        assert_eq!(scanned(read).0, vec![-LEASE_MS]);
    }

    #[test]
    fn a_star_or_a_natural_join_reads_every_column() {
        assert!(scanned("SELECT * FROM OutboxMessages").2);
        assert!(scanned("SELECT o.Id FROM OutboxMessages o NATURAL JOIN Payments p").2);
        assert!(!scanned("SELECT '*' FROM OutboxMessages").2);
        let sql = "SELECT \"AvailableAtUtc\", [CreatedAtUtc] FROM OutboxMessages";
        assert_eq!(use_of(sql, "availableatutc"), Use::Compared);
        assert_eq!(use_of(sql, "createdatutc"), Use::Compared);
    }

    /// A model with these offsets, a window and horizon to match.
    fn model_of(offsets: Vec<i64>) -> TimeModel {
        TimeModel {
            offsets,
            written: vec![0, 3000],
            window: 3002,
            horizon: 63_000,
            absolute: false,
            uses: None,
            times: Vec::new(),
            columns: std::sync::OnceLock::new(),
            names_only: false,
            scaled: false,
        }
    }

    #[test]
    fn the_clock_moves_before_at_and_after_the_nearest_instant_an_answer_may_change() {
        let model = model_of(vec![-3000, 0, 1000]);
        // A lease ending at 5000, the clock at 0: the nearest instant is 5000 - 3000, and
        // the clock stands just before it, at it and just after it in turn.
        assert_eq!(model.ticks(0, [5000].into_iter()), vec![1999]);
        assert_eq!(model.ticks(1999, [5000].into_iter()), vec![1]);
        assert_eq!(model.ticks(2000, [5000].into_iter()), vec![1]);
        // Then just before the lease's end, at it, after it.
        assert_eq!(model.ticks(2001, [5000].into_iter()), vec![2998]);
        assert_eq!(model.ticks(5000, [5000].into_iter()), vec![1]);
        // A lease that ends beyond the horizon is never reached.
        assert!(model.ticks(0, [i64::MAX].into_iter()).is_empty());
        // Nothing ahead: the clock stands.
        assert!(model.ticks(10_000, [0].into_iter()).is_empty());
    }

    #[test]
    fn old_times_keep_their_order_and_nothing_else() {
        let model = model_of(vec![-3000, 0]);
        let r = Relative::new(&model, 100_000, [1, 50, 99_000].into_iter());
        assert_eq!(r.rel(1), Rel::Old(0));
        assert_eq!(r.rel(50), Rel::Old(1));
        assert_eq!(r.rel(99_000), Rel::At(-1000));
        assert_eq!(r.clock(), None);
    }
}
