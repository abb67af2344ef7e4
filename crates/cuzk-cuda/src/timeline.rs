//! Named intervals of device time, from events recorded on streams: the one way the NTT,
//! the MSM and the prover time their phases.
//!
//! A phase is either opened with [`Timeline::begin`] (it lasts until the next mark) or named
//! after the fact with [`Timeline::after`] (the interval since the previous mark). Reading
//! the times waits for nothing but needs the marked work to have run: synchronise the
//! streams first.

use crate::{Device, Event, Result, Stream};
use std::borrow::Cow;

/// Labelled device intervals of one piece of work.
#[derive(Debug)]
pub struct Timeline {
    device: Device,
    events: Vec<Event>,
    /// `(start, end, label)`: indices into `events`.
    phases: Vec<(usize, usize, Cow<'static, str>)>,
    /// The phase opened by `begin` and not yet closed: its start and label.
    open: Option<(usize, Cow<'static, str>)>,
}

impl Timeline {
    /// An empty timeline for work on `device`'s streams.
    pub fn new(device: &Device) -> Timeline {
        Timeline {
            device: device.clone(),
            events: Vec::new(),
            phases: Vec::new(),
            open: None,
        }
    }

    /// Marks the current point of `stream`; returns the mark's index. Closes the open phase.
    fn mark(&mut self, stream: &Stream) -> Result<usize> {
        let event = self.device.new_event()?;
        stream.record(&event)?;
        self.events.push(event);
        let at = self.events.len() - 1;
        if let Some((start, label)) = self.open.take() {
            self.phases.push((start, at, label));
        }
        Ok(at)
    }

    /// Marks the start of phase `label` on `stream`; it ends at the next mark.
    pub fn begin(&mut self, stream: &Stream, label: impl Into<Cow<'static, str>>) -> Result<()> {
        let at = self.mark(stream)?;
        self.open = Some((at, label.into()));
        Ok(())
    }

    /// Marks the end of the open phase on `stream` without starting another.
    pub fn end(&mut self, stream: &Stream) -> Result<()> {
        self.mark(stream).map(drop)
    }

    /// Names the interval since the previous mark `label` and marks its end on `stream`
    /// (for work whose label is known once it is queued). The first call only marks.
    pub fn after(&mut self, stream: &Stream, label: impl Into<Cow<'static, str>>) -> Result<()> {
        let previous = self.events.len().checked_sub(1);
        let at = self.mark(stream)?;
        if let Some(start) = previous {
            self.phases.push((start, at, label.into()));
        }
        Ok(())
    }

    /// `f`, timed on `stream` as phase `label`.
    pub fn span<T, E: From<crate::CudaError>>(
        &mut self,
        stream: &Stream,
        label: impl Into<Cow<'static, str>>,
        f: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.begin(stream, label)?;
        let out = f()?;
        self.end(stream)?;
        Ok(out)
    }

    /// Every closed phase in the order it was marked, with its milliseconds.
    pub fn phases(&self) -> Result<Vec<(&str, f32)>> {
        self.phases
            .iter()
            .map(|(s, e, label)| {
                Ok((
                    label.as_ref(),
                    self.events[*s].elapsed_ms(&self.events[*e])?,
                ))
            })
            .collect()
    }

    /// Milliseconds of every phase called `label`, summed (0 when there is none).
    pub fn total(&self, label: &str) -> Result<f64> {
        let mut ms = 0.0;
        for (name, t) in self.phases()? {
            if name == label {
                ms += f64::from(t);
            }
        }
        Ok(ms)
    }

    /// The latest mark, if any.
    pub fn last(&self) -> Option<&Event> {
        self.events.last()
    }
}
