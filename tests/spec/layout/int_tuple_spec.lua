-- cute.int_tuple: IntTuples as plain Lua values.
local cute = require "cute"
local IT = require "cute.int_tuple"
local H = require "layout.helper"

local S = cute.pretty_str

describe("cute.int_tuple", function()
  it("prints CuTe notation", function()
    assert.equal("(4,(2,3))", S({ 4, { 2, 3 } }))
    assert.equal("4", S(4))
    assert.equal("(4)", S({ 4 }))
    assert.equal("(_,3)", S({ cute._, 3 }))
    -- results carry a metatable that prints the same way
    assert.equal("(4,2,3)", tostring(cute.flatten({ 4, { 2, 3 } })))
    assert.equal("9007199254740991", S(2 ^ 53 - 1))
  end)

  it("measures rank, depth, size and product", function()
    assert.equal(1, cute.rank(4))
    assert.equal(1, cute.rank({ 4 }))
    assert.equal(2, cute.rank({ 4, { 2, 3 } }))
    assert.equal(2, cute.rank({ 4, { 2, 3 } }, 1))
    assert.equal(0, cute.depth(4))
    assert.equal(1, cute.depth({ 4, 5 }))
    assert.equal(3, cute.depth({ 1, { 2, { 3 } } }))
    assert.equal(24, cute.size({ 4, { 2, 3 } }))
    assert.equal(6, cute.size({ 4, { 2, 3 } }, 1))
    assert.equal(3, cute.size({ 4, { 2, 3 } }, 1, 1))
    assert.equal(24, cute.product({ 4, { 2, 3 } }))
    assert.same({ 4, 6 }, cute.product_each({ 4, { 2, 3 } }))
  end)

  it("flattens and unflattens", function()
    assert.same({ 4, 2, 3, 5 }, cute.flatten({ 4, { 2, { 3 } }, 5 }))
    assert.equal(7, cute.flatten(7))
    local profile = { 4, { 2, { 3 } }, 5 }
    assert.same(profile, cute.unflatten({ 4, 2, 3, 5 }, profile))
    assert.same({ 9, { 8, { 7 } }, 6 }, cute.unflatten({ 9, 8, 7, 6 }, profile))
  end)

  it("tells congruent from weakly congruent", function()
    assert.is_true(cute.congruent({ 1, { 2, 3 } }, { 4, { 5, 6 } }))
    assert.is_false(cute.congruent({ 1, { 2, 3 } }, { 4, 5 }))
    assert.is_false(cute.congruent(4, { 4 }))
    assert.is_true(cute.weakly_congruent({ 1, 2 }, { 4, { 5, 6 } }))
    assert.is_true(cute.weakly_congruent(1, { 4, { 5, 6 } }))
    assert.is_false(cute.weakly_congruent({ 1, { 2, 3 } }, { 4, 5 }))
    assert.is_false(cute.weakly_congruent({ 1, 2, 3 }, { 4, 5 }))
  end)

  it("computes prefix and suffix products", function()
    assert.same({ 1, { 4, 8 } }, cute.prefix_product({ 4, { 2, 3 } }))
    assert.same({ 6, { 3, 1 } }, cute.suffix_product({ 4, { 2, 3 } }))
    assert.same({ 5, 15 }, cute.prefix_product({ 3, 2 }, 5))
    assert.same({ { 5, 10 }, 7 }, cute.prefix_product({ { 2, 3 }, 4 }, { 5, 7 }))
    assert.equal(1, cute.prefix_product(9))
  end)

  it("divides shapes", function()
    assert.same({ 2, 3 }, cute.shape_div({ 4, 3 }, 2))
    assert.same({ 1, 3 }, cute.shape_div({ 4, 6 }, 8))
    assert.same({ 1, 1 }, cute.shape_div({ 4, 3 }, 12))
    assert.equal(1, cute.shape_div(3, 6))
    assert.same({ 2, 2 }, cute.shape_div({ 4, 6 }, { 2, 3 }))
    assert.same({ 3, 2 }, cute.ceil_div({ 5, 4 }, { 2, 2 }))
    assert.equal(3, cute.ceil_div(7, 3))
    assert.same({ 8, 9 }, cute.round_up({ 7, 9 }, { 4, 3 }))
    local msg = H.error_of(cute.shape_div, 6, 4)
    assert.matches("shape_div: neither of 6 and 4 divides the other", msg, 1, true)
  end)

  it("compares element-wise", function()
    assert.is_true(cute.elem_less({ 1, { 2, 3 } }, { 2, { 3, 4 } }))
    assert.is_false(cute.elem_less({ 1, { 3, 3 } }, { 2, { 3, 4 } }))
    assert.is_true(cute.elem_less({ 1 }, { 2, 5 }))
    assert.is_true(cute.elem_leq({ 2, 4 }, { 2, 4 }))
    assert.is_false(cute.elem_less(5, 5))
  end)

  it("maps coordinates to indices and back over whole domains", function()
    for _, shape in ipairs { 6, { 2, 3 }, { 4, { 2, 3 } }, { { 2, 2 }, { 3, { 1, 2 } } }, { 3, 1, 5 } } do
      local n = cute.size(shape)
      local seen = {}
      for i = 0, n - 1 do
        local c = cute.idx2crd(i, shape)
        assert.is_true(cute.congruent(c, shape), S(c) .. " is not congruent with " .. S(shape))
        assert.equal(i, cute.crd2idx(c, shape))
        assert.is_true(cute.elem_less(c, shape) or not IT.is_tuple(shape))
        seen[S(c)] = true
      end
      local count = 0
      for _ in pairs(seen) do count = count + 1 end
      assert.equal(n, count)
    end
    -- compact strides: 1-D index, natural and partial coordinates agree
    local shape = { 3, { 2, 3 } }
    assert.equal(16, cute.crd2idx({ 1, { 1, 2 } }, shape))
    assert.equal(16, cute.crd2idx({ 1, 5 }, shape))
    assert.equal(16, cute.crd2idx(16, shape))
    -- explicit strides; an integer past the end extends the last mode
    assert.equal(40, cute.crd2idx(20, { 2, 3 }, { 1, 4 }))
    assert.same({ 3, 2 }, cute.idx2crd(11, { 4, 3 }, { 3, 1 }))
  end)

  it("accesses modes with 0-based indices", function()
    local t = { 4, { 2, 3 }, 5 }
    assert.equal(4, cute.get(t, 0))
    assert.equal(3, cute.get(t, 1, 1))
    assert.equal(7, cute.get(7, 0))
    assert.same({ { 2, 3 }, 5 }, cute.take(t, 1, 3))
    assert.same({ 5, 4 }, cute.select(t, { 2, 0 }))
    assert.same({ 4, { 2, 3 }, 5, 6 }, cute.append(t, 6))
    assert.same({ 4, 1, 1 }, cute.append(4, 1, 3))
    assert.same({ 0, 4, { 2, 3 }, 5 }, cute.prepend(t, 0))
    assert.same({ 4, { { 2, 3 }, 5 } }, cute.group_modes(t, 1, 3))
    assert.same({ { 4, { 2, 3 } }, 5 }, cute.group_modes(t, 0, 2))
    assert.same({ 4, 5 }, cute.dice({ 1, cute.X, 1 }, t))
    assert.matches("get: mode 3 is out of range for (4,(2,3),5) (rank 3)", H.error_of(cute.get, t, 3), 1, true)
  end)

  it("orders compact strides", function()
    assert.same({ 4, 1 }, IT.compact_order({ 2, 4 }, { 1, 0 }))
    assert.same({ 1, { 8, 2 } }, IT.compact_order({ 2, { 3, 4 } }, { 0, { 2, 1 } }))
    assert.same({ 4, 2 }, IT.compact_row_major({ 3, 2 }, 2))
  end)

  it("keeps exact integers and refuses to round", function()
    assert.equal(2 ^ 52 * 2 - 1, cute.product({ 2 ^ 52 - 1, 1 }) * 2 + 1)
    local msg = H.error_of(cute.product, { 2 ^ 30, 2 ^ 30 })
    assert.matches("integer overflow", msg, 1, true)
    msg = H.error_of(cute.size, { 2 ^ 27, 2 ^ 27 })
    assert.matches("2^53", msg, 1, true)
  end)
end)
