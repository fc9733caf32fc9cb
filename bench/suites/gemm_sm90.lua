-- The GEMM bar of issue 18 (the Hopper GEMM): cute.gemm (whatever kernel it
-- picks for the shape: the TMA + wgmma kernel on sm_90 where it applies)
-- against cuBLAS measured in the same run, on the issue's shapes. bf16 in, f32
-- accumulation, bf16 out; A row-major (M x K), B K-major (stored N x K, the
-- layout of a linear layer's weights, which fp8 needs), C row-major; and B
-- N-major (K x N row-major, as torch's A @ B has it) at 4096^3 and 8192^3.
-- The decode shapes (M <= 128) are also reported as a fraction of the copy
-- bandwidth (cuMemcpyDtoD) while reading the weights (B) once, the L2 flushed
-- before each call, and beside it against a copy moving the same bytes (a
-- 40 us kernel pays a ramp-up and a tail that the 1 GiB copy hides). fp8 (e4m3 in,
-- bf16 out, unit scales) runs against cuBLASLt's TN matmul. The grouped MoE
-- GEMM (cute.lib.gemm.grouped, one launch) runs against cuBLAS called once an
-- expert. Where torch is present, torch.matmul (bench/gemm_torch.py, run once
-- for all shapes when the first row is measured) is a second peer for the bf16
-- rows, listed below the table.
-- Checked against float64 on sampled entries, C poisoned with NaN first.
local cute = require "cute"

-- The cuBLAS runner for row-major A (M x K) @ B -> C (M x N), B stored N x K
-- (K-major) or, with n_major, K x N.
local function cublas_kmajor(h, m, n, k, dt, c_dt, n_major)
  return h:cublas(m, n, k, dt, c_dt, { b_trans = not n_major, label = n_major and "B N-major" or "B K-major" })
end

-- A cuBLASLt runner for the same GEMM in fp8 e4m3 (bf16 out): row-major C = A @ B
-- with B stored N x K is, column-major, C^T (N x M) = op(B') op(A') with B' the
-- K x N column-major storage of B transposed (trans_a) and A' that of A: "TN".
local function cublaslt_fp8(h, m, n, k)
  local dt = cute.e4m3
  local A, B, C = cute.alloc(m * k), cute.alloc(k * n), cute.alloc(m * n * 2)
  h.fill_random(A, dt, m * k, 1)
  h.fill_random(B, dt, k * n, 2)
  local spec = { a = B, b = A, d = C, m = n, n = m, k = k, a_dtype = dt, b_dtype = dt, d_dtype = cute.bf16,
    trans_a = true }
  return {
    name = string.format("cublasLt e4m3/bf16 %dx%dx%d TN", m, n, k), unit = "TFLOP/s", flops = 2 * m * n * k,
    run = function() cute.cublas.lt_matmul(spec) end,
    free = function()
      A:free()
      B:free()
      C:free()
    end,
  }
end

-- torch.matmul's figures for bf16 shapes (keys "M:N:K:k" for B K-major, "...:n" for
-- N-major), measured once by bench/gemm_torch.py in this run; {} without torch.
local function torch_figures(keys)
  local out = {}
  local p = io.popen("python3 bench/gemm_torch.py " .. table.concat(keys, " ") .. " 2>/dev/null")
  if not p then return out end
  local header
  for line in p:lines() do
    if line:sub(1, 1) == "#" then header = line:sub(3) end
    local key, tflops = line:match("^torch matmul (%S+) [%d.]+ ([%d.]+)$")
    if key then
      out[key] = { name = string.format("torch.matmul (%s)", header or "torch"), value = tonumber(tflops),
        unit = "TFLOP/s" }
    end
  end
  p:close()
  return out
end

return function(h)
  local tol = 2 ^ -8
  -- torch.matmul, a second peer for the bf16 rows: measured once, when the first row asks
  local torch, torch_keys = nil, {}
  local function also(key)
    torch_keys[#torch_keys + 1] = key
    return function()
      torch = torch or torch_figures(torch_keys)
      return { torch[key] }
    end
  end -- one bf16 rounding of a sum of exact products
  local function setup(m, n, k, dt, b_layout)
    return function()
      return { A = cute.tensor(dt, { m, k }, "row"):uniform(-1, 1, 11),
        B = cute.tensor(dt, { k, n }, b_layout or "col"):uniform(-1, 1, 12), -- "col": N x K row-major
        C = cute.tensor(cute.bf16, { m, n }, "row"):fill(0 / 0) }
    end
  end
  local function run(s) cute.gemm(s.A, s.B, s.C) end
  local function check(m, n, k) return function(s) return h.check_gemm(s.A, s.B, s.C, m, n, k, 256, tol) end end
  local function teardown(s) s.A:free(); s.B:free(); s.C:free() end

  local function bf16(m, n, k, goal)
    h:case {
      name = "gemm bf16", shape = m .. "x" .. n .. "x" .. k, dtype = "bf16", flops = 2 * m * n * k, goal = goal,
      peer = function(hh) return cublas_kmajor(hh, m, n, k, cute.bf16, cute.bf16) end,
      also = also(m .. ":" .. n .. ":" .. k .. ":k"),
      setup = setup(m, n, k, cute.bf16), run = run, check = check(m, n, k), teardown = teardown,
      -- the decode shapes from HBM, for both (4096 x 4096 weights would stay in the L2)
      flush_l2 = m <= 128,
    }
  end
  -- B N-major (K x N row-major, as torch's A @ B has it): MN-major wgmma operands
  local function bf16_nmajor(m, n, k, goal)
    h:case {
      name = "gemm bf16, B N-major", shape = m .. "x" .. n .. "x" .. k, dtype = "bf16", flops = 2 * m * n * k,
      goal = goal,
      peer = function(hh) return cublas_kmajor(hh, m, n, k, cute.bf16, cute.bf16, true) end,
      also = also(m .. ":" .. n .. ":" .. k .. ":n"),
      setup = setup(m, n, k, cute.bf16, "row"), run = run, check = check(m, n, k), teardown = teardown,
    }
  end
  -- decode: the weights (B, n x k bf16) read once per GEMM, against the copy bandwidth;
  -- pdl: each launch a programmatic dependent launch (opts.pdl), as in a chain of layers,
  -- its launch and set-up overlapping the previous GEMM's end; "prefetch": also
  -- opts.pdl_prefetch_b (the weights' first stages load before the wait, under the
  -- previous GEMM's last tiles)
  local PDL = { pdl = true }
  local PDL_PRE = { pdl = true, pdl_prefetch_b = true }
  local function run_pdl(s) cute.gemm(s.A, s.B, s.C, PDL) end
  local function run_pdl_pre(s) cute.gemm(s.A, s.B, s.C, PDL_PRE) end
  local function decode_bandwidth(m, n, k, pdl)
    h:case {
      name = pdl == "prefetch" and "gemm bf16 (weights GB/s, PDL chain, B prefetched)"
        or pdl and "gemm bf16 (weights GB/s, PDL chain)" or "gemm bf16 (weights GB/s)",
      shape = m .. "x" .. n .. "x" .. k, dtype = "bf16", bytes = n * k * 2,
      peer = "copy", goal = 0.85,
      also = function(hh) return { hh:copy_bandwidth_of(n * k * 2) } end, -- a copy of the same size
      flush_l2 = true, -- (4096 x 4096 weights, 32 MiB, would otherwise stay in the 50 MB L2)
      setup = setup(m, n, k, cute.bf16), run = pdl == "prefetch" and run_pdl_pre or pdl and run_pdl or run,
      check = check(m, n, k), teardown = teardown,
    }
  end
  -- fp8 e4m3 in (unit scales), bf16 out, against cuBLASLt's TN matmul on the same layout
  local function fp8(m, n, k)
    h:case {
      name = "gemm fp8 e4m3 (vs cuBLASLt)", shape = m .. "x" .. n .. "x" .. k, dtype = "e4m3", flops = 2 * m * n * k,
      goal = 1.1,
      peer = function(hh) return cublaslt_fp8(hh, m, n, k) end,
      setup = setup(m, n, k, cute.e4m3), run = run, check = check(m, n, k), teardown = teardown,
    }
  end
  -- the MoE layer: 8 experts, 4096 tokens x 1024 split unevenly, each expert's weights 1024 x 4096
  -- (stored N x K, K-major), in one launch (cute.lib.gemm.grouped); the peer: cuBLAS, one call an expert
  local function grouped(T, K, N, split)
    local off = { 0 }
    for e = 1, #split do off[e + 1] = off[e] + split[e] end
    local E = #split
    local G = require "cute.lib.gemm"
    h:case {
      name = "grouped gemm bf16, " .. E .. " experts", shape = T .. " tok x" .. K .. "x" .. N .. " ("
        .. table.concat(split, "+") .. ")", dtype = "bf16", flops = 2 * T * N * K, goal = 1.05,
      peer = function()
        local s = {}
        return {
          name = string.format("cublas bf16, one call an expert (%d)", E), unit = "TFLOP/s", flops = 2 * T * N * K,
          run = function()
            if not s.A then -- the same tensors as the kernel's (made by setup before the peer runs)
              s.A, s.B, s.C = cute.tensor(cute.bf16, { T, K }, "row"):uniform(-1, 1, 1),
                cute.tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })):uniform(-1, 1, 2),
                cute.tensor(cute.bf16, { T, N }, "row")
            end
            local a, b, c = tonumber(s.A:data_ptr()), tonumber(s.B:data_ptr()), tonumber(s.C:data_ptr())
            for e = 1, E do
              local rows = off[e + 1] - off[e]
              if rows > 0 then
                cute.cublas.gemm_rowmajor { a = a + off[e] * K * 2, b = b + (e - 1) * K * N * 2,
                  c = c + off[e] * N * 2, m = rows, n = N, k = K, dtype = cute.bf16, c_dtype = cute.bf16,
                  b_trans = true }
              end
            end
          end,
          free = function()
            if s.A then s.A:free(); s.B:free(); s.C:free() end
          end,
        }
      end,
      setup = function()
        return { A = cute.tensor(cute.bf16, { T, K }, "row"):uniform(-1, 1, 11),
          B = cute.tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })):uniform(-1, 1, 12),
          C = cute.tensor(cute.bf16, { T, N }, "row"):fill(0 / 0) }
      end,
      run = function(st) G.grouped(st.A, st.B, st.C, off) end,
      check = function(st)
        local ok, e = pcall(cute.testing.check_grouped_gemm, st.A, st.B, st.C, off, { rtol = tol, samples = 256 })
        return ok, not ok and tostring(e) or nil
      end,
      teardown = teardown,
    }
  end

  if h:quick() then
    bf16(256, 256, 128, 1.05)
    bf16(16, 512, 512, 0.95)
    bf16_nmajor(256, 256, 128, 1.05)
    decode_bandwidth(1, 1024, 1024)
    decode_bandwidth(128, 1024, 1024, true)
    decode_bandwidth(128, 1024, 1024, "prefetch")
    fp8(256, 256, 256)
    grouped(512, 256, 512, { 128, 0, 200, 184 })
    return
  end
  local shapes = {
    { 2048, 2048, 2048 }, { 4096, 4096, 4096 }, { 8192, 8192, 8192 }, { 4096, 14336, 4096 }, { 8192, 1024, 8192 },
    { 16384, 16384, 1024 }, { 128, 8192, 8192 }, { 16, 8192, 8192 }, { 1, 4096, 4096 },
  }
  for _, s in ipairs(shapes) do
    bf16(s[1], s[2], s[3], 1.05)
  end
  bf16_nmajor(4096, 4096, 4096, 1.05)
  bf16_nmajor(8192, 8192, 8192, 1.05)
  for _, s in ipairs { { 128, 8192, 8192 }, { 16, 8192, 8192 }, { 1, 4096, 4096 } } do
    decode_bandwidth(s[1], s[2], s[3])
  end
  for _, s in ipairs { { 128, 8192, 8192 }, { 16, 8192, 8192 } } do
    decode_bandwidth(s[1], s[2], s[3], true)
    decode_bandwidth(s[1], s[2], s[3], "prefetch")
  end
  grouped(4096, 1024, 4096, { 1024, 768, 640, 512, 448, 384, 192, 128 })
  fp8(4096, 4096, 4096)
  fp8(8192, 8192, 8192)
end
