//! One bit as a gadget holds it: a constant, or an allocated variable used as is or negated.

/// A bit in the three forms of bellpepper's `Boolean`, with its value.
///
/// `Is(v)` is a variable whose value is `v`; `Not(v)` is the negation of a variable, `v`
/// being the negation's value (the variable holds `!v`), as `Boolean::Not` and its
/// `get_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bit {
    /// A constant: no variable.
    Constant(bool),
    /// A variable, used as is.
    Is(bool),
    /// A variable, negated; the value is the negation's.
    Not(bool),
}

impl Bit {
    /// The bit's value (a negated variable's is the negation's).
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(v) | Bit::Is(v) | Bit::Not(v) => v,
        }
    }

    /// Whether the bit is a constant.
    pub fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }
}
