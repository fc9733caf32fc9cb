-- The simulator as an sm_90a device against an sm_90 GPU (run on an H100 or
-- H200): wgmma tiles (every input type, both majors, every swizzle, A from
-- registers, f16 accumulators), TMA tiles (loads with zero fill, stores
-- clipped at the edges, a reduce-add) and cute.gemm's Hopper kernel (each
-- dtype, MN-major operands, a fused epilogue, a grouped GEMM), from the same
-- random (non-integer) inputs on both. Copies and integer results must match
-- bitwise; float results within a tolerance relative to max(|GPU value|, 1):
-- 1e-4 for 16-bit inputs with f32 accumulators (the tensor core's summation
-- order and rounding against the simulator's one rounding of a double sum),
-- 2^-9 for tf32 and for f16 accumulators, 2^-8 for fp8 inputs (Hopper's fp8
-- accumulation keeps fewer bits than f32).
local cute = require "cute"
local W = require "tests.spec.hopper.wgmma_kernels"

local function on(device, fn)
  local S = require "cute.sim.memory"
  local old, old_arch = cute.current_device(), S.arch()
  if device == "sim" then cute.set_device("sim", { arch = "sm_90a" }) else cute.set_device(device) end
  local ok, r = pcall(fn)
  S.set_arch(old_arch) -- (the simulator's architecture outlives set_device)
  cute.set_device(old)
  if not ok then error(r, 0) end
  return r
end

local function compare(name, gpu, sim, tol)
  assert.equal(#gpu, #sim, name .. ": sizes")
  for i = 1, #gpu do
    local g, s = gpu[i], sim[i]
    if not (g == s or (g ~= g and s ~= s)) then
      local e = math.abs(g - s) / math.max(math.abs(g), 1)
      assert.is_true(tol > 0 and e <= tol, string.format("%s: element %d: GPU %.9g, simulator %.9g (%s)", name, i, g,
        s, tol > 0 and ("tolerance " .. tol) or "bitwise expected"))
    end
  end
end

local function need_sm90()
  local info = cute.device_info(0)
  if info.compute_capability[1] ~= 9 then
    pending("needs an sm_90 GPU")
    return false
  end
  return true
end

-- random values as host lists (the same on both devices)
local function randoms(dt_name, n, seed)
  math.randomseed(seed)
  local t = {}
  for i = 1, n do
    if dt_name == "i8" then t[i] = math.random(-128, 127)
    elseif dt_name == "u8" then t[i] = math.random(0, 255)
    else t[i] = math.random() * 2 - 1 end
  end
  return t
end

local function tol_of(ab, acc)
  if ab == "i8" or ab == "u8" then return 0 end
  if ab == "e4m3" or ab == "e5m2" then return 2 ^ -8 end
  if ab == "tf32" or acc == "f16" then return 2 ^ -9 end
  return 1e-4
end

describe("the simulator (sm_90a) matches an sm_90 GPU", function()
  local WG = {
    { ab = "bf16", n = 128 }, { ab = "f16", acc = "f16", n = 64 }, { ab = "tf32", n = 32 }, { ab = "e4m3", n = 64 },
    { ab = "e5m2", b = "e4m3", n = 32 }, { ab = "i8", n = 32 }, { ab = "u8", b = "i8", n = 48 },
    { ab = "bf16", a_major = "MN", b_major = "MN", n = 64 }, { ab = "bf16", sw_a = 0, sw_b = 0, kblocks = 4 },
    { ab = "bf16", sw_a = 1, sw_b = 2 }, { ab = "f16", a_major = "MN", b_major = "MN", sw_a = 1, sw_b = 1 },
    { ab = "bf16", rs = true }, { ab = "e4m3", rs = true, n = 16 }, { ab = "bf16", wgs = 2, n = 256, kblocks = 4 },
  }
  for _, raw in ipairs(WG) do
    local c = W.case(raw)
    it("wgmma " .. W.name(c) .. " #gpu", function()
      if not need_sm90() then return end
      local M, N, KK = c.m, c.ntile, c.k
      local a, b, cc = randoms(c.ab, M * KK, 1), randoms(c.b, N * KK, 2), randoms("i8", M * N, 3)
      local function go()
        local A, B = cute.tensor(W.gdt(c.ab), { M, KK }), cute.tensor(W.gdt(c.b), { N, KK })
        local C, D = cute.tensor(cute[c.acc], { M, N }), cute.tensor(cute[c.acc], { M, N })
        A:copy_from(a)
        B:copy_from(b)
        C:copy_from(cc)
        D:fill(c.acc == "i32" and -123456789 or 0 / 0)
        W.kernel(c) { grid = 1, block = 128 * c.wgs }(A, B, C, D)
        return D:to_table()
      end
      compare(W.name(c), on(0, go), on("sim", go), tol_of(c.ab, c.acc))
    end)
  end

  it("TMA: tiles loaded (zero past the edges), doubled, stored (clipped) and reduce-added, bitwise #gpu", function()
    if not need_sm90() then return end
    local cp = cute.nvgpu.cpasync
    local Wd, Hd, TILE = 100, 70, { 32, 16 }
    local sl = cute.make_layout(TILE)
    local k = cute.kernel("vs_tma", function(load, store, red)
      local tile = cute.make_smem_tensor(cute.f32, sl, 128)
      local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8):ptr_at(0)
      local tid = cute.thread_idx().x
      local tc = { cute.block_idx().x, cute.block_idx().y }
      local pl = cp.tma_partition(load, 0, cute.make_layout(1), sl)
      local ps = cp.tma_partition(store, 0, cute.make_layout(1), sl)
      local pr = cp.tma_partition(red, 0, cute.make_layout(1), sl)
      cute.if_(tid:eq(0), function()
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
      end)
      cute.sync_threads()
      cute.if_(tid:eq(0), function()
        cute.arch.mbarrier_arrive_and_expect_tx(bar, pl.tile_bytes)
        cute.copy(load, pl:gmem_tile(tc), pl:smem_tile(tile), { tma_bar_ptr = bar })
      end)
      cute.arch.mbarrier_wait(bar, 0)
      for i = 0, TILE[1] * TILE[2] - 1, 128 do
        local x, y = (tid + i) % TILE[1], (tid + i) / TILE[1]
        tile[{ x, y }] = tile[{ x, y }] * 2 + 1
      end
      cute.arch.fence_view_async_shared()
      cute.sync_threads()
      cute.if_(tid:eq(0), function()
        cute.copy(store, ps:smem_tile(tile), ps:gmem_tile(tc))
        cute.copy(red, pr:smem_tile(tile), pr:gmem_tile(tc))
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0)
      end)
    end, { arch = "sm_90a" })
    local a = randoms("f32", Wd * Hd, 4)
    local r0 = randoms("f32", Wd * Hd, 5)
    local function go()
      local A = cute.tensor(cute.f32, { Wd, Hd }, { 1, 112 })
      local B = cute.tensor(cute.f32, { Wd, Hd }, { 1, 112 }):fill(0 / 0)
      local R = cute.tensor(cute.f32, { Wd, Hd }, { 1, 112 })
      A:copy_from(a)
      R:copy_from(r0)
      local load = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, sl, TILE)
      local store = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileS2GOp(), B, sl, TILE)
      local red = cp.make_tiled_tma_atom(cp.CopyReduceBulkTensorTileS2GOp("add"), R, sl, TILE)
      k { grid = { math.ceil(Wd / TILE[1]), math.ceil(Hd / TILE[2]) }, block = 128 }(load, store, red)
      local out = B:to_table()
      for _, v in ipairs(R:to_table()) do out[#out + 1] = v end
      return out
    end
    compare("tma", on(0, go), on("sim", go), 0)
  end)

  local GEMMS = {
    { cute.bf16, 256, 192, 128 }, { cute.f16, 200, 136, 88, "col", "row" }, { cute.e4m3, 128, 128, 128 },
    { cute.i8, 128, 96, 64 }, { cute.tf32, 136, 64, 40 }, { cute.bf16, 160, 96, 64, "row", "row", true },
  }
  for _, g in ipairs(GEMMS) do
    local dt, m, n, k, al, bl, fused = g[1], g[2], g[3], g[4], g[5] or "row", g[6] or "col", g[7]
    it(string.format("cute.gemm's Hopper kernel, %s %d x %d x %d, A %s B %s%s #gpu", dt.name, m, n, k, al, bl,
      fused and ", bias + gelu fused" or ""), function()
      if not need_sm90() then return end
      local int = dt.name == "i8"
      local a, b = randoms(dt.name, m * k, 6), randoms(dt.name, k * n, 7)
      local bias = randoms("f32", n, 8)
      local function go()
        local A, B = cute.tensor(dt, { m, k }, al), cute.tensor(dt, { k, n }, bl)
        A:copy_from(a)
        B:copy_from(b)
        local cdt = int and cute.i32 or cute.f32
        local C = cute.tensor(cdt, { m, n }, "row"):fill(int and -123456789 or 0 / 0)
        local opts
        if fused then
          local bt = cute.tensor(cute.f32, { n })
          bt:copy_from(bias)
          opts = { bias = bt, activation = "gelu" }
        end
        local p = require("cute.lib.gemm").plan(A, B, C, opts)
        assert.matches("^gemm_sm90_", p.kernel.name)
        cute.gemm(A, B, C, opts)
        cute.synchronize()
        return C:to_table()
      end
      compare("gemm " .. dt.name, on(0, go), on("sim", go), tol_of(dt.name == "tf32" and "tf32" or dt.name, "f32"))
    end)
  end

  it("a grouped GEMM on the Hopper kernel #gpu", function()
    if not need_sm90() then return end
    local T, K, N, off = 300, 64, 128, { 0, 100, 100, 300 }
    local a, b = randoms("bf16", T * K, 9), randoms("bf16", K * N * 3, 10)
    local function go()
      local A = cute.tensor(cute.bf16, { T, K }, "row")
      local B = cute.tensor(cute.bf16, { K, N, 3 }, cute.make_layout({ K, N, 3 }, { 1, K, K * N }))
      A:copy_from(a)
      B:copy_from(b)
      local C = cute.tensor(cute.f32, { T, N }, "row"):fill(0 / 0)
      require("cute.lib.gemm").grouped(A, B, C, off)
      cute.synchronize()
      return C:to_table()
    end
    compare("grouped", on(0, go), on("sim", go), 1e-4)
  end)
end)
