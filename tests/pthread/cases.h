/*
 * cases.h - the runner the pthread tests share.  They run their cases in
 * one process (what they test is a process's own barriers: interposed,
 * linked, initialised in constructors), so tests/harness.h's process per
 * case is not theirs.
 *
 *   static int my_case(void) { REQUIRE(x == 1, "x is %d", x); return 1; }
 *   run("my_case", my_case);  ...  return cases_end();
 *
 * A case returns 1 (ok), 0 after REQUIRE (FAIL, with its reason) or SKIP
 * (not run, with its reason in `why`: never counted as passed).
 * cases_end() prints "N passed, M failed" (", K not run" when K > 0) and
 * returns the exit status.
 */
#ifndef ABAR_TESTS_PTHREAD_CASES_H
#define ABAR_TESTS_PTHREAD_CASES_H

#include <stdio.h>

static int passed, failed, not_run;
static char why[256];
#define REQUIRE(c, ...)                                                                            \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            snprintf(why, sizeof why, __VA_ARGS__);                                                \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)
#define SKIP -1

__attribute__((unused)) static void run(const char *name, int (*fn)(void))
{
    why[0] = 0;
    int r = fn();
    if (r == SKIP) not_run++, printf("case %s: not run (%s)\n", name, why);
    else if (r) passed++, printf("case %s: ok\n", name);
    else failed++, printf("case %s: FAIL (%s)\n", name, why);
    fflush(stdout);
}

__attribute__((unused)) static int cases_end(void)
{
    if (not_run) printf("%d passed, %d failed, %d not run\n", passed, failed, not_run);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
