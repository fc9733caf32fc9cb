/* rt_stream: streams and events. */
#include <string.h>

#include "rt.h"

int rt_stream_create(RtStream *s) {
  memset(s, 0, sizeof *s);
  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  CUstream h = NULL;
  CUresult r = d->f_cuStreamCreate(&h, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return rt_result(dev, r, "cuStreamCreate", NULL);
  s->handle = h;
  s->device = dev;
  s->gen = rt_generation(dev);
  return RT_OK;
}

void rt_stream_release(RtStream *s) {
  if (!s || s->released) return;
  s->released = 1;
  if (!s->handle || rt_generation(s->device) != s->gen) return;
  const RtDriver *d = rt_enter(s->device);
  if (d) d->f_cuStreamDestroy((CUstream)s->handle);
}

int rt_stream_synchronize(const RtStream *s) {
  if (s->released) return rt_fail("this stream was destroyed");
  if (rt_check_handle("stream", s->device, s->gen)) return RT_ERROR;
  const RtDriver *d = rt_enter(s->device);
  if (!d) return RT_ERROR;
  return rt_result(s->device, d->f_cuStreamSynchronize((CUstream)s->handle), "cuStreamSynchronize", NULL);
}

int rt_event_create(RtEvent *e, int32_t timing) {
  memset(e, 0, sizeof *e);
  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  CUevent h = NULL;
  CUresult r = d->f_cuEventCreate(&h, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) return rt_result(dev, r, "cuEventCreate", NULL);
  e->handle = h;
  e->device = dev;
  e->gen = rt_generation(dev);
  return RT_OK;
}

void rt_event_release(RtEvent *e) {
  if (!e || e->released) return;
  e->released = 1;
  if (!e->handle || rt_generation(e->device) != e->gen) return;
  const RtDriver *d = rt_enter(e->device);
  if (d) d->f_cuEventDestroy((CUevent)e->handle);
}

static int event_ok(const RtEvent *e) {
  if (e->released) return rt_fail("this event was destroyed");
  return rt_check_handle("event", e->device, e->gen);
}

int rt_event_record(const RtEvent *e, void *stream) {
  if (event_ok(e)) return RT_ERROR;
  const RtDriver *d = rt_enter(e->device);
  if (!d) return RT_ERROR;
  return rt_result(e->device, d->f_cuEventRecord((CUevent)e->handle, (CUstream)stream), "cuEventRecord", NULL);
}

int rt_event_synchronize(const RtEvent *e) {
  if (event_ok(e)) return RT_ERROR;
  const RtDriver *d = rt_enter(e->device);
  if (!d) return RT_ERROR;
  return rt_result(e->device, d->f_cuEventSynchronize((CUevent)e->handle), "cuEventSynchronize", NULL);
}

int rt_event_elapsed_ms(const RtEvent *start, const RtEvent *stop, float *ms) {
  if (event_ok(start) || event_ok(stop)) return RT_ERROR;
  const RtDriver *d = rt_enter(start->device);
  if (!d) return RT_ERROR;
  return rt_result(start->device, d->f_cuEventElapsedTime(ms, (CUevent)start->handle, (CUevent)stop->handle),
                   "cuEventElapsedTime", NULL);
}
