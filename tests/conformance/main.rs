//! The outbox's rules, tested once through the `Outbox` interface and run against every
//! backend: each rule shows as its own test per backend (`sqlite::claiming::...`,
//! `postgres::claiming::...`). A backend is one small file: a `Backend` and `every_rule!`.

mod backend;
mod writes;

mod claiming;
mod draining;
mod finalizing;
mod recording;
mod retries;
mod seeding;

/// One `#[test]` per rule, in a module per group, calling the group's generic function
/// with `$backend`.
macro_rules! rules_for {
    ($backend:expr; $($group:ident { $($rule:ident),* $(,)? })*) => {
        $(
            mod $group {
                $(
                    #[test]
                    fn $rule() {
                        let backend = &$backend;
                        if let Some(why) = crate::backend::Backend::skips(backend, stringify!($rule)) {
                            eprintln!("{} skipped: {why}", stringify!($rule));
                            return;
                        }
                        crate::$group::$rule(backend)
                    }
                )*
            }
        )*
    };
}

/// Every rule of the suite, for one backend. A generic rule left out of this list is
/// unused code, which the lints refuse, so no rule is silently skipped.
macro_rules! every_rule {
    ($backend:expr) => {
        rules_for! { $backend;
            claiming {
                a_pending_row_is_claimable_and_the_oldest_goes_first,
                a_processing_row_is_not_claimable_until_its_lease_expires,
                claim_takes_pending_oldest_first_and_an_expired_lease_only_after_its_expiry,
                an_expired_lease_on_an_older_message_is_claimed_before_a_newer_pending_one,
                claim_by_id_reports_blocked_with_owner_and_time_left,
                an_empty_claim_names_the_live_lease_of_another_that_frees_first,
                lease_version_increases_on_every_claim,
                claim_commit_stamps_follow_commit_order,
            }
            finalizing {
                finalize_after_a_takeover_is_rejected_and_leaves_the_payment_alone,
                a_committed_finalize_writes_the_providers_answer_even_a_failure,
                finalize_with_a_stale_lease_version_is_rejected_even_under_the_same_name,
                a_lease_from_before_a_reseed_fences_nothing_after_it,
                naive_mark_writes_without_asking_who_owns_the_row,
                leasing_off_loads_every_pending_message_and_marks_it_unguarded,
            }
            retries {
                a_failed_attempt_waits_its_backoff_before_it_is_claimable_again,
                the_last_failed_attempt_dead_letters_the_message_until_a_redrive,
                failed_attempts_back_off_then_dead_letter_until_a_redrive,
                a_failure_reported_after_the_lease_was_lost_writes_nothing,
                a_heartbeat_extends_only_the_holders_live_lease_and_never_shortens_it,
                a_heartbeat_after_the_lease_ran_out_does_not_revive_it,
                batch_claims_and_the_naive_load_skip_backing_off_and_dead_lettered_rows,
            }
            seeding {
                seeding_creates_each_payment_once_at_the_gateway,
                emptying_starts_the_outbox_again_from_one_while_event_seqs_carry_on,
            }
            recording {
                a_worker_name_with_quotes_and_backslashes_claims_and_finalizes_as_itself,
            }
            draining {
                threads_with_their_own_connections_drain_every_message_exactly_once,
                threads_with_expiring_leases_never_let_a_non_owner_finalize,
            }
        }
    };
}

mod postgres;
mod sqlite;
mod student;

/// The retry policy's arithmetic, which no database takes part in: tested once.
#[test]
fn backoff_doubles_from_base_up_to_the_cap() {
    use leaselab::engine::outbox::RetryPolicy;
    let policy = RetryPolicy::new(100, 1_000, 5).unwrap();
    let waits: Vec<i64> = (1..=6).map(|n| policy.backoff_ms(n)).collect();
    assert_eq!(waits, [100, 200, 400, 800, 1_000, 1_000]);
    assert_eq!(
        RetryPolicy::new(100, 1_000, 64).unwrap().backoff_ms(64),
        1_000
    );
    assert!(RetryPolicy::new(100, 1_000, 0)
        .unwrap_err()
        .to_string()
        .contains("at least 1"));
    assert!(RetryPolicy::new(100, 10, 3).is_err());
}
