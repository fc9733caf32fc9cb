--- cute.trace.sync: the thread hierarchy, barriers, warp collectives,
-- atomics, device printf and assertions.
--
--   cute.thread_idx().x, cute.block_idx().y, cute.block_dim().x, cute.grid_dim()
--   cute.lane_idx(), cute.warp_idx(), cute.cluster_idx(), cute.block_rank_in_cluster()
--   cute.sync_threads(), cute.barrier(id, count), cute.sync_warp(mask)
--   cute.shuffle(v, lane), cute.shuffle_down(v, delta), cute.shuffle_xor(v, mask)
--   cute.vote_all(p), cute.vote_any(p), cute.ballot(p), cute.warp_reduce(v, "add")
--   cute.atomic_add(ptr, v), cute.atomic_max, ..., cute.atomic_cas(ptr, cmp, v)
--   cute.printf("x=%d y=%f\n", x, y), cute.assert_(cond, "message")
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local dtype = require "cute.dtype"
local err = require "cute._err"
local control = require "cute.trace.control"
local check = require "cute.trace.check"

local M = {}

local emit, imm, is_value, type_of = core.emit, ops.imm, core.is_value, core.type_of

local function sreg(name) return emit("sreg", core.i32, nil, nil, nil, imm("G", name)) end

local function no_trace(what)
  err.raise("%s can only be used while tracing a kernel (inside the function given to cute.kernel or cute.func)",
    what)
end

-- {x, y, z} of three special registers, read lazily (only the axes used emit code)
local function dim3(prefix, fname)
  return setmetatable({}, {
    __index = function(t, k)
      if k ~= "x" and k ~= "y" and k ~= "z" then err.raise("%s has fields x, y and z, not %s", fname, tostring(k)) end
      if not core.current() then no_trace(fname .. "." .. k) end
      local v = sreg(prefix .. "." .. k)
      rawset(t, k, v)
      return v
    end,
  })
end

--- The thread's index in its block: {x, y, z} of i32 values (PTX %tid).
-- @return a table with fields x, y and z (each read when first used)
-- @usage local i = cute.thread_idx().x
function M.thread_idx() return dim3("tid", "cute.thread_idx()") end
--- The block's index in the grid: {x, y, z} of i32 values (PTX %ctaid).
-- @return a table with fields x, y and z
-- @usage local row = cute.block_idx().y
function M.block_idx() return dim3("ctaid", "cute.block_idx()") end
--- The block's size in threads: {x, y, z} of i32 values (PTX %ntid).
-- @return a table with fields x, y and z
-- @usage local stride = cute.block_dim().x * cute.grid_dim().x
function M.block_dim() return dim3("ntid", "cute.block_dim()") end
--- The grid's size in blocks: {x, y, z} of i32 values (PTX %nctaid).
-- @return a table with fields x, y and z
-- @usage local nblocks = cute.grid_dim().x
function M.grid_dim() return dim3("nctaid", "cute.grid_dim()") end
--- The cluster's index in the grid (sm_90+): {x, y, z} of i32 values.
-- @return a table with fields x, y and z
-- @usage local c = cute.cluster_idx().x
function M.cluster_idx() return dim3("clusterid", "cute.cluster_idx()") end
--- The grid's size in clusters (sm_90+): {x, y, z} of i32 values.
-- @return a table with fields x, y and z
-- @usage local n = cute.cluster_dim().x
function M.cluster_dim() return dim3("nclusterid", "cute.cluster_dim()") end
--- The block's coordinates within its cluster.
-- @return a table with fields x, y and z
-- @usage local b = cute.block_idx_in_cluster().x
function M.block_idx_in_cluster() return dim3("cluster_ctaid", "cute.block_idx_in_cluster()") end
--- The cluster's size in blocks (sm_90+): {x, y, z} of i32 values.
-- @return a table with fields x, y and z
-- @usage local n = cute.cluster_shape().x
function M.cluster_shape() return dim3("cluster_nctaid", "cute.cluster_shape()") end
--- The block's rank (linear index) within its cluster (sm_90+), an i32 value.
-- @return an i32 value
-- @usage if cute.block_rank_in_cluster():eq(0) ... (with cute.if_)
function M.block_rank_in_cluster() return sreg("cluster_ctarank") end
--- The thread's lane in its warp, 0-31 (an i32 value).
-- @return an i32 value
-- @usage local lane = cute.lane_idx()
function M.lane_idx() return sreg("laneid") end
--- The warp's index in the block (thread index / 32, warp-uniform).
-- @return an i32 value
-- @usage local warp = cute.warp_idx()
function M.warp_idx()
  local t = M.thread_idx()
  local d = M.block_dim()
  local linear = t.x + d.x * (t.y + d.y * t.z)
  return linear / 32
end
--- The index of the SM the thread runs on (an i32 value).
-- @return an i32 value
-- @usage cute.printf("on SM {}\n", cute.smid())
function M.smid() return sreg("smid") end
--- The SM's 32-bit cycle counter (an i32 value).
-- @return an i32 value
-- @usage local t0 = cute.clock()
function M.clock() return emit("timer", core.i32, nil, nil, nil, imm("W", "clock")) end
--- The SM's 64-bit cycle counter (an i64 value).
-- @return an i64 value
-- @usage local t0 = cute.clock64()
function M.clock64() return emit("timer", core.i64, nil, nil, nil, imm("W", "clock64")) end
--- The global nanosecond timer (an i64 value).
-- @return an i64 value
-- @usage local ns = cute.globaltimer()
function M.globaltimer() return emit("timer", core.i64, nil, nil, nil, imm("W", "globaltimer")) end

-- ---------------------------------------------------------------------------
-- Barriers and fences

--- __syncthreads(): every thread of the block waits here.
-- @usage cute.sync_threads()
function M.sync_threads() emit("barrier", nil) end

--- A named barrier: id 0-15, count threads (a multiple of 32; default: the block).
-- mode "arrive" signals without waiting.
-- @param id the barrier, 0-15 (a number or an i32 value)
-- @param count optional: the number of threads taking part
-- @param mode optional: "arrive" to signal without waiting
-- @usage cute.barrier(1, 128)
function M.barrier(id, count, mode)
  local m = imm("B", mode or "sync", "cute.barrier mode")
  id = core.coerce(id, core.i32, "cute.barrier id")
  if count then return emit("barrier.named", nil, id, core.coerce(count, core.i32, "cute.barrier count"), nil, m) end
  emit("barrier.named", nil, id, nil, nil, m)
end

--- Synchronises the lanes of a warp named by mask (bar.warp.sync).
-- @param mask optional: the lanes, a 32-bit mask (default all 32)
-- @usage cute.sync_warp()
function M.sync_warp(mask)
  emit("syncwarp", nil, core.coerce(mask or 0xffffffff, core.u32, "cute.sync_warp mask"))
end

--- A memory fence: scope "cta", "gpu", "cluster" or "sys"; sem "acq_rel" or "sc".
-- @param scope optional: "cta", "gpu" (the default), "cluster" or "sys"
-- @param sem optional: "acq_rel" (the default) or "sc"
-- @usage cute.fence("gpu")
function M.fence(scope, sem)
  emit("fence", nil, nil, nil, nil, imm("Y", sem or "acq_rel", "cute.fence semantics"),
    imm("S", scope or "gpu", "cute.fence scope"))
end

-- ---------------------------------------------------------------------------
-- Warp collectives

local FULL = 0xffffffff

local function shuffle(mode)
  return function(v, lane, width, mask)
    if not is_value(v) then err.raise("cute.shuffle: expected a value, got %s", core.describe(v)) end
    local t = type_of(v)
    local w = width or 32
    if t.bits ~= 32 then
      err.raise("cute.shuffle: 32-bit values only (got %s); shuffle halves of wider values separately", t.name)
    end
    local x = v
    if t.kind == "uint" or t.kind == "bool" then x = ops.bitcast(v, dtype.i32) end
    local r = emit("shfl", type_of(x), core.coerce(mask or FULL, core.u32, "shuffle mask"), x,
      core.coerce(lane, core.i32, "shuffle lane"), imm("H", mode), w == 32 and 0 or w)
    if r.ty ~= v.ty then r = ops.bitcast(r, t.dtype) end
    return r
  end
end

--- The value of v in lane (this lane xor lane_mask) (shfl.sync.bfly): butterfly reductions.
-- @function shuffle_xor
-- @param v a 32-bit value
-- @param lane the lane mask (a number or an i32 value)
-- @param width optional: the size of the lane groups (default 32)
-- @param mask optional: the lanes taking part (default all)
-- @return a value of v's type
-- @usage s = s + cute.shuffle_xor(s, 16)

--- The value of v in the lane `delta` above this one (shfl.sync.down).
-- @function shuffle_down
-- @param v a 32-bit value
-- @param lane the distance delta (a number or an i32 value)
-- @param width optional: the size of the lane groups (default 32)
-- @param mask optional: the lanes taking part (default all)
-- @return a value of v's type
-- @usage local nxt = cute.shuffle_down(x, 1)

--- The value of v in the lane `delta` below this one (shfl.sync.up).
-- @function shuffle_up
-- @param v a 32-bit value
-- @param lane the distance delta (a number or an i32 value)
-- @param width optional: the size of the lane groups (default 32)
-- @param mask optional: the lanes taking part (default all)
-- @return a value of v's type
-- @usage local prev = cute.shuffle_up(x, 1)

--- The value of v in lane `lane` of the warp (shfl.sync.idx).
-- @function shuffle
-- @param v a 32-bit value
-- @param lane the source lane (a number or an i32 value)
-- @param width optional: the size of the lane groups, a power of two up to 32 (default 32)
-- @param mask optional: the lanes taking part (default all)
-- @return a value of v's type
-- @usage local first = cute.shuffle(x, 0)

M.shuffle = shuffle("idx")
M.shuffle_up = shuffle("up")
M.shuffle_down = shuffle("down")
M.shuffle_xor = shuffle("bfly")

local function vote(mode, rt)
  return function(p, mask)
    if type(p) == "boolean" then p = core.const(core.bool, p) end
    return emit("vote", rt, core.coerce(mask or FULL, core.u32, "vote mask"), p, nil, imm("V", mode))
  end
end
--- The lanes where p holds, one bit per lane (vote.sync.ballot).
-- @function ballot
-- @param p a bool value (or a Lua boolean)
-- @param mask optional: the lanes taking part (default all)
-- @return a u32 value
-- @usage local bits = cute.ballot(x:gt(0))

--- Whether p is the same in every lane of the warp (vote.sync.uni).
-- @function vote_uni
-- @param p a bool value (or a Lua boolean)
-- @param mask optional: the lanes taking part (default all)
-- @return a bool value
-- @usage local uniform = cute.vote_uni(x:gt(0))

--- Whether p holds in any lane of the warp (vote.sync.any).
-- @function vote_any
-- @param p a bool value (or a Lua boolean)
-- @param mask optional: the lanes taking part (default all)
-- @return a bool value
-- @usage local any = cute.vote_any(x:gt(0))

--- Whether p holds in every lane of the warp (vote.sync.all).
-- @function vote_all
-- @param p a bool value (or a Lua boolean)
-- @param mask optional: the lanes taking part (default all)
-- @return a bool value
-- @usage local all = cute.vote_all(x:gt(0))

M.vote_all = vote("all", core.bool)
M.vote_any = vote("any", core.bool)
M.vote_uni = vote("uni", core.bool)
M.ballot = vote("ballot", core.u32)

--- Reduction over the warp's lanes of a 32-bit integer (redux.sync, sm_80+):
-- op "add" "min" "max" "and" "or" "xor". For floats, use a shuffle tree
-- (cute.warp_reduce_shuffle).
-- @param v a 32-bit integer value
-- @param op optional: "add" (the default), "min", "max", "and", "or" or "xor"
-- @param mask optional: the lanes taking part (default all)
-- @return a value of v's type, the same in every lane
-- @usage local total = cute.warp_reduce(count, "add")
function M.warp_reduce(v, op, mask)
  local t = type_of(v)
  local name = op or "add"
  if t.kind == "uint" and (name == "min" or name == "max") then name = "u" .. name end
  return emit("redux", t, core.coerce(mask or FULL, core.u32, "redux mask"), v, nil,
    imm("A", name, "cute.warp_reduce op"))
end

--- A butterfly reduction over `width` lanes (default 32) with any binary
-- function f(a, b) (for floats: cute.max, or function(a, b) return a + b end).
-- @param v the lane's value
-- @param f a function(a, b) combining two values
-- @param width optional: the number of lanes, a power of two (default 32)
-- @return the reduction, the same in every lane of each group
-- @usage local m = cute.warp_reduce_shuffle(x, cute.max)
function M.warp_reduce_shuffle(v, f, width)
  width = width or 32
  local off = width / 2
  while off >= 1 do
    v = f(v, M.shuffle_xor(v, off, width))
    off = off / 2
  end
  return v
end

-- ---------------------------------------------------------------------------
-- Atomics. ptr: a pointer value (tensor:pointer_at(coord) or &t[i] via t:ptr(i)).

-- The address of an atomic: checked in checked kernels (cute.trace.check).
local function checked(ptr, what) return check.access(ptr, type_of(ptr).elem.bits / 8, what) end

local function atomic(op)
  return function(ptr, v, opts)
    if not is_value(ptr) or type_of(ptr).kind ~= "ptr" then
      err.raise("cute.atomic_%s: expected a pointer value (tensor:ptr(coord)), got %s", op, core.describe(ptr))
    end
    local et = type_of(ptr).elem
    local name = op
    if et.kind == "uint" and (op == "min" or op == "max") then name = "u" .. op end
    opts = opts or {}
    ptr = checked(ptr, "atomic " .. op)
    return emit("atom", et, ptr, core.coerce(v, et, "cute.atomic_" .. op), nil, imm("A", name),
      imm("O", opts.order or "relaxed", "cute.atomic_" .. op .. " order"),
      imm("S", opts.scope or "gpu", "cute.atomic_" .. op .. " scope"))
  end
end
--- Decrements *ptr, wrapping to v at 0 or above v atomically; returns the old value.
-- @function atomic_dec
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_dec(counts:ptr_at(i), 1)

--- Increments *ptr, wrapping to 0 past v (unsigned: old >= v gives 0) atomically; returns the old value.
-- @function atomic_inc
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_inc(counts:ptr_at(i), 1)

--- Stores v into *ptr atomically; returns the old value.
-- @function atomic_exch
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_exch(counts:ptr_at(i), 1)

--- Xors v into *ptr (integers) atomically; returns the old value.
-- @function atomic_xor
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_xor(counts:ptr_at(i), 1)

--- Ors v into *ptr (integers) atomically; returns the old value.
-- @function atomic_or
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_or(counts:ptr_at(i), 1)

--- Ands v into *ptr (integers) atomically; returns the old value.
-- @function atomic_and
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_and(counts:ptr_at(i), 1)

--- Stores the maximum of *ptr and v atomically; returns the old value.
-- @function atomic_max
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_max(counts:ptr_at(i), 1)

--- Stores the minimum of *ptr and v atomically; returns the old value.
-- @function atomic_min
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_min(counts:ptr_at(i), 1)

--- Adds v to *ptr atomically; returns the old value.
-- @function atomic_add
-- @param ptr a pointer value (t:ptr_at(c))
-- @param v the operand, converted to the element type
-- @param opts optional: {order = "relaxed" (default), "acquire", "release" or "acq_rel"; scope = "gpu", "cta", ...}
-- @return the value *ptr held before
-- @usage local old = cute.atomic_add(counts:ptr_at(i), 1)

for _, op in ipairs { "add", "min", "max", "and", "or", "xor", "exch", "inc", "dec" } do
  M["atomic_" .. op] = atomic(op)
end

--- Compare-and-swap: if *ptr == cmp then *ptr = v; returns the old value.
-- @param ptr a pointer value (t:ptr_at(c))
-- @param cmp the value to compare with
-- @param v the value stored on a match
-- @param opts optional: {order = ..., scope = ...} as for cute.atomic_add
-- @return the value *ptr held before
-- @usage local old = cute.atomic_cas(lock:ptr_at(0), 0, 1)
function M.atomic_cas(ptr, cmp, v, opts)
  if not is_value(ptr) or type_of(ptr).kind ~= "ptr" then
    err.raise("cute.atomic_cas: expected a pointer value (tensor:ptr(coord)), got %s", core.describe(ptr))
  end
  local et = type_of(ptr).elem
  opts = opts or {}
  ptr = checked(ptr, "atomic cas")
  return emit("atom.cas", et, ptr, core.coerce(cmp, et, "cute.atomic_cas"), core.coerce(v, et, "cute.atomic_cas"),
    imm("O", opts.order or "relaxed", "cute.atomic_cas order"), imm("S", opts.scope or "gpu", "cute.atomic_cas scope"))
end

-- ---------------------------------------------------------------------------
-- printf and assertions

-- The C format for {} placeholders by value type.
local function auto_format(v)
  if type(v) == "string" or (type(v) ~= "number" and not is_value(v)) then return "%s" end
  local t = is_value(v) and type_of(v)
  if not t then return "%g" end
  if t.kind == "float" then return "%g" end
  if t.kind == "uint" then return t.bits > 32 and "%llu" or "%u" end
  if t.kind == "bool" then return "%d" end
  return t.bits > 32 and "%lld" or "%d"
end

--- printf on the GPU: C-style formats (%d %u %lld %f %g %x %s) or {} placeholders
-- (filled by the value's type). Floats are passed as doubles, small integers
-- widened, as C varargs require. Lua numbers and strings are formatted now.
-- @param fmt the format string
-- @param ... the values: traced values, Lua numbers and strings, layouts and tensors (with {} or %s)
-- @usage cute.printf("thread {} has {}\n", cute.thread_idx().x, x[i])
function M.printf(fmt, ...)
  if type(fmt) ~= "string" then err.raise("cute.printf: the first argument must be a format string") end
  local args = { ... }
  local n = select("#", ...)
  -- {} placeholders become C conversions for their argument's type; they
  -- and the % conversions take the arguments in order
  local k0 = 0
  fmt = fmt:gsub("()(%%?)(%%?[-+ #0]*%d*%.?%d*[hlLzjt]*[diouxXeEfgGcsp%%]?)", function(_, pct, rest)
    return pct .. rest
  end)
  local pieces, pos0 = {}, 1
  while true do
    local s1, e1 = fmt:find("{}", pos0, true)
    local s2, e2 = fmt:find("%%[-+ #0]*%d*%.?%d*[hlLzjt]*[diouxXeEfgGcsp%%]", pos0)
    if not s1 and not s2 then
      pieces[#pieces + 1] = fmt:sub(pos0)
      break
    end
    if s1 and (not s2 or s1 < s2) then
      k0 = k0 + 1
      pieces[#pieces + 1] = fmt:sub(pos0, s1 - 1) .. auto_format(args[k0])
      pos0 = e1 + 1
    else
      if fmt:sub(s2, e2) ~= "%%" then k0 = k0 + 1 end
      pieces[#pieces + 1] = fmt:sub(pos0, e2)
      pos0 = e2 + 1
    end
  end
  fmt = table.concat(pieces)
  -- values become operands; Lua strings and numbers are spliced into the format
  local operands, out, k = {}, {}, 0
  local pos = 1
  while true do
    local s, e = fmt:find("%%[-+ #0]*%d*%.?%d*[hlLzjt]*[diouxXeEfgGcsp%%]", pos)
    if not s then
      out[#out + 1] = fmt:sub(pos)
      break
    end
    out[#out + 1] = fmt:sub(pos, s - 1)
    local spec = fmt:sub(s, e)
    if spec == "%%" then
      out[#out + 1] = "%%"
    else
      k = k + 1
      if k > n then err.raise("cute.printf: the format has more conversions than arguments") end
      local a = args[k]
      if is_value(a) then
        local t = type_of(a)
        if t.kind == "float" then
          a = ops.to(t.name == "f32" and a or ops.to(a, dtype.f32), dtype.f64)
        elseif (t.kind == "int" or t.kind == "bool") and t.bits < 32 then
          a = ops.to(a, dtype.i32)
        elseif t.kind == "uint" and t.bits < 32 then
          a = ops.to(a, dtype.u32)
        end
        operands[#operands + 1] = a
        out[#out + 1] = spec
      else
        if type(a) ~= "number" and type(a) ~= "string" then
          -- layouts, tensors, tuples, atoms: their text, made now (what is known when tracing)
          if spec:sub(-1) ~= "s" then
            err.raise("cute.printf: argument %d is %s, which %s cannot print; use {} or %%s (its text as traced)", k,
              type(a) == "table" and (getmetatable(a) and getmetatable(a).__name or "a table") or type(a), spec)
          end
          a = tostring(a)
        end
        out[#out + 1] = (string.format(spec, a):gsub("%%", "%%%%"))
      end
    end
    pos = e + 1
  end
  if k < n then err.raise("cute.printf: %d arguments but only %d conversions in the format", n, k) end
  local T = core.current()
  if not T then err.raise("cute.printf can only be used while tracing a kernel") end
  local sid = core.ir().str(T.m, table.concat(out))
  return core.emitn("printf", nil, operands, { sid })
end

--- Stops the kernel (trap) with a message naming the condition's Lua line when
-- cond is false, if assertions are enabled (compile option assertions = true
-- or CUTELUA_ASSERTIONS=1); otherwise nothing.
-- @param cond a bool value (or a Lua boolean)
-- @param msg optional: the message printed when it fails
-- @usage cute.assert_(i:lt(n), "i in range")
function M.assert_(cond, msg)
  local T = core.current()
  if not T then err.raise("cute.assert_ can only be used while tracing a kernel") end
  if not T.opts.assertions and not T.check then return end
  if type(cond) == "boolean" then
    if cond then return end
    cond = core.const(core.bool, false)
  end
  if T.check then return check.assert_fail(cond, msg) end
  local where = err.where() or "?"
  control.if_(ops.not_(cond), function()
    M.printf("cutelua device assertion failed at %s: %s (block (%d,%d,%d), thread (%d,%d,%d))\n", where,
      msg or "assertion", M.block_idx().x, M.block_idx().y, M.block_idx().z, M.thread_idx().x, M.thread_idx().y,
      M.thread_idx().z)
    emit("trap", nil)
  end)
end

-- Every function here makes GPU code: called outside a trace it says so,
-- naming itself (not the IR op it would emit).
for name, f in pairs(M) do
  if type(f) == "function" and name ~= "warp_reduce_shuffle" then
    M[name] = function(...)
      if not core.current() then no_trace("cute." .. name .. "()") end
      return f(...)
    end
  end
end

return M
