-- SIMT SGEMM (f32 on the CUDA cores, cute.lib.sgemm) against cuBLAS's f32 GEMM
-- (no TF32) measured in the same run. Checked against float64 on sampled
-- entries (64 at full size, every entry in quick mode).
local cute = require "cute"
local sg = require "cute.lib.sgemm"

return function(h)
  local sizes = h:quick() and { { 333, 257, 190 } } or { { 4096, 4096, 4096 } }
  for _, sz in ipairs(sizes) do
    local Mr, N, K = sz[1], sz[2], sz[3]
    h:case {
      name = "SIMT sgemm", shape = Mr .. "x" .. N .. "x" .. K, dtype = "f32", flops = 2 * Mr * N * K,
      peer = function(hh) return hh:cublas(Mr, N, K, cute.f32, cute.f32) end, goal = 0.7,
      setup = function()
        local s = { A = cute.tensor(cute.f32, { Mr, K }, "row"):uniform(-1, 1, 901),
          B = cute.tensor(cute.f32, { K, N }, "row"):uniform(-1, 1, 902),
          C = cute.tensor(cute.f32, { Mr, N }, "row"):fill(0 / 0) }
        return s
      end,
      run = function(s) sg.gemm(s.A, s.B, s.C, 1, 0) end,
      -- beta = 0 must not read the poison: C must have no NaN left
      check = function(s) return h.check_gemm(s.A, s.B, s.C, Mr, N, K, 64, 1e-5) end,
      teardown = function(s) s.A:free(); s.B:free(); s.C:free() end,
    }
  end
end
