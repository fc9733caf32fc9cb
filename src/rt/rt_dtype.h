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

/* X(id, name, bytes, kind, TMA data type, host storage, IR type, CuTe DSL name)
 *   host storage  the C type that holds one element on the host (the FFI's):
 *                 narrow floats as their raw bits
 *   IR type       the element's type in the IR (signedness lives in the ops) */
#define RT_DTYPES(X)                                                            \
  X(BOOL, "bool", 1, RT_KIND_BOOL, 0, "uint8_t", "i1", "Boolean")              \
  X(I8, "i8", 1, RT_KIND_INT, 0, "int8_t", "i8", "Int8")                       \
  X(U8, "u8", 1, RT_KIND_UINT, 0, "uint8_t", "i8", "Uint8")                    \
  X(I16, "i16", 2, RT_KIND_INT, 1, "int16_t", "i16", "Int16")                  \
  X(U16, "u16", 2, RT_KIND_UINT, 1, "uint16_t", "i16", "Uint16")               \
  X(I32, "i32", 4, RT_KIND_INT, 3, "int32_t", "i32", "Int32")                  \
  X(U32, "u32", 4, RT_KIND_UINT, 2, "uint32_t", "i32", "Uint32")               \
  X(I64, "i64", 8, RT_KIND_INT, 5, "int64_t", "i64", "Int64")                  \
  X(U64, "u64", 8, RT_KIND_UINT, 4, "uint64_t", "i64", "Uint64")               \
  X(F16, "f16", 2, RT_KIND_FLOAT, 6, "uint16_t", "f16", "Float16")             \
  X(BF16, "bf16", 2, RT_KIND_FLOAT, 9, "uint16_t", "bf16", "BFloat16")         \
  X(TF32, "tf32", 4, RT_KIND_FLOAT, 11, "float", "tf32", "TFloat32")           \
  X(F32, "f32", 4, RT_KIND_FLOAT, 7, "float", "f32", "Float32")                \
  X(F64, "f64", 8, RT_KIND_FLOAT, 8, "double", "f64", "Float64")               \
  X(E4M3, "e4m3", 1, RT_KIND_FLOAT, 0, "uint8_t", "e4m3", "Float8E4M3FN")      \
  X(E5M2, "e5m2", 1, RT_KIND_FLOAT, 0, "uint8_t", "e5m2", "Float8E5M2")

typedef enum RtDtype {
#define RT_DTYPE_ENUM(id, name, bytes, kind, tma, storage, ir, cute) RT_DT_##id,
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
