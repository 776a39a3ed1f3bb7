//! A write in one round trip: the write's one statement, prepared on the server once per
//! connection (so it is not planned again), run by `EXECUTE` with its arguments written in
//! as literals, and committed on its own. The client crate binds parameters only for
//! statements it prepares itself, which costs a round trip for the bind and one for the
//! commit of an explicit transaction; a statement that commits itself needs neither. Its
//! stamp comes from the event row's Seq, drawn under the row lock (see
//! `StoreShared::stamp_of_row`), so nothing needs to happen between the write and its
//! commit.

use postgres::SimpleQueryMessage;

use super::{PgStore, Result};

/// A statement prepared on the server under `name`, with its parameters' types.
pub(super) struct ServerStatement {
    pub name: &'static str,
    pub types: &'static str,
    pub sql: &'static str,
}

/// One argument, written into the `EXECUTE` as a literal.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg<'a> {
    Int(i64),
    Text(&'a str),
    Null,
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Arg<'a> {
        v.map_or(Arg::Null, Arg::Text)
    }
}

/// `arg` as SQL: a number, `NULL`, or a string with its quotes doubled (the session keeps
/// `standard_conforming_strings` on, so a backslash is just a backslash).
fn literal(arg: Arg<'_>) -> String {
    match arg {
        Arg::Int(n) => n.to_string(),
        Arg::Null => "NULL".to_string(),
        Arg::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// The rows of a statement run by simple query, each column as text (NULL as None).
pub(super) type TextRow = Vec<Option<String>>;

/// Column `i` of `row` as a number.
pub(super) fn int(row: &TextRow, i: usize) -> Option<i64> {
    row.get(i)?.as_deref()?.parse().ok()
}

/// Column `i` of `row` as text.
pub(super) fn text(row: &TextRow, i: usize) -> Option<String> {
    row.get(i)?.clone()
}

impl PgStore {
    /// Run `statement` on its own (it commits when it ends), in one round trip.
    pub(super) fn run_alone(
        &mut self,
        statement: &ServerStatement,
        args: &[Arg<'_>],
    ) -> Result<Vec<TextRow>> {
        if !self.on_server.contains(statement.name) {
            self.client.batch_execute(&format!(
                "SET standard_conforming_strings = on; PREPARE {} ({}) AS {}",
                statement.name, statement.types, statement.sql
            ))?;
            self.on_server.insert(statement.name);
        }
        let args: Vec<String> = args.iter().map(|a| literal(*a)).collect();
        let query = format!("EXECUTE {}({})", statement.name, args.join(", "));
        Ok(self
            .client
            .simple_query(&query)?
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => {
                    Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                }
                _ => None,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_doubles_quotes_and_writes_null_and_numbers_bare() {
        assert_eq!(literal(Arg::Text("Worker-A")), "'Worker-A'");
        assert_eq!(literal(Arg::Text("it's")), "'it''s'");
        assert_eq!(literal(Arg::Text(r"a\'; DROP")), r"'a\''; DROP'");
        assert_eq!(literal(Arg::Int(-7)), "-7");
        assert_eq!(literal(Arg::Null), "NULL");
    }
}
