/*
 * demo.c - runs the seed examples one after the other and says whether each
 * one's own check passed.  Each example is a separate program beside this one;
 * this driver starts every example_seed* program in its own directory, in
 * name order (example_seed000_split, example_seed001_psum, ...).
 *
 *   ./build/examples/example_demo
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { MAX_SEEDS = 64 };
static char *seeds[MAX_SEEDS];
static size_t nseeds;

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

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

    DIR *d = opendir(dir);
    if (d == NULL) {
        perror("demo: opendir");
        return 1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL && nseeds < MAX_SEEDS;) {
        if (strncmp(e->d_name, "example_seed", 12) != 0 || strchr(e->d_name, '.')) continue;
        seeds[nseeds++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(seeds, nseeds, sizeof seeds[0], by_name);
    if (nseeds == 0) {
        printf("demo: no example_seed* programs in %s\n", dir);
        return 1;
    }

    int failed = 0;
    for (size_t i = 0; i < nseeds; i++) {
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
    printf("demo: %d of %zu seed examples passed their own checks\n", (int)nseeds - failed, nseeds);
    for (size_t i = 0; i < nseeds; i++) free(seeds[i]);
    return failed ? 1 : 0;
}
