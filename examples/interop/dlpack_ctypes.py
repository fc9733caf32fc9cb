#!/usr/bin/env python3
"""DLPack between Python and cutelua: libcutelua loaded with ctypes.

    python3 examples/interop/dlpack_ctypes.py build/libcutelua.so

Python hands a tensor to a Lua function as a DLManagedTensor * (cutelua takes it
over and calls its deleter when done), the function returns a new
DLManagedTensor * made by t:to_dlpack() (Python takes it over and calls its
deleter when done). Part 1 does it with host memory (kDLCPU) built here with
ctypes and needs no GPU (the test suite runs it: example/dlpack_ctypes). Part 2,
when torch and a GPU are present, does it with torch CUDA tensors through
torch.utils.dlpack, launching a cutelua kernel on torch's current stream
(cute.stream_from_handle); scripts/gpu-test runs it on the GPU machine.
Exits 0 when every check passed.
"""
import ctypes
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]

kDLCPU, kDLCUDA = 1, 2

LUA = r'''
local cute = require "cute"

-- 2 * x + 1 of a host f32 tensor given as a DLManagedTensor *, as a new
-- row-major host tensor returned as a DLManagedTensor *. x is taken over:
-- collected here at once, so its deleter runs before this returns.
function affine_host(p)
  local x = cute.from_dlpack(p)
  local y = cute.host_tensor(cute.f32, cute.shape(x.layout), "row")
  for i = 0, cute.size(x.layout) - 1 do y.data[y.layout(i)] = 2 * x[i] + 1 end
  x = nil -- luacheck: ignore
  collectgarbage()
  return y:to_dlpack()
end

local affine = cute.kernel(function(x, y)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(x)), function() y[i] = x[i] * 2 + 1 end)
end)

-- The same on the GPU, on a stream another library owns. torch's default stream is
-- the legacy stream, handle 0: cutelua_call passes a NULL pointer as nil.
function affine_cuda(p, stream)
  local x = cute.from_dlpack(p)
  local y = cute.tensor(cute.f32, cute.shape(x.layout), "row")
  local n = cute.size(x.layout)
  affine{grid = math.ceil(n / 256), block = 256, stream = cute.stream_from_handle(stream or 0)}(x, y)
  return y:to_dlpack()
end

function live_exports() return require("cute.dlpack").live_exports() end
'''


def main():
    lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "build/libcutelua.so")
    lib.cutelua_open.restype = c_void_p
    lib.cutelua_dostring.argtypes = [c_void_p, c_char_p, c_char_p]
    lib.cutelua_errmsg.restype = c_char_p
    lib.cutelua_errmsg.argtypes = [c_void_p]
    cl = lib.cutelua_open()
    assert cl, "cutelua_open failed"

    def check(rc):
        if rc != 0:
            raise RuntimeError(lib.cutelua_errmsg(cl).decode())

    def live():
        n = c_int()
        check(lib.cutelua_call(c_void_p(cl), b"live_exports", b">i", byref(n)))
        return n.value

    check(lib.cutelua_dostring(cl, LUA.encode(), b"=dlpack_ctypes"))

    # Part 1: a 3 x 4 float32 array in Fortran order (strides 1, 3), owned here.
    deleted = []
    data = (ctypes.c_float * 12)(*[i * 0.5 for i in range(12)])
    shape, strides = (c_int64 * 2)(3, 4), (c_int64 * 2)(1, 3)
    m = DLManagedTensor()
    m.dl_tensor = DLTensor(ctypes.cast(data, c_void_p), DLDevice(kDLCPU, 0), 2, DLDataType(2, 32, 1),
                           shape, strides, 0)
    keep = DELETER(lambda p: deleted.append(ctypes.addressof(p.contents)))
    m.deleter = keep
    out = c_void_p()
    check(lib.cutelua_call(c_void_p(cl), b"affine_host", b"p>p", c_void_p(ctypes.addressof(m)), byref(out)))
    assert deleted == [ctypes.addressof(m)], deleted  # cutelua called our deleter, once
    r = ctypes.cast(out, POINTER(DLManagedTensor))
    t = r.contents.dl_tensor
    assert (t.device.device_type, t.ndim, t.dtype.code, t.dtype.bits) == (kDLCPU, 2, 2, 32)
    assert (t.shape[0], t.shape[1], t.strides[0], t.strides[1]) == (3, 4, 4, 1)  # row-major
    vals = ctypes.cast(t.data, POINTER(ctypes.c_float))
    for i in range(3):
        for j in range(4):
            assert vals[i * 4 + j] == 2 * data[i + 3 * j] + 1, (i, j)
    assert live() == 1
    r.contents.deleter(r)  # ours now: done with it
    assert live() == 0
    print("host (kDLCPU): ok")

    # Part 2: torch CUDA tensors, where torch and a GPU are present.
    try:
        import torch
        import torch.utils.dlpack
    except ImportError:
        print("torch not found: the CUDA part is skipped")
        return 0
    if not torch.cuda.is_available():
        print("no GPU for torch: the CUDA part is skipped")
        return 0
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
    x = torch.randn(1000, 3, device="cuda")
    cap = torch.utils.dlpack.to_dlpack(x)
    p = api.PyCapsule_GetPointer(cap, b"dltensor")
    api.PyCapsule_SetName(cap, b"used_dltensor")  # cutelua owns it now; Python must not delete it
    stream = torch.cuda.current_stream().cuda_stream
    out = c_void_p()
    check(lib.cutelua_call(c_void_p(cl), b"affine_cuda", b"pp>p", c_void_p(p), c_void_p(stream), byref(out)))
    y = torch.utils.dlpack.from_dlpack(api.PyCapsule_New(out, b"dltensor", None))  # torch owns it now
    assert torch.equal(y, x * 2 + 1), (y - (x * 2 + 1)).abs().max()
    del y
    assert live() == 0  # torch called cutelua's deleter
    print("CUDA (torch): ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
