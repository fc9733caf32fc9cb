-- Every wgmma atom against a CPU reference on the GPU (sm_90a): each input
-- type (f16, bf16, tf32, e4m3, e5m2, s8, u8 and mixes), SS and RS, both
-- majors for 16-bit types, every swizzle (none, 32B, 64B, 128B) of A and
-- B, N = 8..256, f16 and f32 accumulators, scale-d (the accumulator holds
-- junk and the first k-block ignores it; or D = C + A B), negation, and a
-- two-warpgroup tiled MMA. The kernels (wgmma_kernels.lua) load the operands
-- into shared memory with plain thread stores at the layouts' offsets.
--
-- Inputs are fresh random small integers (|x| <= 4; u8 0..7), so every
-- product and every partial sum is exact in the accumulator type (|sum| <=
-- 16 K + 4 <= 1028 < 2048, exact in f16 too): the tolerance is 0, and any
-- wrong layout, descriptor field or swizzle shows as a wrong element. The
-- output is poisoned first (NaN; -123456789 for i32) so an element not
-- written fails.
local cute = require "cute"
local K = require "tests.spec.hopper.wgmma_kernels"

local CASES = {
  -- each input type, SS, K-major, default swizzle (the widest that fits)
  { ab = "f16" }, { ab = "bf16" }, { ab = "tf32", n = 32 }, { ab = "e4m3", n = 32 }, { ab = "e5m2", n = 32 },
  { ab = "e4m3", b = "e5m2", n = 64 }, { ab = "e5m2", b = "e4m3", acc = "f16", n = 16 },
  { ab = "i8", n = 32 }, { ab = "u8", n = 48 }, { ab = "i8", b = "u8", n = 16 }, { ab = "u8", b = "i8", n = 24 },
  -- f16 accumulators
  { ab = "f16", acc = "f16", n = 64 }, { ab = "e4m3", acc = "f16", n = 128 },
  -- a spread of N
  { ab = "bf16", n = 8 }, { ab = "bf16", n = 16 }, { ab = "bf16", n = 128 }, { ab = "bf16", n = 256, kblocks = 4 },
  { ab = "f16", acc = "f16", n = 256 }, { ab = "i8", n = 256 },
  -- both majors (16-bit)
  { ab = "bf16", a_major = "MN", n = 64 }, { ab = "bf16", b_major = "MN", n = 64 },
  { ab = "f16", a_major = "MN", b_major = "MN", n = 128, kblocks = 4 },
  { ab = "f16", acc = "f16", a_major = "MN", b_major = "MN", n = 8 },
  -- every swizzle, K-major (the K extent covers the swizzle's row) and MN-major
  { ab = "bf16", sw_a = 0, sw_b = 0, kblocks = 4 }, { ab = "bf16", sw_a = 1, sw_b = 1 },
  { ab = "bf16", sw_a = 2, sw_b = 2 }, { ab = "bf16", sw_a = 3, sw_b = 3, kblocks = 4 },
  { ab = "bf16", sw_a = 0, sw_b = 3, kblocks = 4, n = 32 },
  { ab = "bf16", a_major = "MN", b_major = "MN", sw_a = 0, sw_b = 0 },
  { ab = "bf16", a_major = "MN", b_major = "MN", sw_a = 1, sw_b = 1 },
  { ab = "bf16", a_major = "MN", b_major = "MN", sw_a = 2, sw_b = 2 },
  { ab = "bf16", a_major = "MN", b_major = "MN", sw_a = 3, sw_b = 3, n = 128 },
  { ab = "tf32", sw_a = 0, sw_b = 1, n = 16, kblocks = 4 }, { ab = "tf32", sw_a = 3, sw_b = 2, kblocks = 4 },
  { ab = "e4m3", sw_a = 0, sw_b = 1, n = 64 }, { ab = "i8", sw_a = 3, sw_b = 0, kblocks = 4, n = 64 },
  -- RS: A from registers, each width
  { ab = "bf16", rs = true }, { ab = "f16", rs = true, acc = "f16", b_major = "MN", n = 128 },
  { ab = "tf32", rs = true, n = 24 }, { ab = "e4m3", rs = true, n = 16 }, { ab = "e5m2", b = "e4m3", rs = true },
  { ab = "i8", rs = true, n = 32 }, { ab = "u8", rs = true, n = 256 },
  -- scale-d = 1 into C, negation, two warpgroups
  { ab = "bf16", accumulate = true }, { ab = "f16", acc = "f16", accumulate = true, n = 32 },
  { ab = "i8", accumulate = true, n = 64 }, { ab = "f16", negate = true }, { ab = "e4m3", negate = true, n = 16 },
  { ab = "bf16", wgs = 2, n = 128 }, { ab = "bf16", wgs = 2, n = 256, accumulate = true, kblocks = 4 },
  { ab = "f16", wgs = 2, rs = true, a_major = "K", b_major = "MN", n = 64 },
  -- several atoms a thread (the tiled MMA's tile larger than its warpgroups')
  { ab = "bf16", rep_m = 2, rep_n = 2, n = 32 }, { ab = "f16", wgs = 2, rep_n = 2, n = 64, b_major = "MN" },
  { ab = "e4m3", rs = true, rep_m = 2, n = 16 },
  -- one cute.gemm a k-block on slices of the fragments (a mainloop's form)
  { ab = "bf16", per_k = true, kblocks = 4 }, { ab = "bf16", a_major = "MN", b_major = "MN", per_k = true, n = 128 },
  { ab = "f16", rs = true, per_k = true, kblocks = 4, accumulate = true }, { ab = "tf32", per_k = true, sw_a = 1 },
}

local function rand_values(name, count)
  local lo, hi = -4, 4
  if name == "u8" then lo, hi = 0, 7 end
  local t = {}
  for i = 1, count do t[i] = math.random(lo, hi) end
  return t
end

-- Runs a case on the GPU; nil when every element is exact, else the first mismatch.
local function run(c)
  local M, N, KK = c.m, c.ntile, c.k
  local A = cute.tensor(K.gdt(c.ab), { M, KK })
  local B = cute.tensor(K.gdt(c.b), { N, KK })
  local C = cute.tensor(cute[c.acc], { M, N })
  local D = cute.tensor(cute[c.acc], { M, N })
  local a, b, cc = rand_values(c.ab, M * KK), rand_values(c.b, N * KK), rand_values("i8", M * N)
  A:copy_from(a)
  B:copy_from(b)
  C:copy_from(cc)
  D:fill(c.acc == "i32" and -123456789 or 0 / 0)
  K.kernel(c) { grid = 1, block = 128 * c.wgs }(A, B, C, D)
  local got = D:to_table()
  local sign = c.negate and -1 or 1
  for m = 0, M - 1 do
    for n = 0, N - 1 do
      local want = c.accumulate and cc[m + M * n + 1] or 0
      for k = 0, KK - 1 do want = want + sign * a[m + M * k + 1] * b[n + N * k + 1] end
      local g = got[m + M * n + 1]
      if g ~= want then return string.format("D(%d, %d) = %s, expected %s", m, n, tostring(g), tostring(want)) end
    end
  end
end

describe("wgmma against a CPU reference", function()
  local seed = os.time() % 100000
  math.randomseed(seed)

  it("compiles every case here (the GPU runs the same kernels)", function()
    for _, raw in ipairs(CASES) do
      local c = K.case(raw)
      local h = K.kernel(c):compile(K.fake_args(c))
      assert.equal("\127ELF", h:cubin():sub(1, 4))
    end
  end)

  for _, raw in ipairs(CASES) do
    local c = K.case(raw)
    it(K.name(c) .. " #gpu", function()
      local info = cute.device_info()
      if info.compute_capability[1] ~= 9 then
        pending("wgmma needs sm_90a")
        return
      end
      local bad = run(c)
      assert(bad == nil, string.format("%s (seed %d): %s", K.name(c), seed, tostring(bad)))
    end)
  end
end)
