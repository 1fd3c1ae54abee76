/* Decode attention on CPU: one new query position per row, each row over its own length.
 *
 * Built and loaded by `shadowrl/inference/native.py` (one library per head dim, which is
 * a compile-time constant so the inner loops vectorise at a fixed width). PyTorch's SDPA
 * kernel, called once per row, streams an fp32 cache at about a third of this machine's
 * memory bandwidth and a bf16 one at a fifth; here each (row, kv head) task reads its keys
 * once and its values once, and OpenMP shares the tasks among torch's own threads.
 *
 * q, out: [rows, kv_heads, group, HEAD_DIM] float32, contiguous (a kv head's query group
 * attends together: GQA without repeating keys). Row r attends to its positions
 * 0 .. ends[r] - 1, laid out as `struct kv_rows` (kernels.h) says: in one run (a
 * contiguous cache's slot, `decode_attention`) or in blocks listed by a block table (the
 * paged cache, `attention_rows` called by decoder_layer.c). `bf16`: the cache holds
 * bfloat16, else float32.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define MAX_GROUP 16

/* Position t of one (row, head) stream as float32 into `dst`. */
static inline void load(float *restrict dst, const void *base, int64_t offset, int bf16) {
  if (bf16) {
    const uint16_t *src = (const uint16_t *)base + offset;
    for (int i = 0; i < HEAD_DIM; i++) dst[i] = bf16_to_float(src[i]);
  } else {
    const float *src = (const float *)base + offset;
    for (int i = 0; i < HEAD_DIM; i++) dst[i] = src[i];
  }
}

/* Element offset of position t of (row r, head h), and in *len how many positions from t
 * on (up to n) follow it `pos_stride` apart: the rest of t's block, or all of them. */
static inline int64_t run_at(const struct kv_rows *kv, int r, int h, int64_t t, int64_t n,
                             int64_t *len) {
  const int64_t head = h * kv->head_stride[r];
  if (kv->table == NULL) {
    *len = n - t;
    return head + t * kv->pos_stride;
  }
  const int64_t in = t % kv->block, left = kv->block - in;
  *len = n - t < left ? n - t : left;
  return head + kv->table[r * kv->table_stride + t / kv->block] * kv->block_stride +
         in * kv->pos_stride;
}

/* Element offset of position t of (row r, kv head h) from base[r]: where decoder_layer.c
 * writes a new key or value, by the same addressing the attention reads with. */
int64_t kv_offset(const struct kv_rows *kv, int r, int h, int64_t t) {
  int64_t len;
  return run_at(kv, r, h, t, t + 1, &len);
}

/* One (row, kv head): scores, softmax, weighted values. `scores` holds group * n floats. */
static void attend(const float *restrict q, float *restrict out, const struct kv_rows *keys,
                   const struct kv_rows *values, int r, int h, int n, int group, float scale,
                   int bf16, float *restrict scores) {
  float row[HEAD_DIM] __attribute__((aligned(64)));
  float acc[MAX_GROUP * HEAD_DIM] __attribute__((aligned(64)));
  const void *k = (const void *)keys->base[r], *v = (const void *)values->base[r];
  for (int64_t t0 = 0, len; t0 < n; t0 += len) {
    const int64_t at = run_at(keys, r, h, t0, n, &len);
    for (int64_t i = 0; i < len; i++) {
      load(row, k, at + i * keys->pos_stride, bf16);
      for (int j = 0; j < group; j++) {
        const float *qj = q + j * HEAD_DIM;
        float s = 0.f;
        for (int d = 0; d < HEAD_DIM; d++) s += qj[d] * row[d];
        scores[(int64_t)j * n + t0 + i] = s * scale;
      }
    }
  }
  for (int j = 0; j < group; j++) {  /* softmax over the row's positions, in place */
    float *sj = scores + (int64_t)j * n, top = -INFINITY, total = 0.f;
    for (int t = 0; t < n; t++) top = sj[t] > top ? sj[t] : top;
    for (int t = 0; t < n; t++) {
      sj[t] = expf(sj[t] - top);
      total += sj[t];
    }
    for (int t = 0; t < n; t++) sj[t] /= total;
  }
  memset(acc, 0, sizeof(float) * group * HEAD_DIM);
  for (int64_t t0 = 0, len; t0 < n; t0 += len) {
    const int64_t at = run_at(values, r, h, t0, n, &len);
    for (int64_t i = 0; i < len; i++) {
      load(row, v, at + i * values->pos_stride, bf16);
      for (int j = 0; j < group; j++) {
        float p = scores[(int64_t)j * n + t0 + i], *a = acc + j * HEAD_DIM;
        for (int d = 0; d < HEAD_DIM; d++) a[d] += p * row[d];
      }
    }
  }
  memcpy(out, acc, sizeof(float) * group * HEAD_DIM);
}

/* Every (row, kv head) of a step; returns 1 where a row is empty or memory ran out. */
int attention_rows(const float *q, float *out, const struct kv_rows *keys,
                   const struct kv_rows *values, const int32_t *ends, int rows, int kv_heads,
                   int group, float scale, int bf16, int threads) {
  if (group < 1 || group > MAX_GROUP) return 1;
  int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(| : failed)
  for (int task = 0; task < rows * kv_heads; task++) {
    int r = task / kv_heads, h = task % kv_heads, n = ends[r];
    float *scores = malloc(sizeof(float) * (size_t)group * (size_t)(n > 0 ? n : 1));
    if (scores == NULL || n < 1) {
      failed = 1;
    } else {
      const int64_t at = (int64_t)task * group * HEAD_DIM;
      attend(q + at, out + at, keys, values, r, h, n, group, scale, bf16, scores);
    }
    free(scores);
  }
  return failed;
}

/* Rows each in one run: row r's keys for kv head h start at keys[r] + h *
 * key_head_stride[r] and step `pos_stride` elements a position; values likewise. */
int decode_attention(const float *q, float *out, const int64_t *keys, const int64_t *values,
                     const int64_t *key_head_stride, const int64_t *value_head_stride,
                     int64_t pos_stride, const int32_t *ends, int rows, int kv_heads,
                     int group, float scale, int bf16, int threads) {
  const struct kv_rows k = {keys, key_head_stride, pos_stride, NULL, 0, 1, 0};
  const struct kv_rows v = {values, value_head_stride, pos_stride, NULL, 0, 1, 0};
  return attention_rows(q, out, &k, &v, ends, rows, kv_heads, group, scale, bf16, threads);
}
