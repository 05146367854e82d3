//! The model's one hot loop: a linear layer with int8 weights, `y = s ⊙ (X·Qᵀ) + b`, where each
//! output unit has one f32 scale `s` for its row of int8 weights `Q`.
//!
//! Every `y[t][o]` is summed in one fixed order whatever the batch or the tile it falls in: eight
//! lanes over the inputs in steps of eight, then the lanes added in a fixed order. So a text's
//! vector is bit-identical alone or packed with others (a test checks it), and the query path and
//! the batch path cannot disagree.
//!
//! x86-64: AVX2 + FMA when the CPU has them (checked once at run time; the package is built for the
//! baseline), 3 tokens × 4 outputs per tile; otherwise portable code the compiler vectorises. On
//! aarch64 the portable code's `mul_add` is one `fmla`.

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
    let tokens = x.len() / self.cols;
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
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
      if tokens >= WIDEN_AT {
        // A batch: the weights as f32 once (exact: small integers), so the loop does no
        // conversions; the same products in the same order, so the same bits as the int8 loop.
        WIDE.with(|wide| {
          let mut wide = wide.borrow_mut();
          wide.clear();
          wide.extend(self.weights.iter().map(|&q| f32::from(q)));
          // SAFETY: as below, with `wide` holding `rows × cols` f32 weights.
          unsafe { avx2::apply(wide.as_ptr(), self, x, tokens, y) };
        });
        return;
      }
      // SAFETY: the CPU has AVX2 and FMA (checked above); the shapes were checked above: `x` holds
      // `tokens × cols`, `y` `tokens × rows`, `weights` `rows × cols`, and `cols % 8 == 0`.
      unsafe { avx2::apply(self.weights.as_ptr(), self, x, tokens, y) };
      return;
    }
    portable(self, x, tokens, y);
  }
}

/// From this many tokens on, the weights are widened to f32 first (a 1536 × 384 matrix takes
/// about 0.1 ms to widen; a token costs about 0.07 ms per such matrix).
#[cfg(target_arch = "x86_64")]
const WIDEN_AT: usize = 24;

#[cfg(target_arch = "x86_64")]
thread_local! {
  /// The widened weights of the matrix being applied (up to 2.4 MB per thread).
  static WIDE: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
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

/// Whether this CPU runs the AVX2 + FMA kernel (`CODECALL_EMBED_KERNEL=portable` turns it off).
#[cfg(target_arch = "x86_64")]
pub fn has_avx2() -> bool {
  use std::sync::OnceLock;
  static HAS: OnceLock<bool> = OnceLock::new();
  *HAS.get_or_init(|| {
    std::env::var("CODECALL_EMBED_KERNEL").map_or(true, |v| v != "portable")
      && is_x86_feature_detected!("avx2")
      && is_x86_feature_detected!("fma")
  })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
  use std::arch::x86_64::*;

  use super::Linear;

  /// Tokens per tile.
  const TT: usize = 3;
  /// Output units per tile.
  const TO: usize = 4;
  /// Tokens per block: a block's activations (45 KB) stay in L2 while every output passes over
  /// them.
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

  /// # Safety
  /// The CPU has AVX2 and FMA; `w` points at `lin.rows × lin.cols` weights (`lin.weights` or
  /// their f32 copy); `x.len() >= tokens × cols`, `y.len() == tokens × rows`, `cols % 8 == 0`,
  /// `scales` and `bias` have `rows` entries.
  #[target_feature(enable = "avx2,fma")]
  pub unsafe fn apply<W: Lanes>(wp: *const W, lin: &Linear, x: &[f32], tokens: usize, y: &mut [f32]) {
    let (rows, cols) = (lin.rows, lin.cols);
    let xp = x.as_ptr();
    let yp = y.as_mut_ptr();
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
              let s = dot(xp.add(t * cols), wp.add(oo * cols), cols);
              *yp.add(t * rows + oo) = s * *lin.scales.get_unchecked(oo) + *lin.bias.get_unchecked(oo);
            }
            t += 1;
          }
        }
        o = if full_o { o + TO } else { rows };
      }
      block = block_end;
    }
  }

  /// The lanes of `v` added in a fixed order (the portable kernel's order).
  #[inline(always)]
  unsafe fn hsum(v: __m256) -> f32 {
    // (0+4, 1+5, 2+6, 3+7), then ((0+4)+(2+6), (1+5)+(3+7)), then their sum.
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)))
  }

  /// One `x`·`w` dot product over `cols` inputs.
  #[inline(always)]
  unsafe fn dot<W: Lanes>(x: *const f32, w: *const W, cols: usize) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    while i < cols {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(x.add(i)), W::load8(w.add(i)), acc);
      i += 8;
    }
    hsum(acc)
  }

  /// A 3-token × 4-output tile: 12 accumulators, each summed exactly as [`dot`] sums.
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
        let oo = o + j;
        *y.add(t * rows + oo) = hsum(v) * *lin.scales.get_unchecked(oo) + *lin.bias.get_unchecked(oo);
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
