/*
 * gpu_snapshot.c - see gpu_snapshot.h.
 *
 * The NVML prototypes are declared here (the few we use, with the ABI of the
 * versioned symbols) instead of including nvml.h, so the file builds on
 * machines without the CUDA toolkit. Every NVML call is checked; a call that
 * fails leaves that one gauge out of the snapshot rather than exporting a 0.
 */
#include "server/telemetry/gpu_snapshot.h"

#include "model/pyexact/pyfloat.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/telemetry/log.h"

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef void *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* v2/v3 layout */

#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0 /* since the driver loaded (NVML_AGGREGATE_ECC: lifetime) */

static struct {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*driver)(char *, unsigned int);
    nvmlReturn_t (*pstate)(nvmlDevice_t, int *);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    nvmlReturn_t (*by_bus)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*index_of)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *); /* optional */

    pthread_t thread;
    int running;
    pthread_mutex_t lock;  /* guards snap and stop */
    pthread_cond_t wake;
    int stop;
    gpu_snapshot snap;
    char label[GPU_SNAPSHOT_MAX][32]; /* layad device label by NVML index (guarded by lock) */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void *sym(const char *a, const char *b)
{
    void *p = dlsym(G.lib, a);
    return p || !b ? p : dlsym(G.lib, b);
}

static void refresh(gpu_snapshot *s)
{
    memset(s, 0, sizeof *s);
    if (G.driver(s->driver, sizeof s->driver))
        s->driver[0] = 0;
    unsigned int n = 0;
    if (G.count(&n) || n == 0)
        return;
    if (n > GPU_SNAPSHOT_MAX)
        n = GPU_SNAPSHOT_MAX;
    unsigned int pid = (unsigned int)getpid();
    for (unsigned int i = 0; i < n; i++) {
        gpu_dev_snapshot *d = &s->dev[s->n];
        nvmlDevice_t h;
        if (G.handle(i, &h))
            continue;
        d->index = (int)i;
        pthread_mutex_lock(&G.lock);
        memcpy(d->device, G.label[i], sizeof d->device);
        pthread_mutex_unlock(&G.lock);
        if (G.name(h, d->name, sizeof d->name))
            snprintf(d->name, sizeof d->name, "unknown");
        if (G.uuid(h, d->uuid, sizeof d->uuid))
            d->uuid[0] = 0;
        int ps = -1;
        if (!G.pstate(h, &ps) && ps >= 0 && ps < 32)
            snprintf(d->pstate, sizeof d->pstate, "P%d", ps);
        nvmlUtilization_t u;
        if (!G.util(h, &u))
            d->have_util = 1, d->utilization_ratio = u.gpu / 100.0;
        nvmlMemory_t m;
        if (!G.mem(h, &m))
            d->have_mem = 1, d->memory_used_bytes = (double)m.used, d->memory_total_bytes = (double)m.total;
        unsigned int v;
        if (!G.temp(h, NVML_TEMPERATURE_GPU, &v))
            d->have_temp = 1, d->temperature_celsius = v;
        if (!G.power(h, &v))
            d->have_power = 1, d->power_watts = v / 1000.0;
        if (!G.clock(h, NVML_CLOCK_SM, &v))
            d->have_sm_clock = 1, d->sm_clock_hertz = v * 1e6;
        if (!G.clock(h, NVML_CLOCK_MEM, &v))
            d->have_mem_clock = 1, d->memory_clock_hertz = v * 1e6;
        unsigned long long ce, ue; /* NOT_SUPPORTED with ECC off: the family stays absent */
        if (G.ecc && !G.ecc(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ce) &&
            !G.ecc(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ue))
            d->have_ecc = 1, d->ecc_corrected = (double)ce, d->ecc_uncorrected = (double)ue;
        if (G.procs) {
            nvmlProcessInfo_t p[64];
            unsigned int np = 64;
            if (!G.procs(h, &np, p)) {
                d->have_proc_mem = 1;
                for (unsigned int k = 0; k < np && k < 64; k++)
                    if (p[k].pid == pid && p[k].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL)
                        d->process_memory_bytes += (double)p[k].usedGpuMemory;
            }
        }
        s->n++;
    }
    s->valid = s->n > 0;
}

static void *refresh_main(void *arg)
{
    (void)arg;
    gpu_snapshot *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return NULL;
    pthread_mutex_lock(&G.lock);
    while (!G.stop) {
        pthread_mutex_unlock(&G.lock);
        refresh(tmp);
        pthread_mutex_lock(&G.lock);
        G.snap = *tmp;
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 1;
        while (!G.stop && pthread_cond_timedwait(&G.wake, &G.lock, &t) == 0)
            ;
    }
    pthread_mutex_unlock(&G.lock);
    free(tmp);
    return NULL;
}

int gpu_snapshot_start(void)
{
    G.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!G.lib)
        return 0;
    G.init = sym("nvmlInit_v2", "nvmlInit");
    G.shutdown = sym("nvmlShutdown", NULL);
    G.count = sym("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    G.handle = sym("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    G.name = sym("nvmlDeviceGetName", NULL);
    G.uuid = sym("nvmlDeviceGetUUID", NULL);
    G.driver = sym("nvmlSystemGetDriverVersion", NULL);
    G.pstate = sym("nvmlDeviceGetPerformanceState", NULL);
    G.util = sym("nvmlDeviceGetUtilizationRates", NULL);
    G.mem = sym("nvmlDeviceGetMemoryInfo", NULL);
    G.temp = sym("nvmlDeviceGetTemperature", NULL);
    G.power = sym("nvmlDeviceGetPowerUsage", NULL);
    G.clock = sym("nvmlDeviceGetClockInfo", NULL);
    G.procs = sym("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
    G.by_bus = sym("nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    G.index_of = sym("nvmlDeviceGetIndex", NULL);
    G.ecc = sym("nvmlDeviceGetTotalEccErrors", NULL);
    if (!G.init || !G.shutdown || !G.count || !G.handle || !G.name || !G.uuid || !G.driver || !G.pstate ||
        !G.util || !G.mem || !G.temp || !G.power || !G.clock) {
        log_msg("warn", "NVML found but a symbol is missing; GPU metrics disabled");
        goto fail;
    }
    if (G.init()) {
        log_msg("warn", "nvmlInit failed; GPU metrics disabled");
        goto fail;
    }
    refresh(&G.snap);
    if (!G.snap.valid) {
        G.shutdown();
        goto fail;
    }
    G.stop = 0;
    if (pthread_create(&G.thread, NULL, refresh_main, NULL)) {
        G.shutdown();
        goto fail;
    }
    G.running = 1;
    return 1;
fail:
    memset(&G.snap, 0, sizeof G.snap);
    dlclose(G.lib);
    G.lib = NULL;
    return 0;
}

void gpu_snapshot_stop(void)
{
    if (!G.running)
        return;
    pthread_mutex_lock(&G.lock);
    G.stop = 1;
    pthread_cond_signal(&G.wake);
    pthread_mutex_unlock(&G.lock);
    pthread_join(G.thread, NULL);
    G.running = 0;
    G.shutdown();
    dlclose(G.lib);
    G.lib = NULL;
    memset(&G.snap, 0, sizeof G.snap);
    memset(G.label, 0, sizeof G.label);
}

int gpu_snapshot_label_device(const char *pci_bus_id, const char *label)
{
    if (!G.running)
        return 1; /* no NVML: no GPU series to label */
    if (!G.by_bus || !G.index_of)
        return -1;
    nvmlDevice_t h;
    unsigned int idx;
    if (G.by_bus(pci_bus_id, &h) || G.index_of(h, &idx) || idx >= GPU_SNAPSHOT_MAX)
        return -1;
    pthread_mutex_lock(&G.lock);
    snprintf(G.label[idx], sizeof G.label[idx], "%s", label);
    for (int i = 0; i < G.snap.n; i++) /* the current snapshot too, not only the next refresh */
        if (G.snap.dev[i].index == (int)idx)
            memcpy(G.snap.dev[i].device, G.label[idx], sizeof G.snap.dev[i].device);
    pthread_mutex_unlock(&G.lock);
    return 0;
}

int gpu_snapshot_get(gpu_snapshot *out)
{
    pthread_mutex_lock(&G.lock);
    *out = G.snap;
    pthread_mutex_unlock(&G.lock);
    return out->valid;
}

/* Label values from NVML are printable ASCII; drop anything that would need escaping. */
static void clean(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
            dst[n++] = *s;
    dst[n] = 0;
}

void gpu_snapshot_render(FILE *f)
{
    gpu_snapshot *s = malloc(sizeof *s);
    if (!s)
        return;
    if (gpu_snapshot_get(s))
        gpu_snapshot_render_snapshot(f, s);
    free(s);
}

/* The series labels of GPU i: index="N", plus device="D" when layad serves on it. */
typedef char gpu_labels[GPU_SNAPSHOT_MAX][80];

static void render_info(FILE *f, const gpu_snapshot *s, gpu_labels lab)
{
    char drv[96];
    clean(drv, sizeof drv, s->driver);
    fprintf(f, "# HELP laya_gpu_info GPU identity from NVML (value is always 1).\n# TYPE laya_gpu_info gauge\n");
    for (int i = 0; i < s->n; i++) {
        char dev[32];
        clean(dev, sizeof dev, s->dev[i].device);
        if (dev[0])
            snprintf(lab[i], sizeof lab[i], "index=\"%d\",device=\"%s\"", s->dev[i].index, dev);
        else
            snprintf(lab[i], sizeof lab[i], "index=\"%d\"", s->dev[i].index);
    }
    for (int i = 0; i < s->n; i++) {
        char name[96], uuid[96];
        clean(name, sizeof name, s->dev[i].name);
        clean(uuid, sizeof uuid, s->dev[i].uuid);
        fprintf(f, "laya_gpu_info{%s,name=\"%s\",uuid=\"%s\",driver=\"%s\",pstate=\"%s\"} 1\n", lab[i], name,
                uuid, drv, s->dev[i].pstate);
    }
}

static void render_gauges(FILE *f, const gpu_snapshot *s, gpu_labels lab)
{
    char num[32]; /* shortest round-trip digits: 0.98, not 0.97999999999999998 */
#define GAUGE(metric, help, have, field)                                                              \
    do {                                                                                              \
        int any = 0;                                                                                  \
        for (int i = 0; i < s->n; i++)                                                                \
            any |= s->dev[i].have;                                                                    \
        if (!any)                                                                                     \
            break;                                                                                    \
        fprintf(f, "# HELP " metric " " help "\n# TYPE " metric " gauge\n");                          \
        for (int i = 0; i < s->n; i++)                                                                \
            if (s->dev[i].have)                                                                       \
                fprintf(f, metric "{%s} %s\n", lab[i],                                                 \
                        (py_float_repr((double)s->dev[i].field, num), num));                          \
    } while (0)
    GAUGE("laya_gpu_utilization_ratio", "GPU busy fraction over the last sample period (NVML).", have_util,
          utilization_ratio);
    GAUGE("laya_gpu_memory_used_bytes", "Device memory in use, all processes.", have_mem, memory_used_bytes);
    GAUGE("laya_gpu_memory_total_bytes", "Device memory size.", have_mem, memory_total_bytes);
    GAUGE("laya_gpu_temperature_celsius", "GPU core temperature.", have_temp, temperature_celsius);
    GAUGE("laya_gpu_power_watts", "Board power draw.", have_power, power_watts);
    GAUGE("laya_gpu_sm_clock_hertz", "Current SM clock.", have_sm_clock, sm_clock_hertz);
    GAUGE("laya_gpu_memory_clock_hertz", "Current memory clock.", have_mem_clock, memory_clock_hertz);
    GAUGE("laya_process_gpu_memory_bytes", "Device memory used by this process.", have_proc_mem,
          process_memory_bytes);
#undef GAUGE
}

static void render_ecc(FILE *f, const gpu_snapshot *s, gpu_labels lab)
{
    int any_ecc = 0;
    for (int i = 0; i < s->n; i++)
        any_ecc |= s->dev[i].have_ecc;
    if (!any_ecc)
        return;
    char num[32];
    fprintf(f, "# HELP laya_gpu_ecc_errors_total Device memory ECC errors since the driver loaded (NVML volatile "
               "counters).\n# TYPE laya_gpu_ecc_errors_total counter\n");
    for (int i = 0; i < s->n; i++)
        if (s->dev[i].have_ecc) {
            fprintf(f, "laya_gpu_ecc_errors_total{%s,type=\"corrected\"} %s\n", lab[i],
                    (py_float_repr(s->dev[i].ecc_corrected, num), num));
            fprintf(f, "laya_gpu_ecc_errors_total{%s,type=\"uncorrected\"} %s\n", lab[i],
                    (py_float_repr(s->dev[i].ecc_uncorrected, num), num));
        }
}

void gpu_snapshot_render_snapshot(FILE *f, const gpu_snapshot *s)
{
    if (!s->valid)
        return;
    gpu_labels lab;
    render_info(f, s, lab);
    render_gauges(f, s, lab);
    render_ecc(f, s, lab);
}
