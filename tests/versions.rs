//! Who runs what in a class: `leaselab --version` names the version, the target and the
//! commit; a worker records its leaselab and system when it joins, and the watch and `class
//! scoreboard --systems` show them (unknown where a row does not say, never guessed); a
//! worker whose leaselab speaks another schema version than the database is refused at
//! join in one line that says what to do. The PostgreSQL parts use a scratch database of
//! `LEASELAB_PG_URL` (skipped without one outside CI). Every wait reads output or the
//! database with a deadline; nothing sleeps to synchronise.

#[allow(dead_code)]
mod class_support;
#[allow(dead_code)]
mod pg_support;
mod support;

#[allow(dead_code)]
#[path = "../build/git.rs"]
mod git;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{Fact, LeaseEventKind, RunSettings};
use leaselab::engine::software::Software;
use leaselab::engine::store::{Store, StoreShared};
use support::processes::{wait_for, WorkerProcess};
use support::{frame_lines, press, stderr, stdout, watcher};

/// `git ARGS` in `dir`, which must succeed: what it printed, trimmed.
fn git_ok(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o).trim().to_string()
}

#[test]
fn the_version_line_names_the_version_the_target_and_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let o = support::leaselab(&["--version"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    let rest = out
        .trim_end()
        .strip_prefix(&format!("leaselab {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `leaselab VERSION (TARGET, commit C)`: {out}"));
    let (target, commit) = rest.split_once(", commit ").expect("target, commit");
    // The target is this machine's, as the test binary was built for it too.
    assert!(target.starts_with(std::env::consts::ARCH), "{target}");
    let os = match std::env::consts::OS {
        "macos" => "apple-darwin",
        os => os,
    };
    assert!(target.contains(os), "{target}");
    // Built from this checkout: its HEAD, marked when the compiled files differ from it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if root.join(".git").exists() {
        let head = git_ok(root, &["rev-parse", "--short", "HEAD"]);
        assert!(
            commit == head || commit == format!("{head}-modified"),
            "{commit} is not {head}"
        );
    } else {
        assert_eq!(commit, "unknown");
    }
    // The manual page carries the same line.
    let page = stdout(&support::leaselab(&["man"], dir.path()));
    assert!(page.contains(&format!("\"leaselab {}\"", leaselab::version::LONG)));
}

#[test]
fn the_commit_is_asked_of_git_only_in_a_checkout_of_its_own() {
    // No checkout (a crate's archive, a copied folder): unknown, and nothing to watch.
    let plain = tempfile::tempdir().unwrap();
    let none = git::checkout(plain.path());
    assert_eq!(none.commit, None);
    assert_eq!(none.shown(), "unknown");
    assert!(none.watch.is_empty());
    // A checkout of its own: its HEAD.
    let repo = tempfile::tempdir().unwrap();
    let top = repo.path();
    std::fs::create_dir(top.join("src")).unwrap();
    std::fs::write(top.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(top.join("README.md"), "words\n").unwrap();
    git_ok(top, &["init", "-q"]);
    git_ok(top, &["add", "."]);
    git_ok(top, &["commit", "-q", "-m", "first"]);
    let head = git_ok(top, &["rev-parse", "--short", "HEAD"]);
    let clean = git::checkout(top);
    assert_eq!(clean.commit.as_deref(), Some(head.as_str()));
    assert_eq!(clean.shown(), head);
    // What makes the build script run again: HEAD, the branch, the index, the sources.
    let watched = |c: &git::Checkout, end: &str| c.watch.iter().any(|p| p.ends_with(end));
    for end in ["HEAD", "index", "src"] {
        assert!(watched(&clean, end), "{end} not in {:?}", clean.watch);
    }
    let branch = git_ok(top, &["symbolic-ref", "HEAD"]);
    assert!(
        watched(&clean, &branch),
        "{branch} not in {:?}",
        clean.watch
    );
    assert!(clean.watch.iter().all(|p| p.exists()), "{:?}", clean.watch);
    // A page changed is not the build changed; a source file changed is.
    std::fs::write(top.join("README.md"), "other words\n").unwrap();
    assert_eq!(git::checkout(top).shown(), head);
    std::fs::write(top.join("src/main.rs"), "fn main() { }\n").unwrap();
    assert_eq!(git::checkout(top).shown(), format!("{head}-modified"));
    // A source unpacked inside another repository is not that repository's commit.
    std::fs::create_dir(top.join("vendored")).unwrap();
    assert_eq!(git::checkout(&top.join("vendored")).commit, None);
}

/// The settings a hand-written `Joined` row carries before what a test adds.
fn settings() -> RunSettings {
    RunSettings {
        lease_ms: 30_000,
        process_ms: 20,
        leasing: true,
        heartbeats: false,
        heartbeat_ms: 10_000,
        batch: 1,
        owner_only: false,
        student: false,
    }
}

#[test]
fn a_worker_records_its_leaselab_and_system_and_a_replay_still_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let worker = WorkerProcess::start(&db, "ada", &["--messages", "2", "--process-ms", "20"]);
    wait_for("ada to join", || worker.said("ada works on").then_some(()));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let detail: String = conn
        .query_row(
            "SELECT Detail FROM LeaseEvents WHERE Kind = 'Joined' AND Worker = 'ada'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let recorded = Software::in_detail(&detail);
    assert_eq!(recorded, leaselab::version::software(), "{detail}");
    assert_eq!(recorded.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(recorded.target.as_deref(), Some(leaselab::version::TARGET));
    // Its settings read back as before, the new keys passed over.
    assert_eq!(RunSettings::parse(&detail).map(|s| s.process_ms), Ok(20));
    let (status, _) = worker.stop();
    assert!(status.code().is_some(), "{status:?}");
    // An older worker's row, without the keys, beside it: the recording replays.
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let at: i64 = conn
        .query_row("SELECT MAX(AtUtc) FROM LeaseEvents", [], |r| r.get(0))
        .unwrap();
    store
        .record(&Fact::of(
            LeaseEventKind::Joined,
            at + 1,
            "old",
            &settings().detail(),
        ))
        .unwrap();
    let replay = leaselab::ui::App::replay(
        leaselab::engine::backend::Db::Sqlite(db.clone()),
        leaselab::ui::Theme::plain(),
    );
    if let Err(e) = replay {
        panic!("the recording replays: {e}");
    }
}

/// The workers pane's lines at `width` x `height`: the rows between its top and bottom
/// borders, in the right-hand column.
fn workers_pane(app: &mut leaselab::ui::App, width: u16, height: u16) -> Vec<String> {
    let lines = frame_lines(app, width, height);
    let top = lines
        .iter()
        .position(|l| l.contains("┌ Workers"))
        .expect("a workers pane");
    let at = lines[top]
        .chars()
        .collect::<String>()
        .split("┌ Workers")
        .next()
        .unwrap()
        .chars()
        .count();
    lines[top..]
        .iter()
        .map(|l| l.chars().skip(at).collect::<String>())
        .take_while(|l| !l.starts_with('└'))
        .collect()
}

#[test]
fn the_watch_shows_who_runs_what_and_unknown_for_what_a_row_does_not_say() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 3);
    let now = app.engine.clock.now();
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let mac = Software::of_build("0.1.0", "abc1234", "aarch64-apple-darwin");
    // Written by hand, as anyone with the password could: a terminal's escape in the
    // version, a shell's words in the commit.
    let hostile =
        "leaselab=0.1.0\u{1b}]0;pwned\u{7} commit=abc$(reboot) target=x86_64-pc-windows-gnu";
    for (i, (name, more)) in [
        ("mac-a-very-long-student-name", mac.detail()),
        ("old", String::new()),
        ("evil", hostile.to_string()),
    ]
    .iter()
    .enumerate()
    {
        let detail = format!("{} {more}", settings().detail());
        let fact = Fact::of(LeaseEventKind::Joined, now + i as i64, name, detail.trim());
        store.record(&fact).unwrap();
    }
    support::draw_until(&mut app, "the three workers in the watch", |l| {
        l.iter().any(|l| l.contains(" evil "))
    });
    press(&mut app, 'V');
    let narrow = workers_pane(&mut app, 80, 24);
    let text = narrow.join("\n");
    assert!(text.contains("leaselab · system"), "{text}");
    let line = |lines: &[String], name: &str| -> String {
        lines
            .iter()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no line for {name}: {lines:#?}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // At 80 columns the commit gives way, and a long name is cut: the version and the
    // system stay.
    assert!(
        line(&narrow, "mac-a").contains("… 0.1.0 macOS aarch64"),
        "{text}"
    );
    assert!(line(&narrow, "old").ends_with("old unknown │"), "{text}");
    assert!(
        line(&narrow, "evil").contains("evil unknown Windows x86_64"),
        "{text}"
    );
    assert!(
        !text.contains("pwned") && !text.contains("reboot"),
        "{text}"
    );
    let wide = workers_pane(&mut app, 120, 40);
    assert!(
        line(&wide, "mac-a").contains("… 0.1.0 (abc1234) macOS aarch64"),
        "{wide:#?}"
    );
    // With room, the commit too; one a row does not say is unknown, and where the long
    // name leaves too little room for it, left out.
    assert!(
        line(&wide, "evil").contains("evil unknown Windows x86_64"),
        "{wide:#?}"
    );
    let wider = workers_pane(&mut app, 160, 40);
    assert!(
        line(&wider, "evil").contains("evil unknown (unknown) Windows x86_64"),
        "{wider:#?}"
    );
    // V again: their work, as before.
    press(&mut app, 'V');
    let text = workers_pane(&mut app, 80, 24).join("\n");
    assert!(!text.contains("macOS") && text.contains("idle"), "{text}");
}

/// A worker refused for its schema version: exit 2, one line naming both versions and what
/// to do, and nothing written.
fn assert_refused_for_the_schema(o: &std::process::Output, found: i32, known: i32) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for says in [
        format!("the database has leaselab schema version {found}"),
        format!(
            "this leaselab ({}) speaks schema version {known}",
            env!("CARGO_PKG_VERSION")
        ),
        "the teacher's".to_string(),
        "`leaselab --version` shows yours".to_string(),
    ] {
        assert!(err.contains(&says), "{says:?} not in {err}");
    }
}

#[test]
fn a_worker_of_another_schema_version_than_a_sqlite_file_is_refused_at_join() {
    use leaselab::engine::store::SCHEMA_VERSION;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    drop(watcher(&db, 3));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let newer = SCHEMA_VERSION + 1;
    conn.pragma_update(None, "user_version", newer).unwrap();
    let o = support::leaselab(
        &["worker", "--db", db.to_str().unwrap(), "--name", "ada"],
        dir.path(),
    );
    assert_refused_for_the_schema(&o, newer, SCHEMA_VERSION);
    let joined: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Joined'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(joined, 0, "the refused worker wrote nothing");
}

#[test]
fn a_worker_of_another_schema_version_than_the_class_server_is_refused_at_join() {
    use leaselab::engine::pg::SCHEMA_VERSION;
    let Some(db) = pg_support::scratch("schema_refusal") else {
        return;
    };
    let url = db.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let made = support::leaselab(
        &["class", "new-round", "--db", url, "--messages", "2"],
        dir.path(),
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let newer = SCHEMA_VERSION + 1;
    db.client()
        .execute("UPDATE LeaselabMarker SET SchemaVersion = $1", &[&newer])
        .unwrap();
    let o = support::leaselab(&["worker", "--db", url, "--name", "ada"], dir.path());
    assert_refused_for_the_schema(&o, newer, SCHEMA_VERSION);
    assert_eq!(
        class_support::count(
            url,
            "SELECT COUNT(*) FROM LeaseEvents WHERE Kind = 'Joined'"
        ),
        0
    );
}

#[test]
fn the_class_scoreboard_shows_who_runs_what() {
    let Some(db) = pg_support::scratch("who_runs_what") else {
        return;
    };
    let url = db.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = support::leaselab(args, dir.path());
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    run(&["class", "new-round", "--db", url, "--messages", "2"]);
    let empty = run(&["class", "scoreboard", "--db", url, "--systems"]);
    assert!(empty.contains("(nobody has joined yet)"), "{empty}");
    let ada = WorkerProcess::start(url, "ada", &["--process-ms", "20"]);
    wait_for("ada to join", || ada.said("ada works on").then_some(()));
    // An older worker's row, without the keys.
    db.client()
        .execute(
            "INSERT INTO LeaseEvents (AtUtc, Worker, Kind, Detail) VALUES (0, 'old', 'Joined', $1)",
            &[&settings().detail()],
        )
        .unwrap();
    let table = run(&["class", "scoreboard", "--db", url, "--systems"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{table}");
    let words = |name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}: {table}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let me = leaselab::version::software();
    assert_eq!(
        words("ada"),
        ["ada".to_string(), me.version_shown(), me.commit_shown(),]
            .into_iter()
            .chain(me.system().split(' ').map(str::to_string))
            .collect::<Vec<_>>(),
        "{table}"
    );
    assert_eq!(
        words("old"),
        ["old", "unknown", "unknown", "unknown"],
        "{table}"
    );
    // The JSON says the same under "workers", and null for what is unknown.
    let doc: serde_json::Value =
        serde_json::from_str(&run(&["class", "scoreboard", "--db", url, "--json"])).unwrap();
    let workers = doc["workers"].as_array().expect("workers");
    let of = |name: &str| workers.iter().find(|w| w["name"] == name).unwrap().clone();
    assert_eq!(of("ada")["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(of("ada")["target"], leaselab::version::TARGET);
    assert_eq!(of("old")["version"], serde_json::Value::Null);
    assert_eq!(of("old")["system"], "unknown");
    drop(ada);
    // Who runs what is not a round's: with --round it is refused in one line.
    let o = support::leaselab(
        &[
            "class",
            "scoreboard",
            "--db",
            url,
            "--systems",
            "--round",
            "1",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// The five systems the archives are built for.
const TARGETS: [&str; 5] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-gnu",
];

/// The class page's archive names are this version's, one for each of the five systems, a
/// `.zip` for Windows and a `.tar.gz` for the others: what a student types fetches a file
/// that `scripts/dist` makes.
#[test]
fn the_class_page_names_the_archives_of_this_version_for_the_five_systems() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/class.md"))
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for (at, _) in page.match_indices("leaselab-") {
        let rest = &page[at + "leaselab-".len()..];
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            .collect();
        let (version, target) = name.split_once('-').expect("VERSION-TARGET");
        assert_eq!(version, env!("CARGO_PKG_VERSION"), "{name}");
        let target = ["-", ".tar.gz", ".zip"]
            .iter()
            .filter_map(|end| target.find(end).map(|i| &target[..i]))
            .chain(std::iter::once(target))
            .find(|t| TARGETS.contains(t))
            .unwrap_or_else(|| panic!("{name} names none of {TARGETS:?}"));
        if name.contains(".zip") {
            assert!(target.contains("windows"), "{name}");
        }
        if name.contains(".tar.gz") {
            assert!(!target.contains("windows"), "{name}");
        }
        seen.insert(target.to_string());
    }
    assert_eq!(seen.len(), TARGETS.len(), "{seen:?}");
    // The version line it shows is this leaselab's.
    assert!(page.contains(&format!("# e.g. leaselab {} (", env!("CARGO_PKG_VERSION"))));
}
