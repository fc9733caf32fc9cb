-- The enumerations Lua needs are read from C, not retyped: address spaces,
-- kernel attributes, module options, type kinds, storage-only types, the
-- math ops (the MATH lowering family), the dtype columns and the compile
-- options' names. Each is checked against what C then accepts.
local ffi = require "ffi"
local ir = require "cute.ir"
local cute = require "cute"
local compiler = require "cute.compiler"
local E = ir.enums

describe("the enumerations read from C", function()
  it("address spaces: each parses and reads back", function()
    assert.same({ "generic", "global", "shared", "shared_cluster", "local", "param", "const" }, E.space_list)
    local m = ir.module()
    for _, s in ipairs(E.space_list) do
      local t = m:type("ptr<f32, " .. s .. ", 4>")
      assert.equal(s, m:type_info(t).space)
      assert.equal("ptr", m:type_info(t).kind)
    end
    m:free()
  end)

  it("kernel attributes and module options, by name, take effect in C", function()
    assert.equal(3, E.attr_arity.maxntid)
    assert.equal(1, E.attr_arity.minctasm)
    local m = ir.module()
    local k = m:kernel("k")
    for _, a in ipairs(E.attr_list) do k:attr(a, E.attr_arity[a] == 3 and { 1, 1, 1 } or 1) end
    local text = m:print()
    assert.matches("maxntid%(1, 1, 1%)", text)
    assert.matches("minctasm%(1%)", text)
    m:set_max_ops(1)
    assert.has_error(function() k:param("i32") k:param("i32") end)
    m:free()
    assert.same({ fold = 0, check = 1, sm = 2, max_ops = 3 }, E.option)
  end)

  it("storage-only types: exactly those C refuses arithmetic on", function()
    local m = ir.module()
    local k = m:kernel("k")
    local set = {}
    for name in pairs(E.scalar) do
      if name ~= "void" and name ~= "i1" then
        local x = k:param(name)
        local ok = pcall(k.op, k, "add", nil, x, x)
        if not ok then set[name] = true end
      end
    end
    assert.same({ bf16 = true, tf32 = true, e4m3 = true, e5m2 = true }, set)
    assert.same(set, E.storage_only)
    m:free()
  end)

  it("the math functions are the MATH family's ops", function()
    local math_ops = ir.ops_of_family("MATH")
    assert.equal(13, #math_ops)
    for _, name in ipairs(math_ops) do
      assert.is_function(cute[name], name)
      assert.equal("MATH", ffi.string(require("cute._c").ir.op_lowering(ir.ops[name])))
    end
    assert.same({}, ir.ops_of_family("NO SUCH FAMILY"))
  end)

  it("dtype columns: host storage, IR type and CuTe DSL name", function()
    local m = ir.module()
    for _, dt in ipairs(require("cute.dtype").all()) do
      assert.equal(dt.bytes, ffi.sizeof(dt.storage), dt.name)
      assert.is_true(m:type(dt.ir) > 0, dt.name)
      assert.equal(dt, cute[dt.cute_name], dt.name)
    end
    assert.equal("uint16_t", cute.bf16.storage)
    assert.equal("i32", cute.u32.ir)
    assert.equal(cute.e4m3, cute.Float8E4M3FN)
    m:free()
  end)

  it("compile options: the names the options accept and refuse with", function()
    local names = compiler.option_names()
    assert.equal(13, #names)
    local ok, msg = pcall(compiler.options, { frobnicate = 1 })
    assert.is_false(ok)
    local listed = msg:match("known: ([%w_, ]+)")
    local sorted = { unpack(names) }
    table.sort(sorted)
    assert.equal(table.concat(sorted, ", "), listed)
    assert.same({ "arch", "opt", "nvvm_opt", "fast_math", "ftz", "lineinfo", "max_registers", "ptxas_options" },
      compiler.option_names { in_key = true })
  end)
end)
