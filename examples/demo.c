/*
 * demo.c - runs the seed examples one after the other and says whether each
 * one's own check passed.  Each example is a separate program beside this one;
 * this driver starts every example_seed* program in its own directory, in
 * name order (example_seed000_split, example_seed001_psum, ...).
 *
 *   ./build/examples/example_demo
 *   example_demo LAUNCHER [ARG...]   runs each as `LAUNCHER ARG... PROGRAM`
 *
 * The launcher is for a cross build: the examples are then programs for
 * another machine, which this process cannot start itself (under qemu-user
 * the kernel has no binfmt entry for them), so CTest passes its
 * CMAKE_CROSSCOMPILING_EMULATOR (e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu)
 * and every example runs through it, as the demo itself does.
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

int main(int argc, char **argv)
{
    /* argv[1..]: the launcher and its arguments, if any */
    int nlaunch = argc > 1 ? argc - 1 : 0;
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
        char *args[64 + 2];
        int na = 0;
        for (int a = 0; a < nlaunch && a < 64; a++) args[na++] = argv[1 + a];
        args[na++] = path;
        args[na] = NULL;
        pid_t pid;
        /* a launcher is looked up in PATH; an example is run by its path */
        int r = nlaunch ? posix_spawnp(&pid, args[0], NULL, NULL, args, environ)
                        : posix_spawn(&pid, path, NULL, NULL, args, environ);
        int status = 0;
        if (r == 0) {
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        }
        if (r != 0) {
            printf("demo: cannot run %s: %s\n", args[0], strerror(r));
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
