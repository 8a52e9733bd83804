/*
 * What the two sparse add-ons (train/addon.c, head/addon.c) share on top of the N-API helpers of
 * ../napi/vt_napi.h: the message prefix, the build's ISA and the enum-code tables they report.
 */
#ifndef VS_NAPI_H
#define VS_NAPI_H
#define NAPI_VERSION 8
#define VT_NAPI_WHO "veltair sparse"
#include "napi/vt_napi.h"
#include "vs.h"

const char* vs_isa(void);

/* o[name] = { names[i]: values[i] } */
static inline void vs_put_codes(napi_env env, napi_value o, const char* name, const char* const* names, const int* values, int n) {
  napi_value t, v;
  napi_create_object(env, &t);
  for (int i = 0; i < n; i++) { napi_create_int32(env, values[i], &v); napi_set_named_property(env, t, names[i], v); }
  napi_set_named_property(env, o, name, t);
}

static inline napi_value isa_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value s;
  VT_CHECK(napi_create_string_utf8(env, vs_isa(), NAPI_AUTO_LENGTH, &s));
  return s;
}
#endif
