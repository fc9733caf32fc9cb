/* rt_dtype: the element types of tensors, and exact host-side conversions.
 *
 * One table (RT_DTYPES) names every dtype: the FFI exposes it, and the Lua
 * side builds cute.f32, cute.bf16, ... from it. Conversions between dtypes
 * go through double, and round straight from double to the narrow formats
 * (round to nearest, ties to even), so there is no double rounding. */
#ifndef RT_DTYPE_H
#define RT_DTYPE_H

#include <stdint.h>

enum { RT_KIND_BOOL = 0, RT_KIND_INT = 1, RT_KIND_UINT = 2, RT_KIND_FLOAT = 3 };

/* X(id, name, bytes, kind, TMA data type (-1: none)) */
#define RT_DTYPES(X)                    \
  X(BOOL, "bool", 1, RT_KIND_BOOL, 0)   \
  X(I8, "i8", 1, RT_KIND_INT, 0)        \
  X(U8, "u8", 1, RT_KIND_UINT, 0)       \
  X(I16, "i16", 2, RT_KIND_INT, 1)      \
  X(U16, "u16", 2, RT_KIND_UINT, 1)     \
  X(I32, "i32", 4, RT_KIND_INT, 3)      \
  X(U32, "u32", 4, RT_KIND_UINT, 2)     \
  X(I64, "i64", 8, RT_KIND_INT, 5)      \
  X(U64, "u64", 8, RT_KIND_UINT, 4)     \
  X(F16, "f16", 2, RT_KIND_FLOAT, 6)    \
  X(BF16, "bf16", 2, RT_KIND_FLOAT, 9)  \
  X(TF32, "tf32", 4, RT_KIND_FLOAT, 11) \
  X(F32, "f32", 4, RT_KIND_FLOAT, 7)    \
  X(F64, "f64", 8, RT_KIND_FLOAT, 8)    \
  X(E4M3, "e4m3", 1, RT_KIND_FLOAT, 0)  \
  X(E5M2, "e5m2", 1, RT_KIND_FLOAT, 0)

typedef enum RtDtype {
#define RT_DTYPE_ENUM(id, name, bytes, kind, tma) RT_DT_##id,
  RT_DTYPES(RT_DTYPE_ENUM)
#undef RT_DTYPE_ENUM
  RT_DT__COUNT
} RtDtype;

/* Encodes x in dtype t at dst (bytes of that dtype). Integers: truncated
 * toward zero and saturated; returns 1 when the value was not represented
 * exactly by an integer or bool dtype (NaN, fraction, out of range), else 0. */
int rt_dtype_encode(int t, double x, void *dst);
double rt_dtype_decode(int t, const void *src);

#endif
