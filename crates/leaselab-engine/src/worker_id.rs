//! Who a worker is: its slot (`Worker-A` is slot 0) and which start of that slot this is
//! (`Worker-A#2` after one restart).

use std::fmt;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerId {
    pub slot: usize,
    /// 1 for the first start of the slot, 2 after one restart, and on.
    pub incarnation: u32,
}

impl WorkerId {
    pub fn new(slot: usize, incarnation: u32) -> WorkerId {
        WorkerId { slot, incarnation }
    }

    /// The slot's first incarnation: the name a lesson or a report calls the slot by.
    pub fn first(slot: usize) -> WorkerId {
        WorkerId::new(slot, 1)
    }

    /// The same slot without its incarnation: `Worker-A#2` -> `Worker-A`.
    pub fn base(self) -> WorkerId {
        WorkerId::first(self.slot)
    }

    /// Read a name this type wrote (`Worker-B`, `Worker-AA#3`); None for anything else.
    pub fn parse(name: &str) -> Option<WorkerId> {
        let rest = name.strip_prefix("Worker-")?;
        let (letters, incarnation) = match rest.split_once('#') {
            Some((l, n)) => (l, n.parse::<u32>().ok().filter(|n| *n >= 2)?),
            None => (rest, 1),
        };
        if letters.is_empty() || !letters.bytes().all(|b| b.is_ascii_uppercase()) {
            return None;
        }
        // Bijective base 26: A..Z are 0..25, AA is 26.
        let mut n: usize = 0;
        for b in letters.bytes() {
            n = n.checked_mul(26)?.checked_add((b - b'A') as usize + 1)?;
        }
        Some(WorkerId::new(n - 1, incarnation))
    }
}

impl fmt::Display for WorkerId {
    /// `Worker-A` for slot 0, `Worker-Z`, then `Worker-AA`...; `#2` and on for restarts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut n = self.slot;
        let mut letters = Vec::new();
        loop {
            letters.push((b'A' + (n % 26) as u8) as char);
            if n < 26 {
                break;
            }
            n = n / 26 - 1;
        }
        let base: String = letters.into_iter().rev().collect();
        if self.incarnation <= 1 {
            write!(f, "Worker-{base}")
        } else {
            write!(f, "Worker-{base}#{}", self.incarnation)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_the_identity_that_wrote_them() {
        for slot in [0, 1, 25, 26, 27, 701, 702] {
            for incarnation in [1, 2, 9] {
                let id = WorkerId::new(slot, incarnation);
                assert_eq!(WorkerId::parse(&id.to_string()), Some(id));
            }
        }
        assert_eq!(WorkerId::first(26).to_string(), "Worker-AA");
        assert_eq!(
            WorkerId::parse("Worker-A#2").map(WorkerId::base),
            Some(WorkerId::first(0))
        );
        for bad in [
            "engine",
            "Worker-",
            "Worker-a",
            "Worker-A#1",
            "Worker-A#x",
            "w0",
        ] {
            assert_eq!(WorkerId::parse(bad), None, "{bad}");
        }
    }
}
