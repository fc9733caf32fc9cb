-- cute.dtype: the element types, from the runtime's C table.
local dtype = require "cute.dtype"
local cute = require "cute"
local ffi = require "ffi"

describe("cute.dtype", function()
  it("has every dtype of the IR, with sizes and kinds", function()
    local want = {
      bool = { 1, "bool" }, i8 = { 1, "int" }, u8 = { 1, "uint" }, i16 = { 2, "int" }, u16 = { 2, "uint" },
      i32 = { 4, "int" }, u32 = { 4, "uint" }, i64 = { 8, "int" }, u64 = { 8, "uint" }, f16 = { 2, "float" },
      bf16 = { 2, "float" }, tf32 = { 4, "float" }, f32 = { 4, "float" }, f64 = { 8, "float" },
      e4m3 = { 1, "float" }, e5m2 = { 1, "float" },
    }
    local n = 0
    for name, w in pairs(want) do
      local t = dtype.get(name)
      assert.equal(w[1], t.bytes, name)
      assert.equal(w[2], t.kind, name)
      assert.equal(ffi.sizeof(t.storage), t.bytes, name)
      n = n + 1
    end
    assert.equal(n, #dtype.all())
  end)

  it("is reachable from the cute namespace, with CuTe DSL's names too", function()
    assert.equal(dtype.f32, cute.f32)
    assert.equal(cute.bf16, cute.BFloat16)
    assert.equal(cute.e4m3, cute.Float8E4M3FN)
    assert.equal("bf16", tostring(cute.bf16))
  end)

  it("names the known dtypes when asked for an unknown one", function()
    local ok, msg = pcall(dtype.get, "f8")
    assert.is_false(ok)
    assert.matches("unknown dtype f8 %(known: bool, i8", msg)
    assert.matches("dtype_spec%.lua:%d+:", msg)
  end)

  it("makes typed scalars", function()
    local s = cute.i32(5)
    assert.equal(cute.i32, s.dtype)
    assert.equal(5, s.value)
    assert.equal("i32(5)", tostring(s))
    assert.has_error(function() return cute.f32("x") end)
  end)

  it("converts on the host exactly, through the runtime", function()
    local rt = require("cute._c").rt
    local src = ffi.new("double[5]", { 1.0, -2.5, 65504, 1 / 3, 1e6 })
    local h = ffi.new("uint16_t[5]")
    assert.equal(0, tonumber(rt.from_doubles(h, cute.f16.code, src, 5)))
    assert.same({ 0x3c00, 0xc100, 0x7bff, 0x3555, 0x7c00 }, { h[0], h[1], h[2], h[3], h[4] })
    local back = ffi.new("double[5]")
    rt.to_doubles(back, h, cute.f16.code, 5)
    assert.equal(-2.5, back[1])
    assert.equal(math.huge, back[4])
    local i8 = ffi.new("int8_t[2]")
    assert.equal(2, tonumber(rt.from_doubles(i8, cute.i8.code, ffi.new("double[2]", { 1, 1.5 }), 2)))
  end)
end)
