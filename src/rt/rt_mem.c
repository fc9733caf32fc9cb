/* rt_mem: device memory and copies. */
#include <stdio.h>
#include <string.h>

#include "rt.h"

int rt_buffer_alloc(RtBuffer *b, uint64_t bytes) {
  memset(b, 0, sizeof *b);
  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  CUdeviceptr p = 0;
  /* cuMemAlloc returns 256-byte aligned memory, enough for every vector and
   * TMA access; zero-byte tensors get no allocation at all. */
  if (bytes > 0) {
    CUresult r = d->f_cuMemAlloc(&p, (size_t)bytes);
    if (r != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "allocating %llu bytes on device %d", (unsigned long long)bytes, dev);
      return rt_result(dev, r, "cuMemAlloc", what);
    }
  }
  b->ptr = p;
  b->bytes = bytes;
  b->device = dev;
  b->gen = rt_generation(dev);
  b->owned = 1;
  return RT_OK;
}

int rt_buffer_wrap(RtBuffer *b, uint64_t ptr, uint64_t bytes) {
  memset(b, 0, sizeof *b);
  int32_t dev = rt_current_device();
  if (!rt_enter(dev)) return RT_ERROR;
  b->ptr = ptr;
  b->bytes = bytes;
  b->device = dev;
  b->gen = rt_generation(dev);
  b->owned = 0;
  return RT_OK;
}

void rt_buffer_release(RtBuffer *b) {
  if (!b || b->released) return;
  b->released = 1;
  /* Memory of a reset context is already gone; wrapped memory is not ours. */
  if (!b->owned || b->ptr == 0 || rt_generation(b->device) != b->gen) return;
  const RtDriver *d = rt_enter(b->device);
  if (d) d->f_cuMemFree((CUdeviceptr)b->ptr);
}

int rt_buffer_check(const RtBuffer *b, uint64_t offset, uint64_t bytes) {
  if (b->released) return rt_fail("this device tensor was freed");
  if (rt_check_handle("device tensor", b->device, b->gen)) return RT_ERROR;
  if (offset > b->bytes || bytes > b->bytes - offset)
    return rt_fail("%llu bytes at offset %llu are outside the %llu-byte device buffer", (unsigned long long)bytes,
                   (unsigned long long)offset, (unsigned long long)b->bytes);
  return RT_OK;
}

int rt_copy_htod(const RtBuffer *dst, uint64_t offset, const void *src, uint64_t bytes, void *stream) {
  if (rt_buffer_check(dst, offset, bytes)) return RT_ERROR;
  if (bytes == 0) return RT_OK;
  const RtDriver *d = rt_enter(dst->device);
  if (!d) return RT_ERROR;
  CUresult r = stream ? d->f_cuMemcpyHtoDAsync(dst->ptr + offset, src, bytes, (CUstream)stream)
                      : d->f_cuMemcpyHtoD(dst->ptr + offset, src, bytes);
  return rt_result(dst->device, r, stream ? "cuMemcpyHtoDAsync" : "cuMemcpyHtoD", "copying to the device");
}

int rt_copy_dtoh(void *dst, const RtBuffer *src, uint64_t offset, uint64_t bytes, void *stream) {
  if (rt_buffer_check(src, offset, bytes)) return RT_ERROR;
  if (bytes == 0) return RT_OK;
  const RtDriver *d = rt_enter(src->device);
  if (!d) return RT_ERROR;
  CUresult r = stream ? d->f_cuMemcpyDtoHAsync(dst, src->ptr + offset, bytes, (CUstream)stream)
                      : d->f_cuMemcpyDtoH(dst, src->ptr + offset, bytes);
  return rt_result(src->device, r, stream ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoH", "copying to the host");
}

int rt_copy_dtod(const RtBuffer *dst, uint64_t doff, const RtBuffer *src, uint64_t soff, uint64_t bytes,
                 void *stream) {
  if (rt_buffer_check(dst, doff, bytes) || rt_buffer_check(src, soff, bytes)) return RT_ERROR;
  if (bytes == 0) return RT_OK;
  const RtDriver *d = rt_enter(dst->device);
  if (!d) return RT_ERROR;
  CUresult r = stream ? d->f_cuMemcpyDtoDAsync(dst->ptr + doff, src->ptr + soff, bytes, (CUstream)stream)
                      : d->f_cuMemcpyDtoD(dst->ptr + doff, src->ptr + soff, bytes);
  return rt_result(dst->device, r, stream ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoD", "copying on the device");
}

int rt_memset(const RtBuffer *dst, uint64_t offset, uint64_t value, int32_t width, uint64_t count, void *stream) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return rt_fail("memset: element width must be 1, 2, 4 or 8 bytes, not %d", width);
  if (count > UINT64_MAX / (uint64_t)width) return rt_fail("memset: %llu elements overflow", (unsigned long long)count);
  if (rt_buffer_check(dst, offset, count * (uint64_t)width)) return RT_ERROR;
  if (offset % (uint64_t)width) return rt_fail("memset: offset %llu is not a multiple of %d", (unsigned long long)offset, width);
  if (count == 0) return RT_OK;
  const RtDriver *d = rt_enter(dst->device);
  if (!d) return RT_ERROR;
  CUdeviceptr p = dst->ptr + offset;
  CUstream s = (CUstream)stream;
  CUresult r;
  if (width == 8) {
    /* No 64-bit memset in the driver: when both halves agree use the 32-bit
     * one, otherwise set each half as a column of a 2D region with an 8-byte pitch. */
    uint32_t lo = (uint32_t)value, hi = (uint32_t)(value >> 32);
    if (lo == hi) {
      r = s ? d->f_cuMemsetD32Async(p, lo, count * 2, s) : d->f_cuMemsetD32(p, lo, count * 2);
    } else {
      r = s ? d->f_cuMemsetD2D32Async(p, 8, lo, 1, count, s) : d->f_cuMemsetD2D32(p, 8, lo, 1, count);
      if (r == CUDA_SUCCESS)
        r = s ? d->f_cuMemsetD2D32Async(p + 4, 8, hi, 1, count, s) : d->f_cuMemsetD2D32(p + 4, 8, hi, 1, count);
    }
  } else if (width == 4) {
    r = s ? d->f_cuMemsetD32Async(p, (unsigned)value, count, s) : d->f_cuMemsetD32(p, (unsigned)value, count);
  } else if (width == 2) {
    r = s ? d->f_cuMemsetD16Async(p, (unsigned short)value, count, s) : d->f_cuMemsetD16(p, (unsigned short)value, count);
  } else {
    r = s ? d->f_cuMemsetD8Async(p, (unsigned char)value, count, s) : d->f_cuMemsetD8(p, (unsigned char)value, count);
  }
  return rt_result(dst->device, r, "cuMemset", "filling device memory");
}

int rt_mem_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  size_t f = 0, t = 0;
  CUresult r = d->f_cuMemGetInfo(&f, &t);
  *free_bytes = f;
  *total_bytes = t;
  return rt_result(dev, r, "cuMemGetInfo", NULL);
}
