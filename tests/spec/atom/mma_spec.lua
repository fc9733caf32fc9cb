-- MMA atoms, tiled MMAs and the copies that feed them: the atoms' layouts
-- against the PTX ISA's fragment formulas, errors, pictures, and one-tile
-- GEMMs of every atom family with A and B in both major orders (compiled
-- here; run on the GPU against a CPU reference).
local cute = require "cute"
local K = require "tests.spec.atom.mma_kernels"

-- The PTX ISA's fragment formulas (mma.sync m16n8kK, row.col), as (row, col)
-- of element i of lane l: groupID g = l // 4, threadID_in_group t = l % 4.
local PTX = {}
-- 16-bit A of m16n8k16: a0..a7
function PTX.a16_k16(l, i)
  local g, t = math.floor(l / 4), l % 4
  local row = g + 8 * (math.floor(i / 2) % 2)
  local col = 2 * t + (i % 2) + 8 * math.floor(i / 4)
  return row, col
end
-- 16-bit B of m16n8k16 (K x N): b0..b3 -> (k, n)
function PTX.b16_k16(l, i)
  local g, t = math.floor(l / 4), l % 4
  return 2 * t + (i % 2) + 8 * math.floor(i / 2), g
end
-- C (16 x 8): c0..c3
function PTX.c(l, i)
  local g, t = math.floor(l / 4), l % 4
  return g + 8 * math.floor(i / 2), 2 * t + (i % 2)
end
-- tf32 A of m16n8k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
function PTX.a32_k8(l, i)
  local g, t = math.floor(l / 4), l % 4
  return g + 8 * (i % 2), t + 4 * math.floor(i / 2)
end
-- 8-bit A of m16n8k32: a0..a15
function PTX.a8_k32(l, i)
  local g, t = math.floor(l / 4), l % 4
  return g + 8 * (math.floor(i / 4) % 2), 4 * t + (i % 4) + 16 * math.floor(i / 8)
end
-- 8-bit B of m16n8k32 (K x N): b0..b7
function PTX.b8_k32(l, i)
  local g, t = math.floor(l / 4), l % 4
  return 4 * t + (i % 4) + 16 * math.floor(i / 4), g
end

describe("MMA atoms", function()
  local function check(tv, rows, formula, transpose_kn)
    for l = 0, 31 do
      for i = 0, cute.size(tv, 1) - 1 do
        local idx = tv({ l, i })
        local r, c = formula(l, i)
        if transpose_kn then r, c = c, r end -- B: (k, n) -> the (n, k) tile
        assert.equal(r + rows * c, idx, string.format("lane %d value %d", l, i))
      end
    end
  end

  it("have the PTX ISA's fragment layouts", function()
    local bf = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
    check(bf.tv_a, 16, PTX.a16_k16)
    check(bf.tv_b, 8, PTX.b16_k16, true)
    check(bf.tv_c, 16, PTX.c)
    local tf = cute.make_mma_atom(cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }))
    check(tf.tv_a, 16, PTX.a32_k8)
    check(tf.tv_c, 16, PTX.c)
    local i8 = cute.make_mma_atom(cute.nvgpu.warp.MmaI8Op(cute.i8, cute.u8, { 16, 8, 32 }))
    check(i8.tv_a, 16, PTX.a8_k32)
    check(i8.tv_b, 8, PTX.b8_k32, true)
    assert.same({ a = 4, b = 2, c = 4 }, bf.regs)
    assert.same({ a = 4, b = 2, c = 4 }, i8.regs)
    assert.equal("MmaAtom(m16n8k16 bf16 x bf16 -> f32, sm_80)", tostring(bf))
  end)

  it("refuses atoms that do not exist, listing those that do", function()
    local ok, msg = pcall(cute.make_mma_atom, cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f16, { 16, 8, 16 }))
    assert.is_false(ok)
    assert.matches("there is no mma.sync m16n8k16 with bf16 x bf16 %-> f16", msg)
    assert.matches("m16n8k16 bf16 x bf16 %-> f32 %(sm_80%)", msg)
    assert.matches("m16n8k32 e4m3 x e5m2 %-> f32 %(sm_89%)", msg)
    ok, msg = pcall(cute.make_mma_atom, cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 32 }))
    assert.is_false(ok)
    assert.matches("no mma.sync m16n8k32", msg)
    ok, msg = pcall(cute.make_tiled_mma, cute.make_mma_atom(cute.nvgpu.warp.MmaTF32Op()), { 2, 2, 1 }, { 48, 16, 8 })
    assert.is_false(ok)
    assert.matches("multiple of the warps' 32x16x8", msg)
    -- warps and tiles that are not whole numbers from 1 (a string failed in the arithmetic)
    local tf32 = cute.make_mma_atom(cute.nvgpu.warp.MmaTF32Op())
    for _, c in ipairs {
      { { 0, 1, 1 }, nil, "atom_layout_mnk is {WM, WN, 1}, whole numbers from 1, got {0, 1, 1}" },
      { "x", nil, "atom_layout_mnk is {WM, WN, 1}, whole numbers from 1, got x" },
      { { 2, 1.5, 1 }, nil, "atom_layout_mnk is .*got {2, 1%.5, 1}" },
      { { 1, 1, 1 }, "x", "permutation_mnk is {TM, TN, TK}, got x" },
      { { 1, 1, 1 }, { 16, 0, 8 }, "permutation_mnk is {TM, TN, TK}, whole numbers from 1, got {16, 0, 8}" },
    } do
      ok, msg = pcall(cute.make_tiled_mma, tf32, c[1], c[2])
      assert.is_false(ok)
      assert.matches("make_tiled_mma: " .. c[3], msg)
    end
  end)

  it("tile over warps: every element of the C tile has exactly one owner", function()
    local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 }))
    local mma = cute.make_tiled_mma(atom, { 2, 4, 1 }, { 64, 64, 32 })
    assert.equal(256, mma.size)
    assert.same({ 64, 64, 32 }, mma:get_tile_size())
    for _, which in ipairs { "C", "A", "B" } do
      local tv = mma["tv_layout_" .. which](mma)
      local seen, n = {}, 0
      local rows = which == "B" and 64 or 64
      local cols = which == "C" and 64 or 32
      for t = 0, 255 do
        for v = 0, cute.size(tv, 1) - 1 do
          local idx = tv({ t, v })
          assert.is_true(idx >= 0 and idx < rows * cols)
          if not seen[idx] then n = n + 1 end
          seen[idx] = (seen[idx] or 0) + 1
        end
      end
      assert.equal(rows * cols, n, which .. " covers its tile")
      -- C: one owner each; A is shared by the warps along N, B along M
      local owners = which == "C" and 1 or (which == "A" and 4 or 2)
      for idx = 0, rows * cols - 1 do assert.equal(owners, seen[idx], which .. " " .. idx) end
    end
  end)

  it("draws atoms and tiled MMAs (A, B and C) and tiled copies as SVG", function()
    local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 }))
    local svg = require("cute.atom").svg_mma(atom)
    assert.matches("^<%?xml", svg)
    assert.matches("A %(M x K%)", svg)
    assert.matches("B %(K x N%)", svg)
    assert.matches("C %(M x N%)", svg)
    -- C's cell (row 8, col 1) is lane 0's c3 (PTX: c2/c3 are row g + 8; col 2t + i % 2)
    assert.matches(">T0V3<", svg)
    local g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp("global"), cute.bf16)
    local tc = cute.make_tiled_copy_tv(g2s, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }))
    assert.matches("TiledCopy", require("cute.atom").svg_copy(tc))
  end)
end)

-- C fragments stored to shared memory with stmatrix (sm_90), read back
-- element by element: C[m, n] = m + n / 2 (exact in bf16).
local function stmatrix_kernel()
  local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
  local mma = cute.make_tiled_mma(atom, { 2, 2, 1 })
  local stsm = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(false, 4), cute.bf16),
    mma)
  return cute.kernel("stsm_test", function(C)
    local tid = cute.thread_idx().x
    local sC = cute.make_smem_tensor(cute.bf16, cute.make_layout({ 64, 64 }, { 64, 1 }), 128)
    local thr = mma:get_slice(tid)
    local coords = thr:partition_C(cute.make_identity_tensor({ 64, 64 }))
    local frag = thr:make_fragment_C(coords)
    for i = 0, cute.size(frag) - 1 do
      local c = coords[i]
      frag[i] = c[1]:to(cute.f32) + c[2]:to(cute.f32) * 0.5
    end
    local hb = cute.make_fragment_like(frag, cute.bf16)
    for i = 0, cute.size(frag) - 1 do hb[i] = frag[i]:to(cute.bf16) end
    local ts = stsm:get_slice(tid)
    cute.copy(stsm, ts:retile(hb), ts:partition_D(sC))
    cute.sync_threads()
    for i = 0, 64 * 64 / 128 - 1 do
      local e = tid + i * 128
      C[{ e / 64, e % 64 }] = sC[{ e / 64, e % 64 }]
    end
  end, { arch = "sm_90a" })
end

describe("copy atoms", function()
  it("store C fragments with stmatrix (sm_90)", function()
    local ptx = stmatrix_kernel():compile(cute.fake_tensor(cute.bf16, { 64, 64 }, "row")):ptx()
    assert.matches("stmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16", ptx)
  end)

  it("store C fragments with stmatrix where the C layout puts them #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then return pending("stmatrix needs sm_90") end
    local C = cute.tensor(cute.bf16, { 64, 64 }, "row"):fill(0 / 0)
    stmatrix_kernel() { grid = 1, block = 128 }(C)
    local h = C:to_host()
    for m = 0, 63 do
      for n = 0, 63 do assert.equal(m + n / 2, h[{ m, n }], string.format("(%d,%d)", m, n)) end
    end
  end)

  it("check their widths and dtypes", function()
    assert.matches("cp.async moves 4, 8 or 16 bytes",
      select(2, pcall(cute.make_copy_atom, cute.nvgpu.cpasync.CopyG2SOp(), cute.f32, { num_bits_per_copy = 256 })))
    local cg = cute.nvgpu.cpasync.CopyG2SOp("global")
    assert.matches("16 bytes only", select(2, pcall(cute.make_copy_atom, cg, cute.f32, { num_bits_per_copy = 32 })))
    assert.matches("moves 16%-bit elements",
      select(2, pcall(cute.make_copy_atom, cute.nvgpu.warp.LdMatrix8x8x16bOp(false, 4), cute.f32)))
    assert.matches("num_matrices is 1, 2 or 4", select(2, pcall(cute.nvgpu.warp.LdMatrix8x8x16bOp, false, 3)))
  end)
end)

-- the one-tile GEMM variants: every atom family, both major orders
local CASES = {
  { name = "bf16 -> f32, ldmatrix", op = cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }),
    ldmatrix = true },
  { name = "f16 -> f32", op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 }) },
  { name = "f16 -> f16 k8, ldmatrix", op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f16, { 16, 8, 8 }),
    ldmatrix = true, tol = 2 ^ -9 },
  { name = "bf16 k8, ldmatrix", op = cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 8 }),
    ldmatrix = true },
  { name = "tf32", op = cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }), tol = 2 ^ -9 },
  { name = "i8 x u8 -> i32", op = cute.nvgpu.warp.MmaI8Op(cute.i8, cute.u8, { 16, 8, 32 }), tol = 0 },
  { name = "e4m3 -> f32", op = cute.nvgpu.warp.MmaFP8Op(cute.e4m3, cute.e5m2, { 16, 8, 32 }) },
}

describe("one-tile GEMMs from atoms", function()
  it("compile for every atom family and major order, without spills", function()
    for _, c in ipairs(CASES) do
      for _, am in ipairs { "k", "mn" } do
        for _, bm in ipairs { "k", "mn" } do
          c.amajor, c.bmajor = am, bm
          local k, mma = K.tile_gemm(c)
          local at = mma.atom
          local h = k:compile(cute.fake_tensor(at.a_dtype, { 64, 64 }, am == "k" and "row" or "col"),
            cute.fake_tensor(at.b_dtype, { 64, 64 }, bm == "k" and "row" or "col"),
            cute.fake_tensor(cute.f32, { 64, 64 }, "row"), cute.constexpr(64), cute.constexpr(64), cute.constexpr(64))
          local ptx = h:ptx()
          assert.matches("mma%.sync%.aligned%." .. at.ir.shape, ptx, c.name)
          assert.matches("cp%.async%.cg%.shared%.global", ptx, c.name)
          if c.ldmatrix then
            assert.matches("ldmatrix%.sync%.aligned%.m8n8%.x4" .. (am == "mn" and "%.trans" or "%.shared"), ptx, c.name)
          end
          assert.equal(0, h:resources().tile_gemm.spill_stores, c.name)
        end
      end
    end
  end)

  it("compute A B on the GPU for every atom family and major order #gpu", function()
    local cases = {}
    for _, c in ipairs(CASES) do
      for _, am in ipairs { "k", "mn" } do
        for _, bm in ipairs { "k", "mn" } do
          cases[#cases + 1] = { c = c, am = am, bm = bm }
        end
      end
    end
    local info = cute.device_info()
    for n, cs in ipairs(cases) do
      local c = cs.c
      c.amajor, c.bmajor = cs.am, cs.bm
      local k, mma = K.tile_gemm(c)
      local at = mma.atom
      if info.compute_capability[1] * 10 + info.compute_capability[2] >= at.sm then
        local BM, BN, BK = 64, 64, 64
        local A, B = K.operands(at.a_dtype, at.b_dtype, BM, BN, BK, cs.am, cs.bm, 100 + n)
        local C = cute.tensor(cute.f32, { BM, BN }, "row"):fill(0 / 0)
        k { grid = 1, block = mma.size }(A, B, C, cute.constexpr(BM), cute.constexpr(BN), cute.constexpr(BK))
        local ha, hb, hc = A:to_host(), B:to_host(), C:to_host()
        local tol = c.tol or 1e-5
        for i = 0, BM - 1 do
          for j = 0, BN - 1 do
            local ref, mag = 0, 0
            for kk = 0, BK - 1 do
              local p = ha[{ i, kk }] * hb[{ j, kk }]
              ref, mag = ref + p, mag + math.abs(p)
            end
            local got = hc[{ i, j }]
            local close = math.abs(got - ref) <= tol * math.max(mag, 1) -- false for NaN (poison left)
            if not close then
              error(string.format("%s A %s-major B %s-major: C[%d,%d] = %.9g, expected %.9g", c.name, cs.am, cs.bm, i,
                j, got, ref))
            end
          end
        end
        A:free(); B:free(); C:free()
      end
    end
  end)
end)
