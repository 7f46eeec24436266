/* team_topo.c - placement: which CPUs share a cache (from sysfs), and the
 * cut of pool workers into clusters that stay inside a cache group. */
#define _GNU_SOURCE
#include "team_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int abar__team_cpulist(const char *s, unsigned char *bitmap, int bits)
{
    int count = 0;
    memset(bitmap, 0, (size_t)(bits + 7) / 8);
    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0) return -1;
        s = end;
        if (*s == '-') {
            s++;
            b = strtol(s, &end, 10);
            if (end == s || b < a) return -1;
            s = end;
        } else {
            b = a;
        }
        for (long c = a; c <= b; c++)
            if (c < bits && !(bitmap[c / 8] & (1u << (c % 8)))) {
                bitmap[c / 8] |= (unsigned char)(1u << (c % 8));
                count++;
            }
        if (*s == ',') s++;
        else if (*s && *s != '\n') return -1;
    }
    return count;
}

/* Reads a small sysfs file into buf; 0 or -1. */
static int read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    if (n == 0) return -1;
    buf[n] = '\0';
    return 0;
}

enum { MAXBITS = 4096 };

/* The lowest CPU sharing cpu's cache of the given level (a group name), or
 * -1 if sysfs does not say. */
static int cache_leader(const char *root, int cpu, int level)
{
    char path[512], buf[4096];
    unsigned char map[MAXBITS / 8];
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", root, cpu, idx);
        if (read_small(path, buf, sizeof buf) != 0) return -1; /* no such level */
        if (atoi(buf) != level) continue;
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/shared_cpu_list", root, cpu, idx);
        if (read_small(path, buf, sizeof buf) != 0) return -1;
        if (abar__team_cpulist(buf, map, MAXBITS) <= 0) return -1;
        for (int c = 0; c < MAXBITS; c++)
            if (map[c / 8] & (1u << (c % 8))) return c;
    }
    return -1;
}

/* The deepest cache level cpu has (3 for an L3, ...), or -1. */
static int last_level(const char *root, int cpu)
{
    char path[512], buf[64];
    int best = -1;
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", root, cpu, idx);
        if (read_small(path, buf, sizeof buf) != 0) break;
        int l = atoi(buf);
        if (l > best) best = l;
    }
    return best;
}

struct cpu_key { int llc, l2, cpu; };

static int key_cmp(const void *a, const void *b)
{
    const struct cpu_key *x = a, *y = b;
    if (x->llc != y->llc) return x->llc < y->llc ? -1 : 1;
    if (x->l2 != y->l2) return x->l2 < y->l2 ? -1 : 1;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

int abar__team_topology(const char *root, const int *cpus, int n, int *order, int *group)
{
    struct cpu_key *k = calloc((size_t)(n > 0 ? n : 1), sizeof *k);
    int ok = k != NULL && n > 0 && root != NULL;
    int llc = ok ? last_level(root, cpus[0]) : -1;
    if (llc < 0) ok = 0;
    for (int i = 0; ok && i < n; i++) {
        k[i].cpu = cpus[i];
        k[i].llc = cache_leader(root, cpus[i], llc);
        k[i].l2 = llc > 2 ? cache_leader(root, cpus[i], 2) : k[i].llc;
        if (k[i].llc < 0 || k[i].l2 < 0) ok = 0;
    }
    if (!ok) { /* fallback: as given, one group */
        for (int i = 0; i < n; i++) {
            order[i] = cpus[i];
            group[i] = 0;
        }
        free(k);
        return ENOENT;
    }
    qsort(k, (size_t)n, sizeof *k, key_cmp);
    for (int i = 0, g = -1; i < n; i++) {
        if (i == 0 || k[i].llc != k[i - 1].llc) g++;
        order[i] = k[i].cpu;
        group[i] = g;
    }
    free(k);
    return 0;
}

unsigned abar__team_place(unsigned P, unsigned C, const int *grp, int *slot_of, int *rank_of)
{
    unsigned K = 0;
    for (unsigned w = 0; w < P; w++) slot_of[w] = -1, rank_of[w] = 0;
    if (C == 0) return 0;
    if (grp == NULL) { /* no topology: consecutive workers */
        for (unsigned w = 0; w + C <= P; w += C, K++)
            for (unsigned r = 0; r < C; r++) slot_of[w + r] = (int)K, rank_of[w + r] = (int)r;
        return K;
    }
    /* Whole clusters inside each run of workers of one group... */
    for (unsigned a = 0; a < P;) {
        unsigned b = a;
        while (b < P && grp[b] == grp[a]) b++;
        for (unsigned w = a; w + C <= b; w += C, K++)
            for (unsigned r = 0; r < C; r++) slot_of[w + r] = (int)K, rank_of[w + r] = (int)r;
        a = b;
    }
    /* ...then the leftovers, in worker order. */
    unsigned r = 0;
    for (unsigned w = 0; w < P; w++) {
        if (slot_of[w] != -1) continue;
        slot_of[w] = (int)K;
        rank_of[w] = (int)r;
        if (++r == C) r = 0, K++;
    }
    if (r != 0) /* an incomplete last cluster: those workers stay idle */
        for (unsigned w = 0; w < P; w++)
            if (slot_of[w] == (int)K) slot_of[w] = -1, rank_of[w] = 0;
    return K;
}
