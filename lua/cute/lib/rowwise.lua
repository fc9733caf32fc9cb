--- cute.lib.rowwise: row-wise kernels (softmax, RMSNorm, LayerNorm) at the
-- bandwidth limit: one block per row of a row-major matrix; the row is read
-- once into registers (16-byte vectors, `chunks` of them per thread, a
-- compile-time count chosen from the row length), reduced across the block
-- with warp shuffles and shared memory, and written once. Math in f32;
-- inputs and outputs in any float dtype (bf16 in the benchmarks). Partial
-- vectors at the end of a row are predicated.
--
--   cute.lib.rowwise.softmax(x, y)
--   cute.lib.rowwise.rmsnorm(x, w, y, eps)
--   cute.lib.rowwise.layernorm(x, w, b, y, eps)
local cute = require "cute"
local common = require "cute.lib.common"

local M = {}

local LOG2E = 1.4426950408889634

--- Threads and 16-byte chunks per thread for rows of n elements of dtype dt:
-- four 16-byte chunks a thread (for bf16, 32 elements: 16 registers a
-- tensor, the elements stay packed in their dtype) with 128 to 512 threads a
-- row, then up to eight chunks, then 1024 threads. 512 threads rather than
-- 1024 for long rows: two blocks fit an SM, so one streams while the other
-- reduces.
-- Rows that the threads' chunks do not cover exactly take a kernel with
-- predicated edges, which needs more registers: for those, at most four
-- chunks (1024 threads beyond 512 x 4).
-- @param n the row length
-- @param dt the dtype
-- @return {threads =, chunks =, exact =} and the elements a 16-byte chunk holds
-- @usage local cfg, vec = cute.lib.rowwise.config(4096, cute.bf16)
function M.config(n, dt)
  local vec = 16 / dt.bytes
  local threads = 128
  while threads < 512 and n > threads * vec * 4 do threads = threads * 2 end
  local chunks = math.ceil(n / (threads * vec))
  local exact = n == threads * vec * chunks
  if chunks > (exact and 8 or 4) then threads = 1024 end
  chunks = math.max(1, math.ceil(n / (threads * vec)))
  return { threads = threads, chunks = chunks, exact = n == threads * vec * chunks }, vec
end

-- Launch bounds: a thread may use 64 registers (2048 threads an SM).
local function bounds(threads) cute.launch_bounds(threads, math.max(1, math.floor(1024 / threads))) end

-- A row of a row-major tensor and where this thread's chunks of it lie:
-- chunk c of the thread is the vec elements from (c * threads + tid) * vec.
-- `full` (uniform over the grid) says every chunk of every thread is inside
-- the row: then all chunks move as 16-byte vectors in one straight block of
-- code (all loads in flight together); otherwise a chunk at a time, element
-- by element at the end of the row. Plain Lua, through the preprocessor
-- (cute.preprocess: it is a helper the kernels call): an `if` on a run-time
-- value is a branch on the GPU, on a Lua value (cfg.exact) it picks code.
local row_io = cute.preprocess(function(N, tid, vec, cfg)
  local threads, chunks = cfg.threads, cfg.chunks
  -- exact (known when compiling): every row is covered; no predicated code
  local io = { full = cfg.exact or N >= threads * vec * chunks }
  local n = vec * chunks

  --- Reads the thread's elements of row `row` of each tensor of `list` (a
  -- row-major matrix, or a vector shared by all rows when row is nil) into
  -- fragments of their own dtypes; elements past the end get fill[i].
  function io.load(list, rows, fills)
    local frags = {}
    for i, t in ipairs(list) do frags[i] = cute.make_rmem_tensor({ n }, t.dtype) end
    local rowt = {}
    for i, t in ipairs(list) do rowt[i] = rows[i] and t[{ rows[i], cute._ }] or t end
    if io.full then
      for i = 1, #list do
        for c = 0, chunks - 1 do
          cute.copy(cute.local_tile(rowt[i], { vec }, { tid + c * threads }), cute.local_tile(frags[i], { vec }, { c }))
        end
      end
    else
      -- a chunk at a time: a vector where the chunk is inside the row, else
      -- element by element (fewer registers than all elements at once)
      for c = 0, chunks - 1 do
        local first = (tid + c * threads) * vec
        if first + vec <= N then
          for i = 1, #list do
            local src = cute.local_tile(rowt[i], { vec }, { tid + c * threads })
            cute.copy(src, cute.local_tile(frags[i], { vec }, { c }))
          end
        else
          for i = 1, #list do
            for v = 0, vec - 1 do
              local j = first + v
              frags[i][c * vec + v] = cute.where(j < N, rowt[i][cute.min(j, N - 1)], fills[i])
            end
          end
        end
      end
    end
    return frags
  end

  --- Writes value(k, p) (f32) for the thread's elements k = 0 .. n-1 into
  -- row `row` of y. vectors: tensors of N elements shared by all rows
  -- (weights, biases), read chunk by chunk as they are needed (from L2)
  -- rather than held through the kernel; p[i] is element k of vectors[i]
  -- (f32).
  function io.store(y, row, value, vectors)
    vectors = vectors or {}
    local yr = y[{ row, cute._ }]
    local function store_chunk(c)
      local start = tid + c * threads
      local parts = {}
      for i, t in ipairs(vectors) do parts[i] = cute.local_tile(t, { vec }, { start }):load() end
      local out = cute.make_rmem_tensor({ vec }, y.dtype)
      for v = 0, vec - 1 do
        local p = {}
        for i = 1, #vectors do p[i] = parts[i][v]:to(cute.f32) end
        out[v] = value(c * vec + v, p):to(y.dtype)
      end
      cute.copy(out, cute.local_tile(yr, { vec }, { start }))
    end
    if io.full then
      for c = 0, chunks - 1 do store_chunk(c) end -- a chunk at a time: what it needed dies before the next
    else
      for c = 0, chunks - 1 do
        local first = (tid + c * threads) * vec
        if first + vec <= N then
          store_chunk(c)
        else
          for v = 0, vec - 1 do
            local j = first + v
            if j < N then
              local p = {}
              for i, t in ipairs(vectors) do p[i] = t[j]:to(cute.f32) end
              yr[j] = value(c * vec + v, p):to(y.dtype)
            end
          end
        end
      end
    end
  end

  --- How many of the thread's n elements lie past the end of the row.
  function io.padding()
    local pad = 0
    for c = 0, chunks - 1 do
      local left = N - (tid + c * threads) * vec -- elements of the row from this chunk on
      pad = pad + (vec - cute.max(cute.min(left, vec), 0))
    end
    return pad
  end
  return io
end)

local function f32(v) return v:to(cute.f32) end

-- Weights and biases are read as the output is written, not with the row:
-- they are in L2 (every row reads them), and holding them through the
-- reductions would cost the registers that keep 2048 threads an SM.

-- softmax: the row stays in registers in x's dtype; exp is computed twice
-- (for the sum and for the output) rather than kept in f32 registers, so
-- that long rows fit with several blocks an SM.
local softmax_k = cute.kernel("softmax_rows", function(x, y, cfg)
  local threads, chunks = cfg.threads, cfg.chunks
  bounds(threads)
  local row, tid = cute.block_idx().x, cute.thread_idx().x
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local io = row_io(x.layout.shape[2], tid, vec, cfg)
  local xf = io.load({ x }, { row }, { -math.huge })[1]
  local m = f32(xf[0])
  for i = 1, n - 1 do m = cute.max(m, f32(xf[i])) end
  m = common.block_reduce(m, cute.max, -math.huge, threads)
  cute.opaque(xf)
  local mscaled = m * LOG2E
  local function e(i) return cute.exp2(cute.fma(f32(xf[i]), LOG2E, -mscaled), { fast = true }) end
  local s = 0
  for i = 0, n - 1 do s = e(i) + s end
  s = common.block_reduce(s, common.add, 0, threads)
  cute.opaque(xf) -- recompute exp below rather than hold n f32 values through the reduction
  -- x_i - m - log(s) in base 2: one exp a value, no division
  local shift = mscaled + cute.log2(s, { fast = true })
  io.store(y, row, function(i) return cute.exp2(cute.fma(f32(xf[i]), LOG2E, -shift), { fast = true }) end)
end, { trace_key = "cute.lib.rowwise:softmax" })

local rms_k = cute.kernel("rmsnorm_rows", function(x, w, y, eps, cfg)
  local threads, chunks = cfg.threads, cfg.chunks
  bounds(threads)
  local row, tid = cute.block_idx().x, cute.thread_idx().x
  local N = x.layout.shape[2]
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local io = row_io(N, tid, vec, cfg)
  local xf = io.load({ x }, { row }, { 0 })[1]
  local ss = 0
  for i = 0, n - 1 do ss = cute.fma(f32(xf[i]), f32(xf[i]), ss) end
  ss = common.block_reduce(ss, common.add, 0, threads)
  cute.opaque(xf)
  local scale = cute.rsqrt(ss / N:to(cute.f32) + eps)
  io.store(y, row, function(i, p) return f32(xf[i]) * scale * p[1] end, { w })
end, { trace_key = "cute.lib.rowwise:rmsnorm" })

local ln_k = cute.kernel("layernorm_rows", function(x, w, b, y, eps, cfg)
  local threads, chunks = cfg.threads, cfg.chunks
  bounds(threads)
  local row, tid = cute.block_idx().x, cute.thread_idx().x
  local N = x.layout.shape[2]
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local io = row_io(N, tid, vec, cfg)
  local xf = io.load({ x }, { row }, { 0 })[1]
  local s = 0
  for i = 0, n - 1 do s = f32(xf[i]) + s end
  local nf = N:to(cute.f32)
  local mean = common.block_reduce(s, common.add, 0, threads) / nf
  cute.opaque(xf)
  -- the variance from centred values (a second pass over registers: exact
  -- enough for long rows, unlike E[x^2] - E[x]^2); padding excluded
  local v = 0
  for i = 0, n - 1 do
    local d = f32(xf[i]) - mean
    v = cute.fma(d, d, v)
  end
  -- padding elements (0) each added mean^2: take them out
  v = v - io.padding():to(cute.f32) * mean * mean
  local var = common.block_reduce(v, common.add, 0, threads) / nf
  cute.opaque(xf)
  local rstd = cute.rsqrt(var + eps)
  io.store(y, row, function(i, p) return cute.fma((f32(xf[i]) - mean) * rstd, p[1], p[2]) end, { w, b })
end, { trace_key = "cute.lib.rowwise:layernorm" })

M.kernels = { softmax = softmax_k, rmsnorm = rms_k, layernorm = ln_k }

local function rows(x) return x.layout.shape[1], x.layout.shape[2] end

--- y = softmax over each row of x (row-major M x N).
-- @param x a row-major device tensor (M x N)
-- @param y the result, like x
-- @usage cute.lib.rowwise.softmax(x, y)
function M.softmax(x, y)
  local m, n = rows(x)
  local cfg = M.config(n, x.dtype)
  softmax_k { grid = m, block = cfg.threads }(x, y, cute.constexpr(cfg))
end

--- y = x / sqrt(mean(x^2) + eps) * w over each row (w: a vector of N).
-- @param x a row-major device tensor (M x N)
-- @param w the weights, a device tensor of N elements
-- @param y the result, like x
-- @param eps optional: the epsilon (default 1e-6 for rmsnorm, 1e-5 for layernorm)
-- @usage cute.lib.rowwise.rmsnorm(x, w, y, 1e-6)
function M.rmsnorm(x, w, y, eps)
  local m, n = rows(x)
  local cfg = M.config(n, x.dtype)
  rms_k { grid = m, block = cfg.threads }(x, w, y, cute.f32(eps or 1e-6), cute.constexpr(cfg))
end

--- y = (x - mean) / sqrt(var + eps) * w + b over each row.
-- @param x a row-major device tensor (M x N)
-- @param w the weights, a device tensor of N elements
-- @param b the biases, a device tensor of N elements
-- @param y the result, like x
-- @param eps optional: the epsilon (default 1e-6 for rmsnorm, 1e-5 for layernorm)
-- @usage cute.lib.rowwise.layernorm(x, w, b, y, 1e-5)
function M.layernorm(x, w, b, y, eps)
  local m, n = rows(x)
  local cfg = M.config(n, x.dtype)
  ln_k { grid = m, block = cfg.threads }(x, w, b, y, cute.f32(eps or 1e-5), cute.constexpr(cfg))
end

return M
