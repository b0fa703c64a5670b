/*
 * process.c - see process.h.
 *
 * Names, types and units are those of the Go and Python clients, so the
 * dashboards written for any Prometheus-instrumented process work unchanged.
 * Reading costs one small file, one directory listing and getrlimit per
 * scrape; nothing here runs on the request path.
 */
#include "server/telemetry/process.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "model/pyexact/pyfloat.h"

typedef struct proc_stat {
    unsigned long long utime, stime, starttime; /* clock ticks */
    unsigned long long vsize;                   /* bytes */
    long long rss;                              /* pages */
} proc_stat;

/* /proc/self/stat, fields 14, 15, 22, 23, 24 (proc(5)). The command name
 * (field 2) may hold spaces and parentheses: parsing starts after its last ')'. */
static int read_stat(proc_stat *s)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ')': field 3 (state) is the first; skip to field 14 */
    int got = sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                     &s->utime, &s->stime, &s->starttime, &s->vsize, &s->rss);
    return got == 5 ? 0 : -1;
}

static double clock_s(clockid_t c)
{
    struct timespec t;
    if (clock_gettime(c, &t))
        return -1;
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

double process_start_time(void)
{
    proc_stat s;
    long tck = sysconf(_SC_CLK_TCK);
    double now = clock_s(CLOCK_REALTIME), up = clock_s(CLOCK_BOOTTIME);
    if (read_stat(&s) || tck <= 0 || now < 0 || up < 0)
        return -1;
    return now - up + (double)s.starttime / (double)tck;
}

/* Open descriptors: the entries of /proc/self/fd but the one listing it. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != self)
            n++;
    closedir(d);
    return n;
}

static void gauge(FILE *f, const char *name, const char *type, const char *help, double v)
{
    char num[32];
    py_float_repr(v, num);
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, type, name, num);
}

void process_render(FILE *f, double start_time)
{
    proc_stat s;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (!read_stat(&s) && tck > 0 && page > 0) {
        gauge(f, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
              (double)(s.utime + s.stime) / (double)tck);
        gauge(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
              (double)s.rss * (double)page);
        gauge(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", (double)s.vsize);
    }
    long fds = open_fds();
    if (fds >= 0)
        gauge(f, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
        gauge(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.", (double)rl.rlim_cur);
    if (start_time >= 0)
        gauge(f, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
              start_time);
}
