-- TMA in kernels through cute.copy with TMA atoms passed as kernel
-- arguments (their descriptors encoded at launch): loads with ragged edges
-- (zero fill) in several ranks and every swizzle (compared with the
-- layout's swizzled offsets), stores with ragged edges (clipped: memory
-- outside the tensor keeps its poison), reduce-add, non-tensor bulk copies,
-- and a multicast load over a cluster of 2. #gpu specs run on an H100; the
-- CPU spec compiles the same kernels for sm_90a.
-- The mbarriers and fences are cute.arch's.
local cute = require "cute"
local wg = require "cute.nvgpu.warpgroup"

local cpasync = cute.nvgpu.cpasync
local K = wg.OperandMajorMode.K

-- --- mbarrier helpers (cute.arch: docs/hopper.md, section 7) -------------------

local function mbar_init(bar, count)
  cute.arch.mbarrier_init(bar:ptr_at(0), count)
  cute.arch.mbarrier_init_fence()
end

local function mbar_arrive_expect_tx(bar, bytes) cute.arch.mbarrier_arrive_and_expect_tx(bar:ptr_at(0), bytes) end

local function mbar_wait(bar, parity) cute.arch.mbarrier_wait(bar:ptr_at(0), parity) end

local function cluster_sync() cute.arch.cluster_sync() end

-- --- the kernels -----------------------------------------------------------------

-- Loads the tile at tile_coord (from the block index: x, y, z are the first
-- three tile modes, the others 1) into a shared buffer of n elements and
-- writes the buffer raw (its physical order) to out[block * n ...].
local function load_kernel(sl, n, rank, dt)
  return cute.kernel("tma_load_tile", function(at, out)
    local tile = cute.make_smem_tensor(dt, cute.make_layout({ n }), 1024)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8)
    local tid = cute.thread_idx().x
    local b = cute.block_idx()
    local tc = { b.x, b.y, b.z, 1, 1 }
    for d = rank + 1, 5 do tc[d] = nil end
    local part = cpasync.tma_partition(at, 0, cute.make_layout(1), sl)
    cute.if_(tid:eq(0), function()
      cute.arch.prefetch_descriptor(at)
      mbar_init(bar, 1)
    end)
    cute.sync_threads()
    cute.if_(tid:eq(0), function()
      mbar_arrive_expect_tx(bar, part.tile_bytes)
      cute.copy(at, part:gmem_tile(tc), part:smem_tile(tile), { tma_bar_ptr = bar:ptr_at(0) })
    end)
    mbar_wait(bar, 0)
    local base = (b.x + cute.grid_dim().x * (b.y + cute.grid_dim().y * b.z)) * n
    for j = 0, n - 1, 128 do
      local i = tid + j
      cute.if_(i:lt(n), function() out[base + i] = tile[i] end)
    end
  end)
end

-- Fills a shared tile raw from inp[block * n ...], then stores (or
-- reduces) it at the block's tile coordinates through the atom.
local function store_kernel(sl, n, rank, dt)
  return cute.kernel("tma_store_tile", function(at, inp)
    local tile = cute.make_smem_tensor(dt, cute.make_layout({ n }), 1024)
    local tid = cute.thread_idx().x
    local b = cute.block_idx()
    local tc = { b.x, b.y, b.z, 1, 1 }
    for d = rank + 1, 5 do tc[d] = nil end
    local base = (b.x + cute.grid_dim().x * (b.y + cute.grid_dim().y * b.z)) * n
    for j = 0, n - 1, 128 do
      local i = tid + j
      cute.if_(i:lt(n), function() tile[i] = inp[base + i] end)
    end
    -- the generic-proxy writes, before the async proxy reads them
    cute.arch.fence_view_async_shared()
    cute.sync_threads()
    local part = cpasync.tma_partition(at, 0, cute.make_layout(1), sl)
    cute.if_(tid:eq(0), function()
      cute.copy(at, part:smem_tile(tile), part:gmem_tile(tc))
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0)
    end)
  end)
end

-- cp.async.bulk: bytes from src + block * bytes into shared memory
-- (completing on an mbarrier), then back out to dst + block * bytes.
local function bulk_kernel(bytes)
  return cute.kernel("bulk_copy", function(src, dst)
    local buf = cute.make_smem_tensor(cute.u8, cute.make_layout({ bytes }), 128)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8)
    local tid = cute.thread_idx().x
    local off = cute.block_idx().x * (bytes / 4)
    cute.if_(tid:eq(0), function() mbar_init(bar, 1) end)
    cute.sync_threads()
    cute.if_(tid:eq(0), function()
      mbar_arrive_expect_tx(bar, bytes)
      cute.arch.cp_async_bulk_g2s(buf:ptr_at(0), src:ptr_at(off), bytes, bar:ptr_at(0))
    end)
    mbar_wait(bar, 0)
    cute.if_(tid:eq(0), function()
      cute.arch.cp_async_bulk_s2g(dst:ptr_at(off), buf:ptr_at(0), bytes)
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0)
    end)
  end)
end

-- A cluster of 2 along x: each CTA issues half the tile's boxes with mask
-- 0b11, so both receive the whole tile (tile (block_idx.y, 0)); each writes
-- its buffer raw to out[(block_idx.y * 2 + block_idx.x) * n ...].
local function multicast_kernel(sl, n, dt)
  return cute.kernel("tma_multicast", function(at, out)
    local tile = cute.make_smem_tensor(dt, cute.make_layout({ n }), 1024)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8)
    local tid = cute.thread_idx().x
    local rank = cute.block_rank_in_cluster()
    local part = cpasync.tma_partition(at, rank, cute.make_layout(2), sl)
    cute.if_(tid:eq(0), function() mbar_init(bar, 1) end)
    cluster_sync() -- the peer's barrier is initialised before we multicast into it
    cute.if_(tid:eq(0), function()
      mbar_arrive_expect_tx(bar, part.tile_bytes) -- the whole tile: half of it comes from the peer
      cute.copy(at, part:gmem_tile({ cute.block_idx().y, 0 }), part:smem_tile(tile),
        { tma_bar_ptr = bar:ptr_at(0), mcast_mask = 3 })
    end)
    mbar_wait(bar, 0)
    for j = 0, n - 1, 128 do
      local i = tid + j
      cute.if_(i:lt(n), function() out[(cute.block_idx().y * 2 + cute.block_idx().x) * n + i] = tile[i] end)
    end
    cluster_sync() -- no CTA leaves while its peer may still write into it
  end)
end

-- --- the cases ---------------------------------------------------------------------

-- Each case: a global shape and (padded) strides, the tile, the smem layout.
local CASES = {
  { name = "2-D u16 no swizzle", dt = cute.u16, shape = { 100, 150 }, stride = { 152, 1 }, tile = { 64, 32 },
    smem = function() return wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_INTER", cute.u16), { 64, 32 }, K) end },
  { name = "2-D u16 32B swizzle", dt = cute.u16, shape = { 100, 150 }, stride = { 152, 1 }, tile = { 64, 16 },
    smem = function() return wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_SW32", cute.u16), { 64, 16 }, K) end },
  { name = "2-D u16 64B swizzle", dt = cute.u16, shape = { 100, 150 }, stride = { 152, 1 }, tile = { 64, 32 },
    smem = function() return wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_SW64", cute.u16), { 64, 32 }, K) end },
  { name = "2-D u16 128B swizzle, two boxes", dt = cute.u16, shape = { 100, 150 }, stride = { 152, 1 },
    tile = { 64, 128 },
    smem = function() return wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_SW128", cute.u16), { 64, 128 }, K) end },
  { name = "1-D f32", dt = cute.f32, shape = { 1000 }, stride = { 1 }, tile = { 256 },
    smem = function() return cute.make_layout({ 256 }) end },
  { name = "3-D f32", dt = cute.f32, shape = { 40, 20, 6 }, stride = { 1, 44, 880 }, tile = { 16, 8, 4 },
    smem = function() return cute.make_layout({ 16, 8, 4 }) end },
  { name = "5-D f32", dt = cute.f32, shape = { 10, 3, 3, 3, 3 }, stride = { 1, 12, 36, 108, 324 },
    tile = { 8, 2, 2, 2, 2 }, smem = function() return cute.make_layout({ 8, 2, 2, 2, 2 }) end },
}

local function prod(t)
  local n = 1
  for _, v in ipairs(t) do n = n * v end
  return n
end

local function cdiv(a, b) return math.floor((a + b - 1) / b) end

-- the grid of tiles (x, y, z) over the first three modes (the kernels take
-- tile 1 along the modes past them: the ragged last tile there)
local function grid_of(c)
  local g = { 1, 1, 1 }
  for d = 1, math.min(3, #c.shape) do g[d] = cdiv(c.shape[d], c.tile[d]) end
  return g
end

-- every coordinate of a box of extents `ext` (lists, 0-based)
local function each_coord(ext, f)
  local R = #ext
  local c = {}
  for d = 1, R do c[d] = 0 end
  for _ = 1, prod(ext) do
    f(c)
    for d = 1, R do
      c[d] = c[d] + 1
      if c[d] < ext[d] then break end
      c[d] = 0
    end
  end
end

-- A padded buffer holding the tensor (memory around it to see clipping):
-- the buffer, the tensor over it, and the buffer index of a coordinate.
local function padded(c)
  local span = 0
  for d = 1, #c.shape do span = span + (c.shape[d] - 1) * c.stride[d] end
  local buf = cute.tensor(c.dt, span + 1 + 64)
  local t = cute.from_ptr(buf:data_ptr(), c.dt, c.shape, c.stride)
  local function index(x)
    local i = 0
    for d = 1, #c.shape do i = i + x[d] * c.stride[d] end
    return i
  end
  return buf, t, index
end

local function rand_vals(c, n)
  local v = {}
  if c.dt == cute.u16 then
    for i = 1, n do v[i] = math.random(1, 65535) end
  else
    for i = 1, n do v[i] = math.random(-1000, 1000) end -- exact in f32, sums too
  end
  return v
end

local POISON = { u16 = 0xDEAD, f32 = -12345 }

local function need_sm90()
  local info = cute.device_info()
  if info.compute_capability[1] < 9 then
    pending("TMA needs sm_90")
    return false
  end
  return true
end

local function tile_elems(c) return prod(c.tile) end

-- the tile coordinate of mode d for block b (as the kernels make it)
local function tile_at(b, d) return d <= 3 and b[d] or 1 end

local function check_load(c)
  local sl = c.smem()
  local buf, g, index = padded(c)
  local vals = rand_vals(c, buf:size())
  buf:copy_from(vals)
  local at = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, sl, c.tile)
  local n = tile_elems(c)
  local grid = grid_of(c)
  local out = cute.tensor(c.dt, n * prod(grid))
  out:fill(POISON[c.dt.name])
  load_kernel(sl, n, #c.shape, c.dt) { grid = grid, block = 128 }(at, out)
  local got = out:to_table()
  each_coord(grid, function(b)
    local blk = b[1] + grid[1] * (b[2] + grid[2] * b[3])
    each_coord(c.tile, function(x)
      local gx, inside = {}, true
      for d = 1, #c.shape do
        gx[d] = tile_at(b, d) * c.tile[d] + x[d]
        inside = inside and gx[d] < c.shape[d]
      end
      local want = inside and vals[index(gx) + 1] or 0
      local at_s = #x == 1 and sl(x[1]) or sl(x)
      local v = got[blk * n + at_s + 1]
      if v ~= want then
        error(string.format("%s: tile %s, element %s (smem %d): %s, expected %s", c.name, table.concat(b, ","),
          table.concat(x, ","), at_s, tostring(v), tostring(want)))
      end
    end)
  end)
end

-- A case for TMA stores: the contiguous mode's extent cut to a multiple of 16
-- bytes (TMA stores write whole 16-byte chunks of it, so an edge inside a
-- chunk is refused by make_tiled_tma_atom: tma_ptx_spec), the other edges
-- ragged as before.
local function store_case(c)
  local s, inner = {}, nil
  for d = 1, #c.shape do
    s[d] = c.shape[d]
    if c.stride[d] == 1 then inner = d end
  end
  local per = 16 / c.dt.bytes
  s[inner] = s[inner] - s[inner] % per
  local out = {}
  for k, v in pairs(c) do out[k] = v end
  out.shape, out.name = s, c.name .. (s[inner] ~= c.shape[inner] and (" (contiguous extent " .. s[inner] .. ")") or "")
  return out
end

local function check_store(c, reduce)
  c = store_case(c)
  local sl = c.smem()
  local buf, g, index = padded(c)
  local before = rand_vals(c, buf:size())
  if not reduce then
    for i = 1, #before do before[i] = POISON[c.dt.name] end
  end
  buf:copy_from(before)
  local op = reduce and cpasync.CopyReduceBulkTensorTileS2GOp("add") or cpasync.CopyBulkTensorTileS2GOp()
  local at = cpasync.make_tiled_tma_atom(op, g, sl, c.tile)
  local n = tile_elems(c)
  local grid = grid_of(c)
  local inp = cute.tensor(c.dt, n * prod(grid))
  local src = rand_vals(c, n * prod(grid))
  inp:copy_from(src)
  store_kernel(sl, n, #c.shape, c.dt) { grid = grid, block = 128 }(at, inp)
  local want = {}
  for i = 1, #before do want[i] = before[i] end
  each_coord(grid, function(b)
    local blk = b[1] + grid[1] * (b[2] + grid[2] * b[3])
    each_coord(c.tile, function(x)
      local gx, inside = {}, true
      for d = 1, #c.shape do
        gx[d] = tile_at(b, d) * c.tile[d] + x[d]
        inside = inside and gx[d] < c.shape[d]
      end
      if inside then
        local v = src[blk * n + (#x == 1 and sl(x[1]) or sl(x)) + 1]
        local i = index(gx) + 1
        want[i] = reduce and want[i] + v or v
      end
    end)
  end)
  local got = buf:to_table()
  for i = 1, #want do
    if got[i] ~= want[i] then
      error(string.format("%s: buffer element %d: %s, expected %s (%s)", c.name, i - 1, tostring(got[i]),
        tostring(want[i]), want[i] == before[i] and "outside every tile or the tensor: must be untouched" or "stored"))
    end
  end
end

describe("TMA in kernels (cute.copy with TMA atoms)", function()
  it("compiles every kernel for sm_90a on the CPU", function()
    for _, c in ipairs(CASES) do
      local sl = c.smem()
      local g = cute.fake_tensor(c.dt, c.shape, c.stride)
      local n = tile_elems(c)
      local ld = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, sl, c.tile)
      local ptx = load_kernel(sl, n, #c.shape, c.dt):with { arch = "sm_90a" }:compile(ld,
        cute.fake_tensor(c.dt, n * 8)):ptx()
      local _, loads = ptx:gsub("cp%.async%.bulk%.tensor%." .. #c.shape .. "d%.shared::cluster", "")
      assert.equal(ld.num_boxes, loads, c.name)
      local sc = store_case(c)
      local st = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(),
        cute.fake_tensor(sc.dt, sc.shape, sc.stride), sl, c.tile)
      ptx = store_kernel(sl, n, #c.shape, c.dt):with { arch = "sm_90a" }:compile(st,
        cute.fake_tensor(c.dt, n * 8)):ptx()
      local _, stores = ptx:gsub("cp%.async%.bulk%.tensor%." .. #c.shape .. "d%.global%.shared::cta", "")
      assert.equal(st.num_boxes, stores, c.name)
    end
    local c = CASES[4]
    local mc = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(),
      cute.fake_tensor(c.dt, c.shape, c.stride), c.smem(), c.tile, 2)
    local ptx = multicast_kernel(c.smem(), tile_elems(c), c.dt):with { arch = "sm_90a", cluster = { 2, 1, 1 } }
      :compile(mc, cute.fake_tensor(c.dt, 4096)):ptx()
    assert.matches("%.multicast::cluster", ptx)
    ptx = bulk_kernel(512):with { arch = "sm_90a" }:compile(cute.fake_tensor(cute.f32, 1024),
      cute.fake_tensor(cute.f32, 1024)):ptx()
    assert.matches("cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
    assert.matches("cp%.async%.bulk%.global%.shared::cta%.bulk_group", ptx)
  end)

  for _, c in ipairs(CASES) do
    it("loads " .. c.name .. " tiles, zero-filling past the edges #gpu", function()
      if need_sm90() then check_load(c) end
    end)
    it("stores " .. c.name .. " tiles, clipped at the edges #gpu", function()
      if need_sm90() then check_store(c, false) end
    end)
  end

  it("reduce-adds f32 tiles (3-D and 2-D), clipped at the edges #gpu", function()
    if not need_sm90() then return end
    check_store(CASES[6], true)
    check_store({ name = "2-D f32", dt = cute.f32, shape = { 70, 50 }, stride = { 1, 72 }, tile = { 32, 16 },
      smem = function() return cute.make_layout({ 32, 16 }) end }, true)
  end)

  it("copies bytes with cp.async.bulk both ways #gpu", function()
    if not need_sm90() then return end
    local bytes, blocks = 512, 6
    local src = cute.tensor(cute.f32, blocks * bytes / 4 + 64)
    local vals = {}
    for i = 1, src:size() do vals[i] = math.random(-1000, 1000) end
    src:copy_from(vals)
    local dst = cute.tensor(cute.f32, src:size())
    dst:fill(POISON.f32)
    bulk_kernel(bytes) { grid = blocks, block = 128 }(src, dst)
    local got = dst:to_table()
    for i = 1, #got do
      local want = i <= blocks * bytes / 4 and vals[i] or POISON.f32
      if got[i] ~= want then error(string.format("element %d: %s, expected %s", i - 1, got[i], want)) end
    end
  end)

  it("multicasts a tile over a cluster of 2: each CTA receives the whole tile #gpu", function()
    if not need_sm90() then return end
    local c = CASES[4]
    local sl = c.smem()
    local buf, g, index = padded(c)
    local vals = rand_vals(c, buf:size())
    buf:copy_from(vals)
    local at = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), g, sl, c.tile, 2)
    local n = tile_elems(c)
    local tiles = cdiv(c.shape[1], c.tile[1])
    local out = cute.tensor(c.dt, 2 * tiles * n)
    out:fill(POISON.u16)
    multicast_kernel(sl, n, c.dt) { grid = { 2, tiles, 1 }, block = 128, cluster = { 2, 1, 1 } }(at, out)
    local got = out:to_table()
    for ty = 0, tiles - 1 do
      for cta = 0, 1 do
        each_coord(c.tile, function(x)
          local gx = { ty * c.tile[1] + x[1], x[2] }
          local want = (gx[1] < c.shape[1] and gx[2] < c.shape[2]) and vals[index(gx) + 1] or 0
          local v = got[(ty * 2 + cta) * n + sl(x) + 1]
          if v ~= want then
            error(string.format("tile %d, CTA %d, element (%d,%d): %s, expected %s", ty, cta, x[1], x[2],
              tostring(v), tostring(want)))
          end
        end)
      end
    end
  end)
end)
