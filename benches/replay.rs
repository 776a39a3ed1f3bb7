//! Scrubbing a long recording: a replay of 200,000 events (one seeding of 50,000 payments,
//! then four workers each claiming, calling the provider and finalizing, and a takeover every
//! hundred messages) is moved one event back, to a mark, and to a random position, each move
//! followed by one frame drawn at 160x50. The target: any position drawn in under 50 ms.
//! Prints how long the replay took to open and the peak resident memory.
//!
//! `cargo bench --bench replay`

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use leaselab::engine::backend::Db;
use leaselab::engine::store::{payment_key, LeaseEventKind, LeaseEventRow};
use leaselab::ui::app::{App, Recording};
use leaselab::ui::{self, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const MESSAGES: i64 = 66_000;
const T0: i64 = 1_768_467_600_000;

mod support;
use support::peak_rss_mb;

fn row(seq: u64, at: i64, worker: &str, kind: LeaseEventKind, id: Option<i64>) -> LeaseEventRow {
    LeaseEventRow {
        seq,
        at_ms: at,
        worker: worker.to_string(),
        kind,
        id,
        key: id.map(|i| payment_key(i as u64)),
        version: None,
        until_ms: None,
        detail: None,
    }
}

/// A history a run of four workers could have written, about four rows a message.
fn history() -> Vec<LeaseEventRow> {
    let mut rows = vec![LeaseEventRow {
        detail: Some(MESSAGES.to_string()),
        ..row(1, T0, "engine", LeaseEventKind::Seeded, None)
    }];
    rows.push(LeaseEventRow {
        detail: Some(
            "lease_ms=3000 process_ms=1200 leasing=on heartbeats=on heartbeat_ms=1000 batch=1 guard=token"
                .into(),
        ),
        ..row(2, T0, "engine", LeaseEventKind::Settings, None)
    });
    let workers = ["Worker-A", "Worker-B", "Worker-C", "Worker-D"];
    for id in 1..=MESSAGES {
        let at = T0 + id * 10;
        let w = workers[id as usize % 4];
        let mut version = 1;
        let push =
            |rows: &mut Vec<LeaseEventRow>, w: &str, kind, v, until, detail: Option<&str>| {
                let seq = rows.len() as u64 + 1;
                rows.push(LeaseEventRow {
                    version: v,
                    until_ms: until,
                    detail: detail.map(str::to_string),
                    ..row(seq, at, w, kind, Some(id))
                });
            };
        push(
            &mut rows,
            w,
            LeaseEventKind::Claimed,
            Some(1),
            Some(at + 5),
            None,
        );
        if id % 100 == 0 {
            // Its lease runs out and another worker takes the message over.
            version = 2;
            let other = workers[(id as usize + 1) % 4];
            push(
                &mut rows,
                other,
                LeaseEventKind::Claimed,
                Some(2),
                Some(at + 3000),
                None,
            );
        }
        let w = if version == 2 {
            workers[(id as usize + 1) % 4]
        } else {
            w
        };
        push(
            &mut rows,
            w,
            LeaseEventKind::Checked,
            Some(version),
            None,
            Some("Paid"),
        );
        push(
            &mut rows,
            w,
            LeaseEventKind::Finalized,
            Some(version),
            None,
            Some("Paid"),
        );
    }
    rows
}

fn replay(c: &mut Criterion) {
    let rows = history();
    let total = rows.len();
    let recording = Recording::of_rows("bench", rows).expect("a valid history");
    let db = Db::Sqlite("bench.db".into());
    let started = Instant::now();
    // Opening folds the whole recording once, keeping a fold every so many events.
    let mut app = App::replay_of(db, recording, Theme::plain()).expect("replay");
    println!(
        "{total} events: the replay opened (every event folded once) in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).unwrap();
    app.replay_to(total);
    let mut group = c.benchmark_group(format!("replay 160x50, {total} events"));
    group.sample_size(30);
    group.bench_function("one event back from the end, and a frame", |b| {
        b.iter(|| {
            app.replay_to(total - 1);
            ui::draw(&mut terminal, &mut app).unwrap();
            app.replay_to(total);
        })
    });
    group.bench_function("one event back from the middle, and a frame", |b| {
        let middle = total / 2 + 1_000;
        app.replay_to(middle);
        b.iter(|| {
            app.replay_to(middle - 1);
            ui::draw(&mut terminal, &mut app).unwrap();
            app.replay_to(middle);
        })
    });
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    group.bench_function("a jump to a random position, and a frame", |b| {
        b.iter(|| {
            // xorshift: the same positions every run.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            app.replay_to(1 + (x % total as u64) as usize);
            ui::draw(&mut terminal, &mut app).unwrap();
        })
    });
    group.finish();
    println!("peak resident memory: {:.0} MB", peak_rss_mb());
}

criterion_group!(benches, replay);
criterion_main!(benches);
