-- Every kernel of cute.lib traces and compiles without a GPU, for sm_90a and
-- sm_80, at shapes that take both the exact and the predicated paths. (Their
-- results are checked on the GPU by the benchmark suites in quick mode.)
local cute = require "cute"

local function compiles(k, ...)
  for _, arch in ipairs { "sm_90a", "sm_80" } do
    local h = k:with({ arch = arch }):compile(...)
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end
end

describe("cute.lib", function()
  it("fill: iota, uniform and normal for every dtype but bool", function()
    local fill = require "cute.lib.fill"
    local dtypes = require("cute.dtype").all()
    assert.is_true(#dtypes >= 16)
    for _, dt in ipairs(dtypes) do
      if dt.name ~= "bool" then
        for _, mode in ipairs { "iota", "uniform", "normal" } do
          local arch_ok = not (dt.name == "e4m3" or dt.name == "e5m2")
          local t = cute.fake_tensor(dt, { 100, 37 }, "row")
          local h = fill.kernel:compile(t, cute.constexpr(mode), cute.u64(1), cute.f64(0), cute.f64(1))
          assert.equal("\127ELF", h:cubin():sub(1, 4))
          if arch_ok then
            fill.kernel:with({ arch = "sm_80" }):compile(t, cute.constexpr(mode), cute.u64(1), cute.f64(0), cute.f64(1))
          end
        end
      end
    end
  end)

  it("fill: a tensor of 2^31 elements or more (i64 indices)", function()
    local fill = require "cute.lib.fill"
    local t = cute.fake_tensor(cute.bf16, { 64, 32768, 8, 128 }, "row") -- 2^31 elements: a decode cache
    local h = fill.kernel:compile(t, cute.constexpr("uniform"), cute.u64(1), cute.f64(0), cute.f64(1))
    assert.matches("for %%%d+ = %%%d+ to %%%d+ step %%%d+", h:ir())
    assert.matches("cvt %%%d+ : i64", h:ir())
  end)

  it("elementwise, reductions, row kernels, transpose and sgemm", function()
    local ew, red = require "cute.lib.elementwise", require "cute.lib.reduce"
    local rw, tr, sg = require "cute.lib.rowwise", require "cute.lib.transpose", require "cute.lib.sgemm"
    for _, dt in ipairs { cute.f32, cute.bf16 } do
      local x = cute.fake_tensor(dt, 2 ^ 20)
      compiles(ew.kernels.copy, x, x)
      compiles(ew.kernels.axpb, x, x, cute.f32(2), cute.f32(1))
    end
    local a = cute.fake_tensor(cute.f32, { 1000, 4096 }, "row")
    compiles(ew.kernels.add_broadcast, a, cute.fake_tensor(cute.f32, 4096), a)
    for _, op in ipairs { "sum", "max" } do
      local k = red.kernels(op)
      compiles(k.partial, cute.fake_tensor(cute.f32, 2 ^ 20), cute.fake_tensor(cute.f32, 256))
      compiles(k.final, cute.fake_tensor(cute.f32, 256), cute.fake_tensor(cute.f32, 1))
      compiles(red.row_kernel(op), a, cute.fake_tensor(cute.f32, 1000), cute.constexpr(2))
    end
    for _, n in ipairs { 4096, 4000 } do
      local cfg = rw.config(n, cute.bf16)
      local x, w = cute.fake_tensor(cute.bf16, { 64, n }, "row"), cute.fake_tensor(cute.bf16, n)
      compiles(rw.kernels.softmax, x, x, cute.constexpr(cfg))
      compiles(rw.kernels.rmsnorm, x, w, x, cute.f32(1e-6), cute.constexpr(cfg))
      compiles(rw.kernels.layernorm, x, w, w, x, cute.f32(1e-5), cute.constexpr(cfg))
    end
    local m = cute.fake_tensor(cute.f32, { 1000, 777 }, "row")
    local mt = cute.fake_tensor(cute.f32, { 777, 1000 }, "row")
    compiles(tr.kernel, m, mt)
    compiles(tr.kernel32, m, mt)
    local A, B = cute.fake_tensor(cute.f32, { 333, 190 }, "row"), cute.fake_tensor(cute.f32, { 190, 257 }, "row")
    local C = cute.fake_tensor(cute.f32, { 333, 257 }, "row")
    compiles(sg.kernel, A, B, C, cute.f32(1), cute.f32(0), cute.constexpr(false))
    compiles(sg.kernel, A, B, C, cute.f32(1), cute.f32(1), cute.constexpr(true))
  end)
end)
