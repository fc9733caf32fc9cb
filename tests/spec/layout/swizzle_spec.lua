-- cute.swizzle and composed layouts (Swizzle o offset o Layout).
local cute = require "cute"
local H = require "layout.helper"

-- the definition, bit by bit
local function reference(b, m, s, x)
  local function bitat(v, k) return math.floor(v / 2 ^ k) % 2 end
  local r = x
  for k = 0, b - 1 do
    local src = m + math.max(0, s) + k
    local dst = src - s
    if bitat(x, src) == 1 then
      r = r + (bitat(r, dst) == 1 and -1 or 1) * 2 ^ dst
    end
  end
  return r
end

describe("cute.swizzle", function()
  it("XORs the yyy bits into the zzz bits", function()
    local sw = cute.Swizzle(3, 3, 3)
    assert.equal("S<3,3,3>", tostring(sw))
    assert.equal(0, sw(0))
    assert.equal(72, sw(64)) -- row 1 of 8-element chunks: chunk 0 -> 1
    assert.equal(64 + 8 * 5 + 7, sw(64 + 8 * 4 + 7))
    for _, p in ipairs { { 2, 3, 3 }, { 3, 4, 3 }, { 1, 0, -2 }, { 2, 1, -3 }, { 0, 4, 3 } } do
      local s = cute.Swizzle(p[1], p[2], p[3])
      for x = 0, 2 ^ (p[1] + p[2] + math.abs(p[3]) + 1) - 1, 3 do
        assert.equal(reference(p[1], p[2], p[3], x), s(x))
      end
    end
    assert.is_true(cute.Swizzle(2, 3, 3) == cute.make_swizzle(2, 3, 3))
    assert.equal(sw(77), sw:apply(77))
  end)

  it("is exact on offsets beyond 2^32", function()
    local sw = cute.Swizzle(3, 4, 3)
    for _, hi in ipairs { 1, 12345, 2 ^ 20 } do
      for _, lo in ipairs { 0, 17, 1000, 2 ^ 31 + 5, 2 ^ 32 - 1 } do
        local x = hi * 2 ^ 32 + lo
        assert.equal(hi * 2 ^ 32 + sw(lo), sw(x))
      end
    end
  end)

  it("composes with layouts: Swizzle o offset o L", function()
    local atom = cute.composition(cute.Swizzle(3, 3, 3), cute.make_layout({ 8, 64 }, { 64, 1 }))
    assert.equal("S<3,3,3> o 0 o (8,64):(64,1)", tostring(atom))
    assert.equal(512, cute.size(atom))
    assert.equal(2, cute.rank(atom))
    assert.same({ 8, 64 }, cute.shape(atom))
    for i = 0, 7 do
      for j = 0, 63, 9 do assert.equal(cute.Swizzle(3, 3, 3)(i * 64 + j), atom(i, j)) end
    end
    -- an offset inside the composition
    local shifted = cute.make_composed_layout(cute.Swizzle(3, 3, 3), 64, cute.make_layout({ 8, 64 }, { 64, 1 }))
    assert.equal(cute.Swizzle(3, 3, 3)(64 + 5), shifted(0, 5))
    -- slicing keeps the offset inside the swizzle
    local row = atom(3, cute._)
    assert.equal("S<3,3,3> o 192 o (64):(1)", tostring(row))
    for j = 0, 63 do assert.equal(atom(3, j), row(j)) end
  end)

  it("tiles, composes and partitions swizzled layouts through their outer layout", function()
    local sw = cute.Swizzle(3, 3, 3)
    local atom = cute.composition(sw, cute.make_layout({ 8, 64 }, { 64, 1 }))
    local smem = cute.tile_to_shape(atom, { 128, 64 })
    assert.equal("S<3,3,3> o 0 o (128,64):(64,1)", tostring(smem))
    -- a bijection on [0, 8192): every element of the tile has its own offset
    local seen = {}
    for i = 0, cute.size(smem) - 1 do
      local o = smem(i)
      assert.is_nil(seen[o])
      seen[o] = true
      assert.is_true(o >= 0 and o < 8192)
    end
    local tile = cute.composition(smem, { 32, 16 })
    assert.equal("S<3,3,3> o 0 o (32,16):(64,1)", tostring(tile))
    for i = 0, 31, 5 do
      for j = 0, 15, 3 do assert.equal(smem(i, j), tile(i, j)) end
    end
    -- the elements of a thread: the same as partitioning the unswizzled layout, swizzled
    local thr = cute.make_layout({ 16, 8 }, { 8, 1 })
    for _, tid in ipairs { 0, 5, 77, 127 } do
      local part = cute.local_partition(smem, thr, tid)
      local plain, off = cute.local_partition(smem.outer, thr, tid)
      assert.equal(cute.size(plain), cute.size(part))
      for i = 0, cute.size(part) - 1 do assert.equal(sw(off + plain(i)), part(i)) end
    end
    local d = cute.zipped_divide(smem, { 16, 16 })
    assert.equal("S<3,3,3> o 0 o ((16,16),(8,4)):((64,1),(1024,16))", tostring(d))
    assert.same(H.table_of(smem.outer), H.table_of(cute.composition(smem.outer, cute.make_layout(8192))))
  end)
end)
