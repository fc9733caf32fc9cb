-- Math: accurate (libdevice, linked by the driver) and fast (PTX approximations)
-- for f32, accurate for f64.
return {
  sm = 80,
  ptx = { "ex2.approx.f32", "lg2.approx.f32", "rsqrt.approx.f32", "sqrt.approx.f32", "sin.approx.f32",
    "cos.approx.f32", "tanh.approx.f32", "rcp.approx.f32", "sqrt.rn.f32", "rcp.rn.f64", "rcp.rn.f32" },
  no_ptx = { "__nv_" },
  build = function(_, m)
    m:set_loc("math.lua", 1, "math")
    local k = m:kernel("math")
    local x, d = k:param("f32"), k:param("f64")
    local of = k:param("ptr<f32, global, 4>")
    local od = k:param("ptr<f64, global, 8>")
    local n = 0
    local function sink(ptr, v)
      k:op("store", nil, k:op("gep", nil, ptr, k:const("i32", n)), v)
      n = n + 1
    end
    local ops = { "sqrt", "rsqrt", "rcp", "exp2", "log2", "exp", "log", "sin", "cos", "tanh", "erf", "floor", "ceil" }
    for i, op in ipairs(ops) do
      m:set_loc("math.lua", 10 + i, "math")
      sink(of, k:op(op, nil, x))
      sink(of, k:op(op, nil, x, { { "fast" } }))
      sink(od, k:op(op, nil, d))
    end
  end,
}
