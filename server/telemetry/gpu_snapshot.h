/*
 * gpu_snapshot.h - what `nvidia-smi` shows, for /metrics and /health.
 *
 * NVML is loaded with dlopen("libnvidia-ml.so.1") at start, never linked, so
 * the same binary runs on machines without a driver: there gpu_snapshot_start
 * reports "unavailable" and no GPU family is exported (never fake values).
 * A background thread refreshes one snapshot per second; readers copy it
 * under a mutex, so no NVML call ever runs on a request path.
 */
#ifndef LAYAD_SERVER_GPU_SNAPSHOT_H
#define LAYAD_SERVER_GPU_SNAPSHOT_H

#include <stdio.h>

#define GPU_SNAPSHOT_MAX 16

typedef struct gpu_dev_snapshot {
    int index;                  /* NVML index (all GPUs of the host, whatever CUDA_VISIBLE_DEVICES says) */
    char device[32];            /* layad's device label when this process serves on it, else "" */
    char name[96], uuid[96], pstate[8];
    int have_util, have_mem, have_temp, have_power, have_sm_clock, have_mem_clock, have_proc_mem, have_ecc;
    double utilization_ratio;   /* 0..1 */
    double memory_used_bytes, memory_total_bytes;
    double temperature_celsius;
    double power_watts;
    double sm_clock_hertz, memory_clock_hertz;
    double process_memory_bytes; /* this process's memory on the device */
    double ecc_corrected, ecc_uncorrected; /* volatile ECC error counts (since the driver loaded) */
} gpu_dev_snapshot;

typedef struct gpu_snapshot {
    int valid;                  /* at least one refresh succeeded */
    char driver[80];
    int n;
    gpu_dev_snapshot dev[GPU_SNAPSHOT_MAX];
} gpu_snapshot;

/* Loads NVML and starts the refresh thread. Returns 1 when NVML is usable and
 * sees at least one GPU, 0 otherwise (not an error: the families stay off). */
int gpu_snapshot_start(void);
void gpu_snapshot_stop(void);

/* Marks the GPU at PCI bus id pci_bus_id (as cudaDeviceGetPCIBusId writes
 * it) as the one layad serves on under `label` (its CUDA ordinal, the
 * device label of laya_inference_seconds): its laya_gpu_* series then carry
 * device="label" as well as NVML's index, which differs from the CUDA
 * ordinal under CUDA_VISIBLE_DEVICES. Call after gpu_snapshot_start, once
 * per device. 0: labelled; 1: NVML is off (nothing exported to label);
 * -1: NVML does not know the bus id. */
int gpu_snapshot_label_device(const char *pci_bus_id, const char *label);

/* Copies the latest snapshot; returns its valid flag. */
int gpu_snapshot_get(gpu_snapshot *out);

/* Appends the laya_gpu_* families to f (nothing when no snapshot is valid). */
void gpu_snapshot_render(FILE *f);

/* Appends the families of snapshot s (nothing when !s->valid): what
 * gpu_snapshot_render does with the latest one. Tests render a synthetic
 * snapshot with it to see every family without a GPU. */
void gpu_snapshot_render_snapshot(FILE *f, const gpu_snapshot *s);

#endif
