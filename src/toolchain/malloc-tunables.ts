/**
 * glibc malloc tunables that keep freed memory in the heap for reuse, as a tuned deployment would.
 * With glibc's defaults ONNX Runtime frees and re-maps its large per-run buffers and spends its runs
 * in page faults; every served or timed process (ONNX Runtime's and veltair's alike) starts with
 * these, so no arm is measured at a handicap.
 */
export const MALLOC_KEEP_TUNABLES =
  'glibc.malloc.trim_threshold=4294967295:glibc.malloc.mmap_threshold=33554432:glibc.malloc.top_pad=268435456';
