//! The row states as SQLite stores them: the text their variant is named.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use super::{OutboxStatus, PaymentStatus};

/// `ToSql` and `FromSql` for a state stored as its variant's name.
macro_rules! sql_text {
    ($name:ident) => {
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let text = value.as_str()?;
                $name::parse(text).ok_or_else(|| {
                    FromSqlError::Other(format!("{} is not a {}", text, stringify!($name)).into())
                })
            }
        }
    };
}

sql_text!(OutboxStatus);
sql_text!(PaymentStatus);
