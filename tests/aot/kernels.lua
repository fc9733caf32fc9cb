-- The kernels the AOT tests export: a 1-D map, a 2-D strided one with a
-- scalar, and one with dynamic shared memory whose size depends on nothing
-- run-time (the block reverses its slice through shared memory).
local cute = require "cute"

local M = {}

M.vadd = cute.kernel("vadd", function(a, b, c)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(c)), function() c[i] = a[i] + b[i] end)
end)

M.scale = cute.kernel("scale2d", function(x, s)
  local i = cute.block_idx().x * 16 + cute.thread_idx().x
  local j = cute.block_idx().y * 16 + cute.thread_idx().y
  cute.if_(cute.and_(i:lt(x.layout.shape[1]), j:lt(x.layout.shape[2])), function() x[{ i, j }] = x[{ i, j }] * s end)
end)

M.reverse = cute.kernel("reverse256", function(x, y)
  local smem = cute.smem_allocator()
  local s = smem:tensor(cute.f32, cute.make_layout(256), 16)
  local t = cute.thread_idx().x
  local base = cute.block_idx().x * 256
  cute.if_((base + t):lt(cute.size(x)), function() s[t] = x[base + t] end)
  cute.sync_threads()
  cute.if_((base + t):lt(cute.size(y)), function() y[base + t] = s[255 - t] end)
end)

--- The export entries (cute.export's kernels): example arguments fix each specialisation.
function M.entries()
  return {
    { name = "vadd_f32", kernel = M.vadd, doc = "c = a + b (f32 vectors)",
      args = { cute.fake_tensor(cute.f32, 1000), cute.fake_tensor(cute.f32, 1000), cute.fake_tensor(cute.f32, 1000) },
      grid = function(_, _, c) return cute.ceil_div(cute.size(c), 256) end, block = 256 },
    { name = "scale_rows", kernel = M.scale, doc = "x *= s (a row-major f32 matrix)",
      args = { cute.fake_tensor(cute.f32, { 64, 48 }, "row"), cute.f32(2) },
      grid = function(x) return { cute.ceil_div(x.shape[1], 16), cute.ceil_div(x.shape[2], 16) } end,
      block = { 16, 16 } },
    { name = "reverse256", kernel = M.reverse, doc = "y = x with every block of 256 reversed",
      args = { cute.fake_tensor(cute.f32, 1024), cute.fake_tensor(cute.f32, 1024) },
      grid = function(x) return cute.ceil_div(cute.size(x), 256) end, block = 256 },
  }
end

return M
