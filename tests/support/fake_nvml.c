/* A stand-in libnvidia-ml for the unit tests: the NVML entry points NvmlTelemetry dlopens, with
 * fixed readings, one device at PCI bus id 0000:00:00.0, and a clock lock that is refused
 * (NVML_ERROR_NO_PERMISSION) for 1 MHz and otherwise shows up in the SM clock reading. */
#include <string.h>

typedef struct {
  unsigned int gpu, memory;
} fake_util;
typedef struct {
  unsigned long long total, free, used;
} fake_mem;

static unsigned locked_mhz = 0;
static int device_token = 1;

int nvmlInit_v2(void) {
  return 0;
}
int nvmlShutdown(void) {
  return 0;
}
const char* nvmlErrorString(int r) {
  return r == 4 ? "Insufficient Permissions" : r == 6 ? "Not Found" : "Unknown Error";
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** dev) {
  if (strcmp(bus, "0000:00:00.0") != 0) return 6;
  *dev = &device_token;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (i != 0) return 6;
  *dev = &device_token;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* dev, fake_util* u) {
  (void)dev;
  u->gpu = 100; /* a spin kernel reads as fully "utilized" */
  u->memory = 30;
  return 0;
}
int nvmlDeviceGetClockInfo(void* dev, int type, unsigned* mhz) {
  (void)dev;
  *mhz = type == 1 ? (locked_mhz ? locked_mhz : 1980) : 3201;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  (void)dev;
  *mw = 512000;
  return 0;
}
int nvmlDeviceGetTemperature(void* dev, int sensor, unsigned* c) {
  (void)dev;
  (void)sensor;
  *c = 55;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* dev, unsigned long long* m) {
  (void)dev;
  *m = 0x4; /* sw power cap */
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* dev, fake_mem* m) {
  (void)dev;
  m->total = 141000000000ULL;
  m->used = 1000000000ULL;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceSetGpuLockedClocks(void* dev, unsigned lo, unsigned hi) {
  (void)dev;
  if (lo == 1) return 4;
  locked_mhz = hi;
  return 0;
}
int nvmlDeviceResetGpuLockedClocks(void* dev) {
  (void)dev;
  locked_mhz = 0;
  return 0;
}
