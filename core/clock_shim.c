/*
 * lockharness clock shim: an LD_PRELOAD library that skews the wall clock of one process.
 *
 * It replaces clock_gettime (REALTIME clocks only), gettimeofday and time. Every clock is
 * read from the kernel with syscall(SYS_clock_gettime, ...): no dlsym(RTLD_NEXT), because
 * dlsym allocates, and in a jemalloc-linked redis-server the allocator's own start-up reads
 * the clock, which is how libfaketime deadlocks there. No malloc, no stdio, no locks here.
 *
 * Control file (little-endian, native alignment, 40 bytes; mirrored in faults/clock.py):
 *
 *   off  type     field
 *     0  uint32   magic           0x4b43484c ("LHCK" in memory); anything else: pass through
 *     4  uint32   version         1
 *     8  uint64   seq             seqlock: odd while the writer updates the three fields below
 *    16  int64    offset_ns       added to the real clock
 *    24  double   rate            how fast the fake clock runs relative to the real one
 *    32  int64    anchor_real_ns  real REALTIME at which the current rate started
 *
 *   fake = real + offset_ns + (real - anchor_real_ns) * (rate - 1)
 *
 * The file is named by $LOCKHARNESS_CLOCK_CONTROL and mapped once, in a constructor, before
 * any thread exists. Unset variable, missing or short file, or wrong magic: real time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LHCK_MAGIC 0x4b43484cu
#define LHCK_VERSION 1u
/* A writer that died mid-update leaves seq odd forever; never spin the server to death. */
#define LHCK_MAX_TRIES 100000

struct lhck_control {
    uint32_t magic;
    uint32_t version;
    uint64_t seq;
    int64_t offset_ns;
    uint64_t rate_bits; /* a double; loaded as bits so the load is a plain atomic word */
    int64_t anchor_real_ns;
};

_Static_assert(sizeof(struct lhck_control) == 40, "layout must match faults/clock.py");

static const volatile struct lhck_control *lhck_ctl;

__attribute__((constructor)) static void lhck_map(void)
{
    const char *path = getenv("LOCKHARNESS_CLOCK_CONTROL");
    if (path == NULL || path[0] == '\0')
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    /* Mapping past the end of a short file would SIGBUS on the first read. */
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(struct lhck_control)) {
        void *map = mmap(NULL, sizeof(struct lhck_control), PROT_READ, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) {
            const struct lhck_control *ctl = map;
            if (ctl->magic == LHCK_MAGIC && ctl->version == LHCK_VERSION)
                lhck_ctl = ctl;
            else
                munmap(map, sizeof(struct lhck_control));
        }
    }
    close(fd); /* the mapping outlives the descriptor */
}

static int lhck_kernel_clock(clockid_t clk, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* Seqlock read of (offset, rate, anchor); 0 when consistent, -1 when the writer is stuck. */
static int lhck_read(int64_t *offset, double *rate, int64_t *anchor)
{
    const volatile struct lhck_control *c = lhck_ctl;
    for (int i = 0; i < LHCK_MAX_TRIES; i++) {
        uint64_t s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1u)
            continue;
        int64_t o = __atomic_load_n(&c->offset_ns, __ATOMIC_RELAXED);
        uint64_t r = __atomic_load_n(&c->rate_bits, __ATOMIC_RELAXED);
        int64_t a = __atomic_load_n(&c->anchor_real_ns, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&c->seq, __ATOMIC_RELAXED) == s1) {
            *offset = o;
            memcpy(rate, &r, sizeof *rate);
            *anchor = a;
            return 0;
        }
    }
    return -1;
}

static int64_t lhck_fake_ns(int64_t real)
{
    int64_t offset, anchor;
    double rate;
    if (lhck_ctl == NULL || lhck_read(&offset, &rate, &anchor) != 0)
        return real;
    int64_t fake = real + offset;
    if (rate != 1.0)
        fake += (int64_t)((double)(real - anchor) * (rate - 1.0));
    return fake;
}

static int64_t lhck_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void lhck_to_timespec(int64_t ns, struct timespec *ts)
{
    int64_t sec = lhck_floor_div(ns, 1000000000);
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)(ns - sec * 1000000000);
}

/* Real wall clock in ns, skewed. */
static int lhck_realtime(clockid_t clk, struct timespec *ts)
{
    struct timespec real;
    int rc = lhck_kernel_clock(clk, &real);
    if (rc != 0)
        return rc;
    int64_t ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
    lhck_to_timespec(lhck_fake_ns(ns), ts);
    return 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)
        return lhck_realtime(clk, ts);
    /* MONOTONIC, BOOTTIME, CPU-time clocks: untouched (Redis's timers run on these). */
    return lhck_kernel_clock(clk, ts);
}

int gettimeofday(struct timeval *restrict tv_arg, void *restrict tz)
{
    /* glibc declares tv nonnull, which would let gcc delete the NULL check below; the
     * kernel accepts NULL, so keep the check honest through a volatile copy. */
    struct timeval *volatile tv_copy = tv_arg;
    struct timeval *tv = tv_copy;
    if (tz != NULL)
        memset(tz, 0, sizeof(struct timezone)); /* obsolete; Linux reports UTC, no DST */
    if (tv == NULL)
        return 0;
    struct timespec ts;
    int rc = lhck_realtime(CLOCK_REALTIME, &ts);
    if (rc != 0)
        return rc;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (lhck_realtime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
