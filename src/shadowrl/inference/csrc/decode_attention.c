/* Decode attention on CPU: one new query position per row, each row over its own length.
 *
 * Built and loaded by `shadowrl/inference/native.py` (one library per head dim, which is
 * a compile-time constant so the inner loops vectorise at a fixed width). PyTorch's SDPA
 * kernel, called once per row, streams an fp32 cache at about a third of this machine's
 * memory bandwidth and a bf16 one at a fifth; here each (row, kv head) task reads its keys
 * once and its values once, and OpenMP shares the tasks among torch's own threads.
 *
 * q, out: [rows, kv_heads, group, HEAD_DIM] float32, contiguous (a kv head's query group
 * attends together: GQA without repeating keys). Row r's keys for kv head h start at
 * keys[r] + h * key_head_stride[r] and step `pos_stride` elements per position, for
 * positions 0 .. ends[r] - 1; values likewise. `bf16`: the cache holds bfloat16, else
 * float32.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUP 16

static inline float bf16_to_float(uint16_t x) {
  union { uint32_t u; float f; } c;
  c.u = (uint32_t)x << 16;
  return c.f;
}

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

/* One (row, kv head): scores, softmax, weighted values. `scores` holds group * n floats. */
static void attend(const float *restrict q, float *restrict out, const void *k, const void *v,
                   int64_t key_offset, int64_t value_offset, int64_t pos_stride, int n,
                   int group, float scale, int bf16, float *restrict scores) {
  float row[HEAD_DIM] __attribute__((aligned(64)));
  float acc[MAX_GROUP * HEAD_DIM] __attribute__((aligned(64)));
  for (int t = 0; t < n; t++) {
    load(row, k, key_offset + t * pos_stride, bf16);
    for (int j = 0; j < group; j++) {
      const float *qj = q + j * HEAD_DIM;
      float s = 0.f;
      for (int i = 0; i < HEAD_DIM; i++) s += qj[i] * row[i];
      scores[(int64_t)j * n + t] = s * scale;
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
  for (int t = 0; t < n; t++) {
    load(row, v, value_offset + t * pos_stride, bf16);
    for (int j = 0; j < group; j++) {
      float p = scores[(int64_t)j * n + t], *a = acc + j * HEAD_DIM;
      for (int i = 0; i < HEAD_DIM; i++) a[i] += p * row[i];
    }
  }
  memcpy(out, acc, sizeof(float) * group * HEAD_DIM);
}

int decode_attention(const float *q, float *out, const int64_t *keys, const int64_t *values,
                     const int64_t *key_head_stride, const int64_t *value_head_stride,
                     int64_t pos_stride, const int32_t *ends, int rows, int kv_heads,
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
      attend(q + at, out + at, (const void *)keys[r], (const void *)values[r],
             h * key_head_stride[r], h * value_head_stride[r], pos_stride, n, group, scale,
             bf16, scores);
    }
    free(scores);
  }
  return failed;
}
