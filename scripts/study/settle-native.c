/*
 * Study for issue 21: the settle scheme of ChipSettle.settleGeneral (consistent states: a
 * changed node adds or subtracts its effect list) in plain C, replaying a trace written by
 * settle-trace.ts; checks every settle's levels against the trace, then times the replay.
 * Not part of the engine: it measures what native compilation of the scheme gives.
 * Usage: settle-native TRACE [REPEATS=3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
typedef int32_t i32;
static i32 *W; static long wp;
static i32 nn, vss, vcc;
static i32 *nnStart, *nnOther, *effStart, *effIdx, *effAmt, *depStart, *dep;
static uint8_t *value; static i32 *ns;
static i32 *listA, *listB, *listStamp, *groupStamp, *group, *stackNode, *stackMask;
static i32 gen = 0, ggen = 0;
#define RANK_HIGH 0x16
static inline int rankOf(i32 d, int v) { return d >= 0x10000 ? 5 : d >= 0x100 ? 4 : (d & 2) ? 3 : (d & 1) ? 2 : v; }

/* Node n takes level nv: its effect list is added (rising) or subtracted (falling) at the node
 * words, and its dependants by the new level are queued once per pass (ChipSettle.change). */
static inline i32 change(i32 n, int nv, i32 *next, i32 nc) {
  value[n] = nv;
  i32 e = effStart[n + 1];
  if (nv) { for (i32 k = effStart[n]; k < e; k++) ns[effIdx[k]] += effAmt[k]; }
  else { for (i32 k = effStart[n]; k < e; k++) ns[effIdx[k]] -= effAmt[k]; }
  i32 de = depStart[2 * n + nv + 1];
  for (i32 k = depStart[2 * n + nv]; k < de; k++) {
    i32 d = dep[k];
    if (listStamp[d] != gen) { listStamp[d] = gen; next[nc++] = d; }
  }
  return nc;
}

/* One settle from the first count nodes of listA: ChipSettle.settleGeneral, pass by pass. */
static void settle(i32 count) {
  i32 *cur = listA, *next = listB;
  for (int pass = 0; pass < 100 && count > 0; pass++) {
    gen++;
    i32 nc = 0;
    for (i32 i = 0; i < count; i++) {
      i32 start = cur[i];
      if (start == vss || start == vcc) continue;
      i32 sm = ns[2 * start];
      int nv;
      if (sm == 0) {
        i32 d = ns[2 * start + 1];
        if (d == 0) continue;
        nv = d >= 0x10000 ? 0 : d >= 0x100 ? 1 : (d & 2) ? 0 : 1;
        if (nv == value[start]) continue;
        nc = change(start, nv, next, nc);
        continue;
      }
      if ((sm & (sm - 1)) == 0) {
        i32 x = nnOther[nnStart[start] + __builtin_ctz(sm)];
        i32 om = ns[2 * x];
        if ((om & (om - 1)) == 0) {
          int ra = rankOf(ns[2 * start + 1], value[start]);
          int rb = rankOf(ns[2 * x + 1], value[x]);
          nv = (RANK_HIGH >> (ra > rb ? ra : rb)) & 1;
          if (value[start] != nv) nc = change(start, nv, next, nc);
          if (value[x] != nv) nc = change(x, nv, next, nc);
          continue;
        }
      }
      ggen++;
      int rank = 0; i32 gcount = 0; i32 sp = 0; i32 m = start;
      groupStamp[start] = ggen; group[gcount++] = start;
      stackNode[0] = nnStart[start]; stackMask[0] = sm;
      for (;;) {
        if (rank < 5) { int r = rankOf(ns[2 * m + 1], value[m]); if (r > rank) rank = r; }
        i32 found = -1;
        while (sp >= 0) {
          i32 mk = stackMask[sp];
          if (mk == 0) { sp--; continue; }
          i32 low = mk & -mk;
          stackMask[sp] = mk ^ low;
          i32 x = nnOther[stackNode[sp] + __builtin_ctz(low)];
          if (groupStamp[x] == ggen) continue;
          found = x; break;
        }
        if (found < 0) break;
        m = found; groupStamp[m] = ggen; group[gcount++] = m;
        sp++; stackNode[sp] = nnStart[m]; stackMask[sp] = ns[2 * m];
      }
      nv = (RANK_HIGH >> rank) & 1;
      for (i32 k = 0; k < gcount; k++) { i32 n = group[k]; if (value[n] != nv) nc = change(n, nv, next, nc); }
    }
    i32 *t = cur; cur = next; next = t; count = nc;
  }
  listA = cur; listB = next;
}

static i32 *take(long n) { i32 *p = W + wp; wp += n; return p; }
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long sz = ftell(f); fseek(f, 0, SEEK_SET);
  W = malloc(sz); fread(W, 1, sz, f); fclose(f);
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  nn = W[0]; vss = W[1]; vcc = W[2]; wp = 9;
  nnStart = take(W[3]); nnOther = take(W[4]); effStart = take(W[5]); effIdx = take(W[6]); effAmt = take(W[6]);
  depStart = take(W[7]); dep = take(W[8]);
  i32 *v0 = take(nn); i32 *ns0 = take(2 * nn);
  long body = wp;
  value = malloc(nn); ns = malloc(8 * nn);
  listA = calloc(nn, 4); listB = calloc(nn, 4); listStamp = calloc(nn, 4); groupStamp = calloc(nn, 4);
  group = calloc(nn, 4); stackNode = calloc(nn + 1, 4); stackMask = calloc(nn + 1, 4);
  for (int r = 0; r < reps; r++) {
    for (i32 i = 0; i < nn; i++) value[i] = v0[i];
    memcpy(ns, ns0, 8 * nn);
    wp = body;
    long settles = 0, bad = 0;
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    for (;;) {
      i32 count = W[wp++];
      if (count < 0) break;
      memcpy(listA, W + wp, 4 * count); wp += count;
      i32 nd = W[wp++];
      for (i32 k = 0; k < nd; k++) { i32 idx = W[wp++], v = W[wp++]; if (idx < nn) value[idx] = v; else ns[idx - nn] = v; }
      settle(count);
      i32 want = W[wp++];
      /* the first repeat checks every settle against the trace; the others are timed clean */
      if (r == 0) {
        uint32_t h = 0x811c9dc5u;
        for (i32 i = 0; i < nn; i++) h = (h ^ value[i]) * 0x01000193u;
        if ((i32)h != want) bad++;
      }
      settles++;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("rep %d: %ld settles, %ld mismatches, %.3f s (%.2f us/settle)%s\n", r, settles, bad, s, s / settles * 1e6, r == 0 ? " [with hash check]" : "");
  }
  return 0;
}
