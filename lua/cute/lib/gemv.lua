--- cute.lib.gemv: the GEMM of a few rows (M <= 8: decode), a warp a column
-- of C, at the memory's speed.
--
--   C = alpha * A @ B + beta * C      A: M x K (K contiguous), B: K x N (K contiguous), M <= 8
--
-- A skinny GEMM reads each of B's K x N values once and uses it M times: it
-- is bound by the bandwidth of B, and a tensor-core tile of 64 or 128 rows
-- would mostly multiply zeros while its pipeline's round trips, not the
-- memory, set the pace. Here each warp owns a column n of C: its 32 lanes
-- stream column n of B (K contiguous) in 16-byte vectors, UNROLL of them in
-- flight a lane, and multiply each by the same K-slice of A's M rows (read
-- through L1: every warp of the SM reads the same A), accumulating M sums in
-- f32; shuffles reduce the sums across the warp and lane 0 writes C[0..M-1, n]
-- through the same fused epilogue as the Hopper kernel (alpha, beta, bias,
-- activation, a user function). K not a multiple of the warp's stride ends
-- in an element-by-element tail.
local cute = require "cute"
local common = require "cute.lib.common"

local M = {}

M.MAX_ROWS = 8
local WARPS, UNROLL, VEC = 8, 4, 8 -- (VEC: 8 16-bit values = one 16-byte load)

local kernels = {}

local function build(cfg, trace_key)
  local MR = cfg.m
  local fused = (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "") .. (cfg.fn and "_epilogue" or "")
  local sm90 = require "cute.lib.gemm_sm90"
  return cute.kernel("gemv_" .. cfg.dtype .. "_m" .. MR .. fused, function(A, B, C, alpha, beta, ...)
    local bias = ... -- (cfg.bias: the bias tensor)
    local K, N = A.layout.shape[2], B.layout.shape[1]
    local tid = cute.thread_idx().x
    local lane, warp = tid % 32, tid / 32
    local n = cute.block_idx().x * WARPS + warp
    local l = cute.block_idx().z
    if n < N then
      local acc = {}
      for m = 1, MR do acc[m] = cute.var(cute.f32, 0.0) end
      local Bn = B[{ n, cute._, l }]
      local rows = {}
      for m = 1, MR do rows[m] = A[{ m - 1, cute._, l }] end
      local tile = VEC * 32 * UNROLL
      local full = K / tile
      for i in cute.range(full) do
        local b = common.thread_slice_1d(Bn, i, lane, VEC, 32, UNROLL):load()
        for m = 1, MR do
          local a = common.thread_slice_1d(rows[m], i, lane, VEC, 32, UNROLL):load()
          local s = acc[m].value
          for e = 0, VEC * UNROLL - 1 do s = cute.fma(a[e]:to(cute.f32), b[e]:to(cute.f32), s) end
          acc[m].value = s
        end
      end
      for k in cute.range(full * tile + lane, K, 32) do
        local b = Bn[k]:to(cute.f32)
        for m = 1, MR do acc[m].value = cute.fma(rows[m][k]:to(cute.f32), b, acc[m].value) end
      end
      for m = 1, MR do
        local v = cute.warp_reduce_shuffle(acc[m].value, common.add) * alpha
        if lane == 0 then
          if cfg.beta then v = cute.fma(beta, C[{ m - 1, n, l }]:to(cute.f32), v) end
          if cfg.bias or cfg.act or cfg.fn then v = sm90.fused(cfg, v, bias, m - 1, n, l) end
          C[{ m - 1, n, l }] = v:to(C.dtype)
        end
      end
    end
  end, { trace_key = trace_key, preprocess = true })
end

--- The kernel for a configuration {dtype, m (rows), beta, bias, bias_dtype, act, fn}.
-- @param cfg the configuration
-- @return the cute.kernel
-- @usage local k = M.kernel({ dtype = "bf16", m = 1 })
function M.kernel(cfg)
  if cfg.fn then return build(cfg, nil) end -- (traced per function: no key stands for it)
  local key = table.concat({ cfg.dtype, cfg.m, tostring(cfg.beta), tostring(cfg.bias), tostring(cfg.bias_dtype),
    tostring(cfg.act) }, ",")
  local k = kernels[key]
  if not k then
    k = build(cfg, "cute.lib.gemv:" .. key)
    kernels[key] = k
  end
  return k
end

--- Why this kernel cannot take a problem (nil when it can): the kernel views
-- A (M, K, L) and B (N, K, L) with their strides (elements), the dtype.
-- @param dt the inputs' dtype
-- @param m the rows of A and C
-- @param a_stride A's view strides {rows, K, L}
-- @param b_stride B's view strides {columns, K, L}
-- @param Av A's kernel view
-- @param Bv B's kernel view
-- @return a sentence, or nil
-- @usage local why = M.unsupported(cute.bf16, 1, { 4096, 1, 0 }, { 4096, 1, 0 }, Av, Bv)
function M.unsupported(dt, m, a_stride, b_stride, Av, Bv)
  if m > M.MAX_ROWS then return string.format("M is %d (the GEMV path takes up to %d rows)", m, M.MAX_ROWS) end
  if dt.name ~= "bf16" and dt.name ~= "f16" then return "its inputs are " .. dt.name .. " (bf16 or f16)" end
  for _, x in ipairs { { "A", a_stride, Av }, { "B", b_stride, Bv } } do
    local st = x[2]
    if st[2] ~= 1 then return x[1] .. " is not K-contiguous" end
    if st[1] % VEC ~= 0 or st[3] % VEC ~= 0 then return x[1] .. "'s strides are not multiples of 16 bytes" end
    if not x[3].fake and x[3]:alignment() < 16 then return x[1] .. " is not 16-byte aligned" end
  end
  return nil
end

--- The launch for kernel views Av (M, K, L), Bv (N, K, L), Cv (M, N, L):
-- {kernel, args, grid, block, config}.
-- @param Av A's kernel view
-- @param Bv B's kernel view
-- @param Cv C's kernel view
-- @param alpha the scale of A @ B
-- @param beta the scale of C (0: C is not read)
-- @param opts cute.gemm's options (bias, bias_mode, activation, epilogue)
-- @return the plan
-- @usage local p = M.plan(Av, Bv, Cv, 1, 0, {})
function M.plan(Av, Bv, Cv, alpha, beta, opts)
  local m, n = Av.layout.shape[1], Bv.layout.shape[1]
  local batch = Av.layout.shape[3]
  local cfg = { dtype = Av.dtype.name, m = m, beta = beta ~= 0 or nil }
  local bias = require("cute.lib.gemm_sm90").fused_config(cfg, opts, m, n, false)
  local args = { Av, Bv, Cv, cute.f32(alpha), cute.f32(beta) }
  if bias then args[6] = bias end
  return { kernel = M.kernel(cfg), args = args, grid = { math.ceil(n / WARPS), 1, batch }, block = WARPS * 32,
    config = cfg }
end

return M
