-- The defining property of each operation, checked over the whole domain of
-- every layout in deterministic families of small layouts (the pycute way:
-- composition R(i) == A(B(i)) for every i, and so on). Each test counts the
-- cases it checked, so a family that silently stopped producing cases fails.
-- The properties themselves are layout.helper's (H.props), which the random
-- fuzz_spec checks too.
local cute = require "cute"
local H = require "layout.helper"

local P = H.props
local injective = H.injective

-- runs f and returns true, or returns false when it raised a message
-- containing one of the expected refusals (undefined operands)
local function defined(f, ...)
  local ok, msg = pcall(f, ...)
  if ok then return true, msg end
  assert.is_truthy(msg:find("divisible", 1, true) or msg:find("no complement", 1, true)
    or msg:find("not injective", 1, true), "unexpected error: " .. msg)
  return false
end

local As = H.layouts({ 2, 3, 4 }, { 1, 2, 4, 6 }, 3, 160)
local injectives = {}
for _, l in ipairs(H.layouts({ 1, 2, 3, 4 }, { 1, 2, 3, 4, 8, 12 }, 3, 600)) do
  if injective(l) then injectives[#injectives + 1] = l end
end
-- right-hand sides of compositions. Composition distributes over B's modes
-- (R = (A o B0, A o B1, ...)), which is A(B(c)) where B's modes cover
-- disjoint ranges of digits (B has a complement: each mode starts where
-- the smaller ones end), as in CuTe; over a multi-mode B whose modes
-- overlap, C++ CuTe returns the same by-mode result.
local Bs = {}
for _, l in ipairs(H.layouts({ 1, 2, 3, 4 }, { 0, 1, 2, 3, 4 }, 2, 200)) do
  if H.distributes(l) then Bs[#Bs + 1] = l end
end

describe("layout algebra properties", function()
  it("composition: R(i) == A(B(i)) for every i", function()
    local checked = 0
    for _, a in ipairs(As) do
      for _, b in ipairs(Bs) do
        local ok, r = defined(cute.composition, a, b)
        if ok then
          P.composition(a, b, r)
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 3000, "only " .. checked .. " compositions checked")
  end)

  it("composition with a by-mode tiler composes each mode", function()
    local checked = 0
    for _, a in ipairs(As) do
      if cute.rank(a) >= 2 then
        for k = 1, #Bs, 7 do
          local t = { Bs[k], Bs[(k * 3) % #Bs + 1] }
          local ok, r = defined(cute.composition, a, t)
          if ok then
            for m = 0, 1 do
              local am, rm = cute.get(a, m), cute.get(r, m)
              for i = 0, cute.size(t[m + 1]) - 1 do assert.equal(am(t[m + 1](i)), rm(i)) end
            end
            checked = checked + 1
          end
        end
      end
    end
    assert.is_true(checked > 300, "only " .. checked .. " checked")
  end)

  it("complement: disjoint from L and together covering the cotarget", function()
    local checked = 0
    for _, l in ipairs(injectives) do
      for _, mult in ipairs { 1, 2, 3 } do
        local cot = cute.cosize(l) * mult
        local ok, c = defined(cute.complement, l, cot)
        if ok then
          P.complement(l, cot, c)
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 300, "only " .. checked .. " checked")
  end)

  it("right_inverse: L(R(i)) == i, and left_inverse: R(L(i)) == i", function()
    local checked = 0
    for _, l in ipairs(injectives) do
      P.right_inverse(l, cute.right_inverse(l))
      -- a left inverse exists where L has a complement
      local ok, left = defined(cute.left_inverse, l)
      if ok then
        P.left_inverse(l, left)
        checked = checked + 1
      end
    end
    -- a compact layout's right inverse covers all of it
    for _, shape in ipairs { { 4, 8 }, { { 2, 2 }, { 3, 2 } } } do
      for _, order in ipairs { cute.LayoutLeft, cute.LayoutRight } do
        local l = cute.make_layout(shape, order)
        assert.equal(cute.size(l), cute.size(cute.right_inverse(l)))
      end
    end
    assert.is_true(checked > 200, "only " .. checked .. " checked")
  end)

  it("divides keep the size and the (tile, rest) structure", function()
    local checked = 0
    local tilers = { 2, cute.make_layout(2, 2), cute.make_layout({ 2, 2 }, { 1, 4 }), { 2, 2 }, { cute._, 3 } }
    for _, a in ipairs(As) do
      for _, t in ipairs(tilers) do
        local ok, d = false, nil
        if cute.is_layout(t) or type(t) == "number" or #t <= cute.rank(a) then
          ok, d = defined(cute.logical_divide, a, t)
        end
        if ok then
          local z, td, f = cute.zipped_divide(a, t), cute.tiled_divide(a, t), cute.flat_divide(a, t)
          P.divide(a, t, d, z, td, f)
          if not (cute.is_layout(t) or type(t) == "number") then
            -- by mode: mode k is (tile_k, rest_k) of A's mode k; zipped gathers the tiles
            assert.equal(cute.rank(a), cute.rank(d))
            local ntiles = cute.rank(z, 0)
            assert.equal(#t, ntiles)
            assert.equal(1 + cute.rank(z, 1), cute.rank(td))
            assert.equal(cute.rank(z, 0) + cute.rank(z, 1), cute.rank(f))
          end
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 300, "only " .. checked .. " checked")
  end)

  it("products repeat A over B, keeping the per-mode structure", function()
    local checked = 0
    for k, a in ipairs(injectives) do
      if k % 3 == 0 then
        for _, b in ipairs { cute.make_layout(3), cute.make_layout({ 2, 2 }, { 2, 1 }), cute.make_layout(2, 2) } do
          local ok, p = defined(cute.logical_product, a, b)
          if not ok then goto next end
          P.logical_product(a, b, p)
          assert.same(H.table_of(p), H.table_of(cute.zipped_product(a, b)))
          checked = checked + 1
          ::next::
        end
      end
    end
    -- blocked and raked: mode k of the result is (A_k, P_k) / (P_k, A_k)
    local a, b = cute.make_layout({ 2, 5 }, { 5, 1 }), cute.make_layout({ 3, 4 }, { 1, 3 })
    local bp, rp = cute.blocked_product(a, b), cute.raked_product(a, b)
    for m = 0, 1 do
      assert.same(H.table_of(cute.get(a, m)), H.table_of(cute.get(bp, m, 0)))
      assert.same(H.table_of(cute.get(a, m)), H.table_of(cute.get(rp, m, 1)))
      assert.same(H.table_of(cute.get(bp, m, 1)), H.table_of(cute.get(rp, m, 0)))
    end
    assert.is_true(injective(bp) and injective(rp))
    assert.equal(120, cute.size(bp))
    assert.is_true(checked > 50, "only " .. checked .. " checked")
  end)

  it("tile_to_shape repeats the block to cover the shape", function()
    local block = cute.make_layout({ 2, 4 }, { 4, 1 })
    for _, order in ipairs { cute.LayoutLeft, { 1, 0 } } do
      local t = cute.tile_to_shape(block, { 8, 12 }, order ~= cute.LayoutLeft and order or nil)
      assert.equal(96, cute.size(t))
      assert.same({ 8, 12 }, cute.product_each(t.shape))
      assert.is_true(injective(t))
      for i = 0, 1 do
        for j = 0, 3 do assert.equal(block(i, j), t(i, j)) end
      end
    end
  end)

  it("make_layout_tv: each (thread, value) names its own element of the tile", function()
    for _, case in ipairs {
      { cute.make_layout({ 4, 8 }, { 8, 1 }), cute.make_layout({ 2, 2 }, { 2, 1 }) },
      { cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 4, 1 }) },
      { cute.make_layout({ 8, 4 }), cute.make_layout({ 1, 8 }) },
    } do
      local thr, val = case[1], case[2]
      local tiler, tv = cute.make_layout_tv(thr, val)
      local mn = cute.raked_product(thr, val)
      assert.same(cute.product_each(mn.shape), tiler)
      local nt, nv = cute.size(thr), cute.size(val)
      local seen = {}
      for t = 0, nt - 1 do
        for v = 0, nv - 1 do
          local idx = tv(t, v)
          assert.is_nil(seen[idx])
          seen[idx] = true
          assert.equal(t + v * nt, mn(idx))
        end
      end
      assert.equal(nt * nv, cute.size(tiler))
    end
  end)

  it("local_partition gives every element to exactly one thread", function()
    for _, case in ipairs {
      { cute.make_layout({ 16, 8 }), cute.make_layout({ 4, 2 }) },
      { cute.make_layout({ 16, 8 }, { 8, 1 }), cute.make_layout({ 4, 2 }, { 2, 1 }) },
      { cute.make_layout({ { 2, 4 }, 8 }, { { 1, 16 }, 2 }), cute.make_layout({ 2, 4 }, { 4, 1 }) },
    } do
      local l, thr = case[1], case[2]
      local owner = {}
      for tid = 0, cute.size(thr) - 1 do
        local part, off = cute.local_partition(l, thr, tid)
        assert.equal(cute.size(l) / cute.size(thr), cute.size(part))
        for i = 0, cute.size(part) - 1 do
          local o = off + part(i)
          assert.is_nil(owner[o], "offset " .. o .. " owned twice")
          owner[o] = tid
        end
        -- the thread's first element is where the thread layout puts it
        local c = thr:get_hier_coord(tid)
        assert.equal(l(c), off)
      end
      local count = 0
      for _ in pairs(owner) do count = count + 1 end
      assert.equal(cute.size(l), count)
    end
  end)

  it("local_tile selects the tile at a coordinate", function()
    local a = cute.make_layout({ 64, 48 }, { 1, 64 })
    for m = 0, 3 do
      for n = 0, 2 do
        local tile, off = cute.local_tile(a, { 16, 16 }, { m, n })
        assert.equal("(16,16):(1,64)", tostring(tile))
        for i = 0, 15, 5 do
          for j = 0, 15, 3 do assert.equal(a(m * 16 + i, n * 16 + j), off + tile(i, j)) end
        end
      end
    end
    -- a projection picks the modes of a 3-mode tiler and coordinate
    local t, off = cute.local_tile(a, { 16, 8, 16 }, { 2, 7, 1 }, { 1, cute.X, 1 })
    assert.equal("(16,16):(1,64)", tostring(t))
    assert.equal(a(32, 16), off)
    local keep, off2 = cute.local_tile(a, { 16, 8, 16 }, { 2, 7, cute._ }, { 1, cute.X, 1 })
    assert.equal("(16,16,3):(1,64,1024)", tostring(keep))
    assert.equal(32, off2)
  end)

  it("swizzles are bijections and involutions", function()
    local checked = 0
    for b = 0, 3 do
      for m = 0, 3 do
        for s = b, 4 do
          for _, sgn in ipairs { 1, -1 } do
            P.swizzle(cute.Swizzle(b, m, s * sgn), b, m, s * sgn)
            checked = checked + 1
          end
        end
      end
    end
    assert.equal(4 * 2 * (5 + 4 + 3 + 2), checked)
  end)

  it("max_common_layout / max_common_vector: the contiguous part A and B share", function()
    local checked = 0
    for k, a in ipairs(injectives) do
      for _, b in ipairs { injectives[(k * 7) % #injectives + 1], a, cute.make_layout(cute.shape(a)),
        cute.make_layout(cute.shape(a), cute.LayoutRight) } do
        if cute.size(a) == cute.size(b) then
          local c = cute.max_common_layout(a, b)
          local n = cute.max_common_vector(a, b)
          assert.equal(n, cute.size(c))
          for i = 0, cute.size(c) - 1 do
            assert.equal(i, a(c(i)))
            assert.equal(i, b(c(i)))
          end
          -- and it is maximal where A o right_inverse(B) is defined (else 1 is the safe answer)
          if pcall(cute.composition, a, cute.right_inverse(b)) and cute.size(cute.right_inverse(b)) > n then
            local nxt = cute.right_inverse(b)(n)
            assert.is_true(a(nxt) ~= n or b(nxt) ~= n)
          end
          checked = checked + 1
        end
      end
    end
    assert.equal(32, cute.max_common_vector(cute.make_layout({ 4, 8 }), cute.make_layout({ 4, 8 })))
    assert.equal(1, cute.max_common_vector(cute.make_layout({ 4, 8 }), cute.make_layout({ 4, 8 }, cute.LayoutRight)))
    assert.equal(4, cute.max_common_vector(cute.make_layout({ 4, 8 }), cute.make_layout({ 4, 8 }, { 1, 5 })))
    assert.is_true(checked > 300, "only " .. checked .. " checked")
  end)

  it("flat and tiled products regroup the same function", function()
    local a, b = cute.make_layout({ 2, 3 }, { 1, 2 }), cute.make_layout({ 2, 2 }, { 2, 1 })
    assert.equal("((2,2),(3,2)):((1,2),(2,1))", tostring(cute.logical_product(a, { 2, 2 })))
    local z = cute.zipped_product(a, { 2, 2 })
    local t = cute.tiled_product(a, { 2, 2 })
    local f = cute.flat_product(a, { 2, 2 })
    assert.equal("((2,3),(2,2)):((1,2),(2,1))", tostring(z))
    assert.equal("((2,3),2,2):((1,2),2,1)", tostring(t))
    assert.equal("(2,3,2,2):(1,2,2,1)", tostring(f))
    assert.same(H.table_of(cute.logical_product(a, b)), H.table_of(cute.zipped_product(a, b)))
    assert.same(H.table_of(z), H.table_of(f))
  end)

  it("gives the same results with and without the cache", function()
    local memoize = require("cute.layout").internal.memoize -- the cache of results, off and on
    local function outcome(f, ...) -- the result or the error, as text
      local ok, r = pcall(f, ...)
      return ok and tostring(r) or r
    end
    local function run()
      local out = {}
      for k = 1, #As, 5 do
        local a = As[k]
        out[#out + 1] = outcome(cute.logical_divide, a, 2) .. outcome(cute.logical_product, a, 3)
          .. outcome(cute.right_inverse, a) .. outcome(cute.complement, a) .. outcome(cute.composition, a, Bs[k])
      end
      return out
    end
    local on = run()
    memoize(false)
    local off = run()
    memoize(true)
    assert.same(off, on)
    assert.same(on, run())
  end)
end)
