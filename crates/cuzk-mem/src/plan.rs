//! Plans: named allocations sized up front, checked against a budget as a whole.

/// A set of allocations that are wanted together, e.g. one proof's a, b, c and witness.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    parts: Vec<(String, u64)>,
}

impl Plan {
    /// An empty plan (total 0).
    pub fn new() -> Plan {
        Plan::default()
    }

    /// A plan of unnamed sizes.
    pub fn of_sizes(sizes: &[u64]) -> Plan {
        Plan {
            parts: sizes.iter().map(|&b| (String::new(), b)).collect(),
        }
    }

    /// This plan with one more allocation of `bytes`, called `name` in logs.
    pub fn with(mut self, name: impl Into<String>, bytes: u64) -> Plan {
        self.push(name, bytes);
        self
    }

    /// Adds an allocation of `bytes`, called `name` in logs.
    pub fn push(&mut self, name: impl Into<String>, bytes: u64) {
        self.parts.push((name.into(), bytes));
    }

    /// The allocations, in the order added.
    pub fn parts(&self) -> &[(String, u64)] {
        &self.parts
    }

    /// Bytes of all allocations together. Saturates at `u64::MAX`, which no budget holds,
    /// so an absurd plan is refused rather than wrapping around to a small one.
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |acc, (_, b)| acc.saturating_add(*b))
    }
}

/// Whether a [`Plan`] fits a [`crate::Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// It fits in what is free now.
    Now,
    /// It fits the capacity but needs `short_by` more bytes than are free now.
    AfterReleases {
        /// Bytes that must be released first.
        short_by: u64,
    },
    /// It exceeds the whole capacity by `over_by` bytes: it never fits as planned and must
    /// be made smaller (chunked, fewer resident buffers).
    Never {
        /// Bytes above the capacity.
        over_by: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_saturate() {
        assert_eq!(Plan::new().total(), 0);
        assert_eq!(Plan::of_sizes(&[1, 2, 3]).total(), 6);
        assert_eq!(Plan::of_sizes(&[u64::MAX, 2]).total(), u64::MAX);
        let p = Plan::new().with("a", 5).with("b", 7);
        assert_eq!(p.parts()[1], ("b".to_string(), 7));
    }
}
