/*
 * The epoch profile's binding: where a training epoch's time goes (which part limits the
 * speed-up over dense training). The counters are filled by the passes (pass.c: per-thread seconds
 * per phase of a sample), the batch loop (train.c), the Adam step (adam.c) and the index binding
 * (addon.c); this reads them, summed over the threads that ran, and optionally resets them.
 */
#include <string.h>
#include "../vs.h"
#include "../vs_napi.h"
#include "../vs_model.h"
#include "bindings.h"

napi_value profile_fn(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  if (!vt_args_min(env, info, 2, argv, "profile(model, reset)")) return NULL;
  vs_model* m = vs_napi_model(env, argv[0]);
  if (!m) return NULL;
  bool reset = false;
  napi_get_value_bool(env, argv[1], &reset);
  double out[VS_PH_N + VS_WL_N];
  memset(out, 0, sizeof out);
  for (int t = 0; t < m->threads_alloc; t++) {
    for (int p = 0; p < VS_PH_N; p++) out[p] += m->work[t].prof[p];
    if (reset) memset(m->work[t].prof, 0, sizeof m->work[t].prof);
  }
  memcpy(out + VS_PH_N, m->prof_wall, sizeof m->prof_wall);
  if (reset) memset(m->prof_wall, 0, sizeof m->prof_wall);
  return vt_copy_typed(env, napi_float64_array, out, VS_PH_N + VS_WL_N);
}
