-- The warpgroup MMA (wgmma.mma_async) as data: which ops exist (every shape
-- and dtype combination against the PTX ISA's table, as
-- docs/notes/hopper-facts.md 1.2 records it after compiling each with
-- ptxas), the atoms' thread-value layouts against the ISA's fragment
-- formulas (facts section 3), tiled MMAs over several warpgroups, pictures,
-- and errors at the caller's line.
local cute = require "cute"
local wg = require "cute.nvgpu.warpgroup"

local FILE = "tests/spec/hopper/warpgroup_spec.lua"
local K, MN = wg.OperandMajorMode.K, wg.OperandMajorMode.MN
local SMEM, RMEM = wg.OperandSource.SMEM, wg.OperandSource.RMEM

-- f() must fail at the line it was defined on (this file), with a message
-- matching every pattern given (plain text).
local function raises(f, ...)
  local ok, msg = pcall(f)
  assert.is_false(ok, "no error")
  local file, line = tostring(msg):match("^(.-):(%d+): ")
  assert.equal(FILE, file, msg)
  assert.equal(debug.getinfo(f, "S").linedefined, tonumber(line), msg)
  for i = 1, select("#", ...) do assert.truthy(msg:find((select(i, ...)), 1, true), msg) end
  return msg
end

-- The ISA's table, written here independently of the module: (a, b, acc)
-- -> K and the valid Ns, and whether MN-major operands exist.
local function isa_form(a, b, acc)
  local n_all, n_int = {}, {}
  for n = 8, 256, 8 do n_all[n] = true end
  for _, n in ipairs { 8, 16, 24, 32 } do n_int[n] = true end
  for n = 48, 256, 16 do n_int[n] = true end
  if a == "f16" and b == "f16" and (acc == "f32" or acc == "f16") then return 16, n_all, true end
  if a == "bf16" and b == "bf16" and acc == "f32" then return 16, n_all, true end
  if a == "tf32" and b == "tf32" and acc == "f32" then return 8, n_all, false end
  local f8 = { e4m3 = true, e5m2 = true }
  if f8[a] and f8[b] and (acc == "f32" or acc == "f16") then return 32, n_all, false end
  local i8 = { i8 = true, u8 = true }
  if i8[a] and i8[b] and acc == "i32" then return 32, n_int, false end
  return nil
end

-- the op constructor a user would call for these dtypes
local function make(a, b, acc, shape, src, am, bm)
  local A, B, C = cute[a], cute[b], cute[acc]
  if a == "f16" or a == "bf16" then
    if a ~= b then error("not this family") end
    return wg.MmaF16BF16Op(A, C, shape, src, am, bm)
  elseif a == "tf32" then
    if b ~= "tf32" or acc ~= "f32" then error("not this family") end
    return wg.MmaTF32Op(shape, src, am, bm)
  elseif a == "e4m3" or a == "e5m2" then
    return wg.MmaF8Op(A, B, C, shape, src, am, bm)
  else
    if acc ~= "i32" then error("not this family") end
    return wg.MmaI8Op(A, B, shape, src, am, bm)
  end
end

-- facts 3.1: accumulator register i of thread t of m64nN
local function c_formula(t, i)
  local w, l = math.floor(t / 32), t % 32
  local m = 16 * w + math.floor(l / 4) + 8 * (math.floor(i / 2) % 2)
  local n = 8 * math.floor(i / 4) + 2 * (l % 4) + i % 2
  return m, n
end

-- facts 3.2: value v of the RS A fragment (registers of 32 bits, low
-- elements first) of thread t, as (m, k)
local A_FORMULA = {
  [16] = function(t, v) -- a0 = A[r][2c..+1], a1 = A[r+8][2c..], a2 = A[r][2c+8..], a3 = A[r+8][2c+8..]
    local w, l = math.floor(t / 32), t % 32
    local r, c = 16 * w + math.floor(l / 4), l % 4
    local reg, half = math.floor(v / 2), v % 2
    return r + 8 * (reg % 2), 2 * c + half + 8 * math.floor(reg / 2)
  end,
  [32] = function(t, v) -- a0 = A[r][c], a1 = A[r+8][c], a2 = A[r][c+4], a3 = A[r+8][c+4]
    local w, l = math.floor(t / 32), t % 32
    local r, c = 16 * w + math.floor(l / 4), l % 4
    return r + 8 * (v % 2), c + 4 * math.floor(v / 2)
  end,
  [8] = function(t, v) -- a0 = A[r][4c..+3], a1 = A[r+8][4c..], a2 = A[r][16+4c..], a3 = A[r+8][16+4c..]
    local w, l = math.floor(t / 32), t % 32
    local r, c = 16 * w + math.floor(l / 4), l % 4
    local reg, q = math.floor(v / 4), v % 4
    return r + 8 * (reg % 2), 4 * c + q + 16 * math.floor(reg / 2)
  end,
}

describe("warpgroup MMA ops", function()
  it("exist for exactly the ISA's shapes and dtypes", function()
    local names = { "f16", "bf16", "tf32", "e4m3", "e5m2", "i8", "u8" }
    local accs = { "f32", "f16", "i32", "bf16" }
    local checked, valid = 0, 0
    for _, a in ipairs(names) do
      for _, b in ipairs(names) do
        for _, acc in ipairs(accs) do
          local kk, ns = isa_form(a, b, acc)
          for _, k in ipairs { 8, 16, 32, 64 } do
            for n = 4, 264, 4 do
              for _, m in ipairs { 64, 128 } do
                local ok, res = pcall(make, a, b, acc, { m, n, k })
                if not (type(res) == "string" and res:find("not this family", 1, true)) then
                  local want = kk ~= nil and m == 64 and k == kk and ns[n] == true
                  assert.equal(want, ok, string.format("%s x %s -> %s m%dn%dk%d: %s", a, b, acc, m, n, k,
                    tostring(res)))
                  checked = checked + 1
                  if ok then
                    valid = valid + 1
                    assert.same({ 64, n, k }, res.shape_mnk)
                  else
                    assert.truthy(res:find("wgmma.mma_async forms", 1, true), res)
                  end
                end
              end
            end
          end
        end
      end
    end
    -- f16 (2 accumulators) + bf16 + tf32: 32 Ns each; fp8: 4 input pairs x 2
    -- accumulators x 32; int8: 4 pairs x 18
    assert.equal(32 * 4 + 4 * 2 * 32 + 4 * 18, valid)
    assert.is_true(checked > 20000)
  end)

  it("take MN-major operands only for 16-bit types, and RS only with a K-major A", function()
    for _, am in ipairs { K, MN } do
      for _, bm in ipairs { K, MN } do
        for _, src in ipairs { SMEM, RMEM } do
          local ok = pcall(wg.MmaF16BF16Op, cute.bf16, cute.f32, { 64, 64, 16 }, src, am, bm)
          assert.equal(not (src == RMEM and am == MN), ok)
          assert.equal(am == K and bm == K, (pcall(wg.MmaTF32Op, { 64, 64, 8 }, src, am, bm)))
          assert.equal(am == K and bm == K, (pcall(wg.MmaF8Op, cute.e4m3, cute.e5m2, cute.f32, { 64, 64, 32 }, src,
            am, bm)))
          assert.equal(am == K and bm == K, (pcall(wg.MmaI8Op, cute.u8, cute.i8, { 64, 64, 32 }, src, am, bm)))
        end
      end
    end
    -- names as strings, defaults K and SMEM
    local op = wg.MmaF16BF16Op(cute.f16, cute.f16, { 64, 256, 16 }, "rmem", "k", "mn")
    assert.equal(RMEM, op.a_src)
    assert.equal(MN, op.b_major)
    op = wg.MmaF16BF16Op(cute.f16, cute.f32, { 64, 8, 16 })
    assert.equal(SMEM, op.a_src)
    assert.equal(K, op.a_major)
    assert.equal("OperandMajorMode.MN", tostring(MN))
  end)

  it("refuse what the ISA lacks at the caller's line, saying why and listing the forms", function()
    raises(function() local r = wg.MmaF16BF16Op(cute.bf16, cute.f16, { 64, 64, 16 }); return r end,
      "there is no wgmma.mma_async with bf16 x bf16 -> f16 (bf16 inputs accumulate in f32)",
      "bf16 x bf16 -> f32: m64nNk16, N = 8..256 step 8; A and B K- or MN-major")
    raises(function() local r = wg.MmaI8Op(cute.i8, cute.i8, { 64, 40, 32 }); return r end,
      "m64n40k32 with i8 x i8 -> i32: N = 40 is not one of 8, 16, 24, 32, 48..256 step 16")
    raises(function() local r = wg.MmaF16BF16Op(cute.f16, cute.f32, { 64, 64, 8 }); return r end,
      "K is 16 for f16 inputs (32 bytes), not 8")
    raises(function() local r = wg.MmaTF32Op({ 128, 64, 8 }); return r end, "M is always 64, not 128")
    raises(function() local r = wg.MmaF8Op(cute.e4m3, cute.e4m3, cute.f32, { 64, 64, 32 }, SMEM, MN, K); return r end,
      "wgmma reads e4m3 operands K-major only (A is MN-major)")
    raises(function() local r = wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }, RMEM, MN, K); return r end,
      "A from registers (OperandSource.RMEM) is K-major only")
    raises(function() local r = wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }, "tmem"); return r end,
      "a_src: expected one of OperandSource.SMEM, OperandSource.RMEM, got tmem")
    raises(function() local r = wg.MmaF8Op(cute.i8, cute.e4m3, cute.f32, { 64, 64, 32 }); return r end,
      "takes e4m3/e5m2 x e4m3/e5m2 inputs, got i8 x e4m3")
    raises(function() local r = wg.MmaF16BF16Op(cute.bf16, cute.f32, 64); return r end,
      "the instruction shape is {64, N, 16}")
    raises(function() local r = wg.MmaF16BF16Op(cute.bf16); return r end, "the accumulator dtype is missing")
  end)
end)

describe("warpgroup MMA atoms", function()
  it("have the ISA's accumulator layout for every N", function()
    for n = 8, 256, 8 do
      local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, n, 16 }))
      assert.equal(128, atom.threads)
      assert.same({ a = 64 * 16, b = n * 16, c = n / 2 }, atom.values)
      assert.same({ a = 0, b = 0, c = n / 2 }, atom.regs)
      for t = 0, 127 do
        for i = 0, n / 2 - 1 do
          local m, nn = c_formula(t, i)
          assert.equal(m + 64 * nn, atom.tv_c({ t, i }))
        end
      end
    end
    -- f16 accumulators: the same values, two in each register
    local h = cute.make_mma_atom(wg.MmaF16BF16Op(cute.f16, cute.f16, { 64, 96, 16 }))
    assert.same({ a = 0, b = 0, c = 24 }, h.regs)
    assert.equal(tostring(cute.make_mma_atom(wg.MmaF16BF16Op(cute.f16, cute.f32, { 64, 96, 16 })).tv_c),
      tostring(h.tv_c))
  end)

  it("have the ISA's register A layouts (RS) for 16-bit, tf32 and 8-bit inputs", function()
    local cases = {
      { wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 32, 16 }, RMEM), 16, 16, 8 },
      { wg.MmaTF32Op({ 64, 32, 8 }, RMEM), 32, 8, 4 },
      { wg.MmaF8Op(cute.e4m3, cute.e5m2, cute.f16, { 64, 32, 32 }, RMEM), 8, 32, 16 },
      { wg.MmaI8Op(cute.u8, cute.i8, { 64, 32, 32 }, RMEM), 8, 32, 16 },
    }
    for _, c in ipairs(cases) do
      local atom = cute.make_mma_atom(c[1])
      local bits, kk, nv = c[2], c[3], c[4]
      assert.equal(nv, cute.size(atom.tv_a, 1))
      assert.equal(4, atom.regs.a)
      local seen = {}
      for t = 0, 127 do
        for v = 0, nv - 1 do
          local m, k = A_FORMULA[bits](t, v)
          local idx = atom.tv_a({ t, v })
          assert.equal(m + 64 * k, idx, string.format("%s thread %d value %d", tostring(atom), t, v))
          assert.is_nil(seen[idx])
          seen[idx] = true
        end
      end
      local count = 0
      for _ in pairs(seen) do count = count + 1 end
      assert.equal(64 * kk, count) -- every element of the 64 x K A tile once
    end
  end)

  it("describe operands in shared memory as held by the whole warpgroup", function()
    local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 128, 16 }, SMEM, MN, MN))
    for _, t in ipairs { 0, 37, 127 } do
      for _, v in ipairs { 0, 5, 64 * 16 - 1 } do assert.equal(v, atom.tv_a({ t, v })) end
      for _, v in ipairs { 0, 9, 128 * 16 - 1 } do assert.equal(v, atom.tv_b({ t, v })) end
    end
    assert.equal("wgmma", atom.ir.op)
    assert.equal("m64n128k16", atom.ir.shape)
    assert.equal("MmaAtom(m64n128k16 bf16 x bf16 -> f32, sm_90a)", tostring(atom))
    local i8 = cute.make_mma_atom(wg.MmaI8Op(cute.i8, cute.u8, { 64, 48, 32 }))
    assert.same({ "s8", "u8", "s32" }, { i8.ir.a, i8.ir.b, i8.ir.c })
  end)

  it("tile over several warpgroups along M and N", function()
    local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }, RMEM))
    local mma = cute.make_tiled_mma(atom, { 2, 1, 1 })
    assert.equal(256, mma.size)
    assert.same({ 128, 64, 16 }, mma:get_tile_size())
    assert.matches("warpgroups 2x1x1, tile 128x64x16, 256 threads", tostring(mma))
    -- C: thread t of warpgroup g holds what thread t % 128 holds, 64 g rows down
    local seen = {}
    for t = 0, 255 do
      for i = 0, 31 do
        local m, n = c_formula(t % 128, i)
        m = m + 64 * math.floor(t / 128)
        local idx = mma:tv_layout_C()({ t, i })
        assert.equal(m + 128 * n, idx)
        seen[idx] = true
      end
    end
    local count = 0
    for _ in pairs(seen) do count = count + 1 end
    assert.equal(128 * 64, count)
    -- A (registers): the same, per warpgroup
    for t = 0, 255, 7 do
      for v = 0, 7 do
        local m, k = A_FORMULA[16](t % 128, v)
        assert.equal(m + 64 * math.floor(t / 128) + 128 * k, mma:tv_layout_A()({ t, v }))
      end
    end
    -- along N with an SS atom: B split between the two warpgroups
    local ss = cute.make_tiled_mma(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }), { 1, 2, 1 })
    assert.same({ 64, 128, 16 }, ss:get_tile_size())
    assert.equal(0, ss:tv_layout_B()({ 5, 0 }))
    assert.equal(64, ss:tv_layout_B()({ 128 + 5, 0 }))
  end)

  it("draw with print_svg_mma", function()
    local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 8, 16 }, RMEM))
    local path = os.tmpname()
    cute.print_svg_mma(atom, path)
    local fh = io.open(path)
    local svg = fh:read("*a")
    fh:close()
    os.remove(path)
    assert.matches("^<%?xml", svg)
    assert.truthy(svg:find("A (M x K)", 1, true))
    local cells = 0
    for _ in svg:gmatch('class="cell"') do cells = cells + 1 end
    assert.equal(64 * 16 + 16 * 8 + 64 * 8, cells)
    -- C's cell (9, 3) is thread 4 * 8 + ... : row 9 = r + 8 with r = 1 (lane 4..7), column 3 = 2 c + 1 (c = 1)
    local t, v
    for tt = 0, 127 do
      for i = 0, 3 do
        local m, n = c_formula(tt, i)
        if m == 9 and n == 3 then t, v = tt, i end
      end
    end
    assert.truthy(svg:find(string.format('id="c%%-9%%-3"><rect[^>]*/><text[^>]*>T%dV%d<', t, v)), svg:sub(1, 300))
    local tiled = require("cute.atom").svg_mma(cute.make_tiled_mma(atom, { 2, 1, 1 }))
    assert.truthy(tiled:find("warpgroups 2x1x1", 1, true))
  end)

  it("are reachable as cute.nvgpu.warpgroup", function()
    assert.equal(wg, cute.nvgpu.warpgroup)
    assert.equal(require("cute.nvgpu.tma").CopyBulkTensorTileG2SOp, cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp)
    assert.is_function(cute.nvgpu.cpasync.CopyG2SOp)
    assert.is_nil(cute.nvgpu.cpasync.NoSuchOp)
  end)
end)
