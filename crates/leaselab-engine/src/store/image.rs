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
        let mut bytes = match in_place(&self.conn, <[u8]>::to_vec) {
            Some(bytes) => bytes,
            None => self
                .conn
                .with_mut(|c| c.serialize(MAIN_DB).map(|d| d.to_vec()))?,
        };
        // Bytes 18 and 19 say WAL (2) or rollback journal (1); an in-memory database
        // cannot use WAL.
        if bytes.len() > 19 {
            bytes[18] = 1;
            bytes[19] = 1;
        }
        // The change counter (and the copy of it the header's page count is valid for)
        // says how many commits made the file, not what it holds: two states that hold
        // the same rows have the same image.
        for at in [24, 92] {
            if let Some(field) = bytes.get_mut(at..at + 4) {
                field.copy_from_slice(&[0; 4]);
            }
        }
        Ok(bytes)
    }

    /// Make the database hold `pages` (an image's pages, of the size the database uses)
    /// by writing back through SQLite's `sqlite_dbpage` table only the pages that differ
    /// from what it holds, and cutting off any beyond: the schema and the prepared
    /// statements are kept, where [`Store::restore_image`] replaces the database whole.
    /// `Ok(false)` when this SQLite was built without the table; nothing is changed then.
    pub fn restore_pages<P: AsRef<[u8]>>(&mut self, pages: &[P]) -> Result<bool> {
        let size = pages.first().map_or(0, |p| p.as_ref().len());
        // Which pages differ, read in place from the database SQLite holds in memory.
        let diff = in_place(&self.conn, |now| {
            if size == 0 || now.len() % size != 0 {
                return None;
            }
            let changed: Vec<usize> = (0..pages.len())
                .filter(|&k| now.get(k * size..(k + 1) * size) != Some(pages[k].as_ref()))
                .collect();
            Some((changed, now.len() / size))
        });
        let Some(Some((changed, held))) = diff else {
            return Ok(false);
        };
        if changed.is_empty() && held == pages.len() {
            return Ok(true);
        }
        let Ok(mut put) = self
            .conn
            .prepare_cached("INSERT INTO sqlite_dbpage(pgno, data) VALUES (?1, ?2)")
        else {
            return Ok(false);
        };
        self.conn.execute_batch("BEGIN")?;
        let written = (|| -> rusqlite::Result<()> {
            for k in &changed {
                put.execute(rusqlite::params![*k as i64 + 1, pages[*k].as_ref()])?;
            }
            if held > pages.len() {
                // A page number with no data cuts the database off before it.
                put.execute(rusqlite::params![
                    pages.len() as i64 + 1,
                    rusqlite::types::Null
                ])?;
            }
            Ok(())
        })();
        drop(put);
        match written {
            Ok(()) => {
                self.conn.execute_batch("COMMIT")?;
                // The pages SQLite keeps parsed in its cache were overwritten under it: let
                // them go, so that each is read and parsed again from what it now holds.
                // SAFETY: this open connection's handle, on this thread, with no statement
                // running.
                unsafe { rusqlite::ffi::sqlite3_db_release_memory(self.conn.handle()) };
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e.into());
            }
        }
        Ok(true)
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

/// `read` of the main database's bytes where SQLite holds them in memory (after
/// [`Store::restore_image`]), without a copy and without touching the prepared statements;
/// `None` for a database in a file.
fn in_place<T>(conn: &rusqlite::Connection, read: impl FnOnce(&[u8]) -> T) -> Option<T> {
    use rusqlite::ffi;
    let mut size: ffi::sqlite3_int64 = 0;
    // SAFETY: the handle is this open connection's, used on this thread only (a `Store` is
    // not `Sync`). With SQLITE_SERIALIZE_NOCOPY SQLite returns its own buffer of `size`
    // bytes, or null when the database is not in memory; the buffer lives until the next
    // write, and `read` borrows it only while `conn` is borrowed and nothing runs on it.
    let bytes = unsafe {
        let ptr = ffi::sqlite3_serialize(
            conn.handle(),
            c"main".as_ptr(),
            &mut size,
            ffi::SQLITE_SERIALIZE_NOCOPY as std::ffi::c_uint,
        );
        if ptr.is_null() {
            return None;
        }
        std::slice::from_raw_parts(ptr, usize::try_from(size).ok()?)
    };
    Some(read(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::prelude::*;
    use crate::outbox::{Durability, StoreShared};
    use crate::provider::Provider;
    use std::sync::Arc;

    const PAGE: usize = 512;

    fn pages(bytes: &[u8]) -> Vec<&[u8]> {
        bytes.chunks(PAGE).collect()
    }

    fn integrity(store: &Store) -> String {
        store
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap()
    }

    /// Back and forth between states of a real outbox, a page at a time: each return
    /// holds exactly the state's rows, and the database stays whole.
    #[test]
    fn a_state_returned_to_by_its_pages_is_that_state() {
        let dir = tempfile::tempdir().unwrap();
        let shared = Arc::new(StoreShared::new(Durability::Off));
        let (mut store, _) = Store::create(&dir.path().join("t.db"), shared).unwrap();
        let provider = Provider::new();
        store.seed(&provider, 3, 0).unwrap();
        store.repage(PAGE as u32).unwrap();
        let first = store.image().unwrap();
        store.restore_image(&first).unwrap();
        let rows = |s: &Store| format!("{:?}", s.messages(0, 10).unwrap());
        let mut states = vec![(first.clone(), rows(&store))];
        for n in 0..3 {
            store.claim_next(&format!("W{n}"), 10, 1_000).unwrap();
            states.push((store.image().unwrap(), rows(&store)));
        }
        for i in [3usize, 0, 2, 1, 3, 0] {
            let (want, read) = &states[i];
            assert!(
                store.restore_pages(&pages(want)).unwrap(),
                "sqlite_dbpage is built in"
            );
            assert_eq!(&rows(&store), read, "state {i}: its rows read back");
            let got = store.image().unwrap();
            let differ: Vec<usize> = (0..got.len().max(want.len()) / PAGE)
                .filter(|k| got.get(k * PAGE..(k + 1) * PAGE) != want.get(k * PAGE..(k + 1) * PAGE))
                .collect();
            assert_eq!(
                differ,
                [0usize; 0],
                "state {i}: pages that differ ({} and {} bytes)",
                got.len(),
                want.len()
            );
            assert_eq!(integrity(&store), "ok", "state {i}");
        }
    }
}
