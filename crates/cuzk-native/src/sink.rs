//! Where a native generator's aux values go: a growing vector, or a fixed stretch of a larger
//! witness's memory (a PoRep challenge's section, written in place while other challenges
//! fill theirs).

use cuzk_field::Scalar;

/// An aux assignment being appended to, in allocation order.
pub trait Sink {
    /// Appends one value.
    fn push(&mut self, v: Scalar);
    /// Appends every value of `values`, in order.
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I);
    /// Makes room for `additional` more values where the sink can grow.
    fn reserve(&mut self, additional: usize);
    /// The values appended so far.
    fn values(&self) -> &[Scalar];
    /// How many values were appended.
    fn len(&self) -> usize {
        self.values().len()
    }
    /// Whether nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Sink for Vec<Scalar> {
    #[inline(always)]
    fn push(&mut self, v: Scalar) {
        Vec::push(self, v);
    }

    #[inline(always)]
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I) {
        Extend::extend(self, values);
    }

    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    fn values(&self) -> &[Scalar] {
        self
    }

    fn len(&self) -> usize {
        Vec::len(self)
    }
}

/// A stretch of memory filled from its start. Values past its end are counted, not stored:
/// [`Fill::finish`] then reports the stretch's length as wrong, and the caller falls back to
/// a growing vector. Nothing panics on a section of unexpected shape.
#[derive(Debug)]
pub struct Fill<'a> {
    buf: &'a mut [Scalar],
    len: usize,
    over: usize,
}

impl<'a> Fill<'a> {
    /// A sink writing `buf` from its first value on.
    pub fn new(buf: &'a mut [Scalar]) -> Fill<'a> {
        Fill {
            buf,
            len: 0,
            over: 0,
        }
    }

    /// `Ok` when exactly the stretch's length was written; else `Err` with the count that was
    /// appended.
    pub fn finish(self) -> Result<(), usize> {
        let written = self.len + self.over;
        if written == self.buf.len() {
            Ok(())
        } else {
            Err(written)
        }
    }
}

impl Sink for Fill<'_> {
    #[inline(always)]
    fn push(&mut self, v: Scalar) {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = v;
                self.len += 1;
            }
            None => self.over += 1,
        }
    }

    #[inline]
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I) {
        for v in values {
            self.push(v);
        }
    }

    fn reserve(&mut self, _: usize) {}

    fn values(&self) -> &[Scalar] {
        &self.buf[..self.len]
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn a_fill_takes_exactly_its_length_and_reports_any_other_count() {
        let mut buf = vec![Scalar::ZERO; 3];
        let mut f = Fill::new(&mut buf);
        f.push(Scalar::ONE);
        f.extend([Scalar::from(2u64), Scalar::from(3u64)]);
        assert_eq!(f.values().len(), 3);
        assert_eq!(f.finish(), Ok(()));
        assert_eq!(buf, [1u64, 2, 3].map(Scalar::from));

        let mut short = vec![Scalar::ZERO; 3];
        let mut f = Fill::new(&mut short);
        f.push(Scalar::ONE);
        assert_eq!(f.finish(), Err(1));

        let mut long = vec![Scalar::ZERO; 2];
        let mut f = Fill::new(&mut long);
        f.extend((1..=4u64).map(Scalar::from));
        assert_eq!(Sink::len(&f), 2, "only what fits is kept");
        assert_eq!(f.finish(), Err(4));
        assert_eq!(long, [1u64, 2].map(Scalar::from));
    }
}
