/*
 * CHANNEL_GATHER: outputs assembled channel by channel from inputs, on NCHW[V]c (V = 1: plain
 * NCHW, any rank with the channel axis second). One op covers channel concat, split and slice at
 * any channel counts, a channel shuffle (reshape–transpose–reshape) and the three fused together
 * (ShuffleNet: concat → shuffle → split in one pass over the data).
 * ints [V, N, HW, n_in, n_out, C of each input, C of each output, then per output channel (outputs
 *       in order): source input index, source channel], optionally followed by a piece table
 *       for V = 16 (check_table), optionally followed by the lowering's assignment of the work to
 *       threads (check_runs); float32 in / out.
 * Per output block of V channels: an aligned block (V consecutive source channels starting at a
 * multiple of V, or the source's last block) is one contiguous copy of the plane. Any other block,
 * per pixel: with AVX-512 at V = 16, one contiguous load and masked permute per source block it
 * draws from; with AVX2 at V a multiple of 8, per 8 lanes, one contiguous load, lane permute and
 * blend for each 8-lane piece of a source block (no gathers: they run far below cache bandwidth on
 * Zen 3); else lane by lane. Padded lanes are zero.
 */
#include <stdio.h>
#include <string.h>
#include "vt_rt.h"
#include "../vt_simd.h"

#define MAX_PARTS 64
#define MAXV 16

typedef struct {
  const float* in[MAX_PARTS]; float* out[MAX_PARTS];
  long v, n, hw, n_in, n_out, cin[MAX_PARTS], cout[MAX_PARTS], cb_in[MAX_PARTS], cb_out[MAX_PARTS];
  long first_block[MAX_PARTS + 1], first_channel[MAX_PARTS + 1];
  const int64_t* map;
  /* The lowering's piece table (V = 16; NULL: group the map's lanes on every call), and per output
   * the table index of its first block. */
  const int64_t* table;
  long table_block[MAX_PARTS];
  /* The lowering's thread assignment (check_runs), or NULL. */
  const int64_t* runs;
} cg_ctx;

/* Source element offset (floats, from the source's base) of channel `sc`, batch `n`, pixel 0. */
static inline long src_offset(const cg_ctx* k, long s, long n, long sc) {
  return ((n * k->cb_in[s] + sc / k->v) * k->hw) * k->v + sc % k->v;
}

#if defined(__AVX2__) && defined(__FMA__)
/* Where lanes [g0, g0 + live) of an output block come from, grouped into pieces: W consecutive channels
 * of one source starting at a multiple of W. Per piece: its source and first channel, the lane of the
 * piece each output lane takes (idx, 0 elsewhere) and the output lanes it fills (pick). Returns the count. */
static int group_pieces(const int64_t* map, long g0, long live, long w, long* piece_s, long* piece_c, int32_t (*idx)[16], unsigned* pick) {
  int n_pieces = 0;
  for (long l = 0; l < live; l++) {
    long s = map[2 * (g0 + l)], sc = map[2 * (g0 + l) + 1], cw = sc - sc % w;
    int u = 0;
    while (u < n_pieces && (piece_s[u] != s || piece_c[u] != cw)) u++;
    if (u == n_pieces) { piece_s[u] = s; piece_c[u] = cw; pick[u] = 0; memset(idx[u], 0, sizeof idx[u]); n_pieces++; }
    idx[u][l] = (int32_t)(sc % w);
    pick[u] |= 1u << l;
  }
  return n_pieces;
}
#endif

#if defined(__AVX512F__)
/*
 * V = 16 without gathers: each lane comes from one piece, a source block (16 consecutive lanes
 * starting at a multiple of 16), and per pixel each piece is one contiguous load and one masked
 * permute into the result; the index vectors and masks are fixed for the block.
 */
typedef struct { const float* src; vt16_perm_t idx; unsigned pick; } cg_piece16;

static inline __attribute__((always_inline)) void permute_pixels16(const cg_piece16* piece, int n_pieces, long q0, long q1, float* dst) {
  for (long q = q0; q < q1; q++) {
    vt16_t acc = vt16_zero();
    for (int u = 0; u < n_pieces; u++) acc = vt16_permute_into(acc, piece[u].pick, piece[u].idx, vt16_load(piece[u].src + q * 16));
    vt16_store(dst + q * 16, acc);
  }
}

static inline void run_pieces16(const cg_piece16* piece, int n_pieces, long q0, long q1, float* dst) {
  switch (n_pieces) {
    case 1: permute_pixels16(piece, 1, q0, q1, dst); break;
    case 2: permute_pixels16(piece, 2, q0, q1, dst); break;
    case 3: permute_pixels16(piece, 3, q0, q1, dst); break;
    case 4: permute_pixels16(piece, 4, q0, q1, dst); break;
    default: permute_pixels16(piece, n_pieces, q0, q1, dst); break;
  }
}

static void permute_group16(const cg_ctx* k, const int64_t* map, long lanes, long n, long q0, long q1, float* dst) {
  long piece_s[16], piece_c[16];
  int32_t idx[16][16];
  unsigned pick[16];
  int n_pieces = group_pieces(map, 0, lanes, 16, piece_s, piece_c, idx, pick);
  cg_piece16 piece[16];
  for (int u = 0; u < n_pieces; u++) piece[u] = (cg_piece16){ k->in[piece_s[u]] + src_offset(k, piece_s[u], n, piece_c[u]), vt16_perm_index(idx[u]), pick[u] };
  run_pieces16(piece, n_pieces, q0, q1, dst);
}

/* The same from a table entry's pieces (e: n_pieces, then per piece: source, first channel, pick,
 * lane indices 0-7 and 8-15 at 4 bits each; checked by check_table). */
static void table_group16(const cg_ctx* k, const int64_t* e, long n, long q0, long q1, float* dst) {
  const int n_pieces = (int)e[0];
  cg_piece16 piece[16];
  for (int u = 0; u < n_pieces; u++) {
    const int64_t* p = e + 1 + 5 * u;
    int32_t idx[16];
    for (int l = 0; l < 16; l++) idx[l] = (int32_t)((p[3 + l / 8] >> (4 * (l % 8))) & 15);
    piece[u] = (cg_piece16){ k->in[p[0]] + src_offset(k, p[0], n, p[1]), vt16_perm_index(idx), (unsigned)p[2] };
  }
  run_pieces16(piece, n_pieces, q0, q1, dst);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
/*
 * Lanes [g0, g0 + 8) of every pixel of the block without gathers (vgatherdps runs far below L2 bandwidth on Zen 3).
 * Each lane comes from one piece: 8 consecutive lanes of one source block starting at a multiple of 8 (V = 8: the
 * whole block; V = 16: one half), and a shuffle draws a block from 2–4 pieces, so per pixel each piece is one
 * contiguous load, a permute and a blend whose index vector and selector are fixed for the block.
 */
typedef struct { const float* src; vt8_perm_t idx; vt8_t pick; } cg_piece8;

/* Inlined per piece count (see the switch) so the pieces' index vectors and selectors stay in registers across pixels. */
static inline __attribute__((always_inline)) void permute_pixels8(const cg_piece8* piece, int n_pieces, long q0, long q1, long v,
                                                                   long live, float* dst) {
  for (long q = q0; q < q1; q++) {
    vt8_t acc = vt8_permute(vt8_load(piece[0].src + q * v), piece[0].idx);
    for (int u = 1; u < n_pieces; u++) acc = vt8_select(piece[u].pick, acc, vt8_permute(vt8_load(piece[u].src + q * v), piece[u].idx));
    if (live < 8) acc = vt8_keep(acc, (int)live);
    vt8_store(dst + q * v, acc);
  }
}

static void permute_group8(const cg_ctx* k, const int64_t* map, long lanes, long n, long g0, long q0, long q1, float* dst) {
  long live = lanes - g0 < 8 ? lanes - g0 : 8;
  dst += g0;
  if (live <= 0) {
    for (long q = q0; q < q1; q++) vt8_store(dst + q * k->v, vt8_zero());
    return;
  }
  long piece_s[8], piece_c[8];
  int32_t idx[8][16];
  unsigned mask[8];
  int n_pieces = group_pieces(map, g0, live, 8, piece_s, piece_c, idx, mask);
  cg_piece8 piece[8];
  for (int u = 0; u < n_pieces; u++) {
    piece[u] = (cg_piece8){ k->in[piece_s[u]] + src_offset(k, piece_s[u], n, piece_c[u]), vt8_perm_index(idx[u]), vt8_lane_mask(mask[u]) };
  }
  switch (n_pieces) {
    case 1: permute_pixels8(piece, 1, q0, q1, k->v, live, dst); break;
    case 2: permute_pixels8(piece, 2, q0, q1, k->v, live, dst); break;
    case 3: permute_pixels8(piece, 3, q0, q1, k->v, live, dst); break;
    case 4: permute_pixels8(piece, 4, q0, q1, k->v, live, dst); break;
    default: permute_pixels8(piece, n_pieces, q0, q1, k->v, live, dst); break;
  }
}
#endif

static void gather_scalar(const cg_ctx* k, const int64_t* map, long lanes, long n, long q0, long q1, float* dst) {
  long off[MAXV];
  for (long l = 0; l < lanes; l++) off[l] = src_offset(k, map[2 * l], n, map[2 * l + 1]);
  for (long q = q0; q < q1; q++) {
    float* o = dst + q * k->v;
    for (long l = 0; l < lanes; l++) o[l] = k->in[map[2 * l]][off[l] + q * k->v];
    for (long l = lanes; l < k->v; l++) o[l] = 0.0f;
  }
}

/*
 * The table the lowering computes once for V = 16, so a call does not group lanes into pieces:
 * [B, then per output block of batch 0 (outputs in order) the offset of its entry from the table's
 * start, then the entries]. Entry: [0, source, first channel] for a block that is V consecutive
 * channels of one source (or its last block) from a multiple of V, copied whole; else [1, n_pieces,
 * then per piece: source, first channel (a multiple of 16), pick (the lanes it fills), lane indices
 * 0-7 and 8-15 at 4 bits each]. Every source block named must exist (the loads stay inside it).
 */
static int check_table(cg_ctx* c, const int64_t* t, long len, long* end, char* err) {
  long blocks = 0;
  *end = 1;
  for (long o = 0; o < c->n_out; o++) { c->table_block[o] = blocks; blocks += c->cb_out[o]; }
  if (len < 1 + blocks || t[0] != blocks) {
    snprintf(err, VT_ERR_LEN, "channel gather: a piece table of %ld ints for %ld output blocks", len, blocks);
    return 1;
  }
  for (long b = 0; b < blocks; b++) {
    const long at = t[1 + b];
    const int64_t* e = t + at;
    const char* why = NULL;
    if (at < 1 + blocks || at >= len) why = "starts outside the table";
    else if (e[0] == 0) {
      if (at + 3 > len) why = "runs past the table";
      else if (e[1] < 0 || e[1] >= c->n_in || e[2] < 0 || e[2] % 16 != 0 || e[2] >= c->cin[e[1]]) why = "copies a block its source does not have";
    } else if (e[0] == 1) {
      if (at + 2 > len || e[1] < 1 || e[1] > 16 || at + 2 + 5 * e[1] > len) why = "has a piece count that does not fit";
      for (long u = 0; !why && u < e[1]; u++) {
        const int64_t* p = e + 2 + 5 * u;
        if (p[0] < 0 || p[0] >= c->n_in || p[1] < 0 || p[1] % 16 != 0 || p[1] >= c->cin[p[0]]) why = "reads a block its source does not have";
        else if (p[2] < 0 || p[2] > 0xFFFF || p[3] < 0 || p[3] > 0xFFFFFFFFll || p[4] < 0 || p[4] > 0xFFFFFFFFll) why = "has a lane field out of range";
      }
    } else {
      why = "is of no known kind";
    }
    if (why) { snprintf(err, VT_ERR_LEN, "channel gather: the piece table's entry for output block %ld %s", b, why); return 1; }
    const long entry_end = at + (e[0] == 0 ? 3 : 2 + 5 * e[1]);
    if (entry_end > *end) *end = entry_end;
  }
  if (*end < 1 + blocks) *end = 1 + blocks;
  return 0;
}

/*
 * The lowering's assignment (src/runtime/gather-assign.ts): [T, R, then R runs of (work item, q0,
 * q1, thread)], sorted by item and q0, each item's runs tiling its pixels [0, HW) with no gap or
 * overlap, so that with T threads every output pixel is written exactly once, by the thread that
 * wrote most of what it reads. Used only when the step runs on exactly T threads.
 */
static int check_runs(const cg_ctx* c, const int64_t* a, long len, char* err) {
  const long items = c->first_block[c->n_out];
  const char* why = NULL;
  if (len < 2 || a[0] < 2 || a[0] > VT_MAX_CORES || a[1] < 1 || (len - 2) / 4 != a[1] || (len - 2) % 4 != 0) why = "has a malformed header";
  long item = 0, q = 0;
  for (long r = 0; !why && r < a[1]; r++) {
    const int64_t* run = a + 2 + 4 * r;
    if (item >= items) why = "runs past the last output block";
    else if (run[0] != item || run[1] != q || run[2] <= run[1] || run[2] > c->hw || run[3] < 0 || run[3] >= a[0]) why = "leaves a gap or an overlap";
    q = run[2];
    if (q == c->hw) { item++; q = 0; }
  }
  if (!why && item != items) why = "does not cover every output block";
  if (why) { snprintf(err, VT_ERR_LEN, "channel gather: the thread assignment %s", why); return 1; }
  return 0;
}

/* Work item = (pixel part, output block), part-major: with `parts` threads each gets one part. */
typedef struct { const cg_ctx* k; long parts; } cg_run;

/* Pixels [q0, q1) of work item t (output o's block, outputs in order, batch-major within one). */
static void gather_range(const cg_ctx* k, long t, long q0, long q1) {
  long o = 0;
  while (t >= k->first_block[o + 1]) o++;
  long local = t - k->first_block[o], n = local / k->cb_out[o], ob = local % k->cb_out[o];
  float* dst = k->out[o] + (n * k->cb_out[o] + ob) * k->hw * k->v;
#if defined(__AVX512F__)
  if (k->table) {
    const int64_t* entry = k->table + k->table[1 + k->table_block[o] + ob];
    if (entry[0] == 0) {
      const float* src = k->in[entry[1]] + src_offset(k, entry[1], n, entry[2]);
      if (src != dst) memcpy(dst + q0 * k->v, src + q0 * k->v, (size_t)((q1 - q0) * k->v) * sizeof(float));
    } else {
      table_group16(k, entry + 1, n, q0, q1, dst);
    }
    return;
  }
#endif
  const int64_t* map = k->map + 2 * (k->first_channel[o] + ob * k->v);
  long lanes = k->cout[o] - ob * k->v < k->v ? k->cout[o] - ob * k->v : k->v;
  long s = map[0], sc0 = map[1];
  int aligned = sc0 % k->v == 0 && (lanes == k->v || sc0 + lanes == k->cin[s]);
  for (long l = 1; aligned && l < lanes; l++) aligned = map[2 * l] == s && map[2 * l + 1] == sc0 + l;
  if (aligned) {
    /* An input the plan placed in its slice of the output (a zero-copy concat) is already there. */
    const float* src = k->in[s] + src_offset(k, s, n, sc0);
    if (src != dst) memcpy(dst + q0 * k->v, src + q0 * k->v, (size_t)((q1 - q0) * k->v) * sizeof(float));
    return;
  }
#if defined(__AVX512F__)
  if (k->v == 16) { permute_group16(k, map, lanes, n, q0, q1, dst); return; }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if (k->v % 8 == 0) {
    for (long g0 = 0; g0 < k->v; g0 += 8) permute_group8(k, map, lanes, n, g0, q0, q1, dst);
    return;
  }
#endif
  gather_scalar(k, map, lanes, n, q0, q1, dst);
}

static void gather_blocks(const void* p, long b, long e) {
  const cg_run* r = p;
  const cg_ctx* k = r->k;
  const long blocks = k->first_block[k->n_out];
  for (long item = b; item < e; item++) {
    const long part = item / blocks;
    gather_range(k, item % blocks, k->hw * part / r->parts, k->hw * (part + 1) / r->parts);
  }
}

/* Item = thread: each takes the runs the assignment gives it. */
static void gather_assigned(const void* p, long b, long e) {
  const cg_ctx* k = p;
  for (long id = b; id < e; id++) {
    for (long r = 0; r < k->runs[1]; r++) {
      const int64_t* run = k->runs + 2 + 4 * r;
      if (run[3] == id) gather_range(k, run[0], run[1], run[2]);
    }
  }
}

int vt_op_channel_gather(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints < 5 || s->n_ints < 5 + k[3] + k[4]) {
    snprintf(s->err, VT_ERR_LEN, "channel gather: %d ints do not hold its geometry", s->n_ints);
    return 1;
  }
  cg_ctx c;
  c.first_block[0] = 0; c.first_channel[0] = 0;
  c.v = k[0]; c.n = k[1]; c.hw = k[2]; c.n_in = k[3]; c.n_out = k[4];
  if (c.v < 1 || c.v > MAXV || c.n_in < 1 || c.n_in > MAX_PARTS || c.n_out < 1 || c.n_out > MAX_PARTS
      || c.n_in != s->n_in || c.n_out != s->n_out) {
    snprintf(s->err, VT_ERR_LEN, "channel gather: malformed geometry (V %ld, %ld inputs, %ld outputs)", c.v, c.n_in, c.n_out);
    return 1;
  }
  long total_channels = 0;
  if (c.n < 1 || c.hw < 1) {
    snprintf(s->err, VT_ERR_LEN, "channel gather: malformed geometry (batch %ld, %ld pixels)", c.n, c.hw);
    return 1;
  }
  for (long i = 0; i < c.n_in + c.n_out; i++) {
    if (k[5 + i] < 1) { snprintf(s->err, VT_ERR_LEN, "channel gather: operand %ld has %ld channels", i, (long)k[5 + i]); return 1; }
  }
  for (long i = 0; i < c.n_in; i++) { c.in[i] = s->in[i]; c.cin[i] = k[5 + i]; c.cb_in[i] = (c.cin[i] + c.v - 1) / c.v; }
  for (long o = 0; o < c.n_out; o++) {
    c.out[o] = s->out[o]; c.cout[o] = k[5 + c.n_in + o]; c.cb_out[o] = (c.cout[o] + c.v - 1) / c.v;
    c.first_block[o + 1] = c.first_block[o] + c.n * c.cb_out[o];
    c.first_channel[o + 1] = c.first_channel[o] + c.cout[o];
    total_channels += c.cout[o];
  }
  c.map = k + 5 + c.n_in + c.n_out;
  const long map_end = 5 + c.n_in + c.n_out + 2 * total_channels;
  if (s->n_ints < map_end) {
    snprintf(s->err, VT_ERR_LEN, "channel gather: %d ints for %ld output channels", s->n_ints, total_channels);
    return 1;
  }
  c.table = NULL;
  c.runs = NULL;
  if (s->n_ints > map_end && c.v != 16) {
    snprintf(s->err, VT_ERR_LEN, "channel gather: a piece table is for V = 16, not %ld", c.v);
    return 1;
  }
  if (s->n_ints > map_end) {
    /* checked in every build; read only by the AVX-512 path (elsewhere the map runs) */
    long table_end;
    if (check_table(&c, k + map_end, s->n_ints - map_end, &table_end, s->err)) return 1;
#if defined(__AVX512F__)
    c.table = k + map_end;
#endif
    if (s->n_ints > map_end + table_end) {
      if (check_runs(&c, k + map_end + table_end, s->n_ints - map_end - table_end, s->err)) return 1;
      c.runs = k + map_end + table_end;
    }
  }
  /* With a table the map is not read (its checks cost more than the table's on ShuffleNet's 7x7 planes). */
  for (long i = 0; !c.table && i < total_channels; i++) {
    if (c.map[2 * i] < 0 || c.map[2 * i] >= c.n_in || c.map[2 * i + 1] < 0 || c.map[2 * i + 1] >= c.cin[c.map[2 * i]]) {
      snprintf(s->err, VT_ERR_LEN, "channel gather: output channel %ld names a source channel that does not exist", i);
      return 1;
    }
  }
  /* On planes of >= 128 pixels threads split the pixels, each doing every block: splitting the blocks
   * made a 2-thread gather no faster than a 1-thread one on ShuffleNet's 28x28 and 14x14 planes. On
   * smaller planes they split the blocks: a pixel split repeats each block's piece setup per thread
   * for a few pixels each (bench/RESULTS.md). */
  if (c.runs && c.runs[0] == s->threads) {
    vt_parallel(c.runs[0], s->threads, 1, gather_assigned, &c);
    return 0;
  }
  const long blocks = c.first_block[c.n_out];
  cg_run r = { &c, s->threads > 1 && c.hw >= 128 ? s->threads : 1 };
  vt_parallel(blocks * r.parts, s->threads, r.parts > 1 ? blocks : 1, gather_blocks, &r);
  return 0;
}
