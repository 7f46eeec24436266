/* rivals.h - the one interface every barrier under test is driven through. */
#ifndef ABAR_BENCH_RIVALS_H
#define ABAR_BENCH_RIVALS_H

typedef struct bimpl {
    const char *name;
    int split;              /* has arrive / wait (token kept in the thread state) */
    int completion;         /* runs a completion function itself (else: emulated) */
    void *(*create)(unsigned n, void (*fn)(void *), void *arg); /* fn used if completion */
    void (*destroy)(void *b);
    void *(*ts_new)(void *b, unsigned tid);  /* per-thread state, made in that thread */
    void (*ts_free)(void *ts);
    void (*aw)(void *b, void *ts);           /* arrive_and_wait */
    void (*arrive)(void *b, void *ts);       /* split only */
    void (*wait)(void *b, void *ts);         /* split only */
} bimpl_t;

#ifdef ABAR_BENCH_HAVE_CK
extern const bimpl_t ck_impls[];
extern const unsigned ck_nimpls;
#endif

#ifdef ABAR_BENCH_HAVE_STD
void *stdb_create(unsigned n, void (*fn)(void *), void *arg);
void stdb_destroy(void *b);
void *stdb_thread_state(void *b, unsigned tid);
void stdb_thread_free(void *ts);
void stdb_arrive_and_wait(void *b, void *ts);
void stdb_arrive(void *b, void *ts);
void stdb_wait(void *b, void *ts);
void *abarcpp_create(unsigned n, void (*fn)(void *), void *arg);
void abarcpp_destroy(void *b);
void *abarcpp_thread_state(void *b, unsigned tid);
void abarcpp_thread_free(void *ts);
void abarcpp_arrive_and_wait(void *b, void *ts);
void abarcpp_arrive(void *b, void *ts);
void abarcpp_wait(void *b, void *ts);
#endif

#endif
