--- cute.trace.check: checked kernels (compile option checked = true,
-- cute.set_checked(true) or CUTELUA_CHECKED=1).
--
-- A fault on the GPU (an illegal address, a trap) is sticky: the CUDA context
-- refuses all later work and the process must end. A checked kernel never
-- faults for the bugs it can see. Every global and shared memory access the
-- tracer emits (tensor loads and stores, vector copies, atomics, cp.async,
-- ldmatrix, stmatrix) is compared with the extent of the tensor or shared
-- array its address comes from; an access outside it is not made (it goes to
-- a scratch area instead) and the first one is recorded with its site, its
-- block and thread, its byte offset and the extent. cute.assert_ records
-- instead of trapping. After the launch the host reads the record and raises
-- a Lua error naming the user's line; the context is untouched, so the next
-- launch runs.
--
-- Each tensor argument gets a hidden int64 parameter (its extent in bytes:
-- its layout's cosize times the element size), and the kernel one more, the
-- address of the record (cute.kernel appends them after the user's
-- parameters). Record layout, 32-bit words: [0] 1 once a failure was
-- recorded, [1] number of failing accesses, [2] site (1-based), [3..5] block,
-- [6..8] thread, [9..10] byte offset (lo, hi), [11..12] extent (lo, hi).
-- Bytes 256..511 are the scratch area that redirected global accesses use.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local control = require "cute.trace.control"
local dtype = require "cute.dtype"

local M = {}

local emit, imm, type_of = core.emit, ops.imm, core.type_of

M.RECORD_BYTES = 512
M.SCRATCH = 256

--- Sets up checking for the trace T: tensors is a list of {arg index, pointer
-- value, parameter name} for the tensor arguments. Makes the hidden IR
-- parameters and returns the launch parameter entries to append.
function M.setup(T, tensors)
  local ir = core.ir()
  local C = { roots = {}, sites = {}, smem = {} }
  local params = {}
  for _, t in ipairs(tensors) do
    local lim = core.value(ir.param(T.f, core.irtype(core.i64)), core.i64)
    C.roots[core.use(t.ptr)] = { lim = lim, name = t.name }
    params[#params + 1] = { ctype = "int64_t", arg = t.arg, what = "check_lim" }
  end
  local et = core.ptr(core.i32, "global", 16)
  C.err = core.value(ir.param(T.f, core.irtype(et)), et)
  params[#params + 1] = { ctype = "uint64_t", what = "check_err" }
  T.check = C
  return params
end

--- Records a static shared array (its size bounds the accesses through it).
function M.note_smem(T, p, bytes)
  if T.check then T.check.smem[core.use(p)] = bytes end
end

-- The root of a pointer: the parameter, shared array or dynamic shared memory
-- its address is computed from (through gep and ptrcast), or nil.
local function root_of(T, ref)
  local ir = core.ir()
  local f = T.f
  local gep, cast, param, smem, dsmem = core.opid("gep"), core.opid("ptrcast"), core.opid("param"),
    core.opid("smem"), core.opid("smem.dyn")
  for _ = 1, 10000 do
    local op = ir.inst_op(f, ref)
    if op == gep or op == cast then
      ref = ir.inst_arg(f, ref, 0)
    elseif op == param or op == smem then
      return ref, op == smem
    elseif op == dsmem then
      return ref, true, true
    else
      return nil
    end
  end
end

local function i32c(v) return core.const(core.i32, v) end
local function sreg(name) return emit("sreg", core.i32, nil, nil, nil, imm("G", name)) end

-- Writes the record (first failure only) and counts the failure.
local function record(C, site, off, lim)
  local e = C.err
  local function word(i) return emit("gep", core.ptr(core.i32, "global", 4), e, i32c(i)) end
  local old = emit("atom.cas", core.i32, e, i32c(0), i32c(1), imm("O", "relaxed"), imm("S", "gpu"))
  emit("atom", core.i32, word(1), i32c(1), nil, imm("A", "add"), imm("O", "relaxed"), imm("S", "gpu"))
  control.if_(emit("icmp", core.bool, old, i32c(0), nil, imm("P", "eq")), function()
    local vals = { i32c(site), sreg("ctaid.x"), sreg("ctaid.y"), sreg("ctaid.z"), sreg("tid.x"), sreg("tid.y"),
      sreg("tid.z") }
    if off then
      local function lo(x) return ops.to(x, dtype.i32) end
      local function hi(x) return ops.to(emit("lshr", core.i64, x, core.const(core.i64, 32)), dtype.i32) end
      vals[8], vals[9], vals[10], vals[11] = lo(off), hi(off), lo(lim), hi(lim)
    end
    for i, v in ipairs(vals) do emit("store", nil, word(i + 1), v, nil, 0, 0, 0) end
  end)
end

local function new_site(C, info)
  local id = core.update_loc()
  info.where = core.loc_text(id)
  C.sites[#C.sites + 1] = info
  return #C.sites
end

--- p: the address of an access of `bytes` bytes (what: "load", "store", ...);
-- src_bytes (cp.async): how many bytes are really read (0: none). Returns the
-- address to use: p, or a harmless one when the access is out of bounds.
function M.access(p, bytes, what, src_bytes)
  local T = core.current()
  local C = T and T.check
  if not C or C.busy then return p end
  local ref = core.use(p)
  local root, shared, dynamic = root_of(T, ref)
  if not root then return p end
  local lim, name
  if shared then
    if dynamic then
      lim = emit("sreg", core.i32, nil, nil, nil, imm("G", "dynamic_smem_size"))
      name = "the dynamic shared memory"
    else
      lim = i32c(C.smem[root] or 0)
      name = "a shared memory array"
    end
  else
    local r = C.roots[root]
    if not r then return p end
    lim, name = r.lim, "argument '" .. r.name .. "'"
  end
  C.busy = true
  local it = shared and core.i32 or core.i64
  local rv = core.value(root, type_of(p)) -- its address (and, shared, a safe target)
  local off = emit("sub", it, emit("ptrtoint", it, p), emit("ptrtoint", it, rv))
  local n = core.const(it, bytes)
  local ok = emit("and", core.bool, emit("icmp", core.bool, off, lim, nil, imm("P", "ult")),
    emit("icmp", core.bool, emit("add", it, off, n), lim, nil, imm("P", "ule")))
  if src_bytes ~= nil then
    if type(src_bytes) == "number" then
      if src_bytes == 0 then ok = core.const(core.bool, true) end
    else
      ok = emit("or", core.bool, ok, emit("icmp", core.bool, src_bytes, i32c(0), nil, imm("P", "eq")))
    end
  end
  local site = new_site(C, { what = what, bytes = bytes, name = name })
  control.if_(ops.not_(ok), function()
    local o64 = shared and ops.to(off, dtype.i64) or off
    local l64 = shared and ops.to(lim, dtype.i64) or lim
    record(C, site, o64, l64)
  end)
  local safe
  if shared then
    safe = emit("ptrcast", type_of(p), rv)
  else
    local u8 = core.ptr(core.scalar(dtype.u8), "global", 16)
    safe = emit("ptrcast", type_of(p), emit("gep", u8, emit("ptrcast", u8, C.err), i32c(M.SCRATCH)))
  end
  C.busy = false
  return emit("select", type_of(p), ok, p, safe)
end

--- cute.assert_ in a checked kernel: records the failure (no trap).
function M.assert_fail(cond, msg)
  local T = core.current()
  local C = T.check
  local site = new_site(C, { what = "assert", msg = msg })
  C.busy = true
  control.if_(ops.not_(cond), function() record(C, site) end)
  C.busy = false
end

return M
