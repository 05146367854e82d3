//! The on-disk vector cache of a cache directory (`cacheDir`): a gateway that restarts with the
//! same tools embeds nothing again.
//!
//! One file per model, `<dir>/embeddings-<fingerprint>.vec` (the directory is made with mode 0700,
//! the file 0600): an 8-byte header `CCVEC001`, then fixed-size records
//! `u64 key | f32[dims] vector | u32 FNV-1a-32 of the key and vector`, little-endian. It is read
//! once per process and directory, into the process's vector cache; records that fail their
//! checksum (a torn write, a foreign file) are skipped, and for a repeated key the last wins. New
//! vectors are appended, one write per batch, in append mode (on a local file system, processes
//! sharing the file do not interleave within one). A header repeated where a record starts (two
//! processes created the file at the same moment) is skipped. A file over [`MAX_FILE_BYTES`] is
//! started afresh (the old one kept as `.old`). Nothing here can fail a search: an unreadable or
//! unwritable directory only means vectors are computed again.

use std::{
  collections::HashMap,
  fs::{File, OpenOptions},
  io::{Read, Write},
  path::{Path, PathBuf},
  sync::{Arc, LazyLock, Mutex},
};

use super::{fnv1a64, Vector};

const MAGIC: &[u8; 8] = b"CCVEC001";
/// Larger files are set aside (`.old`) and started afresh: 64 MB is about 40 000 tools.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// A vector and its cache key.
pub type Keyed = (u64, Vector);

/// One directory's cache file, open for appending.
pub struct DiskCache {
  path: PathBuf,
  dims: usize,
  file: Mutex<Option<File>>,
}

/// The cache file of `dir` for the model with `fingerprint`, opened once per process (later calls
/// get the same one), with the vectors it holds. `None` when the directory cannot be used.
pub fn open(dir: &Path, fingerprint: u64, dims: usize) -> Option<(Arc<DiskCache>, Vec<Keyed>)> {
  static OPEN: LazyLock<Mutex<HashMap<PathBuf, Arc<DiskCache>>>> = LazyLock::new(Mutex::default);
  let path = dir.join(format!("embeddings-{fingerprint:016x}.vec"));
  let mut open = OPEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
  if let Some(cache) = open.get(&path) {
    return Some((cache.clone(), Vec::new()));
  }
  make_dir(dir).ok()?;
  let vectors = read(&path, dims);
  let file = append_file(&path).ok();
  let cache = Arc::new(DiskCache { path: path.clone(), dims, file: Mutex::new(file) });
  open.insert(path, cache.clone());
  Some((cache, vectors))
}

impl DiskCache {
  /// Appends vectors (one write); a failure is ignored (they are computed again next time).
  pub fn append(&self, vectors: &[Keyed]) {
    let mut bytes = Vec::with_capacity(vectors.len() * record_len(self.dims));
    for (key, v) in vectors {
      if v.len() == self.dims {
        bytes.extend(record(*key, v));
      }
    }
    if bytes.is_empty() {
      return;
    }
    let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let too_big = file.as_ref().and_then(|f| f.metadata().ok()).is_some_and(|m| m.len() > MAX_FILE_BYTES);
    if too_big {
      let _ = std::fs::rename(&self.path, self.path.with_extension("vec.old"));
      *file = append_file(&self.path).ok();
    }
    if let Some(f) = file.as_mut() {
      if f.write_all(&bytes).is_err() {
        // A short write leaves a torn record, which the next reader skips; stop writing.
        *file = None;
      }
    }
  }
}

fn record_len(dims: usize) -> usize {
  8 + 4 * dims + 4
}

fn record(key: u64, v: &[f32]) -> Vec<u8> {
  let mut r = Vec::with_capacity(record_len(v.len()));
  r.extend(key.to_le_bytes());
  for x in v {
    r.extend(x.to_le_bytes());
  }
  let sum = fnv1a32(&r);
  r.extend(sum.to_le_bytes());
  r
}

fn fnv1a32(bytes: &[u8]) -> u32 {
  // The 64-bit hash folded: one hash function for every key and check.
  let h = fnv1a64(0xcbf2_9ce4_8422_2325, bytes);
  (h ^ (h >> 32)) as u32
}

/// The valid records of a cache file (none if it is missing, foreign or unreadable). A header
/// found where a record starts is skipped: two processes that create the file at the same moment
/// both see it empty and both write one, the later perhaps after the other's first records.
fn read(path: &Path, dims: usize) -> Vec<Keyed> {
  let Ok(file) = File::open(path) else { return Vec::new() };
  let mut bytes = Vec::new();
  if file.take(MAX_FILE_BYTES + (1 << 20)).read_to_end(&mut bytes).is_err() || !bytes.starts_with(MAGIC) {
    return Vec::new();
  }
  let n = record_len(dims);
  let mut out = Vec::new();
  let mut rest = &bytes[MAGIC.len()..];
  loop {
    let chunk = rest.get(..n);
    // A record whose key happens to spell the header still counts: its checksum is tried first.
    match chunk.filter(|r| sound(r)) {
      Some(r) => {
        rest = &rest[n..];
        out.extend(keyed(r));
      }
      None if rest.starts_with(MAGIC) => rest = &rest[MAGIC.len()..],
      // A torn or corrupted record is skipped.
      None if chunk.is_some() => rest = &rest[n..],
      None => break,
    }
  }
  out
}

/// Whether a record's checksum matches.
fn sound(r: &[u8]) -> bool {
  let (body, sum) = r.split_at(r.len() - 4);
  sum == fnv1a32(body).to_le_bytes()
}

/// A sound record's key and vector, if every number is finite.
fn keyed(r: &[u8]) -> Option<Keyed> {
  let body = &r[..r.len() - 4];
  let mut key = [0u8; 8];
  key.copy_from_slice(&body[..8]);
  let v: Vec<f32> = body[8..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
  v.iter().all(|x| x.is_finite()).then(|| (u64::from_le_bytes(key), Vector::from(v)))
}

/// Opens (or creates, with its header) a cache file for appending.
fn append_file(path: &Path) -> std::io::Result<File> {
  let mut options = OpenOptions::new();
  options.create(true).append(true);
  #[cfg(unix)]
  std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
  let mut file = options.open(path)?;
  if file.metadata()?.len() == 0 {
    file.write_all(MAGIC)?;
  }
  Ok(file)
}

fn make_dir(dir: &Path) -> std::io::Result<()> {
  let mut builder = std::fs::DirBuilder::new();
  builder.recursive(true);
  #[cfg(unix)]
  std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
  builder.create(dir)
}

#[cfg(test)]
mod tests {
  #![allow(clippy::expect_used, clippy::unwrap_used)]
  use super::*;

  #[test]
  fn round_trip_torn_tail_and_foreign_files() {
    let dir = std::env::temp_dir().join(format!("codecall-vec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (cache, found) = open(&dir.join("a"), 7, 4).expect("open");
    assert!(found.is_empty());
    cache.append(&[(1, Vector::from(vec![0.5, 0.25, 0.0, -1.0])), (2, Vector::from(vec![1.0; 4]))]);
    cache.append(&[(1, Vector::from(vec![0.0, 0.0, 0.0, 1.0])), (3, Vector::from(vec![1.0; 3]))]); // 3: wrong dims
    let path = dir.join("a").join(format!("embeddings-{:016x}.vec", 7));
    // A torn record at the end (a crash mid-write) and a corrupted one in the middle are skipped.
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 8 + 3 * record_len(4));
    bytes[8 + record_len(4) + 9] ^= 1; // record 2's vector
    bytes.extend(&record(9, &[1.0; 4])[..10]);
    std::fs::write(&path, &bytes).unwrap();
    let mut got = read(&path, 4);
    got.sort_by_key(|(k, _)| *k);
    let got: Vec<(u64, Vec<f32>)> = got.into_iter().map(|(k, v)| (k, v.to_vec())).collect();
    assert_eq!(got, [(1, vec![0.5, 0.25, 0.0, -1.0]), (1, vec![0.0, 0.0, 0.0, 1.0])]);
    // Another model's dims, a foreign file: nothing.
    assert!(read(&path, 8).len() <= 1);
    std::fs::write(dir.join("x.vec"), b"not a cache").unwrap();
    assert!(read(&dir.join("x.vec"), 4).is_empty());
    assert!(read(&dir.join("missing.vec"), 4).is_empty());
    // The same directory again in this process: the same cache, nothing re-read.
    let (again, found) = open(&dir.join("a"), 7, 4).expect("open");
    assert!(Arc::ptr_eq(&cache, &again) && found.is_empty());
    #[cfg(unix)]
    {
      use std::os::unix::fs::PermissionsExt;
      assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
      assert_eq!(std::fs::metadata(dir.join("a")).unwrap().permissions().mode() & 0o777, 0o700);
    }
    // A directory that cannot be made: no cache, no panic.
    std::fs::write(dir.join("file"), b"").unwrap();
    assert!(open(&dir.join("file").join("sub"), 7, 4).is_none());
    std::fs::remove_dir_all(&dir).unwrap();
  }

  #[test]
  fn headers_repeated_between_records_are_skipped() {
    // Two processes created the file at once: both wrote the header, one after the other's records.
    let dir = std::env::temp_dir().join(format!("codecall-vec-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h.vec");
    let (a, b, c) = (record(1, &[1.0, 2.0]), record(2, &[3.0, 4.0]), record(3, &[5.0, 6.0]));
    let mut bytes = [MAGIC.as_slice(), MAGIC, &a, MAGIC, &b, MAGIC, MAGIC, &c, MAGIC].concat();
    std::fs::write(&path, &bytes).unwrap();
    let keys = |got: Vec<Keyed>| got.into_iter().map(|(k, v)| (k, v.to_vec())).collect::<Vec<_>>();
    assert_eq!(keys(read(&path, 2)), [(1, vec![1.0, 2.0]), (2, vec![3.0, 4.0]), (3, vec![5.0, 6.0])]);
    // A record whose key spells the header is a record, not a header.
    let odd = record(u64::from_le_bytes(*MAGIC), &[7.0, 8.0]);
    bytes.extend(&odd);
    bytes.extend(&record(4, &[9.0, 10.0]));
    std::fs::write(&path, &bytes).unwrap();
    let got = keys(read(&path, 2));
    assert_eq!(got.len(), 5);
    assert_eq!(got[3], (u64::from_le_bytes(*MAGIC), vec![7.0, 8.0]));
    assert_eq!(got[4], (4, vec![9.0, 10.0]));
    // A file that does not start with the header is still foreign.
    std::fs::write(&path, [&a[..], MAGIC, &b].concat()).unwrap();
    assert!(read(&path, 2).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
  }
}
