//! The bookkeeping of a buffer pool, whatever it pools: size classes, idle buffers by class,
//! the budgets each buffer is charged to, eviction, waiting, and statistics.
//!
//! The pinned host pool (`PinnedPool`, behind the `cuda` feature) is this shelf holding
//! page-locked buffers; keeping the logic generic lets it be tested without a GPU.

use crate::budget::{Budget, ReleaseListener, Reservation};
use crate::MemError;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

/// The smallest size class: smaller requests share buffers of this size, so that tiny
/// requests do not each pin (and lock) pages of their own.
pub const MIN_CLASS: u64 = 64 << 10;

/// The size of the buffer a request of `bytes` gets: at least [`MIN_CLASS`], otherwise
/// `bytes` rounded up to a quarter step between powers of two (1, 1.25, 1.5, 1.75 × 2ᵏ), so a
/// buffer wastes at most a quarter of what was asked and every class is a multiple of the
/// 4 KiB page. `None` when the class would not fit a `u64`.
pub fn size_class(bytes: u64) -> Option<u64> {
    if bytes <= MIN_CLASS {
        return Some(MIN_CLASS);
    }
    let upper = bytes.checked_next_power_of_two()?;
    let (half, step) = (upper / 2, upper / 8);
    Some(half + (bytes - half).div_ceil(step) * step)
}

/// What a pool has done and holds, in bytes of size classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// The pool's capacity: the most bytes it may keep pinned at once.
    pub capacity: u64,
    /// Requests served by an idle buffer.
    pub hits: u64,
    /// Requests that pinned a new buffer.
    pub misses: u64,
    /// Buffers freed: evicted to make room for another size, by a trim, or idle past the
    /// pool's limit.
    pub evictions: u64,
    /// Of the buffers freed, those freed because they sat idle longer than the pool's limit.
    pub expired: u64,
    /// Bytes pinned over the pool's life (grows only on misses and pre-warming).
    pub pinned_total: u64,
    /// Bytes pinned now, idle and lent.
    pub pinned_bytes: u64,
    /// Bytes of idle buffers.
    pub idle_bytes: u64,
    /// Bytes of buffers lent out.
    pub lent_bytes: u64,
    /// The most bytes pinned at once.
    pub high_water_bytes: u64,
    /// Idle buffers.
    pub idle_buffers: usize,
    /// Buffers lent out.
    pub lent_buffers: usize,
}

/// The charges of one pooled buffer: its bytes in the pool's own budget and, if the pool
/// has one, in the host budget. Both are released when the buffer is freed, never when it
/// merely goes back to the pool.
///
/// Fields drop in declaration order: the host charge is released before the pool's, and
/// charging takes the pool's first, so the pool's share of the host ledger never exceeds the
/// pool's own ledger, even while other threads charge concurrently.
pub(crate) struct Ticket {
    class: u64,
    /// Stocked ahead of demand ([`Shelf::stock`]): never freed for sitting idle, only to make
    /// room or by a trim.
    kept: bool,
    _host: Option<Reservation>,
    _pinned: Reservation,
}

impl Ticket {
    /// The buffer's size class in bytes.
    pub(crate) fn class(&self) -> u64 {
        self.class
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("class", &self.class)
            .finish()
    }
}

/// Makes a new buffer of the given class size.
pub(crate) type Alloc<'a, B> = &'a mut dyn FnMut(u64) -> Result<B, MemError>;

/// A pool's idle buffers and its accounting, shared by the pool handle and every lent buffer.
pub(crate) struct Shelf<B> {
    /// The pool's capacity as a budget: one reservation per live buffer.
    pinned: Budget,
    /// The host budget, charged the same bytes, if the pool was given one.
    host: Option<Budget>,
    state: Mutex<State<B>>,
    /// Signalled whenever a buffer comes back or bytes of either budget are released.
    changed: Condvar,
    _listeners: Vec<ReleaseListener>,
}

/// An idle buffer and when it was shelved.
struct Idle<B> {
    buffer: B,
    ticket: Ticket,
    since: Instant,
}

struct State<B> {
    /// Idle buffers by class, each list oldest first.
    idle: BTreeMap<u64, Vec<Idle<B>>>,
    /// Idle buffers older than this are freed at the next sweep; `None`: kept until evicted.
    max_idle: Option<Duration>,
    idle_bytes: u64,
    idle_buffers: usize,
    lent_bytes: u64,
    lent_buffers: usize,
    /// Bumped on every change a waiter could use, so that none is missed between a failed
    /// attempt and the wait.
    generation: u64,
    hits: u64,
    misses: u64,
    evictions: u64,
    expired: u64,
    pinned_total: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state is updated in steps that cannot panic; a poisoned lock still holds a
    // consistent shelf.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<B: Send + 'static> Shelf<B> {
    /// A shelf holding at most `capacity` bytes of buffers, in a budget called `name`, each
    /// buffer also charged to `host` if given.
    pub(crate) fn new(name: String, capacity: u64, host: Option<Budget>) -> Arc<Shelf<B>> {
        let pinned = Budget::new(name, capacity);
        Arc::new_cyclic(|weak: &Weak<Shelf<B>>| {
            let listen = |budget: &Budget| {
                let weak = weak.clone();
                budget.on_release(move || {
                    if let Some(shelf) = weak.upgrade() {
                        shelf.bump();
                    }
                })
            };
            let mut listeners = vec![listen(&pinned)];
            listeners.extend(host.as_ref().map(listen));
            Shelf {
                pinned,
                host,
                state: Mutex::new(State {
                    idle: BTreeMap::new(),
                    max_idle: None,
                    idle_bytes: 0,
                    idle_buffers: 0,
                    lent_bytes: 0,
                    lent_buffers: 0,
                    generation: 0,
                    hits: 0,
                    misses: 0,
                    evictions: 0,
                    expired: 0,
                    pinned_total: 0,
                }),
                changed: Condvar::new(),
                _listeners: listeners,
            }
        })
    }

    /// The pool's capacity in bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.pinned.capacity()
    }

    /// The pool's name (its budget's).
    pub(crate) fn name(&self) -> &str {
        self.pinned.name()
    }

    /// Frees idle buffers once they have been idle for `max_idle` (`None`: never), at the
    /// pool's next take, return or statistics read after that.
    pub(crate) fn set_max_idle(&self, max_idle: Option<Duration>) {
        lock(&self.state).max_idle = max_idle;
        self.sweep();
    }

    /// Frees the idle buffers past the pool's idle limit; returns the bytes freed.
    pub(crate) fn sweep(&self) -> u64 {
        let expired = lock(&self.state).expire(Instant::now());
        let freed = expired.iter().map(|(_, t)| t.class).sum();
        // Freed after the lock: freeing page-locked memory waits for the device.
        drop(expired);
        freed
    }

    fn bump(&self) {
        lock(&self.state).generation += 1;
        self.changed.notify_all();
    }

    fn class_of(&self, bytes: u64) -> Result<u64, MemError> {
        size_class(bytes).ok_or_else(|| MemError::ExceedsCapacity {
            budget: self.name().to_string(),
            requested: bytes,
            capacity: self.capacity(),
        })
    }

    /// A buffer of at least `bytes`: an idle one of its class (or up to twice that), else a
    /// new one from `alloc`, evicting idle buffers of other sizes when the budgets are short.
    /// Never waits for buffers to come back.
    ///
    /// Errors with [`MemError::ExceedsCapacity`] when the class is larger than the pool, and
    /// with [`MemError::Unavailable`] (naming the pool's or the host's budget) when neither
    /// an idle buffer nor room for a new one is there.
    pub(crate) fn take(&self, bytes: u64, alloc: Alloc<'_, B>) -> Result<(B, Ticket), MemError> {
        let class = self.class_of(bytes)?;
        self.sweep();
        if let Some(found) = lock(&self.state).take_idle(class) {
            return Ok(found);
        }
        let ticket = self.charge(class)?;
        // Pinning gigabytes takes a while: do it without the lock, holding only the charge.
        let buffer = alloc(class)?;
        let mut state = lock(&self.state);
        state.misses += 1;
        state.pinned_total += class;
        state.lent_bytes += class;
        state.lent_buffers += 1;
        Ok((buffer, ticket))
    }

    /// [`Shelf::take`], waiting (for at most `timeout`) for buffers to come back or budget
    /// bytes to be released while neither an idle buffer nor room for a new one is there.
    pub(crate) fn take_blocking(
        &self,
        bytes: u64,
        timeout: Option<Duration>,
        alloc: Alloc<'_, B>,
    ) -> Result<(B, Ticket), MemError> {
        let start = Instant::now();
        let deadline = timeout.and_then(|t| start.checked_add(t));
        loop {
            let seen = lock(&self.state).generation;
            match self.take(bytes, alloc) {
                Err(MemError::Unavailable { .. }) => {}
                done => return done,
            }
            let mut state = lock(&self.state);
            while state.generation == seen {
                state = match deadline {
                    None => self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner),
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            return Err(MemError::TimedOut {
                                budget: self.name().to_string(),
                                requested: bytes,
                                waited: now - start,
                            });
                        }
                        self.changed
                            .wait_timeout(state, deadline - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                };
            }
        }
    }

    /// Pins a buffer for each of `sizes` (bytes) and shelves it idle, so that the first
    /// requests of those sizes are hits. Stops at the first that does not fit. Stocked
    /// buffers are kept however long they sit idle (lent and returned, they stay kept); they
    /// are freed only to make room for others or by a trim.
    pub(crate) fn stock(&self, sizes: &[u64], alloc: Alloc<'_, B>) -> Result<(), MemError> {
        for &bytes in sizes {
            let class = self.class_of(bytes)?;
            let mut ticket = self.charge(class)?;
            ticket.kept = true;
            let buffer = alloc(class)?;
            let mut state = lock(&self.state);
            state.pinned_total += class;
            state.shelve(buffer, ticket, Instant::now());
        }
        Ok(())
    }

    /// Takes a lent buffer back, idle, for the next request of its class.
    pub(crate) fn put(&self, buffer: B, ticket: Ticket) {
        let now = Instant::now();
        let mut state = lock(&self.state);
        state.lent_bytes -= ticket.class;
        state.lent_buffers -= 1;
        state.shelve(buffer, ticket, now);
        let expired = state.expire(now);
        drop(state);
        drop(expired);
        self.changed.notify_all();
    }

    /// Forgets a lent buffer that could not be shelved; the caller frees it.
    pub(crate) fn forget(&self, ticket: &Ticket) {
        let mut state = lock(&self.state);
        state.lent_bytes -= ticket.class;
        state.lent_buffers -= 1;
    }

    /// Frees idle buffers, largest first, until at most `keep` bytes of them remain; returns
    /// the bytes freed.
    pub(crate) fn trim_to(&self, keep: u64) -> u64 {
        let evicted = {
            let mut state = lock(&self.state);
            let excess = state.idle_bytes.saturating_sub(keep);
            state.evict(excess)
        };
        let freed = evicted.iter().map(|(_, t)| t.class).sum();
        // Freed here, after the lock: freeing page-locked memory waits for the device.
        drop(evicted);
        freed
    }

    /// What the pool holds and has done.
    pub(crate) fn stats(&self) -> PoolStats {
        self.sweep();
        let state = lock(&self.state);
        PoolStats {
            capacity: self.capacity(),
            hits: state.hits,
            misses: state.misses,
            evictions: state.evictions,
            expired: state.expired,
            pinned_total: state.pinned_total,
            pinned_bytes: state.idle_bytes + state.lent_bytes,
            idle_bytes: state.idle_bytes,
            lent_bytes: state.lent_bytes,
            high_water_bytes: self.pinned.high_water(),
            idle_buffers: state.idle_buffers,
            lent_buffers: state.lent_buffers,
        }
    }

    /// Reserves `class` bytes in the pool's budget and the host's; when either is short,
    /// evicts idle buffers (if together they would make enough room) and tries once more.
    fn charge(&self, class: u64) -> Result<Ticket, MemError> {
        match self.try_charge(class) {
            Err(MemError::Unavailable { .. }) => {}
            done => return done,
        }
        let short = class.saturating_sub(self.pinned.available()).max(
            self.host
                .as_ref()
                .map_or(0, |h| class.saturating_sub(h.available())),
        );
        let evicted = {
            let mut state = lock(&self.state);
            if state.idle_bytes >= short {
                state.evict(short)
            } else {
                Vec::new()
            }
        };
        drop(evicted);
        self.try_charge(class)
    }

    fn try_charge(&self, class: u64) -> Result<Ticket, MemError> {
        let pinned = self.pinned.try_reserve(class)?;
        let host = self
            .host
            .as_ref()
            .map(|h| h.try_reserve(class))
            .transpose()?;
        Ok(Ticket {
            class,
            kept: false,
            _pinned: pinned,
            _host: host,
        })
    }
}

impl<B> State<B> {
    /// The smallest idle buffer of class `class` up to `2 × class`, marked lent.
    fn take_idle(&mut self, class: u64) -> Option<(B, Ticket)> {
        let (&found, _) = self
            .idle
            .range(class..=class.saturating_mul(2))
            .find(|(_, list)| !list.is_empty())?;
        let list = self.idle.get_mut(&found)?;
        // The most recently shelved: the oldest stay idle and age out first.
        let Idle { buffer, ticket, .. } = list.pop()?;
        if list.is_empty() {
            self.idle.remove(&found);
        }
        self.idle_bytes -= found;
        self.idle_buffers -= 1;
        self.lent_bytes += found;
        self.lent_buffers += 1;
        self.hits += 1;
        Some((buffer, ticket))
    }

    fn shelve(&mut self, buffer: B, ticket: Ticket, since: Instant) {
        self.idle_bytes += ticket.class;
        self.idle_buffers += 1;
        self.generation += 1;
        self.idle.entry(ticket.class).or_default().push(Idle {
            buffer,
            ticket,
            since,
        });
    }

    /// Removes the idle buffers shelved at least `max_idle` before `now`; the caller frees
    /// them after releasing the lock.
    fn expire(&mut self, now: Instant) -> Vec<(B, Ticket)> {
        let Some(max_idle) = self.max_idle else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for list in self.idle.values_mut() {
            // Oldest first: the expired ones are a prefix (less those stocked ahead).
            let old = list.partition_point(|i| now.saturating_duration_since(i.since) >= max_idle);
            let (kept, expired): (Vec<Idle<B>>, Vec<Idle<B>>) =
                list.drain(..old).partition(|i| i.ticket.kept);
            out.extend(expired.into_iter().map(|i| (i.buffer, i.ticket)));
            // Still oldest first: the kept ones were older than every buffer left.
            list.splice(0..0, kept);
        }
        self.idle.retain(|_, list| !list.is_empty());
        for (_, ticket) in &out {
            self.idle_bytes -= ticket.class;
            self.idle_buffers -= 1;
            self.evictions += 1;
            self.expired += 1;
        }
        if !out.is_empty() {
            self.generation += 1;
        }
        out
    }

    /// Removes idle buffers, largest first, until at least `bytes` are removed (or none is
    /// left); the caller frees them after releasing the lock.
    fn evict(&mut self, bytes: u64) -> Vec<(B, Ticket)> {
        let mut out = Vec::new();
        let mut freed = 0;
        while freed < bytes {
            let Some(mut entry) = self.idle.last_entry() else {
                break;
            };
            let Some(item) = entry.get_mut().pop() else {
                entry.remove();
                continue;
            };
            if entry.get().is_empty() {
                entry.remove();
            }
            freed += item.ticket.class;
            self.idle_bytes -= item.ticket.class;
            self.idle_buffers -= 1;
            self.evictions += 1;
            out.push((item.buffer, item.ticket));
        }
        out
    }
}

impl<B> fmt::Debug for Shelf<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Shelf")
            .field("pinned", &self.pinned)
            .field("idle_bytes", &state.idle_bytes)
            .field("lent_bytes", &state.lent_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A stand-in buffer: an id to recognise reuse, and a shared count of frees.
    #[derive(Debug)]
    struct Fake {
        id: u64,
        bytes: u64,
        freed: Arc<AtomicU64>,
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.freed.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Maker {
        next: u64,
        freed: Arc<AtomicU64>,
    }

    impl Maker {
        fn new() -> Maker {
            Maker {
                next: 0,
                freed: Arc::default(),
            }
        }

        fn alloc(&mut self) -> impl FnMut(u64) -> Result<Fake, MemError> + '_ {
            move |bytes| {
                self.next += 1;
                Ok(Fake {
                    id: self.next,
                    bytes,
                    freed: Arc::clone(&self.freed),
                })
            }
        }

        fn freed(&self) -> u64 {
            self.freed.load(Ordering::SeqCst)
        }
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn classes_round_up_by_at_most_a_quarter() {
        assert_eq!(size_class(0), Some(MIN_CLASS));
        assert_eq!(size_class(1), Some(MIN_CLASS));
        assert_eq!(size_class(MIN_CLASS), Some(MIN_CLASS));
        assert_eq!(size_class(MIN_CLASS + 1), Some(80 << 10));
        assert_eq!(size_class(MIB), Some(MIB));
        assert_eq!(size_class(MIB + 1), Some(MIB + MIB / 4));
        assert_eq!(size_class(3 * MIB), Some(3 * MIB));
        assert_eq!(size_class(7 * MIB + 1), Some(8 * MIB));
        assert_eq!(size_class(u64::MAX), None);
        assert_eq!(size_class(1 << 63), Some(1 << 63));
    }

    proptest! {
        #[test]
        fn classes_cover_page_multiples_with_bounded_waste(bytes in 0u64..(1 << 45)) {
            let class = size_class(bytes).unwrap();
            prop_assert!(class >= bytes);
            prop_assert_eq!(class % 4096, 0);
            if bytes > MIN_CLASS {
                prop_assert!(class - bytes <= bytes / 4, "{} -> {}", bytes, class);
            }
            // Classes are fixed points and monotone.
            prop_assert_eq!(size_class(class), Some(class));
            prop_assert!(size_class(bytes + 1).unwrap() >= class);
        }
    }

    #[test]
    fn returned_buffers_are_reused_not_freed() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, None);
        let mut maker = Maker::new();
        let (a, ta) = shelf.take(3 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!((a.id, a.bytes, ta.class()), (1, 3 * MIB, 3 * MIB));
        shelf.put(a, ta);
        // Same class (and a smaller request of it): the same buffer, nothing new pinned.
        let (b, tb) = shelf.take(3 * MIB - 100, &mut maker.alloc()).unwrap();
        assert_eq!(b.id, 1);
        // Up to twice the class is reused; more than twice is not.
        shelf.put(b, tb);
        let (c, tc) = shelf.take(2 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!(c.id, 1);
        shelf.put(c, tc);
        let (d, td) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        assert_eq!((d.id, d.bytes), (2, MIB));
        let stats = shelf.stats();
        assert_eq!((stats.hits, stats.misses, stats.evictions), (2, 2, 0));
        assert_eq!(stats.pinned_total, 4 * MIB);
        assert_eq!(
            (stats.idle_bytes, stats.lent_bytes, stats.pinned_bytes),
            (3 * MIB, MIB, 4 * MIB)
        );
        assert_eq!((stats.idle_buffers, stats.lent_buffers), (1, 1));
        shelf.put(d, td);
        assert_eq!(maker.freed(), 0);
        assert_eq!(shelf.trim_to(MIB), 3 * MIB);
        assert_eq!(maker.freed(), 1);
        assert_eq!(shelf.trim_to(0), MIB);
        let stats = shelf.stats();
        assert_eq!((stats.pinned_bytes, stats.evictions), (0, 2));
        assert_eq!(stats.high_water_bytes, 4 * MIB);
    }

    #[test]
    fn buffers_idle_past_the_limit_are_freed_and_others_kept() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, None);
        let mut maker = Maker::new();
        // Two of one class lent at once, both returned: the pool keeps both.
        let (a, ta) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        let (b, tb) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        shelf.put(a, ta);
        shelf.put(b, tb);
        // A limit far away frees nothing; a buffer taken within it is reused.
        shelf.set_max_idle(Some(Duration::from_secs(3600)));
        let (c, tc) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        assert_eq!(c.id, 2, "the most recently returned buffer is lent first");
        assert_eq!(maker.freed(), 0);
        // Past a short limit, the buffer left idle (the older one) is freed at the next use;
        // the one lent meanwhile comes back and stays until it too has been idle that long.
        shelf.set_max_idle(Some(Duration::from_millis(5)));
        std::thread::sleep(Duration::from_millis(30));
        shelf.put(c, tc);
        assert_eq!(maker.freed(), 1);
        let stats = shelf.stats();
        assert_eq!(
            (stats.expired, stats.evictions, stats.idle_buffers),
            (1, 1, 1)
        );
        assert_eq!((stats.idle_bytes, stats.pinned_bytes), (MIB, MIB));
        std::thread::sleep(Duration::from_millis(30));
        // A statistics read sweeps too, so that an unused pool still lets go.
        let stats = shelf.stats();
        assert_eq!(
            (stats.expired, stats.idle_buffers, stats.pinned_bytes),
            (2, 0, 0)
        );
        assert_eq!(maker.freed(), 2);
        // No limit: kept however long.
        shelf.set_max_idle(None);
        let (d, td) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        assert_eq!(d.id, 3);
        shelf.put(d, td);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(shelf.stats().idle_buffers, 1);
        assert_eq!(maker.freed(), 2);
    }

    #[test]
    fn idle_buffers_of_other_sizes_are_evicted_to_make_room() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 8 * MIB, None);
        let mut maker = Maker::new();
        let (a, ta) = shelf.take(4 * MIB, &mut maker.alloc()).unwrap();
        let (b, tb) = shelf.take(2 * MIB, &mut maker.alloc()).unwrap();
        // 6 MiB lent, 2 free: a 3 MiB request is refused while the others are lent...
        let err = shelf.take(3 * MIB, &mut maker.alloc()).unwrap_err();
        assert!(
            matches!(err, MemError::Unavailable { ref budget, requested, .. }
                if budget == "pinned 0" && requested == 3 * MIB),
            "{err}"
        );
        shelf.put(a, ta);
        shelf.put(b, tb);
        // ...and once they are idle, a 5 MiB request (no idle buffer of its class) frees the
        // largest to make room.
        let (c, _tc) = shelf.take(5 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!(c.id, 3);
        assert_eq!(maker.freed(), 1);
        let stats = shelf.stats();
        assert_eq!((stats.evictions, stats.idle_bytes), (1, 2 * MIB));
        assert!(stats.high_water_bytes <= 8 * MIB);
        // Larger than the whole pool: refused at once, nothing evicted.
        let err = shelf.take(9 * MIB, &mut maker.alloc()).unwrap_err();
        assert!(matches!(err, MemError::ExceedsCapacity { .. }), "{err}");
        assert_eq!(shelf.stats().idle_buffers, 1);
    }

    #[test]
    fn buffers_are_charged_to_the_host_budget_until_freed() {
        let host = Budget::new("host", 10 * MIB);
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, Some(host.clone()));
        let mut maker = Maker::new();
        let (a, ta) = shelf.take(4 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!(host.used(), 4 * MIB);
        shelf.put(a, ta);
        assert_eq!(host.used(), 4 * MIB, "idle buffers stay pinned and charged");
        let other = host.try_reserve(5 * MIB).unwrap();
        // 1 MiB of host left: the idle 4 MiB buffer is evicted for a 5 MiB one.
        let (b, tb) = shelf.take(5 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!((b.id, host.used()), (2, 10 * MIB));
        // Nothing idle to evict: the host budget refuses, by name.
        let err = shelf.take(MIB, &mut maker.alloc()).unwrap_err();
        assert!(
            matches!(err, MemError::Unavailable { ref budget, .. } if budget == "host"),
            "{err}"
        );
        shelf.put(b, tb);
        drop(other);
        assert_eq!(shelf.trim_to(0), 5 * MIB);
        assert_eq!(host.used(), 0);
    }

    #[test]
    fn prewarmed_buffers_make_the_first_requests_hits() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, None);
        let mut maker = Maker::new();
        shelf
            .stock(&[8 * MIB, 8 * MIB, MIB], &mut maker.alloc())
            .unwrap();
        let (a, _ta) = shelf.take(8 * MIB, &mut maker.alloc()).unwrap();
        let (b, _tb) = shelf.take(7 * MIB, &mut maker.alloc()).unwrap();
        assert!(a.id <= 2 && b.id <= 2 && a.id != b.id);
        let stats = shelf.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.pinned_total),
            (2, 0, 17 * MIB)
        );
        let err = shelf.stock(&[64 * MIB], &mut maker.alloc()).unwrap_err();
        assert!(matches!(err, MemError::Unavailable { .. }), "{err}");
    }

    #[test]
    fn stocked_buffers_do_not_expire_when_idle() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, None);
        let mut maker = Maker::new();
        shelf.stock(&[8 * MIB], &mut maker.alloc()).unwrap();
        // One pinned on demand beside it, both idle past the limit.
        let (a, ta) = shelf.take(MIB, &mut maker.alloc()).unwrap();
        shelf.put(a, ta);
        shelf.set_max_idle(Some(Duration::from_millis(5)));
        std::thread::sleep(Duration::from_millis(30));
        let stats = shelf.stats();
        assert_eq!((stats.expired, stats.idle_buffers), (1, 1));
        assert_eq!(stats.pinned_bytes, 8 * MIB, "the stocked buffer stays");
        // Lent and returned, it is still kept.
        let (b, tb) = shelf.take(8 * MIB, &mut maker.alloc()).unwrap();
        assert_eq!(b.id, 1);
        shelf.put(b, tb);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(shelf.stats().pinned_bytes, 8 * MIB);
        assert_eq!(maker.freed(), 1);
        // A trim frees it.
        assert_eq!(shelf.trim_to(0), 8 * MIB);
        assert_eq!(maker.freed(), 2);
    }

    #[test]
    fn blocking_takes_wait_for_returns_and_time_out() {
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 4 * MIB, None);
        let mut maker = Maker::new();
        let (a, ta) = shelf.take(4 * MIB, &mut maker.alloc()).unwrap();
        let err = shelf
            .take_blocking(4 * MIB, Some(Duration::from_millis(20)), &mut maker.alloc())
            .unwrap_err();
        assert!(matches!(err, MemError::TimedOut { .. }), "{err}");

        let s2 = Arc::clone(&shelf);
        let waiter = std::thread::spawn(move || {
            let mut maker = Maker::new();
            let got = s2.take_blocking(4 * MIB, None, &mut maker.alloc());
            got.map(|(b, t)| (b.id, t.class()))
        });
        std::thread::sleep(Duration::from_millis(20));
        shelf.put(a, ta);
        assert_eq!(waiter.join().unwrap().unwrap(), (1, 4 * MIB));
    }

    #[test]
    fn a_host_release_wakes_a_blocked_take() {
        let host = Budget::new("host", 4 * MIB);
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 64 * MIB, Some(host.clone()));
        let held = host.try_reserve(4 * MIB).unwrap();
        let s2 = Arc::clone(&shelf);
        let waiter = std::thread::spawn(move || {
            let mut maker = Maker::new();
            let got = s2.take_blocking(2 * MIB, Some(Duration::from_secs(20)), &mut maker.alloc());
            got.map(|(b, _)| b.bytes)
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), 2 * MIB);
    }

    #[test]
    fn concurrent_takers_never_pin_more_than_the_capacity() {
        let host = Budget::new("host", 48 * MIB);
        let shelf = Shelf::<Fake>::new("pinned 0".into(), 32 * MIB, Some(host.clone()));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let shelf = Arc::clone(&shelf);
                std::thread::spawn(move || {
                    let mut maker = Maker::new();
                    for i in 0..200u64 {
                        let bytes = ((i * 7 + t * 13) % 9 + 1) * MIB;
                        let got = shelf.take_blocking(
                            bytes,
                            Some(Duration::from_secs(20)),
                            &mut maker.alloc(),
                        );
                        let (b, ticket) = got.unwrap();
                        assert!(b.bytes >= bytes);
                        std::thread::yield_now();
                        shelf.put(b, ticket);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = shelf.stats();
        assert!(stats.high_water_bytes <= 32 * MIB, "{stats:?}");
        assert!(host.high_water() <= 32 * MIB);
        assert_eq!(stats.lent_bytes, 0);
        assert_eq!(stats.hits + stats.misses, 800);
        assert_eq!(host.used(), stats.pinned_bytes);
        shelf.trim_to(0);
        assert_eq!(host.used(), 0);
    }
}
