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

--- Threads and 16-byte chunks per thread for rows of n elements of dtype dt.
function M.config(n, dt)
  local vec = 16 / dt.bytes
  local threads = 128
  while threads < 1024 and n > threads * vec * 4 do threads = threads * 2 end
  return threads, math.max(1, math.ceil(n / (threads * vec))), vec
end

-- Reads row `row` of x into an f32 fragment of chunks * vec values; elements
-- past the end of the row get `fill`. Returns the fragment and a function
-- writing a fragment back (into the same positions of another row-major tensor).
local function load_row(x, row, threads, chunks, fill)
  local N = x.layout.shape[2]
  local tid = cute.thread_idx().x
  local vec = 16 / x.dtype.bytes
  local xr = x[{ row, cute._ }]
  local frag = cute.make_rmem_tensor({ vec * chunks }, cute.f32)
  for c = 0, chunks - 1 do
    local slice, first = common.thread_slice_1d(xr, c, tid, vec, threads, 1)
    cute.if_((first + vec):le(N), function()
      local f = slice:load()
      for i = 0, vec - 1 do frag[c * vec + i] = f[i]:to(cute.f32) end
    end, function()
      for v = 0, vec - 1 do
        local j = first + v
        frag[c * vec + v] = cute.where(j:lt(N), xr[cute.min(j, N - 1)]:to(cute.f32), fill)
      end
    end)
  end
  local function store(y, values)
    local yr = y[{ row, cute._ }]
    for c = 0, chunks - 1 do
      local slice, first = common.thread_slice_1d(yr, c, tid, vec, threads, 1)
      cute.if_((first + vec):le(N), function()
        local out = cute.make_fragment_like(slice, y.dtype)
        for i = 0, vec - 1 do out[i] = values[c * vec + i]:to(y.dtype) end
        slice:store(out)
      end, function()
        for v = 0, vec - 1 do
          local j = first + v
          cute.if_(j:lt(N), function() yr[j] = values[c * vec + v]:to(y.dtype) end)
        end
      end)
    end
  end
  -- a vector (N) read at the thread's positions (weights, biases)
  local function load_vec(w)
    local out = cute.make_rmem_tensor({ vec * chunks }, cute.f32)
    for c = 0, chunks - 1 do
      local slice, first = common.thread_slice_1d(w, c, tid, vec, threads, 1)
      cute.if_((first + vec):le(N), function()
        local f = slice:load()
        for i = 0, vec - 1 do out[c * vec + i] = f[i]:to(cute.f32) end
      end, function()
        for v = 0, vec - 1 do out[c * vec + v] = w[cute.min(first + v, N - 1)]:to(cute.f32) end
      end)
    end
    return out
  end
  return frag, store, load_vec
end

local softmax_k = cute.kernel("softmax_rows", function(x, y, threads, chunks)
  local row = cute.block_idx().x
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local frag, store = load_row(x, row, threads, chunks, -math.huge)
  local m = frag[0]
  for i = 1, n - 1 do m = cute.max(m, frag[i]) end
  m = common.block_reduce(m, cute.max, -math.huge, threads)
  local e = cute.make_rmem_tensor({ n }, cute.f32)
  local s = 0
  local mscaled = m * LOG2E
  for i = 0, n - 1 do
    e[i] = cute.exp2(cute.fma(frag[i], LOG2E, -mscaled), { fast = true })
    s = e[i] + s
  end
  s = common.block_reduce(s, common.add, 0, threads)
  local inv = cute.rcp(s, { fast = true })
  for i = 0, n - 1 do e[i] = e[i] * inv end
  store(y, e)
end)

local rms_k = cute.kernel("rmsnorm_rows", function(x, w, y, eps, threads, chunks)
  local row = cute.block_idx().x
  local N = x.layout.shape[2]
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local frag, store, load_vec = load_row(x, row, threads, chunks, 0)
  local ss = 0
  for i = 0, n - 1 do ss = cute.fma(frag[i], frag[i], ss) end
  ss = common.block_reduce(ss, common.add, 0, threads)
  local scale = cute.rsqrt(ss / N:to(cute.f32) + eps)
  local wf = load_vec(w)
  for i = 0, n - 1 do frag[i] = frag[i] * scale * wf[i] end
  store(y, frag)
end)

local ln_k = cute.kernel("layernorm_rows", function(x, w, b, y, eps, threads, chunks)
  local row = cute.block_idx().x
  local N = x.layout.shape[2]
  local vec = 16 / x.dtype.bytes
  local n = vec * chunks
  local frag, store, load_vec = load_row(x, row, threads, chunks, 0)
  local s = 0
  for i = 0, n - 1 do s = frag[i] + s end
  local nf = N:to(cute.f32)
  local mean = common.block_reduce(s, common.add, 0, threads) / nf
  -- the variance from centred values (two passes over registers: exact enough
  -- for long rows, unlike E[x^2] - E[x]^2); padding elements excluded
  local tid = cute.thread_idx().x
  local v = 0
  for c = 0, chunks - 1 do
    for i = 0, vec - 1 do
      local j = (c * threads + tid) * vec + i
      local d = cute.where(j:lt(N), frag[c * vec + i] - mean, 0)
      v = cute.fma(d, d, v)
    end
  end
  local var = common.block_reduce(v, common.add, 0, threads) / nf
  local rstd = cute.rsqrt(var + eps)
  local wf, bf = load_vec(w), load_vec(b)
  for i = 0, n - 1 do frag[i] = cute.fma((frag[i] - mean) * rstd, wf[i], bf[i]) end
  store(y, frag)
end)

M.kernels = { softmax = softmax_k, rmsnorm = rms_k, layernorm = ln_k }

local function rows(x) return x.layout.shape[1], x.layout.shape[2] end

--- y = softmax over each row of x (row-major M x N).
function M.softmax(x, y)
  local m, n = rows(x)
  local threads, chunks = M.config(n, x.dtype)
  softmax_k { grid = m, block = threads }(x, y, cute.constexpr(threads), cute.constexpr(chunks))
end

--- y = x / sqrt(mean(x^2) + eps) * w over each row (w: a vector of N).
function M.rmsnorm(x, w, y, eps)
  local m, n = rows(x)
  local threads, chunks = M.config(n, x.dtype)
  rms_k { grid = m, block = threads }(x, w, y, cute.f32(eps or 1e-6), cute.constexpr(threads), cute.constexpr(chunks))
end

--- y = (x - mean) / sqrt(var + eps) * w + b over each row.
function M.layernorm(x, w, b, y, eps)
  local m, n = rows(x)
  local threads, chunks = M.config(n, x.dtype)
  ln_k { grid = m, block = threads }(x, w, b, y, cute.f32(eps or 1e-5), cute.constexpr(threads),
    cute.constexpr(chunks))
end

return M
