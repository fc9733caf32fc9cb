-- IntTuple kernel arguments (seed 003): a nested Lua array of numbers
-- (static, baked in) and integer scalars (run-time, one parameter each),
-- used in the kernel as a shape or stride. Launched on the simulator against
-- the host's layout algebra; specialisation by profile; errors naming the
-- parameter; the pre-trace cache; cute.export of such a kernel (header,
-- metadata, geometry in C) and, with a GPU, the exported kernel loaded back.
local cute = require "cute"
local H = require "tests.spec.compiler.helper"
local TH = require "tests.spec.trace.helper"

-- out[i] = src[L(i)] for i < size(shape), L = make_layout(shape, stride)
local gather = cute.kernel("tuple_gather", function(out, src, shape, stride)
  local lay = cute.make_layout(shape, stride)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(shape)), function() out[i] = src[lay(i)] end)
end)

local POISON = -12345

local function host_gather(src_h, shape, stride, n_out)
  local lay = cute.make_layout(shape, stride)
  local want = {}
  for i = 0, n_out - 1 do want[i] = i < cute.size(lay) and src_h[lay(i)] or POISON end
  return want
end

-- static numbers of a tuple of numbers and scalars
local function values(t)
  if type(t) == "table" and getmetatable(t) ~= cute.dtype.Scalar then
    local out = {}
    for j = 1, #t do out[j] = values(t[j]) end
    return out
  end
  return type(t) == "number" and t or t.value
end

describe("IntTuple kernel arguments", function()
  local sim = TH.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("are shapes and strides inside the kernel: static leaves baked in, run-time ones passed", function()
    math.randomseed(os.time())
    for _ = 1, 4 do
      local m, n = math.random(1, 5), math.random(1, 4)
      local s1 = m * 4 + math.random(0, 3)
      local shape = { { cute.i32(m), 4 }, cute.i32(n) }
      local stride = { { 1, cute.i32(s1) }, cute.i32(s1 * 4 + math.random(0, 5)) }
      local vs = values(stride)
      local src_n = vs[1][2] * 3 + vs[2] * (n - 1) + m + 1
      local src = cute.tensor(cute.i32, src_n):uniform(-1000000, 1000000, math.random(1, 2 ^ 30))
      local src_h = src:to_host()
      local out = cute.tensor(cute.i32, 128):fill(POISON)
      gather { grid = 2, block = 64 }(out, src, shape, stride)
      local got = out:to_host()
      local want = host_gather(src_h, values(shape), vs, 128)
      for i = 0, 127 do
        assert(got[i] == want[i], string.format("element %d: %s, want %s (shape %s)", i, tostring(got[i]),
          tostring(want[i]), tostring(cute.make_layout(values(shape), vs))))
      end
    end
  end)

  it("specialise by profile: new values of run-time leaves reuse it, a new static value or dtype does not", function()
    local k = cute.kernel("tuple_prof", function(out, shape)
      local i = cute.thread_idx().x
      local n = cute.size(shape)
      if type(n) ~= "number" then n = n:to(cute.i32) end -- (an i64 leaf makes it i64)
      cute.if_(i:lt(n), function() out[i] = n end)
    end)
    local out = cute.tensor(cute.i32, 64):fill(POISON)
    k { grid = 1, block = 64 }(out, { cute.i32(3), 4 })
    assert.equal(1, k.nspecs)
    k { grid = 1, block = 64 }(out, { cute.i32(5), 4 })
    assert.equal(1, k.nspecs)
    local h = out:to_host()
    for i = 0, 63 do assert.equal(i < 20 and 20 or (i < 12 and 12 or POISON), h[i]) end
    k { grid = 1, block = 64 }(out, { cute.i32(5), 2 })
    assert.equal(2, k.nspecs)
    k { grid = 1, block = 64 }(out, { cute.i64(5), 2 })
    assert.equal(3, k.nspecs)
    k { grid = 1, block = 64 }(out, { { cute.i32(5) }, 2 })
    assert.equal(4, k.nspecs)
    h = out:to_host()
    for i = 0, 63 do assert.equal(i < 10 and 10 or (i < 20 and 20 or POISON), h[i]) end
    -- the parameters: one per run-time leaf, of its dtype; static leaves are constants
    local ir = k:compile(cute.fake_tensor(cute.i32, 64), { cute.i64(7), { 3, cute.i32(2) } }):ir()
    assert.matches("^kernel @tuple_prof%(%%1: ptr<i32, global, %d+>, %%2: i32, %%3: i64, %%4: i32%)", ir)
    local ir2 = k:compile(cute.fake_tensor(cute.i32, 64), { 7, { 3, 2 } }):ir()
    assert.matches("^kernel @tuple_prof%(%%1: ptr<i32, global, %d+>, %%2: i32%)", ir2) -- (2: out's extent)
    assert.matches("const 42", ir2)
  end)

  it("refuse what is not an IntTuple, naming the parameter and the caller's line", function()
    local out = cute.tensor(cute.i32, 4)
    local function msg(t)
      local ok, e = pcall(gather { grid = 1, block = 4 }, out, out, t, { 1 })
      assert.is_false(ok)
      return e
    end
    local e = msg({ cute.f32(2), 3 })
    assert.matches("argument 'shape' %(#3%): leaf 1 of the IntTuple is a f32%(2%); run%-time leaves are integers", e)
    assert.matches("tuple_args_spec.lua:%d+", e)
    assert.matches("argument 'shape' %(#3%): leaf 2 of the IntTuple is a string", msg({ 2, "x" }))
    assert.matches("argument 'shape' %(#3%): leaf 1 of the IntTuple is 2.5, not an integer", msg({ 2.5 }))
    assert.matches("argument 'shape' %(#3%): an empty IntTuple", msg({ 2, {} }))
    assert.matches("argument 'shape' %(#3%): an IntTuple is an array; it has the key n", msg({ 2, n = 3 }))
  end)

  it("are served by the cache keyed before tracing, with their leaves' parameters", function()
    local dir = H.tmpdir()
    local function fresh()
      return cute.kernel("tuple_tk", function(out, shape)
        local i = cute.thread_idx().x
        cute.if_(i:lt(cute.size(shape)), function() out[i] = i end)
      end, { arch = "sm_80", cache_dir = dir .. "/cache", trace_key = "tuple v1" })
    end
    local a = fresh():_specialise(2, cute.fake_tensor(cute.i32, 64), { cute.i32(2), { 4, cute.i64(3) } })
    local b = fresh():_specialise(2, cute.fake_tensor(cute.i32, 64), { cute.i32(9), { 4, cute.i64(1) } })
    assert.is_false(a.pretraced)
    assert.is_true(b.pretraced)
    assert.equal(#a.params, #b.params)
    for j, p in ipairs(a.params) do
      assert.same({ p.ctype, p.what, p.leaf, p.arg }, { b.params[j].ctype, b.params[j].what, b.params[j].leaf,
        b.params[j].arg })
    end
    assert.equal("tuple", b.params[3].what) -- (1 and 2: out's pointer and extent)
    assert.equal(1, b.params[3].leaf)
    assert.equal("int64_t", b.params[4].ctype)
    assert.equal(3, b.params[4].leaf)
    H.rm(dir)
  end)
end)

describe("cute.export of a kernel taking an IntTuple", function()
  local function export(dir, shared, arch)
    return cute.export { name = "tup", prefix = "tup", dir = dir, arch = { arch or "sm_80" }, shared = shared,
      kernels = { { name = "gather", kernel = gather, doc = "out[i] = src[(shape:stride)(i)]",
        args = { cute.fake_tensor(cute.i32, 128), cute.fake_tensor(cute.i32, 4096), { { cute.i32(2), 4 }, cute.i32(3) },
          { { 1, cute.i32(8) }, cute.i64(40) } },
        grid = function(_, _, shape) return cute.ceil_div(cute.size(shape), 64) end, block = 64 } } }
  end

  it("takes the run-time leaves as C parameters, documents the profile, computes the geometry from them", function()
    local dir = H.tmpdir()
    local p = export(dir)
    local h = H.read(p.header)
    assert.matches("int tup_gather%(tup_module %*module, uint64_t out, int32_t out_shape_0, uint64_t src, int32_t "
      .. "src_shape_0, int32_t shape_0, int32_t shape_2, int32_t stride_1, int64_t stride_2, struct CUstream_st "
      .. "%*stream%);", h)
    assert.matches("shape: an IntTuple of profile %(%(%?i32,4%),%?i32%)", h)
    assert.matches("run%-time leaves shape_0 %(int32_t%), shape_2 %(int32_t%)", h)
    local src = H.read(p.source)
    -- size(shape) = shape_0 * 4 * shape_2, in C
    assert.matches("gx = %(%(%(%(%(int64_t%)shape_0 %* %(int64_t%)4%) %* %(int64_t%)shape_2%) %+ %(int64_t%)63%) / "
      .. "%(int64_t%)64%)", src)
    assert.matches("tuple gather 3 shape %(%(%?i32,4%),%?i32%)", src)
    assert.matches("tuple gather 4 stride %(%(1,%?i32%),%?i64%)", src)
    assert.matches("args gather 4", src)
    -- the descriptor rows: kind 4, the leaf among all the tuple's leaves
    assert.matches('{"shape_2", "int32_t", 4, 4, 2, 2}', src, 1, true)
    assert.matches('{"stride_2", "int64_t", 8, 4, 3, 2}', src, 1, true)
    -- the header compiles as strict C99 and as C++
    local cc = os.getenv("CC") or "cc"
    H.write(dir .. "/use.c",
      '#include "tup.h"\nint main(void) { return tup_gather(NULL, 0, 128, 0, 4096, 2, 3, 8, 40, NULL); }\n')
    local out, rc = H.sh(cc .. " -std=c99 -Wall -Wextra -pedantic -Werror -c -I" .. H.quote(dir) .. " "
      .. H.quote(dir .. "/use.c") .. " -o " .. H.quote(dir .. "/use.o"))
    assert.equal(0, rc, out)
    H.rm(dir)
  end)

  it("takes a call's tuples by the profile in the metadata, and names the parameter of another profile", function()
    local dir = H.tmpdir()
    local p = export(dir)
    local en = cute.aot.read_object(p.object).entries.gather
    assert.same({ name = "shape", profile = "((?i32,4),?i32)" }, en.tuples[3])
    assert.same({ name = "stride", profile = "((1,?i32),?i64)" }, en.tuples[4])
    local old = cute.current_device()
    cute.set_device("sim")
    local out, src = cute.tensor(cute.i32, 128), cute.tensor(cute.i32, 4096)
    local shape, stride = { { cute.i32(3), 4 }, cute.i32(5) }, { { 1, cute.i32(13) }, cute.i64(57) }
    local vals = require("cute.aot")._param_values("gather", en, { out, src, shape, stride })
    local by = {}
    for j, q in ipairs(en.params) do by[q.name] = tonumber(vals[j]) end
    assert.same({ 128, 4096, 3, 5, 13, 57 }, { by.out_shape_0, by.src_shape_0, by.shape_0, by.shape_2, by.stride_1,
      by.stride_2 })
    local function msg(sh, st)
      local ok, e = pcall(require("cute.aot")._param_values, "gather", en, { out, src, sh, st })
      assert.is_false(ok)
      return e
    end
    assert.matches("gather: argument 'shape' %(#3%) is an IntTuple of profile %(%(%?i32,2%),%?i32%); the exported "
      .. "kernel takes %(%(%?i32,4%),%?i32%)", msg({ { cute.i32(3), 2 }, cute.i32(5) }, stride))
    assert.matches("argument 'stride' %(#4%) is an IntTuple of profile %(%(1,%?i32%),%?i32%)",
      msg(shape, { { 1, cute.i32(13) }, cute.i32(57) }))
    assert.matches("argument 'shape' %(#3%) must be an IntTuple of profile", msg(7, stride))
    cute.set_device(old)
    H.rm(dir)
  end)

  it("loaded back, gives the Lua launch's results, and refuses a tuple of another profile #gpu", function()
    local dir = H.tmpdir()
    local p = export(dir, true, cute.device_info().arch)
    local m = cute.aot.load(p.shared)
    local src = cute.tensor(cute.i32, 4096):uniform(-1000000, 1000000, math.random(1, 2 ^ 30))
    local shape, stride = { { cute.i32(3), 4 }, cute.i32(5) }, { { 1, cute.i32(13) }, cute.i64(57) }
    local o1, o2 = cute.tensor(cute.i32, 128):fill(POISON), cute.tensor(cute.i32, 128):fill(POISON)
    m.gather(o1, src, shape, stride)
    gather { grid = 2, block = 64 }(o2, src, shape, stride)
    local h1, h2, hs = o1:to_host(), o2:to_host(), src:to_host()
    local want = host_gather(hs, values(shape), values(stride), 128)
    for i = 0, 127 do
      assert(h1[i] == want[i] and h2[i] == want[i], string.format("%d: %s %s %s", i, h1[i], h2[i], want[i]))
    end
    local ok, e = pcall(m.gather, o1, src, { { cute.i32(3), 2 }, cute.i32(5) }, stride)
    assert.is_false(ok)
    assert.matches("gather: argument 'shape' %(#3%) is an IntTuple of profile %(%(%?i32,2%),%?i32%); the exported "
      .. "kernel takes %(%(%?i32,4%),%?i32%)", e)
    H.rm(dir)
  end)
end)
