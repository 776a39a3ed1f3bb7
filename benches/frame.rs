//! The dashboard at scale: 100,000 messages and 16 workers. They first run flat out (no
//! processing time) for a few seconds while frames are drawn as the real loop does, which
//! fills the ledger, the timeline and the log; then the dashboard is paused and one frame
//! (the snapshot read from SQLite plus the render) and the render alone are measured.
//! Prints the peak resident memory of this process and the longest backlog the event
//! channel reached while the workers ran.
//!
//! `cargo bench --bench frame`

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use leaselab::ui::{self, render, App, DashboardOptions, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

mod support;
use support::peak_rss_mb;

fn frame(c: &mut Criterion) {
    let opts = DashboardOptions {
        workers: 16,
        messages: Some(100_000),
        timing: leaselab::setup::Timing {
            process_ms: 0,
            ..leaselab::setup::Timing::DASHBOARD
        },
        ..DashboardOptions::default()
    };
    let mut app = App::new(opts, Theme::from_env()).expect("dashboard app");
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).unwrap();
    app.start();
    // Run as the dashboard does for a while: fold what arrived, draw, wait for the tick.
    let tick = crossbeam_channel::tick(ui::FRAME);
    let mut backlog = 0;
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(4) {
        backlog = backlog.max(app.engine.events().len());
        app.absorb_events();
        ui::draw(&mut terminal, &mut app).unwrap();
        let _ = tick.recv();
    }
    // Pause (space): the history stays, the 16 worker threads stop competing for the two
    // cores, and what is left to measure is the dashboard's own work per frame.
    app.handle_key(KeyEvent::new(KeyCode::Char(' '), KeyModifiers::NONE));
    app.absorb_events();
    let mut group = c.benchmark_group("dashboard 160x50, 100k messages, 16 workers");
    group.sample_size(200);
    group.bench_function("frame: snapshot from SQLite + render", |b| {
        b.iter(|| {
            backlog = backlog.max(app.engine.events().len());
            app.absorb_events();
            ui::draw(&mut terminal, &mut app).unwrap();
        })
    });
    group.bench_function("render only", |b| {
        b.iter(|| {
            terminal
                .draw(|f| render::draw(f, app.snapshot(), &app.ui, &app.theme))
                .unwrap();
        })
    });
    group.finish();
    let processed = app.ledger.results_written();
    drop(app);
    println!(
        "peak resident memory {:.1} MB; longest event backlog {backlog} events; {processed} results written while measuring",
        peak_rss_mb()
    );
}

criterion_group!(benches, frame);
criterion_main!(benches);
