--- cute.lib.elementwise: memory-bound elementwise kernels at the bandwidth limit.
--
--   cute.lib.elementwise.copy(x, y)              y = x
--   cute.lib.elementwise.axpb(x, y, a, b)        y = a * x + b   (math in f32)
--   cute.lib.elementwise.add_broadcast(a, b, c)  c[i, j] = a[i, j] + b[j] (row-major a, c)
--
-- Each thread moves `unroll` 16-byte vectors per input, next to its
-- neighbours' (coalesced), so every warp has several 128-byte lines in flight.
-- Blocks whose tile lies inside the tensor take a path without predicates;
-- the last, partial tile is predicated element by element. The kernels are
-- plain Lua (preprocess = true: an `if` on run-time values is a branch on
-- the GPU, a `for` over Lua numbers unrolls).
local cute = require "cute"
local common = require "cute.lib.common"

local M = {}

local THREADS, UNROLL = 256, 4

--- A kernel applying f elementwise: out[i] = f(in1[i], ..., inK[i], scalars...)
-- over 1-D contiguous tensors of one size. f gets values (f32 for narrow
-- float inputs) and returns a value, converted to out's dtype. opts: the
-- kernel's options (cute.kernel); a trace_key only when f is fixed by it.
-- @param name the kernel's name
-- @param ninputs the number of input tensors
-- @param f a function(in1, ..., inK, scalars...) -> value
-- @param opts optional: the kernel's options
-- @return a cute.kernel taking (out, in1, ..., inK, scalars...)
-- @usage local relu = elementwise.map_kernel("relu", 1, function(x) return cute.max(x, 0) end)
function M.map_kernel(name, ninputs, f, opts)
  local o = { preprocess = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  return cute.kernel(name, function(...)
    local args = { ... }
    local inputs, out = {}, args[ninputs + 1]
    for i = 1, ninputs do inputs[i] = args[i] end
    local extra = { select(ninputs + 2, ...) }
    local n = cute.size(out)
    local bytes = out.dtype.bytes
    for _, x in ipairs(inputs) do bytes = math.max(bytes, x.dtype.bytes) end
    local vec = 16 / bytes
    local bid, tid = cute.block_idx().x, cute.thread_idx().x
    local in_slices = {}
    for i, x in ipairs(inputs) do in_slices[i] = common.thread_slice_1d(x, bid, tid, vec, THREADS, UNROLL) end
    local out_slice, first, tile = common.thread_slice_1d(out, bid, tid, vec, THREADS, UNROLL)
    local function widen(v)
      local t = require("cute.trace.core").type_of(v)
      if t.kind == "float" and t.bits < 32 then return v:to(cute.f32) end
      return v
    end
    local function apply(vals)
      for i = 1, #vals do vals[i] = widen(vals[i]) end
      local r = f(unpack(vals, 1, #vals + #extra))
      return r
    end
    if bid * tile + tile <= n then
      local frags = {}
      for i, sl in ipairs(in_slices) do frags[i] = sl:load() end
      local res = cute.make_fragment_like(out_slice, out.dtype)
      for e = 0, vec * UNROLL - 1 do
        local vals = {}
        for i = 1, ninputs do vals[i] = frags[i][e] end
        for j, x in ipairs(extra) do vals[ninputs + j] = x end
        res[e] = apply(vals):to(out.dtype)
      end
      out_slice:store(res)
    else
      for u = 0, UNROLL - 1 do
        for v = 0, vec - 1 do
          local idx = common.slice_index(first, v, u, vec, THREADS)
          if idx < n then
            local vals = {}
            for i, x in ipairs(inputs) do vals[i] = x[idx] end
            for j, x in ipairs(extra) do vals[ninputs + j] = x end
            out[idx] = apply(vals):to(out.dtype)
          end
        end
      end
    end
  end, o)
end

--- The launch grid of a map kernel over n elements of dtype dt.
-- @param n the number of elements
-- @param dt the dtype
-- @return the number of blocks
-- @usage relu { grid = elementwise.grid(n, cute.f32), block = 256 }(y, x)
function M.grid(n, dt) return math.max(1, math.ceil(n / (16 / dt.bytes * THREADS * UNROLL))) end

-- (their functions are this file's: the trace_key, with cutelua's build id,
-- determines them)
local copy_k = M.map_kernel("copy", 1, function(x) return x end, { trace_key = "cute.lib.elementwise:copy" })
local axpb_k = M.map_kernel("axpb", 1, function(x, a, b) return a * x + b end,
  { trace_key = "cute.lib.elementwise:axpb" })

local function flat(t) return t:view(cute.make_layout(t:size())) end

--- y = x (same dtype and size; both contiguous).
-- @param x the source device tensor
-- @param y the destination device tensor
-- @usage cute.lib.elementwise.copy(x, y)
function M.copy(x, y)
  copy_k { grid = M.grid(x:size(), x.dtype), block = THREADS }(flat(x), flat(y))
end

--- y = a * x + b elementwise (a, b: numbers; math in f32).
-- @param x the source device tensor
-- @param y the destination device tensor
-- @param a the scale (a number)
-- @param b the offset (a number)
-- @usage cute.lib.elementwise.axpb(x, y, 2, 1)
function M.axpb(x, y, a, b)
  axpb_k { grid = M.grid(x:size(), x.dtype), block = THREADS }(flat(x), flat(y), cute.f32(a), cute.f32(b))
end

M.kernels = { copy = copy_k, axpb = axpb_k }

--- c[i, j] = a[i, j] + b[j]: a and c row-major M x N, b a vector of N.
-- One block per row chunk of 4096 elements (for f32): rows on grid x (up to
-- 2^31 - 1 of them), chunks of a row on grid y.
local add_bcast_k = cute.kernel("add_broadcast", function(a, b, c)
  local N = cute.size(b)
  local row, chunk = cute.block_idx().x, cute.block_idx().y
  local arow, crow = a[{ row, cute._ }], c[{ row, cute._ }]
  local vec = 16 / a.dtype.bytes
  local tid = cute.thread_idx().x
  local sa, first, tile = common.thread_slice_1d(arow, chunk, tid, vec, THREADS, UNROLL)
  local sb = common.thread_slice_1d(b, chunk, tid, vec, THREADS, UNROLL)
  local sc = common.thread_slice_1d(crow, chunk, tid, vec, THREADS, UNROLL)
  if chunk * tile + tile <= N then
    local fa, fb = sa:load(), sb:load()
    local fc = cute.make_fragment_like(sc, c.dtype)
    for e = 0, vec * UNROLL - 1 do fc[e] = fa[e] + fb[e] end
    sc:store(fc)
  else
    for u = 0, UNROLL - 1 do
      for v = 0, vec - 1 do
        local j = common.slice_index(first, v, u, vec, THREADS)
        if j < N then crow[j] = arow[j] + b[j] end
      end
    end
  end
end, { trace_key = "cute.lib.elementwise:add_broadcast", preprocess = true })
M.kernels.add_broadcast = add_bcast_k

--- c = a + b with b broadcast to each row: a and c row-major M x N, b a vector of N.
-- @param a a row-major device tensor (M x N)
-- @param b a device tensor of N elements
-- @param c the result, a row-major device tensor (M x N)
-- @usage cute.lib.elementwise.add_broadcast(x, bias, y)
function M.add_broadcast(a, b, c)
  local m, n = a.layout.shape[1], a.layout.shape[2]
  add_bcast_k { grid = { m, math.ceil(n / (16 / a.dtype.bytes * THREADS * UNROLL)) }, block = THREADS }(a, b, c)
end

return M
