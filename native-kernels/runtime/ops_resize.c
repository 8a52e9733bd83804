/*
 * RESIZE ints [planes, in_h, in_w, out_h, out_w, y0[out_h], y1[out_h], x0[out_w], x1[out_w]],
 *   floats [wy[out_h], wx[out_w]]; in [x] (planes x in_h x in_w, natural), out [y].
 *   y[p][i][j] = (1-wy)((1-wx) x[y0][x0] + wx x[y0][x1]) + wy((1-wx) x[y1][x0] + wx x[y1][x1]).
 * Every ONNX coordinate rule (linear or nearest, each coordinate_transformation_mode, clamping) is
 * resolved into these tables by the translator (src/runtime/lower-resize.ts); nearest is weight 0.
 * The arithmetic is float, as ONNX Runtime's.
 */
#include <stdint.h>
#include <stdio.h>
#include "vt_rt.h"

typedef struct {
  const float* x;
  float* y;
  long ih, iw, oh, ow;
  const int64_t *y0, *y1, *x0, *x1;
  const double *wy, *wx;
} resize_ctx;

static void resize_rows(const void* p, long begin, long end) {
  const resize_ctx* c = p;
  for (long r = begin; r < end; r++) {
    const long plane = r / c->oh, i = r % c->oh;
    const float* top = c->x + (plane * c->ih + c->y0[i]) * c->iw;
    const float* bottom = c->x + (plane * c->ih + c->y1[i]) * c->iw;
    const float wy = (float)c->wy[i];
    float* out = c->y + r * c->ow;
    for (long j = 0; j < c->ow; j++) {
      const float wx = (float)c->wx[j];
      const float t = top[c->x0[j]] + wx * (top[c->x1[j]] - top[c->x0[j]]);
      const float b = bottom[c->x0[j]] + wx * (bottom[c->x1[j]] - bottom[c->x0[j]]);
      out[j] = t + wy * (b - t);
    }
  }
}

int vt_op_resize(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints < 5) { snprintf(s->err, VT_ERR_LEN, "resize: %d ints, needs at least 5", s->n_ints); return 1; }
  const long planes = (long)k[0], oh = (long)k[3], ow = (long)k[4];
  if (s->n_ints != 5 + 2 * oh + 2 * ow || s->n_floats != oh + ow) {
    snprintf(s->err, VT_ERR_LEN, "resize: %d ints and %d floats do not fit a %ldx%ld output", s->n_ints, s->n_floats, oh, ow);
    return 1;
  }
  const resize_ctx c = { s->in[0], s->out[0], (long)k[1], (long)k[2], oh, ow, k + 5, k + 5 + oh, k + 5 + 2 * oh, k + 5 + 2 * oh + ow,
    s->floats, s->floats + oh };
  vt_parallel(planes * oh, s->threads, 1 + 16384 / (ow + 1), resize_rows, &c);
  return 0;
}
