//! The model's one hot loop: a linear layer with int8 weights, `y = s ⊙ (X·Qᵀ) + b`, where each
//! output unit has one f32 scale `s` for its row of int8 weights `Q`.
//!
//! Every `y[t][o]` is summed in one fixed order whatever the batch or the tile it falls in: eight
//! lanes over the inputs in steps of eight, then the lanes added in a fixed order. So a text's
//! vector is bit-identical alone or packed with others (a test checks it), and the query path and
//! the batch path cannot disagree.
//!
//! x86-64: AVX-512 (F + DQ) or AVX2 + FMA when the CPU has them (checked once at run time; the
//! package is built for the baseline); otherwise portable code the compiler vectorises. The AVX2
//! kernel runs 3 tokens × 4 outputs per tile; the AVX-512 one holds two outputs' eight lanes in one
//! register (4 tokens × 3 such pairs per tile), each lane summing exactly what the AVX2 lane sums,
//! so both give the same bits (a test checks it). On aarch64 the portable code's `mul_add` is one
//! `fmla`.

/// A weight matrix: `rows` output units over `cols` inputs (`cols` a multiple of 8).
pub struct Linear {
  pub rows: usize,
  pub cols: usize,
  /// `rows × cols`, row-major.
  pub weights: Vec<i8>,
  /// One per row.
  pub scales: Vec<f32>,
  /// One per row.
  pub bias: Vec<f32>,
}

impl Linear {
  /// `y[t] = W·x[t] + b` for the `x.len() / cols` rows of `x`; `y` is resized to `tokens × rows`.
  pub fn apply(&self, x: &[f32], y: &mut Vec<f32>) {
    let tokens = x.len().checked_div(self.cols).unwrap_or(0);
    y.clear();
    y.resize(tokens * self.rows, 0.0);
    if self.cols == 0
      || !self.cols.is_multiple_of(8)
      || self.weights.len() != self.rows * self.cols
      || self.scales.len() != self.rows
      || self.bias.len() != self.rows
    {
      return;
    }
    self.apply_with(kernel(), x, tokens, y);
  }

  /// [`Linear::apply`] on the kernel `k` (the shapes already checked; `y` holds `tokens × rows`).
  fn apply_with(&self, k: Kernel, x: &[f32], tokens: usize, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match k {
      Kernel::Avx512 => {
        if tokens >= WIDEN_AT {
          with_tile(|buf| {
            // SAFETY: the CPU has AVX-512 F + DQ, AVX2 and FMA (`kernel()` checked them); the
            // shapes were checked by `apply`: `x` holds `tokens × cols`, `y` `tokens × rows`,
            // `weights` `rows × cols`, `scales` and `bias` `rows`, and `cols % 8 == 0`.
            unsafe { avx512::wide(self, x, tokens, y, buf) }
          });
        } else {
          // SAFETY: as above.
          unsafe { avx512::narrow(self, x, tokens, y) };
        }
        return;
      }
      Kernel::Avx2 => {
        if tokens >= WIDEN_AT {
          // SAFETY: the CPU has AVX2 and FMA (`kernel()` checked them); the shapes as above.
          with_tile(|buf| unsafe { avx2::wide(self, x, tokens, y, buf) });
        } else {
          // SAFETY: as above.
          unsafe { avx2::narrow(self, x, tokens, y) };
        }
        return;
      }
      Kernel::Portable => {}
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = k;
    portable(self, x, tokens, y);
  }
}

/// From this many tokens on, each tile's rows of weights are widened to f32 once (into a buffer
/// that stays in L1) and then serve every token of the block; below it, the weights are widened
/// in registers as they are read (a query's few tokens).
#[cfg(target_arch = "x86_64")]
const WIDEN_AT: usize = 24;

/// Tokens per block for the widened path: a block's activations (at most 64 × 3 072 f32, 768 KB)
/// stay in L2 while every tile of rows passes over them; each weight is widened once per block.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 64;

#[cfg(target_arch = "x86_64")]
thread_local! {
  /// One tile's rows of weights as f32 (up to 6 × 3 072, 72 KB, per thread).
  static TILE: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's tile buffer (a fresh one if it is somehow in use).
#[cfg(target_arch = "x86_64")]
fn with_tile(f: impl FnOnce(&mut Vec<f32>)) {
  let mut f = Some(f);
  let _ = TILE.try_with(|cell| {
    if let (Ok(mut buf), Some(f)) = (cell.try_borrow_mut(), f.take()) {
      f(&mut buf);
    }
  });
  if let Some(f) = f {
    f(&mut Vec::new());
  }
}

/// The portable kernel: the same lane structure as the AVX2 one (eight lanes per sum, added in
/// the same fixed order), in tiles of 2 tokens × 4 outputs so each weight converted and each input
/// loaded serves several sums (the compiler vectorises the lanes: NEON on aarch64, SSE2 on x86-64).
fn portable(w: &Linear, x: &[f32], tokens: usize, y: &mut [f32]) {
  const PT: usize = 2;
  const PO: usize = 4;
  let cols = w.cols;
  let mut t = 0;
  while t < tokens {
    let nt = PT.min(tokens - t);
    let mut o = 0;
    while o < w.rows {
      let no = PO.min(w.rows - o);
      let mut acc = [[[0f32; 8]; PO]; PT];
      for c in (0..cols).step_by(8) {
        let mut wv = [[0f32; 8]; PO];
        for (j, lane) in wv.iter_mut().enumerate().take(no) {
          let row = &w.weights[(o + j) * cols + c..][..8];
          for (l, &q) in lane.iter_mut().zip(row) {
            *l = f32::from(q);
          }
        }
        for (i, acc_t) in acc.iter_mut().enumerate().take(nt) {
          let xv = &x[(t + i) * cols + c..][..8];
          for (acc_o, lane) in acc_t.iter_mut().zip(&wv).take(no) {
            for ((a, &xs), &ws) in acc_o.iter_mut().zip(xv).zip(lane) {
              *a = madd(xs, ws, *a);
            }
          }
        }
      }
      for (i, acc_t) in acc.iter().enumerate().take(nt) {
        for (j, a) in acc_t.iter().enumerate().take(no) {
          let s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
          y[(t + i) * w.rows + o + j] = s * w.scales[o + j] + w.bias[o + j];
        }
      }
      o += no;
    }
    t += nt;
  }
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn madd(a: f32, b: f32, c: f32) -> f32 {
  a.mul_add(b, c)
}

#[cfg(not(target_arch = "aarch64"))]
#[inline(always)]
fn madd(a: f32, b: f32, c: f32) -> f32 {
  a * b + c
}

/// The linear layers' kernel on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // only x86-64 has the SIMD kernels
pub enum Kernel {
  /// Plain Rust (SSE2 on x86-64, NEON on aarch64).
  Portable,
  /// AVX2 + FMA.
  Avx2,
  /// AVX-512 F + DQ (with AVX2 + FMA): the same bits as [`Kernel::Avx2`], sixteen lanes at a time.
  Avx512,
}

/// The best kernel this CPU runs, checked once. `CODECALL_EMBED_KERNEL=portable` or `=avx2` caps
/// it (to compare, or to rule a kernel out); any other value is ignored.
pub fn kernel() -> Kernel {
  use std::sync::OnceLock;
  static KERNEL: OnceLock<Kernel> = OnceLock::new();
  *KERNEL.get_or_init(|| {
    let cap = std::env::var("CODECALL_EMBED_KERNEL").unwrap_or_default();
    best(&cap)
  })
}

#[cfg(target_arch = "x86_64")]
fn best(cap: &str) -> Kernel {
  if cap == "portable" || !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
    return Kernel::Portable;
  }
  if cap != "avx2" && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq") {
    return Kernel::Avx512;
  }
  Kernel::Avx2
}

#[cfg(not(target_arch = "x86_64"))]
fn best(_cap: &str) -> Kernel {
  Kernel::Portable
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
  use std::arch::x86_64::*;

  use super::{Linear, BLOCK};

  /// Tokens per tile.
  const TT: usize = 3;
  /// Output units per tile.
  const TO: usize = 4;
  /// Tokens per block on the narrow path: a block's activations (45 KB) stay in L2 while every
  /// output passes over them.
  const TB: usize = 30;

  /// A weight type whose eight consecutive values load as f32 lanes (exactly).
  pub trait Lanes: Copy {
    /// # Safety
    /// Eight values are readable at `p`; the CPU has AVX2.
    unsafe fn load8(p: *const Self) -> __m256;
  }

  impl Lanes for i8 {
    #[inline(always)]
    unsafe fn load8(p: *const i8) -> __m256 {
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p.cast::<__m128i>())))
    }
  }

  impl Lanes for f32 {
    #[inline(always)]
    unsafe fn load8(p: *const f32) -> __m256 {
      _mm256_loadu_ps(p)
    }
  }

  #[inline(always)]
  unsafe fn put(lin: &Linear, o: usize, s: f32, y: *mut f32) {
    *y.add(o) = s * *lin.scales.get_unchecked(o) + *lin.bias.get_unchecked(o);
  }

  /// A few tokens: the int8 weights widened in registers as they are read.
  ///
  /// # Safety
  /// The CPU has AVX2 and FMA; `x.len() >= tokens × cols`, `y.len() == tokens × rows`,
  /// `cols % 8 == 0`, `lin.weights` holds `rows × cols`, `scales` and `bias` have `rows` entries.
  #[target_feature(enable = "avx2,fma")]
  pub unsafe fn narrow(lin: &Linear, x: &[f32], tokens: usize, y: &mut [f32]) {
    let (rows, cols) = (lin.rows, lin.cols);
    let (wp, xp, yp) = (lin.weights.as_ptr(), x.as_ptr(), y.as_mut_ptr());
    let mut block = 0;
    while block < tokens {
      let block_end = (block + TB).min(tokens);
      let mut o = 0;
      while o < rows {
        let full_o = o + TO <= rows;
        let mut t = block;
        while t < block_end {
          if full_o && t + TT <= block_end {
            tile(xp.add(t * cols), wp.add(o * cols), cols, lin, o, yp.add(t * rows), rows);
            t += TT;
          } else {
            let end_o = if full_o { o + TO } else { rows };
            for oo in o..end_o {
              put(lin, oo, dot(xp.add(t * cols), wp.add(oo * cols), cols), yp.add(t * rows));
            }
            t += 1;
          }
        }
        o = if full_o { o + TO } else { rows };
      }
      block = block_end;
    }
  }

  /// A batch: each tile's rows widened to f32 into `buf` (L1) once per block of tokens, then read
  /// by every token of the block. The same products in the same order as [`narrow`]: the same bits.
  ///
  /// # Safety
  /// As [`narrow`].
  #[target_feature(enable = "avx2,fma")]
  pub unsafe fn wide(lin: &Linear, x: &[f32], tokens: usize, y: &mut [f32], buf: &mut Vec<f32>) {
    let (rows, cols) = (lin.rows, lin.cols);
    let (wp, xp, yp) = (lin.weights.as_ptr(), x.as_ptr(), y.as_mut_ptr());
    buf.clear();
    buf.resize(TO * cols, 0.0);
    let bp = buf.as_mut_ptr();
    let mut block = 0;
    while block < tokens {
      let block_end = (block + BLOCK).min(tokens);
      let mut o = 0;
      while o + TO <= rows {
        for j in 0..TO {
          let mut i = 0;
          while i < cols {
            _mm256_storeu_ps(bp.add(j * cols + i), i8::load8(wp.add((o + j) * cols + i)));
            i += 8;
          }
        }
        let w = bp.cast_const();
        let mut t = block;
        while t + TT <= block_end {
          tile(xp.add(t * cols), w, cols, lin, o, yp.add(t * rows), rows);
          t += TT;
        }
        while t < block_end {
          for j in 0..TO {
            put(lin, o + j, dot(xp.add(t * cols), w.add(j * cols), cols), yp.add(t * rows));
          }
          t += 1;
        }
        o += TO;
      }
      for oo in o..rows {
        for t in block..block_end {
          put(lin, oo, dot(xp.add(t * cols), wp.add(oo * cols), cols), yp.add(t * rows));
        }
      }
      block = block_end;
    }
  }

  /// The lanes of `v` added in a fixed order (the portable kernel's order).
  #[inline(always)]
  pub(super) unsafe fn hsum(v: __m256) -> f32 {
    // (0+4, 1+5, 2+6, 3+7), then ((0+4)+(2+6), (1+5)+(3+7)), then their sum.
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)))
  }

  /// One `x`·`w` dot product over `cols` inputs.
  #[inline(always)]
  pub(super) unsafe fn dot<W: Lanes>(x: *const f32, w: *const W, cols: usize) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    while i < cols {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(x.add(i)), W::load8(w.add(i)), acc);
      i += 8;
    }
    hsum(acc)
  }

  /// A 3-token × 4-output tile (`w`: the tile's first row, rows `cols` apart): 12 accumulators,
  /// each summed exactly as [`dot`] sums.
  #[inline(always)]
  unsafe fn tile<W: Lanes>(x: *const f32, w: *const W, cols: usize, lin: &Linear, o: usize, y: *mut f32, rows: usize) {
    let mut acc = [[_mm256_setzero_ps(); TO]; TT];
    let mut i = 0;
    while i < cols {
      let x0 = _mm256_loadu_ps(x.add(i));
      let x1 = _mm256_loadu_ps(x.add(cols + i));
      let x2 = _mm256_loadu_ps(x.add(2 * cols + i));
      let [a0, a1, a2] = &mut acc;
      for (j, ((s0, s1), s2)) in a0.iter_mut().zip(a1.iter_mut()).zip(a2.iter_mut()).enumerate() {
        let wv = W::load8(w.add(j * cols + i));
        *s0 = _mm256_fmadd_ps(x0, wv, *s0);
        *s1 = _mm256_fmadd_ps(x1, wv, *s1);
        *s2 = _mm256_fmadd_ps(x2, wv, *s2);
      }
      i += 8;
    }
    for (t, row) in acc.iter().enumerate() {
      for (j, &v) in row.iter().enumerate() {
        put(lin, o + j, hsum(v), y.add(t * rows));
      }
    }
  }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
  use std::arch::x86_64::*;

  use super::{avx2, Linear, BLOCK};

  /// Tokens per tile.
  const TT: usize = 4;
  /// Pairs of output units per tile (each pair one register: 6 outputs).
  const TP: usize = 3;
  /// Tokens per block on the narrow path, as in the AVX2 kernel.
  const TB: usize = 32;

  /// Where a pair of rows' weights come from: lanes 0–7 of a load are row `2p`'s weights `i..i+8`,
  /// lanes 8–15 row `2p + 1`'s, as f32 (exactly).
  trait Pairs: Copy {
    /// # Safety
    /// Pair `p` exists and `i + 8 <= cols`; the CPU has AVX-512 F.
    unsafe fn load(self, p: usize, i: usize) -> __m512;
  }

  /// The int8 weights in place (`rows × cols`, row-major).
  #[derive(Clone, Copy)]
  struct Int8 {
    w: *const i8,
    cols: usize,
  }

  impl Pairs for Int8 {
    #[inline(always)]
    unsafe fn load(self, p: usize, i: usize) -> __m512 {
      let a = self.w.add(2 * p * self.cols + i);
      let b = a.add(self.cols);
      let v = _mm_unpacklo_epi64(_mm_loadl_epi64(a.cast::<__m128i>()), _mm_loadl_epi64(b.cast::<__m128i>()));
      _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v))
    }
  }

  /// Widened weights, each pair of rows interleaved eight at a time (`2 × cols` floats per pair:
  /// row `2p`'s `i..i+8`, row `2p + 1`'s `i..i+8`, then `i + 8`).
  #[derive(Clone, Copy)]
  struct Packed {
    w: *const f32,
    cols: usize,
  }

  impl Pairs for Packed {
    #[inline(always)]
    unsafe fn load(self, p: usize, i: usize) -> __m512 {
      _mm512_loadu_ps(self.w.add(2 * (p * self.cols + i)))
    }
  }

  /// Eight inputs in both halves of a register.
  #[inline(always)]
  unsafe fn inputs(x: *const f32) -> __m512 {
    _mm512_broadcast_f32x8(_mm256_loadu_ps(x))
  }

  /// Writes pair `p`'s two outputs (each half's lanes added in the AVX2 kernel's order) into the
  /// token's row `y`.
  #[inline(always)]
  unsafe fn store(acc: __m512, lin: &Linear, p: usize, y: *mut f32) {
    let (a, b) = (avx2::hsum(_mm512_castps512_ps256(acc)), avx2::hsum(_mm512_extractf32x8_ps::<1>(acc)));
    let (o0, o1) = (2 * p, 2 * p + 1);
    *y.add(o0) = a * *lin.scales.get_unchecked(o0) + *lin.bias.get_unchecked(o0);
    *y.add(o1) = b * *lin.scales.get_unchecked(o1) + *lin.bias.get_unchecked(o1);
  }

  /// Pair `p` of `w` against one token: both rows' sums in one register.
  #[inline(always)]
  unsafe fn dot2<P: Pairs>(x: *const f32, w: P, p: usize, cols: usize) -> __m512 {
    let mut acc = _mm512_setzero_ps();
    let mut i = 0;
    while i < cols {
      acc = _mm512_fmadd_ps(inputs(x.add(i)), w.load(p, i), acc);
      i += 8;
    }
    acc
  }

  /// The last row when `rows` is odd (no partner): the AVX2 kernel's sum over its int8 weights.
  #[inline(always)]
  unsafe fn last_row(lin: &Linear, x: *const f32, t: usize, y: *mut f32) {
    let (rows, cols) = (lin.rows, lin.cols);
    let last = rows - 1;
    let s = avx2::dot(x.add(t * cols), lin.weights.as_ptr().add(last * cols), cols);
    *y.add(t * rows + last) = s * *lin.scales.get_unchecked(last) + *lin.bias.get_unchecked(last);
  }

  /// A few tokens: the int8 weights widened in registers as they are read.
  ///
  /// # Safety
  /// The CPU has AVX-512 F + DQ, AVX2 and FMA; `x.len() >= tokens × cols`,
  /// `y.len() == tokens × rows`, `cols % 8 == 0`, `lin.weights` holds `rows × cols`, `scales` and
  /// `bias` have `rows` entries.
  #[target_feature(enable = "avx2,fma,avx512f,avx512dq")]
  pub unsafe fn narrow(lin: &Linear, x: &[f32], tokens: usize, y: &mut [f32]) {
    let (rows, cols) = (lin.rows, lin.cols);
    let w = Int8 { w: lin.weights.as_ptr(), cols };
    let pairs = rows / 2;
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    let mut block = 0;
    while block < tokens {
      let block_end = (block + TB).min(tokens);
      let mut p = 0;
      while p < pairs {
        let full = p + TP <= pairs;
        let mut t = block;
        while t < block_end {
          if full && t + TT <= block_end {
            tile(xp.add(t * cols), w, p, p, cols, lin, yp.add(t * rows), rows);
            t += TT;
          } else {
            for pp in p..if full { p + TP } else { pairs } {
              store(dot2(xp.add(t * cols), w, pp, cols), lin, pp, yp.add(t * rows));
            }
            t += 1;
          }
        }
        p = if full { p + TP } else { pairs };
      }
      if rows % 2 == 1 {
        for t in block..block_end {
          last_row(lin, xp, t, yp);
        }
      }
      block = block_end;
    }
  }

  /// A batch: each tile's three pairs of rows widened to f32 into `buf` (L1) once per block of
  /// tokens, then read by every token of the block. The same bits as [`narrow`].
  ///
  /// # Safety
  /// As [`narrow`].
  #[target_feature(enable = "avx2,fma,avx512f,avx512dq")]
  pub unsafe fn wide(lin: &Linear, x: &[f32], tokens: usize, y: &mut [f32], buf: &mut Vec<f32>) {
    let (rows, cols) = (lin.rows, lin.cols);
    let int8 = Int8 { w: lin.weights.as_ptr(), cols };
    let pairs = rows / 2;
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    buf.clear();
    buf.resize(2 * TP * cols, 0.0);
    let bp = buf.as_mut_ptr();
    let packed = Packed { w: bp.cast_const(), cols };
    let mut block = 0;
    while block < tokens {
      let block_end = (block + BLOCK).min(tokens);
      let mut p = 0;
      while p + TP <= pairs {
        for j in 0..TP {
          let mut i = 0;
          while i < cols {
            _mm512_storeu_ps(bp.add(2 * (j * cols + i)), int8.load(p + j, i));
            i += 8;
          }
        }
        let mut t = block;
        while t + TT <= block_end {
          tile(xp.add(t * cols), packed, 0, p, cols, lin, yp.add(t * rows), rows);
          t += TT;
        }
        while t < block_end {
          for j in 0..TP {
            store(dot2(xp.add(t * cols), packed, j, cols), lin, p + j, yp.add(t * rows));
          }
          t += 1;
        }
        p += TP;
      }
      for pp in p..pairs {
        for t in block..block_end {
          store(dot2(xp.add(t * cols), int8, pp, cols), lin, pp, yp.add(t * rows));
        }
      }
      if rows % 2 == 1 {
        for t in block..block_end {
          last_row(lin, xp, t, yp);
        }
      }
      block = block_end;
    }
  }

  /// A 4-token × 3-pair tile: 12 accumulators of two outputs each. Reads `w`'s pairs `lp..lp+3`
  /// and writes outputs `2·op..2·op+6`.
  #[inline(always)]
  #[allow(clippy::too_many_arguments)]
  unsafe fn tile<P: Pairs>(
    x: *const f32,
    w: P,
    lp: usize,
    op: usize,
    cols: usize,
    lin: &Linear,
    y: *mut f32,
    rows: usize,
  ) {
    let mut acc = [[_mm512_setzero_ps(); TP]; TT];
    let mut i = 0;
    while i < cols {
      let xs = [inputs(x.add(i)), inputs(x.add(cols + i)), inputs(x.add(2 * cols + i)), inputs(x.add(3 * cols + i))];
      for j in 0..TP {
        let wv = w.load(lp + j, i);
        for (acc_t, &xv) in acc.iter_mut().zip(&xs) {
          acc_t[j] = _mm512_fmadd_ps(xv, wv, acc_t[j]);
        }
      }
      i += 8;
    }
    for (t, row) in acc.iter().enumerate() {
      for (j, &v) in row.iter().enumerate() {
        store(v, lin, op + j, y.add(t * rows));
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn naive(w: &Linear, x: &[f32]) -> Vec<f32> {
    let tokens = x.len() / w.cols;
    let mut y = vec![0f32; tokens * w.rows];
    for t in 0..tokens {
      for o in 0..w.rows {
        let mut s = 0f64;
        for i in 0..w.cols {
          s += f64::from(x[t * w.cols + i]) * f64::from(w.weights[o * w.cols + i]);
        }
        y[t * w.rows + o] = (s * f64::from(w.scales[o]) + f64::from(w.bias[o])) as f32;
      }
    }
    y
  }

  fn layer(rows: usize, cols: usize, seed: u32) -> Linear {
    let mut state = seed;
    let mut next = || {
      state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
      state >> 8
    };
    Linear {
      rows,
      cols,
      weights: (0..rows * cols).map(|_| (next() % 255) as i32 as i8).map(|v| v.wrapping_sub(127)).collect(),
      scales: (0..rows).map(|_| (next() % 1000) as f32 / 50_000.0 + 0.001).collect(),
      bias: (0..rows).map(|_| (next() % 1000) as f32 / 1000.0 - 0.5).collect(),
    }
  }

  fn input(tokens: usize, cols: usize) -> Vec<f32> {
    (0..tokens * cols).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect()
  }

  #[test]
  fn every_shape_matches_the_naive_sum_and_every_row_is_batch_invariant() {
    // Odd token counts and row counts that are not multiples of the tile.
    // 40 and 31 tokens take the widened (f32) path on AVX2 machines; alone, each token the int8 one.
    for (rows, cols, tokens) in
      [(13, 24, 7), (4, 8, 3), (5, 16, 1), (1152, 384, 11), (6, 40, 5), (64, 384, 40), (7, 16, 31)]
    {
      let w = layer(rows, cols, (rows * 31 + tokens) as u32);
      let x = input(tokens, cols);
      let mut y = Vec::new();
      w.apply(&x, &mut y);
      let want = naive(&w, &x);
      for (a, b) in y.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{rows}×{cols}×{tokens}: {a} vs {b}");
      }
      // Each token alone gives the same bits as in the batch.
      for t in 0..tokens {
        let mut alone = Vec::new();
        w.apply(&x[t * cols..(t + 1) * cols], &mut alone);
        assert_eq!(alone, y[t * rows..(t + 1) * rows], "token {t} of {tokens}, {rows}×{cols}");
      }
      // The portable kernel agrees with the SIMD one to rounding, and is batch-invariant too.
      let mut p = vec![0f32; tokens * rows];
      portable(&w, &x, tokens, &mut p);
      for (a, b) in y.iter().zip(&p) {
        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()));
      }
      for t in 0..tokens {
        let mut alone = vec![0f32; rows];
        portable(&w, &x[t * cols..(t + 1) * cols], 1, &mut alone);
        assert_eq!(alone, p[t * rows..(t + 1) * rows], "portable: token {t} of {tokens}, {rows}×{cols}");
      }
    }
  }

  /// Every SIMD kernel this CPU runs gives the AVX2 kernel's bits, for the widened (batch) and
  /// int8 (few tokens) paths, odd rows (a last row with no partner) and partial tiles.
  #[test]
  fn every_simd_kernel_gives_the_same_bits() {
    #[cfg(target_arch = "x86_64")]
    {
      if best("avx2") != Kernel::Avx2 {
        eprintln!("no AVX2 on this CPU: nothing to compare");
        return;
      }
      let wide = best("");
      if wide != Kernel::Avx512 {
        eprintln!("no AVX-512 on this CPU: only the AVX2 kernel runs here");
      }
      for (rows, cols, tokens) in [
        (13, 24, 7),
        (4, 8, 3),
        (5, 16, 1),
        (1, 8, 30),
        (1152, 384, 11),
        (384, 1536, 25),
        (6, 40, 5),
        (64, 384, 40),
        (7, 16, 31),
        (12, 32, 65),
        (11, 384, 24),
      ] {
        let w = layer(rows, cols, (rows * 17 + tokens) as u32);
        let x = input(tokens, cols);
        let mut want = vec![0f32; tokens * rows];
        w.apply_with(Kernel::Avx2, &x, tokens, &mut want);
        let mut got = vec![0f32; tokens * rows];
        w.apply_with(wide, &x, tokens, &mut got);
        assert_eq!(got, want, "{wide:?} against AVX2 at {rows}×{cols}×{tokens}");
        // A token alone (the narrow path: weights widened in registers) gives the batch's bits.
        for k in [Kernel::Avx2, wide] {
          for t in [0, tokens / 2, tokens - 1] {
            let mut alone = vec![0f32; rows];
            w.apply_with(k, &x[t * cols..(t + 1) * cols], 1, &mut alone);
            assert_eq!(alone, want[t * rows..(t + 1) * rows], "{k:?}: token {t} of {tokens}, {rows}×{cols}");
          }
        }
      }
    }
  }

  #[test]
  fn the_kernel_cap_is_read_as_documented() {
    assert_eq!(best("portable"), Kernel::Portable);
    #[cfg(target_arch = "x86_64")]
    {
      assert_ne!(best("avx2"), Kernel::Avx512);
      // An unknown value caps nothing.
      assert_eq!(best("fastest please"), best(""));
    }
  }

  /// Not a check: the kernels' speed side by side, the fastest of 15 runs each (BENCHMARKS.md,
  /// "The int8 kernel"): `cargo test --release --lib kernel_speed -- --ignored --nocapture`.
  #[test]
  #[ignore = "a measurement, not a check"]
  fn kernel_speed() {
    let mut kernels = vec![Kernel::Portable];
    #[cfg(target_arch = "x86_64")]
    {
      if best("avx2") == Kernel::Avx2 {
        kernels.push(Kernel::Avx2);
      }
      if best("") == Kernel::Avx512 {
        kernels.push(Kernel::Avx512);
      }
    }
    // MiniLM's shapes: the attention's four 384 × 384 layers (Q, K, V fused here as 1152 rows),
    // the FFN's 1536 × 384 and 384 × 1536; a batch of 512 tokens and a query of 12.
    for tokens in [512, 12] {
      for (rows, cols) in [(1152, 384), (384, 384), (1536, 384), (384, 1536)] {
        let w = layer(rows, cols, 7);
        let x = input(tokens, cols);
        let mut line = format!("{tokens:>3} tokens × {rows:>4}×{cols:<4}");
        for &k in &kernels {
          let mut y = vec![0f32; tokens * rows];
          let mut best_ns = u128::MAX;
          for _ in 0..15 {
            let t0 = std::time::Instant::now();
            w.apply_with(k, &x, tokens, &mut y);
            best_ns = best_ns.min(t0.elapsed().as_nanos());
          }
          let gmacs = (tokens * rows * cols) as f64 / best_ns as f64;
          line += &format!("  {k:?} {:>8.3} ms ({gmacs:>5.1} GMAC/s)", best_ns as f64 / 1e6);
        }
        eprintln!("{line}");
      }
    }
  }

  #[test]
  fn a_bad_shape_gives_zeros_not_a_panic() {
    let mut w = layer(4, 12, 1); // cols not a multiple of 8
    let mut y = Vec::new();
    w.apply(&input(2, 12), &mut y);
    assert_eq!(y, vec![0.0; 8]);
    w.cols = 16; // weights too short for the shape
    w.apply(&input(2, 16), &mut y);
    assert_eq!(y, vec![0.0; 8]);
  }
}
