-- Errors about tensors inside a kernel name them as the user did: a kernel's
-- tensor argument by its parameter's name with the argument's shape and
-- dtype, a slice or tile of one as its layout and whose part it is.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local A = cute.fake_tensor(cute.f32, { 128, 64 })
local B = cute.fake_tensor(cute.f32, 16)

describe("tensor names in errors", function()
  it("name the argument of an index of the wrong rank by its parameter", function()
    local msg = H.error_at(function() H.ir(function(a, _) a[{ 1, 2, 3 }] = 1 end, { A, B }) end)
    assert.matches("indexing tensor 'a' (shape (128,64), f32) with 3 coordinates (1,2,3): it has rank 2, so give 2",
      msg, 1, true)
    msg = H.error_at(function() H.ir(function(_, weights) weights[{ 0, 0 }] = 1 end, { A, B }) end)
    assert.matches("indexing tensor 'weights' (shape 16, f32) with 2 coordinates", msg, 1, true)
    assert.is_nil(msg:find("value %", 1, true))
  end)

  it("name the argument of an index that is not one", function()
    local msg = H.error_at(function() H.ir(function(_, b) b[1.5] = 1 end, { A, B }) end)
    assert.matches("coordinate 1.5 is not a non-negative integer below 2^53 (indexing tensor 'b' (shape 16, f32))",
      msg, 1, true)
    msg = H.error_at(function() H.ir(function(_, b) b[cute.f32(1.5)] = 1 end, { A, B }) end)
    assert.matches("coordinate f32(1.5) is not an integer (indexing tensor 'b' (shape 16, f32))", msg, 1, true)
    msg = H.error_at(function() H.ir(function(a) a[{ 1, { 2, 3 } }] = 1 end, { cute.static(A) }) end)
    assert.matches("coordinate (2,3) does not match shape 64 (indexing tensor 'a' (shape (128,64), f32))", msg, 1,
      true)
    msg = H.error_at(function() H.ir(function(a) a[{ 1 }] = 1 end, { A }) end)
    assert.matches("indexing tensor 'a' (shape (128,64), f32) with 1 coordinate (1): it has rank 2", msg, 1, true)
    msg = H.error_at(function() H.ir(function(a) a.data = 1 end, { A }) end)
    assert.matches("tensor fields are read-only (data of tensor 'a' (shape (128,64), f32))", msg, 1, true)
  end)

  it("name the argument of an index out of bounds, with its static shape", function()
    local msg = H.error_at(function() H.ir(function(src) src[{ 1, 64 }] = 1 end, { cute.static(A) }) end)
    assert.matches("coordinate (1,64) is out of bounds of tensor 'src' (shape (128,64), f32): 64 is not in 0..63",
      msg, 1, true)
  end)

  it("name the argument a tile or slice comes from", function()
    local msg = H.error_at(function()
      H.ir(function(a) cute.local_tile(a, { 16, 16 }, { 1, 2 })[{ 1, 20 }] = 1 end, { cute.static(A) })
    end, 1)
    assert.matches("20 is not in 0..15", msg, 1, true)
    assert.matches("(16,16):(1,128) (a part of tensor 'a')", msg, 1, true)
    msg = H.error_at(function()
      H.ir(function(a) local col = a[{ cute._, 3 }]; col[{ 0, 0 }] = 1 end, { A })
    end, 1)
    assert.matches("a part of tensor 'a'", msg, 1, true)
    assert.matches("it has rank 1", msg, 1, true)
  end)

  it("name the tensor whose layout a tiling cannot take", function()
    local msg = H.error_at(function()
      H.ir(function(a) cute.local_tile(a, { 16, 16 }, { 1, 2, 3 }) end, { A })
    end, 1)
    assert.matches("local_tile: coordinate (1,2,3) does not match shape (?,?) (of tensor 'a' (shape (128,64), f32))",
      msg, 1, true)
    msg = H.error_at(function() H.ir(function(a) cute.local_partition(a, { 4, 4, 4 }, 0) end, { A }) end)
    assert.matches("of tensor 'a' (shape (128,64), f32)", msg, 1, true)
  end)

  it("name the tensor a slice or a whole-tensor operation cannot take", function()
    local msg = H.error_at(function() H.ir(function(_, b) b:slice({ 1, cute._ }) end, { A, B }) end)
    assert.matches("coordinate (1,_) does not match shape ? (of tensor 'b' (shape 16, f32))", msg, 1, true)
    msg = H.error_at(function() H.ir(function(a) a:fill(1) end, { A }) end)
    assert.matches("needs a tensor of static size, got tensor 'a' (shape (128,64), f32) of size ?", msg, 1, true)
  end)

  it("name both tensors of a copy whose sizes differ", function()
    local msg = H.error_at(function()
      H.ir(function(out, inp)
        local f = cute.make_fragment(cute.make_layout(4), cute.f32)
        cute.copy(inp, f)
        cute.copy(f, out)
      end, { B, cute.static(B) })
    end, 3)
    assert.matches("copy: sizes differ (16 vs 4): src is tensor 'inp' (shape 16, f32), dst is tensor<rmem f32>", msg,
      1, true)
  end)

  it("name the tensors of a copy with an atom, or what is not a tensor", function()
    local g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp("global"), cute.f32, { num_bits_per_copy = 128 })
    local msg = H.error_at(function()
      H.ir(function(src)
        cute.copy(g2s, src, cute.make_smem_tensor(cute.f32, cute.make_layout(8)))
      end, { cute.static(B) })
    end, 2)
    assert.matches("cute.copy: source and destination sizes differ: src is tensor 'src' (shape 16, f32), dst is "
      .. "tensor<shared f32> o 8:1", msg, 1, true)
    msg = H.error_at(function() H.ir(function(x) cute.copy(x, 3) end, { B }) end)
    assert.matches("copy(src, dst): tensors expected, got tensor 'x' (shape 16, f32) and the Lua number 3", msg, 1,
      true)
  end)

  it("name the tensor an MMA partition needs two modes of", function()
    local op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 })
    local mma = cute.make_tiled_mma(cute.make_mma_atom(op))
    local msg = H.error_at(function()
      H.ir(function(x) mma:get_slice(cute.thread_idx().x):partition_A(x) end, { B })
    end, 1)
    assert.matches("partition_A: expected a tensor of rank 2 or more (rows, cols[, ...]), got tensor 'x' "
      .. "(shape 16, f32)", msg, 1, true)
  end)
end)
