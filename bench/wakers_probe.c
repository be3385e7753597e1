/* How late deadlines are served when THREADS threads wait for each one and the
 * first awake serves it (issue 25; docs/PERFORMANCE.md, "send on a busy
 * machine"; l4slab-udp-driver's DriverConfig::wakers): every thread sleeps to
 * the next unserved CLOCK_MONOTONIC deadline (PERIOD_US apart, 1 ns timer
 * slack); the first to wake claims every deadline that has passed and
 * busy-works WORK_US for each. Each thread is pinned to CPU i if PIN is 1.
 * Prints the lateness of the deadlines' service (wake-up lateness plus the
 * run-queue wait) and how many were served more than 1 ms late: the time a
 * pacer's link would idle. Unlike sched_probe.c, a deadline missed during a
 * hold counts, not only the wake-up.
 *
 *   gcc -O2 -pthread -o /tmp/wakers_probe bench/wakers_probe.c
 *   /tmp/wakers_probe 250 30 3 1 0; /tmp/wakers_probe 250 30 3 2 0
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static int64_t period, work, n, t0;
static int pin;
static _Atomic int64_t next; /* the first deadline not served yet */
static int64_t *late;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void *waker(void *arg) {
    long id = (long)arg;
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    if (pin) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(id, &s);
        sched_setaffinity(0, sizeof s, &s);
    }
    for (;;) {
        int64_t i = atomic_load(&next);
        if (i >= n) return NULL;
        int64_t d = t0 + (i + 1) * period;
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        int64_t s = now_ns();
        for (;;) { /* claim every deadline that has passed */
            int64_t j = atomic_load(&next);
            if (j >= n) return NULL;
            int64_t dj = t0 + (j + 1) * period;
            if (dj > s) break;
            if (atomic_compare_exchange_strong(&next, &j, j + 1)) {
                late[j] = s - dj;
                while (now_ns() - s < work) {
                }
            }
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s PERIOD_US WORK_US SECS THREADS PIN\n", argv[0]);
        return 2;
    }
    period = atoll(argv[1]) * 1000;
    work = atoll(argv[2]) * 1000;
    int64_t secs = atoll(argv[3]);
    int threads = atoi(argv[4]);
    pin = atoi(argv[5]);
    if (period <= 0 || work < 0 || secs <= 0 || threads < 1 || threads > 64) {
        fprintf(stderr, "PERIOD_US and SECS must be positive, THREADS 1 to 64\n");
        return 2;
    }
    n = secs * 1000000000LL / period;
    late = calloc(n, sizeof *late);
    if (!late) return 1;
    pthread_t th[64];
    t0 = now_ns();
    for (long i = 0; i < threads; i++) pthread_create(&th[i], NULL, waker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    qsort(late, n, sizeof *late, cmp);
    int64_t over = 0;
    for (int64_t i = 0; i < n; i++) over += late[i] > 1000000;
    printf("threads %d, pinned %d: lateness p50 %.0f p99 %.0f us, max %.1f ms; "
           "served > 1 ms late: %lld of %lld deadlines (%.1f %%)\n",
           threads, pin, late[n / 2] / 1e3, late[n * 99 / 100] / 1e3, late[n - 1] / 1e6,
           (long long)over, (long long)n, 100.0 * over / n);
    return 0;
}
