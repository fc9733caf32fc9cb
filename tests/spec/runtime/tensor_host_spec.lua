-- cute.tensor's host side: coordinate order for every layout (row-major,
-- permuted, with holes), fills that touch only the tensor's elements, and
-- host arrays beyond LuaJIT's own size limit.
local cute = require "cute"
local tensor = require "cute.tensor"

-- Layouts covering the cases: identity, row-major, a permutation of the
-- span (dense), nested modes, holes, broadcast (stride 0) and size-1 modes.
local LAYOUTS = {
  cute.make_layout({ 5, 7 }),
  cute.make_layout({ 5, 7 }, { 7, 1 }),
  cute.make_layout({ 3, { 2, 4 } }, { 8, { 1, 2 } }),
  cute.make_layout({ { 2, 3 }, 4 }, { { 12, 4 }, 1 }),
  cute.make_layout({ 4, 3 }, { 1, 10 }),
  cute.make_layout({ 1, 6, 1 }, { 99, 1, 7 }),
  cute.make_layout(9),
}

describe("cute.tensor on the host", function()
  it("walks offsets in coordinate order as the layout maps them", function()
    local all = { unpack(LAYOUTS) }
    all[#all + 1] = cute.make_layout({ 4, 3 }, { 0, 1 })
    all[#all + 1] = cute.make_layout({ { 2, 2 }, { 3, 2 } }, { { 1, 12 }, { 2, 6 } })
    for _, l in ipairs(all) do
      local got = {}
      tensor._each_offset(l, function(i, off) got[i + 1] = off end)
      assert.equal(cute.size(l), #got, tostring(l))
      for i = 0, cute.size(l) - 1 do assert.equal(l(i), got[i + 1], tostring(l) .. " at " .. i) end
    end
  end)

  it("gives host arrays past 2 GiB", function()
    local n = 2 ^ 31 / 8 + 16 -- just over 2 GiB of doubles: beyond ffi.new
    local a = tensor._host_array("double", n)
    a[n - 1] = 42.5
    a[0] = -1
    assert.equal(42.5, a[n - 1])
    assert.equal(-1, a[0])
  end)
end)

describe("cute.tensor on the GPU", function()
  it("keeps CuTe's coordinate order through copy_from, to_table, doubles and iota for every layout #gpu", function()
    for _, l in ipairs(LAYOUTS) do
      local n = cute.size(l)
      local t = cute.tensor(cute.f32, l)
      local vals = {}
      for i = 1, n do vals[i] = math.random(-1000, 1000) / 8 end
      t:copy_from(vals)
      local back, d = t:to_table(), t:to_host():doubles()
      for i = 1, n do
        assert.equal(vals[i], back[i], tostring(l))
        assert.equal(vals[i], d[i - 1], tostring(l))
        -- and the element sits where the layout puts it
        assert.equal(vals[i], t:to_host()[i - 1], tostring(l))
      end
      t:iota(3, 2)
      d = t:to_host():doubles()
      for i = 0, n - 1 do assert.equal(3 + 2 * i, d[i], tostring(l)) end
      t:free()
    end
  end)

  it("fills and randomises only the tensor's elements, never the holes between them #gpu", function()
    for _, l in ipairs(LAYOUTS) do
      local span = cute.cosize(l)
      local whole = cute.tensor(cute.f32, span)
      whole:fill(-7)
      local t = tensor.from_ptr(whole:data_ptr(), cute.f32, l)
      t:fill(0.5)
      local mine = {}
      for i = 0, cute.size(l) - 1 do mine[l(i)] = true end
      local w = whole:to_table()
      for off = 0, span - 1 do assert.equal(mine[off] and 0.5 or -7, w[off + 1], tostring(l) .. " offset " .. off) end
      whole:fill(-7)
      t:uniform(1, 2, 77)
      w = whole:to_table()
      local d = t:to_host():doubles()
      for off = 0, span - 1 do
        if mine[off] then
          assert.is_true(w[off + 1] >= 1 and w[off + 1] < 2, tostring(l))
        else
          assert.equal(-7, w[off + 1], tostring(l))
        end
      end
      for i = 0, cute.size(l) - 1 do assert.equal(w[l(i) + 1], d[i]) end
      whole:free()
    end
  end)
end)
