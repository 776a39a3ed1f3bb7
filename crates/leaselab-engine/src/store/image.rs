//! A whole database as bytes, and back: how the explorer keeps each state it reaches (a
//! real SQLite database, copied in memory) and returns to it. And the weaker rules it
//! compares leaselab's own against.

use rusqlite::MAIN_DB;

use super::{Result, Store};

/// Rules weaker than leaselab's, for the explorer to compare. Never set by the engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rules {
    /// The finalize checks the owner's name only, not the lease version (fencing token).
    pub owner_only_finalize: bool,
    /// The claim takes the oldest unfinished message, live lease or not (a defect the
    /// explorer's tests plant on purpose).
    pub broken_claim: bool,
    /// The finalize marks the message Processed without writing the provider's answer
    /// (another planted defect: the answer is lost).
    pub forget_answer: bool,
}

impl Store {
    /// Use `rules` instead of leaselab's own from now on.
    pub fn set_rules(&mut self, rules: Rules) {
        self.rules = rules;
    }

    /// The database as it stands, as the bytes of its file (in rollback-journal format, so
    /// that it can live in memory: see [`Store::restore_image`]).
    pub fn image(&mut self) -> Result<Vec<u8>> {
        let mut bytes = self
            .conn
            .with_mut(|c| c.serialize(MAIN_DB).map(|d| d.to_vec()))?;
        // Bytes 18 and 19 say WAL (2) or rollback journal (1); an in-memory database
        // cannot use WAL.
        if bytes.len() > 19 {
            bytes[18] = 1;
            bytes[19] = 1;
        }
        Ok(bytes)
    }

    /// Replace the database this connection works on with `image`, held in memory from now
    /// on (the file it was opened on is left as it was).
    pub fn restore_image(&mut self, image: &[u8]) -> Result<()> {
        self.conn
            .with_mut(|c| c.deserialize_read_exact(MAIN_DB, image, image.len(), false))?;
        Ok(())
    }

    /// Rewrite the database with pages of `bytes` (a power of two from 512), leaving WAL
    /// for the rollback journal (a page size changes only outside WAL): a small database's
    /// image is then small too. For a database no other connection has open.
    pub fn repage(&mut self, bytes: u32) -> Result<()> {
        let _: String = self
            .conn
            .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))?;
        self.conn
            .execute_batch(&format!("PRAGMA page_size = {bytes}; VACUUM;"))?;
        Ok(())
    }
}
