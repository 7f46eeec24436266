/*
 * demo.c - runs the seed examples one after the other and says whether each
 * one's own check passed.  Each example is a separate program beside this one
 * (example_seed000_split, ...); this driver only starts them.
 *
 *   ./build/examples/example_demo
 */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *const seeds[] = {
    "example_seed000_split",          /* seed 000: split arrive/wait hides independent work */
    "example_seed001_psum",           /* seed 001: completion function */
    "example_seed002_double_buffer",  /* seed 002: producer/consumer double buffer */
};

int main(void)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) {
        perror("demo: readlink /proc/self/exe");
        return 1;
    }
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';

    int failed = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i]);
        printf("==== %s\n", seeds[i]);
        fflush(stdout);
        char *argv[] = { path, NULL };
        pid_t pid;
        int r = posix_spawn(&pid, path, NULL, NULL, argv, environ);
        int status = 0;
        if (r == 0) {
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        }
        if (r != 0) {
            printf("demo: cannot run %s: %s\n", path, strerror(r));
            failed++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("demo: %s FAILED (%s %d)\n", seeds[i], WIFEXITED(status) ? "exit" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            failed++;
        }
        printf("\n");
    }
    printf("demo: %d of %zu seed examples passed their own checks\n",
           (int)(sizeof seeds / sizeof seeds[0]) - failed, sizeof seeds / sizeof seeds[0]);
    return failed ? 1 : 0;
}
