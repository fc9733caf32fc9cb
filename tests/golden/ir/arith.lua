-- Integer and float arithmetic, min/max, fma, comparisons, select, bit operations
-- and shifts, on scalars and vectors; every result is stored so nothing is dead.
return {
  sm = 80,
  ptx = { "mul.hi.s32", "mul.hi.u32", "popc.b32", "clz.b32", "brev.b32", "prmt.b32", "fma.rn.f32", "min.f32",
    "max.s32", "min.u32", "abs.s32", "selp", "shr.s32", "shr.u32", "fma.rn.f64", "add.f16", "div.s32", "div.u32",
    "mul.hi.u64", "mul.f16x2" },
  build = function(_, m)
    m:set_loc("arith.lua", 1, "arith")
    local k = m:kernel("arith", { maxntid = 128 })
    local a, b = k:param("i32"), k:param("i32")
    local x, y = k:param("f32"), k:param("f32")
    local d = k:param("f64")
    local h = k:param("f16")
    local L = k:param("i64")
    local oi = k:param("ptr<i32, global, 4>")
    local of = k:param("ptr<f32, global, 4>")
    local od = k:param("ptr<f64, global, 8>")
    local oh = k:param("ptr<f16, global, 2>")
    local ol = k:param("ptr<i64, global, 8>")
    local ov = k:param("ptr<<4 x i32>, global, 16>")
    local n = 0
    local function sink(ptr, v)
      k:op("store", nil, k:op("gep", nil, ptr, k:const("i32", n)), v)
      n = n + 1
    end
    m:set_loc("arith.lua", 2, "arith")
    for _, op in ipairs { "add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "smulhi", "umulhi", "smin", "smax",
      "umin", "umax", "and", "or", "xor", "shl", "lshr", "ashr" } do
      sink(oi, k:op(op, nil, a, b))
    end
    for _, op in ipairs { "neg", "not", "abs", "popc", "clz", "brev" } do sink(oi, k:op(op, nil, a)) end
    sink(oi, k:op("prmt", nil, a, b, k:const("i32", 0x3210)))
    sink(oi, k:op("select", nil, k:op("icmp", nil, a, b, { "ult" }), a, b))
    sink(ol, k:op("umulhi", nil, L, L))
    sink(oi, k:op("popc", nil, L))
    m:set_loc("arith.lua", 3, "arith")
    for _, op in ipairs { "add", "sub", "mul", "fdiv", "fmin", "fmax" } do sink(of, k:op(op, nil, x, y)) end
    sink(of, k:op("neg", nil, x))
    sink(of, k:op("abs", nil, x))
    sink(of, k:op("fma", nil, x, y, x))
    sink(of, k:op("fdiv", nil, x, y, { { "fast" } }))
    sink(of, k:op("select", nil, k:op("fcmp", nil, x, y, { "olt" }), x, y))
    sink(of, k:op("select", nil, k:op("fcmp", nil, x, y, { "uno" }), y, x))
    sink(od, k:op("fma", nil, d, d, d))
    sink(od, k:op("fmax", nil, d, d))
    sink(od, k:op("neg", nil, d))
    sink(oh, k:op("add", nil, h, h))
    sink(oh, k:op("mul", nil, k:op("neg", nil, h), h))
    m:set_loc("arith.lua", 4, "arith")
    -- vectors: arithmetic, min, compares and select work lane by lane
    local va = k:op("pack", "<4 x i32>", a, b, a, b)
    local vb = k:op("pack", "<4 x i32>", b, b, a, a)
    local s = k:op("add", nil, k:op("mul", nil, va, vb), va)
    s = k:op("smin", nil, s, k:op("not", nil, vb))
    s = k:op("select", nil, k:op("icmp", nil, s, va, { "sgt" }), s, k:op("neg", nil, va))
    sink(ov, s)
    -- float vectors: arithmetic, fma, negation, compares and select lane by lane
    local ofv = k:param("ptr<<2 x f32>, global, 8>")
    local fa = k:op("pack", "<2 x f32>", x, y)
    local fb = k:op("pack", "<2 x f32>", y, x)
    local fs = k:op("fma", nil, fa, fb, k:op("neg", nil, fa))
    fs = k:op("select", nil, k:op("fcmp", nil, fs, fb, { "ogt" }), fs, k:op("fdiv", nil, fa, fb))
    k:op("store", nil, ofv, k:op("sub", nil, fs, fa))
    local hv = k:op("pack", "<2 x f16>", h, h)
    k:op("store", nil, k:op("ptrcast", "ptr<<2 x f16>, global, 4>", oh), k:op("mul", nil, hv, hv))
  end,
}
