//! What an engine holds its outbox through: the whole interface when it writes, or only
//! the reading part when it rebuilds a recorded run and writes nothing.

use crate::outbox::{Outbox, OutboxError, Reading};

pub enum Holding {
    /// The engine's own connection: it seeds, adds payments, redrives and records facts.
    Outbox(Box<dyn Outbox>),
    /// A reader only (a replay's rebuilt table): every write is refused.
    Reader(Box<dyn Reading + Send>),
}

impl Holding {
    pub fn reading(&self) -> &dyn Reading {
        match self {
            Holding::Outbox(o) => o.as_ref(),
            Holding::Reader(r) => r.as_ref(),
        }
    }

    pub fn writing(&mut self) -> Result<&mut dyn Outbox, OutboxError> {
        match self {
            Holding::Outbox(o) => Ok(o.as_mut()),
            Holding::Reader(_) => Err(OutboxError::Io("a replay writes nothing".into())),
        }
    }
}
