//! The built-in names a shell completes: a value parser that takes any text, as a plain
//! `String` argument does (a handler refuses an unknown name in its own words, and a lesson
//! may be the path of a file), and offers the names to `leaselab completions`. The help
//! keeps them out of its lines (`hide_possible_values`): `leaselab list`, `lessons` and
//! `exercises` list them with what each is.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

/// Names offered for completion, any text taken.
#[derive(Clone, Copy)]
pub struct Names(fn() -> Vec<&'static str>);

impl TypedValueParser for Names {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.0)().into_iter().map(PossibleValue::new)))
    }
}

/// The scenarios: `run NAME`, `--scenario NAME`.
pub fn scenarios() -> Names {
    Names(|| {
        leaselab::scenario::Scenario::ALL
            .iter()
            .map(|s| s.name())
            .collect()
    })
}

/// The built-in lessons: `lesson NAME` (or a file).
pub fn lessons() -> Names {
    Names(|| leaselab::lesson::BUILT_INS.iter().map(|b| b.name).collect())
}

/// The built-in exercises: `exercise NAME`.
pub fn exercises() -> Names {
    Names(|| {
        leaselab::exercise::BUILT_INS
            .iter()
            .map(|b| b.name)
            .collect()
    })
}
