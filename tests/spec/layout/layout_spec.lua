-- cute.layout: construction, evaluation, queries, coalesce/filter, slicing.
local cute = require "cute"
local H = require "layout.helper"

describe("cute.layout", function()
  it("builds column-major, row-major, ordered and explicit layouts", function()
    assert.equal("(4,(2,3)):(1,(4,8))", tostring(cute.make_layout({ 4, { 2, 3 } })))
    assert.equal("(4,(2,3)):(6,(3,1))", tostring(cute.make_layout({ 4, { 2, 3 } }, cute.LayoutRight)))
    assert.equal("(4,8):(1,4)", tostring(cute.make_layout({ 4, 8 }, cute.LayoutLeft)))
    assert.equal("(2,3,4):(12,1,3)", tostring(cute.make_ordered_layout({ 2, 3, 4 }, { 2, 0, 1 })))
    assert.equal("((2,2),3):((24,2),8)", tostring(cute.make_layout({ { 2, 2 }, 3 }, { { 24, 2 }, 8 })))
    assert.equal("8:1", tostring(cute.make_layout(8)))
    assert.equal("(4):(1)", tostring(cute.make_layout({ 4 })))
    -- one mode per layout argument
    local a, b = cute.make_layout(4, 2), cute.make_layout({ 2, 3 }, { 1, 8 })
    assert.equal("(4,(2,3)):(2,(1,8))", tostring(cute.make_layout(a, b)))
    assert.equal("(4):(2)", tostring(cute.make_layout(a)))
  end)

  it("is reachable as cute.<name> and through its modules", function()
    -- cute.local_tile and cute.composition also take tensors (cute.trace.tensor);
    -- on layouts they are the layout functions
    local l = cute.make_layout({ 8, 8 })
    local l1, o1 = cute.layout_tile.local_tile(l, { 2, 4 }, { 1, 1 })
    local l2, o2 = cute.local_tile(l, { 2, 4 }, { 1, 1 })
    assert.equal(tostring(l1), tostring(l2))
    assert.equal(o1, o2)
    assert.equal(tostring(cute.layout.composition(l, 4)), tostring(cute.composition(l, 4)))
    assert.equal(cute.layout.composition, require("cute.layout_algebra").composition)
    assert.equal(cute.X, cute._)
    assert.equal("_", tostring(cute._))
  end)

  it("does not alias the user's tables", function()
    local shape = { 4, 8 }
    local l = cute.make_layout(shape)
    shape[1] = 99
    assert.equal("(4,8):(1,4)", tostring(l))
  end)

  it("maps integers, natural, partial and multi-argument coordinates", function()
    local l = cute.make_layout({ 2, { 2, 2 } }, { 1, { 4, 16 } })
    assert.equal(21, l(7))
    assert.equal(21, l({ 1, { 1, 1 } }))
    assert.equal(21, l({ 1, 3 }))
    assert.equal(21, l(1, 3))
    -- an integer past the end extends the last mode
    assert.equal(40, cute.make_layout({ 2, 3 }, { 1, 4 })(20))
    -- every coordinate form agrees over the whole domain
    local m = cute.make_layout({ { 2, 3 }, { 2, 2 } }, { { 1, 2 }, { 24, 6 } })
    for i = 0, cute.size(m) - 1 do
      local c = cute.idx2crd(i, m.shape)
      assert.equal(m(i), m(c))
      assert.equal(m(i), m(i % 6, math.floor(i / 6)))
      assert.equal(m(i), cute.crd2idx(c, m))
    end
  end)

  it("answers size, rank, depth, cosize, shape, stride and mode queries", function()
    local l = cute.make_layout({ 4, { 2, 3 } }, { 2, { 1, 8 } })
    assert.equal(24, cute.size(l))
    assert.equal(6, cute.size(l, 1))
    assert.equal(2, cute.rank(l))
    assert.equal(2, cute.depth(l))
    assert.equal(24, cute.cosize(l)) -- l(23) = 3*2 + 1 + 2*8 = 23
    assert.same({ 2, 3 }, cute.shape(l, 1))
    assert.equal(8, cute.stride(l, 1, 1))
    assert.equal("(2,3):(1,8)", tostring(cute.get(l, 1)))
    assert.equal("8:2", tostring(cute.get(cute.make_layout(8, 2), 0)))
    assert.equal(24, l:size())
    assert.equal(24, l:cosize())
    assert.equal("(4,(2,3)):(2,(1,8))", tostring(cute.select(l, { 0, 1 })))
    assert.equal("((2,3)):((1,8))", tostring(cute.take(l, 1, 2)))
    assert.equal("(4,2,3):(2,1,8)", tostring(cute.flatten(l)))
    assert.equal("(4,(2,3),1,1):(2,(1,8),0,0)", tostring(cute.append(l, nil, 4)))
    assert.equal("((4,(2,3))):((2,(1,8)))", tostring(cute.group_modes(l, 0, 2)))
    assert.is_true(cute.make_layout({ 4, 8 }) == cute.make_layout({ 4, 8 }, { 1, 4 }))
    assert.is_false(cute.make_layout({ 4, 8 }) == cute.make_layout({ 4, 8 }, { 8, 1 }))
  end)

  it("coalesces to the same function with the fewest modes", function()
    assert.equal("24:1", tostring(cute.coalesce(cute.make_layout({ 2, { 3, 4 } }))))
    assert.equal("(2,6):(1,2)", tostring(cute.coalesce(cute.make_layout({ 2, { 1, 6 } }, { 1, { 6, 2 } }), { 1, 1 })))
    assert.equal("1:0", tostring(cute.coalesce(cute.make_layout({ 1, 1 }, { 3, 5 }))))
    local layouts = H.layouts({ 1, 2, 3 }, { 0, 1, 2, 3, 6 }, 3, 400)
    for _, l in ipairs(layouts) do
      local c = cute.coalesce(l)
      assert.equal(cute.size(l), cute.size(c))
      assert.same(H.table_of(l), H.table_of(c))
      -- no mode of size 1 survives, and no two neighbours could merge
      local s, d = cute.flatten(c.shape), cute.flatten(c.stride)
      s, d = type(s) == "table" and s or { s }, type(d) == "table" and d or { d }
      for k = 1, #s do
        assert.is_true(s[k] ~= 1 or #s == 1)
        if k > 1 then assert.is_true(s[k - 1] * d[k - 1] ~= d[k], tostring(c)) end
      end
      -- by-mode coalesce keeps the modes
      local p = cute.coalesce(l, { 1 })
      assert.equal(cute.rank(l), cute.rank(p))
      assert.same(H.table_of(l), H.table_of(p))
    end
  end)

  it("filters out the modes that do not move", function()
    assert.equal("1:0", tostring(cute.filter(cute.make_layout({ 4, 1, 8 }, { 0, 3, 0 }))))
    assert.equal("(4,8):(1,8)", tostring(cute.filter(cute.make_layout({ 4, 2, 8 }, { 1, 0, 8 }))))
    for _, l in ipairs(H.layouts({ 1, 2, 3 }, { 0, 1, 2, 6 }, 3, 300)) do
      local f = cute.filter(l)
      -- the image is the same set of offsets
      local a, b = {}, {}
      for _, v in ipairs(H.table_of(l)) do a[v] = true end
      for _, v in ipairs(H.table_of(f)) do b[v] = true end
      assert.same(a, b)
    end
  end)

  it("slices with _ and reports the offset", function()
    local l = cute.make_layout({ 4, { 2, 3 } }, { 2, { 1, 8 } })
    assert.equal("(4):(2)", tostring(l(cute._, 5)))
    local s, off = cute.slice_and_offset({ cute._, 5 }, l)
    assert.equal("(4):(2)", tostring(s))
    assert.equal(17, off)
    s, off = cute.slice_and_offset({ 3, { cute._, 2 } }, l)
    assert.equal("(2):(1)", tostring(s))
    assert.equal(22, off)
    assert.equal("(4,2,3):(2,1,8)", tostring(cute.slice_(l, { cute._, { cute._, cute._ } })))
    assert.is_true(l == l(cute._))
    -- slice + offset reproduce the layout everywhere
    for k = 0, 5 do
      local sub, o = cute.slice_and_offset({ cute._, k }, l)
      for i = 0, 3 do assert.equal(l(i, k), o + sub(i)) end
    end
  end)

  it("makes identity layouts that map coordinates to themselves", function()
    local id = cute.make_identity_layout({ 4, 8 })
    assert.equal("(4,8):(1@0,1@1)", tostring(id))
    for i = 0, 31 do assert.same(cute.idx2crd(i, { 4, 8 }), id(i)) end
    local nested = cute.make_identity_layout({ { 2, 2 }, 8 })
    assert.equal("((2,2),8):((1@0@0,1@1@0),1@1)", tostring(nested))
    assert.same({ { 1, 0 }, 1 }, nested(5))
    -- a tile of it still names coordinates of the whole
    local tile, off = cute.local_tile(cute.make_identity_layout({ 128, 64 }), { 32, 16 }, { 1, 2 })
    assert.same({ 32, 32 }, off)
    assert.same({ 3, 5 }, tile(3, 5))
    local part, poff = cute.local_partition(tile, cute.make_layout({ 8, 4 }), 3)
    assert.equal("(4,4):(8@0,4@1)", tostring(part))
    assert.same({ 3, 0 }, poff)
    assert.same({ 8, 4 }, part(1, 1))
  end)

  it("computes hierarchical, flat and 1-D coordinates of an index", function()
    local thr = cute.make_layout({ 32, 4 }, { 4, 1 })
    assert.same({ 1, 1 }, thr:get_hier_coord(5))
    assert.same({ 1, 1 }, thr:get_flat_coord(5))
    assert.equal(33, thr:get_1d_coord(5))
    local nested = cute.make_layout({ { 2, 4 }, 4 }, { { 1, 8 }, 2 })
    for i = 0, 31 do
      local c = nested:get_hier_coord(i)
      assert.equal(i, nested(c))
      assert.equal(i, nested(nested:get_flat_coord(i)))
    end
  end)
end)
