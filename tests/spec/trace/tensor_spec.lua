-- Tensors in kernels: indexing through layouts, slicing, tiling, fragments,
-- shared memory, vectorised copies and predication.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("tracer tensors", function()
  it("indexes through the layout (row-major strides become index arithmetic)", function()
    local ir = H.ir(function(a)
      a[{ 1, 2 }] = 5
    end, { H.f32({ 64, 32 }, "row") })
    -- shape (?,?), stride (?,1): offset = 1 * stride0 + 2 (the multiply by 1 folds away)
    assert.matches("add %%4, %%%d+ : i32", ir)
    assert.matches("const 2 : i32", ir)
    assert.matches("store", ir)
  end)

  it("folds static layouts to constant offsets", function()
    local ir = H.ir(function(a)
      a[{ 3, 2 }] = 1
    end, { cute.static(H.f32({ 8, 4 })) })
    assert.matches("const 19 : i32", ir) -- 3 + 2 * 8
  end)

  it("slices with cute._", function()
    local ir = H.ir(function(a)
      local col = a[{ cute._, 3 }]
      col[5] = 1
      assert(cute.size(col) == 8)
    end, { cute.static(H.f32({ 8, 4 })) })
    assert.matches("const 24 : i32", ir) -- column 3 starts at 3 * 8
    assert.matches("const 5 : i32", ir)
  end)

  it("tiles and partitions like CuTe (offsets on the pointer)", function()
    local ir = H.ir(function(a)
      local tile = cute.local_tile(a, { 32, 16 }, { 1, 2 })        -- tile (1,2) of a 128x64 column-major tensor
      assert(tostring(tile.layout) == "(32,16):(1,128)")
      local part = cute.local_partition(tile, cute.make_layout({ 8, 4 }), 5) -- thread 5 of an 8x4 layout
      assert(tostring(part.layout) == "(4,4):(8,512)")
      part[0] = 1
    end, { cute.static(H.f32({ 128, 64 })) })
    -- tile (1,2) starts at 32 + 32 * 128 = 4128; thread 5's first element is 5 further (4133)
    assert.matches("const 4128 : i32", ir)
    assert.matches("const 5 : i32", ir)
  end)

  it("keeps register fragments in variables, indexed statically", function()
    local ir = H.ir(function(a)
      local f = cute.make_rmem_tensor(cute.make_layout({ 2, 3 }), cute.f32)
      f:fill(0)
      f[{ 1, 2 }] = 4
      a[0] = f[{ 1, 2 }] + f[0]
    end, { H.f32() })
    assert.matches("var.store %$%d+%[5%], %%%d+", ir)
    assert.matches("var.load %$%d+%[5%]", ir)
  end)

  it("copies with 16-byte vector accesses where layout and alignment allow", function()
    local ptx = H.ptx(function(a, b)
      local i = cute.thread_idx().x
      local src = cute.local_tile(a, { 8 }, { i })
      local frag = src:load()
      for j = 0, 7 do frag[j] = frag[j] * 2 end
      cute.local_tile(b, { 8 }, { i }):store(frag)
    end, { H.f32(4096), H.f32(4096) })
    assert.matches("ld.global.v4.f32", ptx)
    assert.matches("st.global.v4.f32", ptx)
  end)

  it("falls back to scalar accesses when the alignment is unknown", function()
    local ptx = H.ptx(function(a, b)
      local i = cute.thread_idx().x
      local frag = cute.local_tile(a, { 4 }, { i }):load()
      cute.local_tile(b, { 4 }, { i }):store(frag)
    end, { cute.fake_tensor(cute.f32, 4096, nil, { align = 4 }), H.f32(4096) })
    assert.is_nil(ptx:find("ld.global.v4", 1, true))
    assert.matches("st.global.v4.f32", ptx)
  end)

  it("allocates static and dynamic shared memory, with computed sizes", function()
    local h, k = H.compile(function(a)
      local s1 = cute.make_smem_tensor(cute.f32, cute.make_layout({ 64 }))
      local smem = cute.smem_allocator()
      local s2 = smem:tensor(cute.bf16, cute.make_layout({ 128, 64 }))
      local s3 = smem:tensor(cute.f32, cute.make_layout({ 16 }), 128)
      local i = cute.thread_idx().x
      s1[i] = 1
      s2[i] = s1[i]:to(cute.bf16)
      s3[i] = s2[i]:to(cute.f32)
      cute.sync_threads()
      a[i] = s3[i]
    end, { H.f32() })
    assert.matches("smem 256", h:ir())
    local spec = k:_specialise(1, H.f32())
    assert.equal(128 * 64 * 2 + 64, spec.dyn_smem)
  end)

  it("predicates with identity tensors", function()
    local ir = H.ir(function(a)
      local c = cute.make_identity_tensor({ 100, 50 })
      local coord = c[{ 3, 4 }]
      assert(type(coord) == "table" and coord[1] == 3 and coord[2] == 4)
      local i = cute.thread_idx().x
      local tc = cute.local_tile(c, { 32, 8 }, { i, 0 })
      local p = tc[{ 1, 1 }]
      a[0] = cute.where(cute.and_(p[1]:lt(100), p[2] < 50), a[1], 0)
    end, { H.f32() })
    assert.matches("icmp.slt", ir)
  end)

  it("says when a fragment would need a run-time size", function()
    local msg = H.error_of(function()
      H.ir(function(a) cute.make_rmem_tensor(a.layout, cute.f32) end, { H.f32() })
    end)
    assert.matches("register fragment needs a static layout", msg)
  end)
end)
