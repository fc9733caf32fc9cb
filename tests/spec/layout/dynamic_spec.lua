-- Dynamic leaves: values of the kernel tracer flow through the algebra via
-- their metatable's __cute_int operations. This spec defines a symbolic
-- stand-in that records the expression it was built from and carries a
-- concrete value, so results are checked both for what would be emitted
-- and for what they would compute.
local cute = require "cute"
local arith = require "cute.arith"
local H = require "layout.helper"

local Sym = {}
local calls = 0
local function sym(e, v) return setmetatable({ e = e, v = v }, Sym) end
local function E(x) return type(x) == "number" and tostring(x) or x.e end
local function V(x) return type(x) == "number" and x or x.v end
local ops = {}
for name, def in pairs {
  add = { "+", function(a, b) return a + b end },
  sub = { "-", function(a, b) return a - b end },
  mul = { "*", function(a, b) return a * b end },
  div = { "/", function(a, b) return math.floor(a / b) end },
  mod = { "%", function(a, b) return a % b end },
} do
  ops[name] = function(a, b)
    calls = calls + 1
    return sym("(" .. E(a) .. def[1] .. E(b) .. ")", def[2](V(a), V(b)))
  end
end
ops.neg = function(a) return sym("(-" .. E(a) .. ")", -V(a)) end
ops.min = function(a, b) return sym("min(" .. E(a) .. "," .. E(b) .. ")", math.min(V(a), V(b))) end
ops.max = function(a, b) return sym("max(" .. E(a) .. "," .. E(b) .. ")", math.max(V(a), V(b))) end
ops.bxor = function(a, b) return sym("xor(" .. E(a) .. "," .. E(b) .. ")", bit.bxor(V(a), V(b))) end
Sym.__cute_int = ops
Sym.__tostring = function(x) return x.e end

-- a layout with every dynamic leaf replaced by its value
local function concrete(x)
  if type(x) == "table" and getmetatable(x) == Sym then return x.v end
  if cute.is_layout(x) then return cute.make_layout(concrete(x.shape), concrete(x.stride)) end
  if type(x) == "table" then
    local r = {}
    for i = 1, #x do r[i] = concrete(x[i]) end
    return r
  end
  return x
end

describe("dynamic leaves", function()
  it("fold when static and call the dynamic type otherwise", function()
    local M = sym("M", 100)
    assert.equal(5, arith.add(2, 3))
    assert.is_true(arith.add(M, 0) == M)
    assert.is_true(arith.mul(1, M) == M)
    assert.equal(0, arith.mul(M, 0))
    assert.is_true(arith.div(M, 1) == M)
    assert.equal(0, arith.mod(M, 1))
    assert.equal("(M+1)", E(arith.add(M, 1)))
    assert.equal("((M+127)/128)", E(arith.ceil_div(M, 128)))
    assert.is_true(arith.is_dynamic(M) and not arith.is_static(M))
    assert.equal(7, arith.static(7, "x"))
    local msg = H.error_of(arith.static, M, "complement: the stride")
    assert.matches("complement: the stride must be static (a Lua integer), got the dynamic value M", msg, 1, true)
  end)

  it("flow through crd2idx, idx2crd and layout calls", function()
    local i = sym("i", 45)
    -- a static layout at a dynamic index: only the needed operations
    local l = cute.make_layout({ 4, 8 }, { 1, 4 })
    calls = 0
    local r = l(i)
    assert.equal("((i%4)+((i/4)*4))", E(r))
    assert.equal(l(45), V(r))
    assert.equal(4, calls)
    local c = cute.idx2crd(sym("i", 21), { 4, { 2, 3 } })
    assert.equal("((i%4),(((i/4)%2),((i/4)/2)))", cute.pretty_str(c))
    assert.same(cute.idx2crd(21, { 4, { 2, 3 } }), concrete(c))
    -- dynamic shapes and strides
    local M, ld = sym("M", 300), sym("ld", 320)
    local a = cute.make_layout({ M, 64 }, { 1, ld })
    assert.equal("(M,64):(1,ld)", tostring(a))
    assert.equal("(3+(7*ld))", E(a(3, 7)))
    local at = a(sym("k", 1234))
    assert.equal(concrete(a)(1234), V(at))
    assert.equal("(M*64)", E(cute.size(a)))
    assert.equal(concrete(a)({ 5, 9 }), V(cute.crd2idx({ sym("x", 5), sym("y", 9) }, a)))
  end)

  it("flow through divides and products on dynamic strides", function()
    local ld = sym("ld", 320)
    local a = cute.make_layout({ 128, 64 }, { 1, ld })
    for _, t in ipairs { { 32, 16 }, 256, cute.make_layout({ 4, 8 }, { 1, 4 }) } do
      for _, op in ipairs { "logical_divide", "zipped_divide", "tiled_divide", "flat_divide" } do
        local d = cute[op](a, t)
        local s = cute[op](concrete(a), t)
        assert.equal(tostring(s), tostring(concrete(d)))
        assert.matches("ld", tostring(d), 1, true)
      end
    end
    assert.equal("((32,4),(16,4)):((1,32),(ld,(16*ld)))", tostring(cute.logical_divide(a, { 32, 16 })))
    -- products of a dynamic-stride layout need only its strides' order when
    -- they are by mode over static modes; a dynamic B shape flows through
    local M = sym("M", 6)
    assert.equal("(4,M):(1,4)", tostring(cute.logical_product(cute.make_layout(4), cute.make_layout(M))))
    local p = cute.logical_product(cute.make_layout(4), { cute.make_layout(M) })
    assert.equal("((4,M)):((1,4))", tostring(p))
    -- a dynamic stride in B: the rest of A's complement is dynamic, and B's
    -- stride scales it
    local q = cute.logical_product(cute.make_layout(4), cute.make_layout(3, ld))
    assert.equal("(4,3):(1,(ld*4))", tostring(q))
    assert.same(H.table_of(cute.logical_product(cute.make_layout(4), cute.make_layout(3, 320))),
      H.table_of(concrete(q)))
    local r = cute.zipped_product(cute.make_layout({ 2, 2 }), { cute.make_layout(3, ld), 2 })
    assert.equal(tostring(cute.zipped_product(cute.make_layout({ 2, 2 }), { cute.make_layout(3, 320), 2 })),
      tostring(concrete(r)))
  end)

  it("flow through local_tile, local_partition and swizzles", function()
    local M, N, ld = sym("M", 300), sym("N", 200), sym("ld", 320)
    local a = cute.make_layout({ M, N }, { 1, ld })
    local tile, off = cute.local_tile(a, { 128, 64 }, { sym("bm", 1), sym("bn", 2) })
    assert.equal("(128,64):(1,ld)", tostring(tile))
    assert.equal("((bm*128)+(bn*(64*ld)))", E(off))
    assert.equal(128 + 2 * 64 * 320, V(off))
    local z = cute.zipped_divide(a, { 128, 64 })
    assert.equal("((128,64),(((M+127)/128),((N+63)/64))):((1,ld),(128,(64*ld)))", tostring(z))
    local part, poff = cute.local_partition(tile, cute.make_layout({ 32, 4 }, { 4, 1 }), sym("tid", 5))
    assert.equal("(4,16):(32,(4*ld))", tostring(part))
    assert.equal("(((tid/4)%32)+((tid%4)*ld))", E(poff))
    assert.equal(1 + 320, V(poff))
    local sw = cute.Swizzle(3, 3, 3)
    local o = sym("o", 77)
    local y = sw(o)
    assert.equal("xor(o,(((o/64)%8)*8))", E(y))
    assert.equal(sw(77), V(y))
  end)

  it("accept cdata values whose metatype carries __cute_int", function()
    local ffi = require "ffi"
    ffi.cdef "typedef struct { double v; } cutelua_spec_dyn_t;"
    local T
    local cops = {}
    for _, name in ipairs { "add", "sub", "mul", "div", "mod", "min", "max" } do
      cops[name] = function(a, b)
        local x = type(a) == "number" and a or a.v
        local y = type(b) == "number" and b or b.v
        local r = ({ add = x + y, sub = x - y, mul = x * y, div = math.floor(x / y), mod = x % y,
          min = math.min(x, y), max = math.max(x, y) })[name]
        return T(r)
      end
    end
    T = ffi.metatype("cutelua_spec_dyn_t", { __index = { __cute_int = cops } })
    local n = T(37)
    assert.is_true(arith.is_dynamic(n))
    local l = cute.make_layout({ 4, 8 }, { 8, 1 })
    assert.equal(l(37), l(n).v)
    assert.equal(l(3, 7), cute.crd2idx({ T(3), T(7) }, l).v)
  end)

  it("raise where a decision needs a static value, at the caller's line", function()
    local M, ld = sym("M", 300), sym("ld", 320)
    local msg = H.error_of(function()
      local c = cute.complement(cute.make_layout({ 4, 8 }, { ld, 1 })) -- not a tail call: keeps this frame
      return c
    end)
    local line = H.line_here() - 3
    assert.equal("tests/spec/layout/dynamic_spec.lua:" .. line .. ": complement: the stride ld of (4,8):(ld,1) "
      .. "(complement orders modes by stride) must be static, got the dynamic value ld", msg)
    msg = H.error_of(function()
      local r = cute.composition(cute.make_layout({ M, 64 }, { 1, ld }), 256)
      return r
    end)
    assert.matches("composition: the extent M of A (mode 0 after coalescing) must be static", msg, 1, true)
    assert.matches("dynamic_spec.lua:%d+:", msg)
    msg = H.error_of(cute.shape_div, M, 4)
    assert.matches("shape_div: cannot decide whether M and 4 divide each other: both must be static", msg, 1, true)
    msg = H.error_of(cute.elem_less, { M }, { 4 })
    assert.matches("elem_less: M must be static", msg, 1, true)
    msg = H.error_of(cute.right_inverse, cute.make_layout({ 4, 8 }, { 1, ld }))
    assert.matches("right_inverse: (4,8):(1,ld) must be static", msg, 1, true)
    msg = H.error_of(cute.tile_to_shape, cute.make_layout({ M, 8 }), { 128, 64 })
    assert.matches("tile_to_shape: the block's extent M must be static", msg, 1, true)
    local plain = setmetatable({}, { __tostring = function() return "<no ops>" end })
    msg = H.error_of(arith.add, plain, 1)
    assert.matches("is not an integer leaf", msg, 1, true)
    local partial = setmetatable({}, { __cute_int = { add = ops.add }, __tostring = Sym.__tostring })
    msg = H.error_of(cute.Swizzle(2, 2, 3), partial)
    assert.matches("has no 'div' operation", msg, 1, true)
  end)
end)
