-- Kernels in plain Lua (the preprocessor, cute.pre): each construct on
-- run-time values traced to the IR expected, the same PTX as the explicit
-- form of the same kernel, mixed plain and run-time decisions, carried
-- locals, and errors at the user's line. Compile only: no GPU needed.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local function f32(n) return cute.fake_tensor(cute.f32, n or 1024) end

-- The PTX of a kernel, with the kernel's name made the same.
local function ptx(fn, args, opts)
  local k = cute.kernel("same_name", fn, opts)
  return k:compile(unpack(args)):ptx()
end

-- PTX without its comments and the header that names the file
local function code(p) return (p:gsub("//[^\n]*", ""):gsub("%.file[^\n]*", "")) end

describe("plain Lua kernels", function()
  it("make an `if` on a comparison of run-time values a run-time if", function()
    local ir = H.ir(function(a, b, c)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      if i < cute.size(c) then c[i] = a[i] + b[i] end
    end, { f32(), f32(), f32() })
    assert.matches("icmp%.slt", ir)
    assert.matches("if %%%d+ {", ir)
    assert.equal(1, H.count(ir, "store "))
  end)

  it("compile the vector add to the same PTX as its explicit form", function()
    local args = { f32(), f32(), f32() }
    local plain = ptx(function(a, b, c)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      if i < cute.size(c) then c[i] = a[i] + b[i] end
    end, args)
    local explicit = ptx(function(a, b, c)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      cute.if_(i:lt(cute.size(c)), function() c[i] = a[i] + b[i] end)
    end, args, { preprocess = false })
    assert.equal(code(explicit), code(plain))
  end)

  it("compile a loop with a carried sum and a masked add to the same PTX as the explicit form", function()
    local args = { f32(), f32(), f32(), cute.i32(100) }
    local plain = ptx(function(x, y, out, n)
      local acc = 0.0
      for k = 0, n - 1 do
        if x[k] ~= 0 and y[k] > 0 then acc = acc + x[k] * y[k] end
      end
      out[0] = acc
    end, args)
    local explicit = ptx(function(x, y, out, n)
      local acc = cute.var(cute.f32, 0)
      for k in cute.range(n) do
        cute.if_(cute.and_(x[k]:ne(0), y[k]:gt(0)), function() acc.value = acc.value + x[k] * y[k] end)
      end
      out[0] = acc.value
    end, args, { preprocess = false })
    assert.equal(code(explicit), code(plain))
  end)

  it("make while loops with run-time conditions run-time loops, the counter carried in a variable", function()
    local ir = H.ir(function(a, n)
      local i = 0
      while i < n do
        a[i] = 1
        i = i + 2
      end
      a[0] = i:to(cute.f32)
    end, { f32(), cute.i32(9) })
    assert.matches("while {", ir)
    assert.matches("var%.store", ir)
    assert.matches("\n%s*%%%d+ = var%.load %$%d+%[0%] : i32", ir)
  end)

  it("make break, goto continue and return run-time ones inside run-time regions", function()
    local ir = H.ir(function(a, n)
      local s = 0.0
      for k = 0, n - 1 do
        if a[k] < 0 then break end
        if a[k] == 0 then goto continue end
        s = s + a[k]
        if s > 100 then return end
        ::continue::
      end
      a[0] = s
    end, { f32(), cute.i32(9) })
    assert.matches("break", ir)
    assert.matches("continue", ir)
    assert.matches("\n%s*ret ", ir)
    -- the sum is stored into the loop's variable before the break leaves
    assert.matches("var%.store %$%d+%[0%], %%%d+[^\n]*\n%s*break", ir)
  end)

  it("run a repeat loop with a run-time `until`: the first iteration as written, then a run-time loop", function()
    local ir = H.ir(function(a, n)
      local i = 0
      repeat
        a[i] = 1
        i = i + 1
      until i >= n
      a[0] = i:to(cute.f32)
    end, { f32(), cute.i32(5) })
    assert.matches("^[^\n]*\n[^{]*store [^\n]*\n", ir) -- the first iteration's store, before any loop
    assert.matches("while {", ir)
    assert.matches("icmp%.sge", ir)
    assert.matches("\n%s*%$%d+: i1", ir) -- the condition's variable
  end)

  it("give back the shared memory that a probe carves", function()
    local k = cute.kernel(function(a, n)
      local s = 0.0 -- a Lua number carried into the loop: the loop is traced twice
      for i = 0, n - 1 do
        local t = cute.smem_allocator():tensor(cute.f32, 256)
        local st = cute.make_smem_tensor(cute.f32, 128)
        t[i] = a[i]
        st[i] = a[i]
        s = s + t[i] + st[i]
      end
      a[0] = s
    end)
    local spec = k:_specialise(2, f32(), cute.i32(5))
    assert.equal(1024, spec.dyn_smem)
    assert.equal(512, spec.static_smem)
  end)

  it("run `for i in cute.range(n)` with carried locals", function()
    local ir = H.ir(function(a, n)
      local s = 0.0
      for k in cute.range(n, { unroll = 2 }) do s = s + a[k] end
      a[0] = s
    end, { f32(), cute.i32(9) })
    assert.matches("unroll 2 {", ir)
    assert.matches("var%.load", ir)
    -- and a Lua break in it is a run-time break, the sum stored first
    ir = H.ir(function(a, n)
      local s = 0.0
      for k in cute.range(n) do
        s = s + a[k]
        if s > 10 then break end
      end
      a[0] = s
    end, { f32(), cute.i32(9) })
    assert.matches("var%.store %$%d+%[0%], %%%d+[^\n]*\n%s*break", ir)
  end)

  it("decide Lua conditions and bounds when tracing: plain loops unroll, ifs pick code", function()
    local ir = H.ir(function(a, n)
      local stages = 3
      for s = 1, 4 do
        if stages > 2 and s % 2 == 0 then a[s] = s end
      end
      if n > 0 then a[0] = 1 end -- run-time
    end, { f32(), cute.i32(9) })
    assert.equal(3, H.count(ir, "store "))
    assert.equal(1, H.count(ir, "if "))
    assert.is_nil(ir:find("for ", 1, true))
  end)

  it("nest loops with carried values, the inner one's sum added to the outer one's", function()
    local ir = H.ir(function(a, n, m)
      local acc = 0.0
      for i = 0, n - 1 do
        local row = 0.0
        for j = 0, m - 1 do row = row + a[i * m + j] end
        acc = acc + row
      end
      a[0] = acc
    end, { f32(), cute.i32(4), cute.i32(8) })
    assert.is_true(H.count(ir, "for ") >= 2)
    assert.matches("var%.load", ir)
    local ptx_text = H.ptx(function(a, n, m)
      local acc = 0.0
      for i = 0, n - 1 do
        local row = 0.0
        for j = 0, m - 1 do row = row + a[i * m + j] end
        acc = acc + row
      end
      a[0] = acc
    end, { f32(), cute.i32(4), cute.i32(8) })
    assert.matches("add%.f32", ptx_text)
  end)

  it("merge a local after an if/elseif/else, typed by its values", function()
    local body = function(a)
      local i = cute.thread_idx().x
      local v = 0.0
      if i < 10 then v = 1.0 elseif i < 20 then v = a[1] else v = v + 3.5 end
      a[i] = v
    end
    local ir = H.ir(body, { f32() })
    assert.matches("\n%s*%$%d+: f32", ir)
    assert.matches("%%%d+ = var%.load %$%d+%[0%] : f32[^\n]*\n%s*%%%d+ = gep[^\n]*\n%s*store ", ir)
    -- the same kernel with the branches written with cute.if_ and a variable
    local explicit = function(a)
      local i = cute.thread_idx().x
      local v = cute.var(cute.f32, 0)
      cute.if_(i:lt(10), function() v.value = 1 end, function()
        cute.if_(i:lt(20), function() v.value = a[1] end, function() v.value = v.value + 3.5 end)
      end)
      a[i] = v.value
    end
    local n_plain = H.count(code(ptx(body, { f32() })), "\n")
    local n_explicit = H.count(code(ptx(explicit, { f32() }, { preprocess = false })), "\n")
    assert.is_true(n_plain <= n_explicit + 4, n_plain .. " lines of PTX against " .. n_explicit)
  end)

  it("choose with `c and x or y` (cute.where) and combine conditions with and/or/not", function()
    local ir = H.ir(function(a, n)
      local i = cute.thread_idx().x
      local neg = a[i] < 0
      a[i] = (i < n and not neg) and a[i] or 0
    end, { f32(), cute.i32(9) })
    assert.matches("select", ir)
    assert.matches("xor", ir)
  end)

  it("force run-time loops and unrolled ones: cute.dynamic, cute.range_constexpr", function()
    local ir = H.ir(function(a)
      for i = 0, cute.dynamic(7) do a[i] = 1 end
      for i in cute.range_constexpr(3) do a[i] = 2 end
    end, { f32() })
    assert.equal(1, H.count(ir, "for "))
    assert.equal(4, H.count(ir, "store "))
  end)

  it("preprocess helpers that ask (cute.preprocess), not others", function()
    local clamp = cute.preprocess(function(x, hi)
      local r = x
      if x > hi then r = hi end
      return r
    end)
    local ir = H.ir(function(a, n) a[0] = clamp(a[1], n:to(cute.f32)) end, { f32(), cute.i32(5) })
    assert.matches("fcmp%.ogt", ir)
    assert.is_nil(ir:find("\n%s*ret"))
    -- an early return from a run-time if cannot leave an inlined function: an error, not a kernel return
    local early = cute.preprocess(function(x, hi)
      if x > hi then return hi end
      return x
    end)
    local msg = H.error_of(function()
      H.ir(function(a, n) a[0] = early(a[1], n:to(cute.f32)) end, { f32(), cute.i32(5) })
    end)
    assert.matches("would leave a Lua function that runs inside the kernel's code %(inlined%): make it a cute.func",
      msg)
    msg = H.error_at(function()
      H.ir(function(a, n)
        local function pick(x) if x > 0 then return 1 end return 2 end
        a[0] = pick(n)
      end, { f32(), cute.i32(5) })
    end, 2)
    assert.matches("`return` inside the if at line %d+", msg)
    local function plain(x, hi) return x > hi end
    msg = H.error_of(function()
      H.ir(function(a) a[0] = plain(a[1], 2) and 1 or 0 end, { f32() })
    end)
    assert.matches("decides at compile time", msg)
  end)

  it("preprocess device functions (cute.func) too", function()
    local absf = cute.func(function(x)
      if x < 0 then return -x end
      return x
    end, { ret = cute.f32 })
    local ir = H.ir(function(a) a[0] = absf(a[1]) end, { f32() })
    assert.matches("fcmp%.olt", ir)
    assert.equal(2, H.count(ir, "ret %"))
  end)

  it("show the rewritten source, every line where the user wrote it", function()
    local line = debug.getinfo(1, "l").currentline
    local k = cute.kernel(function(a, n)
      if n > 0 then
        a[0] = 1
      end
    end)
    local src = k:source()
    local lines = {}
    for l in (src .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.matches("__cute_R%.if_%(", lines[line + 2])
    assert.matches("a%[0%] = 1", lines[line + 3])
    assert.is_nil(cute.kernel(function() end, { preprocess = false }):source())
  end)

  it("keep the user's lines in the IR", function()
    local ir = H.ir(function(a, n)
      local s = 0.0
      for k = 0, n - 1 do
        s = s + a[k]
      end
      a[0] = s
    end, { f32(), cute.i32(3) })
    local line = debug.getinfo(1, "l").currentline
    assert.matches("%= add %%%d+, %%%d+ : f32 *; [^\n]*kernels_spec%.lua:" .. (line - 4), ir)
  end)

  it("compile cute.lib.transpose (plain Lua, preprocess = true) to the PTX of its explicit form", function()
    local T = require "cute.lib.transpose"
    assert.matches("__cute_R%.if_%(", T.kernel32:source())
    local TILE, ROWS = T.TILE, T.ROWS
    local explicit = cute.kernel("transpose", function(a, b)
      local Mr, Nc = a.layout.shape[1], a.layout.shape[2]
      local smem_layout = cute.make_composed_layout(cute.Swizzle(5, 0, 5), 0,
        cute.make_layout({ TILE, TILE }, { TILE, 1 }))
      local s = cute.make_smem_tensor(a.dtype, smem_layout, 128)
      local tx, ty = cute.thread_idx().x, cute.thread_idx().y
      local bx, by = cute.block_idx().x, cute.block_idx().y
      local r0, c0 = by * TILE, bx * TILE
      local full = cute.and_((r0 + TILE):le(Mr), (c0 + TILE):le(Nc))
      local ta = cute.local_tile(a, { TILE, TILE }, { by, bx })
      local tb = cute.local_tile(b, { TILE, TILE }, { bx, by })
      cute.if_(full, function()
        for j = 0, TILE - 1, ROWS do s[{ ty + j, tx }] = ta[{ ty + j, tx }] end
        cute.sync_threads()
        for j = 0, TILE - 1, ROWS do tb[{ ty + j, tx }] = s[{ tx, ty + j }] end
      end, function()
        for j = 0, TILE - 1, ROWS do
          cute.if_(cute.and_((r0 + ty + j):lt(Mr), (c0 + tx):lt(Nc)), function()
            s[{ ty + j, tx }] = ta[{ ty + j, tx }]
          end)
        end
        cute.sync_threads()
        for j = 0, TILE - 1, ROWS do
          cute.if_(cute.and_((c0 + ty + j):lt(Nc), (r0 + tx):lt(Mr)), function()
            tb[{ ty + j, tx }] = s[{ tx, ty + j }]
          end)
        end
      end)
    end, { preprocess = false })
    local a = cute.fake_tensor(cute.bf16, { 1000, 700 }, cute.make_layout({ 1000, 700 }, { 700, 1 }))
    local b = cute.fake_tensor(cute.bf16, { 700, 1000 }, cute.make_layout({ 700, 1000 }, { 1000, 1 }))
    local opts = { arch = "sm_80", cache = false, trace_key = false }
    assert.equal(code(explicit:with(opts):compile(a, b):ptx()), code(T.kernel32:with(opts):compile(a, b):ptx()))
  end)

  describe("errors", function()
    it("a local whose branches disagree in type, at the if's line", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          local x = 0
          if n > 3 then x = a[0] else x = n + x end
          a[1] = x
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("local 'x' is an f32 value in one branch of the if at line %d+ and an i32 value in another", msg)
    end)

    it("a local that is an i32 before a loop and an f32 in it", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          local x = n
          for k = 0, n - 1 do x = a[k] end
          a[1] = x:to(cute.f32)
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("local 'x' is an i32 value before the for loop at line %d+ and an f32 value in it", msg)
    end)

    it("a goto out of a region, at the goto's line", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          for i = 0, n - 1 do
            if a[i] > 2 then goto done end
          end
          ::done::
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("goto done jumps out of a loop or if", msg)
    end)

    it("a break from a run-time if out of a loop that runs when tracing", function()
      local msg = H.error_at(function()
        H.ir(function(a)
          for i = 0, 3 do
            if a[i] > 2 then break end
          end
        end, { f32() })
      end, 3)
      assert.matches("`break` inside the if at line %d+, which is decided on the GPU", msg)
    end)

    it("a run-time value that is no bool as a condition", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          if n then a[0] = 1 end
        end, { f32(), cute.i32(5) })
      end, 2)
      assert.matches("is an i32 value, which Lua takes as true", msg)
    end)

    it("`c and x` without `or y`, and `not` on a number value", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          local v = n > 3 and a[0]
          a[1] = v + 1
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("give the `or y`", msg)
      msg = H.error_at(function()
        H.ir(function(a, n)
          if not n then a[0] = 1 end
        end, { f32(), cute.i32(5) })
      end, 2)
      assert.matches("`not x` on an i32 value is false to Lua", msg)
    end)

    it("a local nil before an if and set in some branches only (set in all: fine)", function()
      local ir = H.ir(function(a, n)
        local w
        if n > 3 then w = a[0] elseif n > 1 then w = 2 else w = a[1] * 2 end
        a[2] = w
      end, { f32(), cute.i32(5) })
      assert.matches("\n%s*%$%d+: f32", ir)
      local msg = H.error_at(function()
        H.ir(function(a, n)
          local w
          if n > 3 then w = a[0] end
          a[2] = w
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("local 'w' is nil before the if at line %d+ and set in some of its branches only", msg)
    end)

    it("an error inside a probe leaves the next trace as it would be", function()
      local body = function(a, n)
        local s = 0.0 -- a Lua number carried into a run-time loop: a probe
        for k = 0, n - 1 do s = s + a[k] end
        a[0] = s
      end
      local before = H.ir(body, { f32(), cute.i32(5) })
      H.error_of(function()
        H.ir(function(a, n)
          local s = 0.0
          for k = 0, n - 1 do s = s + a[k] + a.nothing.x end
          a[0] = s
        end, { f32(), cute.i32(5) })
      end)
      assert.equal(before:gsub("@k%d+", ""), (H.ir(body, { f32(), cute.i32(5) }):gsub("@k%d+", "")))
    end)

    it("a local first set inside a run-time loop", function()
      local msg = H.error_at(function()
        H.ir(function(a, n)
          local last
          for i = 0, n - 1 do last = i end
          a[0] = last:to(cute.f32)
        end, { f32(), cute.i32(5) })
      end, 3)
      assert.matches("local 'last' is set to an i32 value in the for loop", msg)
    end)
  end)
end)
