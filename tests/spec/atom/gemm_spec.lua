-- cute.gemm (cute.lib.gemm): the tensor-core GEMM on device tensors. Its
-- kernels compile without spills for every operand order and dtype; on the
-- GPU, random shapes (odd ones included) against a float64 reference with
-- fresh random inputs and a poisoned output.
local cute = require "cute"
local G = require "cute.lib.gemm"

local function fake(dt, r, c, major)
  local l = major == "row" and cute.make_layout({ r, c, 1 }, { c, 1, r * c }) or cute.make_layout({ r, c, 1 })
  return cute.fake_tensor(dt, { r, c, 1 }, l)
end

-- C (m x n x l) against alpha A @ B + beta hold in float64, every element;
-- tol scales the sum of the products' magnitudes (and of beta's term). A NaN
-- (the poison) is an element that was not written. Coordinate order: (i, j, b)
-- of an r x c x l tensor is i + r j + r c b.
local function check(A, B, C, m, n, k, l, o)
  local alpha, beta, hold = o.alpha or 1, o.beta or 0, o.hold
  local a, b, got = A:to_host():doubles(), B:to_host():doubles(), C:to_host():doubles()
  for bb = 0, l - 1 do
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local ref, mag = 0, 0
        for kk = 0, k - 1 do
          local p = a[i + m * kk + m * k * bb] * b[kk + k * j + k * n * bb]
          ref, mag = ref + p, mag + math.abs(p)
        end
        local ci = i + m * j + m * n * bb
        ref = alpha * ref
        if hold then ref = ref + beta * hold[ci] end
        local g = got[ci]
        if g ~= g or math.abs(g - ref) > o.tol * (alpha * math.max(mag, 1) + (hold and 4 * beta or 0)) then
          error(string.format("%s: C[%d,%d,%d] = %.9g, expected %.9g", o.what, i, j, bb, g, ref))
        end
      end
    end
  end
end

describe("cute.gemm", function()
  it("plans ragged problems without spilling (a K that is no multiple of the k-tile)", function()
    for _, shape in ipairs { { 4097, 4095, 63 }, { 1000, 3000, 77 }, { 300, 200, 129 } } do
      local m, n, k = shape[1], shape[2], shape[3]
      for _, ord in ipairs { { "row", "row" }, { "row", "col" }, { "col", "row" }, { "col", "col" } } do
        local p = G.plan(fake(cute.bf16, m, k, ord[1]), fake(cute.bf16, k, n, ord[2]), fake(cute.bf16, m, n, "row"))
        local r = p.kernel:with({ arch = "sm_90a" }):compile(unpack(p.args)):resources()[1]
        assert.equal(0, r.spill_stores, string.format("%dx%dx%d %s/%s: %d registers", m, n, k, ord[1], ord[2],
          r.registers))
      end
    end
  end)

  -- issue 18: the sm_80 plan of this problem (gemm_bf16_128x128x32, a K that is
  -- no multiple of the k-tile) spilled 4 bytes at 255 registers while the copies
  -- past the last k-tile were predicated off; the plan skips them by a branch
  it("plans bf16 4097x4095x63 for sm_80 without spilling (compiled for sm_80)", function()
    local p = G.plan(fake(cute.bf16, 4097, 63, "row"), fake(cute.bf16, 63, 4095, "row"),
      fake(cute.bf16, 4097, 4095, "row"), { arch = "sm_80" })
    assert.equal("gemm_bf16_128x128x32", p.kernel.name)
    assert.is_true(p.config.copy_branch)
    local r = p.kernel:with({ arch = "sm_80" }):compile(unpack(p.args)):resources()[1]
    assert.is_true(r.registers <= 255)
    assert.equal(0, r.spill_stores, string.format("%d registers, %d bytes spilled", r.registers, r.spill_stores))
    assert.equal(0, r.spill_loads)
    assert.equal(0, r.stack)
    -- the cause: element-wise copies (rows not 4-byte aligned) held in registers
    -- between the MMAs; an even K with an unaligned B row sat at the cap (255)
    p = G.plan(fake(cute.bf16, 4096, 64, "row"), fake(cute.bf16, 64, 4095, "row"), nil, { arch = "sm_80" })
    assert.equal(1, p.config.b_vec)
    assert.is_true(p.config.copy_branch)
    r = p.kernel:with({ arch = "sm_80" }):compile(unpack(p.args)):resources()[1]
    assert.equal(0, r.spill_stores)
    assert.is_true(r.registers < 250, r.registers .. " registers")
    -- aligned rows keep the branch-free loop
    p = G.plan(fake(cute.bf16, 4096, 64, "row"), fake(cute.bf16, 64, 4096, "row"), nil, { arch = "sm_80" })
    assert.is_nil(p.config.copy_branch)
  end)

  it("compiles its kernels for every dtype and operand order without spilling", function()
    for _, dt in ipairs { "bf16", "f16", "tf32", "i8" } do
      for _, majors in ipairs { { "k", "k" }, { "mn", "mn" }, { "k", "mn" } } do
        for _, even in ipairs { true, false } do
          local base = G.pick(4096, 4096, 4096, cute.dtype.get(dt == "tf32" and "f32" or dt))
          local cfg = { a_dtype = dt, acc_dtype = dt == "i8" and "i32" or "f32", a_major = majors[1],
            b_major = majors[2], a_vec = dt == "i8" and 16 or (dt == "tf32" and 4 or 8), group = 8, even = even,
            beta = not even }
          cfg.b_vec = cfg.a_vec
          for k, v in pairs(base) do cfg[k] = v end
          local store = dt == "tf32" and cute.f32 or cute.dtype.get(dt)
          local A = fake(store, 4096, 4096, majors[1] == "k" and "row" or "col")
          local B = fake(store, 4096, 4096, majors[2] == "k" and "row" or "col")
          local C = fake(dt == "i8" and cute.i32 or cute.f32, 4096, 4096, "row")
          local h = G.kernel(cfg):compile(A, B, C, cute.f32(1), cute.f32(1))
          local r = h:resources()[1]
          assert.equal(0, r.spill_stores, dt .. " " .. majors[1] .. majors[2])
          local ptx = h:ptx()
          assert.matches("mma%.sync%.aligned", ptx)
          assert.matches("cp%.async", ptx)
          if dt == "bf16" or dt == "f16" then assert.matches("ldmatrix", ptx) end
        end
      end
    end
  end)

  it("runs on HMMA, LDSM and LDGSTS without local memory (SASS, where nvdisasm exists) #gpu", function()
    local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
      group = 8, even = true, beta = false }
    for k, v in pairs(G.CONFIGS.large16) do cfg[k] = v end
    local h = G.kernel(cfg):compile(fake(cute.bf16, 4096, 4096, "row"), fake(cute.bf16, 4096, 4096, "col"),
      fake(cute.bf16, 4096, 4096, "row"), cute.f32(1), cute.f32(0))
    local ok, sass = pcall(h.sass, h)
    if not ok then
      pending("no nvdisasm or cuobjdump here: " .. tostring(sass):match("^[^\n]*"))
      return
    end
    assert.matches("HMMA%.16816%.F32%.BF16", sass)
    assert.matches("LDSM%.16%.M88%.4", sass)
    assert.matches("LDSM%.16%.MT88%.4", sass)
    assert.matches("LDGSTS%.E%.BYPASS[%.%w]*%.128", sass)
    assert.is_nil(sass:find("LDL", 1, true), "local memory loads")
    assert.is_nil(sass:find("STL", 1, true), "local memory stores")
  end)

  it("refuses operands it cannot multiply, saying why", function()
    local ok, msg = pcall(G.gemm, cute.fake_tensor(cute.bf16, { 64, 32 }), cute.fake_tensor(cute.bf16, { 48, 16 }))
    assert.is_false(ok)
    assert.matches("A is 64x32 and B is 48x16: the inner extents differ", msg)
    ok, msg = pcall(G.gemm, cute.fake_tensor(cute.bf16, { 64, 32 }), cute.fake_tensor(cute.f16, { 32, 16 }))
    assert.is_false(ok)
    assert.matches("A is bf16 and B is f16", msg)
    ok, msg = pcall(G.gemm, cute.fake_tensor(cute.f64, { 64, 32 }), cute.fake_tensor(cute.f64, { 32, 16 }))
    assert.is_false(ok)
    assert.matches("no tensor%-core GEMM for f64", msg)
  end)

  it("multiplies random shapes of every dtype and operand order on the GPU #gpu", function()
    local shapes = { { 77, 130, 45, 1 }, { 128, 256, 64, 1 }, { 300, 200, 129, 1 }, { 65, 33, 40, 3 },
      { 128, 128, 256, 2 }, { 1, 9, 17, 1 } }
    local cases = {
      { dt = cute.bf16, tol = 2 ^ -8, out = cute.bf16 }, { dt = cute.f16, tol = 1e-5, out = cute.f32 },
      { dt = cute.f32, tol = 2 ^ -9, out = cute.f32 }, { dt = cute.i8, tol = 0, out = cute.i32 },
    }
    local orders = { { "row", "row" }, { "col", "col" }, { "row", "col" }, { "col", "row" } }
    local seed = 700
    for ci, c in ipairs(cases) do
      for si, sh in ipairs(shapes) do
        local m, n, k, l = sh[1], sh[2], sh[3], sh[4]
        local majors = orders[(ci + si) % 4 + 1]
        seed = seed + 1
        local function make(dt, r, cc, major)
          local layout
          if major == "row" then
            layout = l > 1 and cute.make_layout({ r, cc, l }, { cc, 1, r * cc })
              or cute.make_layout({ r, cc }, { cc, 1 })
          else
            layout = cute.make_layout(l > 1 and { r, cc, l } or { r, cc })
          end
          return cute.tensor(dt, layout)
        end
        local A, B = make(c.dt, m, k, majors[1]), make(c.dt, k, n, majors[2])
        if c.dt.is_integer then A:uniform(-8, 8, seed); B:uniform(-8, 8, seed + 1) else
          A:uniform(-1, 1, seed); B:uniform(-1, 1, seed + 1)
        end
        local C = make(c.out, m, n, "row")
        local alpha = c.dt.is_integer and 2 or 1.5 -- integer GEMMs take integer alpha and beta
        local beta = (si % 2 == 0) and (c.dt.is_integer and 3 or 0.5) or 0
        local hold
        if beta ~= 0 then
          C:uniform(-4, 4, seed + 2)
          hold = C:to_host():doubles()
        else
          C:fill(c.out.is_integer and 12345 or 0 / 0) -- poisoned: every element must be written
        end
        cute.gemm(A, B, C, { alpha = alpha, beta = beta })
        check(A, B, C, m, n, k, l, { tol = c.tol, alpha = alpha, beta = beta, hold = hold,
          what = string.format("%s %dx%dx%d (x%d) A %s B %s beta %g", c.dt.name, m, n, k, l, majors[1], majors[2],
            beta) })
        A:free(); B:free(); C:free()
      end
    end
  end)

  it("gives the same results with each main-loop knob #gpu", function()
    -- copies past the last k-tile skipped by a branch, k-blocks loaded one at
    -- a time (16 warps), two CTAs an SM; even and uneven shapes, every element
    -- against float64 (fresh random inputs, C poisoned)
    local function large(o)
      local c = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4 }
      for key, v in pairs(o) do c[key] = v end
      return c
    end
    local two = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 4, frag_buffers = 1, min_blocks = 2 }
    for i, case in ipairs {
      { m = 256, n = 512, k = 320, cfg = large { copy_branch = true } },
      { m = 200, n = 300, k = 100, cfg = large { copy_branch = true } },
      { m = 256, n = 512, k = 256, cfg = large { wm = 4, frag_buffers = 1 } },
      { m = 384, n = 256, k = 96, cfg = two },
      { m = 130, n = 70, k = 50, cfg = two },
    } do
      local m, n, k = case.m, case.n, case.k
      local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 950 + i)
      local B = cute.tensor(cute.bf16, { k, n }, "row"):uniform(-1, 1, 960 + i)
      local C = cute.tensor(cute.f32, { m, n }, "row"):fill(0 / 0)
      cute.gemm(A, B, C, { config = case.cfg })
      check(A, B, C, m, n, k, 1, { tol = 1e-5, what = string.format("knobs case %d, %dx%dx%d", i, m, n, k) })
      A:free(); B:free(); C:free()
    end
  end)

  it("runs persistent CTAs over more tiles than SMs, and in batches #gpu", function()
    -- more tiles a matrix than the GPU has SMs: each CTA (at most one an SM)
    -- takes tiles in turn, its copies running ahead into the next tile; every
    -- element is checked against float64 (fresh random inputs, C poisoned)
    local sms = cute.device_info().sm_count
    for _, case in ipairs {
      { m = 2048, n = 1280, k = 64, l = 1, cfg = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2 } },
      { m = 1024, n = 640, k = 96, l = 2, cfg = { bm = 64, bn = 64, bk = 32, stages = 3, wm = 2, wn = 2 } },
    } do
      local m, n, k, l, cfg = case.m, case.n, case.k, case.l, case.cfg
      cfg.persistent = true
      local A = cute.tensor(cute.bf16, cute.make_layout({ m, k, l }, { k, 1, m * k })):uniform(-1, 1, 901)
      local B = cute.tensor(cute.bf16, cute.make_layout({ k, n, l }, { n, 1, k * n })):uniform(-1, 1, 902)
      local C = cute.tensor(cute.bf16, cute.make_layout({ m, n, l }, { n, 1, m * n })):fill(0 / 0)
      local plan = G.plan(A, B, C, { config = cfg })
      local tiles = (m / cfg.bm) * (n / cfg.bn)
      assert.is_true(plan.config.persistent)
      assert.equal(math.min(tiles, sms), plan.grid[1])
      assert.is_true(tiles > sms, "the case must give some CTA more than one tile")
      cute.gemm(A, B, C, { config = cfg })
      check(A, B, C, m, n, k, l, { tol = 2 ^ -8, what = string.format("persistent, %dx%d tiles", cfg.bm, cfg.bn) })
      A:free(); B:free(); C:free()
    end
  end)
end)
