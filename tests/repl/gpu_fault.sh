#!/bin/sh
# The REPL survives a kernel that faults: it reports the fault, restarts
# itself (the GPU cannot be used again in the faulting process), and the rest
# of the piped session launches kernels again. Exits 77 (skipped) without a GPU.
set -u
B=${1:?usage: gpu_fault.sh CUTELUA}
if ! "$B" -e 'os.exit(require("cute").gpu_available() and 0 or 1)' 2>/dev/null; then
  echo "no usable GPU: skipped"
  exit 77
fi
out=$(CUTELUA_HISTORY= "$B" 2>&1 <<'LUA'
ptx = io.open("tests/spec/runtime/kernels.ptx"):read("*a")
m = cute.load_module(ptx)
b = cute.alloc(64)
m:kernel("oob_write"):launch({grid = 1, block = 1}, b)
cute.synchronize()
print("after fault, m is", m)
ffi = require "ffi"
m2 = cute.load_module(io.open("tests/spec/runtime/kernels.ptx"):read("*a"))
buf = cute.alloc(4)
buf:copy_from_host(ffi.new("float[1]", 41), 4)
m2:kernel("add_one"):launch({grid = 1, block = 32}, buf, cute.u32(1))
h = ffi.new("float[1]")
buf:copy_to_host(h, 4)
print("result " .. h[0])
LUA
)
rc=$?
fail=0
for pat in "CUDA_ERROR_ILLEGAL_ADDRESS" "restarting the REPL" "REPL restarted after a GPU fault" "after fault, m is	nil" "^result 42$"; do
  if ! printf '%s\n' "$out" | grep -q -- "$pat"; then echo "FAIL: no /$pat/ in:"; printf '%s\n' "$out"; fail=1; fi
done
[ "$rc" = 1 ] || { echo "FAIL: exit $rc (a statement failed: expected 1)"; fail=1; }
[ $fail = 0 ] && echo "gpu fault REPL test passed"
exit $fail
