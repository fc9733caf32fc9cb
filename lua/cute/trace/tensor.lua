--- cute.trace.tensor: tensors inside kernels.
--
-- A tensor is an engine plus a layout (CuTe's Tensor = Engine o Layout):
--   "ptr"       a pointer value into global or shared memory (element offset
--               = layout(coordinate), address = pointer + offset)
--   "rmem"      a register fragment: a local variable array of cosize
--               elements, indexed statically (registers after optimisation)
--   "identity"  no storage: element c is the coordinate itself (predication)
--
-- Indexing: t[i] or t[{i, j}] reads an element (a value), t[c] = v writes
-- one; a coordinate containing cute._ keeps those modes and slices (a tensor).
-- Coordinates and offsets may mix Lua integers and run-time values; static
-- parts fold at trace time.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"
local is_any_layout = L.internal.is_any_layout
local LA = require "cute.layout_algebra"
local LT = require "cute.layout_tile"
local it = require "cute.int_tuple"
local arith = require "cute.arith"
local control = require "cute.trace.control"
local check = require "cute.trace.check"
local checked = check.access -- p, or a safe address in checked kernels

local M = {}

local is_value, type_of, emit = core.is_value, core.type_of, core.emit

local Tensor = { __name = "Tensor" }
local methods = {}
M.Tensor = Tensor

local function is_tensor(x) return getmetatable(x) == Tensor end
M.is_tensor = is_tensor

local function new(fields) return setmetatable(fields, Tensor) end
local describe, on_layout -- (below: a tensor in the user's terms; its layout's errors naming it)

-- ---------------------------------------------------------------------------
-- Construction

--- A tensor over a pointer value (global or shared memory) with a layout.
-- @param ptr a pointer value (global or shared memory)
-- @param layout a Layout, ComposedLayout or shape
-- @param dt optional: the element dtype (default: the pointer's)
-- @return a Tensor
-- @usage local t = cute.make_tensor(p, cute.make_layout({16, 16}))
function M.make_tensor(ptr, layout, dt)
  if is_value(ptr) and type_of(ptr).kind == "ptr" then
    local pt = type_of(ptr)
    dt = dt or pt.elem.dtype
    if not is_any_layout(layout) then layout = L.make_layout(layout) end
    return new { engine = "ptr", ptr = ptr, layout = layout, dtype = dt, space = pt.space, align = pt.align }
  end
  err.raise("make_tensor: expected a pointer value, got %s", core.describe(ptr))
end

local function static_cosize(layout, what)
  local ok, n = pcall(L.cosize, layout)
  if not ok or type(n) ~= "number" then
    err.raise("%s: a register fragment needs a static layout, got %s", what, tostring(layout))
  end
  return n
end

--- A register fragment of dtype dt with a layout or shape (CuTe DSL's
-- make_rmem_tensor; make_fragment is the same). Its elements are uninitialised.
-- @param layout_or_shape a static Layout or shape
-- @param dt the element dtype (cute.f32, ...)
-- @return a Tensor in registers
-- @usage local acc = cute.make_rmem_tensor({4, 4}, cute.f32)
function M.make_rmem_tensor(layout_or_shape, dt)
  local T = core.current()
  if not T then err.raise("make_rmem_tensor can only be used while tracing a kernel") end
  local layout = is_any_layout(layout_or_shape) and layout_or_shape or L.make_layout(layout_or_shape)
  dt = dtype.get(dt)
  local n = static_cosize(layout, "make_rmem_tensor")
  local t = core.scalar(dt)
  local var = core.ir().var_new(T.f, core.irtype(t), math.max(n, 1))
  if var == 0 then core.ir_error("make_rmem_tensor") end
  return new { engine = "rmem", var = var, base = 0, layout = layout, dtype = dt, space = "rmem", fid = T.fid,
    elem_type = t }
end
M.make_fragment = M.make_rmem_tensor

--- A register fragment with the shape of t (compact, column-major) and its dtype or dt.
-- @param t a Tensor
-- @param dt optional: the element dtype (default t's)
-- @return a Tensor in registers
-- @usage local frag = cute.make_fragment_like(tile)
function M.make_fragment_like(t, dt)
  local layout = is_tensor(t) and t.layout or t
  return M.make_rmem_tensor(L.make_layout(L.shape(layout)), dt or (is_tensor(t) and t.dtype))
end
M.make_rmem_tensor_like = M.make_fragment_like

--- A coordinate tensor: element c is c itself (for predication at the edges).
-- @param shape a shape (integers or values)
-- @return a Tensor of coordinates
-- @usage local coords = cute.make_identity_tensor({m, n})
function M.make_identity_tensor(shape)
  return new { engine = "identity", layout = L.make_identity_layout(shape), space = "none" }
end

-- ---------------------------------------------------------------------------
-- Element access

local function elem_bytes(t) return t.dtype.bytes end

-- The alignment (bytes) of ptr + offset elements: the pointer's, limited by
-- the power of two known to divide the offset in bytes (static offsets, and
-- run-time ones made of static strides, keep 16-byte vectors possible).
local function align_after(t, offset)
  local d = core.pow2_divisor(offset) + math.floor(math.log(elem_bytes(t)) / math.log(2) + 0.5)
  return math.max(1, math.min(t.align, 2 ^ math.min(d, 12)))
end

-- ptr + offset elements, as a pointer value with the alignment that is known.
local function address(t, offset, align)
  if arith.lit(offset, 0) and (not align or align == t.align) then return t.ptr end
  local pt = core.ptr(core.scalar(t.dtype), t.space, align or align_after(t, offset))
  if type(offset) == "number" then
    offset = core.const((math.abs(offset) >= 2 ^ 31) and core.i64 or core.i32, offset)
  end
  return emit("gep", pt, t.ptr, offset)
end

-- Static bounds: a static coordinate (or static leaves of one) outside a
-- static extent of the tensor's shape is an error at the user's line, for
-- every engine (a register fragment's variable would catch it too, shared
-- and global memory would not). A 1-D index is checked against the size of
-- the shape (or of the mode it indexes).
local static_size_of = setmetatable({}, { __mode = "k" }) -- shape -> its size, or false when not static

local function static_size(s)
  if type(s) == "number" then return s end
  if type(s) ~= "table" or not it.is_tuple(s) then return false end
  local n = static_size_of[s]
  if n ~= nil then return n end
  n = 1
  for i = 1, #s do
    local m = static_size(s[i])
    if not m then
      n = false
      break
    end
    n = n * m
  end
  static_size_of[s] = n
  return n
end

-- Checks the static parts of coordinate c against shape s; returns the
-- offending leaf and its extent, or nil.
local function find_oob(s, c)
  if type(c) == "number" then
    local n = static_size(s)
    if n and (c < 0 or c >= n) then return c, n end
    return nil
  end
  if type(c) == "table" and it.is_tuple(c) and type(s) == "table" and it.is_tuple(s) and #c == #s then
    for i = 1, #c do
      local bad, n = find_oob(s[i], c[i])
      if bad then return bad, n end
    end
  end
  return nil
end

local function check_bounds(t, c)
  local s = rawget(t.layout, "shape")
  if s == nil then return end
  local bad, n = find_oob(s, c)
  if bad then
    if type(c) == "table" then
      err.raise("coordinate %s is out of bounds of %s: %s is not in 0..%s, the extent of its mode", it.pretty_str(c),
        describe(t), arith.show(bad), arith.show(n - 1))
    end
    err.raise("index %s is out of bounds of %s, which has %s elements (0..%s)", arith.show(c), describe(t),
      arith.show(n), arith.show(n - 1))
  end
end

local function coord_offset(t, c)
  check_bounds(t, c)
  local ok, off = pcall(t.layout, c)
  if not ok then
    local shape = L.shape(t.layout)
    local rank = type(shape) == "table" and #shape or 1
    if it.is_tuple(c) and #c ~= rank then
      err.raise("indexing %s with %d coordinate%s %s: it has rank %d, so give %d (or one index, 0..size-1)",
        describe(t), #c, #c == 1 and "" or "s", it.pretty_str(c), rank, rank)
    end
    -- (the layout's message without its location and "calling <layout>: ")
    local why = tostring(off):gsub("^[^:]*:%d+: ", ""):gsub("^calling %S+: ", "")
    err.raise("%s (indexing %s)", why, describe(t))
  end
  return off
end

local function var_index(t, off)
  if type(off) == "number" then return off + t.base end
  return arith.add(off, t.base)
end

local function load_at(t, off)
  if t.engine == "ptr" then
    local p = checked(address(t, off), elem_bytes(t), "load")
    return emit("load", core.scalar(t.dtype), p, nil, nil, 0, 0, 0)
  elseif t.engine == "rmem" then
    local T = core.current()
    if T.fid ~= t.fid then err.raise("a register fragment is used outside the kernel that made it") end
    local i = var_index(t, off)
    core.update_loc()
    local ir = core.ir()
    local ref = type(i) == "number" and ir.var_load(T.f, t.var, i) or ir.var_loadx(T.f, t.var, core.use(i))
    if ref == 0 then core.ir_error("fragment read") end
    return core.value(ref, t.elem_type)
  end
  return off -- identity: the coordinate
end

local function store_at(t, off, v)
  if t.engine == "identity" then err.raise("an identity (coordinate) tensor cannot be written") end
  local et = core.scalar(t.dtype)
  if is_value(v) and type_of(v) ~= et then
    err.raise("storing a %s value into a %s tensor: convert it first with :to(cute.%s)", type_of(v).name,
      t.dtype.name, t.dtype.name)
  end
  v = core.coerce(v, et, "tensor store")
  if t.engine == "ptr" then
    emit("store", nil, checked(address(t, off), elem_bytes(t), "store"), v, nil, 0, 0, 0)
  else
    local T = core.current()
    if T.fid ~= t.fid then err.raise("a register fragment is used outside the kernel that made it") end
    local i = var_index(t, off)
    core.update_loc()
    local ir = core.ir()
    local r = type(i) == "number" and ir.var_store(T.f, t.var, i, core.use(v))
      or ir.var_storex(T.f, t.var, core.use(i), core.use(v))
    if r ~= 0 then core.ir_error("fragment write") end
  end
end

-- A sub-tensor at an element offset with a new layout.
local function with_offset(t, off, layout)
  if t.engine == "ptr" then
    local align = align_after(t, off)
    return new { engine = "ptr", ptr = address(t, off, align), layout = layout, dtype = t.dtype, space = t.space,
      align = align, of = t.name or t.of }
  elseif t.engine == "rmem" then
    if type(off) ~= "number" then
      err.raise("slicing a register fragment at a run-time position: fragments are indexed statically")
    end
    return new { engine = "rmem", var = t.var, base = t.base + off, layout = layout, dtype = t.dtype, space = "rmem",
      fid = t.fid, elem_type = t.elem_type, of = t.name or t.of }
  end
  -- identity: offsets are coordinates; compose the offset into the layout
  return new { engine = "identity", layout = layout, offset = off, space = "none", of = t.name or t.of }
end


local function has_underscore(c) return type(c) == "table" and it.has_underscore(c) end

-- Coordinates add mode by mode (identity tensors' offsets).
local function coord_add(a, b)
  if type(a) == "table" and type(b) == "table" then
    local out = {}
    for i = 1, math.max(#a, #b) do out[i] = coord_add(a[i] or 0, b[i] or 0) end
    return out
  end
  if type(a) == "table" then return coord_add(a, { b }) end
  if type(b) == "table" then return coord_add({ a }, b) end
  return arith.add(a, b)
end

Tensor.__index = function(t, k)
  local m = methods[k]
  if m then return m end
  if type(k) == "string" then
    if k == "shape" then return L.shape(t.layout) end
    if k == "stride" then return L.stride(t.layout) end
    return nil
  end
  if has_underscore(k) then return methods.slice(t, k) end
  local off = coord_offset(t, k)
  if t.engine == "identity" and t.offset then return coord_add(t.offset, off) end
  return load_at(t, off)
end

Tensor.__newindex = function(t, k, v)
  if type(k) == "string" then err.raise("tensor fields are read-only (%s of %s)", k, describe(t)) end
  store_at(t, coord_offset(t, k), v)
end

Tensor.__tostring = function(t)
  local what = t.engine == "ptr" and (t.space .. " " .. t.dtype.name)
    or (t.engine == "rmem" and ("rmem " .. t.dtype.name)) or "coordinates"
  return string.format("tensor<%s> o %s", what, tostring(t.layout))
end

-- A tensor in the user's terms, for error messages: a kernel argument by its
-- parameter's name, shape (the argument's, where the trace has run-time
-- extents) and dtype; a part of one (a slice, tile, partition) as itself and
-- whose part it is; any other as tostring shows it.
function describe(t)
  if t.name then
    return string.format("tensor '%s' (shape %s, %s)", t.name, it.pretty_str(t.arg_shape or L.shape(t.layout)),
      t.dtype.name)
  end
  if t.of then return string.format("%s (a part of tensor '%s')", tostring(t), t.of) end
  return tostring(t)
end
M.describe = describe
Tensor.__describe = describe -- (cute.trace.core's describe)

Tensor.__len = function(t) return L.size(t.layout) end

--- The sub-tensor kept by the cute._ modes of coordinate c.
-- @param t the Tensor
-- @param c a coordinate with cute._ in the modes kept
-- @return a Tensor
-- @usage local row = t:slice({i, cute._})  -- or t[{i, cute._}]
function methods.slice(t, c)
  check_bounds(t, c)
  local layout, off = on_layout(t, function(l) return L.slice_and_offset(c, l) end)
  return with_offset(t, off, layout)
end

--- The address of element c as a pointer value (for atomics, cp.async, ...).
-- @param t the Tensor (in global or shared memory)
-- @param c optional: the coordinate (default 0)
-- @return a pointer value
-- @usage cute.atomic_add(t:ptr_at(i), 1)
function methods.ptr_at(t, c)
  if t.engine ~= "ptr" then err.raise("ptr_at: only tensors in memory have addresses") end
  return address(t, coord_offset(t, c or 0))
end
methods.ptr = methods.ptr_at

--- A view with another layout over the same memory.
-- @param t the Tensor
-- @param layout the new Layout (its cosize within the memory)
-- @return a Tensor
-- @usage local flat = t:view(cute.make_layout(256))
function methods.view(t, layout)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  c.layout = layout
  c.name, c.arg_shape, c.of = nil, nil, t.name or t.of
  return new(c)
end

-- ---------------------------------------------------------------------------
-- Tiling and partitioning (CuTe's names, now on tensors)

-- fn(t.layout, ...), its errors naming the tensor t (in the user's terms).
function on_layout(t, fn, ...)
  local r = { pcall(fn, t.layout, ...) }
  if r[1] then return unpack(r, 2, table.maxn(r)) end
  if type(r[2]) ~= "string" then error(r[2], 0) end
  err.raise("%s (of %s)", (r[2]:gsub("^[^:]*:%d+: ", "")), describe(t))
end

local function apply(t, fn, ...)
  return with_offset(t, 0, on_layout(t, fn, ...))
end

--- local_tile(t, tiler, coord[, proj]): the tile at coord of t divided by the
-- tiler (CuTe's inner partition). proj (e.g. {1, cute.X, 1}) selects the modes
-- of tiler and coord that apply.
-- @param t a Tensor (or a Layout)
-- @param tiler the tile's shape (or a tiler of layouts)
-- @param coord the tile's coordinate in the grid of tiles
-- @param proj optional: a tuple of 1 and cute.X selecting modes of tiler and coord
-- @return a Tensor (a Layout for a Layout)
-- @usage local tile = cute.local_tile(a, {128, 32}, {cute.block_idx().x, cute._})
function M.local_tile(t, tiler, coord, proj)
  if not is_tensor(t) then return LT.local_tile(t, tiler, coord, proj) end
  local layout, off = on_layout(t, LT.local_tile, tiler, coord, proj)
  return with_offset(t, off, layout)
end

--- local_partition(t, thr_layout, index[, proj]): the elements of t that
-- thread `index` of the thread layout owns (CuTe's outer partition).
-- @param t a Tensor (or a Layout)
-- @param tile the thread layout
-- @param index the thread's index in it
-- @param proj optional: a tuple of 1 and cute.X selecting modes
-- @return a Tensor (a Layout for a Layout)
-- @usage local mine = cute.local_partition(tile, cute.make_layout({16, 8}), cute.thread_idx().x)
function M.local_partition(t, tile, index, proj)
  if not is_tensor(t) then return LT.local_partition(t, tile, index, proj) end
  local layout, off = on_layout(t, LT.local_partition, tile, index, proj)
  return with_offset(t, off, layout)
end

--- composition(t, B): the tensor (or layout) seen through the layout B: (t o B)(c) = t(B(c)).
-- @function composition
-- @param t a Tensor, Layout or ComposedLayout
-- @param ... B, a Layout, shape or tiler
-- @return the same kind as t
-- @usage local v = cute.composition(t, cute.make_layout({4, 8}, {8, 1}))

--- flat_divide(t, tiler): the tensor (or layout) as (tile modes..., rest modes...).
-- @function flat_divide
-- @param t a Tensor, Layout or ComposedLayout
-- @param ... the tiler
-- @return the same kind as t
-- @usage local z = cute.flat_divide(t, {16, 16})

--- tiled_divide(t, tiler): the tensor (or layout) as (tile, rest modes...).
-- @function tiled_divide
-- @param t a Tensor, Layout or ComposedLayout
-- @param ... the tiler
-- @return the same kind as t
-- @usage local z = cute.tiled_divide(t, {16, 16})

--- zipped_divide(t, tiler): the tensor (or layout) as (tile, rest), as cute.zipped_divide does to layouts.
-- @function zipped_divide
-- @param t a Tensor, Layout or ComposedLayout
-- @param ... the tiler
-- @return the same kind as t
-- @usage local z = cute.zipped_divide(t, {16, 16})

--- logical_divide(t, tiler): a tensor (or layout) divided by the tiler, as cute.logical_divide does to layouts.
-- @function logical_divide
-- @param t a Tensor, Layout or ComposedLayout
-- @param ... the tiler
-- @return the same kind as t
-- @usage local d = cute.logical_divide(t, cute.make_layout(4))

for _, name in ipairs { "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "composition" } do
  local f = name == "composition" and L.composition or LA[name]
  M[name] = function(t, ...)
    if is_tensor(t) then return apply(t, f, ...) end
    return f(t, ...)
  end
end

-- A tensor's layout: kernel-side tensors, and device tensors from the host.
local function layout_of(x)
  if type(x) ~= "table" then return nil end
  local l = rawget(x, "layout")
  if l and is_any_layout(l) and not is_any_layout(x) then return l end
  return nil
end

--- cosize(x, i, ...): L(size(L) - 1) + 1 of a tensor's or layout's layout L: the span of memory it addresses.
-- @function cosize
-- @param x a Tensor or Layout
-- @param ... an optional 0-based mode path
-- @return a number (or a value)
-- @usage cute.cosize(cute.make_layout({4, 8}, {1, 8}))  -- 60

--- stride(x, i, ...): the stride of a tensor or layout (of mode i, ...).
-- @function stride
-- @param x a Tensor or Layout
-- @param ... an optional 0-based mode path
-- @return an integer or tuple (values for run-time strides)
-- @usage local ld = cute.stride(t, 1)

--- shape(x, i, ...): the shape of a tensor or layout (of mode i, ...); a tuple is its own shape.
-- @function shape
-- @param x a Tensor, Layout or tuple
-- @param ... an optional 0-based mode path
-- @return an integer or tuple (values for run-time extents)
-- @usage local m = cute.shape(t, 0)

--- depth(x, i, ...): the nesting depth of a tensor's, layout's or tuple's shape (of mode i, ...).
-- @function depth
-- @param x a Tensor, Layout or tuple
-- @param ... an optional 0-based mode path
-- @return a number
-- @usage cute.depth(cute.make_layout({4, {2, 2}}))  -- 2

--- rank(x, i, ...): the number of top-level modes of a tensor, layout or tuple (of mode i, ...).
-- @function rank
-- @param x a Tensor, Layout or tuple
-- @param ... an optional 0-based mode path
-- @return a number
-- @usage cute.rank(cute.make_layout({4, 8}))  -- 2

--- size(x, i, ...): the number of elements of a tensor, layout or tuple (of mode i, ...).
-- @function size
-- @param x a Tensor (in a kernel, or a device tensor), Layout or tuple
-- @param ... an optional 0-based mode path
-- @return a number (or a value, for run-time extents)
-- @usage local n = cute.size(t)

for _, name in ipairs { "size", "rank", "depth", "shape", "stride", "cosize" } do
  M[name] = function(x, ...)
    local l = layout_of(x)
    if l then return L[name](l, ...) end
    return L[name](x, ...)
  end
end

-- ---------------------------------------------------------------------------
-- Whole-tensor operations: fill, copy, load/store with vectorisation

-- Calls f(c, i) for every 1-D index i (0-based) of the tensor, unrolled.
local function each(t, f)
  local n = L.size(t.layout)
  if type(n) ~= "number" then
    err.raise("this operation needs a tensor of static size, got %s of size %s; loop with cute.range instead",
      describe(t), arith.show(n))
  end
  for i = 0, n - 1 do f(i) end
  return n
end

--- Sets every element to v (unrolled; the tensor's size must be static).
-- @param t the Tensor
-- @param v the value (a traced value or Lua number)
-- @return t (for chaining)
-- @usage acc:fill(0)
function methods.fill(t, v)
  each(t, function(i) t[i] = v end)
  return t
end

-- The number of elements at the start of a tensor's coordinate order that are
-- contiguous in memory with a static count: the extent of the first mode of
-- the coalesced layout when its stride is 1 (register fragments and identity
-- tensors: any width).
local function contiguous_prefix(t)
  if t.engine ~= "ptr" then return math.huge end
  local ok, flat = pcall(L.coalesce, t.layout)
  if not ok then return 1 end
  local s, d = flat.shape, flat.stride
  if type(s) == "table" then s, d = s[1], d[1] end
  if d ~= 1 or type(s) ~= "number" then return 1 end
  return s
end

-- The vector width (elements, a power of two, at most 16 bytes) that moves
-- src into dst: within both tensors' contiguous prefixes, dividing the size,
-- and with every vector start aligned to the vector's bytes in the tensors
-- in memory (static offsets, or run-time ones with known divisors).
local function vector_width(src, dst, n)
  local bytes = (src.dtype or dst.dtype).bytes
  local w = math.floor(16 / bytes)
  local limit = math.min(contiguous_prefix(src), contiguous_prefix(dst))
  while w > 1 and (w > limit or n % w ~= 0 or limit % w ~= 0) do w = w / 2 end
  local function aligned(t)
    if t.engine ~= "ptr" then return true end
    for base = 0, n - 1, w do
      if align_after(t, coord_offset(t, base)) < w * bytes then return false end
    end
    return true
  end
  while w > 1 and not (aligned(src) and aligned(dst)) do w = w / 2 end
  return math.max(1, w)
end

-- Elements base .. base + w - 1 of a register fragment as one vector (or,
-- given vec, written from one): when they are consecutive elements of its
-- variable, a single var.loadv / var.storev, which keeps 16-bit elements in
-- whole 32-bit words. nil when they are not.
local function var_vector(t, base, w, vec)
  if t.engine ~= "rmem" then return nil end
  local first = coord_offset(t, base)
  if type(first) ~= "number" then return nil end
  for j = 1, w - 1 do
    if coord_offset(t, base + j) ~= first + j then return nil end
  end
  local T = core.current()
  if T.fid ~= t.fid then err.raise("a register fragment is used outside the kernel that made it") end
  core.update_loc()
  local ir = core.ir()
  if vec then
    if ir.var_storev(T.f, t.var, first + t.base, core.use(vec)) ~= 0 then core.ir_error("fragment write") end
    return true
  end
  local ref = ir.var_loadv(T.f, t.var, first + t.base, w)
  if ref == 0 then core.ir_error("fragment read") end
  return core.value(ref, core.vec(t.dtype, w))
end

--- Copies src into dst elementwise (same size, statically known), with vector
-- accesses of up to 16 bytes where both layouts are contiguous and aligned.
-- pred: optional bool-valued tensor or function(i) -> bool value selecting the
-- elements to copy (predicated elements are left alone).
function M.copy(src, dst, pred)
  if not (is_tensor(src) and is_tensor(dst)) then
    err.raise("copy(src, dst): tensors expected, got %s and %s", core.describe(src), core.describe(dst))
  end
  local n = L.size(src.layout)
  if n ~= L.size(dst.layout) then
    err.raise("copy: sizes differ (%s vs %s): src is %s, dst is %s", arith.show(n), arith.show(L.size(dst.layout)),
      describe(src), describe(dst))
  end
  if type(n) ~= "number" then
    err.raise("copy: the size must be static (got %s); copy a tile at a time", arith.show(n))
  end
  if src.engine == "ptr" and dst.engine == "ptr" then
    err.raise("copy: memory to memory needs registers in between (or a copy atom); copy through a fragment")
  end
  local function convert(v)
    if dst.engine ~= "identity" and src.dtype ~= dst.dtype then return ops.to(v, dst.dtype) end
    return v
  end
  if pred then
    for i = 0, n - 1 do
      local p = type(pred) == "function" and pred(i) or pred[i]
      control.if_(p, function() dst[i] = convert(src[i]) end)
    end
    return dst
  end
  local w = (src.dtype == dst.dtype) and vector_width(src, dst, n) or 1
  if w == 1 then
    for i = 0, n - 1 do dst[i] = convert(src[i]) end
    return dst
  end
  local vt = core.vec(src.dtype, w)
  local et = core.scalar(src.dtype)
  local vbytes = w * src.dtype.bytes
  for base = 0, n - 1, w do
    local vals
    if src.engine == "ptr" then
      local p = address(src, coord_offset(src, base), vbytes)
      local vp = checked(emit("ptrcast", core.ptr(vt, src.space, vbytes), p), vbytes, "vector load")
      local vec = emit("load", vt, vp, nil, nil, 0, 0, 0)
      if dst.engine == "ptr" then
        vals = vec
      elseif not var_vector(dst, base, w, vec) then
        for j = 0, w - 1 do dst[base + j] = emit("extract", et, vec, nil, nil, j) end
      end
    end
    if dst.engine == "ptr" then
      if not vals then vals = var_vector(src, base, w) end
      if not vals then
        local list = {}
        for j = 0, w - 1 do list[j + 1] = src[base + j] end
        vals = core.emitn("pack", vt, list)
      end
      local p = address(dst, coord_offset(dst, base), vbytes)
      emit("store", nil, checked(emit("ptrcast", core.ptr(vt, dst.space, vbytes), p), vbytes, "vector store"), vals,
        nil, 0, 0, 0)
    end
  end
  return dst
end

--- A register fragment holding the tensor's elements (vectorised loads).
-- @param t the Tensor
-- @return a Tensor in registers
-- @usage local frag = tile:load()
function methods.load(t)
  local frag = M.make_fragment_like(t)
  M.copy(t, frag)
  return frag
end

--- Writes a fragment (or any tensor of the same size) into this tensor.
-- @param t the Tensor written
-- @param src the Tensor read (the same size)
-- @return t (for chaining)
-- @usage tile:store(frag)
function methods.store(t, src)
  M.copy(src, t)
  return t
end

-- ---------------------------------------------------------------------------
-- Shared memory

-- The elements a layout's storage spans: its cosize; for a ComposedLayout
-- (swizzle o offset o layout), the outer layout's cosize plus the offset,
-- rounded up to the swizzle's span so every swizzled offset stays inside.
local function storage_size(layout, what)
  local n
  if L.is_layout(layout) then
    n = L.cosize(layout)
  else
    n = L.cosize(layout.outer)
    if type(n) == "number" and type(layout.offset) == "number" then n = n + layout.offset end
    local sw = layout.inner
    if type(sw) == "table" and sw.bits then
      local span = 2 ^ (sw.bits + sw.base + math.abs(sw.shift))
      if type(n) == "number" then n = math.ceil(n / span) * span end
    elseif L.is_layout(sw) then
      n = L.cosize(sw)
    end
  end
  if type(n) ~= "number" then err.raise("%s needs a static layout, got %s", what, tostring(layout)) end
  return n
end

-- Shared memory a block may have (static plus dynamic), as the IR's
-- verifier counts it: 227 KiB (sm_90; smaller GPUs have less, which ptxas
-- and the launch report).
local SMEM_LIMIT = 232448

-- Raises unless static and dyn bytes (what the kernel has after an
-- allocation of `bytes`) fit a block.
local function check_smem(static, dyn, bytes, what)
  if static + dyn > SMEM_LIMIT then
    err.raise("%s of %d bytes brings the kernel's shared memory to %d bytes (%d static, %d dynamic); a block has at "
      .. "most %d (227 KiB)", what, bytes, static + dyn, static, dyn, SMEM_LIMIT)
  end
end

--- A static shared-memory tensor of dtype dt with a layout (or a
-- ComposedLayout carrying a swizzle), aligned to `align` bytes (default 128).
-- @param dt the element dtype
-- @param layout a static Layout, ComposedLayout or shape
-- @param align optional: the alignment in bytes (default 128)
-- @return a Tensor in shared memory
-- @usage local s = cute.make_smem_tensor(cute.f32, cute.make_layout({32, 33}))
function M.make_smem_tensor(dt, layout, align)
  local T = core.current()
  if not T then err.raise("shared memory can only be allocated while tracing a kernel") end
  dt = dtype.get(dt)
  if not is_any_layout(layout) then layout = L.make_layout(layout) end
  local n = storage_size(layout, "a shared memory tensor")
  align = align or 128
  check_smem(T.smem_bytes + n * dt.bytes, T.dyn_smem or 0, n * dt.bytes, "a shared memory tensor")
  local pt = core.ptr(core.scalar(dt), "shared", align)
  local p = emit("smem", pt, nil, nil, nil, n * dt.bytes, align)
  check.note_smem(T, p, n * dt.bytes)
  T.smem_bytes = T.smem_bytes + n * dt.bytes
  return new { engine = "ptr", ptr = p, layout = layout, dtype = dt, space = "shared", align = align }
end

--- Carves tensors out of the kernel's dynamic shared memory; the launch's
-- dynamic smem size is computed from what was carved (not typed by hand).
--   local smem = cute.smem_allocator()
--   local sA = smem:tensor(cute.bf16, layout_a, 128)
-- @return an allocator (smem:tensor(dtype, layout[, align]), smem:reuse(...))
-- @usage local smem = cute.smem_allocator()
function M.smem_allocator()
  local T = core.current()
  if not T then err.raise("shared memory can only be allocated while tracing a kernel") end
  if T.dyn_smem_alloc then return T.dyn_smem_alloc end
  local a = { offset = 0, T = T }
  function a.tensor(self, dt, layout, align)
    dt = dtype.get(dt)
    if not is_any_layout(layout) then layout = L.make_layout(layout) end
    local n = storage_size(layout, "a shared memory tensor")
    align = align or 128
    self.offset = math.ceil(self.offset / align) * align
    check_smem(T.smem_bytes, math.max(T.dyn_smem or 0, self.offset + n * dt.bytes), n * dt.bytes,
      "a dynamic shared memory tensor")
    if not self.base then
      self.base = emit("smem.dyn", core.ptr(core.scalar(dtype.u8), "shared", 1024), nil, nil, nil, 1024)
    end
    local byte_ptr = self.offset == 0 and self.base
      or emit("gep", core.ptr(core.scalar(dtype.u8), "shared", align), self.base, core.const(core.i32, self.offset))
    local p = emit("ptrcast", core.ptr(core.scalar(dt), "shared", align), byte_ptr)
    self.offset = self.offset + n * dt.bytes
    T.dyn_smem = math.max(T.dyn_smem or 0, self.offset)
    return new { engine = "ptr", ptr = p, layout = layout, dtype = dt, space = "shared", align = align }
  end
  --- A tensor over memory already carved, from byte_offset (default 0): a
  -- pipeline's stages reused after its last stage is read, say. The caller
  -- synchronises the threads between the two uses.
  function a.reuse(self, dt, layout, byte_offset)
    dt = dtype.get(dt)
    byte_offset = byte_offset or 0
    if not is_any_layout(layout) then layout = L.make_layout(layout) end
    local n = storage_size(layout, "a shared memory tensor")
    if not self.base or byte_offset < 0 or byte_offset + n * dt.bytes > self.offset then
      err.raise("smem:reuse: %d bytes from byte %d, but %d bytes of shared memory are carved", n * dt.bytes,
        byte_offset, self.offset)
    end
    local align = 1024
    while byte_offset % align ~= 0 do align = align / 2 end
    align = math.max(align, dt.bytes)
    local byte_ptr = byte_offset == 0 and self.base
      or emit("gep", core.ptr(core.scalar(dtype.u8), "shared", align), self.base, core.const(core.i32, byte_offset))
    local p = emit("ptrcast", core.ptr(core.scalar(dt), "shared", align), byte_ptr)
    return new { engine = "ptr", ptr = p, layout = layout, dtype = dt, space = "shared", align = align }
  end
  T.dyn_smem_alloc = a
  return a
end

--- An optimisation barrier on a register fragment: what was computed from
-- its elements before this point is recomputed from them after it, rather
-- than kept live across (LLVM would otherwise reuse, say, the f32 values of a
-- bf16 row converted before a block reduction, and hold 32 registers where
-- the packed row needs 16). Values are unchanged; no instruction results.
-- @param t a register fragment (Tensor)
-- @return t
-- @usage cute.opaque(row)
function M.opaque(t)
  if not is_tensor(t) or t.engine ~= "rmem" then
    err.raise("cute.opaque: expected a register fragment, got %s", core.describe(t))
  end
  local T = core.current()
  if not T or T.fid ~= t.fid then err.raise("cute.opaque: the fragment belongs to another kernel or function") end
  core.update_loc()
  if core.ir().var_opaque(T.f, t.var) ~= 0 then core.ir_error("cute.opaque") end
  return t
end

-- For cute.trace.atom and cute.trace.partition ------------------------------------

--- What the tracer's atom modules build on; not for users (no argument checks).
M.internal = {
  address = address, -- address(t, offset[, align]): the pointer value of element offset of a tensor in memory
  coord_offset = coord_offset, -- coord_offset(t, c): the element offset of coordinate c (bounds checked)
  with_offset = with_offset, -- with_offset(t, offset, layout): the sub-tensor at an element offset
  var_vector = var_vector, -- var_vector(t, base, w[, vec]): w elements of a fragment as one vector (read or write)
}

return M
