--- Micro-benchmark of the layout algebra operations a GEMM kernel performs
-- at trace time. Not a test: it prints a table of microseconds per call.
--
--   build/cutelua bench/layout_algebra.lua [seconds-per-measurement]
--
-- Every operation is timed twice: "computed" with the algebra's cache off
-- (the cost of doing the work) and "cached" with it on and the same static
-- operands (what a trace pays when it repeats a partitioning). Each figure
-- is the best of 3 measurements of about `seconds-per-measurement` of CPU
-- time (default 0.1) after a warm-up, so other load on the machine inflates
-- it as little as possible.
local cute = require "cute"
local memoize = require("cute.layout").internal.memoize -- turns the cache of results off and on

local budget = tonumber(arg and arg[1]) or 0.1

local function measure(f)
  for _ = 1, 50 do f() end -- warm-up (and JIT)
  local best = math.huge
  for _ = 1, 3 do
    local n, t0 = 0, os.clock()
    local t = t0
    while t - t0 < budget do
      for _ = 1, 20 do f() end
      n = n + 20
      t = os.clock()
    end
    best = math.min(best, (t - t0) / n * 1e6)
  end
  return best
end

local function bench(name, f)
  memoize(false)
  local computed = measure(f)
  memoize(true)
  local cached = measure(f)
  print(string.format("| %-62s | %8.2f | %8.2f |", name, computed, cached))
end

-- the layouts of a 128x128x32 CTA tile of a GEMM with 128 threads
local gmem = cute.make_layout({ 4096, 4096 }, { 1, 4096 }) -- a column-major matrix
local tile = cute.make_layout({ 128, 128 })
local thr = cute.make_layout({ 32, 4 }, { 4, 1 })
local thr_tv = cute.make_layout({ 32, 4 }, { 4, 1 })
local val_tv = cute.make_layout({ 4, 32 })
local atom = cute.composition(cute.Swizzle(3, 3, 3), cute.make_layout({ 8, 64 }, { 64, 1 }))
local smem = cute.tile_to_shape(atom, { 128, 64 })
local tiler_mn, layout_tv = cute.make_layout_tv(thr_tv, val_tv)
local crd_shape = { { 8, 16 }, { 16, 8 } }
local copy_thr = cute.make_layout({ 16, 8 }, { 8, 1 })
local tile_16x8 = cute.make_layout({ 16, 8 }, { 1, 16 })
local hier = cute.make_layout({ { 2, 4 }, { 8, 16 } }, { { 1, 16 }, { 2, 64 } })
local tid = 0

print(string.format("layout algebra micro-benchmark (%s), microseconds per call", jit and jit.version or "?"))
print(string.format("| %-62s | %8s | %8s |", "operation", "computed", "cached"))
print("|" .. string.rep("-", 64) .. "|" .. string.rep("-", 10) .. "|" .. string.rep("-", 10) .. "|")

bench("local_partition(128x128 tile, (32,4):(4,1) threads, tid)", function()
  tid = (tid + 1) % 128
  return cute.local_partition(tile, thr, tid)
end)
bench("local_tile(4096x4096 gmem, (128,128,32), (m,n,_), (1,X,1))", function()
  tid = (tid + 1) % 32
  return cute.local_tile(gmem, { 128, 128, 32 }, { tid, 3, cute._ }, { 1, cute.X, 1 })
end)
bench("make_layout_tv((32,4):(4,1), (4,32))", function()
  return cute.make_layout_tv(thr_tv, val_tv)
end)
bench("composition(128x128 tile, layout_tv) then slice (tid, _)", function()
  tid = (tid + 1) % 128
  local frg = cute.composition(tile, layout_tv)
  return frg(tid, cute._)
end)
bench("tile_to_shape(Swizzle(3,3,3) o (8,64):(64,1), (128,64))", function()
  return cute.tile_to_shape(atom, { 128, 64 })
end)
bench("composition(swizzled 128x64 smem, (16,8):(8,1)) (a copy tile)", function()
  return cute.composition(smem, copy_thr)
end)
bench("local_partition(swizzled 128x64 smem, (16,8):(8,1), tid)", function()
  tid = (tid + 1) % 128
  return cute.local_partition(smem, copy_thr, tid)
end)
bench("zipped_divide(4096x4096 gmem, (128,64))", function()
  return cute.zipped_divide(gmem, { 128, 64 })
end)
bench("logical_divide(128x128 tile, (16,8):(1,16))", function()
  return cute.logical_divide(tile, tile_16x8)
end)
bench("crd2idx(((3,5),(7,2)), ((8,16),(16,8)))", function()
  return cute.crd2idx({ { 3, 5 }, { 7, 2 } }, crd_shape)
end)
bench("idx2crd(12345, ((8,16),(16,8)))", function()
  return cute.idx2crd(12345, crd_shape)
end)
bench("L(i) on a static ((2,4),(8,16)):((1,16),(2,64)) layout", function()
  tid = (tid + 1) % 1024
  return hier(tid)
end)
print(string.format("(tiler_mn = %s, layout_tv = %s, smem = %s)", cute.pretty_str(tiler_mn), tostring(layout_tv),
  tostring(smem)))
