//! The scheduler's state under its one lock, and every move of a partition through it:
//! admission (memory, the job's device), synthesis, the ready queue, lanes of the job's
//! device, and the end of a job.

use super::job::{Job, Order};
use super::tasks::{
    Event, FinishDone, FinishTask, ProveDone, ProveTask, Spare, SynthDone, SynthTask, Work,
};
use crate::{
    JobCounts, JobError, JobId, JobState, JobStatus, Lane, LaneStats, PartitionCounts, Setup,
};
use cuzk_field::Scalar;
use cuzk_mem::{Budget, MemError, Reservation};
use cuzk_synth::Witness;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A synthesized partition waiting for a lane of its device; it keeps its memory reserved.
pub(crate) struct Ready {
    job: JobId,
    device: usize,
    setup: Arc<Setup>,
    work: Work,
    public_inputs: Vec<Scalar>,
    reservation: Reservation,
}

/// A lane's bookkeeping.
pub(crate) struct LaneState {
    pub lane: Lane,
    pub job: Option<JobId>,
    pub busy_since: Option<Instant>,
    pub busy: Duration,
    pub proofs: u64,
    pub failures: u64,
}

/// What the dispatcher lends [`Core::pump`]: the budget and the workers' inboxes.
pub(crate) struct Ctx<'a> {
    pub budget: &'a Budget,
    pub lookahead: usize,
    /// Most partitions synthesizing or ready for one device, so that a device whose lanes
    /// are busy cannot take the whole lookahead while another device idles.
    pub device_lookahead: usize,
    pub synth_tx: &'a [Sender<SynthTask>],
    pub lane_tx: &'a [Sender<ProveTask>],
}

/// Everything the scheduler knows, guarded by one mutex. Only the dispatcher starts work;
/// submit and cancel add and remove jobs.
pub(crate) struct Core {
    pub jobs: HashMap<JobId, Job>,
    /// Jobs with partitions not yet started, best first.
    waiting: BTreeSet<(Order, JobId)>,
    /// Synthesized partitions, best first (job order, then partition).
    ready: BTreeMap<(Order, usize), Ready>,
    synthesizing: usize,
    proving: usize,
    /// Partitions synthesizing, per device.
    synthesizing_on: Vec<usize>,
    /// Partitions of live jobs pinned to each device and not yet proved: the load that
    /// decides where the next job goes.
    pinned_on: Vec<usize>,
    idle_synth: VecDeque<usize>,
    idle_lanes: VecDeque<usize>,
    /// Witnesses of prepared partitions, each with its reservation, kept for the next
    /// syntheses to write into while partitions wait to start; given back when none do.
    spares: Vec<Spare>,
    /// Spares given up, freed by the dispatcher outside the lock.
    retired: Vec<Spare>,
    /// Jobs whose every partition is proved, for the dispatcher to hand to finishing
    /// threads outside the lock ([`crate::Instance::finishes`]).
    finishing: Vec<FinishTask>,
    pub lanes: Vec<LaneState>,
    pub synth_busy: Duration,
    pub synth_partitions: u64,
    pub synth_workers: usize,
    history: VecDeque<JobStatus>,
    history_limit: usize,
    verify: bool,
    pub counts: JobCounts,
    next_seq: u64,
    pub accepting: bool,
    pub stopping: bool,
}

impl Core {
    pub fn new(lanes: &[Lane], synth_workers: usize, history_limit: usize, verify: bool) -> Core {
        // Lanes are handed out round robin from this queue. Start it worker-major (d0w0,
        // d1w0, …, d0w1, …) so that a light load spreads over devices before doubling up
        // on one.
        let mut idle_lanes: Vec<usize> = (0..lanes.len()).collect();
        idle_lanes.sort_by_key(|&i| (lanes[i].worker, lanes[i].device));
        let devices = lanes.iter().map(|l| l.device + 1).max().unwrap_or(0);
        Core {
            jobs: HashMap::new(),
            waiting: BTreeSet::new(),
            ready: BTreeMap::new(),
            synthesizing: 0,
            proving: 0,
            synthesizing_on: vec![0; devices],
            pinned_on: vec![0; devices],
            idle_synth: (0..synth_workers).collect(),
            idle_lanes: idle_lanes.into(),
            spares: Vec::new(),
            retired: Vec::new(),
            finishing: Vec::new(),
            lanes: lanes
                .iter()
                .map(|&lane| LaneState {
                    lane,
                    job: None,
                    busy_since: None,
                    busy: Duration::ZERO,
                    proofs: 0,
                    failures: 0,
                })
                .collect(),
            synth_busy: Duration::ZERO,
            synth_partitions: 0,
            synth_workers,
            history: VecDeque::new(),
            history_limit,
            verify,
            counts: JobCounts::default(),
            next_seq: 0,
            accepting: true,
            stopping: false,
        }
    }

    /// Queues a job built by `make` from its id and sequence number.
    pub fn add(&mut self, make: impl FnOnce(JobId, u64) -> Job) -> JobId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let job = make(JobId(seq), seq);
        let id = job.id;
        self.waiting.insert((job.order(), id));
        self.jobs.insert(id, job);
        self.counts.submitted += 1;
        id
    }

    pub fn status(&self, id: JobId) -> Option<JobStatus> {
        match self.jobs.get(&id) {
            Some(job) => Some(job.status(Instant::now())),
            None => self.history.iter().rev().find(|s| s.id == id).cloned(),
        }
    }

    pub fn job_counts(&self) -> JobCounts {
        let running = self.jobs.values().filter(|j| j.started > 0).count();
        JobCounts {
            queued: self.jobs.len() - running,
            running,
            ..self.counts
        }
    }

    pub fn partition_counts(&self) -> PartitionCounts {
        PartitionCounts {
            synthesizing: self.synthesizing,
            ready: self.ready.len(),
            proving: self.proving,
        }
    }

    pub fn lane_stats(&self, now: Instant, uptime: Duration) -> Vec<LaneStats> {
        self.lanes
            .iter()
            .map(|l| {
                let busy_time = l.busy + l.busy_since.map_or(Duration::ZERO, |t| now - t);
                LaneStats {
                    lane: l.lane,
                    busy: l.busy_since.is_some(),
                    job: l.job,
                    busy_time,
                    proofs: l.proofs,
                    failures: l.failures,
                    utilization: ratio(busy_time, uptime),
                }
            })
            .collect()
    }

    pub fn synth_busy_workers(&self) -> usize {
        self.synth_workers - self.idle_synth.len()
    }

    /// The earliest deadline of a live job.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.jobs.values().filter_map(|j| j.deadline).min()
    }

    /// Fails every job whose deadline has passed.
    pub fn expire(&mut self, now: Instant) {
        let overdue: Vec<(JobId, Duration)> = self
            .jobs
            .values()
            .filter_map(|j| {
                let d = j.deadline.filter(|&d| d <= now)?;
                Some((j.id, d.saturating_duration_since(j.submitted)))
            })
            .collect();
        for (job, timeout) in overdue {
            self.finish(job, Some(JobError::DeadlineExceeded { job, timeout }));
        }
    }

    pub fn apply(&mut self, event: Event) {
        match event {
            Event::Wake => {}
            Event::Synthesized(done) => self.on_synthesized(*done),
            Event::Proved(done) => self.on_proved(*done),
            Event::Finished(done) => self.on_finished(*done),
        }
    }

    /// A job's proof made from its partition proofs; a job that finished meanwhile (a
    /// deadline, a cancel) has already answered.
    fn on_finished(&mut self, done: FinishDone) {
        let Some(job) = self.jobs.get_mut(&done.job) else {
            return;
        };
        match done.outcome {
            Ok(bytes) => {
                job.finished = Some(bytes);
                self.finish(done.job, None);
            }
            Err(e) => self.finish(done.job, Some(e)),
        }
    }

    fn on_synthesized(&mut self, done: SynthDone) {
        self.synthesizing -= 1;
        self.synthesizing_on[done.device] -= 1;
        self.idle_synth.push_back(done.worker);
        self.synth_busy += done.busy;
        self.synth_partitions += 1;
        self.spares.extend(done.spare);
        // A job that finished meanwhile: its witness and memory are dropped right here.
        let Some(job) = self.jobs.get_mut(&done.job) else {
            return;
        };
        match done.outcome {
            Ok(s) => {
                job.setup += s.setup_time;
                job.setup_used.get_or_insert_with(|| Arc::clone(&s.setup));
                let times = &mut job.times[done.partition];
                times.synthesis = s.synthesis;
                times.prepare = s.prepare;
                times.ready_at = Some(Instant::now());
                job.public_inputs[done.partition] = s.public_inputs.clone();
                let key = (job.order(), done.partition);
                self.ready.insert(
                    key,
                    Ready {
                        job: done.job,
                        device: done.device,
                        setup: s.setup,
                        work: s.work,
                        public_inputs: s.public_inputs,
                        reservation: done.reservation,
                    },
                );
            }
            Err(e) => self.finish(done.job, Some(e)),
        }
    }

    fn on_proved(&mut self, done: ProveDone) {
        let now = Instant::now();
        self.proving -= 1;
        // Under the same lock as the count above: memory and count change together.
        drop(done.reservation);
        let lane = &mut self.lanes[done.lane];
        lane.job = None;
        if let Some(since) = lane.busy_since.take() {
            lane.busy += now - since;
        }
        match &done.outcome {
            Ok(_) => lane.proofs += 1,
            // Skipped work of a finished job is no failure of the lane.
            Err(JobError::Cancelled { .. }) => {}
            Err(_) => lane.failures += 1,
        }
        self.idle_lanes.push_back(done.lane);
        let Some(job) = self.jobs.get_mut(&done.job) else {
            return;
        };
        match done.outcome {
            Ok(proof) => {
                job.proofs[done.partition] = Some(proof);
                job.times[done.partition].prove = done.prove;
                job.times[done.partition].verify = done.verify;
                job.proved += 1;
                if let Some(device) = job.device {
                    self.pinned_on[device] -= 1;
                }
                if job.proved == job.partitions {
                    if job.instance.finishes() {
                        self.finishing.push(FinishTask {
                            job: done.job,
                            instance: Arc::clone(&job.instance),
                            proofs: job.proofs.iter().flatten().copied().collect(),
                            span: job.span.clone(),
                        });
                    } else {
                        self.finish(done.job, None);
                    }
                }
            }
            Err(e) => self.finish(done.job, Some(e)),
        }
    }

    /// Starts whatever can start: ready partitions onto idle lanes of their device, then
    /// new partitions into synthesis while the lookahead and the memory budget allow.
    pub fn pump(&mut self, ctx: &Ctx<'_>) {
        let now = Instant::now();
        let keys: Vec<(Order, usize)> = self.ready.keys().copied().collect();
        for key in keys {
            if self.idle_lanes.is_empty() {
                break;
            }
            let device = self.ready[&key].device;
            // Oldest first among the idle lanes of the partition's own device: a job's
            // partitions never leave its device.
            let Some(slot) = self
                .idle_lanes
                .iter()
                .position(|&i| self.lanes[i].lane.device == device)
            else {
                continue;
            };
            let ready = self.ready.remove(&key).expect("key listed above");
            let partition = key.1;
            let Some(job) = self.jobs.get_mut(&ready.job) else {
                continue;
            };
            let index = self.idle_lanes.remove(slot).expect("found above");
            let times = &mut job.times[partition];
            times.lane = Some(self.lanes[index].lane);
            times.lane_wait = times.ready_at.map_or(Duration::ZERO, |t| now - t);
            let task = ProveTask {
                job: ready.job,
                partition,
                setup: ready.setup,
                work: ready.work,
                public_inputs: ready.public_inputs,
                reservation: ready.reservation,
                cancelled: Arc::clone(&job.cancelled),
                span: job.span.clone(),
            };
            if ctx.lane_tx[index].send(task).is_err() {
                // The lane's thread is gone (it never exits while the scheduler runs):
                // fail the job rather than lose it, and never use the lane again.
                let worker = format!("lane {}", self.lanes[index].lane);
                self.finish(
                    ready.job,
                    Some(JobError::WorkerGone {
                        job: ready.job,
                        worker,
                    }),
                );
                continue;
            }
            self.lanes[index].busy_since = Some(now);
            self.lanes[index].job = Some(ready.job);
            self.proving += 1;
        }

        while let Some(&worker) = self.idle_synth.front() {
            if self.synthesizing + self.ready.len() >= ctx.lookahead {
                break;
            }
            let Some((order, id, device)) = self.next_start(ctx.device_lookahead) else {
                break;
            };
            let job = self.jobs.get_mut(&id).expect("waiting jobs are live");
            // Strictly in order: if the best partition that may start does not fit, nothing
            // overtakes it (which would starve large jobs); a release wakes the dispatcher
            // to retry.
            let (bytes, witness) = (job.partition_bytes, job.witness_bytes);
            let reserved = reserve(
                &mut self.spares,
                &mut self.retired,
                ctx.budget,
                bytes,
                witness,
            );
            let (reservation, spare) = match reserved {
                Ok(r) => r,
                Err(MemError::Unavailable { .. }) => break,
                Err(source) => {
                    self.finish(id, Some(JobError::Memory { job: id, source }));
                    continue;
                }
            };
            let job = self.jobs.get_mut(&id).expect("waiting jobs are live");
            self.idle_synth.pop_front();
            if job.device.is_none() {
                job.device = Some(device);
                self.pinned_on[device] += job.partitions;
                tracing::debug!(parent: &job.span, device, "job pinned to device");
            }
            let partition = job.started;
            job.started += 1;
            job.first_start.get_or_insert(now);
            if job.started == job.partitions {
                self.waiting.remove(&(order, id));
            }
            let task = SynthTask {
                job: id,
                partition,
                device,
                instance: Arc::clone(&job.instance),
                reservation,
                spare,
                cancelled: Arc::clone(&job.cancelled),
                span: job.span.clone(),
            };
            if ctx.synth_tx[worker].send(task).is_err() {
                let worker = format!("synthesis {worker}");
                self.finish(id, Some(JobError::WorkerGone { job: id, worker }));
                continue;
            }
            self.synthesizing += 1;
            self.synthesizing_on[device] += 1;
        }
        // Nothing left to start: spare witnesses give their memory back.
        if self.waiting.is_empty() {
            self.retired.append(&mut self.spares);
        }
    }

    /// Spare witnesses no longer kept, for the caller to free once the lock is released
    /// (unmapping gigabytes takes a while); each gives its bytes back as it goes.
    pub fn take_retired(&mut self) -> Vec<Spare> {
        std::mem::take(&mut self.retired)
    }

    /// Jobs to finish outside the lock (see `finishing`).
    pub fn take_finishing(&mut self) -> Vec<FinishTask> {
        std::mem::take(&mut self.finishing)
    }

    /// Partitions synthesizing or ready for `device`.
    fn ahead_of(&self, device: usize) -> usize {
        self.synthesizing_on[device] + self.ready.values().filter(|r| r.device == device).count()
    }

    /// The best waiting job whose device has room ahead of its lanes, and that device. A job
    /// already started keeps its device; a new one goes to the device with room that has the
    /// fewest unproved partitions pinned to it (then the fewest ahead, then the lowest).
    fn next_start(&self, device_lookahead: usize) -> Option<(Order, JobId, usize)> {
        let ahead: Vec<usize> = (0..self.pinned_on.len())
            .map(|d| self.ahead_of(d))
            .collect();
        let least_loaded = (0..ahead.len())
            .filter(|&d| ahead[d] < device_lookahead)
            .min_by_key(|&d| (self.pinned_on[d], ahead[d], d));
        self.waiting.iter().find_map(|&(order, id)| {
            let device = match self.jobs[&id].device {
                Some(d) => d,
                None => least_loaded?,
            };
            (ahead[device] < device_lookahead).then_some((order, id, device))
        })
    }

    /// Ends job `id`: with its proofs when `error` is `None`, else with the error. Its
    /// queued partitions and their memory are dropped now; work in flight is skipped or
    /// discarded when it reports.
    pub fn finish(&mut self, id: JobId, error: Option<JobError>) {
        let Some(mut job) = self.jobs.remove(&id) else {
            return;
        };
        job.cancelled.store(true, Ordering::Relaxed);
        if let Some(device) = job.device {
            self.pinned_on[device] -= job.partitions - job.proved;
        }
        let order = job.order();
        self.waiting.remove(&(order, id));
        self.ready.retain(|(o, _), _| *o != order);
        let now = Instant::now();
        let total = now - job.submitted;
        let mut status = job.status(now);
        let result = match error {
            None => {
                self.counts.succeeded += 1;
                status.state = JobState::Succeeded;
                let output = job.output(total, self.verify);
                let t = &output.timings;
                tracing::info!(
                    parent: &job.span,
                    device = job.device,
                    queue_wait_ms = t.queue_wait.as_millis() as u64,
                    setup_ms = t.setup.as_millis() as u64,
                    synthesis_ms = t.synthesis.as_millis() as u64,
                    prepare_ms = t.prepare.as_millis() as u64,
                    prove_ms = t.prove.as_millis() as u64,
                    verify_ms = t.verify.as_millis() as u64,
                    total_ms = t.total.as_millis() as u64,
                    "job succeeded"
                );
                Ok(output)
            }
            Some(e) => {
                status.state = e.state();
                status.error = Some(e.to_string());
                match e.state() {
                    JobState::Cancelled => self.counts.cancelled += 1,
                    _ => self.counts.failed += 1,
                }
                tracing::warn!(parent: &job.span, error = %e, total_ms = total.as_millis() as u64, "job failed");
                Err(e)
            }
        };
        self.history.push_back(status);
        while self.history.len() > self.history_limit {
            self.history.pop_front();
        }
        if let Some(reply) = job.reply.take() {
            // The caller may have dropped its handle: the job then ran detached.
            let _ = reply.send(result);
        }
    }
}

/// Reserves `bytes` for a partition about to synthesize, whose witness takes `witness` of
/// them, with a spare witness whose memory it can write into when one is no larger than that:
/// the spare's reservation plus the rest from the budget. When the budget has no room, every
/// spare is retired into `retired` (the caller frees them outside the lock, which gives their
/// bytes back and wakes the dispatcher to try again): no synthesis uses their memory now.
fn reserve(
    spares: &mut Vec<Spare>,
    retired: &mut Vec<Spare>,
    budget: &Budget,
    bytes: u64,
    witness: u64,
) -> Result<(Reservation, Option<Witness>), MemError> {
    let fitting = spares.iter().position(|s| s.reservation.bytes() <= witness);
    let spare = fitting.map(|i| spares.swap_remove(i));
    let held = spare.as_ref().map_or(0, |s| s.reservation.bytes());
    match budget.try_reserve(bytes - held) {
        Ok(top_up) => match spare {
            None => Ok((top_up, None)),
            Some(Spare {
                witness,
                mut reservation,
            }) => {
                reservation.merge(top_up)?;
                Ok((reservation, Some(witness)))
            }
        },
        Err(e @ MemError::Unavailable { .. }) => {
            retired.extend(spare);
            retired.append(spares);
            Err(e)
        }
        Err(e) => {
            spares.extend(spare);
            Err(e)
        }
    }
}

/// `part / whole` in 0..=1.
pub(crate) fn ratio(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        return 0.0;
    }
    (part.as_secs_f64() / whole.as_secs_f64()).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::{reserve, Spare};
    use cuzk_field::Scalar;
    use cuzk_mem::{Budget, MemError};
    use cuzk_synth::Witness;

    fn spare(budget: &Budget, bytes: u64) -> Spare {
        Spare {
            witness: Witness {
                inputs: vec![Scalar::from(bytes)],
                aux: Vec::new(),
                packed: None,
            },
            reservation: budget.try_reserve(bytes).unwrap(),
        }
    }

    #[test]
    fn a_spare_no_larger_than_the_witness_is_topped_up_to_the_partition() {
        let budget = Budget::new("host", 200);
        let mut spares = vec![spare(&budget, 70), spare(&budget, 20), spare(&budget, 25)];
        let mut retired = Vec::new();
        let (r, witness) = reserve(&mut spares, &mut retired, &budget, 30, 24).unwrap();
        assert_eq!(r.bytes(), 30);
        assert_eq!(witness.unwrap().inputs, vec![Scalar::from(20)]);
        // The larger spares stay, their memory still counted.
        assert_eq!((spares.len(), budget.used()), (2, 30 + 70 + 25));
        assert!(retired.is_empty());
        drop(r);
        assert_eq!(budget.used(), 95);
    }

    #[test]
    fn when_the_budget_is_short_every_spare_is_retired() {
        let budget = Budget::new("host", 100);
        let mut spares = vec![spare(&budget, 60), spare(&budget, 30)];
        let mut retired = Vec::new();
        // 30 would come from the fitting spare, but the other 20 do not fit: both go.
        assert!(matches!(
            reserve(&mut spares, &mut retired, &budget, 50, 40),
            Err(MemError::Unavailable { .. })
        ));
        assert!(spares.is_empty());
        assert_eq!((retired.len(), budget.used()), (2, 90));
        drop(retired);
        let mut retired = Vec::new();
        let (r, witness) = reserve(&mut spares, &mut retired, &budget, 50, 40).unwrap();
        assert!(witness.is_none());
        assert_eq!((r.bytes(), budget.used()), (50, 50));
    }

    #[test]
    fn other_failures_keep_the_spare() {
        let budget = Budget::new("host", 100);
        let mut spares = vec![spare(&budget, 30)];
        let mut retired = Vec::new();
        assert!(matches!(
            reserve(&mut spares, &mut retired, &budget, 200, 40),
            Err(MemError::ExceedsCapacity { .. })
        ));
        assert_eq!((spares.len(), retired.len(), budget.used()), (1, 0, 30));
        // Without spares: a plain reservation.
        let (r, none) = reserve(&mut Vec::new(), &mut retired, &budget, 20, 20).unwrap();
        assert!(none.is_none());
        assert_eq!((r.bytes(), budget.used()), (20, 50));
    }
}
