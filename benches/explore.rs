//! The explorer's targets: the fencing-token outbox with every fault (crash, clock jump,
//! pause), 3 workers x 2 messages exhaustive to depth 14 in under 60 s and 2 workers x 2
//! messages to depth 12 in under 5 s, each under 1 GB of memory at its peak. Each run is a
//! process of its own (this program started again), so that its peak resident memory is
//! its own; each world runs three times (`EXPLORE_BENCH_RUNS` for more) and the medians are
//! the figures. The 2 x 2 world also runs with every state kept (`--no-reduction`) in the
//! same rounds, for the ratio. Every run's verdict is checked: a faster search that misses
//! a check, or is cut, fails here.
//!
//! `cargo bench --bench explore`

use std::process::Command;
use std::time::Instant;

use leaselab::explore::{explore, Check, ExploreOptions};

mod support;
use support::peak_rss_mb;

/// The worlds: name, workers, depth, reduced, target in seconds (none: a ratio only).
const WORLDS: [(&str, usize, usize, bool, Option<f64>); 3] = [
    ("3x2 depth 14", 3, 14, true, Some(60.0)),
    ("2x2 depth 12", 2, 12, true, Some(5.0)),
    ("2x2 depth 12 --no-reduction", 2, 12, false, None),
];

const MEMORY_TARGET_MB: f64 = 1024.0;

fn options(workers: usize, depth: usize, reduced: bool) -> ExploreOptions {
    ExploreOptions {
        workers,
        messages: 2,
        max_depth: depth,
        max_states: 5_000_000,
        max_memory_mib: 4_096,
        reduction: reduced,
        ..ExploreOptions::default()
    }
}

/// One run, in this process: `seconds states schedules peak-MB` on stdout.
fn child(world: usize) {
    let (name, workers, depth, reduced, _) = WORLDS[world];
    let started = Instant::now();
    let r = explore(&options(workers, depth, reduced), &mut |_| true).expect("the search runs");
    let seconds = started.elapsed().as_secs_f64();
    assert!(r.exhaustive, "{name}: cut\n{}", r.text());
    assert_eq!(
        r.broken(),
        [Check::SideEffectTwice],
        "{name}: only the provider's second piece of work\n{}",
        r.text()
    );
    println!("{seconds} {} {} {}", r.states, r.schedules, peak_rss_mb());
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if let Ok(world) = std::env::var("EXPLORE_BENCH_WORLD") {
        child(world.parse().expect("a world's number"));
        return;
    }
    // `cargo bench` passes `--bench`; a filter, if any, picks worlds by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs: usize = std::env::var("EXPLORE_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let me = std::env::current_exe().expect("this program");
    let picked: Vec<usize> = (0..WORLDS.len())
        .filter(|&w| filter.is_empty() || filter.iter().any(|f| WORLDS[w].0.contains(f.as_str())))
        .collect();
    // (seconds, peak MB) of each run, a world's runs in rounds so that the 2 x 2 searches'
    // ratio compares runs taken moments apart.
    let mut got: Vec<Vec<(f64, f64)>> = vec![Vec::new(); WORLDS.len()];
    let mut sizes = vec![(0u64, 0u64); WORLDS.len()];
    for round in 1..=runs {
        for &w in &picked {
            let out = Command::new(&me)
                .env("EXPLORE_BENCH_WORLD", w.to_string())
                .output()
                .expect("the run starts");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}: {text}{}",
                WORLDS[w].0,
                String::from_utf8_lossy(&out.stderr)
            );
            let f: Vec<f64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            println!(
                "round {round}: {}: {:.2} s, {} states, {} schedules, peak {:.0} MB",
                WORLDS[w].0, f[0], f[1], f[2], f[3]
            );
            sizes[w] = (f[1] as u64, f[2] as u64);
            got[w].push((f[0], f[3]));
        }
    }
    for &w in &picked {
        let (name, _, _, _, target) = WORLDS[w];
        let secs = median(got[w].iter().map(|g| g.0).collect());
        let mb = median(got[w].iter().map(|g| g.1).collect());
        let all: Vec<String> = got[w].iter().map(|g| format!("{:.2}", g.0)).collect();
        println!(
            "{name}: median {secs:.2} s ({}), {} states, peak {mb:.0} MB (median)",
            all.join(" "),
            sizes[w].0
        );
        if let Some(t) = target {
            let met = |ok: bool| if ok { "met" } else { "NOT met" };
            println!(
                "target: {name} under {t:.0} s: {secs:.2} s, {}",
                met(secs < t)
            );
            let peak = got[w].iter().map(|g| g.1).fold(0.0, f64::max);
            println!(
                "target: {name} peak memory under {MEMORY_TARGET_MB:.0} MB: {peak:.0} MB at most, {}",
                met(peak < MEMORY_TARGET_MB)
            );
        }
    }
    if picked.contains(&1) && picked.contains(&2) {
        let ratios: Vec<f64> = got[2].iter().zip(&got[1]).map(|(e, r)| e.0 / r.0).collect();
        println!(
            "2x2 depth 12: every state over reduced, time {:.2} (median of the rounds' ratios), states {:.2}",
            median(ratios),
            sizes[2].0 as f64 / sizes[1].0.max(1) as f64
        );
    }
}
