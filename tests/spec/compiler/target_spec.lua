-- The target table (src/target) from Lua: rows and features read from C,
-- sm_90 and sm_90a told apart, the IR module's target, and no target parsed
-- out of its name anywhere in cutelua's Lua.
local compiler = require "cute.compiler"
local ir = require "cute.ir"

describe("the target table", function()
  it("is read from C, with the features of each target", function()
    local archs = compiler.archs()
    assert.is_true(#archs >= 10)
    local names = {}
    for i, a in ipairs(archs) do
      names[i] = a.name
      assert.equal(a, compiler.target(a.name))
      assert.is_true(a.features.MMA_SYNC and a.features.CP_ASYNC and a.features.BF16 or false, a.name)
    end
    assert.same({ "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a" }, { unpack(names, 1, 5) })
    local s90, s90a = compiler.target("sm_90"), compiler.target("sm_90a")
    assert.equal(90, s90.cc)
    assert.equal(90, s90a.cc)
    assert.is_false(s90.arch_specific)
    assert.is_true(s90a.arch_specific)
    assert.is_nil(s90.features.WGMMA)
    assert.is_true(s90a.features.WGMMA)
    assert.is_true(s90.features.TMA)
    assert.is_false(compiler.target_has("sm_90", "SETMAXNREG"))
    assert.is_true(compiler.target_has("sm_90a", "SETMAXNREG"))
    assert.is_false(compiler.target_has("sm_100a", "WGMMA"))
    assert.is_true(compiler.target_has("sm_100a", "TCGEN05"))
    assert.is_false(compiler.target_has("sm_80", "FP8"))
    assert.is_true(compiler.target_has("sm_89", "FP8"))
    assert.equal("needs WGMMA, which sm_90 lacks (sm_90a has it)", compiler.target_needs("sm_90", "WGMMA"))
    local none, why = compiler.target("sm_91")
    assert.is_nil(none)
    assert.matches("unknown arch 'sm_91' %(known: sm_80, sm_86", why)
    assert.has_error(function() compiler.target_has("sm_90", "WARP_DRIVE") end)
    local fnames = {}
    for _, f in ipairs(compiler.features()) do
      fnames[#fnames + 1] = f.name
      assert.is_true(#f.what > 8)
    end
    assert.matches("WGMMA", table.concat(fnames, " "))
  end)

  it("gives an IR module its target by name, sm_90 and sm_90a apart", function()
    local m = ir.module()
    assert.equal("sm_90a", m:target()) -- the default
    m:set_target("sm_90")
    assert.equal("sm_90", m:target())
    m:set_sm(80)
    assert.equal("sm_80", m:target())
    local m2 = ir.module { target = "sm_100a" }
    assert.equal("sm_100a", m2:target())
    local ok, msg = pcall(m.set_target, m, "sm_91")
    assert.is_false(ok)
    assert.matches("unknown target 'sm_91' %(known: sm_80, sm_86", msg)
    assert.equal("sm_80", m:target())
    ok, msg = pcall(m.set_sm, m, 75)
    assert.is_false(ok)
    assert.matches("no plain target has compute capability 7%.5", msg)
    m:free()
    m2:free()
  end)

  it("is never parsed out of a target's name in cutelua's Lua", function()
    local p = io.popen("grep -rln 'sm_(%d' lua cli tools 2>/dev/null")
    local found = p:read("*a")
    p:close()
    assert.equal("", found)
  end)
end)
