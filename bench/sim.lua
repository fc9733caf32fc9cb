--- The CPU simulator's speed (not a test): simulated thread-instructions per
-- second on scalar code, and the wall time of cute.lib kernels, on this CPU.
-- A thread-instruction is one IR op executed by one thread (the loop's
-- arithmetic, its variables' loads and stores, its compare and increment).
--
--   build/cutelua bench/sim.lua [iterations]
local cute = require "cute"
local ir = require("cute._c").ir
local host = require("cute._c").host
local ffi = require "ffi"

cute.set_device("sim")
local ITER = tonumber(arg and arg[1]) or 2000

local function secs(fn)
  local t0 = host.now_ns()
  fn()
  return tonumber(host.now_ns() - t0) / 1e9
end

-- IR ops executed per iteration of the kernel's (only) for loop: the ops in
-- its region, plus the loop's own compare and increment; and the same
-- without the variables' loads and stores (locals of the generated Lua).
local function loop_ops(k)
  local m = k.last.module
  local f = ir.func_at(m, 0)
  local depth, n, arith, inside = 0, 0, 0, false
  for v = 1, ir.inst_count(f) do
    local op = ffi.string(ir.op_name(ir.inst_op(f, v)))
    if op == "for" then
      inside, depth = true, 1
    elseif inside then
      if op == "for" or op == "if" or op == "while" then depth = depth + 1 end
      if op == "end" then
        depth = depth - 1
        if depth == 0 then inside = false end
      elseif op ~= "iv" and op ~= "else" then
        n = n + 1
        if not op:match("^var%.") then arith = arith + 1 end
      end
    end
  end
  return n + 2, arith + 2
end

-- Scalar code: an LCG in i32, an f32 recurrence (mul + add: contracted to an
-- fma) and a running sum, kept in variables across the iterations.
local function scalar_kernel(sync)
  return cute.kernel(function(out, iters)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    local s = cute.var(cute.i32, i)
    local x = cute.var(cute.f32, i:to(cute.f32))
    local acc = cute.var(cute.i32, 0)
    for _ in cute.range(0, iters) do
      s.value = s.value * 1103515245 + 12345
      x.value = x.value * 0.999 + 0.5
      acc.value = acc.value + s.value:shr(16):band(255)
    end
    if sync then cute.sync_threads() end
    out[i] = acc.value + x.value:to(cute.i32)
  end)
end

print(string.format("cutelua simulator, %s", jit.version))
for _, sync in ipairs { false, true } do
  local k = scalar_kernel(sync)
  local blocks, threads = 4, 256
  local out = cute.tensor(cute.i32, blocks * threads)
  k { grid = blocks, block = threads }(out, cute.i32(10)) -- trace, compile to Lua, warm up
  local ops, arith = loop_ops(k)
  local t = secs(function() k { grid = blocks, block = threads }(out, cute.i32(ITER)) end)
  local n = blocks * threads * ITER
  print(string.format("scalar loop%s: %d x %d iterations in %.3f s: %.0f M thread-instructions/s (%d IR ops an " ..
    "iteration), %.0f M without the variables' loads and stores (%d)", sync and " (a barrier: threads as coroutines)"
    or "", blocks * threads, ITER, t, n * ops / t / 1e6, ops, n * arith / t / 1e6, arith))
end

local function lib(name, fn) print(string.format("%-44s %.3f s", name, secs(fn))) end
local x = cute.tensor(cute.f32, 2 ^ 20):uniform(-1, 1, 1)
local y = cute.tensor(cute.f32, 2 ^ 20)
lib("elementwise axpb f32, 2^20 elements", function() require("cute.lib.elementwise").axpb(x, y, 2, 1) end)
lib("reduce sum f32, 2^20 elements", function() require("cute.lib.reduce").sum(x) end)
local A = cute.tensor(cute.f32, { 128, 128 }, "row"):uniform(-1, 1, 2)
local B = cute.tensor(cute.f32, { 128, 128 }, "row"):uniform(-1, 1, 3)
local C = cute.tensor(cute.f32, { 128, 128 }, "row")
lib("sgemm f32 128 x 128 x 128", function() require("cute.lib.sgemm").gemm(A, B, C) end)
local Ab = cute.tensor(cute.bf16, { 256, 256 }, "row"):uniform(-1, 1, 4)
local Bb = cute.tensor(cute.bf16, { 256, 256 }, "row"):uniform(-1, 1, 5)
local Cb = cute.tensor(cute.f32, { 256, 256 }, "row")
lib("gemm bf16 mma.sync 256 x 256 x 256", function() cute.gemm(Ab, Bb, Cb) end)
