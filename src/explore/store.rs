//! The explorer's own SQLite outbox, seeded once and held in memory, with each state's
//! database kept as its pages, every page held once however many states share it.

use std::collections::HashSet;
use std::sync::Arc;

use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::prelude::*;
use crate::engine::outbox::{Durability, StoreShared};
use crate::engine::provider::Provider;
use crate::engine::store::{Rules, Store};

use super::error::ExploreError;
use super::options::{ExploreOptions, Mode};

/// A state's database image as its pages, each held once in [`Pages`] however many
/// states share it (most pages, the schema's among them, are the same in every state).
#[derive(Clone)]
pub(crate) struct Image(Arc<[Arc<[u8]>]>);

/// Every page some kept image holds, once each.
#[derive(Default)]
pub(crate) struct Pages {
    pool: HashSet<Arc<[u8]>>,
}

impl Pages {
    /// The page size the explorer's databases use: small pages make small differences.
    const SIZE: usize = 512;

    pub(crate) fn keep(&mut self, bytes: &[u8]) -> Image {
        let pages = bytes
            .chunks(Self::SIZE)
            .map(|page| match self.pool.get(page) {
                Some(kept) => kept.clone(),
                None => {
                    let kept: Arc<[u8]> = Arc::from(page);
                    self.pool.insert(kept.clone());
                    kept
                }
            })
            .collect();
        Image(pages)
    }

    /// Let go of the pages no kept image holds any more.
    pub(crate) fn sweep(&mut self) {
        self.pool.retain(|page| Arc::strong_count(page) > 1);
    }
}

/// One of the explorer's own SQLite outboxes, seeded, held in memory from the first state
/// on: a search runs one a core, each returning to the states it is handed.
pub(crate) struct Lane {
    pub(crate) store: Store,
    pub(crate) provider: Provider,
    /// The file the first state was made in; removed at the end.
    _dir: tempfile::TempDir,
}

impl Lane {
    pub(crate) fn new(opts: &ExploreOptions) -> Result<Lane, ExploreError> {
        let dir = tempfile::tempdir().map_err(ExploreError::Scratch)?;
        let shared = Arc::new(StoreShared::new(Durability::Off));
        let (mut store, _) = Store::create(&dir.path().join("explore.db"), shared)?;
        let provider = Provider::new();
        provider.set_idempotent(opts.idempotent);
        store.seed(&provider, opts.messages, SCENARIO_START_MS)?;
        store.set_rules(Rules {
            owner_only_finalize: opts.mode == Mode::OwnerGuard,
            broken_claim: opts.broken_claim,
            forget_answer: opts.forget_answer,
        });
        // Every state is kept as an image: small pages make small images.
        store.repage(Pages::SIZE as u32)?;
        let image = store.image()?;
        store.restore_image(&image)?;
        Ok(Lane {
            store,
            provider,
            _dir: dir,
        })
    }

    /// The database as it stands, as the bytes of its image.
    pub(crate) fn image(&mut self) -> Result<Vec<u8>, ExploreError> {
        Ok(self.store.image()?)
    }

    /// Return the database to `image`: only the pages that differ are written back where
    /// SQLite can, else the whole database is replaced.
    pub(crate) fn restore(&mut self, image: &Image) -> Result<(), ExploreError> {
        if self.store.restore_pages(&image.0)? {
            return Ok(());
        }
        let bytes: Vec<u8> = image
            .0
            .iter()
            .flat_map(|page| page.iter().copied())
            .collect();
        self.store.restore_image(&bytes).map_err(ExploreError::from)
    }
}
