//! The lesson file as TOML holds it, before any check: what serde reads, with the spans
//! that let every error name its line.

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLesson {
    pub(super) format_version: Option<Spanned<i64>>,
    pub(super) title: Option<String>,
    pub(super) summary: Option<String>,
    /// An exercise file whose statements the workers run, relative to the lesson file.
    pub(super) sql: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) setup: RawSetup,
    #[serde(default)]
    pub(super) step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSetup {
    pub(super) workers: Option<Spanned<i64>>,
    pub(super) messages: Option<Spanned<i64>>,
    pub(super) lease_ms: Option<Spanned<i64>>,
    pub(super) process_ms: Option<Spanned<i64>>,
    pub(super) leasing: Option<bool>,
    pub(super) idempotent_provider: Option<bool>,
    #[serde(alias = "heartbeat")]
    pub(super) heartbeats: Option<bool>,
    pub(super) heartbeat_ms: Option<Spanned<i64>>,
    pub(super) max_attempts: Option<Spanned<i64>>,
    pub(super) backoff_ms: Option<Spanned<i64>>,
    pub(super) backoff_cap_ms: Option<Spanned<i64>>,
    /// Payment key -> how many of its first status checks fail.
    pub(super) fail_first: Option<std::collections::BTreeMap<String, Spanned<i64>>>,
    pub(super) fail_always: Option<Vec<Spanned<String>>>,
    pub(super) batch: Option<Spanned<i64>>,
    pub(super) finalize_guard: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    #[serde(rename = "do", default)]
    pub(super) actions: Vec<Spanned<String>>,
    pub(super) say: Option<String>,
    #[serde(default)]
    pub(super) expect: Vec<Spanned<String>>,
    pub(super) ask: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) choices: Vec<Spanned<RawChoice>>,
    pub(super) show: Option<Spanned<String>>,
}

/// `{ answer = "...", expect = "PAY-001 owner Worker-B" }`
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChoice {
    pub(super) answer: String,
    pub(super) expect: Spanned<String>,
}
