-- What the verifier and the tracer refuse about wgmma, each with its
-- message: a target without WGMMA (sm_90, sm_80, sm_100a), forms the ISA
-- lacks (the message lists those that exist), MN-major operands of types
-- that are K-major only, RS with an MN-major A, wrong operand types, and a
-- warpgroup op in a kernel whose block is not a multiple of 128 threads (by
-- its launch bounds when tracing, by maxntid/reqntid in the verifier, by the
-- launch's block before launching).
local cute = require "cute"
local ir = require "cute.ir"
local wg = require "cute.nvgpu.warpgroup"
local H = require "tests.spec.trace.helper"

-- A raw module with one wgmma.mma_async (built unchecked, then verified):
-- nil when it verifies, else the verifier's message.
local function verify_wgmma(o)
  local m = ir.module { target = o.target or "sm_90a", check = false }
  local k = m:kernel("k", o.attrs)
  local desc = k:const("i64", 0)
  local acc_t = o.acc_t or string.format("{%d x %s}", o.td == "f16" and o.n / 4 or o.n / 2,
    o.td == "f32" and "f32" or "i32")
  local acc = k:op("undef", acc_t)
  local a = o.rs and k:op("undef", "{4 x i32}") or desc
  local scale = o.scale_i32 and k:const("i32", 1) or k:const("i1", 1)
  k:op("wgmma.mma_async", o.res_t or acc_t, a, desc, acc, scale, { o.n, o.ta, o.tb, o.td, o.mode or 0 })
  local ok, msg = pcall(m.verify, m)
  m:free()
  return not ok and tostring(msg) or nil
end

local FORMS = "wgmma.mma_async forms (m64nNkK): f16 x f16 -> f32 or f16 (k16), bf16 x bf16 -> f32 (k16), "

describe("wgmma: what is refused", function()
  it("accepts every form the ISA has, for SS and RS", function()
    local function ok(ta, tb, td, ns)
      for _, n in ipairs(ns) do
        assert.is_nil(verify_wgmma { n = n, ta = ta, tb = tb, td = td })
        assert.is_nil(verify_wgmma { n = n, ta = ta, tb = tb, td = td, rs = true })
      end
    end
    local all, int = {}, { 8, 16, 24, 32 }
    for n = 8, 256, 8 do all[#all + 1] = n end
    for n = 48, 256, 16 do int[#int + 1] = n end
    ok("f16", "f16", "f32", all)
    ok("f16", "f16", "f16", all)
    ok("bf16", "bf16", "f32", all)
    ok("tf32", "tf32", "f32", all)
    for _, a in ipairs { "e4m3", "e5m2" } do
      for _, b in ipairs { "e4m3", "e5m2" } do
        ok(a, b, "f32", { 8, 136, 256 })
        ok(a, b, "f16", { 8, 136, 256 })
      end
    end
    for _, a in ipairs { "s8", "u8" } do
      for _, b in ipairs { "s8", "u8" } do ok(a, b, "s32", int) end
    end
    -- MN-major 16-bit operands, negation, satfinite
    assert.is_nil(verify_wgmma { n = 64, ta = "bf16", tb = "bf16", td = "f32", mode = 1 + 2 + 4 + 8 })
    assert.is_nil(verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f16", mode = 2, rs = true })
    assert.is_nil(verify_wgmma { n = 64, ta = "s8", tb = "u8", td = "s32", mode = 16 })
  end)

  it("refuses forms the ISA lacks, listing those that exist", function()
    local bad = {
      { { n = 64, ta = "bf16", tb = "bf16", td = "f16" }, "bf16 inputs accumulate in f32 only" },
      { { n = 64, ta = "tf32", tb = "tf32", td = "f16" }, "tf32 inputs accumulate in f32 only" },
      { { n = 64, ta = "f16", tb = "bf16", td = "f32" }, "16-bit inputs are f16 x f16 or bf16 x bf16" },
      { { n = 64, ta = "e4m3", tb = "s8", td = "f32" }, "fp8 inputs are e4m3 or e5m2 each" },
      { { n = 64, ta = "s8", tb = "u8", td = "f32" }, "8-bit integer inputs accumulate in s32 only" },
      { { n = 40, ta = "s8", tb = "s8", td = "s32" }, "N is 8, 16, 24, 32 or 48..256 step 16 for 8-bit integers" },
      { { n = 12, ta = "f16", tb = "f16", td = "f32", acc_t = "{6 x f32}" }, "N is 8..256 step 8" },
      { { n = 264, ta = "f16", tb = "f16", td = "f32", acc_t = "{4 x f32}" }, "N is 8..256 step 8" },
      { { n = 64, ta = "f64", tb = "f64", td = "f64", acc_t = "{4 x f32}" },
        "the input types are f16, bf16, tf32, e4m3, e5m2, s8 and u8" },
    }
    for _, b in ipairs(bad) do
      local msg = verify_wgmma(b[1])
      assert.is_not_nil(msg)
      assert.matches("there is no wgmma.mma_async m64n" .. b[1].n, msg, 1, true)
      assert.matches(b[2], msg, 1, true)
      assert.matches(FORMS, msg, 1, true)
    end
  end)

  it("refuses MN-major operands of K-major-only types, RS with an MN-major A, and wrong modes", function()
    for _, t in ipairs { { "tf32", "tf32", "f32" }, { "e4m3", "e5m2", "f32" }, { "s8", "s8", "s32" } } do
      for _, mode in ipairs { 1, 2 } do
        assert.matches("inputs are read K-major only: only f16 and bf16 operands can be MN-major",
          verify_wgmma { n = 64, ta = t[1], tb = t[2], td = t[3], mode = mode }, 1, true)
      end
    end
    assert.matches("A from registers is K-major: an MN-major (transposed) A needs A in shared memory",
      verify_wgmma { n = 64, ta = "bf16", tb = "bf16", td = "f32", mode = 1, rs = true }, 1, true)
    assert.matches("integer wgmma takes no negation of A or B",
      verify_wgmma { n = 64, ta = "s8", tb = "s8", td = "s32", mode = 4 }, 1, true)
    assert.matches("satfinite is for integer wgmma",
      verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f32", mode = 16 }, 1, true)
    assert.matches("mode 32: the bits are", verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f32", mode = 32 },
      1, true)
    -- the RS refusal at the op's construction too (cute.nvgpu.warpgroup)
    assert.error_matches(function()
      wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }, wg.OperandSource.RMEM, wg.OperandMajorMode.MN)
    end, "A from registers %(OperandSource.RMEM%) is K%-major only")
  end)

  it("refuses wrong operand types", function()
    assert.matches("the accumulator is {16 x f32}, expected {32 x f32}",
      verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f32", acc_t = "{16 x f32}", res_t = "{32 x f32}" }, 1,
      true)
    assert.matches("the result type is {16 x f32}, expected the accumulator's {32 x f32}",
      verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f32", res_t = "{16 x f32}" }, 1, true)
    assert.matches("the accumulator is {32 x f32}, expected {16 x i32}",
      verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f16", acc_t = "{32 x f32}" }, 1, true)
    assert.matches("scale_d is i32, expected i1",
      verify_wgmma { n = 64, ta = "f16", tb = "f16", td = "f32", scale_i32 = true }, 1, true)
    -- fence_operand takes f32/i32 registers
    local m = ir.module { target = "sm_90a", check = false }
    local k = m:kernel("k")
    k:op("wgmma.fence_operand", nil, k:const("f64", 1))
    local ok, msg = pcall(m.verify, m)
    assert.is_false(ok)
    assert.matches("the operand is f64, expected f32 or i32 registers", msg, 1, true)
    m:free()
  end)

  for _, target in ipairs { "sm_90", "sm_80", "sm_100a" } do
    it("refuses every wgmma op on " .. target .. ", naming WGMMA and sm_90a", function()
      assert.matches("wgmma.mma_async needs WGMMA, which " .. target .. " lacks (sm_90a has it)",
        verify_wgmma { target = target, n = 64, ta = "bf16", tb = "bf16", td = "f32" }, 1, true)
      for _, op in ipairs { { "wgmma.commit" }, { "wgmma.wait", { 0 } } } do
        local m = ir.module { target = target, check = false }
        local k = m:kernel("k")
        if op[2] then k:op(op[1], nil, op[2]) else k:op(op[1], nil) end
        local ok, msg = pcall(m.verify, m)
        assert.is_false(ok)
        assert.matches(op[1] .. " needs WGMMA, which " .. target .. " lacks (sm_90a has it)", msg, 1, true)
        m:free()
      end
      -- and in a kernel, at the user's line
      local at = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 8, 16 }))
      local line = debug.getinfo(1, "l").currentline + 4
      local msg = H.error_of(function()
        H.compile(function(x, da, db)
          local acc = { 0.0, 0.0, 0.0, 0.0 }
          local d = cute.arch.mma_async(at, acc, da, db)
          x[cute.thread_idx().x] = d[1]
        end, { H.f32(128), cute.i64(0), cute.i64(0) }, { arch = target, cache = false })
      end)
      assert.matches("wgmma_verify_spec%.lua:" .. line .. ":", msg)
      assert.matches("wgmma.mma_async needs WGMMA, which " .. target .. " lacks (sm_90a has it)", msg, 1, true)
    end)
  end

  it("refuses a warpgroup op in a kernel bounded to a block size that is not a multiple of 128", function()
    local line = debug.getinfo(1, "l").currentline + 2
    local function body(x)
      cute.arch.warpgroup_commit_group()
      x[cute.thread_idx().x] = 1
    end
    for _, n in ipairs { 96, 192, 32 } do
      local msg = H.error_of(function() H.compile(body, { H.f32(128) }, { arch = "sm_90a", max_threads = n,
        cache = false }) end)
      assert.matches("kernel k%d+: [^ ]*wgmma_verify_spec%.lua:" .. line .. " issues a warpgroup instruction", msg)
      assert.matches("the launch bounds allow at most " .. n .. " threads a block %(max_threads%): make it a "
        .. "multiple of 128", msg)
    end
    -- through cute.launch_bounds too
    local msg = H.error_of(function()
      H.compile(function(x)
        cute.launch_bounds(160)
        body(x)
      end, { H.f32(128) }, { arch = "sm_90a", cache = false })
    end)
    assert.matches("at most 160 threads a block", msg)
    -- multiples of 128 are fine
    for _, n in ipairs { 128, 256, 384 } do
      H.compile(body, { H.f32(128) }, { arch = "sm_90a", max_threads = n, cache = false })
    end
  end)

  it("the verifier refuses it for maxntid and reqntid, at the op", function()
    for _, a in ipairs { { { maxntid = 96 }, "at most 96 threads (maxntid" }, { { reqntid = { 64, 3, 1 } },
      "exactly 192 threads (reqntid)" } } do
      local m = ir.module { target = "sm_90a", check = false }
      local k = m:kernel("kk", a[1])
      m:set_loc("wg.lua", 7, "kk")
      k:op("wgmma.commit", nil)
      local ok, msg = pcall(m.verify, m)
      assert.is_false(ok)
      assert.matches("wg.lua:7 (kk): error: wgmma.commit is a warpgroup op, but kernel @kk has blocks of "
        .. a[2], msg, 1, true)
      assert.matches("not a multiple of 128", msg, 1, true)
      m:free()
    end
    local m = ir.module { target = "sm_90a", check = false }
    local k = m:kernel("kk", { maxntid = 256 })
    k:op("wgmma.commit", nil)
    m:verify()
    m:free()
  end)

  it("refuses a launch whose block is not a multiple of 128 before launching", function()
    local k = cute.kernel("wg_launch", function(x)
      cute.arch.warpgroup_commit_group()
      x[cute.thread_idx().x] = 1
    end, { arch = "sm_90a", cache = false })
    for _, block in ipairs { 96, { 64, 3 }, { 32, 2, 1 } } do
      local n = type(block) == "number" and block or block[1] * block[2] * (block[3] or 1)
      local msg = H.error_at(function() k { grid = 1, block = block }(cute.fake_tensor(cute.f32, 128)) end)
      assert.matches("launch of wg_launch: the kernel uses warpgroup instructions %(wgmma%), which run on whole "
        .. "warpgroups of 128 threads, but its block has " .. n .. " threads: launch a multiple of 128", msg)
    end
    -- a kernel without warpgroup ops is not checked (it fails later here, for want of a GPU or of memory)
    local plain = cute.kernel("plain", function(x) x[cute.thread_idx().x] = 1 end, { arch = "sm_90a", cache = false })
    local ok, msg = pcall(function() plain { grid = 1, block = 96 }(cute.fake_tensor(cute.f32, 128)) end)
    assert.is_nil(ok and nil or tostring(msg):find("warpgroup", 1, true))
  end)

  it("refuses a bad wait count and operands of the wrong kind", function()
    local msg = H.error_of(function()
      H.compile(function(x)
        cute.arch.warpgroup_wait_group(64)
        x[0] = 1
      end, { H.f32(128) }, { arch = "sm_90a", cache = false })
    end)
    assert.matches("n is a whole number of pending groups from 0 to 63", msg)
    local at = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 8, 16 }))
    msg = H.error_of(function()
      H.compile(function(x, da, db)
        local d = cute.arch.mma_async(at, { 0.0, 0.0 }, da, db)
        x[0] = d[1]
      end, { H.f32(128), cute.i64(0), cute.i64(0) }, { arch = "sm_90a", cache = false })
    end)
    assert.matches("m64n8k16 f32 accumulates in 4 registers a thread %(a list%), got 2 values", msg)
    -- cute.gemm with an SS atom and A in registers
    local mma = cute.make_tiled_mma(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }))
    msg = H.error_of(function()
      H.compile(function(gC)
        local sB = cute.make_smem_tensor(cute.bf16, wg.make_smem_layout_b("K", { 64, 64, 16 }, cute.bf16), 1024)
        local thr = mma:get_slice(cute.thread_idx().x)
        local gCt = cute.local_tile(gC, { 64, 64 }, { 0, 0 })
        local acc = thr:make_fragment_C(thr:partition_C(gCt))
        local rA = cute.make_fragment({ 1024, 1, 1 }, cute.bf16)
        cute.gemm(mma, acc, rA, thr:make_fragment_B(thr:partition_B(sB)), acc)
      end, { cute.fake_tensor(cute.f32, { 64, 64 }) }, { arch = "sm_90a", cache = false })
    end)
    assert.matches("A of an SS wgmma is thr_mma:partition_A %(or make_fragment_A%) of a shared%-memory tensor", msg)
    -- a swizzled buffer that is not aligned to its swizzle
    msg = H.error_of(function()
      H.compile(function(gC)
        local sA = cute.make_smem_tensor(cute.bf16, wg.make_smem_layout_a("K", { 64, 64, 64 }, cute.bf16), 128)
        local sB = cute.make_smem_tensor(cute.bf16, wg.make_smem_layout_b("K", { 64, 64, 64 }, cute.bf16), 1024)
        local thr = mma:get_slice(cute.thread_idx().x)
        local gCt = cute.local_tile(gC, { 64, 64 }, { 0, 0 })
        local acc = thr:make_fragment_C(thr:partition_C(gCt))
        cute.gemm(mma, acc, thr:make_fragment_A(thr:partition_A(sA)), thr:make_fragment_B(thr:partition_B(sB)), acc)
      end, { cute.fake_tensor(cute.f32, { 64, 64 }) }, { arch = "sm_90a", cache = false })
    end)
    assert.matches("A's shared%-memory buffer is 128%-byte aligned; its 128B swizzle needs 1024", msg)
  end)
end)
