/* test_team_topo.c - placement: sysfs cache topology (from a fake tree and the
 * real one), the cut of workers into clusters, pinning. */
#include "harness.h"
#include "team_internal.h"
#include <abar_team.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <ftw.h>
#include <sys/stat.h>

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}
static void remove_tree(const char *root) { nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

TEST(cpulist_parse)
{
    unsigned char m[16];
    CHECK_EQ(abar__team_cpulist("0-3,8,10-11\n", m, 128), 7);
    CHECK(m[0] == 0x0f && m[1] == 0x0d);
    CHECK_EQ(abar__team_cpulist("5", m, 128), 1);
    CHECK(m[0] == 0x20);
    CHECK_EQ(abar__team_cpulist("3-1", m, 128), -1);
    CHECK_EQ(abar__team_cpulist("a", m, 128), -1);
    CHECK_EQ(abar__team_cpulist("1,,2", m, 128), -1);
    CHECK_EQ(abar__team_cpulist("1;2", m, 128), -1);
    CHECK_EQ(abar__team_cpulist("-1", m, 128), -1);
    CHECK_EQ(abar__team_cpulist("0-1000", m, 128), 128); /* clipped to the bitmap */
}

/* A fake sysfs tree: 8 CPUs; L3 shared by the even and by the odd ones; L2
 * shared by cpu c and c+4; L1 private. */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void make_tree(char *root, int with_l3)
{
    char path[512];
    strcpy(root, "/tmp/abar_topo_XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    for (int c = 0; c < 8; c++) {
        snprintf(path, sizeof path, "%s/cpu%d", root, c);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/cpu%d/cache", root, c);
        mkdir(path, 0700);
        const char *lists[3];
        char l1[8], l2[16];
        snprintf(l1, sizeof l1, "%d\n", c);
        snprintf(l2, sizeof l2, "%d,%d\n", c % 4, c % 4 + 4);
        lists[0] = l1;
        lists[1] = l2;
        lists[2] = c % 2 ? "1,3,5,7\n" : "0,2,4,6\n";
        for (int i = 0; i < (with_l3 ? 3 : 2); i++) {
            snprintf(path, sizeof path, "%s/cpu%d/cache/index%d", root, c, i);
            mkdir(path, 0700);
            snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", root, c, i);
            write_file(path, i == 0 ? "1\n" : i == 1 ? "2\n" : "3\n");
            snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/shared_cpu_list", root, c, i);
            write_file(path, lists[i]);
        }
    }
}

TEST(topology_fake_tree)
{
    char root[64];
    make_tree(root, 1);
    int cpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, order[8], group[8];
    CHECK_EQ(abar__team_topology(root, cpus, 8, order, group), 0);
    int want[8] = { 0, 4, 2, 6, 1, 5, 3, 7 }; /* L3 groups, L2 pairs adjacent */
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(order[i], want[i]);
        CHECK_EQ(group[i], i / 4);
    }
    /* a subset of the CPUs (an affinity mask) */
    int some[4] = { 1, 2, 4, 7 };
    CHECK_EQ(abar__team_topology(root, some, 4, order, group), 0);
    CHECK(order[0] == 4 && order[1] == 2 && order[2] == 1 && order[3] == 7);
    CHECK(group[0] == 0 && group[1] == 0 && group[2] == 1 && group[3] == 1);
    remove_tree(root);
}

TEST(topology_fake_tree_l2_last_level)
{
    char root[64];
    make_tree(root, 0); /* no L3: the L2 pairs are the groups */
    int cpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, order[8], group[8];
    CHECK_EQ(abar__team_topology(root, cpus, 8, order, group), 0);
    int want[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(order[i], want[i]);
        CHECK_EQ(group[i], i / 2);
    }
    remove_tree(root);
}

TEST(topology_unreadable_falls_back)
{
    int cpus[3] = { 5, 2, 9 }, order[3], group[3];
    CHECK_EQ(abar__team_topology("/nonexistent/abar", cpus, 3, order, group), ENOENT);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(order[i], cpus[i]);
        CHECK_EQ(group[i], 0);
    }
    /* a tree with a malformed list falls back too */
    char root[64], path[512];
    make_tree(root, 1);
    snprintf(path, sizeof path, "%s/cpu3/cache/index2/shared_cpu_list", root);
    write_file(path, "garbage\n");
    int all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, o8[8], g8[8];
    CHECK_EQ(abar__team_topology(root, all, 8, o8, g8), ENOENT);
    for (int i = 0; i < 8; i++) CHECK(o8[i] == i && g8[i] == 0);
    remove_tree(root);
}

TEST(topology_real_machine)
{
    /* Whatever this machine says, the result is a permutation of the input
     * with groups numbered from 0 in order. */
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus[CPU_SETSIZE], n = 0, order[CPU_SETSIZE], group[CPU_SETSIZE];
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) cpus[n++] = c;
    int r = abar__team_topology("/sys/devices/system/cpu", cpus, n, order, group);
    CHECK(r == 0 || r == ENOENT);
    CHECK_EQ(group[0], 0);
    for (int i = 0; i < n; i++) {
        CHECK(CPU_ISSET(order[i], &set));
        for (int j = i + 1; j < n; j++) CHECK(order[i] != order[j]);
        if (i) CHECK(group[i] == group[i - 1] || group[i] == group[i - 1] + 1);
    }
}

TEST(place_inside_groups_first)
{
    int grp[8] = { 0, 0, 0, 0, 1, 1, 1, 1 }, slot[8], rank[8];
    CHECK_EQ(abar__team_place(8, 3, grp, slot, rank), 2);
    int ws[8] = { 0, 0, 0, -1, 1, 1, 1, -1 }, wr[8] = { 0, 1, 2, 0, 0, 1, 2, 0 };
    for (int i = 0; i < 8; i++) CHECK(slot[i] == ws[i] && rank[i] == wr[i]);
    /* clusters of 2 in groups of 3: the leftovers make a third cluster */
    int g3[6] = { 0, 0, 0, 1, 1, 1 };
    CHECK_EQ(abar__team_place(6, 2, g3, slot, rank), 3);
    int ws3[6] = { 0, 0, 2, 1, 1, 2 }, wr3[6] = { 0, 1, 0, 0, 1, 1 };
    for (int i = 0; i < 6; i++) CHECK(slot[i] == ws3[i] && rank[i] == wr3[i]);
    /* no topology: consecutive workers */
    CHECK_EQ(abar__team_place(7, 3, NULL, slot, rank), 2);
    int wsn[7] = { 0, 0, 0, 1, 1, 1, -1 };
    for (int i = 0; i < 7; i++) CHECK(slot[i] == wsn[i] && (slot[i] < 0 || rank[i] == i % 3));
    CHECK_EQ(abar__team_place(2, 3, NULL, slot, rank), 0);
}

/* Pinning: every pool thread but the caller runs on exactly one CPU. */
static _Atomic int pinned_ok, unpinned_seen;
static pthread_t caller;
static void pin_kernel(abar_thread_t *self, void *arg)
{
    (void)self;
    (void)arg;
    cpu_set_t set;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
    if (pthread_equal(pthread_self(), caller)) return;
    if (CPU_COUNT(&set) == 1) atomic_fetch_add(&pinned_ok, 1);
    else atomic_fetch_add(&unpinned_seen, 1);
}

TEST(pinning)
{
    caller = pthread_self();
    CHECK_EQ(abar_pool_configure(4, ABAR_POOL_PIN), 0);
    abar_launch_t cfg = { 2, 2, 2, 0 };
    CHECK_EQ(abar_run(&cfg, pin_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&pinned_ok), 3);
    CHECK_EQ(atomic_load(&unpinned_seen), 0);
    /* unpinned again after reconfiguring */
    CHECK_EQ(abar_pool_configure(4, 0), 0);
    CHECK_EQ(abar_run(&cfg, pin_kernel, NULL), 0);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK_EQ(atomic_load(&unpinned_seen), n > 1 ? 3 : 0);
}

TEST(pinning_from_env)
{
    caller = pthread_self();
    setenv("ABAR_POOL_PIN", "1", 1);
    setenv("ABAR_POOL_THREADS", "3", 1);
    abar_launch_t cfg = { 1, 3, 1, 0 };
    CHECK_EQ(abar_run(&cfg, pin_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&pinned_ok), 2);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
