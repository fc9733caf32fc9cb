-- tma_tile: B = 2 * A through TMA (sm_90): each CTA loads its 32 x 16 tile of
-- A with one bulk tensor copy completing on an mbarrier, doubles it in shared
-- memory, and stores it to B with one bulk tensor store. The TMA atoms are
-- kernel arguments: their descriptors are grid-constant parameters encoded
-- at launch. Ragged edges need no masks: loads zero-fill, stores clip.
--   cutelua examples/tma_tile.lua
-- Compiles for sm_90a anywhere; runs and checks on a GPU of sm_90 or later
-- (elsewhere on the CPU simulator as an sm_90a device). docs/hopper.md, section 6.
local cute = require "cute"
local cp = cute.nvgpu.cpasync

local W, H = 100, 70 -- A and B: W x H f32, x contiguous, rows padded to 112 (16-byte strides)
local TILE = { 32, 16 }
local sl = cute.make_layout(TILE) -- the shared tile, x fastest: what TMA writes

local k = cute.kernel("tma_tile", function(load, store)
  local tile = cute.make_smem_tensor(cute.f32, sl, 128)
  local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8):ptr_at(0)
  local tid = cute.thread_idx().x
  local tc = { cute.block_idx().x, cute.block_idx().y }
  local pl = cp.tma_partition(load, 0, cute.make_layout(1), sl)
  local ps = cp.tma_partition(store, 0, cute.make_layout(1), sl)
  if tid == 0 then
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
  end
  cute.sync_threads()
  if tid == 0 then
    cute.arch.mbarrier_arrive_and_expect_tx(bar, pl.tile_bytes) -- the bytes the copy will bring
    cute.copy(load, pl:gmem_tile(tc), pl:smem_tile(tile), { tma_bar_ptr = bar })
  end
  cute.arch.mbarrier_wait(bar, 0) -- phase 0 completes when the bytes have landed
  for i = 0, TILE[1] * TILE[2] - 1, 128 do
    local x, y = (tid + i) % TILE[1], (tid + i) / TILE[1]
    tile[{ x, y }] = tile[{ x, y }] * 2
  end
  cute.arch.fence_view_async_shared() -- our stores, before TMA reads them
  cute.sync_threads()
  if tid == 0 then
    cute.copy(store, ps:smem_tile(tile), ps:gmem_tile(tc))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0)
  end
end)

local gpu = cute.current_device() ~= "sim" and pcall(cute.device_info) and cute.device_info().compute_capability[1] >= 9
if not gpu then -- the CPU simulator as an sm_90a device (docs/simulator.md)
  print("tma_tile: no GPU of sm_90 or later: on the CPU simulator (sm_90a)")
  cute.set_device("sim", { arch = "sm_90a" })
end
local tensor = cute.tensor
local A = tensor(cute.f32, { W, H }, { 1, 112 })
local B = tensor(cute.f32, { W, H }, { 1, 112 })
local load = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, sl, TILE)
local store = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileS2GOp(), B, sl, TILE)
print(load)
print(store)

local ptx = k:with { arch = "sm_90a" }:compile(load, store):ptx()
for l in ptx:gmatch("[^\n]*cp%.async%.bulk[^\n]*") do print((l:gsub("^%s+", ""))) end

A:uniform(-10, 10)
B:fill(0 / 0)
k { grid = { math.ceil(W / TILE[1]), math.ceil(H / TILE[2]) }, block = 128 }(load, store)
local a, b = A:to_table(), B:to_table()
for i = 1, #a do
  if b[i] ~= 2 * a[i] then
    error(string.format("B[%d] = %s, expected %s", i - 1, tostring(b[i]), tostring(2 * a[i])))
  end
end
print(string.format("tma_tile: B = 2 A for %d x %d, %d tiles: ok", W, H,
  math.ceil(W / TILE[1]) * math.ceil(H / TILE[2])))
