//! A lesson in the real binary, in an 80x24 pseudo-terminal: stepping forward with `n`
//! and back with `b`, the narration and its checks read back through a vt100 parser.
//! Every wait is on the child's output, with a deadline.

mod support;

use std::path::Path;

use support::Dashboard;

/// The real binary at 80x24, where a lesson must still fit.
fn open(args: &[&str]) -> Dashboard {
    Dashboard::spawn(24, 80, args, Path::new(env!("CARGO_MANIFEST_DIR")), &[])
}

#[test]
fn a_lesson_steps_forward_and_back_at_80x24() {
    let mut d = open(&["lesson", "lease-expiry"]);
    d.wait_for_text("LESSON 0/6");
    d.wait_for_text("n: claim Worker-A PAY-001");
    assert!(d.screen().contains("PAUSED"), "{}", d.screen());

    d.press("n");
    d.wait_for_text("LESSON 1/6");
    d.wait_for_text("✓ PAY-001 owner Worker-A");
    d.press("n");
    d.wait_for_text("LESSON 2/6");
    d.wait_for_text("✓ ledger crashes 1");

    // One step back: the outbox is reseeded and step 1 replayed.
    d.press("b");
    d.wait_for_text("LESSON 1/6");
    d.wait_for("Worker-A alive again after the replay", |s| {
        s.contents()
            .lines()
            .any(|l| l.contains("Worker-A") && l.contains("paused"))
    });
    d.wait_for_text("✓ PAY-001 owner Worker-A");

    for n in 2..=6 {
        d.press("n");
        if n == 3 {
            // Step 3 asks first: the class predicts, then `n` reveals.
            d.wait_for_text("Predict: Worker-A is dead");
            d.press("2");
            d.wait_for_text("you predict 2");
            d.press("n");
            d.wait_for_text("You predicted 2: Worker-B is refused until the lease runs out.");
            d.wait_for_text("Right.");
        }
        let want = if n == 6 {
            "LESSON DONE 6/6".to_string()
        } else {
            format!("LESSON {n}/6")
        };
        d.wait_for_text(&want);
    }
    d.wait_for_text("✓ PAY-001 status Processed");
    d.wait_for_text("✓ ledger violations 0");
    assert!(!d.screen().contains('✗'), "{}", d.screen());
    d.press("b");
    d.wait_for_text("LESSON 5/6");

    let (status, parser) = d.quit();
    assert!(status.success(), "exit status {status:?}");
    assert!(!parser.screen().alternate_screen());
}

#[test]
fn no_arguments_open_the_atomic_claim_lesson_paused() {
    let mut d = open(&[]);
    d.wait_for_text("LESSON 0/5");
    d.wait_for_text("Atomic claim");
    assert!(d.screen().contains("PAUSED"), "{}", d.screen());
    d.press("n");
    d.wait_for_text("✓ PAY-001 owner Worker-A");
    let (status, _) = d.quit();
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn keys_under_the_help_do_nothing_until_it_closes() {
    let mut d = open(&["lesson", "lease-expiry"]);
    d.wait_for_text("LESSON 0/6");
    d.press("?");
    d.wait_for_text("Esc closes");
    // A step, a crash and a reset behind the help: none of them may act.
    d.press("ncR");
    d.press("?");
    d.wait_for("the help closed", |s| {
        !s.contents().contains("Esc closes") && s.contents().contains("LESSON")
    });
    let screen = d.screen();
    assert!(screen.contains("LESSON 0/6"), "{screen}");
    assert!(!screen.contains("CRASHED"), "{screen}");
    // Closed, the same key acts.
    d.press("n");
    d.wait_for_text("LESSON 1/6");
    let (status, _) = d.quit();
    assert!(status.success(), "exit status {status:?}");
}
