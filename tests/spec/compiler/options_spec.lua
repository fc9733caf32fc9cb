-- cute.compiler.options: fields, checks, and the CUTELUA_* environment
-- variables (set in child processes, since Lua cannot set its own).
local compiler = require "cute.compiler"
local H = require "tests.spec.compiler.helper"

describe("compiler.options", function()
  it("takes every option", function()
    local o = compiler.options {
      arch = "sm_80", opt = 2, fast_math = true, ftz = false, lineinfo = true, max_registers = 64,
      ptxas_options = { "-warn-spills", "-warn-lmem-usage" }, keep = { "ptx", "sass" }, dump_dir = "/tmp/d",
      cache = false, cache_dir = false, link = { "a.ptx", { data = "x", kind = "ptx" } },
    }
    assert.equal("sm_80", o:get("arch"))
    assert.equal(2, o:get("opt"))
    assert.is_true(o:get("fast_math"))
    assert.is_false(o:get("ftz"))
    assert.is_true(o:get("lineinfo"))
    assert.equal(64, o:get("max_registers"))
    assert.equal("-warn-spills -warn-lmem-usage", o:get("ptxas_options"))
    assert.equal("ptx,sass", o:get("keep"))
    assert.equal("/tmp/d", o:get("dump_dir"))
    assert.is_false(o:get("cache"))
    assert.is_false(o:get("cache_dir"))
    assert.equal(2, o:get("link"))
    assert.equal(o, compiler.options(o)) -- passes through
    assert.matches("^cute%.compiler%.options{arch=sm_80, opt=2, fast_math=true", tostring(o))
  end)

  it("takes libnvvm's level apart from ptxas's (nvvm_opt)", function()
    local o = compiler.options { arch = "sm_90a", opt = 3 }
    assert.equal(3, o:get("nvvm_opt")) -- as opt
    local n = o:with { nvvm_opt = 1 }
    assert.equal(1, n:get("nvvm_opt"))
    assert.equal(3, n:get("opt"))
    assert.matches("opt=3, nvvm_opt=1,", tostring(n), 1, true)
    assert.equal(3, n:with({ nvvm_opt = false }):get("nvvm_opt"))
    local ok, msg = pcall(compiler.options, { nvvm_opt = 4 })
    assert.is_false(ok)
    assert.matches("nvvm_opt", msg)
  end)

  it("derives copies with :with", function()
    local a = compiler.options { arch = "sm_80", max_registers = 64, cache = false }
    local b = a:with { arch = "sm_90a" }
    assert.equal("sm_80", a:get("arch"))
    assert.equal("sm_90a", b:get("arch"))
    assert.equal(64, b:get("max_registers"))
    assert.is_false(b:get("cache"))
    -- ftz still follows fast_math unless it was given
    assert.is_true(a:with({ fast_math = true }):get("ftz"))
  end)

  it("raises clear errors", function()
    local cases = {
      { { archh = "sm_80" }, "unknown option 'archh' %(did you mean 'arch'%?%) %(known: arch, cache, cache_dir" },
      { { max_register = 32 }, "unknown option 'max_register' %(did you mean 'max_registers'%?%)" },
      { { zzzz = 1 }, "unknown option 'zzzz' %(known: " },
      { { arch = "sm_91" }, "unknown arch 'sm_91' %(known: sm_80, sm_86, sm_89, sm_90, sm_90a" },
      { { opt = 4 }, "opt must be 0, 1, 2 or 3, got 4" },
      { { opt = 1.5 }, "opt must be 0, 1, 2 or 3, got 1.5" },
      { { fast_math = "yes" }, "fast_math must be a boolean, got yes" },
      { { max_registers = 300 }, "max_registers must be 0 %(no limit%) or a count up to 255, got 300" },
      { { keep = "ptx,asm" }, "keep: unknown stage 'asm'" },
      { { keep = 5 }, "keep must be a list of stages" },
      { { ptxas_options = 3 }, "ptxas_options must be a string or a list" },
      { { ptxas_options = string.rep("x", 600) }, "ptxas_options is too long %(511 bytes at most%)" },
      { { link = { 5 } }, "link%[1%] must be a path or a table" },
      { { link = { { kind = "ptx" } } }, "link%[1%] needs a path or data" },
      { { link = { { path = "x", kind = "elf" } } }, "link%[1%]: unknown kind 'elf'" },
      { { cache_dir = "" }, "cache_dir must be a directory or false" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(compiler.options, c[1])
      assert.is_false(ok)
      assert.matches("options_spec.lua:%d+: compiler.options: " .. c[2], e)
    end
    assert.error_matches(function() compiler.options(5) end, "expected a table, got number")
  end)
end)

describe("CUTELUA_* variables", function()
  local show = [[
    local o = require("cute.compiler").options(...)
    for _, k in ipairs { "arch", "opt", "fast_math", "ftz", "lineinfo", "max_registers", "ptxas_options", "keep",
      "dump_dir", "cache", "cache_dir" } do
      print(k .. "=" .. tostring(o:get(k)))
    end
  ]]

  it("set the defaults", function()
    local dir = H.tmpdir()
    finally(function() H.rm(dir) end)
    local out, rc = H.run(show, {
      CUTELUA_ARCH = "sm_89", CUTELUA_OPT_LEVEL = "0", CUTELUA_FAST_MATH = "1", CUTELUA_LINEINFO = "on",
      CUTELUA_MAX_REGISTERS = "96", CUTELUA_PTXAS_OPTIONS = "-warn-spills", CUTELUA_KEEP = "all",
      CUTELUA_DUMP_DIR = dir, CUTELUA_CACHE = "0", CUTELUA_CACHE_DIR = dir .. "/c",
    }, dir)
    assert.equal(0, rc, out)
    assert.equal("arch=sm_89\nopt=0\nfast_math=true\nftz=true\nlineinfo=true\nmax_registers=96\n" ..
      "ptxas_options=-warn-spills\nkeep=ir,ll,ptx,cubin,sass,log\ndump_dir=" .. dir .. "\ncache=false\n" ..
      "cache_dir=" .. dir .. "/c\n", out)
  end)

  it("give way to the table", function()
    local dir = H.tmpdir()
    finally(function() H.rm(dir) end)
    local out = H.run("local o = require('cute.compiler').options { arch = 'sm_80', opt = 2 }\n" ..
      "print(o:get('arch'), o:get('opt'), o:get('max_registers'))", {
        CUTELUA_ARCH = "sm_89", CUTELUA_OPT_LEVEL = "1", CUTELUA_MAX_REGISTERS = "40" }, dir)
    assert.equal("sm_80\t2\t40\n", out)
    out = H.run("local o = require('cute.compiler').options()\nprint(o:get('opt'), o:get('nvvm_opt'))",
      { CUTELUA_NVVM_OPT = "1" }, dir)
    assert.equal("3\t1\n", out)
  end)

  it("name the variable when its value is bad", function()
    local dir = H.tmpdir()
    finally(function() H.rm(dir) end)
    for var, msg in pairs {
      CUTELUA_ARCH = "CUTELUA_ARCH=sm_77: unknown arch",
      CUTELUA_OPT_LEVEL = "CUTELUA_OPT_LEVEL=sm_77: expected 0, 1, 2 or 3",
      CUTELUA_NVVM_OPT = "CUTELUA_NVVM_OPT=sm_77: expected 0, 1, 2 or 3",
      CUTELUA_KEEP = "CUTELUA_KEEP=sm_77: unknown stage 'sm_77'",
      CUTELUA_CACHE = "CUTELUA_CACHE=sm_77: expected 0 %(off%) or 1 %(on%)",
    } do
      local out, rc = H.run("require('cute.compiler').options()", { [var] = "sm_77" }, dir)
      assert.equal(1, rc)
      assert.matches("compiler options from the environment: " .. msg, out)
    end
  end)
end)
