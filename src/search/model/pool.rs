//! Tools are embedded off the critical path: `upsert` queues a job per tool and returns; up to two
//! background threads (one process-wide pool, started on the first job, each leaving after 2 s
//! idle) take jobs in order, pack a batch of texts into one forward pass and hand the vectors back
//! to the index that asked ([`Pending`]), which picks them up at its next search.
//!
//! Vectors are cached by a hash of the model and the text (process-wide, bounded; and on disk with
//! a cache directory, `disk.rs`): the same tools upserted again, in this index or another, are
//! not embedded twice.
//!
//! `ready` waits until no tool is pending: every tool upserted before the call has its vector, and
//! so has any upserted since (a tool replaced meanwhile has a new id; waiting for the whole index
//! is what makes the next search use the model). A job whose tool was
//! removed (or whose index is gone) is skipped; a batch that fails leaves its tools lexical and
//! still counts as done, so `ready` always ends.

use std::{
  collections::{BTreeSet, HashMap, VecDeque},
  panic::{catch_unwind, AssertUnwindSafe},
  sync::{Arc, Condvar, Mutex, MutexGuard, Weak},
  time::Duration,
};

use super::{disk::DiskCache, fnv1a64, Model, TOKEN_CAP};

pub use super::Vector;
/// Called once, on a pool thread or in `Drop`, when the index it waits on is ready.
pub type Waiter = Box<dyn FnOnce() + Send>;

/// A pool thread leaves after this long without jobs.
const IDLE: Duration = Duration::from_secs(2);
/// Jobs taken at once by a thread.
const BATCH_JOBS: usize = 16;
/// Tokens in one forward pass at most (activations of ~1 MB per 64 tokens).
const BATCH_TOKENS: usize = 512;
/// Vectors kept in the process-wide cache (1.5 KB each).
const CACHE_ENTRIES: usize = 50_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
  m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cache key of `text` under `model`.
pub fn key(model: &Model, text: &str) -> u64 {
  let mut h = fnv1a64(0xcbf2_9ce4_8422_2325, &model.fingerprint.to_le_bytes());
  h = fnv1a64(h, &(TOKEN_CAP as u64).to_le_bytes());
  fnv1a64(h, text.as_bytes())
}

/// The vector of a query: from the cache when this text was embedded before (an agent repeats its
/// searches; a query can equal a tool's text), else computed here, on the caller's thread.
pub fn query_vector(model: &Model, query: &str) -> Vector {
  let key = key(model, query);
  if let Some(v) = lock(&CACHE).map.get(&key).cloned() {
    return v;
  }
  let v = Vector::from(model.embed(query));
  remember(key, &v);
  v
}

/// One index's side: which of its tools are still being embedded, the vectors done and not yet
/// picked up, and who waits for `ready`.
#[derive(Default)]
pub struct Pending {
  shared: Arc<Shared>,
  /// The cache directory's file, once opened (at the first `submit`).
  cache_dir: Option<std::path::PathBuf>,
  disk: Option<Arc<DiskCache>>,
}

#[derive(Default)]
struct Shared {
  state: Mutex<State>,
  changed: Condvar,
}

#[derive(Default)]
struct State {
  pending: BTreeSet<u64>,
  done: Vec<(u64, Vector)>,
  /// Called once nothing is pending.
  waiters: Vec<Waiter>,
}

impl State {
  /// The waiters, taken out (to be called without the lock) once nothing is pending. Not earlier:
  /// a tool replaced or re-added while a waiter waits (`setTools` of the same list, a re-index on
  /// `list_changed`) has a new id, and the waiter wants the index as searches will see it.
  fn due(&mut self) -> Vec<Waiter> {
    if self.pending.is_empty() {
      std::mem::take(&mut self.waiters)
    } else {
      Vec::new()
    }
  }
}

impl Drop for Shared {
  fn drop(&mut self) {
    // The index is gone: nobody will pick up its vectors, and whoever waits on it is answered.
    let state = self.state.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
    for waiter in state.waiters.drain(..) {
      waiter();
    }
  }
}

impl Pending {
  /// Also keeps vectors in `dir` (`disk.rs`), and finds them there.
  pub fn with_cache_dir(dir: Option<std::path::PathBuf>) -> Self {
    Self { shared: Arc::default(), cache_dir: dir, disk: None }
  }

  /// Queues `(id, text)` jobs. Vectors already cached are returned at once instead.
  pub fn submit(&mut self, model: &'static Model, jobs: Vec<(u64, String)>) -> Vec<(u64, Vector)> {
    if let Some(dir) = self.cache_dir.take() {
      if let Some((disk, found)) = super::disk::open(&dir, model.fingerprint, model.dims()) {
        for (key, v) in &found {
          remember(*key, v);
        }
        self.disk = Some(disk);
      }
    }
    let mut hits = Vec::new();
    let mut queued = Vec::new();
    {
      let cache = lock(&CACHE);
      for (id, text) in jobs {
        let key = key(model, &text);
        match cache.map.get(&key) {
          Some(v) => hits.push((id, v.clone())),
          None => queued.push(Job { owner: Arc::downgrade(&self.shared), id, key, text, disk: self.disk.clone() }),
        }
      }
    }
    if queued.is_empty() {
      return hits;
    }
    lock(&self.shared.state).pending.extend(queued.iter().map(|j| j.id));
    enqueue(model, queued);
    hits
  }

  /// The vectors computed since the last call.
  pub fn take_done(&self) -> Vec<(u64, Vector)> {
    std::mem::take(&mut lock(&self.shared.state).done)
  }

  /// Whether no tool is waiting for its vector.
  pub fn is_idle(&self) -> bool {
    lock(&self.shared.state).pending.is_empty()
  }

  /// Stops waiting for these tools' vectors (removed from the index).
  /// Waiters are answered at the next [`Pending::settle`] (the caller's operation may be about
  /// to add tools again).
  pub fn cancel(&self, ids: &[u64]) {
    let mut state = lock(&self.shared.state);
    for id in ids {
      state.pending.remove(id);
    }
  }

  /// Stops waiting for every tool (the index was cleared). Waiters are answered at the next
  /// [`Pending::settle`].
  pub fn cancel_all(&self) {
    let mut state = lock(&self.shared.state);
    state.pending.clear();
    state.done.clear();
  }

  /// Answers the waiters if nothing is pending (after an operation that removed or added tools).
  pub fn settle(&self) {
    let due = lock(&self.shared.state).due();
    self.shared.changed.notify_all();
    due.into_iter().for_each(|w| w());
  }

  /// Calls `waiter` once no tool is pending (at once if none is).
  pub fn when_ready(&self, waiter: Waiter) {
    let mut state = lock(&self.shared.state);
    if state.pending.is_empty() {
      drop(state);
      waiter();
      return;
    }
    state.waiters.push(waiter);
  }

  /// Blocks until no tool is pending (Rust callers and tests; JavaScript gets `when_ready`).
  pub fn wait_ready(&self) {
    let mut state = lock(&self.shared.state);
    while !state.pending.is_empty() {
      state = self.shared.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
    }
  }
}

impl Drop for Pending {
  /// The index is gone: its jobs still queued leave the queue now (with their texts), not when a
  /// pool thread next comes by them.
  fn drop(&mut self) {
    let mine = Arc::downgrade(&self.shared);
    lock(&QUEUE).lines.retain(|(owner, _)| !Weak::ptr_eq(owner, &mine));
  }
}

/// One tool to embed.
struct Job {
  owner: Weak<Shared>,
  id: u64,
  key: u64,
  text: String,
  /// Where the vector is also kept.
  disk: Option<Arc<DiskCache>>,
}

/// The jobs of every index, one line per index, served in turn: an index with one new tool is not
/// kept waiting behind another's thousands, and the jobs of an index that is gone are dropped
/// whole.
struct Queue {
  lines: VecDeque<(Weak<Shared>, VecDeque<Job>)>,
  model: Option<&'static Model>,
  threads: usize,
}

impl Queue {
  fn is_empty(&self) -> bool {
    self.lines.is_empty()
  }

  fn push(&mut self, jobs: Vec<Job>) {
    for job in jobs {
      match self.lines.iter_mut().find(|(owner, _)| Weak::ptr_eq(owner, &job.owner)) {
        Some((_, line)) => line.push_back(job),
        None => self.lines.push_back((job.owner.clone(), VecDeque::from([job]))),
      }
    }
  }

  /// Up to `n` jobs of the next index in turn (its line goes to the back if it has more).
  fn take(&mut self, n: usize) -> Vec<Job> {
    while let Some((owner, mut line)) = self.lines.pop_front() {
      if owner.strong_count() == 0 {
        continue;
      }
      let jobs: Vec<Job> = line.drain(..n.min(line.len())).collect();
      if !line.is_empty() {
        self.lines.push_back((owner, line));
      }
      if !jobs.is_empty() {
        return jobs;
      }
    }
    Vec::new()
  }
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { lines: VecDeque::new(), model: None, threads: 0 });
static WORK: Condvar = Condvar::new();

struct Cache {
  map: HashMap<u64, Vector>,
  order: VecDeque<u64>,
}

static CACHE: std::sync::LazyLock<Mutex<Cache>> =
  std::sync::LazyLock::new(|| Mutex::new(Cache { map: HashMap::new(), order: VecDeque::new() }));

/// Remembers a vector (the oldest half goes when the cache is full).
fn remember(key: u64, v: &Vector) {
  let mut cache = lock(&CACHE);
  if cache.map.insert(key, v.clone()).is_none() {
    cache.order.push_back(key);
  }
  if cache.order.len() > CACHE_ENTRIES {
    for _ in 0..CACHE_ENTRIES / 2 {
      if let Some(old) = cache.order.pop_front() {
        cache.map.remove(&old);
      }
    }
  }
}

/// How many pool threads may run: `CODECALL_EMBED_THREADS` (1–16), else up to two (not more
/// than the machine's cores).
fn max_threads() -> usize {
  if let Some(n) = std::env::var("CODECALL_EMBED_THREADS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
    return n.clamp(1, 16);
  }
  std::thread::available_parallelism().map_or(1, |n| n.get()).min(2)
}

fn enqueue(model: &'static Model, jobs: Vec<Job>) {
  let mut queue = lock(&QUEUE);
  queue.model = Some(model);
  let n = jobs.len();
  queue.push(jobs);
  let want = max_threads().min(n.div_ceil(BATCH_JOBS).max(1));
  while queue.threads < want {
    let spawned = std::thread::Builder::new().name("codecall-embed".into()).spawn(work);
    if spawned.is_err() {
      break;
    }
    queue.threads += 1;
  }
  if queue.threads == 0 {
    // No thread could start: embed here rather than leave `ready` waiting forever.
    let mut jobs = Vec::new();
    while !queue.is_empty() {
      jobs.extend(queue.take(usize::MAX));
    }
    drop(queue);
    run(model, jobs);
    return;
  }
  drop(queue);
  WORK.notify_all();
}

/// A pool thread.
fn work() {
  lower_priority();
  loop {
    let (model, jobs) = {
      let mut queue = lock(&QUEUE);
      let jobs = loop {
        let jobs = queue.take(BATCH_JOBS);
        if !jobs.is_empty() {
          break jobs;
        }
        let (q, timeout) = WORK.wait_timeout(queue, IDLE).unwrap_or_else(std::sync::PoisonError::into_inner);
        queue = q;
        if timeout.timed_out() && queue.is_empty() {
          queue.threads -= 1;
          return;
        }
      };
      (queue.model, jobs)
    };
    if let Some(model) = model {
      run(model, jobs);
    }
  }
}

/// Embeds `jobs` (those still wanted) and delivers their vectors.
fn run(model: &'static Model, jobs: Vec<Job>) {
  // Still wanted: the index lives and the tool is still pending there; and not cached meanwhile.
  let mut todo: Vec<(Arc<Shared>, Job, Vec<u32>)> = Vec::with_capacity(jobs.len());
  let mut ready: Vec<(Arc<Shared>, u64, Option<Vector>)> = Vec::new();
  for job in jobs {
    let Some(owner) = job.owner.upgrade() else { continue };
    if !lock(&owner.state).pending.contains(&job.id) {
      continue;
    }
    if let Some(v) = lock(&CACHE).map.get(&job.key).cloned() {
      ready.push((owner, job.id, Some(v)));
      continue;
    }
    let ids = model.encode(&job.text, TOKEN_CAP);
    todo.push((owner, job, ids));
  }
  let mut start = 0;
  while start < todo.len() {
    let mut end = start;
    let mut tokens = 0;
    while end < todo.len() && (end == start || tokens + todo[end].2.len() <= BATCH_TOKENS) {
      tokens += todo[end].2.len();
      end += 1;
    }
    let seqs: Vec<Vec<u32>> = todo[start..end].iter().map(|(_, _, ids)| ids.clone()).collect();
    // A failure leaves these tools lexical; it must not take the thread (or `ready`) with it.
    let vectors = catch_unwind(AssertUnwindSafe(|| model.embed_batch(&seqs))).unwrap_or_default();
    let mut to_disk: Vec<(Arc<DiskCache>, Vec<super::disk::Keyed>)> = Vec::new();
    for (i, (owner, job, _)) in todo[start..end].iter().enumerate() {
      let v: Option<Vector> = vectors.get(i).map(|v| Vector::from(v.as_slice()));
      if let Some(v) = &v {
        remember(job.key, v);
        if let Some(disk) = &job.disk {
          match to_disk.iter_mut().find(|(d, _)| Arc::ptr_eq(d, disk)) {
            Some((_, list)) => list.push((job.key, v.clone())),
            None => to_disk.push((disk.clone(), vec![(job.key, v.clone())])),
          }
        }
      }
      ready.push((owner.clone(), job.id, v));
    }
    for (disk, list) in to_disk {
      disk.append(&list);
    }
    start = end;
  }
  deliver(ready);
}

fn deliver(ready: Vec<(Arc<Shared>, u64, Option<Vector>)>) {
  let mut due = Vec::new();
  let mut touched: Vec<Arc<Shared>> = Vec::new();
  for (owner, id, v) in ready {
    let mut state = lock(&owner.state);
    if state.pending.remove(&id) {
      if let Some(v) = v {
        state.done.push((id, v));
      }
    }
    due.extend(state.due());
    drop(state);
    if !touched.iter().any(|t| Arc::ptr_eq(t, &owner)) {
      touched.push(owner);
    }
  }
  for owner in &touched {
    owner.changed.notify_all();
  }
  due.into_iter().for_each(|w| w());
}

/// Embedding is background work: on Linux the pool's threads run at nice 10, so Node's own thread
/// (a search, the index's commit) gets the cores first while thousands of tools are embedded.
fn lower_priority() {
  #[cfg(target_os = "linux")]
  // SAFETY: `gettid` has no preconditions; `setpriority` with this thread's id changes only this
  // thread's nice value (Linux threads have their own); a failure changes nothing.
  unsafe {
    let tid = libc::syscall(libc::SYS_gettid);
    if let Ok(tid) = libc::id_t::try_from(tid) {
      libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
  }
}
