/*
 * harness.h - a tiny test runner: every case runs in its own process with a
 * time limit, so a crash or a hang is a named failure, not a stuck suite.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_EQ(abar_wait(&b, t), 0); }
 *   int main(int argc, char **argv) { return harness_main(argc, argv); }
 *
 * `prog` runs every case; `prog name...` runs the named ones; `prog --list`
 * lists them.  ABAR_TEST_TIMEOUT (seconds, default 20) sets the limit.
 * Ends with the line "N passed, M failed", or "N passed, M failed, K not run"
 * when K > 0 cases were not run (SKIP_IF below); a case not run is never
 * counted as passed.
 *
 * Running under an emulator (scripts/aarch64_check.sh sets these):
 *   ABAR_TEST_SLOW=S       the target runs about S times slower than native:
 *                          harness_slow() returns S (default 1), and cases
 *                          that run for a wall time scale that time by it,
 *                          so they still reach their minimum amount of work.
 *   ABAR_TEST_QEMU_USER=1  running under qemu-user (harness_qemu_user()).
 *   SKIP_IF(cond, "why")   inside a case: if cond, the case stops, is printed
 *                          "SKIP name  not run: why" and counted as not run.
 *   TEST_NOT_HERE(name, "why")  a case this system cannot run (its body is
 *                          left out where it does not compile): registered,
 *                          and reported as not run with the reason.
 *
 * Where there is no fork (Windows: HARNESS_FORK is 0) every case runs in a
 * new process all the same: the program starts itself again as
 * `prog --case name` (which runs that one case and exits 0, 1 or 77) and
 * ends it at the time limit.
 */
#ifndef ABAR_TEST_HARNESS_H
#define ABAR_TEST_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#  define HARNESS_FORK 0
#  include <process.h>
#  include <pthread.h>
#  include <windows.h>
#  undef far  /* windef.h's, a name the tests use */
#  undef near
#  define pthread_tryjoin_np(t, ret) _pthread_tryjoin((t), (ret)) /* winpthreads' name */
/* POSIX's environment calls, which the C runtime names otherwise */
__attribute__((unused)) static int setenv(const char *name, const char *value, int overwrite)
{
    if (!overwrite && getenv(name)) return 0;
    return _putenv_s(name, value) == 0 ? 0 : -1;
}
__attribute__((unused)) static int unsetenv(const char *name) { return _putenv_s(name, "") == 0 ? 0 : -1; }
#else
#  define HARNESS_FORK 1
#  include <sys/mman.h>
#  include <sys/wait.h>
#endif

typedef void harness_fn(void);
struct harness_case { const char *name; harness_fn *fn; };

#define HARNESS_MAX_CASES 512
static struct harness_case harness_cases[HARNESS_MAX_CASES];
static int harness_ncases;

#define TEST(name)                                                         \
    static void test_##name(void);                                         \
    __attribute__((constructor)) static void harness_reg_##name(void) {    \
        if (harness_ncases < HARNESS_MAX_CASES)                            \
            harness_cases[harness_ncases++] =                              \
                (struct harness_case){#name, test_##name};                 \
    }                                                                      \
    static void test_##name(void)

/* Where a case that is not run leaves its reason (a shared page, so a stray
 * exit status alone can never make a case count as not run). */
enum { HARNESS_SKIP_STATUS = 77, HARNESS_SKIP_LEN = 200 };
static char *harness_skip_why;
static const char *harness_case_name; /* the case this process runs */

__attribute__((unused)) static int harness_slow(void)
{
    const char *e = getenv("ABAR_TEST_SLOW");
    int s = e && *e ? atoi(e) : 1;
    return s >= 1 ? s : 1;
}

__attribute__((unused)) static int harness_qemu_user(void)
{
    const char *e = getenv("ABAR_TEST_QEMU_USER");
    return e && *e && strcmp(e, "0") != 0;
}

#define SKIP_IF(cond, why)                                                 \
    do {                                                                   \
        if ((cond) && harness_skip_why != NULL) {                          \
            snprintf(harness_skip_why, HARNESS_SKIP_LEN, "%s", (why));     \
            if (!HARNESS_FORK) /* the case's own process says it */        \
                printf("SKIP %-40s not run: %s\n", harness_case_name,      \
                       harness_skip_why);                                  \
            fflush(stdout);                                                \
            fflush(stderr);                                                \
            _exit(HARNESS_SKIP_STATUS);                                    \
        }                                                                  \
    } while (0)

#define TEST_NOT_HERE(name, why) TEST(name) { SKIP_IF(1, why); }

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                      \
            fflush(stderr);                                                \
            _exit(1);                                                      \
        }                                                                  \
    } while (0)

#define CHECK_EQ(a, b)                                                     \
    do {                                                                   \
        long long harness_a_ = (long long)(a), harness_b_ = (long long)(b);\
        if (harness_a_ != harness_b_) {                                    \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n",\
                    __FILE__, __LINE__, #a, harness_a_, #b, harness_b_);   \
            fflush(stderr);                                                \
            _exit(1);                                                      \
        }                                                                  \
    } while (0)

static double harness_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if !HARNESS_FORK
static const char *harness_self; /* argv[0] */

/* Runs one case in a new process of this program (`--case name`); returns
 * 1 if it passed, -1 if it was not run (SKIP_IF: the case printed its
 * line), 0 if it failed. */
static int harness_run_one(const struct harness_case *c, int timeout_s)
{
    double t0 = harness_now();
    fflush(stdout);
    char self[1024];
    snprintf(self, sizeof self, "\"%s\"", harness_self);
    const char *args[] = { self, "--case", c->name, NULL };
    /* Under Wine on a loaded machine, starting a process fails now and
     * then (_spawnv: EINVAL) with nothing wrong in the case; it is tried
     * again, and only a start that fails five times fails the case. */
    intptr_t h = -1;
    for (int attempt = 1; h == -1; attempt++) {
        h = _spawnv(_P_NOWAIT, harness_self, args);
        if (h != -1) break;
        int err = errno;
        if (attempt == 5) {
            printf("FAIL %-40s its process could not be started: %s\n", c->name,
                   strerror(err));
            return 0;
        }
        fprintf(stderr, "harness: starting %s failed (%s), trying again\n", c->name,
                strerror(err));
        Sleep(200u * (unsigned)attempt);
    }
    DWORD st = 1;
    if (WaitForSingleObject((HANDLE)h, (DWORD)timeout_s * 1000u) != WAIT_OBJECT_0) {
        TerminateProcess((HANDLE)h, 1);
        WaitForSingleObject((HANDLE)h, INFINITE);
        CloseHandle((HANDLE)h);
        printf("FAIL %-40s timed out after %d s\n", c->name, timeout_s);
        return 0;
    }
    GetExitCodeProcess((HANDLE)h, &st);
    CloseHandle((HANDLE)h);
    double dt = harness_now() - t0;
    if (st == HARNESS_SKIP_STATUS) return -1;
    if (st == 0) {
        printf("PASS %-40s %7.3f s\n", c->name, dt);
        return 1;
    }
    printf("FAIL %-40s exit status %lu (0x%lx)\n", c->name, (unsigned long)st, (unsigned long)st);
    return 0;
}
#else
/* Runs one case in a child; returns 1 if it passed, -1 if it was not run
 * (SKIP_IF), 0 if it failed. */
static int harness_run_one(const struct harness_case *c, int timeout_s)
{
    double t0 = harness_now();
    if (harness_skip_why != NULL) harness_skip_why[0] = '\0';
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 0; }
    if (pid == 0) {
        alarm((unsigned)timeout_s); /* SIGALRM kills a hung case */
        harness_case_name = c->name;
        c->fn();
        /* exit, not _exit: sanitizers report (and set the status) at exit */
        exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    double dt = harness_now() - t0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == HARNESS_SKIP_STATUS && harness_skip_why != NULL &&
        harness_skip_why[0] != '\0') {
        harness_skip_why[HARNESS_SKIP_LEN - 1] = '\0';
        printf("SKIP %-40s not run: %s\n", c->name, harness_skip_why);
        return -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("PASS %-40s %7.3f s\n", c->name, dt);
        return 1;
    }
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        printf("FAIL %-40s timed out after %d s\n", c->name, timeout_s);
    else if (WIFSIGNALED(st))
        printf("FAIL %-40s killed by signal %d (%s)\n", c->name, WTERMSIG(st),
               strsignal(WTERMSIG(st)));
    else
        printf("FAIL %-40s exit status %d\n", c->name, WEXITSTATUS(st));
    return 0;
}
#endif

static int harness_main(int argc, char **argv)
{
    const char *to = getenv("ABAR_TEST_TIMEOUT");
    int timeout_s = to ? atoi(to) : 20;
    if (timeout_s <= 0) timeout_s = 20;
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < harness_ncases; i++) puts(harness_cases[i].name);
        return 0;
    }
#if HARNESS_FORK
    void *page = mmap(NULL, HARNESS_SKIP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    harness_skip_why = page == MAP_FAILED ? NULL : (char *)page;
#else
    static char why[HARNESS_SKIP_LEN];
    harness_skip_why = why;
    harness_self = argv[0];
    if (argc == 3 && strcmp(argv[1], "--case") == 0) { /* one case, in this process */
        for (int i = 0; i < harness_ncases; i++)
            if (strcmp(argv[2], harness_cases[i].name) == 0) {
                harness_case_name = harness_cases[i].name;
                harness_cases[i].fn();
                fflush(stdout);
                exit(0);
            }
        fprintf(stderr, "no case %s\n", argv[2]);
        return 1;
    }
#endif
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < harness_ncases; i++) {
        int wanted = argc <= 1;
        for (int a = 1; a < argc && !wanted; a++)
            wanted = strcmp(argv[a], harness_cases[i].name) == 0;
        if (!wanted) continue;
        int r = harness_run_one(&harness_cases[i], timeout_s);
        if (r > 0) passed++;
        else if (r < 0) skipped++;
        else failed++;
    }
    if (skipped) printf("%d passed, %d failed, %d not run\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

#endif
