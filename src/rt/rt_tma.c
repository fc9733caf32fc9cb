/* rt_tma: TMA descriptors (cuTensorMapEncodeTiled) with their rules checked
 * first, so a mistake gets a message that names the rule rather than the
 * driver's bare CUDA_ERROR_INVALID_VALUE. The rules are those the CUDA driver
 * API documents for cuTensorMapEncodeTiled. With out == NULL only the rules
 * are checked (no driver is needed): the CPU simulator's path. */
#include <string.h>

#include "rt.h"

/* bytes per element of each CUtensorMapDataType; 0 for types we do not accept */
static int elem_bytes(int32_t t) {
  switch (t) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
  default: return 0;
  }
}

static int swizzle_span(int32_t s) {
  switch (s) {
  case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
  case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
  case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
  case CU_TENSOR_MAP_SWIZZLE_128B: return 128;
  default: return -1;
  }
}

int rt_tensormap_tiled(void *out, int32_t dtype, int32_t rank, uint64_t addr, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides, int32_t interleave,
                       int32_t swizzle, int32_t l2_promotion, int32_t oob_fill) {
  const char *w = "TMA descriptor";
  int eb = elem_bytes(dtype);
  if (!eb) return rt_fail("%s: unsupported element type code %d", w, dtype);
  if (out && ((uintptr_t)out) % 64) return rt_fail("%s: the 128-byte output must be 64-byte aligned", w);
  int inter = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
    return rt_fail("%s: bad interleave mode %d", w, interleave);
  if (rank < (inter ? 3 : 1) || rank > 5)
    return rt_fail("%s: rank %d; it must be %s..5", w, rank, inter ? "3" : "1");
  uint64_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (addr % align) return rt_fail("%s: the global address 0x%llx is not %llu-byte aligned", w, (unsigned long long)addr,
                                   (unsigned long long)align);
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 1 || dims[i] > ((uint64_t)1 << 32))
      return rt_fail("%s: globalDim[%d] is %llu; it must be in 1..2^32", w, i, (unsigned long long)dims[i]);
    if (box[i] < 1 || box[i] > 256) return rt_fail("%s: boxDim[%d] is %u; it must be in 1..256", w, i, box[i]);
    if (elem_strides[i] < 1 || elem_strides[i] > 8)
      return rt_fail("%s: elementStrides[%d] is %u; it must be in 1..8", w, i, elem_strides[i]);
  }
  for (int i = 0; i + 1 < rank; i++) {
    if (strides[i] % align || strides[i] >= ((uint64_t)1 << 40))
      return rt_fail("%s: globalStrides[%d] (dimension %d) is %llu bytes; it must be a multiple of %llu below 2^40", w, i, i + 1,
                     (unsigned long long)strides[i], (unsigned long long)align);
  }
  int span = swizzle_span(swizzle);
  if (span < 0) return rt_fail("%s: bad swizzle mode %d", w, swizzle);
  uint64_t inner = (uint64_t)box[0] * (uint64_t)eb;
  if (!inter) {
    if (inner % 16)
      return rt_fail("%s: the inner box dimension boxDim[0] is %llu bytes (%u elements of %d); it must be a multiple of 16", w,
                     (unsigned long long)inner, box[0], eb);
    if (span && inner > (uint64_t)span)
      return rt_fail("%s: the inner box dimension boxDim[0] is %llu bytes, larger than the %d-byte swizzle span", w,
                     (unsigned long long)inner, span);
  }
  if (l2_promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE || l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return rt_fail("%s: bad L2 promotion mode %d", w, l2_promotion);
  if (oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return rt_fail("%s: bad out-of-bounds fill mode %d", w, oob_fill);
  if (oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && eb != 2 && eb != 4)
    return rt_fail("%s: NaN out-of-bounds fill needs a floating-point element type", w);
  if (!out) return RT_OK; /* the rules only (the CPU simulator encodes its own descriptor) */

  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  cuuint64_t gdim[5], gstr[5];
  cuuint32_t bdim[5], estr[5];
  for (int i = 0; i < rank; i++) {
    gdim[i] = dims[i];
    bdim[i] = box[i];
    estr[i] = elem_strides[i];
    if (i + 1 < rank) gstr[i] = strides[i];
  }
  memset(out, 0, 128);
  CUresult r = d->f_cuTensorMapEncodeTiled((CUtensorMap *)out, (CUtensorMapDataType)dtype, (cuuint32_t)rank,
                                           (void *)(uintptr_t)addr, gdim, gstr, bdim, estr,
                                           (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
                                           (CUtensorMapL2promotion)l2_promotion, (CUtensorMapFloatOOBfill)oob_fill);
  return rt_result(dev, r, "cuTensorMapEncodeTiled", "encoding a TMA descriptor");
}
