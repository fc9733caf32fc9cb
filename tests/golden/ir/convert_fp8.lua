-- fp8 (e4m3, e5m2) conversions: sm_89 and newer; they saturate to finite values.
return {
  sm = 89,
  archs = { "sm_89", "sm_90a" },
  ptx = { "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32", "cvt.rn.f16x2.e4m3x2",
    "cvt.rn.f16x2.e5m2x2" },
  build = function(_, m)
    m:set_loc("convert_fp8.lua", 1, "fp8")
    local k = m:kernel("fp8")
    local x = k:param("f32")
    local p4 = k:param("ptr<e4m3, global, 1>")
    local p5 = k:param("ptr<e5m2, global, 1>")
    local of = k:param("ptr<f32, global, 4>")
    local q4 = k:op("cvt", "e4m3", x)
    local q5 = k:op("cvt", "e5m2", x)
    k:op("store", nil, p4, q4)
    k:op("store", nil, p5, q5)
    k:op("store", nil, of, k:op("cvt", "f32", k:op("load", nil, p4)))
    k:op("store", nil, k:op("gep", nil, of, k:const("i32", 1)), k:op("cvt", "f32", q5))
  end,
}
