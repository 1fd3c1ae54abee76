/* y = x · Wᵀ (+ b) for a few rows of x: an nn.Linear in a CPU decode step.
 *
 * Built and loaded by `shadowrl/inference/native.py`. At 4-16 rows PyTorch's fp32 product
 * (oneDNN/MKL) re-packs the weight on every call and costs 2-2.5x its 1-row time; the
 * floor is reading each weight from memory once. Here each task takes COLS rows of W
 * (output features) and holds COLS x ROWS accumulators in vector registers for a tile
 * of up to ROWS rows of x, walking K one vector at a time; a second tile of x re-reads
 * those W rows from L1, not memory. Horizontal sums close each output; OpenMP shares the
 * W row blocks among torch's own threads.
 *
 * x: [M, K], w: [N, K], y: [M, N] float32, contiguous; bias: [N] or NULL. The vector
 * width follows the instructions compiled for (-march=native): a GCC vector wider than
 * the machine's registers is split into slow generic code, so it is never wider.
 *
 * Built with -DWEIGHTS_BF16, w and bias hold bfloat16 instead (a bf16 engine's weights):
 * each weight vector is widened to float32 as it is loaded (a bf16 value is the top half
 * of a float32's bits), so the product is the float32 one over the bf16 weights, reading
 * half the bytes, which is what bounds a decode step's products at a few rows.
 */
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define LANES 16
#define ROWS 8 /* 8 x 3 accumulators + 3 weight vectors + 1 x vector of 32 zmm */
#define COLS 3
#elif defined(__AVX2__)
#define LANES 8
#define ROWS 4 /* 4 x 3 accumulators + 3 weight vectors + 1 x vector of 16 ymm */
#define COLS 3
#else /* 128-bit vectors: SSE on any x86-64, NEON on arm64, lowered to scalars elsewhere */
#define LANES 4
#define ROWS 4
#define COLS 2
#endif

/* Weights a thread takes at least (256 KB): below it, waking threads costs more than they
 * save (and a thread descheduled on a busy box stalls the whole call at the barrier). */
#define GRAIN (1 << 16)

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));

static inline vec load(const float *p) { /* unaligned: K need not be a multiple of LANES */
  vec v;
  memcpy(&v, p, sizeof v);
  return v;
}

#if defined(WEIGHTS_BF16)
static inline vec load_w(const weight_t *p) {
#if defined(__AVX512F__)
  __m256i h;
  memcpy(&h, p, sizeof h);
  return (vec)_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
#elif defined(__AVX2__)
  __m128i h;
  memcpy(&h, p, sizeof h);
  return (vec)_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
#else
  vec v;
  for (int i = 0; i < LANES; i++) v[i] = widen(p[i]);
  return v;
#endif
}
#else
static inline vec load_w(const weight_t *p) { return load(p); }
#endif

/* The sum of v's lanes, by halves (a lane-by-lane loop compiled to scalar adds through
 * the stack, a third of the 8-row time at K = 576). */
static inline float hsum(vec v) {
#if defined(__AVX512F__)
  return _mm512_reduce_add_ps(v);
#elif defined(__AVX2__)
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
#else
  float s = 0.f;
  for (int i = 0; i < LANES; i++) s += v[i];
  return s;
#endif
}

/* y[r][c] for r < rows, c < cols; `rows` and `cols` are constants at every call site, so
 * the loops unroll and the accumulators live in registers. */
static inline __attribute__((always_inline)) void tile(const float *restrict x,
                                                       const weight_t *restrict w,
                                                       const weight_t *restrict bias,
                                                       float *restrict y, int64_t k_len,
                                                       int64_t n_len, int rows, int cols) {
  vec acc[ROWS][COLS];
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) acc[r][c] = (vec){0};
  int64_t k = 0;
  for (; k + LANES <= k_len; k += LANES) {
    vec wv[COLS];
    for (int c = 0; c < cols; c++) wv[c] = load_w(w + c * k_len + k);
    for (int c = 0; c < cols; c++) __builtin_prefetch(w + (cols + c) * k_len + k);
    for (int r = 0; r < rows; r++) {
      vec xv = load(x + r * k_len + k);
      for (int c = 0; c < cols; c++) acc[r][c] += xv * wv[c];
    }
  }
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      float s = hsum(acc[r][c]);
      for (int64_t i = k; i < k_len; i++) s += x[r * k_len + i] * widen(w[c * k_len + i]);
      y[r * n_len + c] = s + (bias ? widen(bias[c]) : 0.f);
    }
}

#define TILE(R, C) tile(x, w, bias, y, k_len, n_len, R, C)
#define ROWS_CASE(R, C) \
  case R:               \
    TILE(R, C);         \
    break;

/* All of x's rows against `cols` rows of W (COLS or 1), ROWS rows of x at a time. */
static void block(const float *x, const weight_t *w, const weight_t *bias, float *y,
                  int64_t m_len, int64_t k_len, int64_t n_len, int cols) {
  for (int64_t r = 0; r < m_len; r += ROWS, x += ROWS * k_len, y += ROWS * n_len) {
    int rows = m_len - r < ROWS ? (int)(m_len - r) : ROWS;
    if (cols == COLS) {
      switch (rows) {
        ROWS_CASE(1, COLS) ROWS_CASE(2, COLS) ROWS_CASE(3, COLS) ROWS_CASE(4, COLS)
#if ROWS == 8
        ROWS_CASE(5, COLS) ROWS_CASE(6, COLS) ROWS_CASE(7, COLS) ROWS_CASE(8, COLS)
#endif
      }
    } else {
      switch (rows) {
        ROWS_CASE(1, 1) ROWS_CASE(2, 1) ROWS_CASE(3, 1) ROWS_CASE(4, 1)
#if ROWS == 8
        ROWS_CASE(5, 1) ROWS_CASE(6, 1) ROWS_CASE(7, 1) ROWS_CASE(8, 1)
#endif
      }
    }
  }
}

void linear_rows(const float *x, const weight_t *w, const weight_t *bias, float *y,
                 int64_t m_len, int64_t k_len, int64_t n_len, int threads) {
  const int64_t blocks = (n_len + COLS - 1) / COLS, most = n_len * k_len / GRAIN;
  if (threads > most) threads = most > 1 ? (int)most : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t n = b * COLS, end = n + COLS < n_len ? n + COLS : n_len;
    const weight_t *bn = bias ? bias + n : NULL;
    if (end - n == COLS) {
      block(x, w + n * k_len, bn, y + n, m_len, k_len, n_len, COLS);
    } else {
      for (int64_t c = n; c < end; c++)
        block(x, w + c * k_len, bias ? bias + c : NULL, y + c, m_len, k_len, n_len, 1);
    }
  }
}
