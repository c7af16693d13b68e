/* ddx/prefilter.h - owns the literal prefilter: the set of required literals
 * of every rule pattern, found in one pass over raw bytes.
 *
 * Literals of 7+ bytes are indexed by a run of hashed windows (8 bytes for
 * literals of 11+, 4 bytes below) so that the scan only hashes every
 * fourth position and looks the hashes up in bitmaps; short literals (2-6
 * bytes) are found by their rarest byte pair in a second, Teddy-style SIMD
 * pass. Only a set bit or a pair match leads to comparing the few literals
 * behind it. Details in server/engine/prefilter.c. Literal ids are dense 0..n-1 in
 * insertion order. Immutable once built: one prefilter serves any number
 * of threads. */
#ifndef DDX_PREFILTER_H
#define DDX_PREFILTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ddx_prefilter ddx_prefilter_t;

/* Called for each literal occurrence: pos is the offset of the literal's
 * first byte in buf. Return non-zero to stop the scan. */
typedef int (*ddx_prefilter_hit_cb)(void *ctx, uint32_t literal_id, size_t pos);

ddx_prefilter_t *ddx_prefilter_new(void);
void ddx_prefilter_free(ddx_prefilter_t *pf);
/* Adds a literal (len >= 2); returns its id or -1 on error. Duplicate bytes
 * get distinct ids. */
int32_t ddx_prefilter_add(ddx_prefilter_t *pf, const char *lit, size_t len);
/* Must be called once after the last add and before scanning. */
int ddx_prefilter_build(ddx_prefilter_t *pf);
/* Finds every occurrence of every literal in buf[0..len). */
int ddx_prefilter_scan(const ddx_prefilter_t *pf, const char *buf, size_t len,
                       ddx_prefilter_hit_cb cb, void *ctx);
/* Distinct byte pairs the short literals (2-6 bytes) are anchored on, and
 * the most the SIMD short pass takes; above it that pass goes a byte at a
 * time (ddx rules check warns). */
size_t ddx_prefilter_short_pairs(const ddx_prefilter_t *pf);
#define DDX_PREFILTER_SIMD_PAIRS 16
/* A selectivity score for a literal: the estimated frequency of its rarest
 * pair (lower is better); ddx rules check warns above a threshold. */
double ddx_prefilter_literal_cost(const char *lit, size_t len);

#endif
