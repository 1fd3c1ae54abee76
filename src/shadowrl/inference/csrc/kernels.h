/* What the kernels of csrc/ share: bfloat16 conversions, the weight type a build reads,
 * the KV layout the attention and the decoder layer agree on, and the functions one
 * kernel's library calls in another's (`_kernels.build` links them into one library and
 * writes this header beside every source). */
#ifndef SHADOWRL_KERNELS_H
#define SHADOWRL_KERNELS_H
#include <stdint.h>

/* A bf16 value is the top half of a float32's bits. */
static inline float bf16_to_float(uint16_t x) {
  union { uint32_t u; float f; } c = {.u = (uint32_t)x << 16};
  return c.f;
}

/* float32 -> bfloat16, round to nearest even (NaN kept a quiet NaN), as PyTorch casts. */
static inline uint16_t float_to_bf16(float f) {
  union { float f; uint32_t u; } c = {f};
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u);
  return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);
}

#if defined(WEIGHTS_BF16) /* a bf16 engine's weights, widened to float32 as read */
typedef uint16_t weight_t;
static inline float widen(weight_t w) { return bf16_to_float(w); }
#else
typedef float weight_t;
static inline float widen(weight_t w) { return w; }
#endif

/* Where the rows' keys (or values) lie. Position t of row r, kv head h, is element
 *   h * head_stride[r] + t * pos_stride                      (table == NULL)
 *   h * head_stride[r] + table[r * table_stride + t / block] * block_stride
 *                      + (t % block) * pos_stride             (a block table)
 * of the buffer at address base[r]. */
struct kv_rows {
  const int64_t *base, *head_stride;
  int64_t pos_stride;
  const int64_t *table;
  int64_t table_stride, block, block_stride;
};

/* decode_attention.c */
int attention_rows(const float *q, float *out, const struct kv_rows *keys,
                   const struct kv_rows *values, const int32_t *ends, int rows, int kv_heads,
                   int group, float scale, int bf16, int threads);
int64_t kv_offset(const struct kv_rows *kv, int r, int h, int64_t t);

/* linear_rows.c */
void linear_rows(const float *x, const weight_t *w, const weight_t *bias, float *y,
                 int64_t m_len, int64_t k_len, int64_t n_len, int threads);
#endif
