//! A connection with the statements of a claim and a finalize prepared once and kept with
//! it. rusqlite's statement cache finds a statement by its SQL text: every use hashes the
//! text twice, compares it and copies it into a fresh key, about a tenth of a leased
//! message's instructions. A statement here is found by its place in an array.

use std::cell::RefCell;
use std::ops::Deref;

use rusqlite::{Connection, Statement};

use super::Result;

/// The statements every leased message runs, each prepared on its first use from the SQL
/// its caller gives (the same text every time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hot {
    Begin,
    Commit,
    Rollback,
    Candidate,
    BrokenCandidate,
    TakeLease,
    BrokenTakeLease,
    RecordEvent,
    GuardedFinalize,
    OwnerOnlyFinalize,
    WriteAnswer,
}

/// How many [`Hot`] statements there are.
const HOT: usize = Hot::WriteAnswer as usize + 1;

/// One slot per [`Hot`] statement, empty until its first use.
pub(super) struct Prepared<'c>([RefCell<Option<(Statement<'c>, &'static str)>>; HOT]);

self_cell::self_cell!(
    /// A connection and the statements prepared on it, which go before it does.
    struct Cell {
        owner: Connection,
        #[not_covariant]
        dependent: Prepared,
    }
);

/// A connection and its [`Hot`] statements. Reads as the connection itself.
pub(super) struct Conn(Option<Cell>);

// SAFETY: a `Conn` is moved to another thread whole, the connection with every statement
// prepared on it, and nothing outside it borrows either (the cell keeps the borrows
// inside). SQLite's multi-thread mode, which these connections use, asks only that a
// connection and its statements are not used by two threads at once; `Conn` is not `Sync`,
// so they never are. rusqlite's `Connection`, which keeps its cached statements inside
// itself, is `Send` on the same grounds.
unsafe impl Send for Conn {}

fn cell(conn: Connection) -> Cell {
    Cell::new(conn, |_| {
        Prepared(std::array::from_fn(|_| RefCell::new(None)))
    })
}

impl Conn {
    pub fn new(conn: Connection) -> Conn {
        Conn(Some(cell(conn)))
    }

    fn cell(&self) -> &Cell {
        self.0
            .as_ref()
            .expect("a connection is only taken out while it is changed")
    }

    /// `body` with the connection and its statements.
    pub fn with<T>(&self, body: impl FnOnce(&Tx<'_, '_>) -> T) -> T {
        self.cell()
            .with_dependent(|conn, prepared| body(&Tx { conn, prepared }))
    }

    /// `change` with the connection itself (a database replaced under it): the prepared
    /// statements are dropped first and prepared again on their next use.
    pub fn with_mut<T>(&mut self, change: impl FnOnce(&mut Connection) -> T) -> T {
        let mut conn = self
            .0
            .take()
            .expect("a connection is only taken out while it is changed")
            .into_owner();
        let out = change(&mut conn);
        self.0 = Some(cell(conn));
        out
    }
}

impl Deref for Conn {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.cell().borrow_owner()
    }
}

/// The connection inside [`Conn::with`]: reads as the connection, and runs its [`Hot`]
/// statements.
pub(super) struct Tx<'c, 'p> {
    conn: &'c Connection,
    prepared: &'p Prepared<'c>,
}

impl<'c> Tx<'c, '_> {
    /// `step` with the statement `hot`, prepared from `sql` now if this is its first use.
    /// Its parameters are bound by position.
    pub fn run<T>(
        &self,
        hot: Hot,
        sql: &'static str,
        step: impl FnOnce(&mut Statement<'c>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut slot = self.prepared.0[hot as usize].borrow_mut();
        let (stmt, prepared_from) = match &mut *slot {
            Some(kept) => kept,
            empty => empty.insert((self.conn.prepare(sql)?, sql)),
        };
        debug_assert_eq!(*prepared_from, sql, "{hot:?} is one statement");
        Ok(step(stmt)?)
    }
}

impl Deref for Tx<'_, '_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// The value `sql` reads, and how many times the slot's statement has run so far.
    fn one(tx: &Tx<'_, '_>, sql: &'static str) -> Result<(i64, i32)> {
        tx.run(Hot::Candidate, sql, |s| {
            let value = s.query_row([], |r| r.get(0))?;
            Ok((value, s.get_status(StatementStatus::Run)))
        })
    }

    #[test]
    fn a_slot_keeps_its_statement_until_the_database_is_replaced() {
        let mut conn = Conn::new(Connection::open_in_memory().unwrap());
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);")
            .unwrap();
        let sql = "SELECT x FROM t";
        conn.with(|tx| {
            assert_eq!(one(tx, sql).unwrap(), (7, 1));
            tx.execute("UPDATE t SET x = 8", []).unwrap();
            assert_eq!(
                one(tx, sql).unwrap(),
                (8, 2),
                "the same statement, run again"
            );
        });
        conn.with(|tx| assert_eq!(one(tx, sql).unwrap(), (8, 3)));
        // The statements go with the old database and are prepared again on the new one.
        conn.with_mut(|c| {
            c.execute_batch("DROP TABLE t; CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (9);")
        })
        .unwrap();
        conn.with(|tx| assert_eq!(one(tx, sql).unwrap(), (9, 1)));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "is one statement")]
    fn a_slot_given_another_statement_is_a_defect() {
        let conn = Conn::new(Connection::open_in_memory().unwrap());
        conn.with(|tx| {
            one(tx, "SELECT 1").unwrap();
            let _ = one(tx, "SELECT 2");
        });
    }
}
