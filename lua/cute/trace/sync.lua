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

function M.thread_idx() return dim3("tid", "cute.thread_idx()") end
function M.block_idx() return dim3("ctaid", "cute.block_idx()") end
function M.block_dim() return dim3("ntid", "cute.block_dim()") end
function M.grid_dim() return dim3("nctaid", "cute.grid_dim()") end
function M.cluster_idx() return dim3("clusterid", "cute.cluster_idx()") end
function M.cluster_dim() return dim3("nclusterid", "cute.cluster_dim()") end
--- The block's coordinates within its cluster.
function M.block_idx_in_cluster() return dim3("cluster_ctaid", "cute.block_idx_in_cluster()") end
function M.cluster_shape() return dim3("cluster_nctaid", "cute.cluster_shape()") end
function M.block_rank_in_cluster() return sreg("cluster_ctarank") end
function M.lane_idx() return sreg("laneid") end
--- The warp's index in the block (thread index / 32, warp-uniform).
function M.warp_idx()
  local t = M.thread_idx()
  local d = M.block_dim()
  local linear = t.x + d.x * (t.y + d.y * t.z)
  return linear / 32
end
function M.smid() return sreg("smid") end
function M.clock() return emit("timer", core.i32, nil, nil, nil, imm("W", "clock")) end
function M.clock64() return emit("timer", core.i64, nil, nil, nil, imm("W", "clock64")) end
function M.globaltimer() return emit("timer", core.i64, nil, nil, nil, imm("W", "globaltimer")) end

-- ---------------------------------------------------------------------------
-- Barriers and fences

--- __syncthreads(): every thread of the block waits here.
function M.sync_threads() emit("barrier", nil) end

--- A named barrier: id 0-15, count threads (a multiple of 32; default: the block).
-- mode "arrive" signals without waiting.
function M.barrier(id, count, mode)
  local m = imm("B", mode or "sync", "cute.barrier mode")
  id = core.coerce(id, core.i32, "cute.barrier id")
  if count then return emit("barrier.named", nil, id, core.coerce(count, core.i32, "cute.barrier count"), nil, m) end
  emit("barrier.named", nil, id, nil, nil, m)
end

function M.sync_warp(mask)
  emit("syncwarp", nil, core.coerce(mask or 0xffffffff, core.u32, "cute.sync_warp mask"))
end

--- A memory fence: scope "cta", "gpu", "cluster" or "sys"; sem "acq_rel" or "sc".
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
M.vote_all = vote("all", core.bool)
M.vote_any = vote("any", core.bool)
M.vote_uni = vote("uni", core.bool)
M.ballot = vote("ballot", core.u32)

--- Reduction over the warp's lanes of a 32-bit integer (redux.sync, sm_80+):
-- op "add" "min" "max" "and" "or" "xor". For floats, use a shuffle tree
-- (cute.warp_reduce_shuffle).
function M.warp_reduce(v, op, mask)
  local t = type_of(v)
  local name = op or "add"
  if t.kind == "uint" and (name == "min" or name == "max") then name = "u" .. name end
  return emit("redux", t, core.coerce(mask or FULL, core.u32, "redux mask"), v, nil,
    imm("A", name, "cute.warp_reduce op"))
end

--- A butterfly reduction over `width` lanes (default 32) with any binary
-- function f(a, b) (for floats: cute.max, or function(a, b) return a + b end).
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
for _, op in ipairs { "add", "min", "max", "and", "or", "xor", "exch", "inc", "dec" } do
  M["atomic_" .. op] = atomic(op)
end

--- Compare-and-swap: if *ptr == cmp then *ptr = v; returns the old value.
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
