#!/usr/bin/env python3
"""torch tensors -> DLPack -> a kernel exported by cutelua's AOT .so -> back to torch.

    python3 examples/interop/torch_aot.py [path/to/cutelua] [path/to/libcutelua.so]

1. cutelua exports a kernel ahead of time (cute.export, shared = true): y = a * x + y
   over row-major f32 matrices whose extents and row strides are run-time arguments.
2. Python opens the .so with ctypes (no cutelua, no LuaJIT in this process; with the
   second argument, libcutelua's cutelua_aot_check_file checks the file first) and
   reads its descriptor (cutelua_aot_entry): each C parameter's kind (pointer,
   extent, stride, scalar), the kernel argument and the leaf it comes from.
3. torch tensors go through DLPack (torch.utils.dlpack.to_dlpack): the capsule's
   DLManagedTensor gives the device pointer, the shape and the strides (in elements),
   which fill the parameters the descriptor asks for. The capsules are not consumed:
   torch keeps ownership, and their destructors release the DLPack references.
4. The kernel runs on torch's current stream; y is a strided view (rows of 80 of
   which 70 are used), written in place, and torch checks it against a * x + y.

Needs torch with CUDA and a GPU of sm_80, sm_86, sm_89 or sm_90 (the export has
sm_80 and sm_90a cubins; an sm_8x GPU runs the sm_80 one). Exits 77 (skipped) when
torch, CUDA or a suitable GPU is missing, 0 when every check passed.
"""
import ctypes
import os
import subprocess
import sys
import tempfile
from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint64, c_void_p

SKIP = 77

EXPORT = r'''
local cute = require "cute"
local axpy2d = cute.kernel("axpy2d", function(a, x, y)
  local i = cute.block_idx().y * 16 + cute.thread_idx().y
  local j = cute.block_idx().x * 16 + cute.thread_idx().x
  cute.if_(cute.and_(i:lt(y.layout.shape[1]), j:lt(y.layout.shape[2])), function()
    y[{ i, j }] = cute.fma(a, x[{ i, j }], y[{ i, j }])
  end)
end)
cute.export {
  name = "torch_axpy", prefix = "tx", dir = arg[1], arch = { "sm_80", "sm_90a" }, shared = true,
  kernels = {
    { name = "axpy2d", kernel = axpy2d, doc = "y = a * x + y (row-major f32 matrices, any row strides)",
      -- row strides of 49 elements: no divisibility assumed (torch rows of any length)
      args = { cute.f32(1), cute.fake_tensor(cute.f32, { 64, 48 }, { 49, 1 }), cute.fake_tensor(cute.f32, { 64, 48 }, { 49, 1 }) },
      grid = function(_, _, y) return { cute.ceil_div(y.shape[2], 16), cute.ceil_div(y.shape[1], 16) } end,
      block = { 16, 16 } },
  },
}
'''


# DLPack (dlpack.h, v0.8 layout: what torch.utils.dlpack.to_dlpack returns)
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


kDLCUDA, kDLFloat = 2, 2


# cutelua's descriptor (include/cutelua_aot.h)
class AotParam(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("ctype", c_char_p), ("size", c_int), ("kind", c_int), ("arg", c_int),
                ("leaf", c_int)]


PACKED = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_void_p)


class AotKernel(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("nparams", c_int), ("params", POINTER(AotParam)), ("launch_packed", PACKED)]


class AotModule(ctypes.Structure):
    _fields_ = [("abi", c_int), ("metadata", c_char_p), ("nkernels", c_int), ("kernels", POINTER(AotKernel)),
                ("check", ctypes.CFUNCTYPE(c_int, c_char_p, c_size_t)),
                ("load", ctypes.CFUNCTYPE(c_int, POINTER(c_void_p), c_char_p, c_size_t)),
                ("unload", ctypes.CFUNCTYPE(None, c_void_p)),
                ("error_name", ctypes.CFUNCTYPE(c_char_p, c_int))]


KIND_PTR, KIND_EXTENT, KIND_STRIDE, KIND_SCALAR = 0, 1, 2, 3
CTYPES = {b"uint64_t": c_uint64, b"int64_t": c_int64, b"int32_t": c_int32, b"float": ctypes.c_float,
          b"double": ctypes.c_double}


def dltensor(capsule):
    """The DLTensor inside a DLPack capsule (not consumed: the capsule keeps ownership)."""
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
    p = api.PyCapsule_GetPointer(capsule, b"dltensor")
    return ctypes.cast(p, POINTER(DLManagedTensor)).contents.dl_tensor


def tensor_leaves(t):
    """(address, extents, strides in elements) of a DLTensor holding CUDA f32."""
    if t.device.device_type != kDLCUDA:
        raise ValueError("expected a CUDA tensor, got DLPack device type %d" % t.device.device_type)
    if t.dtype.code != kDLFloat or t.dtype.bits != 32 or t.dtype.lanes != 1:
        raise ValueError("expected float32, got DLPack dtype (%d, %d, %d)" % (t.dtype.code, t.dtype.bits,
                                                                            t.dtype.lanes))
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        strides = [t.strides[i] for i in range(t.ndim)]
    else:  # compact row-major
        strides, s = [0] * t.ndim, 1
        for i in reversed(range(t.ndim)):
            strides[i], s = s, s * shape[i]
    return t.data + t.byte_offset, shape, strides


def call(module, kernel, args, stream):
    """Launches an exported kernel with Python/torch arguments: the descriptor says
    which C parameter comes from which argument and leaf."""
    cells, ptrs = [], (c_void_p * max(kernel.nparams, 1))()
    leaves = {}
    for i, a in enumerate(args):
        if isinstance(a, tuple):  # (capsule, tensor): keep the capsule alive during the call
            leaves[i] = tensor_leaves(dltensor(a[0]))
    for j in range(kernel.nparams):
        p = kernel.params[j]
        if p.kind == KIND_PTR:
            v = leaves[p.arg][0]
        elif p.kind == KIND_EXTENT:
            v = leaves[p.arg][1][p.leaf]
        elif p.kind == KIND_STRIDE:
            v = leaves[p.arg][2][p.leaf]
        elif p.kind == KIND_SCALAR:
            v = args[p.arg]
        else:
            raise ValueError("parameter %s: kind %d is not handled here" % (p.name.decode(), p.kind))
        cell = CTYPES[p.ctype](v)
        cells.append(cell)
        ptrs[j] = ctypes.cast(ctypes.pointer(cell), c_void_p)
    rc = kernel.launch_packed(module, ptrs, stream)
    if rc != 0:
        raise RuntimeError("%s: %s" % (kernel.name.decode(), module_desc.error_name(rc).decode()))


module_desc = None


def main():
    global module_desc
    try:
        import torch
        import torch.utils.dlpack
    except ImportError:
        print("torch_aot: torch not found: skipped")
        return SKIP
    if not torch.cuda.is_available():
        print("torch_aot: no GPU for torch: skipped")
        return SKIP
    cc = torch.cuda.get_device_capability()
    if cc[0] != 8 and cc != (9, 0):
        print("torch_aot: the export has sm_80 and sm_90a cubins; this GPU is sm_%d%d: skipped" % cc)
        return SKIP
    # cute.export compiles the generated C: it needs a C compiler and the CUDA headers
    import shutil
    cuda_h = [os.path.join(d, "include", "cuda.h") for d in (os.environ.get("CUDA_HOME", ""),
                                                             os.environ.get("CUDA_PATH", ""), "/usr/local/cuda") if d]
    if not shutil.which(os.environ.get("CC", "cc")) or not any(os.path.exists(h) for h in cuda_h):
        print("torch_aot: no C compiler or no CUDA headers (cuda.h) for cute.export: skipped")
        return SKIP
    cutelua = sys.argv[1] if len(sys.argv) > 1 else "build/cutelua"
    out = tempfile.mkdtemp(prefix="torch_aot-")
    script = os.path.join(out, "export.lua")
    with open(script, "w") as f:
        f.write(EXPORT)
    subprocess.run([cutelua, script, out], check=True)
    so = os.path.join(out, "torch_axpy.so")
    if len(sys.argv) > 2:  # the file checks (seal, ELF) before anything loads it
        libcl = ctypes.CDLL(sys.argv[2])
        err = ctypes.create_string_buffer(1024)
        if libcl.cutelua_aot_check_file(so.encode(), err, 1024) != 0:
            raise RuntimeError(err.value.decode())
    torch.cuda.init()
    torch.empty(1, device="cuda")  # torch's context (device 0's primary) is current: the module loads into it
    lib = ctypes.CDLL(so)
    lib.cutelua_aot_entry.restype = POINTER(AotModule)
    module_desc = lib.cutelua_aot_entry().contents
    assert module_desc.abi == 1, module_desc.abi
    err = ctypes.create_string_buffer(1024)
    if module_desc.check(err, 1024) != 0:
        raise RuntimeError(err.value.decode())
    module = c_void_p()
    if module_desc.load(ctypes.byref(module), err, 1024) != 0:
        raise RuntimeError(err.value.decode())
    kernel = next(module_desc.kernels[i] for i in range(module_desc.nkernels) if module_desc.kernels[i].name == b"axpy2d")
    print("torch_aot: %s" % ", ".join("%s (%s, kind %d)" % (kernel.params[j].name.decode(),
                                                          kernel.params[j].ctype.decode(), kernel.params[j].kind)
                                      for j in range(kernel.nparams)))

    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    x = torch.randn(300, 70, device="cuda")
    big = torch.full((300, 80), float("nan"), device="cuda")
    y = big[:, :70]  # a strided view: row stride 80
    y.copy_(torch.randn(300, 70, device="cuda"))
    y0 = y.clone()
    a = 1.75
    stream = torch.cuda.current_stream().cuda_stream
    call(module, kernel, [a, (torch.utils.dlpack.to_dlpack(x), x), (torch.utils.dlpack.to_dlpack(y), y)],
         c_void_p(stream))
    torch.cuda.synchronize()
    want = a * x + y0
    # fma rounds once, a * x + y twice: within an ulp or two of the larger term
    assert torch.allclose(y, want, rtol=1e-6, atol=1e-6), (y - want).abs().max().item()
    assert torch.isnan(big[:, 70:]).all(), "the padding columns were written"
    module_desc.unload(module)
    print("torch_aot: y = a * x + y for a 300 x 70 view with row stride 80, on torch's stream: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
