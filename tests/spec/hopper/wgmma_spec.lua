-- wgmma in kernels, on the CPU: the PTX of cute.gemm with warpgroup tiled
-- MMAs (every input type, both majors, every swizzle, SS and RS, a spread of
-- N, one and two warpgroups, scale-d, negation), the cubins (ptxas keeps the
-- wgmma pipelined: no serialization note), SASS when a disassembler is
-- present, the low-level instructions, and ptxas's serialization made an
-- error. The same kernels run on the GPU in wgmma_gpu_spec.lua.
local cute = require "cute"
local wg = require "cute.nvgpu.warpgroup"
local K = require "tests.spec.hopper.wgmma_kernels"
local H = require "tests.spec.trace.helper"

-- The wgmma.mma_async lines of a PTX text.
local function wgmma_lines(ptx)
  local out = {}
  for l in ptx:gmatch("[^\n]*wgmma%.mma_async[^\n]*") do out[#out + 1] = l end
  return out
end

-- The value a register is set to by `mov.u32 %rN, V;` (nil when it is not a constant).
local function mov_of(ptx, reg)
  return tonumber(ptx:match("mov%.u32%s+" .. reg:gsub("%%", "%%%%") .. ",%s*(%-?%d+);"))
end

-- The PTX types of a case's instruction: D, A, B.
local PTX_TYPE = { i8 = "s8", u8 = "u8", i32 = "s32" }
local function ptx_type(n) return PTX_TYPE[n] or n end

-- The immediates after the predicate a case's instruction must have.
local function tail_of(c)
  local neg = c.negate and "-1" or "1"
  if c.ab == "i8" or c.ab == "u8" then return "p; }" end
  if c.ab == "f16" or c.ab == "bf16" then
    local tb = c.b_major == "MN" and "1" or "0"
    if c.rs then return "p, " .. neg .. ", 1, " .. tb .. "; }" end
    return "p, " .. neg .. ", 1, " .. (c.a_major == "MN" and "1" or "0") .. ", " .. tb .. "; }"
  end
  return "p, " .. neg .. ", 1; }"
end

local CASES = {
  { ab = "bf16" },
  { ab = "bf16", a_major = "MN", b_major = "MN", n = 128, kblocks = 4 },
  { ab = "f16", acc = "f16", n = 8, a_major = "MN", b_major = "K" },
  { ab = "f16", acc = "f32", n = 256, kblocks = 1 },
  { ab = "f16", sw_a = 0, sw_b = 0, n = 16 },
  { ab = "f16", sw_a = 1, sw_b = 1, a_major = "MN", b_major = "MN", n = 32 },
  { ab = "bf16", sw_a = 2, sw_b = 3, b_major = "MN", n = 64 },
  { ab = "bf16", sw_a = 3, sw_b = 2, a_major = "MN", n = 64 },
  { ab = "tf32", n = 16 },
  { ab = "tf32", n = 64, sw_a = 1, sw_b = 0 },
  { ab = "e4m3", n = 32 },
  { ab = "e5m2", b = "e4m3", acc = "f16", n = 64 },
  { ab = "i8", n = 48 },
  { ab = "u8", b = "i8", n = 256, kblocks = 1 },
  { ab = "bf16", rs = true, n = 128 },
  { ab = "f16", rs = true, b_major = "MN", n = 8 },
  { ab = "tf32", rs = true, n = 24 },
  { ab = "e4m3", rs = true, n = 16 },
  { ab = "u8", rs = true, n = 32 },
  { ab = "bf16", wgs = 2, n = 256, accumulate = true },
  { ab = "f16", negate = true, n = 64 },
  { ab = "bf16", rep_m = 2, rep_n = 2, n = 32 },
  { ab = "f16", rs = true, wgs = 2, rep_n = 2, n = 16 },
  { ab = "bf16", per_k = true, kblocks = 4, a_major = "MN" },
  { ab = "u8", rs = true, per_k = true, accumulate = true, n = 64 },
}

describe("wgmma in kernels (CPU)", function()
  for _, raw in ipairs(CASES) do
    local c = K.case(raw)
    it("PTX and cubin: " .. K.name(c), function()
      local h = K.kernel(c):compile(K.fake_args(c))
      local ptx = h:ptx()
      local lines = wgmma_lines(ptx)
      -- one wgmma an atom of the thread's warpgroup: k-blocks x rep_m x rep_n
      assert.equal(c.kblocks * c.rep_m * c.rep_n, #lines)
      local head = string.format("wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", c.n, c.kinst, ptx_type(c.acc),
        ptx_type(c.ab), ptx_type(c.b))
      local regs = c.acc == "f16" and c.n / 4 or c.n / 2
      for i, l in ipairs(lines) do
        assert.truthy(l:find(head, 1, true), l)
        local list = l:sub(l:find(head, 1, true) + #head):match("^([^}]*)}")
        assert.equal(regs, H.count(list, "%")) -- the accumulator registers
        if c.rs then
          assert.matches("}, {%%r%d+, %%r%d+, %%r%d+, %%r%d+}, %%rd%d+, p", l) -- A in four registers
        else
          assert.matches("}, %%rd%d+, %%rd%d+, p", l)                          -- two descriptors
        end
        assert.equal(tail_of(c), l:sub(-#tail_of(c)), l)
        -- scale-d: 0 on the first k-block unless accumulating into C, then 1
        local reg = l:match("setp%.ne%.b32 p, (%%r%d+), 0;")
        local first_k = i <= c.rep_m * c.rep_n
        assert.equal((first_k and not c.accumulate) and 0 or 1, mov_of(ptx, reg))
      end
      assert.equal(1, H.count(ptx, "wgmma.fence.sync.aligned;"))
      assert.equal(1, H.count(ptx, "wgmma.commit_group.sync.aligned;"))
      assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 0;"))
      -- the cubin: built, and ptxas kept the wgmmas pipelined (no C75xx note)
      assert.equal("\127ELF", h:cubin():sub(1, 4))
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
    end)
  end

  it("SASS has HGMMA, QGMMA and IGMMA, one wait a batch (when a disassembler is present)", function()
    local want = {
      { { ab = "bf16", n = 64 }, "HGMMA.64x64x16.F32.BF16" },
      { { ab = "f16", acc = "f16", n = 128 }, "HGMMA.64x128x16.F16" },
      { { ab = "tf32", n = 16, rs = true }, "HGMMA.64x16x8.F32.TF32" },
      { { ab = "e4m3", n = 32 }, "QGMMA.64x32x32.F32.E4M3.E4M3" },
      { { ab = "i8", n = 32 }, "IGMMA.64x32x32.S8.S8" },
    }
    local c0 = K.case(want[1][1])
    local h0 = K.kernel(c0):compile(K.fake_args(c0))
    if not pcall(h0.sass, h0) then
      pending("no nvdisasm or cuobjdump: SASS not checked")
      return
    end
    for _, w in ipairs(want) do
      local c = K.case(w[1])
      local sass = K.kernel(c):compile(K.fake_args(c)):sass()
      assert.equal(c.kblocks, H.count(sass, w[2]), w[2])
      -- pipelined: one WARPGROUP.DEPBAR for the batch, not one per wgmma
      assert.equal(1, H.count(sass, "WARPGROUP.DEPBAR.LE gsb0, 0x0"))
      assert.equal(1, H.count(sass, "gsb0 ;"))
      -- scale-d 0 on the first: ptxas knows D = A B there
      assert.matches("RZ, !UPT", sass)
    end
  end)

  it("the low-level instructions: mma_async, commit, wait n, fence_operand", function()
    local at = cute.make_mma_atom(wg.MmaF16BF16Op(cute.f16, cute.f32, { 64, 16, 16 }))
    local h = H.compile(function(x, da, db, go)
      local acc = {}
      for i = 1, 8 do acc[i] = 0.0 end
      acc = cute.arch.warpgroup_fence_operand(acc)
      cute.arch.warpgroup_fence()
      local d = cute.arch.mma_async(at, acc, da, db, go:ne(0), { negate_b = true })
      cute.arch.warpgroup_commit_group()
      cute.arch.warpgroup_wait_group(1)
      cute.arch.warpgroup_wait_group(0)
      d = cute.arch.warpgroup_fence_operand(d)
      local s = d[1]
      for i = 2, 8 do s = s + d[i] end
      x[cute.thread_idx().x] = s
    end, { H.f32(128), cute.i64(0), cute.i64(0), cute.i32(0) }, { arch = "sm_90a", max_threads = 128, cache = false })
    local ptx = h:ptx()
    local l = wgmma_lines(ptx)[1]
    assert.truthy(l:find("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {", 1, true), l)
    assert.equal("p, 1, -1, 0, 0; }", l:sub(-17))
    assert.is_nil(mov_of(ptx, l:match("setp%.ne%.b32 p, (%%r%d+), 0;"))) -- scale-d from a run-time value
    assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 1;"))
    assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 0;"))
    -- fence_operand: an empty asm with the registers tied (8 in, 8 out, twice)
    assert.equal(2, select(2, h:ll():gsub('asm sideeffect "", "=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,~{memory}"',
      "")))
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end)

  it("tiled_mma:set(Field.ACCUMULATE, x) is the first k-block's scale-d", function()
    local mma = cute.make_tiled_mma(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }))
    local h = H.compile(function(gA, gC, flag)
      local sA = cute.make_smem_tensor(cute.bf16, wg.make_smem_layout_a("K", { 64, 64, 32 }, cute.bf16), 1024)
      local sB = cute.make_smem_tensor(cute.bf16, wg.make_smem_layout_b("K", { 64, 64, 32 }, cute.bf16), 1024)
      local thr = mma:get_slice(cute.thread_idx().x)
      local gCt = cute.local_tile(gC, { 64, 64 }, { 0, 0 })
      local acc = thr:make_fragment_C(thr:partition_C(gCt))
      acc:fill(0)
      mma:set(wg.Field.ACCUMULATE, flag:ne(0))
      cute.arch.warpgroup_fence()
      cute.gemm(mma, acc, thr:make_fragment_A(thr:partition_A(sA)), thr:make_fragment_B(thr:partition_B(sB)), acc)
      cute.arch.warpgroup_commit_group()
      cute.arch.warpgroup_wait_group(0)
      cute.copy(acc, thr:partition_C(gCt))
      gA[0] = gA[0]
    end, { cute.fake_tensor(cute.bf16, { 64, 32 }), cute.fake_tensor(cute.f32, { 64, 64 }), cute.i32(0) },
      { arch = "sm_90a", max_threads = 128, cache = false })
    local ptx = h:ptx()
    local lines = wgmma_lines(ptx)
    assert.equal(2, #lines)
    assert.is_nil(mov_of(ptx, lines[1]:match("setp%.ne%.b32 p, (%%r%d+), 0;"))) -- the flag
    assert.equal(1, mov_of(ptx, lines[2]:match("setp%.ne%.b32 p, (%%r%d+), 0;")))
  end)

  it("descriptor fragments slice by k-block and pipeline stage, as a CuTe DSL mainloop does", function()
    local mma = cute.make_tiled_mma(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }))
    -- A and B: 64 x 32 bf16, K-major (64B swizzle), 2 stages of 4096 bytes each
    local la = wg.make_smem_layout_a("K", { 64, 64, 32 }, cute.bf16, 2)
    local lb = wg.make_smem_layout_b("K", { 64, 64, 32 }, cute.bf16, 2)
    local h = H.compile(function(gC, stage)
      local sA = cute.make_smem_tensor(cute.bf16, la, 1024)
      local sB = cute.make_smem_tensor(cute.bf16, lb, 1024)
      local thr = mma:get_slice(cute.thread_idx().x)
      local tCrA = thr:make_fragment_A(thr:partition_A(sA)) -- (atom, 1, 2 k-blocks, 2 stages)
      local tCrB = thr:make_fragment_B(thr:partition_B(sB))
      local gCt = cute.local_tile(gC, { 64, 64 }, { 0, 0 })
      local acc = thr:make_fragment_C(thr:partition_C(gCt))
      local _ = cute._
      for s = 0, 1 do
        mma:set(wg.Field.ACCUMULATE, s > 0)
        cute.arch.warpgroup_fence()
        for k = 0, 1 do
          cute.gemm(mma, acc, tCrA[{ _, _, k, s }], tCrB[{ _, _, k, s }], acc)
          mma:set(wg.Field.ACCUMULATE, true)
        end
        cute.arch.warpgroup_commit_group()
        cute.arch.warpgroup_wait_group(0)
      end
      cute.copy(acc, thr:partition_C(gCt))
      gC[0] = gC[0] + stage
    end, { cute.fake_tensor(cute.f32, { 64, 64 }), cute.f32(0) }, { arch = "sm_90a", max_threads = 128, cache = false })
    local ptx, irt = h:ptx(), h:ir()
    local lines = wgmma_lines(ptx)
    assert.equal(4, #lines)
    -- scale-d: 0 only for the very first (stage 0, k-block 0)
    for i, l in ipairs(lines) do
      assert.equal(i == 1 and 0 or 1, mov_of(ptx, l:match("setp%.ne%.b32 p, (%%r%d+), 0;")))
    end
    -- the descriptors advance by 32 B a k-block (2 in 16-byte units), 4096 B a stage (256), both (258)
    for _, units in ipairs { 2, 256, 258 } do
      assert.matches("const " .. units .. " : i64", irt, 1, true)
    end
    assert.is_nil(h:log():find("(C75", 1, true))
  end)

  it("a kernel that touches the accumulator inside the window fails to compile, saying what to do", function()
    local at = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }))
    local function body(touch)
      return function(x, da, db)
        local acc = {}
        for i = 1, 32 do acc[i] = 0.0 end
        cute.arch.warpgroup_fence()
        local d = cute.arch.mma_async(at, acc, da, db, false)
        if touch then d[1] = d[1] + 1.0 end -- an fadd on an accumulator between two wgmmas of one batch
        d = cute.arch.mma_async(at, d, da, db)
        cute.arch.warpgroup_commit_group()
        cute.arch.warpgroup_wait_group(0)
        local s = d[1]
        for i = 2, 32 do s = s + d[i] end
        x[cute.thread_idx().x] = s
      end
    end
    local args = { H.f32(128), cute.i64(0), cute.i64(0) }
    local opts = { arch = "sm_90a", max_threads = 128, cache = false }
    local h = H.compile(body(false), args, opts)
    assert.is_nil(h:log():find("(C75", 1, true))
    local msg = H.error_of(function() H.compile(body(true), args, opts) end)
    assert.matches("ptxas serialized wgmma%.mma_async", msg)
    assert.matches("do not touch the accumulator", msg)
    assert.matches("%(C751%d%)", msg) -- ptxas's own note, quoted
    assert.matches("k%d+: ptxas serialized", msg) -- the kernel named
  end)
end)
