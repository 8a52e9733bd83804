/*
 * The N-API plumbing every veltair add-on repeats otherwise (the runtime's, native-kernels/runtime/
 * addon.c, and sparse training's and the sparse head's, native-kernels/sparse/{train,head}/addon.c):
 * argument unpacking, typed-array reading and making, numbers in and out, external handles. Header
 * only (static functions), copied into each add-on's build by its native-build.ts.
 *
 * Conventions: a function returning a pointer or int gives NULL / 0 with a pending JS exception
 * (code VT_ARGUMENT) when it fails, so a binding just returns NULL. Define VT_NAPI_WHO (e.g.
 * "veltair runtime") before including this header: it prefixes the messages.
 */
#ifndef VT_NAPI_H
#define VT_NAPI_H
#include <math.h>
#include <node_api.h>
#include <string.h>

#ifndef VT_NAPI_WHO
#define VT_NAPI_WHO "veltair"
#endif

/* An N-API call that must succeed; otherwise throw VT_ARGUMENT and return NULL from the binding. */
#define VT_CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, "VT_ARGUMENT", VT_NAPI_WHO ": N-API call failed: " #call); return NULL; } } while (0)
/* Throw `code` with `msg` and return NULL from the binding. */
#define VT_FAIL(code, msg) do { napi_throw_error(env, code, msg); return NULL; } while (0)

/* One entry of an add-on's export table: a function. */
#define VT_METHOD(name, fn) { name, NULL, fn, NULL, NULL, NULL, napi_default, NULL }

/* Up to n arguments into argv (missing ones read as undefined); how many the caller gave, or -1 (pending exception). */
static inline int vt_args(napi_env env, napi_callback_info info, size_t n, napi_value* argv) {
  size_t argc = n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    napi_throw_error(env, "VT_ARGUMENT", VT_NAPI_WHO ": N-API call failed: napi_get_cb_info");
    return -1;
  }
  return (int)argc;
}

/* At least n arguments into argv: 1, or 0 with a pending VT_ARGUMENT exception whose message is `usage`. */
static inline int vt_args_min(napi_env env, napi_callback_info info, size_t n, napi_value* argv, const char* usage) {
  const int argc = vt_args(env, info, n, argv);
  if (argc < 0) return 0;
  if ((size_t)argc < n) { napi_throw_error(env, "VT_ARGUMENT", usage); return 0; }
  return 1;
}

static inline size_t vt_elem_size(napi_typedarray_type t) {
  switch (t) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;
  }
}

/* A typed array's type, data and element count; 0 (pending exception) if v is not one. */
static inline int vt_typed_info(napi_env env, napi_value v, napi_typedarray_type* type, void** data, size_t* length) {
  bool is = false;
  napi_value ab;
  size_t offset;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) { napi_throw_error(env, "VT_ARGUMENT", VT_NAPI_WHO ": expected a typed array"); return 0; }
  if (napi_get_typedarray_info(env, v, type, length, data, &ab, &offset) != napi_ok) {
    napi_throw_error(env, "VT_ARGUMENT", VT_NAPI_WHO ": cannot read a typed array");
    return 0;
  }
  return 1;
}

/* A typed array of type `want`: its data and element count; 0 (pending exception) otherwise. */
static inline int vt_typed(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  napi_typedarray_type type;
  if (!vt_typed_info(env, v, &type, data, length)) return 0;
  if (type != want) { napi_throw_error(env, "VT_ARGUMENT", VT_NAPI_WHO ": a typed array of the wrong type"); return 0; }
  return 1;
}

/* Any typed array's data and size in bytes; 0 (pending exception) if v is not one. */
static inline int vt_view(napi_env env, napi_value v, void** data, size_t* bytes) {
  napi_typedarray_type type;
  size_t length;
  if (!vt_typed_info(env, v, &type, data, &length)) return 0;
  *bytes = length * vt_elem_size(type);
  return 1;
}

/* A new zeroed typed array of n elements and its data; NULL if it could not be made (no exception: callers say VT_MEMORY). */
static inline napi_value vt_new_typed(napi_env env, napi_typedarray_type type, size_t n, void** data) {
  napi_value ab, arr;
  const size_t bytes = n * vt_elem_size(type);
  if (napi_create_arraybuffer(env, bytes > 0 ? bytes : 1, data, &ab) != napi_ok) return NULL;
  if (napi_create_typedarray(env, type, n, ab, 0, &arr) != napi_ok) return NULL;
  return arr;
}

/* A new typed array holding a copy of n elements of src; NULL as vt_new_typed. */
static inline napi_value vt_copy_typed(napi_env env, napi_typedarray_type type, const void* src, size_t n) {
  void* data;
  napi_value arr = vt_new_typed(env, type, n, &data);
  if (arr && n) memcpy(data, src, n * vt_elem_size(type));
  return arr;
}

/* A JS number as a double (NaN if it is not one: callers range-check with !(x >= lo)). */
static inline double vt_num(napi_env env, napi_value v) {
  double x = NAN;
  napi_get_value_double(env, v, &x);
  return x;
}

static inline double vt_prop_num(napi_env env, napi_value o, const char* name) {
  napi_value v;
  if (napi_get_named_property(env, o, name, &v) != napi_ok) return NAN;
  return vt_num(env, v);
}

static inline void vt_set_num(napi_env env, napi_value o, const char* name, double x) {
  napi_value v;
  napi_create_double(env, x, &v);
  napi_set_named_property(env, o, name, v);
}

static inline int vt_is_nullish(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && (t == napi_null || t == napi_undefined);
}

/* The pointer an external handle wraps; NULL (pending exception naming `what`) if v is not one. */
static inline void* vt_external(napi_env env, napi_value v, const char* what) {
  void* p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || !p) napi_throw_error(env, "VT_ARGUMENT", what);
  return p;
}
#endif
