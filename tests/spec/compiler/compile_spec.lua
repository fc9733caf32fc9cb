-- cute.compiler: the two steps, compile() and its module handle, the
-- resource report and spill warnings, diagnostics, link inputs.
local compiler = require "cute.compiler"
local H = require "tests.spec.compiler.helper"

-- No cache and a fixed target, so the machine and the environment do not
-- change what these see.
local function opts(t)
  local base = { arch = "sm_90a", cache = false, keep = "" }
  for k, v in pairs(t or {}) do base[k] = v end
  return compiler.options(base)
end

describe("compiler.nvvm_to_ptx and ptx_to_cubin", function()
  it("compile NVVM IR to PTX to a cubin for sm_80 and sm_90a", function()
    for _, arch in ipairs { "sm_80", "sm_90a" } do
      local ptx = compiler.nvvm_to_ptx(H.data("mma.ll"), opts { arch = arch })
      assert.matches("\n%.target " .. arch .. "\n", ptx)
      assert.truthy(ptx:find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1, true))
      assert.truthy(ptx:find("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1, true))
      local cubin, log = compiler.ptx_to_cubin(ptx, opts { arch = arch })
      assert.equal("\127ELF", cubin:sub(1, 4))
      assert.truthy(log:find("Compiling entry function 'mma_tile' for '" .. arch .. "'", 1, true))
    end
  end)

  it("take PTX text directly", function()
    local cubin = compiler.ptx_to_cubin(H.data("add_one.ptx"), opts())
    assert.equal("\127ELF", cubin:sub(1, 4))
    assert.truthy(cubin:find("add_one", 1, true))
  end)

  it("raise with the failing line marked", function()
    local ok, e = pcall(compiler.nvvm_to_ptx, H.data("bad_parse.ll"), opts())
    assert.is_false(ok)
    assert.matches("compile_spec.lua:%d+: compiler.nvvm_to_ptx: libnvvm could not compile the NVVM IR for sm_90a", e)
    assert.truthy(e:find("parse use of undefined value '%undefined_value'", 1, true))
    assert.truthy(e:find(">     12 |   %m = fmul float %v, %undefined_value", 1, true))
    local d = compiler.last_diagnostic()
    assert.equal("libnvvm", d.phase)
    assert.equal(12, d.line)
    assert.equal(22, d.col)
    assert.equal("ll", d.input)
    assert.equal("kernels/scale.lua:8", d.source)
    assert.truthy(d.log:find("nvvm-ir (12, 22)", 1, true))

    ok, e = pcall(compiler.ptx_to_cubin, H.data("bad.ptx"), opts())
    assert.is_false(ok)
    assert.truthy(e:find("ptxas could not compile the PTX for sm_90a", 1, true))
    assert.truthy(e:find(">     13 | \tfrobnicate.u32 %r2, %r1;", 1, true))
    d = compiler.last_diagnostic()
    assert.equal("ptxas", d.phase)
    assert.equal(13, d.line)
    assert.equal("ptx", d.input)
  end)

  it("reject what is not text", function()
    assert.error_matches(function() compiler.nvvm_to_ptx(42) end, "expected the text as a string, got number")
    assert.error_matches(function() compiler.ptx_to_cubin(nil) end, "expected the text as a string, got nil")
  end)
end)

describe("compiler.compile", function()
  it("returns a module with every stage", function()
    local ll = H.data("saxpy.ll")
    local m = compiler.compile(ll, opts(), { ir = "(the printed IR)" })
    assert.equal("saxpy", m.name)
    assert.equal("sm_90a", m.arch)
    assert.equal("compiled", m.origin)
    assert.equal(ll, m:ll())
    assert.equal("(the printed IR)", m:ir())
    assert.matches("%.visible %.entry saxpy%(", m:ptx())
    assert.equal("\127ELF", m:cubin():sub(1, 4))
    assert.same({ "saxpy" }, m:kernels())
    assert.matches("^%x+$", m:cache_key())
    assert.equal(64, #m:cache_key())
    assert.equal(compiler.cache_key(ll, m.options), m:cache_key())
    assert.truthy(m:log():find("Used %d+ registers"))
    assert.matches("^cute%.compiler%.Module<saxpy sm_90a: %d+%-byte cubin, compiled>$", tostring(m))
  end)

  it("compiles PTX, and says so when asked for NVVM IR", function()
    local m = compiler.compile(H.data("add_one.ptx"), opts())
    assert.equal("add_one", m.name)
    assert.equal(H.data("add_one.ptx"), m:ptx())
    assert.error_matches(function() m:ll() end, "module add_one: no NVVM IR %(it was compiled from PTX%)")
    assert.error_matches(function() m:ir() end, "no IR was given")
  end)

  it("reports resources per kernel and warns about spills", function()
    local m
    local warnings = H.warnings(function()
      m = compiler.compile(H.data("pressure.ll"), opts { arch = "sm_80", max_registers = 32 })
    end)
    local r = m:resources()
    assert.equal(1, #r)
    assert.equal(r[1], r.pressure)
    assert.equal("kernel", r.pressure.kind)
    assert.equal("sm_80", r.pressure.arch)
    assert.is_true(r.pressure.registers <= 32)
    assert.is_true(r.pressure.spill_stores > 0 and r.pressure.spill_loads > 0)
    assert.is_true(r.pressure.stack > 0)
    assert.is_true(r.pressure.compile_ms > 0)
    assert.equal(1, #warnings)
    assert.matches("^kernel 'pressure' spills registers to local memory: %d+ bytes stored", warnings[1])
    assert.same({ warnings[1] }, m:warnings())
    local report = m:report()
    assert.matches("^function +arch +regs", report)
    assert.matches("\npressure +sm_80 +%d+", report)
    assert.matches("\nwarning: kernel 'pressure' spills", report)

    -- without the limit there is room: no spill, no warning
    warnings = H.warnings(function() m = compiler.compile(H.data("pressure.ll"), opts { arch = "sm_80" }) end)
    assert.same({}, warnings)
    assert.equal(0, m:resources().pressure.spill_stores)
    assert.is_true(m:resources().pressure.registers > 32)
    assert.same({}, m:warnings())
  end)

  it("reports shared memory and several kernels", function()
    local ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n" ..
      ".visible .entry uses_smem() { .shared .align 16 .b8 buf[4096]; .reg .b32 %r<2>;\n" ..
      "  mov.u32 %r1, buf; st.shared.u32 [%r1], %r1; ret; }\n" ..
      ".visible .entry empty() { ret; }\n"
    local m = compiler.compile(ptx, opts(), { name = "pair" })
    local r = m:resources()
    assert.equal(2, #r)
    assert.equal(4096, r.uses_smem.smem)
    assert.equal(0, r.empty.smem)
    assert.equal("pair", m.name)
    local kernels = m:kernels()
    table.sort(kernels)
    assert.same({ "empty", "uses_smem" }, kernels)
  end)

  it("calls a source function only on a cache miss", function()
    local dir = H.tmpdir()
    finally(function() H.rm(dir) end)
    local o = opts { cache = true, cache_dir = dir }
    local calls = 0
    local function emit() calls = calls + 1; return H.data("saxpy.ll") end
    local key_text = "func @saxpy (stands for the printed IR) " .. dir
    local m1 = compiler.compile(emit, o, { key_text = key_text, meta = "signature: f32*, f32*, i32" })
    assert.equal(1, calls)
    local m2 = compiler.compile(emit, o, { key_text = key_text })
    assert.equal("signature: f32*, f32*, i32", m2:meta())
    assert.equal(1, calls)
    assert.equal("memory", m2.origin)
    assert.equal(m1:cubin(), m2:cubin())
    assert.equal(m1:cache_key(), m2:cache_key())
    assert.equal(compiler.cache_key(key_text, o), m2:cache_key())
    -- the NVVM IR of a cached module comes from the source function again
    assert.equal(H.data("saxpy.ll"), m2:ll())
    assert.equal(2, calls)
    -- a different salt is a different key
    local m3 = compiler.compile(emit, o, { key_text = key_text, salt = "emitter v2" })
    assert.equal("compiled", m3.origin)
    assert.are_not.equal(m1:cache_key(), m3:cache_key())
    assert.error_matches(function() compiler.compile(emit, o) end, "give info.key_text")
    assert.error_matches(function() compiler.compile(function() return 7 end, o, { key_text = "x" .. dir }) end,
      "the source function returned number, not a string")
  end)

  it("names the Lua line through the caller's locate function", function()
    local ptx_failure = H.data("bad.ptx")
    local seen
    local ok, e = pcall(compiler.compile, ptx_failure, opts(), {
      name = "bad_kernel",
      locate = function(d) seen = d; return "kernels/mine.lua:" .. (d.line + 100) end,
    })
    assert.is_false(ok)
    assert.equal(13, seen.line)
    assert.equal("ptx", seen.input)
    assert.truthy(e:find("bad_kernel: ptxas could not compile the PTX for sm_90a", 1, true))
    assert.truthy(e:find("at line 13 of the PTX, from kernels/mine.lua:113:", 1, true))
    assert.equal("kernels/mine.lua:113", compiler.last_diagnostic().source)
  end)

  it("finds the Lua line of a ptxas error through .loc", function()
    local ok, e = pcall(compiler.compile, H.data("bad_asm.ll"), opts { lineinfo = true })
    assert.is_false(ok)
    assert.truthy(e:find("from /work/kernels/scale.lua:8:", 1, true))
    local d = compiler.last_diagnostic()
    assert.equal("ptxas", d.phase)
    assert.equal("/work/kernels/scale.lua:8", d.source)
    assert.truthy(d.excerpt:find("frobnicate", 1, true))
  end)

  it("links user libraries", function()
    local use = H.data("use_square.ptx")
    local ok, e = pcall(compiler.compile, use, opts())
    assert.is_false(ok)
    assert.truthy(e:find("square", 1, true))
    assert.equal("nvJitLink", compiler.last_diagnostic().phase)
    local m = compiler.compile(use, opts { link = { "tests/data/nvvm/lib_square.ptx" } })
    assert.same({ "squares" }, m:kernels())
    m = compiler.compile(use, opts { link = { { data = H.data("lib_square.ptx"), kind = "ptx", name = "sq" } } })
    assert.same({ "squares" }, m:kernels())
    m = compiler.compile(H.data("use_cube.ll"), opts { link = { "tests/data/nvvm/lib_cube.bc" } })
    assert.same({ "cubes" }, m:kernels())
    assert.falsy(m:ptx():find("unused_in_lib", 1, true))
  end)

  it("rejects bad arguments", function()
    assert.error_matches(function() compiler.compile(nil) end, "expected NVVM IR or PTX text")
    assert.error_matches(function() compiler.compile("hello", opts()) end,
      "cannot tell whether the text is NVVM IR or PTX")
    assert.error_matches(function() compiler.compile("x", opts(), { kind = "sass" }) end,
      'kind must be "nvvm" or "ptx"')
    assert.error_matches(function() compiler.compile("x", opts(), 5) end, "info must be a table")
  end)
end)

describe("compiler.sass", function()
  it("disassembles where a disassembler exists, else says what it looked for", function()
    local m = compiler.compile(H.data("saxpy.ll"), opts())
    local ok, s = pcall(m.sass, m)
    if ok then
      assert.truthy(s:find("saxpy", 1, true))
      assert.equal(s, compiler.sass(m:cubin()))
    else
      assert.truthy(s:find("SASS needs nvdisasm or cuobjdump (CUDA toolkit), and neither was found; looked in:", 1,
        true))
      assert.truthy(s:find("/usr/local/cuda/bin", 1, true))
      assert.equal("sass", compiler.last_diagnostic().phase)
    end
    assert.error_matches(function() compiler.sass(3) end, "expected a cubin")
  end)
end)

describe("compiler.archs and versions", function()
  it("lists the targets with their PTX ISA versions", function()
    local names = {}
    for _, a in ipairs(compiler.archs()) do
      names[a.name] = a
      assert.matches("^%d+%.%d$", a.ptx_isa)
      assert.equal(a.name:sub(-1) == "a", a.arch_specific)
    end
    for _, n in ipairs { "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a" } do
      assert.truthy(names[n], n)
    end
    assert.equal("8.0", names.sm_90a.ptx_isa)
    assert.equal(90, names.sm_90a.cc)
  end)

  it("names the tools' versions", function()
    assert.matches("^libnvvm %d+%.%d+ %(NVVM IR %d+%.%d+, debug %d+%.%d+%); nvJitLink %d+%.%d+; driver ",
      compiler.versions())
  end)

  it("detects the GPU or says why not, and defaults to it or to sm_90a", function()
    local arch, why = compiler.detect_arch()
    if not arch then assert.matches("%S", why) end
    if not os.getenv("CUTELUA_ARCH") then assert.equal(arch or "sm_90a", compiler.options():get("arch")) end
  end)
end)
