/* main.c - a program that uses an installed abar: four threads, a completion
 * function, split arrive/wait.  Exits 0 only if every phase added up. */
#include <abar.h>

#include <pthread.h>
#include <stdio.h>

enum { T = 4, PHASES = 1000 };

static abar_t bar;
static long slot[T], total, completions;

static void complete(void *arg)
{
    long *sum = arg;
    for (int i = 0; i < T; i++) *sum += slot[i];
    completions++;
}

static void *worker(void *p)
{
    long rank = (long)p;
    for (long i = 0; i < PHASES; i++) {
        slot[rank] = i + rank;
        abar_token_t t = abar_arrive(&bar);
        if (abar_wait(&bar, t) != 0) return (void *)1;
    }
    return NULL;
}

int main(void)
{
    abar_attr_t attr = { .completion = complete, .arg = &total, .flags = 0 };
    if (abar_init(&bar, T, &attr) != 0) return 1;
    pthread_t th[T];
    for (long i = 0; i < T; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    int bad = 0;
    for (int i = 0; i < T; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad |= r != NULL;
    }
    long want = (long)T * PHASES * (PHASES - 1) / 2 + (long)PHASES * T * (T - 1) / 2;
    bad |= total != want || completions != PHASES || abar_phase(&bar) != PHASES;
    bad |= abar_destroy(&bar) != 0;
    printf("abar consumer: %ld phases, total %ld (want %ld): %s\n", completions, total, want,
           bad ? "FAIL" : "OK");
    return bad;
}
