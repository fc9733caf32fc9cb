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

-- B = 2 * A by tiles of 32 x 16 through TMA (examples/tma_tile.lua's kernel):
-- two TMA atom arguments, whose descriptors exported wrappers encode.
M.TILE = { 32, 16 }
local tile_sl = cute.make_layout(M.TILE)
M.tma_tile = cute.kernel("tma_tile", function(load, store)
  local cp = cute.nvgpu.cpasync
  local tile = cute.make_smem_tensor(cute.f32, tile_sl, 128)
  local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8):ptr_at(0)
  local tid = cute.thread_idx().x
  local tc = { cute.block_idx().x, cute.block_idx().y }
  local pl = cp.tma_partition(load, 0, cute.make_layout(1), tile_sl)
  local ps = cp.tma_partition(store, 0, cute.make_layout(1), tile_sl)
  if tid == 0 then
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
  end
  cute.sync_threads()
  if tid == 0 then
    cute.arch.mbarrier_arrive_and_expect_tx(bar, pl.tile_bytes)
    cute.copy(load, pl:gmem_tile(tc), pl:smem_tile(tile), { tma_bar_ptr = bar })
  end
  cute.arch.mbarrier_wait(bar, 0)
  for i = 0, M.TILE[1] * M.TILE[2] - 1, 128 do
    local x, y = (tid + i) % M.TILE[1], (tid + i) / M.TILE[1]
    tile[{ x, y }] = tile[{ x, y }] * 2
  end
  cute.arch.fence_view_async_shared()
  cute.sync_threads()
  if tid == 0 then
    cute.copy(store, ps:smem_tile(tile), ps:gmem_tile(tc))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0)
  end
end)

--- The TMA atoms of tma_tile for tensors A and B (W x H f32, x contiguous; fake or device tensors).
function M.tma_atoms(A, B)
  local cp = cute.nvgpu.cpasync
  -- (one value each: make_tiled_tma_atom returns more than the atom)
  local load = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, tile_sl, M.TILE)
  local store = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileS2GOp(), B, tile_sl, M.TILE)
  return load, store
end

--- tma_tile's export entry: its grid from the run-time extents of the load atom's tensor.
function M.tma_entry()
  local load, store = M.tma_atoms(cute.fake_tensor(cute.f32, { 100, 70 }, { 1, 112 }),
    cute.fake_tensor(cute.f32, { 100, 70 }, { 1, 112 }))
  return { name = "tma_tile", kernel = M.tma_tile, doc = "store = 2 * load, by 32 x 16 tiles through TMA",
    args = { load, store }, block = 128,
    grid = function(ld) return { cute.ceil_div(ld.shape[1], M.TILE[1]), cute.ceil_div(ld.shape[2], M.TILE[2]) } end }
end

-- x = s * x (a 1-D f32 vector), the first launch of the pipeline below
M.scale1d = cute.kernel("scale1d", function(x, s)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(x)), function() x[i] = x[i] * s end)
end)

--- A host function of two launches: x = s * x, then z = x + y (cute.export's host entries).
function M.pipeline_entry()
  return { name = "scale_add", doc = "x = s * x; z = x + y (two launches)",
    args = { cute.fake_tensor(cute.f32, 1000), cute.fake_tensor(cute.f32, 1000), cute.fake_tensor(cute.f32, 1000),
      cute.f32(2) },
    host = function(launch, x, y, z, s)
      launch(M.scale1d, { grid = cute.ceil_div(cute.size(x), 128), block = 128 }, x, s)
      launch(M.vadd, { grid = cute.ceil_div(cute.size(z), 256), block = 256 }, x, y, z)
    end }
end

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
