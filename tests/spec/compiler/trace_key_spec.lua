-- The compile cache keyed before tracing (a kernel's trace_key): hits in this
-- process and in new ones without tracing, what makes a miss, checked kernels,
-- the IR on demand after a hit, unusable metadata, the option's checks,
-- cute.gemm's kernel, and cutelua's build id (docs/compiler.md).
local cute = require "cute"
local compiler = require "cute.compiler"
local K = require "cute.kernel"
local H = require "tests.spec.compiler.helper"

local function traces() return K.stats().traces end

-- A user kernel, as a file of its own (its contents are part of the key).
local KERNEL_FILE = [[
local cute = require "cute"
return function(opts)
  return cute.kernel("scale_tk", function(x, y, a)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(cute.size(y)), function() y[i] = x[i] * a end)
  end, opts)
end
]]

-- A child that compiles it through the cache in `dir` and prints what happened.
local CHILD = [[
local cute = require "cute"
local compiler = require "cute.compiler"
local K = require "cute.kernel"
local dir, want_ir = arg[1], arg[2] == "ir"
local warnings = {}
compiler.set_warning_handler(function(w) warnings[#warnings + 1] = w end)
local make = dofile(dir .. "/kern.lua")
local k = make { arch = "sm_80", cache_dir = dir .. "/cache", trace_key = "scale v1" }
local x, y = cute.fake_tensor(cute.f32, 1024), cute.fake_tensor(cute.f32, 1024)
local spec = k:_specialise(3, x, y, cute.f32(2))
print("origin=" .. spec.compiled.origin)
print("pretraced=" .. tostring(spec.pretraced))
print("traces=" .. K.stats().traces)
print("trace_ms=" .. spec.trace_ms)
print("cubin=" .. compiler.sha256(spec.compiled:cubin()))
print("params=" .. #spec.params .. " dyn_smem=" .. spec.dyn_smem)
if want_ir then
  print("ir=" .. compiler.sha256(spec.compiled:ir()))
  print("ll=" .. compiler.sha256(spec.compiled:ll()))
  print("traces_after=" .. K.stats().traces)
end
for _, w in ipairs(warnings) do print("warning=" .. w) end
]]

local function field(out, name) return out:match(name .. "=([^\n]*)") end

-- The kernel body the in-process tests use (defined in this file).
local function body(x, y, a)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(y)), function() y[i] = x[i] * a end)
end

local function fresh(opts) return cute.kernel("scale_tk_here", body, opts) end

local function args(align)
  local o = align and { align = align } or nil
  return cute.fake_tensor(cute.f32, 1024, nil, o), cute.fake_tensor(cute.f32, 1024, nil, o), cute.f32(2)
end

local function spec_of(k, ...) return k:_specialise(select("#", ...), ...) end

local function with(t, changes)
  local o = {}
  for key, v in pairs(t) do o[key] = v end
  for key, v in pairs(changes) do o[key] = v end
  return o
end

describe("the cache keyed before tracing (trace_key)", function()
  local dir
  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.rm(dir) end)

  it("serves a new process without tracing: the same cubin, the IR on demand", function()
    H.write(dir .. "/kern.lua", KERNEL_FILE)
    H.write(dir .. "/child.lua", CHILD)
    local function child(extra)
      return H.sh("env -u CUTELUA_CHECKED -u CUTELUA_CACHE -u CUTELUA_ARCH " .. H.quote(H.cutelua()) .. " "
        .. H.quote(dir .. "/child.lua") .. " " .. H.quote(dir) .. " " .. (extra or ""))
    end
    local first, rc = child("ir")
    assert.equal(0, rc, first)
    assert.equal("compiled", field(first, "origin"))
    assert.equal("false", field(first, "pretraced"))
    assert.equal("1", field(first, "traces"))
    assert.equal("1", field(first, "traces_after")) -- its IR is the trace's
    local second = child()
    assert.equal("disk", field(second, "origin"), second)
    assert.equal("true", field(second, "pretraced"))
    assert.equal("0", field(second, "traces"))
    assert.equal("0", field(second, "trace_ms"))
    assert.equal(field(first, "cubin"), field(second, "cubin"))
    assert.equal(field(first, "params"), field(second, "params"))
    assert.is_nil(field(second, "warning"))
    -- a hit that is asked for its IR and NVVM IR traces then, once, and gives the traced compile's
    local third = child("ir")
    assert.equal("true", field(third, "pretraced"))
    assert.equal("0", field(third, "traces"))
    assert.equal(field(first, "ir"), field(third, "ir"))
    assert.equal(field(first, "ll"), field(third, "ll"))
    assert.equal("1", field(third, "traces_after"))

    -- a change to the kernel's source file is a miss (a comment is enough), then a hit again
    H.write(dir .. "/kern.lua", KERNEL_FILE .. "-- changed\n")
    local changed = child()
    assert.equal("compiled", field(changed, "origin"))
    assert.equal("false", field(changed, "pretraced"))
    assert.equal("1", field(changed, "traces"))
    assert.equal("true", field(child(), "pretraced"))
  end)

  it("misses on another trace_key, signature or option, and hits on the same", function()
    local base = { arch = "sm_80", cache_dir = dir, trace_key = "scale " .. dir, checked = false, cache = true }
    local s0 = spec_of(fresh(base), args())
    assert.is_false(s0.pretraced)
    assert.equal("compiled", s0.compiled.origin)
    local n = traces()
    -- a new kernel object with the same key: from memory, then (memory cleared) from disk
    local s1 = spec_of(fresh(base), args())
    assert.is_true(s1.pretraced)
    assert.equal("memory", s1.compiled.origin)
    assert.equal(0, s1.trace_ms)
    compiler.cache_clear { memory = true }
    local s2 = spec_of(fresh(base), args())
    assert.is_true(s2.pretraced)
    assert.equal("disk", s2.compiled.origin)
    assert.equal(n, traces())
    assert.equal(s0.compiled:cubin(), s2.compiled:cubin())
    assert.equal(s0.compiled:cache_key(), s2.compiled:cache_key())

    local variants = {
      { "trace_key", with(base, { trace_key = "other " .. dir }) },
      { "arch", with(base, { arch = "sm_90a" }) },
      { "max_registers", with(base, { max_registers = 32 }) },
      { "lineinfo", with(base, { lineinfo = true }) },
      { "max_threads", with(base, { max_threads = 128 }) },
      { "assertions", with(base, { assertions = true }) },
    }
    local keys = { [s0.compiled:cache_key()] = "base" }
    for _, v in ipairs(variants) do
      local what, opts = v[1], v[2]
      local s = spec_of(fresh(opts), args())
      assert.is_false(s.pretraced, what)
      assert.equal("compiled", s.compiled.origin, what)
      assert.is_nil(keys[s.compiled:cache_key()], what)
      keys[s.compiled:cache_key()] = what
      assert.is_true(spec_of(fresh(opts), args()).pretraced, what) -- and stored under its own key
    end
    -- the signature: another alignment of the tensors, another scalar dtype
    local s = spec_of(fresh(base), args(4))
    assert.is_false(s.pretraced)
    assert.is_true(spec_of(fresh(base), args(4)).pretraced)
    local x, y = args()
    s = spec_of(fresh(base), x, y, cute.f16(2))
    assert.is_false(s.pretraced)
    -- options that do not change what is compiled are not in the key
    s = spec_of(fresh(with(base, { keep = "" })), args())
    assert.is_true(s.pretraced)
  end)

  it("is not used by checked kernels, which always trace", function()
    local base = { arch = "sm_80", cache_dir = dir, trace_key = "checked " .. dir, cache = true }
    for _ = 1, 2 do
      local n = traces()
      local s = spec_of(fresh(with(base, { checked = true })), args())
      assert.is_false(s.pretraced)
      assert.equal(n + 1, traces())
      assert.truthy(s.check_sites)
    end
    local old = cute.set_checked(true)
    local ok, e = pcall(function()
      for _ = 1, 2 do
        local n = traces()
        local s = spec_of(fresh(base), args())
        assert.is_false(s.pretraced)
        assert.equal(n + 1, traces())
      end
    end)
    cute.set_checked(old)
    assert(ok, e)
    -- unchecked, the same kernel uses it
    spec_of(fresh(with(base, { checked = false })), args())
    assert.is_true(spec_of(fresh(with(base, { checked = false })), args()).pretraced)
  end)

  it("is not used with a function as a compile-time argument", function()
    local base = { arch = "sm_80", cache_dir = dir, trace_key = "fn " .. dir, checked = false, cache = true }
    local function body_f(x, f) x[0] = f() end
    local one = function() return 1 end
    for _ = 1, 2 do
      local n = traces()
      local s = spec_of(cute.kernel("fn_tk", body_f, base), cute.fake_tensor(cute.f32, 16), cute.constexpr(one))
      assert.is_false(s.pretraced)
      assert.equal(n + 1, traces())
    end
    -- (an option holding a function: options are checked, no option takes one)
    local ok, e = pcall(fresh, with(base, { helper = one }))
    assert.is_false(ok)
    assert.matches("unknown option 'helper'", e)
  end)

  it("gives the traced compile's IR and NVVM IR after a hit", function()
    local base = { arch = "sm_80", cache_dir = dir, trace_key = "ir " .. dir, checked = false, cache = true }
    local s0 = spec_of(fresh(base), args())
    local ir0, ll0 = s0.compiled:ir(), s0.compiled:ll()
    compiler.cache_clear { memory = true }
    local k = fresh(base)
    local s1 = spec_of(k, args())
    assert.is_true(s1.pretraced)
    assert.is_nil(s1.module)
    local n = traces()
    assert.equal(ir0, s1.compiled:ir())
    assert.equal(n + 1, traces())
    assert.equal(ir0, k:ir(args()))
    assert.equal(ll0, s1.compiled:ll())
    assert.equal(n + 1, traces()) -- traced once, for both
    -- a hit that dumps its IR (keep "ir") traces for it
    local s2 = spec_of(fresh(with(base, { keep = "ir", dump_dir = dir .. "/dumps" })), args())
    assert.equal("memory", s2.compiled.origin)
    assert.equal(ir0, H.read(dir .. "/dumps/scale_tk_here.sm_80.ir"))
    assert.equal(n + 2, traces())
  end)

  it("traces again, with a warning, when the entry's launch metadata is absent or unusable", function()
    local base = { arch = "sm_80", cache_dir = dir, trace_key = "meta " .. dir, checked = false, cache = true }
    local good = spec_of(fresh(base), args())
    local material, salt = fresh(base):_pretrace_material(args())
    assert.truthy(material, salt)
    local o = compiler.options { arch = "sm_80", cache_dir = dir, cache = true }
    local saxpy = H.data("saxpy.ll")
    local bad = {
      absent = false,
      garbage = "hello",
      wrong_kind = "cutelua-kernel-meta 1\ndyn_smem 0\nstatic_smem 0\nparam float 1 value f32 -\n",
      missing_param = "cutelua-kernel-meta 1\ndyn_smem 0\nstatic_smem 0\nparam uint64_t 1 ptr - -\n",
      bad_line = "cutelua-kernel-meta 1\ndyn_smem x\n",
    }
    for what, meta in pairs(bad) do
      -- another module stored under the kernel's key, with that metadata
      compiler.compile(saxpy, o, { key_text = material, salt = salt, meta = meta or nil, refresh = true })
      compiler.cache_clear { memory = true }
      local s
      local w = H.warnings(function() s = spec_of(fresh(base), args()) end)
      assert.is_false(s.pretraced, what)
      assert.equal(1, #w, what)
      assert.matches("kernel scale_tk_here: the cache entry %x+ %(trace_key .-%) has unusable launch metadata", w[1],
        nil, what)
      assert.same({ "scale_tk_here" }, s.compiled:kernels(), what)
      assert.equal(good.compiled:cubin(), s.compiled:cubin(), what)
      -- the entry was written again, whole: a new process (memory cleared) hits it quietly
      compiler.cache_clear { memory = true }
      w = H.warnings(function() s = spec_of(fresh(base), args()) end)
      assert.is_true(s.pretraced, what)
      assert.same({}, w, what)
    end
  end)

  it("refuses a trace_key that is not a string, naming the option", function()
    for _, v in ipairs { 42, {}, true } do
      local ok, e = pcall(cute.kernel, "bad_tk", body, { trace_key = v })
      assert.is_false(ok)
      assert.matches("cute.kernel bad_tk: option trace_key must be a string", e)
      assert.matches("got a " .. type(v), e)
    end
    local ok, e = pcall(function() return fresh({}):with { trace_key = 7 } end)
    assert.is_false(ok)
    assert.matches("trace_key must be a string", e)
    -- false: none (what an AOT export asks for)
    assert.is_false(spec_of(fresh { arch = "sm_80", cache_dir = dir, trace_key = false, checked = false, cache = true },
      args()).pretraced)
  end)

  it("serves cute.gemm's kernel to a second process without tracing", function()
    local code = [[
      local cute = require "cute"
      local G = require "cute.lib.gemm"
      local K = require "cute.kernel"
      local A = cute.fake_tensor(cute.bf16, { 128, 64 }, "row")
      local B = cute.fake_tensor(cute.bf16, { 64, 128 }, "row")
      local plan = G.plan(A, B, nil, { kernel = "sm80" }) -- (on an H100 cute.gemm would pick gemm_sm90)
      local spec = plan.kernel:_specialise(5, unpack(plan.args))
      print("origin=" .. spec.compiled.origin)
      print("pretraced=" .. tostring(spec.pretraced))
      print("traces=" .. K.stats().traces)
      print("kernel=" .. plan.kernel.name)
      print("cubin=" .. require("cute.compiler").sha256(spec.compiled:cubin()))
    ]]
    local env = { CUTELUA_ARCH = "sm_80", CUTELUA_CACHE_DIR = dir, CUTELUA_CHECKED = "0" }
    local first, rc = H.run(code, env, dir)
    assert.equal(0, rc, first)
    assert.equal("compiled", field(first, "origin"))
    assert.equal("1", field(first, "traces"))
    assert.matches("^gemm_bf16_", field(first, "kernel"))
    local second = H.run(code, env, dir)
    assert.equal("disk", field(second, "origin"), second)
    assert.equal("true", field(second, "pretraced"))
    assert.equal("0", field(second, "traces"))
    assert.equal(field(first, "cubin"), field(second, "cubin"))
  end)
end)

describe("cutelua's build id", function()
  local dir
  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.rm(dir) end)

  it("is that of the files under CUTELUA_SOURCE_DIR in development mode", function()
    local id = compiler.build_id()
    assert.matches("^%x+$", id)
    assert.equal(16, #id)
    -- a copy of the checkout's bundled files (lua/, cli/repl.lua, the .cdef files)
    local out, rc = H.sh("cp -r lua " .. H.quote(dir) .. " && cp --parents cli/repl.lua $(find src -name '*.cdef') "
      .. H.quote(dir))
    assert.equal(0, rc, out)
    local code = [[
      local compiler = require "cute.compiler"
      print("id=" .. tostring((compiler.build_id())))
      print("why=" .. tostring(select(2, compiler.build_id())))
    ]]
    out = H.run(code, { CUTELUA_SOURCE_DIR = dir }, dir)
    assert.equal(id, field(out, "id"), out) -- the built files are the checkout's
    H.write(dir .. "/lua/cute/lib/gemm.lua", H.read("lua/cute/lib/gemm.lua") .. "\n")
    out = H.run(code, { CUTELUA_SOURCE_DIR = dir }, dir)
    assert.matches("^%x+$", field(out, "id"))
    assert.are_not.equal(id, field(out, "id"))
    -- a bundled file missing there: no id, a reason naming the file; kernels with a trace_key are traced
    os.remove(dir .. "/lua/cute/lib/transpose.lua")
    out = H.run(code, { CUTELUA_SOURCE_DIR = dir }, dir)
    assert.equal("nil", field(out, "id"))
    assert.matches("cannot read .*lua/cute/lib/transpose%.lua", field(out, "why"))
    out = H.run([[
      local cute = require "cute"
      local K = require "cute.kernel"
      local k = cute.kernel("dev_tk", function(x) x[0] = 1 end, { arch = "sm_80", trace_key = "dev" })
      local spec = k:_specialise(1, cute.fake_tensor(cute.f32, 16))
      print("pretraced=" .. tostring(spec.pretraced) .. " traces=" .. K.stats().traces)
    ]], { CUTELUA_SOURCE_DIR = dir, CUTELUA_CACHE_DIR = dir .. "/cache", CUTELUA_CHECKED = "0" }, dir)
    assert.matches("pretraced=false traces=1", out)
    assert.matches("warning: kernel dev_tk: trace_key not used, the kernel is traced first: cannot read", out)
  end)
end)

describe("compiler.compile's lazy IR and metadata", function()
  local dir
  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.rm(dir) end)

  it("calls info.meta after the source on a miss, and info.ir only when asked", function()
    local o = compiler.options { arch = "sm_80", cache_dir = dir, keep = "", cache = true }
    local order = {}
    local info = {
      key_text = "lazy " .. dir, kind = "nvvm",
      meta = function() order[#order + 1] = "meta"; return "M" end,
      ir = function() order[#order + 1] = "ir"; return "the ir" end,
    }
    local function source() order[#order + 1] = "source"; return H.data("saxpy.ll") end
    local m = compiler.compile(source, o, info)
    assert.same({ "source", "meta" }, order)
    assert.equal("M", m:meta())
    assert.equal("the ir", m:ir())
    assert.same({ "source", "meta", "ir" }, order)
    compiler.cache_clear { memory = true }
    order = {}
    m = compiler.compile(source, o, info)
    assert.equal("disk", m.origin)
    assert.same({}, order)
    assert.equal("M", m:meta())
    assert.equal("the ir", m:ir())
    assert.same({ "ir" }, order)
    -- refresh: compiled and stored again over the entry
    order = {}
    info.meta = "N"
    m = compiler.compile(source, o, info)
    assert.equal("memory", m.origin)
    info.refresh = true
    m = compiler.compile(source, o, info)
    assert.equal("compiled", m.origin)
    assert.same({ "source" }, order)
    compiler.cache_clear { memory = true }
    info.refresh = nil
    assert.equal("N", compiler.compile(source, o, info):meta())
    local ok, e = pcall(compiler.compile, source, o, { key_text = "x" .. dir, ir = 5 })
    assert.is_false(ok)
    assert.matches("compiler.compile: info.ir must be the IR text or a function returning it, got number", e, 1, true)
  end)
end)
