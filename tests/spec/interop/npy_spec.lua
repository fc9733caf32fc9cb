-- cute.load_npy and cute.save_npy: round trips of every dtype and layout
-- through files, headers written by hand (versions, byte orders, Fortran
-- order), the errors for files cutelua cannot read, and files written by
-- numpy when python3 has it.
local cute = require "cute"
local ffi = require "ffi"
local npy = require "cute.npy"

local tmp = os.tmpname()
local function path(name) return tmp .. "_" .. name .. ".npy" end
local written = {}
local function file(name, bytes)
  local p = path(name)
  written[#written + 1] = p
  local f = assert(io.open(p, "wb"))
  f:write(bytes)
  f:close()
  return p
end
local function read(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("*a")
  f:close()
  written[#written + 1] = p
  return s
end

teardown(function()
  for _, p in ipairs(written) do os.remove(p) end
  os.remove(tmp)
end)

-- A host tensor of dtype dt over a layout with values chosen for the dtype.
local function sample(dt, layout)
  local h = cute.host_tensor(dt, layout)
  local vals = {}
  local d = ffi.new("double[1]")
  for i = 0, cute.size(layout) - 1 do
    local v
    if dt.name == "bool" then
      v = i % 3 == 0 and 1 or 0
    elseif dt.is_integer then
      v = dt.kind == "int" and (i * 37) % 200 - 100 or (i * 37) % 250
    else
      v = (i * 0.375 - 5) -- exact in every float type with a 3-bit mantissa or more... fp8: see below
      if dt.bits == 8 then v = ({ 0.5, -1, 2, 0.25, -448 / 64, 3 })[i % 6 + 1] end
    end
    vals[i + 1] = v
    d[0] = v
    assert(require("cute._c").rt.from_doubles(h.data + layout(i), dt.code, d, 1) == 0)
  end
  return h, vals
end

local DTYPES = { "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "bf16", "tf32",
  "e4m3", "e5m2" }

describe("cute.save_npy and cute.load_npy", function()
  it("round-trip every dtype in C order, Fortran order, with holes and nested shapes", function()
    local layouts = {
      { cute.make_layout({ 3, 5 }, { 5, 1 }), false, { 3, 5 } },       -- row-major: C order
      { cute.make_layout({ 3, 5 }), true, { 3, 5 } },                  -- column-major: Fortran order
      { cute.make_layout(7), false, { 7 } },
      { cute.make_layout({ 4, 3 }, { 1, 10 }), true, { 4, 3 } },       -- holes: gathered, Fortran order
      { cute.make_layout({ { 2, 3 }, 4 }, { { 12, 4 }, 1 }), false, { 2, 3, 4 } }, -- nested: C order of the leaves
      { cute.make_layout({ 2, 3, 4 }, { 3, 1, 6 }), true, { 2, 3, 4 } }, -- permuted: gathered
    }
    for _, name in ipairs(DTYPES) do
      local dt = cute.dtype.get(name)
      for _, case in ipairs(layouts) do
        local h, vals = sample(dt, case[1])
        local p = path(name)
        cute.save_npy(p, h)
        written[#written + 1] = p
        local s = read(p)
        local hlen = s:byte(9) + 256 * s:byte(10)
        assert.equal(0, (10 + hlen) % 64)
        assert.truthy(s:find(case[2] and "'fortran_order': True" or "'fortran_order': False", 1, true), name)
        assert.truthy(s:find("'shape': (" .. table.concat(case[3], ", ") .. (#case[3] == 1 and ",)" or ")"), 1, true),
          s:sub(11, 10 + hlen))
        local back = cute.load_npy(p)
        local want_dt = ({ bf16 = "f32", tf32 = "f32", e4m3 = "f32", e5m2 = "f32" })[name] or name
        assert.equal(want_dt, back.dtype.name)
        assert.equal(#s, 10 + hlen + cute.size(case[1]) * back.dtype.bytes)
        -- element by element, at the same coordinates (flattened to the leaves)
        local flat = cute.flatten(cute.shape(case[1]))
        local got = back:to_table()
        if type(flat) == "number" then flat = { flat } end
        assert.same(vals, got, name .. " " .. tostring(case[1]))
        assert.equal(#flat, #case[3])
      end
    end
  end)

  it("write bf16 and fp8 as their bits with raw = true, and read them back as such", function()
    for _, name in ipairs { "bf16", "e4m3", "e5m2" } do
      local dt = cute.dtype.get(name)
      local h, vals = sample(dt, cute.make_layout({ 2, 3 }, { 3, 1 }))
      local p = path(name .. "raw")
      cute.save_npy(p, h, { raw = true })
      written[#written + 1] = p
      assert.truthy(read(p):find(dt.bytes == 2 and "'descr': '<u2'" or "'descr': '|u1'", 1, true))
      local bits = cute.load_npy(p)
      assert.equal(dt.bytes == 2 and "u16" or "u8", bits.dtype.name)
      local back = cute.load_npy(p, { dtype = dt })
      collectgarbage()
      collectgarbage() -- the tensor keeps its array alive
      assert.equal(name, back.dtype.name)
      assert.same(vals, back:to_table())
      assert.equal(tostring(h.layout), tostring(back.layout))
    end
  end)

  it("read headers of versions 1.0, 2.0 and 3.0, big-endian data and 0-d arrays", function()
    local h1 = npy.internal.header("<i4", false, { 2, 2 })
    local data = ffi.new("int32_t[4]", 1, 2, 3, 4)
    local p = file("v1", h1 .. ffi.string(data, 16))
    assert.same({ 1, 3, 2, 4 }, cute.load_npy(p):to_table()) -- C order: a[0,1] = 2 is element (0, 1)
    -- version 2.0: a 4-byte header length
    local dict = "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }"
    local body = dict .. string.rep(" ", 64 - (12 + #dict + 1) % 64) .. "\n"
    local v2 = "\147NUMPY\2\0" .. string.char(#body % 256, math.floor(#body / 256), 0, 0) .. body
    assert.same({ 1, 2, 3, 4 }, cute.load_npy(file("v2", v2 .. ffi.string(data, 16))):to_table())
    local v3 = "\147NUMPY\3\0" .. v2:sub(9)
    assert.same({ 1, 2, 3, 4 }, cute.load_npy(file("v3", v3 .. ffi.string(data, 16))):to_table())
    -- big-endian f8 and u2
    local be = npy.internal.header(">f8", false, { 2 }) .. "\64\9\33\251\84\68\45\24" .. "\192\0\0\0\0\0\0\0"
    assert.same({ 3.141592653589793, -2 }, cute.load_npy(file("be", be)):to_table())
    local be2 = npy.internal.header(">u2", false, { 1 }) .. "\1\2"
    assert.same({ 258 }, cute.load_npy(file("be2", be2)):to_table())
    -- a 0-d array: one element
    local z = cute.load_npy(file("z", npy.internal.header("<f4", false, {}) .. ffi.string(ffi.new("float[1]", 2.5), 4)))
    assert.same({ 2.5 }, z:to_table())
    -- a value converted on load
    local c = cute.load_npy(p, { dtype = cute.f16 })
    assert.equal("f16", c.dtype.name)
    assert.same({ 1, 3, 2, 4 }, c:to_table())
  end)

  it("say what is wrong with files they cannot read", function()
    local function fails(bytes, pattern, opts)
      local p = file("bad", bytes)
      assert.error_matches(function() cute.load_npy(p, opts) end, pattern)
    end
    fails("PK\3\4 not npy at all", "is not a %.npy file %(it does not start with \\x93NUMPY%)")
    fails("\147NUMPY\4\0\10\0{}        \n", "%.npy format version 4%.0 is not supported")
    fails(npy.internal.header("<c8", false, { 2 }), 'the dtype "<c8" %(complex numbers%) is not supported')
    fails(npy.internal.header("|O", false, { 2 }), 'the dtype "|O" %(Python objects%) is not supported')
    fails(npy.internal.header("<U3", false, { 2 }), "unicode strings")
    local structured = "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }"
    fails("\147NUMPY\1\0" .. string.char(#structured + 1, 0) .. structured .. "\n",
      "structured dtypes %(descr %[%('a', '<f4'%), %('b', '<i4'%)%]%) are not supported")
    fails(npy.internal.header("<f4", false, { 4, 4 }) .. string.rep("\0", 60),
      "60 bytes of data; the header's shape %(4, 4%) of <f4 needs 64")
    -- a shape past any memory, with 24 bytes behind it: refused before allocating
    fails(npy.internal.header("<f4", false, { 100000000000, 100000000000 }) .. string.rep("\0", 24),
      "24 bytes of data; the header's shape %(100000000000, 100000000000%) of <f4 needs 40000000000000000000000")
    fails(npy.internal.header("<f4", false, { 4, 0 }), "the shape %(4, 0%) has an empty dimension 1")
    fails(npy.internal.header("<f4", false, { 2 }) .. ffi.string(ffi.new("float[2]", 1.5, 300), 8),
      "the value 1.5 at index 0 does not fit i8", { dtype = cute.i8 })
    assert.error_matches(function() cute.load_npy(tmp .. "_missing.npy") end,
      "load_npy: cannot open .*_missing%.npy: No such file or directory")
    assert.error_matches(function() cute.save_npy(tmp .. "_no/such/dir.npy", cute.host_tensor(cute.f32, 2)) end,
      "save_npy: cannot open .*_no/such/dir%.npy: No such file or directory")
    assert.error_matches(function() cute.save_npy(path("x"), { 1, 2 }) end,
      "save_npy: expected a device or host tensor, got a table")
    assert.error_matches(function() cute.save_npy(path("x"), cute.fake_tensor(cute.f32, 4)) end,
      "save_npy: a fake tensor has no memory")
  end)

  local function sh(cmd)
    local r = os.execute(cmd)
    return r == 0 or r == true
  end
  local has_numpy = sh("python3 -c 'import numpy' >/dev/null 2>&1")
  local numpy_it = has_numpy and it or pending
  numpy_it("read files numpy wrote and write files numpy reads (needs python3 with numpy)", function()
    local p, q = path("np_in"), path("np_out")
    written[#written + 1], written[#written + 1] = p, q
    assert(sh(string.format([[python3 -c "
import numpy as np
a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3
np.save('%s', np.asfortranarray(a.astype('>f8')))
"]], p)))
    local h = cute.load_npy(p)
    assert.equal("f64", h.dtype.name)
    assert.equal(0.5 * (1 * 12 + 2 * 4 + 3) - 3, h[{ 1, 2, 3 }])
    cute.save_npy(q, h)
    assert(sh(string.format([[python3 -c "
import numpy as np
a = np.load('%s'); b = np.arange(24).reshape(2, 3, 4) * 0.5 - 3
assert a.dtype == np.float64 and a.shape == (2, 3, 4) and (a == b).all(), a
"]], q)))
    -- every dtype, both orders: numpy writes, cutelua reads and writes back, numpy compares
    local dir = tmp .. "_np"
    assert(sh(string.format([[mkdir -p %s && cd %s && python3 -c "
import numpy as np
for t in ['?', 'i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', 'f2', 'f4', 'f8', '>i4', '>f2']:
    a = (np.arange(30).reshape(5, 6) * 7 %% 23).astype(t)
    np.save(t.replace('>', 'be') + '_c.npy', a)
    np.save(t.replace('>', 'be') + '_f.npy', np.asfortranarray(a))
"]], dir, dir)))
    for _, t in ipairs { "?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "bei4", "bef2" } do
      for _, order in ipairs { "_c", "_f" } do
        local g = cute.load_npy(dir .. "/" .. t .. order .. ".npy")
        assert.equal(t == "?" and 1 or 19, g[{ 1, 0 }], t .. order) -- a[1, 0] = 6 * 7 % 23 (True for bool)
        assert.equal(0, g[{ 0, 0 }])
        cute.save_npy(dir .. "/" .. t .. order .. "_back.npy", g)
      end
    end
    assert(sh(string.format([[cd %s && python3 -c "
import numpy as np, glob
n = 0
for f in glob.glob('*_back.npy'):
    a, b = np.load(f), np.load(f.replace('_back', ''))
    assert a.shape == b.shape and a.dtype.newbyteorder('=') == b.dtype.newbyteorder('=') and (a == b).all(), f
    n += 1
assert n == 28, n
"]], dir)))
    os.execute("rm -rf " .. dir)
  end)

  it("move device tensors through files #gpu", function()
    local t = cute.tensor(cute.bf16, { 64, 48 }, "row"):uniform(-2, 2, 3)
    local p = path("dev")
    written[#written + 1] = p
    cute.save_npy(p, t)
    local h = cute.load_npy(p, { dtype = cute.bf16 })
    local d = h:to_device()
    assert.same(t:to_table(), d:to_table())
    assert.equal(tostring(t.layout), tostring(d.layout))
  end)
end)
