//! Every cell a student's statement may read: each row of `OutboxMessages` (by `Id`) and of
//! `Payments` (by key), every column, as SQLite holds it. The explorer keeps a state by
//! what its statements can read, and nothing a statement can read may be left out of it.

use rusqlite::types::ValueRef;

use super::{Result, Store};

/// One value as SQLite holds it; a real number by its bits, so a value can be hashed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cell {
    Null,
    Integer(i64),
    Real(u64),
    Text(String),
    Blob(Vec<u8>),
}

/// One table the sandbox lets a statement read: its columns' names and its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCells {
    pub table: &'static str,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// The tables, each in an order that does not depend on how its rows were written.
const READS: [(&str, &str); 2] = [
    ("OutboxMessages", "SELECT * FROM OutboxMessages ORDER BY Id"),
    ("Payments", "SELECT * FROM Payments ORDER BY IdempotencyKey"),
];

impl Store {
    /// Every cell of the tables a student's statement may read.
    pub fn student_cells(&self) -> Result<Vec<TableCells>> {
        let mut out = Vec::with_capacity(READS.len());
        for (table, sql) in READS {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let columns: Vec<String> = stmt.column_names().map(String::from).collect();
            let width = columns.len();
            let rows = stmt
                .query_map([], |r| {
                    (0..width)
                        .map(|i| r.get_ref(i).map(cell))
                        .collect::<rusqlite::Result<Vec<_>>>()
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            out.push(TableCells {
                table,
                columns,
                rows,
            });
        }
        Ok(out)
    }
}

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(n) => Cell::Integer(n),
        ValueRef::Real(x) => Cell::Real(x.to_bits()),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
    }
}
