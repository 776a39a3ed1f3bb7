//! The row states as PostgreSQL stores them: the text their variant is named, in the
//! schema's text domains (`leaselab_outbox_status`, ...), read and written as the enums.

use std::error::Error;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, FromSql, IsNull, Kind, ToSql, Type};

use crate::outbox::{LeaseEventKind, OutboxStatus, PaymentStatus};

type BoxedError = Box<dyn Error + Sync + Send>;

/// Text, or a domain over text: the schema keeps each state in a domain of its own.
fn text_like(ty: &Type) -> bool {
    match ty.kind() {
        Kind::Domain(inner) => text_like(inner),
        _ => <&str as ToSql>::accepts(ty),
    }
}

/// `ToSql` and `FromSql` for a state stored as its variant's name; `$what` names it in the
/// error for a text no leaselab writes.
macro_rules! pg_text {
    ($name:ident, $what:literal) => {
        impl ToSql for $name {
            fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxedError> {
                self.as_str().to_sql(ty, out)
            }

            fn accepts(ty: &Type) -> bool {
                text_like(ty)
            }

            to_sql_checked!();
        }

        impl<'a> FromSql<'a> for $name {
            fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<$name, BoxedError> {
                let text = <&str as FromSql>::from_sql(ty, raw)?;
                $name::parse(text)
                    .ok_or_else(|| format!(concat!("unknown ", $what, " '{}'"), text).into())
            }

            fn accepts(ty: &Type) -> bool {
                text_like(ty)
            }
        }
    };
}

pg_text!(OutboxStatus, "outbox status");
pg_text!(PaymentStatus, "payment status");
pg_text!(LeaseEventKind, "LeaseEvents kind");

/// Column `i` of `row` as a state: a text no leaselab writes means the table is not ours,
/// said in the conversion's own words.
pub(super) fn state<'a, T: FromSql<'a>>(row: &'a postgres::Row, i: usize) -> super::Result<T> {
    row.try_get(i).map_err(|e| {
        super::PgError::Foreign(e.source().map_or_else(|| e.to_string(), |s| s.to_string()))
    })
}
