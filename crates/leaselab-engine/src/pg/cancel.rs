//! A signal stops what waits on the server: every statement this process has running on a
//! PostgreSQL connection is cancelled, as every wait for a locked SQLite file gives up. A
//! statement waiting for a lock another session holds (a `LOCK TABLE` left open in psql)
//! would otherwise keep a stopped run or worker until that session ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use postgres::{CancelToken, Client, NoTls};

/// The cancel tokens of the connections open in this process, by registration number.
static TOKENS: Mutex<Vec<(u64, CancelToken)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A connection's place in the registry; dropped with the connection.
#[derive(Debug)]
pub(super) struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut tokens) = TOKENS.lock() {
            tokens.retain(|(n, _)| *n != self.0);
        }
    }
}

/// Keep `client`'s cancel token until the returned guard is dropped.
pub(super) fn register(client: &Client) -> Registered {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut tokens) = TOKENS.lock() {
        tokens.push((n, client.cancel_token()));
    }
    Registered(n)
}

/// Ask the server to cancel whatever each of this process's connections is running. Each
/// cancel is a connection of its own, made on a thread of its own, so a server slow to
/// answer never holds up the caller (the signal thread).
pub fn cancel_all() {
    let tokens: Vec<CancelToken> = match TOKENS.lock() {
        Ok(tokens) => tokens.iter().map(|(_, t)| t.clone()).collect(),
        Err(_) => return,
    };
    for token in tokens {
        let _ = std::thread::Builder::new()
            .name("pg-cancel".into())
            .spawn(move || {
                let _ = token.cancel_query(NoTls);
            });
    }
}
