-- The tensor-core GEMM of cute.lib (mma.sync, cute.gemm) against cuBLAS
-- measured in the same run (which uses Hopper's wgmma: mma.sync cannot reach
-- its peak). bf16 in, f32 accumulation, bf16 out, A and B row-major (torch's
-- layout: B is K x N, N-major). Checked against float64 on sampled entries
-- (every entry in quick mode).
local cute = require "cute"
local G = require "cute.lib.gemm"

return function(h)
  local function case(name, m, n, k, dt, out_dt, config, peer_dt, goal, tol)
    h:case {
      name = name, shape = m .. "x" .. n .. "x" .. k, dtype = dt.name, flops = 2 * m * n * k,
      peer = function(hh) return hh:cublas(m, n, k, peer_dt or dt, out_dt, { tf32 = dt == cute.f32 }) end,
      goal = goal,
      setup = function()
        return { A = cute.tensor(dt, { m, k }, "row"):uniform(-1, 1, 11),
          B = cute.tensor(dt, { k, n }, "row"):uniform(-1, 1, 12),
          C = cute.tensor(out_dt, { m, n }, "row"):fill(0 / 0) }
      end,
      run = function(s) G.gemm(s.A, s.B, s.C, { config = config }) end,
      check = function(s) return h.check_gemm(s.A, s.B, s.C, m, n, k, 256, tol) end,
      teardown = function(s) s.A:free(); s.B:free(); s.C:free() end,
    }
  end
  -- bf16 output: one bf16 rounding of a sum of exact products (2^-8 of |C| <= sum |products|)
  if h:quick() then
    case("tensor-core gemm", 333, 257, 190, cute.bf16, cute.bf16, nil, nil, 0.6, 2 ^ -8)
    case("tensor-core gemm", 256, 256, 128, cute.f16, cute.f32, nil, nil, 0.6, 1e-5)
    return
  end
  for _, sz in ipairs { 4096, 8192 } do
    case("tensor-core gemm", sz, sz, sz, cute.bf16, cute.bf16, nil, nil, 0.6, 2 ^ -8)
  end
  -- the configurations, at 4096^3 (for choosing the table in cute.lib.gemm)
  -- (CUTELUA_GEMM_SWEEP=1: all of them; otherwise Lua patterns, separated by
  -- commas, one of which a name must match)
  local sweep = os.getenv("CUTELUA_GEMM_SWEEP")
  local function chosen(name)
    if sweep == "1" then return true end
    for pat in sweep:gmatch("[^,]+") do
      if name:find(pat) then return true end
    end
    return false
  end
  if sweep then
    for name, cfg in pairs {
      ["128x128x32 s4 2x2"] = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2 },
      ["128x256x32 s4 2x4"] = { bm = 128, bn = 256, bk = 32, stages = 4, wm = 2, wn = 4 },
      ["128x256x64 s4 2x4"] = { bm = 128, bn = 256, bk = 64, stages = 4, wm = 2, wn = 4 },
      ["256x128x32 s4 4x2"] = { bm = 256, bn = 128, bk = 32, stages = 4, wm = 4, wn = 2 },
      ["128x128x64 s3 2x2"] = { bm = 128, bn = 128, bk = 64, stages = 3, wm = 2, wn = 2 },
      ["128x256x32 s3 2x4"] = { bm = 128, bn = 256, bk = 32, stages = 3, wm = 2, wn = 4 },
      ["128x256x64 s3 2x4 group 4"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4, group = 4 },
      ["128x256x64 s3 2x4 group 16"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4, group = 16 },
      ["128x256x64 s3 2x4 group 32"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4, group = 32 },
      ["128x256x64 s3 2x4 copies early"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4,
        copy_late = false },
      ["128x128x32 s4 2x2 copies early"] = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2,
        copy_late = false },
      ["128x256x64 s3 2x4 stores from registers"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4,
        smem_epilogue = false },
      ["128x256x64 s3 2x4 persistent"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4, persistent = true },
      ["128x128x32 s4 2x2 persistent"] = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2, persistent = true },
      ["128x256x64 s3 2x4 copies branch"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4,
        copy_branch = true },
      ["128x256x64 s3 4x4 single"] = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 4, wn = 4, frag_buffers = 1 },
      ["256x128x64 s3 4x4 single"] = { bm = 256, bn = 128, bk = 64, stages = 3, wm = 4, wn = 4, frag_buffers = 1 },
      ["128x256x32 s4 4x4 single"] = { bm = 128, bn = 256, bk = 32, stages = 4, wm = 4, wn = 4, frag_buffers = 1 },
      ["128x128x64 s3 2x4 single 2cta"] = { bm = 128, bn = 128, bk = 64, stages = 3, wm = 2, wn = 4, frag_buffers = 1,
        min_blocks = 2 },
      ["128x128x32 s4 2x4 single 2cta"] = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 4, frag_buffers = 1,
        min_blocks = 2 },
      ["128x128x32 s4 2x2 copies branch"] = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2,
        copy_branch = true },
    } do
      if chosen(name) then
        case("gemm " .. name, 4096, 4096, 4096, cute.bf16, cute.bf16, cfg, nil, 0.6, 2 ^ -8)
      end
    end
  end
end
