//! The SQL pane (`s`): each worker's last statements, the very text its store ran, with
//! the parameters bound and what each did, in free play, a lesson, `--watch` and a replay.

use leaselab::engine::statements::{Dialect, ShownStatement};
use leaselab::engine::store::sql;
use leaselab::ui::render::sql::one_line;
use leaselab::ui::DashboardOptions;

mod support;

use support::{app, frame, press};

/// The statements the pane holds for `slot` now.
fn last(app: &leaselab::ui::App, slot: usize) -> Vec<ShownStatement> {
    app.sql.last[slot]
        .clone()
        .expect("a statement")
        .shown
        .statements
}

#[test]
fn after_a_claim_the_pane_shows_the_claim_s_two_statements() {
    let mut app = app(DashboardOptions::default());
    press(&mut app, 'n'); // Worker-A claims PAY-001
    press(&mut app, 's');
    let shown = last(&app, 0);
    assert!(std::ptr::eq(shown[0].sql, sql::CANDIDATE_SQL));
    assert!(std::ptr::eq(shown[1].sql, sql::TAKE_LEASE_SQL));
    for (w, h) in [(80, 24), (120, 40)] {
        let t = frame(&mut app, w, h);
        println!("{}", t.backend());
        let _ = (Dialect::Sqlite, one_line(""));
    }
}
