//! Who is here, on PostgreSQL (issue 38): a worker's sessions carry its name as their
//! `application_name`, so a second worker under a name a live one holds is refused at
//! join with the names in use, a killed worker frees its name with its session, and the
//! watch shows a worker gone from the server as `left`. Skipped without
//! `LEASELAB_PG_URL`, like every PostgreSQL test. Every wait polls with a deadline.

#[allow(dead_code)]
mod pg_support;
mod support;

use leaselab::engine::backend::Db;
use leaselab::engine::pg::named_in;
use leaselab::engine::worker::WorkerState;
use leaselab::ui::app::{App, ExternalMode};
use leaselab::ui::{DashboardOptions, Theme};
use pg_support::{scratch, ScratchDb};
use support::processes::{wait_for, WorkerProcess};

/// The worker names (as `application_name`s, without their process's tag) connected to
/// the scratch database now.
fn sessions(db: &ScratchDb) -> Option<Vec<String>> {
    let all = Db::Postgres(db.url.clone())
        .open_reader()
        .ok()?
        .sessions()
        .ok()??;
    Some(all.iter().map(|s| named_in(s).to_string()).collect())
}

/// `leaselab worker` under `name` as a student types it: refused, it ends at once (one
/// that joins fails the test at the deadline).
fn join(db: &ScratchDb, name: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = support::leaselab_bounded(&["worker", "--db", &db.url, "--name", name], dir.path());
    (out.status.code(), support::stderr(&out))
}

#[test]
fn a_name_a_connected_worker_holds_is_refused_until_its_session_is_gone() {
    let Some(db) = scratch("dupnames") else {
        return;
    };
    let slow = [
        "--messages",
        "50",
        "--lease-ms",
        "60000",
        "--process-ms",
        "30000",
    ];
    let mut sam = WorkerProcess::start(&db.url, "sam", &slow);
    let lei = WorkerProcess::start(&db.url, "李雷", &slow);
    let names = [
        leaselab::engine::pg::session_name("sam"),
        leaselab::engine::pg::session_name("李雷"),
    ];
    // Joined: past its own look at who is here (two that look at once may both be refused).
    wait_for("both sessions and their Joined rows", || {
        let now = sessions(&db)?;
        let rows = Db::Postgres(db.url.clone())
            .open_reader()
            .ok()?
            .newest_rows()
            .ok()?;
        let joined = |n: &str| rows.iter().any(|r| r.worker == n);
        (names.iter().all(|n| now.contains(n)) && joined("sam") && joined("李雷")).then_some(())
    });
    for name in ["sam", "李雷"] {
        let (code, stderr) = join(&db, name);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("--name {name} is taken"))
                && stderr.contains("names in use: sam, 李雷)"),
            "{name}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // Killed: its session ends with it, and the name is free again.
    sam.kill();
    wait_for("sam's session to end", || {
        (!sessions(&db)?.contains(&names[0])).then_some(())
    });
    let mut again = WorkerProcess::start(&db.url, "sam", &slow);
    wait_for("the new sam's session", || {
        sessions(&db)?.contains(&names[0]).then_some(())
    });
    assert!(again.child.as_mut().unwrap().try_wait().unwrap().is_none());
    let (status, stderr) = again.stop();
    assert_eq!(status.code(), Some(143), "{stderr}");
    drop(lei);
}

#[test]
fn the_watch_shows_a_killed_worker_left_once_its_session_is_gone() {
    let Some(db) = scratch("presence") else {
        return;
    };
    let slow = [
        "--messages",
        "5",
        "--lease-ms",
        "60000",
        "--process-ms",
        "30000",
    ];
    let mut gone = WorkerProcess::start(&db.url, "gone", &slow);
    let stays = WorkerProcess::start(&db.url, "stays", &slow);
    let opts = DashboardOptions {
        db: Some(db.url.clone().into()),
        messages: Some(5),
        watch: true,
        ..DashboardOptions::default()
    };
    let mut app = App::external(ExternalMode::Watch, opts, Theme::plain()).unwrap();
    let state = |app: &mut App, name: &str| {
        app.absorb_events();
        app.refresh(20, 10);
        let w = app
            .snapshot()
            .workers
            .iter()
            .find(|w| w.status.name == name)?;
        Some((w.status.state, w.status.lease.is_some()))
    };
    wait_for("both at work", || {
        let both = [state(&mut app, "gone")?, state(&mut app, "stays")?];
        both.iter()
            .all(|(s, lease)| *s == WorkerState::Processing && *lease)
            .then_some(())
    });
    gone.kill();
    // Its lease has a minute to run: only the server can say it went.
    wait_for("gone shown left", || {
        (state(&mut app, "gone")? == (WorkerState::Left, true)).then_some(())
    });
    assert_eq!(
        state(&mut app, "stays"),
        Some((WorkerState::Processing, true))
    );
    drop(stays);
}
