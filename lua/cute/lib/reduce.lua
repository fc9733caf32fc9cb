--- cute.lib.reduce: reductions at the bandwidth limit.
--
--   cute.lib.reduce.sum(x)  /  cute.lib.reduce.max(x)      a whole contiguous vector -> a number
--   cute.lib.reduce.rows(x, out, "sum" | "max")             out[i] = op over row i of a row-major matrix
--
-- The vector reduction is two launches: every block reduces one tile (each
-- thread several 16-byte vectors in flight, then warp shuffles and shared
-- memory) into a partial; one block then reduces the partials. Deterministic:
-- no atomics, the same order every run.
local cute = require "cute"
local common = require "cute.lib.common"

local M = {}

local THREADS, UNROLL = 256, 4

local OPS = {
  sum = { combine = common.add, identity = 0 },
  max = { combine = cute.max, identity = -math.huge },
}

-- Reduces a thread's fragment (f32) and then the block.
local function reduce_frag(frag, n, op)
  local acc = frag[0]:to(cute.f32)
  for i = 1, n - 1 do acc = op.combine(acc, frag[i]:to(cute.f32)) end
  return common.block_reduce(acc, op.combine, op.identity, THREADS)
end

local function partial_kernel(name)
  local op = OPS[name]
  return cute.kernel("reduce_" .. name .. "_partial", function(x, partial)
    local n = cute.size(x)
    local vec = 16 / x.dtype.bytes
    local bid, tid = cute.block_idx().x, cute.thread_idx().x
    local slice, first, tile = common.thread_slice_1d(x, bid, tid, vec, THREADS, UNROLL)
    local frag = cute.make_rmem_tensor({ vec * UNROLL }, cute.f32)
    if bid * tile + tile <= n then
      local f = slice:load()
      for i = 0, vec * UNROLL - 1 do frag[i] = f[i]:to(cute.f32) end
    else
      for u = 0, UNROLL - 1 do
        for v = 0, vec - 1 do
          local idx = common.slice_index(first, v, u, vec, THREADS)
          frag[v + u * vec] = cute.where(idx < n, x[cute.min(idx, n - 1)]:to(cute.f32), op.identity)
        end
      end
    end
    local r = reduce_frag(frag, vec * UNROLL, op)
    if tid == 0 then partial[bid] = r end
  end, { trace_key = "cute.lib.reduce:partial:" .. name, preprocess = true })
end

-- One block reduces n partials (f32), 4 per thread per step.
local function final_kernel(name)
  local op = OPS[name]
  return cute.kernel("reduce_" .. name .. "_final", function(partial, out)
    local n = cute.size(partial)
    local tid = cute.thread_idx().x
    local acc = cute.to(op.identity, cute.f32)
    for i in cute.range(tid, n, THREADS) do acc = op.combine(acc, partial[i]) end
    local r = common.block_reduce(acc, op.combine, op.identity, THREADS)
    if tid == 0 then out[0] = r end
  end, { trace_key = "cute.lib.reduce:final:" .. name, preprocess = true })
end

local kernels = {}
--- The two kernels (partial, final) of a reduction op, made on first use.
-- @param name "sum" or "max"
-- @return a table {partial = kernel, final = kernel}
-- @usage local ks = cute.lib.reduce.kernels("sum")
local function get(name)
  local k = kernels[name]
  if not k then
    k = { partial = partial_kernel(name), final = final_kernel(name) }
    kernels[name] = k
  end
  return k
end
M.kernels = get

--- The grid of the first pass for n elements of dtype dt.
-- @param n the number of elements
-- @param dt the dtype
-- @return the number of blocks
-- @usage local partial = cute.tensor(cute.f32, reduce.blocks(n, x.dtype))
function M.blocks(n, dt) return math.max(1, math.ceil(n / (16 / dt.bytes * THREADS * UNROLL))) end

--- Reduces a contiguous tensor with op ("sum" or "max"); partial and out
-- (f32 tensors of blocks() and 1 elements) may be given to avoid allocating.
-- @param x a contiguous device tensor
-- @param op "sum" or "max"
-- @param partial optional: an f32 device tensor of blocks() elements
-- @param out optional: an f32 device tensor of 1 element
-- @return out
-- @usage local out = cute.lib.reduce.launch(x, "sum")
function M.launch(x, op, partial, out)
  local k = get(op)
  local n = x:size()
  local flat = x:view(cute.make_layout(n))
  local blocks = M.blocks(n, x.dtype)
  partial = partial or cute.tensor(cute.f32, blocks)
  out = out or cute.tensor(cute.f32, 1)
  k.partial { grid = blocks, block = THREADS }(flat, partial)
  k.final { grid = 1, block = THREADS }(partial, out)
  return out
end

--- The sum of a contiguous device tensor's elements (as a Lua number).
-- @param x a device tensor
-- @return a number
-- @usage local s = cute.lib.reduce.sum(x)
function M.sum(x) return M.launch(x, "sum"):to_table()[1] end
--- The largest element of a contiguous device tensor (as a Lua number).
-- @param x a device tensor
-- @return a number
-- @usage local m = cute.lib.reduce.max(x)
function M.max(x) return M.launch(x, "max"):to_table()[1] end

-- ---------------------------------------------------------------------------
-- Row reductions: one block per row of a row-major matrix, `chunks` passes of
-- THREADS 16-byte vectors over the row (a compile-time count).

local function row_kernel(name)
  local op = OPS[name]
  return cute.kernel("reduce_rows_" .. name, function(x, out, chunks)
    local N = x.layout.shape[2]
    local row, tid = cute.block_idx().x, cute.thread_idx().x
    local xr = x[{ row, cute._ }]
    local vec = 16 / x.dtype.bytes
    local acc = op.identity
    for c = 0, chunks - 1 do
      local slice, first = common.thread_slice_1d(xr, c, tid, vec, THREADS, 1)
      local frag = cute.make_rmem_tensor({ vec }, cute.f32)
      if first + vec <= N then
        local f = slice:load()
        for i = 0, vec - 1 do frag[i] = f[i]:to(cute.f32) end
      else
        for v = 0, vec - 1 do
          local j = first + v
          frag[v] = cute.where(j < N, xr[cute.min(j, N - 1)]:to(cute.f32), op.identity)
        end
      end
      for i = 0, vec - 1 do acc = op.combine(acc, frag[i]) end
    end
    local r = common.block_reduce(acc, op.combine, op.identity, THREADS)
    if tid == 0 then out[row] = r:to(out.dtype) end
  end, { trace_key = "cute.lib.reduce:rows:" .. name, preprocess = true })
end

local row_kernels = {}

--- out[i] = op over row i of x (row-major M x N); out has M elements.
-- @param x a row-major device tensor (M x N)
-- @param out a device tensor of M elements
-- @param op "sum" or "max"
-- @usage cute.lib.reduce.rows(x, out, "max")
function M.rows(x, out, op)
  local k = row_kernels[op]
  if not k then
    k = row_kernel(op)
    row_kernels[op] = k
  end
  local m, n = x.layout.shape[1], x.layout.shape[2]
  local chunks = math.max(1, math.ceil(n / (THREADS * 16 / x.dtype.bytes)))
  k { grid = m, block = THREADS }(x, out, cute.constexpr(chunks))
end
--- The row reduction kernel of op, made on first use.
-- @param op "sum" or "max"
-- @return a cute.kernel
-- @usage local k = cute.lib.reduce.row_kernel("sum")
M.row_kernel = function(op)
  if not row_kernels[op] then row_kernels[op] = row_kernel(op) end
  return row_kernels[op]
end

return M
