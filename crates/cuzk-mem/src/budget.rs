//! The budget ledger: a capacity, the bytes reserved against it, and the guards that
//! hold them.

use crate::plan::{Fit, Plan};
use crate::MemError;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

/// A callback run after every release of a budget.
type Callback = Arc<dyn Fn() + Send + Sync>;

/// A byte budget, shared by cloning: every clone sees and reserves against the same ledger.
///
/// Invariant: the bytes held by live [`Reservation`]s, [`Budget::used`], never exceed
/// [`Budget::capacity`].
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    capacity: u64,
    ledger: Mutex<Ledger>,
    /// Signalled after every release, for [`Budget::reserve_blocking`].
    released: Condvar,
    listeners: Mutex<Listeners>,
}

#[derive(Default)]
struct Ledger {
    used: u64,
    high_water: u64,
}

#[derive(Default)]
struct Listeners {
    next_id: u64,
    callbacks: Vec<(u64, Callback)>,
}

/// Locks a mutex whether or not a panicking thread poisoned it: the ledger is updated in
/// single statements that cannot panic, so it is consistent even then, and refusing to
/// release after an unrelated panic would leak the bytes for good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Budget {
    /// A budget of `capacity` bytes; `name` (e.g. `host`, `vram 0`) appears in its errors
    /// and logs.
    pub fn new(name: impl Into<String>, capacity: u64) -> Budget {
        Budget {
            inner: Arc::new(Inner {
                name: name.into(),
                capacity,
                ledger: Mutex::new(Ledger::default()),
                released: Condvar::new(),
                listeners: Mutex::new(Listeners::default()),
            }),
        }
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.inner.capacity
    }

    /// Bytes held by live reservations.
    pub fn used(&self) -> u64 {
        lock(&self.inner.ledger).used
    }

    /// Bytes free now: capacity minus used.
    pub fn available(&self) -> u64 {
        self.inner.capacity - self.used()
    }

    /// The most bytes ever held at once since creation or the last
    /// [`Budget::reset_high_water`].
    pub fn high_water(&self) -> u64 {
        lock(&self.inner.ledger).high_water
    }

    /// Restarts the high-water mark from the bytes held now; returns the previous mark.
    pub fn reset_high_water(&self) -> u64 {
        let mut ledger = lock(&self.inner.ledger);
        let used = ledger.used;
        std::mem::replace(&mut ledger.high_water, used)
    }

    /// Reserves `bytes` if they are free now; never waits.
    ///
    /// Errors with [`MemError::ExceedsCapacity`] if `bytes` is more than the capacity, and
    /// with [`MemError::Unavailable`] if it is not free now.
    pub fn try_reserve(&self, bytes: u64) -> Result<Reservation, MemError> {
        self.check_capacity(bytes)?;
        let mut ledger = lock(&self.inner.ledger);
        let available = self.inner.capacity - ledger.used;
        if bytes > available {
            return Err(MemError::Unavailable {
                budget: self.inner.name.clone(),
                requested: bytes,
                available,
                capacity: self.inner.capacity,
            });
        }
        Ok(self.grant(&mut ledger, bytes))
    }

    /// Reserves `bytes`, blocking the calling thread until enough is released, for at most
    /// `timeout` (`None`: no limit).
    ///
    /// A request larger than the capacity is refused at once with
    /// [`MemError::ExceedsCapacity`] rather than waiting forever. Waiters are not queued:
    /// after a release, whichever waiter fits and wakes first wins, so a large request can
    /// be overtaken by small ones. Callers that need an order (priorities, oldest first)
    /// keep it themselves with [`Budget::try_reserve`] and [`Budget::on_release`], as the
    /// scheduler does. Do not call this from an async task: it parks the thread.
    pub fn reserve_blocking(
        &self,
        bytes: u64,
        timeout: Option<Duration>,
    ) -> Result<Reservation, MemError> {
        self.check_capacity(bytes)?;
        self.wait_for(bytes, timeout, |ledger| {
            (self.inner.capacity - ledger.used >= bytes).then(|| self.grant(ledger, bytes))
        })
    }

    /// Reserves as much as is free now, up to `max` and at least `min` (`max` below `min`
    /// counts as `min`); never waits. For work that adapts to what it gets: a chunked MSM
    /// takes its VRAM allowance from [`Reservation::bytes`].
    ///
    /// Errors with [`MemError::ExceedsCapacity`] if `min` is more than the capacity, and with
    /// [`MemError::Unavailable`] if fewer than `min` bytes are free now.
    pub fn try_reserve_up_to(&self, min: u64, max: u64) -> Result<Reservation, MemError> {
        self.check_capacity(min)?;
        let mut ledger = lock(&self.inner.ledger);
        let available = self.inner.capacity - ledger.used;
        if min > available {
            return Err(MemError::Unavailable {
                budget: self.inner.name.clone(),
                requested: min,
                available,
                capacity: self.inner.capacity,
            });
        }
        Ok(self.grant(&mut ledger, max.max(min).min(available)))
    }

    /// The first of `plans` whose total fits the capacity at all: the fallback choice among
    /// layouts listed from most to least preferred (all buffers resident first, then ever
    /// smaller chunked layouts). It looks at the capacity only, not at what is free now.
    ///
    /// Errors with [`MemError::NoPlanFits`], naming the smallest total, when none fits.
    pub fn choose(&self, plans: &[Plan]) -> Result<usize, MemError> {
        plans
            .iter()
            .position(|p| p.total() <= self.inner.capacity)
            .ok_or_else(|| self.no_plan_fits(plans))
    }

    /// Reserves the first of `plans` (most preferred first) that fits in what is free now, as
    /// one reservation of its total; never waits. Returns the plan's index with it.
    ///
    /// Errors with [`MemError::NoPlanFits`] when no plan fits even the capacity, and with
    /// [`MemError::Unavailable`] (naming the smallest plan that fits the capacity) when some
    /// would fit after releases.
    pub fn try_reserve_first(&self, plans: &[Plan]) -> Result<(usize, Reservation), MemError> {
        let totals = self.fitting_totals(plans)?;
        let mut ledger = lock(&self.inner.ledger);
        let available = self.inner.capacity - ledger.used;
        match totals.iter().find(|(_, total)| *total <= available) {
            Some(&(index, total)) => Ok((index, self.grant(&mut ledger, total))),
            None => Err(MemError::Unavailable {
                budget: self.inner.name.clone(),
                requested: totals.iter().map(|&(_, t)| t).min().unwrap_or(0),
                available,
                capacity: self.inner.capacity,
            }),
        }
    }

    /// [`Budget::try_reserve_first`], waiting for releases (for at most `timeout`) while no
    /// plan fits what is free. At each chance the first plan that fits wins, so a smaller
    /// layout that fits now is taken rather than waiting for a preferred one: progress over
    /// speed. Callers who would rather wait for the preferred layout call
    /// [`Budget::reserve_blocking`] with its total.
    pub fn reserve_first_blocking(
        &self,
        plans: &[Plan],
        timeout: Option<Duration>,
    ) -> Result<(usize, Reservation), MemError> {
        let totals = self.fitting_totals(plans)?;
        let smallest = totals.iter().map(|&(_, t)| t).min().unwrap_or(0);
        self.wait_for(smallest, timeout, |ledger| {
            let available = self.inner.capacity - ledger.used;
            totals
                .iter()
                .find(|(_, total)| *total <= available)
                .map(|&(index, total)| (index, self.grant(ledger, total)))
        })
    }

    /// The index and total of every plan that fits the capacity, in the given order.
    fn fitting_totals(&self, plans: &[Plan]) -> Result<Vec<(usize, u64)>, MemError> {
        let totals: Vec<(usize, u64)> = plans
            .iter()
            .map(Plan::total)
            .enumerate()
            .filter(|&(_, total)| total <= self.inner.capacity)
            .collect();
        if totals.is_empty() {
            return Err(self.no_plan_fits(plans));
        }
        Ok(totals)
    }

    fn no_plan_fits(&self, plans: &[Plan]) -> MemError {
        MemError::NoPlanFits {
            budget: self.inner.name.clone(),
            capacity: self.inner.capacity,
            plans: plans.len(),
            smallest: plans.iter().map(Plan::total).min(),
        }
    }

    /// Runs `attempt` under the ledger lock until it grants something, waiting for releases
    /// in between, for at most `timeout`; `requested` names the bytes in a timeout error.
    fn wait_for<R>(
        &self,
        requested: u64,
        timeout: Option<Duration>,
        mut attempt: impl FnMut(&mut Ledger) -> Option<R>,
    ) -> Result<R, MemError> {
        let start = Instant::now();
        // A timeout too large to add to `now` is as good as none.
        let deadline = timeout.and_then(|t| start.checked_add(t));
        let mut ledger = lock(&self.inner.ledger);
        loop {
            if let Some(granted) = attempt(&mut ledger) {
                return Ok(granted);
            }
            ledger = match deadline {
                None => self
                    .inner
                    .released
                    .wait(ledger)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(MemError::TimedOut {
                            budget: self.inner.name.clone(),
                            requested,
                            waited: now - start,
                        });
                    }
                    self.inner
                        .released
                        .wait_timeout(ledger, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// Reserves a whole plan at once, as one reservation of its total (split it with
    /// [`Reservation::split_off`] to hand the parts out); never waits.
    pub fn try_reserve_plan(&self, plan: &Plan) -> Result<Reservation, MemError> {
        self.try_reserve(plan.total())
    }

    /// Whether `plan` fits now, only after releases, or never (it exceeds the capacity).
    pub fn fits(&self, plan: &Plan) -> Fit {
        let total = plan.total();
        if total > self.inner.capacity {
            return Fit::Never {
                over_by: total - self.inner.capacity,
            };
        }
        let available = self.available();
        if total <= available {
            Fit::Now
        } else {
            Fit::AfterReleases {
                short_by: total - available,
            }
        }
    }

    /// Runs `callback` after every release of bytes of this budget, on the releasing
    /// thread, with no lock of the budget held (so it may reserve or release itself).
    /// It stops when the returned listener is dropped.
    ///
    /// Keep it short and non-blocking: waking an event loop, sending on a channel. A
    /// callback that itself drops a reservation of this budget is run again by that
    /// release, recursively.
    pub fn on_release(&self, callback: impl Fn() + Send + Sync + 'static) -> ReleaseListener {
        let mut listeners = lock(&self.inner.listeners);
        let id = listeners.next_id;
        listeners.next_id += 1;
        listeners.callbacks.push((id, Arc::new(callback)));
        ReleaseListener {
            budget: Arc::downgrade(&self.inner),
            id,
        }
    }

    fn check_capacity(&self, bytes: u64) -> Result<(), MemError> {
        if bytes > self.inner.capacity {
            return Err(MemError::ExceedsCapacity {
                budget: self.inner.name.clone(),
                requested: bytes,
                capacity: self.inner.capacity,
            });
        }
        Ok(())
    }

    /// Records `bytes` as used; the caller has checked that they are free.
    fn grant(&self, ledger: &mut Ledger, bytes: u64) -> Reservation {
        ledger.used += bytes;
        ledger.high_water = ledger.high_water.max(ledger.used);
        Reservation {
            inner: Arc::clone(&self.inner),
            bytes,
        }
    }
}

impl Inner {
    fn release(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        lock(&self.ledger).used -= bytes;
        self.released.notify_all();
        // Clone the callbacks out so that none runs under the lock: a callback may
        // register or drop a listener itself.
        let callbacks: Vec<Callback> = lock(&self.listeners)
            .callbacks
            .iter()
            .map(|(_, c)| Arc::clone(c))
            .collect();
        for callback in callbacks {
            callback();
        }
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ledger = lock(&self.inner.ledger);
        f.debug_struct("Budget")
            .field("name", &self.inner.name)
            .field("capacity", &self.inner.capacity)
            .field("used", &ledger.used)
            .field("high_water", &ledger.high_water)
            .finish()
    }
}

/// Bytes reserved against a [`Budget`], given back when the guard is dropped (also while
/// unwinding from a panic).
#[must_use = "the bytes are released as soon as the reservation is dropped"]
pub struct Reservation {
    inner: Arc<Inner>,
    bytes: u64,
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Name of the budget the bytes belong to.
    pub fn budget_name(&self) -> &str {
        &self.inner.name
    }

    /// Moves `bytes` of this reservation into a new one (for handing parts of a plan to
    /// different owners); the budget's total is unchanged.
    pub fn split_off(&mut self, bytes: u64) -> Result<Reservation, MemError> {
        if bytes > self.bytes {
            return Err(MemError::SplitTooLarge {
                requested: bytes,
                held: self.bytes,
            });
        }
        self.bytes -= bytes;
        Ok(Reservation {
            inner: Arc::clone(&self.inner),
            bytes,
        })
    }

    /// Takes `other`'s bytes into this reservation (the inverse of
    /// [`Reservation::split_off`]); both must belong to the same budget, else `other` is given
    /// back to its budget and the error names both.
    pub fn merge(&mut self, other: Reservation) -> Result<(), MemError> {
        if !Arc::ptr_eq(&self.inner, &other.inner) {
            return Err(MemError::MergeAcrossBudgets {
                budget: self.inner.name.clone(),
                other: other.inner.name.clone(),
            });
        }
        let mut other = other;
        self.bytes += std::mem::take(&mut other.bytes);
        Ok(())
    }

    /// Gives back everything above `bytes` now, keeping the rest; does nothing if the
    /// reservation holds `bytes` or less.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes < self.bytes {
            let excess = self.bytes - bytes;
            self.bytes = bytes;
            self.inner.release(excess);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.inner.release(self.bytes);
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("budget", &self.inner.name)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Keeps a [`Budget::on_release`] callback registered; dropping it unregisters.
#[must_use = "the callback is unregistered as soon as the listener is dropped"]
pub struct ReleaseListener {
    /// Weak, so a listener outliving every budget handle does not keep the ledger alive.
    budget: Weak<Inner>,
    id: u64,
}

impl Drop for ReleaseListener {
    fn drop(&mut self) {
        if let Some(inner) = self.budget.upgrade() {
            lock(&inner.listeners)
                .callbacks
                .retain(|(id, _)| *id != self.id);
        }
    }
}

impl fmt::Debug for ReleaseListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReleaseListener")
            .field("id", &self.id)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn reserve_and_release() {
        let b = Budget::new("t", 100);
        let r1 = b.try_reserve(60).unwrap();
        assert_eq!((b.used(), b.available()), (60, 40));
        let err = b.try_reserve(41).unwrap_err();
        assert!(matches!(
            err,
            MemError::Unavailable {
                requested: 41,
                available: 40,
                capacity: 100,
                ..
            }
        ));
        let r2 = b.try_reserve(40).unwrap();
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!((b.used(), b.high_water()), (0, 100));
        assert_eq!(b.reset_high_water(), 100);
        assert_eq!(b.high_water(), 0);
    }

    #[test]
    fn over_capacity_is_refused_at_once() {
        let b = Budget::new("host", 10);
        for err in [
            b.try_reserve(11).unwrap_err(),
            b.reserve_blocking(11, None).unwrap_err(),
        ] {
            assert!(matches!(
                err,
                MemError::ExceedsCapacity { requested: 11, capacity: 10, ref budget } if budget == "host"
            ));
        }
    }

    #[test]
    fn blocking_reserve_times_out_then_wakes_on_release() {
        let b = Budget::new("t", 10);
        let held = b.try_reserve(8).unwrap();
        let err = b
            .reserve_blocking(5, Some(Duration::from_millis(20)))
            .unwrap_err();
        assert!(matches!(err, MemError::TimedOut { requested: 5, .. }));

        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.reserve_blocking(5, None).map(|r| r.bytes()));
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), 5);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn split_and_shrink_keep_the_ledger() {
        let b = Budget::new("t", 100);
        let mut r = b.try_reserve(50).unwrap();
        let part = r.split_off(20).unwrap();
        assert_eq!((r.bytes(), part.bytes(), b.used()), (30, 20, 50));
        assert!(matches!(
            r.split_off(31),
            Err(MemError::SplitTooLarge {
                requested: 31,
                held: 30
            })
        ));
        r.shrink_to(10);
        assert_eq!(b.used(), 30);
        r.shrink_to(99);
        assert_eq!(r.bytes(), 10);
        drop(part);
        drop(r);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn merge_joins_parts_of_one_budget_only() {
        let b = Budget::new("host", 100);
        let mut r = b.try_reserve(30).unwrap();
        let part = r.split_off(10).unwrap();
        r.merge(part).unwrap();
        assert_eq!((r.bytes(), b.used()), (30, 30));
        let top_up = b.try_reserve(15).unwrap();
        r.merge(top_up).unwrap();
        assert_eq!((r.bytes(), b.used()), (45, 45));
        let other = Budget::new("vram", 100);
        let foreign = other.try_reserve(5).unwrap();
        assert!(matches!(
            r.merge(foreign),
            Err(MemError::MergeAcrossBudgets { ref budget, ref other }) if budget == "host" && other == "vram"
        ));
        assert_eq!((b.used(), other.used()), (45, 0));
        drop(r);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn plans_fit_now_later_or_never() {
        let b = Budget::new("t", 100);
        let plan = Plan::new().with("a", 30).with("b", 40);
        assert_eq!(b.fits(&plan), Fit::Now);
        let held = b.try_reserve(50).unwrap();
        assert_eq!(b.fits(&plan), Fit::AfterReleases { short_by: 20 });
        assert_eq!(
            b.fits(&plan.clone().with("c", 31)),
            Fit::Never { over_by: 1 }
        );
        drop(held);
        let r = b.try_reserve_plan(&plan).unwrap();
        assert_eq!(r.bytes(), 70);
    }

    #[test]
    fn up_to_grants_what_is_free_between_the_bounds() {
        let b = Budget::new("vram 0", 100);
        let big = b.try_reserve_up_to(10, 70).unwrap();
        assert_eq!(big.bytes(), 70);
        let rest = b.try_reserve_up_to(10, 70).unwrap();
        assert_eq!(rest.bytes(), 30);
        assert!(matches!(
            b.try_reserve_up_to(1, 5),
            Err(MemError::Unavailable {
                requested: 1,
                available: 0,
                ..
            })
        ));
        drop(rest);
        // `max` below `min` is `min`; `min` above the capacity is refused at once.
        assert_eq!(b.try_reserve_up_to(20, 5).unwrap().bytes(), 20);
        assert!(matches!(
            b.try_reserve_up_to(101, 200),
            Err(MemError::ExceedsCapacity { requested: 101, .. })
        ));
        drop(big);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn fallback_plans_take_the_first_that_fits() {
        let b = Budget::new("vram 0", 100);
        let resident = Plan::new().with("bases", 80).with("scalars", 40);
        let fewer = Plan::new().with("bases", 80).with("scalar chunk", 10);
        let chunked = Plan::new().with("base chunk", 20).with("scalar chunk", 10);
        let plans = [resident.clone(), fewer, chunked];
        assert_eq!(b.choose(&plans).unwrap(), 1);
        let (first, r1) = b.try_reserve_first(&plans).unwrap();
        assert_eq!((first, r1.bytes()), (1, 90));
        // 10 bytes free: nothing fits now, the chunked layout would after releases.
        let err = b.try_reserve_first(&plans).unwrap_err();
        assert!(matches!(
            err,
            MemError::Unavailable {
                requested: 30,
                available: 10,
                ..
            }
        ));
        let b2 = b.clone();
        let plans2 = plans.clone();
        let waiter = std::thread::spawn(move || {
            b2.reserve_first_blocking(&plans2, Some(Duration::from_secs(10)))
                .map(|(i, r)| (i, r.bytes()))
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(r1);
        // With all 100 bytes free the waiter takes its most preferred fitting plan.
        assert_eq!(waiter.join().unwrap().unwrap(), (1, 90));
        assert_eq!(b.used(), 0);

        let err = b.choose(std::slice::from_ref(&resident)).unwrap_err();
        assert!(matches!(
            err,
            MemError::NoPlanFits {
                plans: 1,
                smallest: Some(120),
                capacity: 100,
                ..
            }
        ));
        assert!(err.to_string().contains("120"), "{err}");
        assert!(matches!(
            b.try_reserve_first(&[]),
            Err(MemError::NoPlanFits {
                plans: 0,
                smallest: None,
                ..
            })
        ));
        let held = b.try_reserve(95).unwrap();
        assert!(matches!(
            b.reserve_first_blocking(&plans, Some(Duration::from_millis(10))),
            Err(MemError::TimedOut { requested: 30, .. })
        ));
        drop(held);
    }

    #[test]
    fn listeners_run_after_each_release_until_dropped() {
        let b = Budget::new("t", 10);
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let listener = b.on_release(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        drop(b.try_reserve(3).unwrap());
        drop(b.try_reserve(0).unwrap());
        assert_eq!(count.load(Ordering::SeqCst), 1);
        drop(listener);
        drop(b.try_reserve(3).unwrap());
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_listener_may_reserve_on_the_same_budget() {
        let b = Budget::new("t", 10);
        let b2 = b.clone();
        let kept: Arc<Mutex<Option<Reservation>>> = Arc::default();
        let k = Arc::clone(&kept);
        let _listener = b.on_release(move || {
            // Kept, not dropped here: dropping would release and call this listener again.
            if let Ok(r) = b2.try_reserve(10) {
                *lock(&k) = Some(r);
            }
        });
        drop(b.try_reserve(4).unwrap());
        assert_eq!(b.used(), 10);
        let taken = lock(&kept).take();
        drop(taken);
    }
}
