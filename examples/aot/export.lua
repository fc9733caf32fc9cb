-- Exports a SAXPY kernel ahead of time: y = a * x + y over f32 vectors of any
-- length, for sm_80 and sm_90a, to DIR/saxpy.{h,o,so,c}.
--   cutelua examples/aot/export.lua DIR
-- No GPU is needed here: the cubins are cross-compiled.
local cute = require "cute"

local saxpy = cute.kernel("saxpy", function(a, x, y)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  if i < cute.size(y) then y[i] = cute.fma(a, x[i], y[i]) end
end)

local dir = arg[1] or "."
local paths = cute.export {
  name = "saxpy", prefix = "saxpy", dir = dir, arch = { "sm_80", "sm_90a" }, shared = true,
  kernels = {
    { name = "saxpy_f32", kernel = saxpy, doc = "y = a * x + y",
      -- a specialisation: an f32 scalar and two contiguous f32 vectors (their length is a run-time argument)
      args = { cute.f32(1), cute.fake_tensor(cute.f32, 1024), cute.fake_tensor(cute.f32, 1024) },
      grid = function(_, _, y) return cute.ceil_div(cute.size(y), 256) end, block = 256 },
  },
}
for _, k in ipairs { "header", "object", "shared", "source" } do print(k, paths[k]) end
