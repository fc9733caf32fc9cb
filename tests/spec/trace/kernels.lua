-- The kernels of the tracer's GPU specs (gpu_spec.lua), in one place so that
-- compile_spec.lua can also compile each of them without a GPU.
local cute = require "cute"

local K = {}

function K.divmod()
  return cute.kernel("divmod", function(a, b, q, r)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(cute.size(a)), function()
      q[i] = a[i] / b[i]
      r[i] = a[i] % b[i]
    end)
  end)
end

function K.convert()
  return cute.kernel("convert", function(x, h, b, e)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(cute.size(x)), function()
      h[i] = x[i]:to(cute.f16)
      b[i] = x[i]:to(cute.bf16)
      e[i] = x[i]:to(cute.e4m3)
    end)
  end)
end

function K.loops()
  return cute.kernel("loops", function(a, out, lim)
    local t = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(t:ge(cute.size(out)), function() cute.return_() end)
    local acc = cute.var(cute.f32, 0)
    for j in cute.range(t, cute.size(a)) do
      cute.if_(j:band(1):eq(1), function() cute.continue_() end) -- odd indices skipped
      cute.if_(j:ge(t + lim), function() cute.break_() end)
      acc.value = acc.value + a[j]
    end
    local steps = cute.var(cute.i32, 0)
    cute.while_(function() return steps.value:lt(t:band(7)) end, function() steps.value = steps.value + 1 end)
    out[t] = acc.value + steps.value:to(cute.f32)
  end)
end

function K.reduce()
  return cute.kernel("reduce", function(a, out)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    local v = a[i]
    v = cute.warp_reduce_shuffle(v, function(x, y) return x + y end)
    cute.if_(cute.lane_idx():eq(0), function() cute.atomic_add(out:ptr_at(0), v) end)
  end)
end

function K.reverse()
  return cute.kernel("reverse", function(a, b)
    local s = cute.make_smem_tensor(cute.f32, cute.make_layout({ 256 }))
    local t = cute.thread_idx().x
    local base = cute.block_idx().x * 256
    s[t] = a[base + t]
    cute.sync_threads()
    b[base + t] = s[255 - t]
  end)
end

function K.tilecopy(M, N)
  return cute.kernel("tilecopy", function(a, b)
    local bx, by = cute.block_idx().x, cute.block_idx().y
    local tile_a = cute.local_tile(a, { 32, 8 }, { bx, by })
    local tile_b = cute.local_tile(b, { 32, 8 }, { bx, by })
    local coords = cute.local_tile(cute.make_identity_tensor({ M, N }), { 32, 8 }, { bx, by })
    local t = cute.thread_idx().x
    for j = 0, 7 do
      local c = coords[{ t, j }]
      cute.if_(cute.and_(c[1]:lt(M), c[2]:lt(N)), function() tile_b[{ t, j }] = tile_a[{ t, j }] * 2 end)
    end
  end)
end

function K.usefunc()
  local poly = cute.func(function(x) return x * x * 3 + x * 2 + 1 end, { name = "poly" })
  return cute.kernel("usefunc", function(a, b)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    b[i] = poly(a[i]) + poly(a[i] * 2)
  end)
end

--- Arguments to compile each kernel with (fake tensors), by name.
function K.fake_args()
  local f = cute.fake_tensor
  return {
    divmod = { K.divmod, f(cute.i32, 100), f(cute.i32, 100), f(cute.i32, 100), f(cute.i32, 100) },
    convert = { K.convert, f(cute.f32, 100), f(cute.f16, 100), f(cute.bf16, 100), f(cute.e4m3, 100) },
    loops = { K.loops, f(cute.f32, 100), f(cute.f32, 100), cute.i32(3) },
    reduce = { K.reduce, f(cute.i32, 100), f(cute.i32, 1) },
    reverse = { K.reverse, f(cute.f32, 512), f(cute.f32, 512) },
    tilecopy = { function() return K.tilecopy(333, 190) end, f(cute.f32, { 333, 190 }), f(cute.f32, { 333, 190 }) },
    usefunc = { K.usefunc, f(cute.f64, 1024), f(cute.f64, 1024) },
  }
end

return K
