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
    raises("zipped_divide: tiler 0 is not a positive integer below 2^53",
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
    raises("calling (4,3):(1,4): coordinate -1 is not a non-negative integer below 2^53",
      function() local r = A(-1); return r end)
    raises("calling (4,3):(1,4): coordinate (1,2,0) does not match shape (4,3)",
      function() local r = A({ 1, 2, 0 }); return r end)
    raises("crd2idx: coordinate 1.5 is not a non-negative integer below 2^53",
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

  it("rejects tables that contain themselves or nest too deep, at the caller's line", function()
    local cyclic = { 1 }
    cyclic[2] = cyclic
    local deep = 4
    for _ = 1, 100000 do deep = { deep } end
    local shown = string.rep("(", 64) .. "(...)" .. string.rep(")", 64) -- printed down to MAX_DEPTH
    raises("make_layout: shape (1,<cycle>) contains itself (a table nested in its own element)",
      function() local r = cute.make_layout(cyclic); return r end)
    raises("make_layout: shape " .. shown .. " is nested deeper than 64 levels (cute.int_tuple.MAX_DEPTH)",
      function() local r = cute.make_layout(deep); return r end)
    raises("size: argument " .. shown .. " is nested deeper than 64 levels (cute.int_tuple.MAX_DEPTH)",
      function() local r = cute.size(deep); return r end)
    raises("flatten: argument (1,<cycle>) contains itself (a table nested in its own element)",
      function() local r = cute.flatten(cyclic); return r end)
    raises("logical_divide: tiler (2,<cycle>) contains itself (a table nested in its own element)",
      function() local t = { 2 }; t[2] = t; local r = cute.logical_divide(A, t); return r end)
    -- 64 levels is the limit (a leaf has depth 0)
    local ok64 = 3
    for _ = 1, 64 do ok64 = { ok64 } end
    assert.equal(64, cute.depth(ok64))
    assert.equal(3, cute.size(cute.make_layout(ok64)))
  end)

  it("rejects the tiler _ where CuTe does, and empty or bad tilers", function()
    local msg = " with the tiler _ the layout 8:1 stands for its own (tile, rest) pair, so it must have rank 2, "
      .. "not 1 (a tuple tiler such as {_} keeps a mode whole)"
    raises("tiled_divide:" .. msg, function() local r = cute.tiled_divide(cute.make_layout(8), cute._); return r end)
    raises("flat_divide:" .. msg, function() local r = cute.flat_divide(cute.make_layout(8), cute._); return r end)
    raises("zipped_divide:" .. msg, function() local r = cute.zipped_divide(cute.make_layout(8), cute._); return r end)
    raises("tiled_product:" .. msg, function() local r = cute.tiled_product(cute.make_layout(8), cute._); return r end)
    -- a layout of rank 2 is its own (tile, rest); a tuple tiler keeps modes
    assert.equal("(4,3):(1,4)", tostring(cute.tiled_divide(A, cute._)))
    assert.equal("((8),1):((1),0)", tostring(cute.zipped_divide(cute.make_layout(8), { cute._ })))
    raises("composition: tiler (2,()) contains an empty tuple",
      function() local r = cute.composition(A, { 2, {} }); return r end)
    raises("logical_divide: tiler 1.152921504606847e+18 is not a positive integer below 2^53",
      function() local r = cute.logical_divide(cute.make_layout(8), 2 ^ 60); return r end)
    raises("logical_divide: tiler (2,inf) is invalid: inf is not a positive integer below 2^53",
      function() local r = cute.logical_divide(A, { 2, math.huge }); return r end)
    raises("local_tile: tiler (4,x) is invalid: x is not a layout, an integer, _ or a tuple of those",
      function() local r = cute.local_tile(A, { 4, "x" }, { 0, 0 }); return r end)
  end)

  it("range-checks offsets, indices and integers at every entry point", function()
    local L16 = cute.make_layout({ 4, 4 })
    raises("get_hier_coord: offset -1 is not a non-negative integer below 2^53",
      function() local r = L16:get_hier_coord(-1); return r end)
    raises("get_hier_coord: offset 100 is out of range for (4,4):(1,4) (its offsets lie in [0, 16))",
      function() local r = L16:get_hier_coord(100); return r end)
    raises("get_flat_coord: offset 2.5 is not a non-negative integer below 2^53",
      function() local r = L16:get_flat_coord(2.5); return r end)
    raises("get_1d_coord: offset 16 is out of range for (4,4):(1,4) (its offsets lie in [0, 16))",
      function() local r = L16:get_1d_coord(16); return r end)
    raises("ceil_div: dividend inf is invalid: inf is too large (|x| must stay below 2^53)",
      function() local r = cute.ceil_div(math.huge, 2); return r end)
    raises("ceil_div: divisor 0 is invalid: 0 is not a positive extent",
      function() local r = cute.ceil_div(7, 0); return r end)
    raises("round_up: dividend (7,2.5) is invalid: 2.5 is not an integer",
      function() local r = cute.round_up({ 7, 2.5 }, 4); return r end)
    raises("calling (4,4):(1,4): coordinate 1.152921504606847e+18 is not a non-negative integer below 2^53",
      function() local r = L16(2 ^ 60); return r end)
    raises("crd2idx: shape (4,4) and stride 3 are not congruent",
      function() local r = cute.crd2idx({ 1, 2 }, { 4, 4 }, 3); return r end)
    raises("append: rank 1099511627776 is too large (at most 65536 modes, cute.int_tuple.MAX_RANK)",
      function() local r = cute.append({ 1, 2 }, 3, 2 ^ 40); return r end)
    raises("get: mode index a is not an integer",
      function() local r = cute.get({ 1, 2 }, "a"); return r end)
    raises("size: argument (2.5,3) is invalid: 2.5 is not an integer",
      function() local r = cute.size({ 2.5, 3 }); return r end)
    raises("group_modes: the result would have an empty mode (((),4,4))",
      function() local r = cute.group_modes(L16, 0, 0); return r end)
    -- the three-argument idx2crd is C++'s formula, defined past the layout's offsets
    assert.same({ 1, 0 }, cute.idx2crd(8, { 3, 2 }, { 2, 1 }))
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

  it("refuses to print or draw more than max_cells cells, naming the limit", function()
    local big = cute.make_layout({ 4096, 4096 })
    local advice = " (pass {max_cells = N} as the last argument, or set cute.layout_print.max_cells)"
    raises("format_layout: (4096,4096):(1,4096) has 16777216 cells, more than max_cells = 65536" .. advice,
      function() local r = cute.format_layout(big); return r end)
    raises("print_layout: (4096,4096):(1,4096) has 16777216 cells, more than max_cells = 65536" .. advice,
      function() local r = cute.print_layout(big); return r end)
    raises("svg_layout: (4,4):(1,4) has 16 cells, more than max_cells = 10" .. advice,
      function() local r = cute.svg_layout(cute.make_layout({ 4, 4 }), { max_cells = 10 }); return r end)
    raises("print_svg: (1024,1024):(1,1024) has 1048576 cells, more than max_cells = 65536" .. advice,
      function() local r = cute.print_svg(cute.make_layout({ 1024, 1024 }), "/nonexistent/x.svg"); return r end)
    raises("format_layout_tv: the tile (4096,4096) has 16777216 cells, more than max_cells = 65536" .. advice,
      function() local r = cute.format_layout_tv(big, { 4096, 4096 }); return r end)
    raises("svg_tv: (4096,4096):(0,0) has 16777216 (thread, value) pairs, more than max_cells = 65536" .. advice,
      function() local r = cute.svg_tv(cute.make_layout({ 4096, 4096 }, { 0, 0 }), { 4, 4 }); return r end)
    raises("format_layout: unknown option max_cell (the option is max_cells)",
      function() local r = cute.format_layout(big, { max_cell = 3 }); return r end)
    raises("format_layout: max_cells must be a positive integer (or math.huge for no limit), got 0",
      function() local r = cute.format_layout(big, { max_cells = 0 }); return r end)
    -- the option and the module setting raise the limit
    local text = cute.format_layout(cute.make_layout({ 300, 300 }), { max_cells = 90000 })
    assert.equal(3 + 2 * 300, select(2, text:gsub("\n", "")))
    local P = require "cute.layout_print"
    local saved = P.max_cells
    P.max_cells = 4
    local ok, msg = pcall(cute.format_layout, cute.make_layout({ 2, 3 }))
    P.max_cells = saved
    assert.is_false(ok)
    assert.truthy(msg:find("has 6 cells, more than max_cells = 4", 1, true), msg)
    assert.equal(cute.format_layout(cute.make_layout({ 2, 3 })), cute.format_layout(cute.make_layout({ 2, 3 }), {}))
  end)
end)
