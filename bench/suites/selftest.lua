-- The harness checking itself: a device-to-device copy timed as a "kernel"
-- against the copy bandwidth peer (its ratio should be near 1), and cuBLAS's
-- bf16 GEMM against cuBLAS measured separately. Used by the test suite in
-- quick mode to prove the harness works on the GPU.
local cute = require "cute"

return function(h)
  local n = h:size(256 * 1024 * 1024, 16 * 1024 * 1024) -- f32 elements
  h:case {
    name = "memcpy as a kernel", shape = string.format("%d MiB", n * 4 / 1024 ^ 2), dtype = "f32",
    bytes = 2 * n * 4, peer = "copy", goal = 0.9,
    setup = function()
      local s = { a = cute.alloc(n * 4), b = cute.alloc(n * 4) }
      s.host = h.fill_random(s.a, cute.f32, n, 11)
      s.b:memset(0x7fc00000, 4, n) -- poison
      return s
    end,
    run = function(s) s.b:copy_from(s.a, n * 4) end,
    check = function(s)
      local chunk = 16 * 1024 * 1024 -- elements a download (a whole GiB would not fit one FFI array of doubles)
      for first = 0, n - 1, chunk do
        local m = math.min(chunk, n - first)
        local got = h.download(s.b, cute.f32, m, first * 4)
        for i = 0, m - 1 do
          if got[i] ~= s.host[first + i] then return false, "element " .. (first + i) end
        end
      end
      return true
    end,
    teardown = function(s)
      s.a:free()
      s.b:free()
    end,
  }
  local m = h:size(4096, 1024)
  h:case {
    name = "cublas bf16 gemm", shape = m .. "^3", dtype = "bf16", flops = 2 * m * m * m, goal = 0.9,
    peer = function(hh) return hh:cublas(m, m, m, cute.bf16, cute.f32) end,
    setup = function()
      local s = { A = cute.alloc(m * m * 2), B = cute.alloc(m * m * 2), C = cute.alloc(m * m * 4) }
      s.a = h.fill_random(s.A, cute.bf16, m * m, 21)
      s.b = h.fill_random(s.B, cute.bf16, m * m, 22)
      return s
    end,
    run = function(s)
      cute.cublas.gemm_rowmajor { a = s.A, b = s.B, c = s.C, m = m, n = m, k = m, dtype = cute.bf16,
        c_dtype = cute.f32 }
    end,
    check = function(s)
      -- 64 sampled entries against a float64 reference
      local c = h.download(s.C, cute.f32, m * m)
      local rt = require("cute._c").rt
      local ffi = require "ffi"
      local a, b = ffi.new("double[?]", m * m), ffi.new("double[?]", m * m)
      rt.to_doubles(a, s.a, cute.bf16.code, m * m)
      rt.to_doubles(b, s.b, cute.bf16.code, m * m)
      local worst = 0
      for t = 1, 64 do
        local i, j = (t * 7919) % m, (t * 104729) % m
        local ref, mag = 0, 0
        for kk = 0, m - 1 do
          ref = ref + a[i * m + kk] * b[kk * m + j]
          mag = mag + math.abs(a[i * m + kk] * b[kk * m + j])
        end
        worst = math.max(worst, math.abs(c[i * m + j] - ref) / mag)
      end
      return worst < 1e-5, string.format("worst relative error %.3g", worst)
    end,
    teardown = function(s)
      s.A:free()
      s.B:free()
      s.C:free()
    end,
  }
end
