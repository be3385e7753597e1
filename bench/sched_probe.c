/* How long a normal-priority thread that sleeps and wakes often waits for a
 * CPU beside CPU-bound processes (issue 25; docs/PERFORMANCE.md, "send on a
 * busy machine"): sleeps to absolute CLOCK_MONOTONIC deadlines PERIOD_US
 * apart (1 ns timer slack), busy-works WORK_US after each, for SECS seconds,
 * with the fair-scheduler slice at SLICE_US (sched_setattr sched_runtime,
 * Linux 6.12+; 0: the default). Prints the wake-up lateness (the timer's
 * lateness plus the run-queue wait), how many wake-ups were more than 1 ms
 * late, and the thread's CPU time and run-queue wait (schedstat).
 *
 *   gcc -O2 -o /tmp/sched_probe bench/sched_probe.c
 *   /tmp/sched_probe 250 30 3 0; /tmp/sched_probe 250 30 3 100
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct attr { /* struct sched_attr, SCHED_ATTR_SIZE_VER0 */
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t prio;
    uint64_t runtime, deadline, period;
};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void schedstat(uint64_t *run, uint64_t *wait) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    *run = *wait = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", run, wait) != 2) *run = *wait = 0;
        fclose(f);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s PERIOD_US WORK_US SECS SLICE_US\n", argv[0]);
        return 2;
    }
    int64_t period = atoll(argv[1]) * 1000, work = atoll(argv[2]) * 1000;
    int64_t secs = atoll(argv[3]), slice = atoll(argv[4]);
    if (period <= 0 || work < 0 || secs <= 0 || slice < 0) {
        fprintf(stderr, "PERIOD_US and SECS must be positive\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    struct attr a;
    memset(&a, 0, sizeof a);
    syscall(SYS_sched_getattr, 0, &a, sizeof a, 0);
    if (slice > 0) {
        a.size = sizeof a;
        a.runtime = (uint64_t)slice * 1000;
        if (syscall(SYS_sched_setattr, 0, &a, 0)) perror("sched_setattr");
        syscall(SYS_sched_getattr, 0, &a, sizeof a, 0);
    }
    int64_t n = secs * 1000000000LL / period;
    int64_t *late = malloc(n * sizeof *late);
    if (!late) return 1;
    uint64_t r0, w0, r1, w1;
    schedstat(&r0, &w0);
    int64_t t = now_ns();
    for (int64_t i = 0; i < n; i++) {
        t += period;
        struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        int64_t s = now_ns();
        late[i] = s - t;
        if (late[i] > period) t = s; /* no catch-up */
        while (now_ns() - s < work) {
        }
    }
    schedstat(&r1, &w1);
    qsort(late, n, sizeof *late, cmp);
    int64_t over = 0;
    for (int64_t i = 0; i < n; i++) over += late[i] > 1000000;
    printf("period %lld us, work %lld us, slice %llu us: lateness p50 %.0f p99 %.0f us, "
           "max %.1f ms; > 1 ms: %lld of %lld wake-ups (%.1f %%); run %.0f ms, "
           "run-queue wait %.0f ms\n",
           (long long)(period / 1000), (long long)(work / 1000),
           (unsigned long long)(a.runtime / 1000), late[n / 2] / 1e3,
           late[n * 99 / 100] / 1e3, late[n - 1] / 1e6, (long long)over, (long long)n,
           100.0 * over / n, (r1 - r0) / 1e6, (w1 - w0) / 1e6);
    return 0;
}
