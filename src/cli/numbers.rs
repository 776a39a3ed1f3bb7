//! Every number on the command line is read by one of these, so every bad one is refused
//! the same way: `leaselab: --FLAG: 'VALUE' is not a whole number in MIN-MAX` (the flag and
//! the value are added where the error is shown, see `cli::usage_line`).

/// A whole number from `MIN` to `MAX`, written in digits alone: no sign, no spaces, no
/// exponent. Too many digits for any number is the same refusal as one out of range.
pub fn whole<const MIN: i64, const MAX: i64>(s: &str) -> Result<i64, String> {
    digits(s)
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| (MIN..=MAX).contains(n))
        .ok_or_else(whole_range::<MIN, MAX>)
}

/// A whole number from `MIN` to `MAX` that may be negative: digits, after one `-` or none.
pub fn signed<const MIN: i64, const MAX: i64>(s: &str) -> Result<i64, String> {
    let (minus, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    digits(rest)
        .and_then(|n| n.parse::<i64>().ok())
        .map(|n| if minus { -n } else { n })
        .filter(|n| (MIN..=MAX).contains(n))
        .ok_or_else(whole_range::<MIN, MAX>)
}

fn whole_range<const MIN: i64, const MAX: i64>() -> String {
    format!("is not a whole number in {MIN}-{MAX}")
}

fn digits(s: &str) -> Option<&str> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// `--speed`: scenario seconds per wall second, 0.05-1000.
pub fn speed(s: &str) -> Result<f64, String> {
    let ok = |c: char| c.is_ascii_digit() || c == '.';
    s.chars()
        .all(ok)
        .then(|| s.parse::<f64>().ok())
        .flatten()
        .filter(|v| (0.05..=1000.0).contains(v))
        .ok_or_else(|| "is not a number in 0.05-1000".to_string())
}

/// `--size 120x40`: columns and rows of an exported screen, within what an export draws.
pub fn size(s: &str) -> Result<(u16, u16), String> {
    let (min, max) = (
        leaselab::ui::export::MIN_SIZE,
        leaselab::ui::export::MAX_SIZE,
    );
    let refusal = || {
        format!(
            "is not COLSxROWS with {}-{} columns and {}-{} rows",
            min.0, max.0, min.1, max.1
        )
    };
    let (c, r) = s.split_once('x').ok_or_else(refusal)?;
    let n = |t: &str| digits(t).and_then(|d| d.parse::<u16>().ok());
    match (n(c), n(r)) {
        (Some(c), Some(r)) if (min.0..=max.0).contains(&c) && (min.1..=max.1).contains(&r) => {
            Ok((c, r))
        }
        _ => Err(refusal()),
    }
}

/// Most worker threads `run` and the dashboard start.
pub const MAX_THREADS: i64 = 64;

/// `bench --workers 1,2,4,8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerList(pub Vec<usize>);

/// `bench --workers 1,2,4,8`: each 1-64.
pub fn worker_list(s: &str) -> Result<WorkerList, String> {
    s.split(',')
        .map(|part| whole::<1, MAX_THREADS>(part).map(|n| n as usize))
        .collect::<Result<Vec<_>, _>>()
        .map(WorkerList)
        .map_err(|_| {
            format!("is not a whole number in 1-{MAX_THREADS}, or a list of them (1,2,4,8)")
        })
}

/// Most failures `--fail-first KEY=N` asks of the provider.
pub const MAX_FAIL_FIRST: i64 = 1_000_000;

/// `--fail-first PAY-002=2`: the key and how many of its first status checks fail.
pub fn fail_first(s: &str) -> Result<(String, u64), String> {
    let bad = || format!("is not KEY=N with N a whole number in 0-{MAX_FAIL_FIRST} (PAY-002=2)");
    let (key, n) = s.split_once('=').ok_or_else(bad)?;
    let n = whole::<0, MAX_FAIL_FIRST>(n).map_err(|_| bad())?;
    if key.is_empty() {
        return Err(bad());
    }
    key_of(key).map_err(|_| bad())?;
    Ok((key.to_string(), n as u64))
}

/// `--fail-always PAY-005`: a payment key, which names a message only when it is not empty
/// and holds no space or control character.
pub fn key(s: &str) -> Result<String, String> {
    key_of(s).map(str::to_string)
}

fn key_of(s: &str) -> Result<&str, String> {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("is not a payment key (PAY-005): not empty, no spaces".into());
    }
    Ok(s)
}

/// `explore --faults`: crash, jump, pause, comma-separated (or none).
pub fn faults(s: &str) -> Result<leaselab::explore::Faults, leaselab::explore::FaultsError> {
    leaselab::explore::Faults::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_digits_in_range_are_whole_numbers() {
        assert_eq!(whole::<1, 64>("64"), Ok(64));
        assert_eq!(whole::<0, 5>("0"), Ok(0));
        for bad in [
            "0",
            "65",
            "-1",
            " 3",
            "3 ",
            "+3",
            "",
            "3.0",
            "1e3",
            "99999999999999999999",
        ] {
            assert_eq!(
                whole::<1, 64>(bad),
                Err("is not a whole number in 1-64".into()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn signed_numbers_take_one_minus_and_nothing_else() {
        assert_eq!(signed::<-5, 5>("-5"), Ok(-5));
        assert_eq!(signed::<-5, 5>("5"), Ok(5));
        assert_eq!(signed::<-5, 5>("0"), Ok(0));
        for bad in [
            "-6",
            "6",
            "--1",
            "+1",
            "- 1",
            "-",
            "",
            "1e1",
            "99999999999999999999",
        ] {
            assert_eq!(
                signed::<-5, 5>(bad),
                Err("is not a whole number in -5-5".into()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn speeds_lists_and_failures_have_their_own_shapes() {
        assert_eq!(speed("0.5"), Ok(0.5));
        for bad in ["0", "1001", "-1", " 1", "nan", "inf", "1e2", "fast"] {
            assert!(speed(bad).is_err(), "{bad:?}");
        }
        assert_eq!(worker_list("1,2,4"), Ok(WorkerList(vec![1, 2, 4])));
        assert!(worker_list("1, 2").is_err());
        assert!(worker_list("1,65").is_err());
        assert_eq!(fail_first("PAY-002=2"), Ok(("PAY-002".into(), 2)));
        for bad in [
            "PAY-002",
            "=2",
            "PAY-002=-1",
            "PAY-002=1000001",
            "PAY-002= 2",
        ] {
            assert!(fail_first(bad).is_err(), "{bad:?}");
        }
    }
}
