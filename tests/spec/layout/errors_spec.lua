-- Bad input raises a Lua error that names the operation, shows the operands
-- in CuTe notation and points at the caller's line (this file's). Each
-- case is a one-line function, not a tail call, so the line it was defined
-- on is the line the error must name.
local cute = require "cute"

local FILE = "tests/spec/layout/errors_spec.lua"

local function raises(expected, f)
  local ok, msg = pcall(f)
  assert.is_false(ok, "no error for: " .. expected)
  local file, line, text = tostring(msg):match("^(.-):(%d+): (.*)$")
  assert.equal(FILE, file, msg)
  assert.equal(debug.getinfo(f, "S").linedefined, tonumber(line), msg)
  assert.equal(expected, text)
end

local A = cute.make_layout({ 4, 3 }, { 1, 4 })
local B = cute.make_layout({ 4, 3 }, { 1, 8 }) -- does not coalesce to one mode

describe("layout algebra errors", function()
  it("rejects shapes and strides that are not congruent or not integers", function()
    raises("make_layout: shape (4,3) and stride (1,(4,2)) are not congruent",
      function() local r = cute.make_layout({ 4, 3 }, { 1, { 4, 2 } }); return r end)
    raises("make_layout: shape (4,-2) is invalid: -2 is not a positive extent",
      function() local r = cute.make_layout({ 4, -2 }); return r end)
    raises("make_layout: shape (4,0) is invalid: 0 is not a positive extent",
      function() local r = cute.make_layout({ 4, 0 }); return r end)
    raises("make_layout: shape (4,2.5) is invalid: 2.5 is not an integer",
      function() local r = cute.make_layout({ 4, 2.5 }); return r end)
    raises("make_layout: stride (1,0.5) is invalid: 0.5 is not an integer",
      function() local r = cute.make_layout({ 4, 2 }, { 1, 0.5 }); return r end)
    raises("make_layout: shape (4,x) is invalid: x is not an integer (a string)",
      function() local r = cute.make_layout({ 4, "x" }); return r end)
    raises("make_layout: shape (4) is not a proper tuple (holes or non-integer keys)",
      function() local r = cute.make_layout({ 4, n = 3 }); return r end)
    raises("make_layout: shape (4,(2,3),()) contains an empty tuple",
      function() local r = cute.make_layout({ 4, { 2, 3 }, {} }); return r end)
    raises("integer overflow: 1073741824 * 1073741824 is not exact in a Lua number (|result| must stay below 2^53)",
      function() local r = cute.make_layout({ 2 ^ 30, 2 ^ 30, 2 }); return r end)
    raises("make_ordered_layout: shape (2,3) and order (0,1,2) are not congruent",
      function() local r = cute.make_ordered_layout({ 2, 3 }, { 0, 1, 2 }); return r end)
  end)

  it("rejects tilers that do not divide where the operation needs it", function()
    raises("composition: shape (4,3) is not divisible by 5 (A = (4,3):(1,8), B = 5:1)",
      function() local r = cute.composition(B, 5); return r end)
    raises("composition: shape (4,3) is not divisible by the stride 3 (A = (4,3):(1,8), B = 2:3)",
      function() local r = cute.composition(B, cute.make_layout(2, 3)); return r end)
    raises("logical_divide: shape (4,3) is not divisible by the stride 3 (A = (4,3):(1,8), B = (3,4):(1,3))",
      function() local r = cute.logical_divide(B, 3); return r end)
    raises("logical_divide: tiler (2,2,2) has more modes than the layout (4,3):(1,4)",
      function() local r = cute.logical_divide(A, { 2, 2, 2 }); return r end)
    raises("composition: tiler x must be a layout, an integer, _ or a tuple of those",
      function() local r = cute.composition(A, "x"); return r end)
    raises("zipped_divide: tiler 0 is not a positive integer",
      function() local r = cute.zipped_divide(A, 0); return r end)
    raises("tile_to_shape: the block shape (8,8) does not divide the target shape (20,64)",
      function() local r = cute.tile_to_shape(cute.make_layout({ 8, 8 }), { 20, 64 }); return r end)
    raises("tile_to_shape: the block (2,2,2):(1,2,4) has more modes than the target shape (8,8)",
      function() local r = cute.tile_to_shape(cute.make_layout({ 2, 2, 2 }), { 8, 8 }); return r end)
    raises("complement: (2,2):(1,1) is not injective (its modes overlap), so it has no complement",
      function() local r = cute.complement(cute.make_layout({ 2, 2 }, { 1, 1 })); return r end)
    raises("complement: the stride 3 of (2,2):(1,3) is not a multiple of 2 (the extent of the smaller modes), "
      .. "so it has no complement",
      function() local r = cute.complement(cute.make_layout({ 2, 2 }, { 1, 3 }), 12); return r end)
    raises("coalesce: profile (1,1,1) has more modes than the layout (4,3):(1,4)",
      function() local r = cute.coalesce(A, { 1, 1, 1 }); return r end)
    raises("composition: A must be a layout, got (4,3)",
      function() local r = cute.composition({ 4, 3 }, 2); return r end)
  end)

  it("rejects coordinates and indices out of range", function()
    raises("calling (4,3):(1,4): coordinate 4 is out of range for shape 4",
      function() local r = A(4, 0); return r end)
    raises("calling (4,3):(1,4): coordinate -1 is not a non-negative integer",
      function() local r = A(-1); return r end)
    raises("calling (4,3):(1,4): coordinate (1,2,0) does not match shape (4,3)",
      function() local r = A({ 1, 2, 0 }); return r end)
    raises("crd2idx: coordinate 1.5 is not a non-negative integer",
      function() local r = cute.crd2idx({ 1.5, 0 }, A); return r end)
    raises("idx2crd: index 12 is out of range for shape (4,3) (size 12)",
      function() local r = cute.idx2crd(12, { 4, 3 }); return r end)
    raises("slice: coordinate 7 is out of range for shape 3",
      function() local r = A(cute._, 7); return r end)
    raises("size: expected a layout or an IntTuple, got nil",
      function() local r = cute.size(nil); return r end)
    raises("get: mode 2 is out of range for (4,3) (rank 2)",
      function() local r = cute.get(A, 2); return r end)
    raises("local_partition: index 20 is out of range for the thread layout (4,4):(1,4) (size 16)",
      function() local r = cute.local_partition(A, cute.make_layout({ 4, 4 }), 20); return r end)
    raises("take: modes [1,3) are out of range for (4,3) (rank 2)",
      function() local r = cute.take({ 4, 3 }, 1, 3); return r end)
  end)

  it("rejects swizzles with impossible parameters", function()
    raises("Swizzle: |S| = 2 must be at least B = 3 (the XORed bit fields would overlap) in Swizzle(3,4,2)",
      function() local r = cute.Swizzle(3, 4, 2); return r end)
    raises("Swizzle: the number of bits B = -1 must not be negative in Swizzle(-1,4,3)",
      function() local r = cute.Swizzle(-1, 4, 3); return r end)
    raises("Swizzle: the base M = -2 must not be negative in Swizzle(1,-2,3)",
      function() local r = cute.Swizzle(1, -2, 3); return r end)
    raises("Swizzle: B + M + |S| = 40 exceeds 32 bits in Swizzle(10,20,10)",
      function() local r = cute.Swizzle(10, 20, 10); return r end)
    raises("Swizzle: B, M and S must be static integers, got Swizzle(1.5,4,3)",
      function() local r = cute.Swizzle(1.5, 4, 3); return r end)
    raises("S<3,3,3>: offset -1 is not a non-negative integer below 2^53",
      function() local r = cute.Swizzle(3, 3, 3)(-1); return r end)
  end)

  it("names the layout that cannot be drawn", function()
    raises("format_layout: (2,2,2):(1,2,4) has rank 3; only rank-1 and rank-2 layouts are drawn",
      function() local r = cute.format_layout(cute.make_layout({ 2, 2, 2 })); return r end)
    raises("format_layout_tv: (4,2):(2,1) maps (3,0) to 6, outside the 2x3 tile (2,3)",
      function() local r = cute.format_layout_tv(cute.make_layout({ 4, 2 }, { 2, 1 }), { 2, 3 }); return r end)
  end)
end)
