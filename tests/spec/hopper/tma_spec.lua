-- TMA atoms on the host: the box, swizzle, data type and global dims derived
-- from a global tensor and a CTA tile's shared-memory layout, checked by
-- simulating what TMA writes (each box dense, dimension 0 fastest, then the
-- byte swizzle of docs/notes/hopper-facts.md 2.2 / 4.1) against the layout;
-- every rule of cuTensorMapEncodeTiled refused before any launch; the
-- partitioning of a tile between the CTAs of a multicast; multicast masks;
-- and (#gpu) real TMA loads through the atom's descriptor.
local cute = require "cute"
local bit = require "bit"
local wg = require "cute.nvgpu.warpgroup"
local tma = require "cute.nvgpu.tma"

local FILE = "tests/spec/hopper/tma_spec.lua"
local K, MN = wg.OperandMajorMode.K, wg.OperandMajorMode.MN
local LOAD = tma.CopyBulkTensorTileG2SOp

local function raises(f, ...)
  local ok, msg = pcall(f)
  assert.is_false(ok, "no error")
  local file, line = tostring(msg):match("^(.-):(%d+): ")
  assert.equal(FILE, file, msg)
  assert.equal(debug.getinfo(f, "S").linedefined, tonumber(line), msg)
  for i = 1, select("#", ...) do assert.truthy(msg:find((select(i, ...)), 1, true), msg) end
  return msg
end

local function sw_bytes(b, bits)
  if bits == 0 then return b end
  return bit.bxor(b, bit.lshift(bit.band(bit.rshift(b, 7), 2 ^ bits - 1), 4))
end

-- What TMA writes for the atom's boxes (the whole tile, or `boxes`): for
-- every element, its shared-memory byte by the hardware's rule must be the
-- layout's; every element of the tile written once.
local function simulate(atom, layout, boxes)
  local e, R = atom.dtype.bytes, atom.rank
  local seen, count = {}, 0
  for _, b in ipairs(boxes or atom.boxes) do
    local n = 1
    for d = 1, R do n = n * atom.box[d] end
    for dense = 0, n - 1 do
      local local_c, rest = {}, dense
      for d = 1, R do
        local inner = rest % atom.box[d]
        rest = math.floor(rest / atom.box[d])
        local_c[atom.dim_modes[d] + 1] = b.origin[d] + inner
      end
      local c = {}
      for j = 1, cute.rank(layout) do c[j] = local_c[j] or 0 end -- a stage mode: stage 0
      local want = (#c == 1 and layout(c[1]) or layout(c)) * e
      local got = sw_bytes(b.smem_bytes + dense * e, atom.swizzle_code)
      if got ~= want then
        error(string.format("%s: element %s lands at byte %d, the layout has it at %d", tostring(atom),
          table.concat(c, ","), got, want))
      end
      local key = table.concat(c, ",", 1, atom.tiler_rank)
      assert.is_nil(seen[key], key)
      seen[key] = true
      count = count + 1
    end
  end
  return count
end

local function tile_elems(atom)
  local n = 1
  for _, t in ipairs(atom.tile) do n = n * t end
  return n
end

describe("TMA atoms", function()
  it("load A K-major 128 x 64 bf16 with one 128B-swizzled box", function()
    local A = cute.fake_tensor(cute.bf16, { 4096, 1024 }, { 1024, 1 })
    local sA = wg.make_smem_layout_a(K, { 128, 128, 64 }, cute.bf16, 4)
    local atom, coord = tma.make_tiled_tma_atom(LOAD(), A, sA, { 128, 64 })
    assert.same({ 64, 128 }, atom.box)
    assert.same({ 1, 0 }, atom.dim_modes) -- TMA dimension 0 is K, the contiguous mode
    assert.equal("128B", atom.swizzle)
    assert.equal(3, atom.swizzle_code)
    assert.equal(9, atom.dtype_code) -- CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert.equal(1, atom.num_boxes)
    assert.equal(16384, atom.tile_bytes)
    assert.equal(tile_elems(atom), simulate(atom, sA))
    assert.equal("(4096,1024):(1@1,1@0)", tostring(coord))
    assert.equal("TmaAtom(load bf16, box (64,128) 128B swizzle, 1 box a tile, 16384 bytes)", tostring(atom))
    -- the descriptor spec for a tensor with these strides (the fake one has no memory)
    raises(function() local s = atom:tma_spec(); return s end, "the atom was made from a fake tensor")
  end)

  it("load B MN-major, fp8, tf32, wide K and unswizzled tiles box by box", function()
    local cases = {
      -- B MN-major 256 x 64 bf16 (N contiguous): four (64 n, 64 k) boxes, 8 KB apart
      { cute.fake_tensor(cute.bf16, { 2048, 512 }), wg.make_smem_layout_b(MN, { 128, 256, 64 }, cute.bf16),
        { 256, 64 }, { 64, 64 }, 4, "128B", 9, { 0, 8192, 16384, 24576 } },
      -- fp8 K-major 128 x 128: one (128, 128) box, data type UINT8
      { cute.fake_tensor(cute.e4m3, { 512, 512 }, { 512, 1 }), wg.make_smem_layout_a(K, { 128, 128, 128 }, cute.e4m3),
        { 128, 128 }, { 128, 128 }, 1, "128B", 0, { 0 } },
      -- f32 read as tf32, K-major 128 x 32
      { cute.fake_tensor(cute.f32, { 512, 512 }, { 512, 1 }), wg.make_smem_layout_a(K, { 128, 128, 32 }, cute.tf32),
        { 128, 32 }, { 32, 128 }, 1, "128B", 11, { 0 }, { internal_type = cute.tf32 } },
      -- a K tile of 128 bf16 is two 128-byte column blocks: two boxes
      { cute.fake_tensor(cute.bf16, { 4096, 1024 }, { 1024, 1 }),
        wg.make_smem_layout_a(K, { 128, 128, 128 }, cute.bf16), { 128, 128 }, { 64, 128 }, 2, "128B", 9, { 0, 16384 } },
      -- K-major SW64 and SW32
      { cute.fake_tensor(cute.f16, { 256, 256 }, { 256, 1 }), wg.make_smem_layout_a(K, { 64, 64, 32 }, cute.f16),
        { 64, 32 }, { 32, 64 }, 1, "64B", 6, { 0 } },
      { cute.fake_tensor(cute.f16, { 256, 256 }, { 256, 1 }), wg.make_smem_layout_a(K, { 64, 64, 48 }, cute.f16),
        { 64, 48 }, { 16, 64 }, 3, "32B", 6, { 0, 2048, 4096 } },
      -- no swizzle: 16-byte core-matrix rows, eight (8, 128) boxes
      { cute.fake_tensor(cute.bf16, { 4096, 1024 }, { 1024, 1 }),
        wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_INTER", cute.bf16), { 128, 64 }, K),
        { 128, 64 }, { 8, 128 }, 8, "none", 9, { 0, 2048, 4096, 6144, 8192, 10240, 12288, 14336 } },
      -- a batched tensor (M, K, L): the batch mode is a third dimension of extent 1 in the box
      { cute.fake_tensor(cute.bf16, { 256, 128, 3 }, { 128, 1, 256 * 128 }),
        wg.make_smem_layout_a(K, { 128, 128, 64 }, cute.bf16), { 128, 64 }, { 64, 128, 1 }, 1, "128B", 9, { 0 } },
    }
    for i, c in ipairs(cases) do
      local atom = tma.make_tiled_tma_atom(LOAD(), c[1], c[2], c[3], 1, c[9])
      assert.same(c[4], atom.box, "case " .. i)
      assert.equal(c[5], atom.num_boxes, "case " .. i)
      assert.equal(c[6], atom.swizzle, "case " .. i)
      assert.equal(c[7], atom.dtype_code, "case " .. i)
      local starts = {}
      for k, b in ipairs(atom.boxes) do starts[k] = b.smem_bytes end
      assert.same(c[8], starts, "case " .. i)
      assert.equal(tile_elems(atom), simulate(atom, c[2]), "case " .. i)
    end
  end)

  it("refuse every TMA rule broken, before any launch, at the caller's line", function()
    local sA = wg.make_smem_layout_a(K, { 128, 128, 64 }, cute.bf16)
    local ok_t = cute.fake_tensor(cute.bf16, { 4096, 1024 }, { 1024, 1 })
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 4096, 1024 },
      { 1024, 1 }, { align = 8 }), sA, { 128, 64 }); return a end,
      "the global tensor's address is 8-byte aligned; TMA needs a 16-byte aligned base")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 4096, 1020 },
      { 1020, 1 }), sA, { 128, 64 }); return a end,
      "mode 0 of the global tensor (4096,1020):(1020,1) has a stride of 2040 bytes; TMA needs strides that are "
      .. "multiples of 16 bytes (8 bf16 elements)")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 64, 2 },
      { 1, 2 ^ 39 }), sA, { 64, 2 }); return a end, "has a stride of 1099511627776 bytes; TMA strides are below 2^40")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 64, 64 },
      { 2, 128 }), sA, { 128, 64 }); return a end, "has no mode of stride 1; TMA's dimension 0 must be contiguous")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 8, 2, 2, 2, 2, 2 }),
      sA, { 8 }); return a end, "has 6 modes; TMA moves tensors of 1 to 5 dimensions")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.u8, { 2 ^ 32 + 16, 2 },
      { 1, 2 ^ 32 + 16 }), sA, { 128 }); return a end, "has 4294967312 elements; a TMA dimension holds 1 to 2^32")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.bf16, { 64, { 2, 2 } },
      { 1, { 64, 128 } }), sA, { 64 }); return a end, "mode 1 of the global tensor", "is nested")
    local odd = { dtype = { name = "x4", bytes = 1 }, layout = cute.make_layout({ 64, 64 }), fake = true }
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), odd, sA, { 64, 64 }); return a end,
      "x4 has no TMA data type: TMA cannot move it")
    -- rows narrower than 16 bytes: a K tile of 4 bf16
    local narrow = cute.make_layout({ 128, 4 }, { 4, 1 })
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, narrow, { 128, 4 }); return a end,
      "a box would be 4 bf16 elements = 8 bytes wide: the tile has 4 elements along it")
    -- an MN-major shared layout for a K-major tensor
    local sB = wg.make_smem_layout_b(MN, { 128, 128, 64 }, cute.bf16)
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, sB, { 128, 64 }); return a end,
      "TMA moves rows of a multiple of 16 bytes along the global tensor's contiguous mode 1",
      "the shared-memory layout keeps 1 element contiguous along it")
    -- a swizzle that is not TMA's
    local bad_sw = cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, cute.make_layout({ 128, 64 }, { 64, 1 }))
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, bad_sw, { 128, 64 }); return a end,
      "the swizzle S<3,4,3> on bf16 elements is S<3,5,3> on bytes; TMA swizzles are S<1..3,4,3> on bytes")
    -- padded rows: one box a row, rows 144 bytes apart
    local padded = cute.make_layout({ 128, 64 }, { 72, 1 })
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, padded, { 128, 64 }); return a end,
      "the TMA box at tile offset (0,1) starts at shared-memory byte 144, not a multiple of 128 (TMA's destination "
      .. "alignment)")
    -- rows that overlap: two tile elements in one place
    local overlap = cute.make_layout({ { 4, 32 }, 64 }, { { 64, 128 }, 1 })
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, overlap, { 128, 64 }); return a end,
      "the shared-memory layout", "puts several tile elements in one place")
    -- a swizzled tile whose box does not start on the pattern's repeat
    local shifted = cute.make_composed_layout(cute.Swizzle(3, 3, 3), 64, cute.make_layout({ 128, 64 }, { 64, 1 }))
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, shifted, { 128, 64 }); return a end,
      "starts at shared-memory byte 128, not a multiple of 1024 (the swizzle pattern's repeat)")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, sA, { 128, 32 }); return a end,
      "mode 1 of the shared-memory layout", "has 64 elements; the tile has 32")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, sA, { 128, 64 }, 2); return a end,
      "num_multicast = 2 needs CopyBulkTensorTileG2SMulticastOp")
    raises(function() local a = tma.make_tiled_tma_atom(tma.CopyBulkTensorTileG2SMulticastOp(), ok_t, sA,
      { 128, 64 }, 17); return a end, "num_multicast must be an integer from 1 to 16, got 17")
    raises(function() local a = tma.make_tiled_tma_atom(tma.CopyReduceBulkTensorTileS2GOp("xor"), ok_t, sA,
      { 128, 64 }); return a end, "the reduction xor is for integers, not bf16")
    raises(function() local op = tma.CopyReduceBulkTensorTileS2GOp("mul"); return op end,
      "the reduction is one of add, min, max, inc, dec, and, or, xor, got mul")
    raises(function() local a = tma.make_tiled_tma_atom(LOAD(), ok_t, sA, { 128, 64 }, 1, { l3 = 1 }); return a end,
      "unknown option l3")
  end)

  it("build the descriptor spec of a tensor from the atom", function()
    local A = cute.fake_tensor(cute.bf16, { 300, 200, 2 }, { 208, 1, 300 * 208 })
    local sA = wg.make_smem_layout_a(K, { 64, 64, 64 }, cute.bf16)
    local atom = tma.make_tiled_tma_atom(tma.CopyBulkTensorTileS2GOp(), A, sA, { 64, 64 }, 1, { l2 = "128B" })
    -- a tensor standing for the real one (tma_spec reads its layout and address only)
    local real = { dtype = cute.bf16, layout = A.layout, _align = 16, _ptr = 0x10000 }
    local spec = atom:tma_spec(real)
    assert.same({ 200, 300, 2 }, spec.dims)
    assert.same({ 416, 300 * 208 * 2 }, spec.strides)
    assert.same({ 64, 64, 1 }, spec.box)
    assert.same({ 1, 1, 1 }, spec.element_strides)
    assert.equal("128B", spec.swizzle)
    assert.equal("128B", spec.l2)
    assert.equal(cute.bf16, spec.dtype)
    assert.equal(real, spec.address)
    local other = { dtype = cute.bf16, layout = cute.make_layout({ 300, 200, 2 }, { 1, 304, 304 * 200 }),
      _align = 16 }
    raises(function() local s = atom:tma_spec(other); return s end,
      "the tensor's contiguous mode is 0; the atom was made for mode 1 contiguous")
    raises(function() local s = atom:tma_spec({ dtype = cute.f16, layout = A.layout, _align = 16 }); return s end,
      "the tensor holds f16; the atom moves bf16")
  end)
end)

-- A dynamic integer for the algebra (cute.arith's __cute_int protocol): it
-- computes the value and counts operations, standing for a traced value.
local Dyn = {}
local function dyn(v) return setmetatable({ v = v }, Dyn) end
local function val(x) return type(x) == "table" and x.v or x end
Dyn.__cute_int = {
  add = function(a, b) return dyn(val(a) + val(b)) end,
  sub = function(a, b) return dyn(val(a) - val(b)) end,
  mul = function(a, b) return dyn(val(a) * val(b)) end,
  neg = function(a) return dyn(-val(a)) end,
  div = function(a, b) return dyn(math.floor(val(a) / val(b))) end,
  mod = function(a, b) return dyn(val(a) % val(b)) end,
  min = function(a, b) return dyn(math.min(val(a), val(b))) end,
  max = function(a, b) return dyn(math.max(val(a), val(b))) end,
}
Dyn.__tostring = function(x) return "dyn(" .. x.v .. ")" end

describe("TMA partitions", function()
  it("split a multicast tile between the CTAs, each issuing whole boxes", function()
    local B = cute.fake_tensor(cute.bf16, { 2048, 1024 }, { 1024, 1 }) -- N x K, K contiguous
    local sB = wg.make_smem_layout_b(K, { 128, 256, 64 }, cute.bf16, 3)
    for _, n in ipairs { 1, 2, 4, 8 } do
      local atom = tma.make_tiled_tma_atom(tma.CopyBulkTensorTileG2SMulticastOp(), B, cute.slice_(sB,
        { cute._, cute._, 0 }), { 256, 64 }, n)
      assert.equal(32768, atom.tile_bytes)
      local all = {}
      for c = 0, n - 1 do
        local p = tma.tma_partition(atom, c, cute.make_layout(n), sB)
        assert.equal(32768 / n, p.bytes)
        assert.equal(32768, p.tile_bytes) -- every CTA expects the whole tile
        for k = 0, p.num_boxes - 1 do
          all[#all + 1] = p.boxes[k + 1]
          assert.same(p.boxes[k + 1].origin, p:box_origin(k))
          assert.equal(p.boxes[k + 1].smem_offset, p:smem_offset(k))
          assert.equal(p.boxes[k + 1].smem_offset + 2 * 256 * 64, p:smem_offset(k, 2))
          -- TMA coordinates: (k, n) of the tile (3, 5) plus the box's place
          assert.same({ 5 * 64 + p.boxes[k + 1].origin[1], 3 * 256 + p.boxes[k + 1].origin[2] }, p:coords({ 3, 5 }, k))
          -- a dynamic CTA index and tile coordinate give the same numbers
          local pd = tma.tma_partition(atom, dyn(c), cute.make_layout(n), sB)
          local co = pd:coords({ dyn(3), 5 }, k)
          assert.same(p:coords({ 3, 5 }, k), { val(co[1]), val(co[2]) })
          assert.equal(p:smem_offset(k, 1), val(pd:smem_offset(k, 1)))
        end
      end
      -- together the CTAs' boxes are the tile, each element once, where the layout has it
      assert.equal(256 * 64, simulate(atom, cute.slice_(sB, { cute._, cute._, 0 }), all))
      -- halves (quarters, ...) of the box's outer dimension, in shared-memory order
      assert.same({ 64, 256 / n }, atom.box)
    end
  end)

  it("refuse partitions that do not match the atom", function()
    local B = cute.fake_tensor(cute.bf16, { 2048, 1024 }, { 1024, 1 })
    local sB = wg.make_smem_layout_b(K, { 128, 256, 64 }, cute.bf16)
    local atom = tma.make_tiled_tma_atom(tma.CopyBulkTensorTileG2SMulticastOp(), B, sB, { 256, 64 }, 2)
    raises(function() local p = tma.tma_partition(atom, 0, cute.make_layout(4), sB); return p end,
      "cta_layout 4:1 has 4 CTAs; the atom was made for num_multicast = 2")
    raises(function() local p = tma.tma_partition(atom, 2, cute.make_layout(2), sB); return p end,
      "cta_coord 2 is CTA 2 of cta_layout 2:1, outside 0..1")
    local other = wg.make_smem_layout_b(K, { 128, 256, 32 }, cute.bf16)
    raises(function() local p = tma.tma_partition(atom, 0, 2, other); return p end,
      "is not the layout the atom was made for")
    local p = tma.tma_partition(atom, 1, 2, sB)
    raises(function() local o = p:smem_offset(0, 1); return o end, "the smem_tensor given had no stage mode")
    raises(function() local o = p:box_origin(1); return o end, "box 1 is not one of this CTA's boxes 0..0")
    raises(function() local c = p:coords({ 1 }, 0); return c end, "the tile coordinate (1) has 1 entries")
  end)

  it("make the multicast masks of a cluster", function()
    -- a 2 x 2 cluster (rank = m + 2 n): along m, CTAs {m, m+1} of the same n; along n, {n, n+2}
    local cl = cute.make_layout({ 2, 2 })
    assert.equal(0x3, tma.create_tma_multicast_mask(cl, { 1, 0 }, 0))
    assert.equal(0xC, tma.create_tma_multicast_mask(cl, { 0, 1 }, 0))
    assert.equal(0x5, tma.create_tma_multicast_mask(cl, { 0, 0 }, 1))
    assert.equal(0xA, tma.create_tma_multicast_mask(cl, { 1, 1 }, 1))
    -- a 4 x 2 cluster, row-major ranks
    local rm = cute.make_layout({ 4, 2 }, { 2, 1 })
    assert.equal(0x55, tma.create_tma_multicast_mask(rm, { 3, 0 }, 0))
    assert.equal(0x30, tma.create_tma_multicast_mask(rm, { 2, 1 }, 1))
    assert.equal(0x55, tma.multicast_mask_pattern(rm, 0))
    raises(function() local m = tma.create_tma_multicast_mask(cl, { dyn(1), 0 }, 0); return m end,
      "is not static; shift multicast_mask_pattern(cta_layout, 0)")
    raises(function() local m = tma.create_tma_multicast_mask(cute.make_layout({ 4, 8 }), { 0, 0 }, 0); return m end,
      "a cluster has at most 16 CTAs")
  end)
end)

-- Loads the CTA tile at (tm, tk) through the atom's descriptor and
-- partition (cute.asm until the TMA ops are IR ops), then writes shared
-- memory out as it lies, so the host can read it through the layout.
local function tma_tile_kernel(atom, part, n_elems)
  return cute.kernel("tma_atom_tile", function(desc, out, tm, tk)
    local tile = cute.make_smem_tensor(atom.dtype, cute.make_layout({ n_elems }), 1024)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8)
    local tid = cute.thread_idx().x
    local bar_addr = bar:ptr_at(0):addr()
    local desc_addr = desc.ptr:cast("generic"):addr()
    cute.if_(tid:eq(0), function()
      cute.asm("mbarrier.init.shared::cta.b64 [$0], 1;", "r", { bar_addr })
      cute.asm("fence.mbarrier_init.release.cluster;", "", {})
    end)
    cute.sync_threads()
    cute.if_(tid:eq(0), function()
      cute.asm(string.format("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], %d;", part.tile_bytes), "r",
        { bar_addr }, { memory = true })
      for k = 0, part.num_boxes - 1 do
        local c = part:coords({ tm, tk }, k)
        local dst = tile:ptr_at(part:smem_offset(k)):addr()
        cute.asm("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
          .. " [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r", { dst, desc_addr, c[1], c[2], bar_addr }, { memory = true })
      end
    end)
    local done = cute.var(cute.i32, 0)
    cute.while_(function() return done.value:eq(0) end, function()
      done.value = cute.asm("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], 0;"
        .. " selp.u32 $0, 1, 0, p; }", "=r,r", { bar_addr }, { ret = cute.i32, sideeffect = true, memory = true })
    end)
    for j = 0, n_elems - 1, 128 do
      local i = tid + j
      cute.if_(i:lt(n_elems), function() out[i] = tile[i] end)
    end
  end)
end

describe("TMA atoms on the GPU", function()
  it("give a kernel its boxes: one copy each, at traced tile coordinates", function()
    local smem = wg.make_smem_layout_b(MN, { 64, 256, 64 }, cute.u16)
    local atom = tma.make_tiled_tma_atom(LOAD(), cute.fake_tensor(cute.u16, { 304, 100 }), smem, { 256, 64 })
    local part = tma.tma_partition(atom, 0, 1, smem)
    local h = tma_tile_kernel(atom, part, 256 * 64):with { arch = "sm_90a" }:compile(require("ffi").new("CuteTmaDesc"),
      cute.fake_tensor(cute.u16, 256 * 64), cute.i32(0), cute.i32(0))
    local ptx = h:ptx()
    local copies = 0
    for _ in ptx:gmatch("cp%.async%.bulk%.tensor%.2d") do copies = copies + 1 end
    assert.equal(4, copies)
    assert.matches("expect_tx%.shared::cta%.b64 _, %[%%r%d+%], 32768;", ptx)
  end)

  local function check(gshape, gstride, smem, tiler, tiles)
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then
      pending("TMA needs sm_90")
      return
    end
    local g = cute.tensor(cute.u16, gshape, gstride)
    local n = cute.size(g.layout)
    local vals = {}
    for i = 1, n do vals[i] = (i * 7) % 65521 + 1 end -- distinct and non-zero
    g:copy_from(vals)
    local atom = tma.make_tiled_tma_atom(LOAD(), g, smem, tiler)
    local part = tma.tma_partition(atom, 0, 1, smem)
    local n_elems = tiler[1] * tiler[2]
    local k = tma_tile_kernel(atom, part, n_elems)
    local desc = atom:descriptor(g)
    local out = cute.tensor(cute.u16, n_elems)
    for _, tc in ipairs(tiles) do
      out:fill(0xFFFF)
      k { grid = 1, block = 128 }(desc, out, cute.i32(tc[1]), cute.i32(tc[2]))
      local got = out:to_table()
      for a = 0, tiler[1] - 1 do
        for b = 0, tiler[2] - 1 do
          local ga, gb = tc[1] * tiler[1] + a, tc[2] * tiler[2] + b
          local want = 0
          if ga < gshape[1] and gb < gshape[2] then want = vals[ga + gshape[1] * gb + 1] end -- coordinate order
          local at = smem({ a, b })
          if got[at + 1] ~= want then
            error(string.format("tile (%d,%d), element (%d,%d) at smem %d: %d, expected %d", tc[1], tc[2], a, b, at,
              got[at + 1], want))
          end
        end
      end
    end
  end

  it("load a K-major 128B-swizzled tile of two boxes, zero-filling past the edges #gpu", function()
    check({ 200, 184 }, { 184, 1 }, wg.make_smem_layout_a(K, { 128, 128, 128 }, cute.u16), { 128, 128 },
      { { 0, 0 }, { 1, 1 }, { 0, 1 } })
  end)

  it("load an MN-major tile of four boxes #gpu", function()
    check({ 304, 100 }, nil, wg.make_smem_layout_b(MN, { 64, 256, 64 }, cute.u16), { 256, 64 },
      { { 0, 0 }, { 1, 1 } })
  end)

  it("load unswizzled and 32B-swizzled tiles #gpu", function()
    check({ 96, 64 }, { 64, 1 }, wg.tile_to_mma_shape(wg.make_smem_layout_atom("K_INTER", cute.u16), { 64, 32 }, K),
      { 64, 32 }, { { 0, 0 }, { 1, 1 } })
    check({ 96, 64 }, { 64, 1 }, wg.make_smem_layout_a(K, { 64, 64, 48 }, cute.u16), { 64, 48 }, { { 1, 1 } })
  end)
end)
