/* What the training add-on's two binding files (addon.c, index.c) share. */
#ifndef VS_TRAIN_BINDINGS_H
#define VS_TRAIN_BINDINGS_H
#include "../vs_napi.h"

/* The open model a handle names; NULL with a pending exception. */
vs_model* vs_napi_model(napi_env env, napi_value v);

napi_value hash_info_fn(napi_env env, napi_callback_info info);
napi_value tables_fn(napi_env env, napi_callback_info info);
napi_value query_fn(napi_env env, napi_callback_info info);
napi_value profile_fn(napi_env env, napi_callback_info info);
#endif
