/* One decoder layer of a CPU decode step, every row in one call (a Llama or Qwen2 layer).
 *
 * Built and loaded by `shadowrl/inference/native_layer.py`, linked with linear_rows.c and
 * decode_attention.c, whose functions do the products and the attention here. In PyTorch
 * a decode step of SmolLM2 at 8 rows spent ~22 ms in ~40 small elementwise ops a layer
 * (norms, rotary, residual adds, SiLU, the KV write) and ~22 ms in Python and dispatch
 * (~1,200 ATen calls a step; issue 34). Here those ops are plain loops over a few rows on
 * the calling thread, between the products' and the attention's OpenMP regions.
 *
 * h: [rows, hidden] float32, updated in place. For each row r:
 *   x = rmsnorm(h) * norm_in;  q, k, v = x·Wqᵀ (+ bq), x·Wkᵀ (+ bk), x·Wvᵀ (+ bv)
 *   q, k rotated (cos, sin: [rows, HEAD_DIM], from the model's own rotary embedding)
 *   k, v stored at position ends[r] - 1 of slot r of the layer's cache (float32, or
 *     bfloat16 where `kv_bf16`, rounded to nearest even as PyTorch casts): the contiguous
 *     cache's [slots, kv_heads, capacity, HEAD_DIM] (slot_stride, head_stride elements
 *     apart; `table` NULL), or the paged cache's pool [kv_heads, blocks, block, HEAD_DIM]
 *     (head_stride apart), slot r's blocks listed at table[r * table_stride ...]
 *   a = attention of q over the slot's positions 0 .. ends[r] - 1 (GQA: each kv head's
 *     query group), scaled by HEAD_DIM^-1/2 as SDPA does
 *   h += a·Woᵀ (+ bo);  x = rmsnorm(h) * norm_post;  h += (silu(x·Wgᵀ) * x·Wuᵀ)·Wdᵀ
 * (each product + its bias where the model has one). The same maths as the PyTorch path
 * of `forward.Decoder.decode`, to float tolerance: sums run in another order. Built with
 * -DWEIGHTS_BF16 every weight (norms and biases too) is bfloat16, widened to float32 as
 * it is read: the same float32 maths over the bf16 weights.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define MAX_ROWS 64 /* the Python side sends at most native.MAX_ROWS */

/* What every layer of a step shares (native_layer.Step). `work` holds
 * rows * 2 * (hidden + heads * HEAD_DIM + kv_heads * HEAD_DIM + inter) floats. */
struct step {
  float *h;
  const float *cos, *sin;
  const int32_t *ends;
  float *work;
  int64_t rows, hidden, heads, kv_heads, inter, slot_stride, head_stride;
  float eps;
  int threads;
  int kv_bf16;
  const int64_t *table; /* the paged cache's block table, or NULL: the contiguous cache */
  int64_t table_stride, block;
};

/* One layer's weights (native_layer.LAYER_TENSORS, in this order); a bias may be NULL. */
struct layer {
  const weight_t *norm_in, *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
  const weight_t *norm_post, *gate_w, *gate_b, *up_w, *up_b, *down_w, *down_b;
};

/* y = x / rms(x) * w, row by row, as HF's RMSNorm computes it in float32. */
static void rmsnorm(const float *restrict x, const weight_t *restrict w, float *restrict y,
                    int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; r++, x += n, y += n) {
    float squares = 0.f;
    for (int64_t i = 0; i < n; i++) squares += x[i] * x[i];
    const float scale = 1.f / sqrtf(squares / (float)n + eps);
    for (int64_t i = 0; i < n; i++) y[i] = widen(w[i]) * (x[i] * scale);
  }
}

/* Rotary embedding of each head of one row: x·cos + rotate_half(x)·sin. */
static void rotate(float *restrict x, const float *restrict cos, const float *restrict sin,
                   int64_t heads) {
  enum { HALF = HEAD_DIM / 2 };
  for (int64_t h = 0; h < heads; h++, x += HEAD_DIM) {
    float t[HEAD_DIM];
    memcpy(t, x, sizeof t);
    for (int i = 0; i < HALF; i++) x[i] = t[i] * cos[i] - t[i + HALF] * sin[i];
    for (int i = HALF; i < HEAD_DIM; i++) x[i] = t[i] * cos[i] + t[i - HALF] * sin[i];
  }
}

/* HEAD_DIM values into a cache of float32 or (`bf16`) bfloat16 at element `at`. */
static void store(void *cache, int64_t at, const float *restrict x, int bf16) {
  if (!bf16) {
    memcpy((float *)cache + at, x, sizeof(float) * HEAD_DIM);
    return;
  }
  uint16_t *dst = (uint16_t *)cache + at;
  for (int i = 0; i < HEAD_DIM; i++) dst[i] = float_to_bf16(x[i]);
}

static void add(float *restrict h, const float *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) h[i] += y[i];
}

/* Returns 0, or 1 where the attention failed (out of memory) or rows is out of range. */
int decoder_layer(const struct step *s, const struct layer *w, void *keys, void *values) {
  const int64_t rows = s->rows, hidden = s->hidden, kv = s->kv_heads * HEAD_DIM;
  const int64_t qd = s->heads * HEAD_DIM, kv_bytes = s->kv_bf16 ? 2 : 4;
  if (rows < 1 || rows > MAX_ROWS || s->heads % s->kv_heads) return 1;
  float *x = s->work, *q = x + rows * hidden, *k = q + rows * qd, *v = k + rows * kv;
  float *a = v + rows * kv, *y = a + rows * qd, *gate = y + rows * hidden;
  float *up = gate + rows * s->inter;

  rmsnorm(s->h, w->norm_in, x, rows, hidden, s->eps);
  linear_rows(x, w->q_w, w->q_b, q, rows, hidden, qd, s->threads);
  linear_rows(x, w->k_w, w->k_b, k, rows, hidden, kv, s->threads);
  linear_rows(x, w->v_w, w->v_b, v, rows, hidden, kv, s->threads);
  int64_t key_rows[MAX_ROWS], value_rows[MAX_ROWS], strides[MAX_ROWS];
  for (int64_t r = 0; r < rows; r++) {  /* each row's buffer: its slot, or the paged pool */
    const int64_t slot = s->table ? 0 : r * s->slot_stride;
    key_rows[r] = (int64_t)((char *)keys + slot * kv_bytes);
    value_rows[r] = (int64_t)((char *)values + slot * kv_bytes);
    strides[r] = s->head_stride;
  }
  const struct kv_rows kr = {key_rows, strides, HEAD_DIM, s->table, s->table_stride, s->block,
                             s->block * HEAD_DIM};
  const struct kv_rows vr = {value_rows, strides, HEAD_DIM, s->table, s->table_stride,
                             s->block, s->block * HEAD_DIM};
  for (int64_t r = 0; r < rows; r++) {
    rotate(q + r * qd, s->cos + r * HEAD_DIM, s->sin + r * HEAD_DIM, s->heads);
    rotate(k + r * kv, s->cos + r * HEAD_DIM, s->sin + r * HEAD_DIM, s->kv_heads);
    for (int64_t h = 0; h < s->kv_heads; h++) {  /* keys and values share one layout */
      const int64_t at = kv_offset(&kr, (int)r, (int)h, s->ends[r] - 1);
      store((void *)key_rows[r], at, k + r * kv + h * HEAD_DIM, s->kv_bf16);
      store((void *)value_rows[r], at, v + r * kv + h * HEAD_DIM, s->kv_bf16);
    }
  }
  if (attention_rows(q, a, &kr, &vr, s->ends, (int)rows, (int)s->kv_heads,
                     (int)(s->heads / s->kv_heads), 1.f / sqrtf((float)HEAD_DIM), s->kv_bf16,
                     s->threads))
    return 1;
  linear_rows(a, w->o_w, w->o_b, y, rows, qd, hidden, s->threads);
  add(s->h, y, rows * hidden);

  rmsnorm(s->h, w->norm_post, x, rows, hidden, s->eps);
  linear_rows(x, w->gate_w, w->gate_b, gate, rows, hidden, s->inter, s->threads);
  linear_rows(x, w->up_w, w->up_b, up, rows, hidden, s->inter, s->threads);
  for (int64_t i = 0; i < rows * s->inter; i++) gate[i] = gate[i] / (1.f + expf(-gate[i])) * up[i];
  linear_rows(gate, w->down_w, w->down_b, y, rows, s->inter, hidden, s->threads);
  add(s->h, y, rows * hidden);
  return 0;
}
