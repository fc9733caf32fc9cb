--- cute.sim.exec: runs a simulated launch: the grid block by block, the
-- threads of a block as plain calls (a kernel with no barrier or warp
-- collective) or as coroutines that yield at each barrier and warp-synchronous
-- op, resolved here with the GPU's semantics (bar.sync, named barriers,
-- syncwarp, shfl, vote, redux, ldmatrix, stmatrix, mma.sync), and a named
-- error for barrier divergence and deadlocks.
local ffi = require "ffi"
local bit = require "bit"
local err = require "cute._err"
local N = require "cute.sim.num"
local machine = require "cute.sim.machine"
local compile = require "cute.sim.compile"

local tobit, band, bor, bxor, lshift, rshift = bit.tobit, bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift
local floor = math.floor
local S, fail = machine.S, machine.fail
local Y = compile.Y
local hopper = require "cute.sim.hopper"
hopper.Y_MBWAIT, hopper.Y_CLWAIT = Y.MBWAIT, Y.CLWAIT

local E = {}

-- ---------------------------------------------------------------------------
-- The helpers the generated code calls

local H = {}
for k, f in pairs(machine.H) do H[k] = f end
for _, k in ipairs { "f32", "to_f16", "to_bf16", "to_bf16_rz", "to_tf32", "to_e4m3", "to_e5m2", "u32", "mul32",
  "sdiv32", "srem32", "udiv32", "urem32", "umulhi32", "smulhi32", "umin32", "umax32", "sext8", "sext16", "sdiv64",
  "srem64", "udiv64", "urem64", "umin64", "umax64", "lshr64", "umulhi64", "smulhi64", "popc", "clz", "brev", "prmt",
  "fmin", "fmax", "fmaf", "fma", "rni", "rzi", "f2i", "f2i64", "I64", "U64" } do
  H[k] = N[k]
end
H.tobit, H.band, H.bor, H.bxor, H.bnot, H.lshift, H.rshift, H.arshift = bit.tobit, bit.band, bit.bor, bit.bxor,
  bit.bnot, bit.lshift, bit.rshift, bit.arshift
H.floor, H.ceil, H.fabs = math.floor, math.ceil, math.abs
function H.sel(c, a, b)
  if c then return a end
  return b
end
function H.clamp(x, lo, hi)
  if x < lo then return lo end
  if x > hi then return hi end
  return x
end
H.clamp64 = H.clamp
function H.sat01(x)
  if x ~= x or x < 0 then return 0 end
  if x > 1 then return 1 end
  return x
end
H.m_sqrt, H.m_exp, H.m_log, H.m_sin, H.m_cos, H.m_floor, H.m_ceil = math.sqrt, math.exp, math.log, math.sin,
  math.cos, math.floor, math.ceil
H.m_exp2, H.m_log2, H.m_tanh, H.m_erf = N.exp2, N.log2, N.tanh, N.erf
function H.m_rsqrt(x) return 1 / math.sqrt(x) end
function H.m_rcp(x) return 1 / x end
H.smem_base = machine.smem_base
for k, f in pairs(hopper.H) do H[k] = f end
H.yield = coroutine.yield

local scratch = ffi.new("uint8_t[4096]") -- bitcasts go through it (a value of up to 4 KiB)
H.SCRATCH = tonumber(ffi.cast("uintptr_t", scratch))
H.scratch_buffer = scratch -- kept alive: the generated code has only its address
for name, r in pairs(machine.RAW) do
  H["raw_r_" .. name] = r[2]
  H["raw_w_" .. name] = r[3]
end

local clock = 0
function H.timer(which)
  clock = clock + 1
  if which == "globaltimer" then return N.I64(require("cute._c").host.now_ns()) end
  if which == "clock64" then return N.I64(clock) end
  return tobit(clock)
end

-- atomics: one thread runs at a time, so a read-modify-write is atomic
local function norm(t, x)
  if t == "i32" then return tobit(x) end
  if t == "f32" then return N.f32(x) end
  return x
end
local function atom_op(op, t, old, v)
  if op == "add" then return norm(t, old + v) end
  if op == "exch" then return v end
  if op == "min" then return v < old and v or old end
  if op == "max" then return v > old and v or old end
  if op == "and" then return band(old, v) end
  if op == "or" then return bor(old, v) end
  if op == "xor" then return bxor(old, v) end
  local uo, uv
  if t == "i64" then uo, uv = N.U64(old), N.U64(v) else uo, uv = N.u32(old), N.u32(v) end
  if op == "umin" then return uv < uo and v or old end
  if op == "umax" then return uv > uo and v or old end
  if op == "inc" then return uo >= uv and (t == "i64" and N.I64(0) or 0) or norm(t, old + 1) end
  if op == "dec" then return (uo == 0 or uo > uv) and v or norm(t, old - 1) end
  fail("simulator: atomic %s is not simulated", op)
end
function H.atom(space, op, t, a, v, site)
  local r = machine.RAW[t]
  local h = machine.host_addr(space, a, r[1], site, "mark")
  local old = r[2](h)
  r[3](h, atom_op(op, t, old, v))
  return old
end
function H.atom_cas(space, t, a, c, v, site)
  local r = machine.RAW[t]
  local h = machine.host_addr(space, a, r[1], site, "mark")
  local old = r[2](h)
  if old == c then r[3](h, v) end
  return old
end

-- printf: the C format with Lua's string.format (length modifiers dropped)
function H.printf(fmt, ...)
  local args = { ... }
  local i = 0
  local out = fmt:gsub("%%([%-+ #0]*%d*%.?%d*)[hljztL]*([diouxXfFeEgGcsp%%])", function(flags, conv)
    if conv == "%" then return "%" end
    i = i + 1
    local a = args[i]
    if type(a) == "cdata" then a = tonumber(a) end
    if type(a) == "boolean" then a = a and 1 or 0 end
    if conv == "u" or conv == "x" or conv == "X" or conv == "o" then
      if a < 0 then a = a + 2 ^ 32 end
      if conv == "u" then conv = "d" end
    end
    if conv == "i" then conv = "d" end
    if conv == "p" then conv = "x" end
    if conv == "d" then a = a >= 0 and floor(a) or math.ceil(a) end
    local ok, s = pcall(string.format, "%" .. flags .. conv, a)
    return ok and s or tostring(a)
  end)
  io.write(out)
  io.flush()
end

function H.trap(site)
  local s = machine.site_of(site)
  fail("kernel '%s': trap (an abort or a failed device assertion) at %s, in %s thread %s", S.kernel, s.where,
    machine.where_block(), machine.coords(S.tid))
end

-- cp.async: queued per thread, done at the wait that covers its group
function H.cp_async(T, dspace, dst, src, bytes, src_bytes, site)
  local q = T.cpq
  if not q then
    q = { cur = {}, groups = {} }
    T.cpq = q
  end
  q.cur[#q.cur + 1] = { dspace, dst, src, bytes, src_bytes, site }
end
function H.cp_commit(T)
  local q = T.cpq
  if not q then
    q = { cur = {}, groups = {} }
    T.cpq = q
  end
  q.groups[#q.groups + 1] = q.cur
  q.cur = {}
end
local function cp_do(c)
  local dspace, dst, src, bytes, src_bytes, site = c[1], c[2], c[3], c[4], c[5], c[6]
  if src_bytes > 0 and S.checks then machine.chk_g(src, src_bytes, site) end
  local h = machine.host_addr(dspace, dst, bytes, site, true)
  local d, s = ffi.cast("uint8_t *", h), ffi.cast("uint8_t *", src)
  for i = 0, bytes - 1 do d[i] = i < src_bytes and s[i] or 0 end
end
function H.cp_wait(T, n)
  local q = T.cpq
  if not q then return end
  -- the uncommitted copies form no group: a wait does not cover them (as on the GPU); keep n newest groups
  while #q.groups > n do
    local g = table.remove(q.groups, 1)
    for _, c in ipairs(g) do cp_do(c) end
  end
end

E.helpers = H

-- ---------------------------------------------------------------------------
-- Warp collectives

local WAITING, DONE, READY = 1, 2, 0

local function lanes_of(mask, base, n)
  local out = {}
  for l = 0, 31 do
    if band(rshift(mask, l), 1) == 1 and base + l < n then out[#out + 1] = base + l end
  end
  return out
end

local function shfl(st, lanes, base)
  local vals = {}
  for _, t in ipairs(lanes) do vals[t - base] = st.args[t][2] end
  for _, t in ipairs(lanes) do
    local a = st.args[t]
    local b, mode, width = a[3], a[4], a[5]
    local lane = t - base
    local seg = lane - lane % width
    local src
    if mode == "idx" then
      src = seg + b % width
    elseif mode == "up" then
      src = lane - b
      if src < seg then src = lane end
    elseif mode == "down" then
      src = lane + b
      if src >= seg + width then src = lane end
    else
      src = bxor(lane, b)
      if src >= seg + width then src = lane end
    end
    local v = vals[src]
    if v == nil then v = vals[lane] end
    st.res[t] = { v }
  end
end

local function vote(st, lanes, base)
  local all, any, ballot = true, false, 0
  local first, uni = nil, true
  for _, t in ipairs(lanes) do
    local p = st.args[t][2]
    if p then
      any = true
      ballot = bor(ballot, lshift(1, t - base))
    else
      all = false
    end
    if first == nil then first = p elseif first ~= p then uni = false end
  end
  for _, t in ipairs(lanes) do
    local mode = st.args[t][3]
    local r
    if mode == "all" then r = all elseif mode == "any" then r = any elseif mode == "uni" then r = uni else
      r = tobit(ballot)
    end
    st.res[t] = { r }
  end
end

local function redux(st, lanes)
  local op = st.args[lanes[1]][3]
  local acc
  for _, t in ipairs(lanes) do
    local v = st.args[t][2]
    if acc == nil then
      acc = v
    elseif op == "add" then
      acc = tobit(acc + v)
    elseif op == "min" then
      acc = math.min(acc, v)
    elseif op == "max" then
      acc = math.max(acc, v)
    elseif op == "umin" then
      acc = N.umin32(acc, v)
    elseif op == "umax" then
      acc = N.umax32(acc, v)
    elseif op == "and" then
      acc = band(acc, v)
    elseif op == "or" then
      acc = bor(acc, v)
    else
      acc = bxor(acc, v)
    end
  end
  for _, t in ipairs(lanes) do st.res[t] = { acc } end
end

-- ldmatrix / stmatrix: lane l of the warp gives the address of row l % 8 of
-- matrix floor(l / 8); lane l holds, of each matrix, the 32-bit register of
-- row floor(l / 4), columns 2 (l % 4) and 2 (l % 4) + 1 (transposed: rows
-- 2 (l % 4) and 2 (l % 4) + 1 of column floor(l / 4)).
local u16p = ffi.typeof("uint16_t *")
local function row_addr(st, base, space, j, r, write)
  local t = base + j * 8 + r
  local a = st.args[t]
  if not a then
    fail("kernel '%s': ldmatrix/stmatrix: lane %d, which gives a row address, has exited", S.kernel, j * 8 + r)
  end
  local saved = S.tid
  S.tid = t
  local h = machine.host_addr(space, a[2], 16, st.site[t], write)
  S.tid = saved
  return ffi.cast(u16p, h)
end

local function ldmatrix(st, lanes, base)
  local a0 = st.args[lanes[1]]
  local space, count, trans = a0[1], a0[3], a0[4]
  local rows = {}
  for j = 0, count - 1 do
    rows[j] = {}
    for r = 0, 7 do rows[j][r] = row_addr(st, base, space, j, r, false) end
  end
  for _, t in ipairs(lanes) do
    local l = t - base
    local out = {}
    for j = 0, count - 1 do
      local lo, hi
      if trans then
        lo = rows[j][2 * (l % 4)][floor(l / 4)]
        hi = rows[j][2 * (l % 4) + 1][floor(l / 4)]
      else
        local row = rows[j][floor(l / 4)]
        lo, hi = row[2 * (l % 4)], row[2 * (l % 4) + 1]
      end
      out[j + 1] = tobit(lo + hi * 65536)
    end
    st.res[t] = out
  end
end

local function stmatrix(st, lanes, base)
  local a0 = st.args[lanes[1]]
  local space, count, trans = a0[1], a0[3], a0[4]
  for j = 0, count - 1 do
    local rows = {} -- luacheck: ignore 241 (pointers to the rows, written through)
    for r = 0, 7 do rows[r] = row_addr(st, base, space, j, r, true) end
    for _, t in ipairs(lanes) do
      local l = t - base
      local reg = st.args[t][5 + j]
      local lo, hi = band(reg, 0xffff), band(rshift(reg, 16), 0xffff)
      if trans then
        rows[2 * (l % 4)][floor(l / 4)] = lo
        rows[2 * (l % 4) + 1][floor(l / 4)] = hi
      else
        rows[floor(l / 4)][2 * (l % 4)] = lo
        rows[floor(l / 4)][2 * (l % 4) + 1] = hi
      end
    end
  end
  for _, t in ipairs(lanes) do st.res[t] = {} end
end

-- mma.sync: the fragments of the 32 lanes gathered into A (m x k), B (k x n)
-- and C (m x n), D = A B + C in double precision rounded once to the type of
-- D. Fragment layouts of the PTX ISA (g = lane / 4, t = lane % 4).
local half = { f16 = N.F16, bf16 = N.BF16 }
local function unpack16(reg, dec) return dec[band(reg, 0xffff)], dec[band(rshift(reg, 16), 0xffff)] end

-- element positions (row, col) of a lane's fragment registers, per shape and operand
local function frag_a16(g, t, k) -- 16-bit A: regs of (row, col pair)
  if k == 16 then return { { g, 2 * t }, { g + 8, 2 * t }, { g, 2 * t + 8 }, { g + 8, 2 * t + 8 } } end
  return { { g, 2 * t }, { g + 8, 2 * t } }
end
local function frag_b16(g, t, k) -- 16-bit B: regs of (row pair, col)
  if k == 16 then return { { 2 * t, g }, { 2 * t + 8, g } } end
  return { { 2 * t, g } }
end

-- 8-bit operand types: a byte -> its value
local BYTE8 = {
  s8 = function(b) return b >= 128 and b - 256 or b end,
  u8 = function(b) return b end,
  e4m3 = function(b) return N.E4M3[b] end,
  e5m2 = function(b) return N.E5M2[b] end,
}

local function mma(st, lanes, base)
  local a0 = st.args[lanes[1]]
  local shape, ta, tb, tc, td = a0[1], a0[2], a0[3], a0[4], a0[5]
  local na, nb = a0[6], a0[7]
  local m, n, k = shape:match("^m(%d+)n(%d+)k(%d+)$")
  m, n, k = tonumber(m), tonumber(n), tonumber(k)
  local byte8 = BYTE8[ta] and BYTE8[tb] and k == 32
  if m ~= 16 or n ~= 8 or not (((ta == "f16" or ta == "bf16") and (k == 16 or k == 8)) or
      (ta == "tf32" and (k == 8 or k == 4)) or byte8) or (tc ~= "f32" and tc ~= "f16" and tc ~= "s32") then
    fail("kernel '%s': mma.sync %s with %s x %s + %s is not simulated yet", S.kernel, shape, ta, tb, tc)
  end
  if #lanes ~= 32 then fail("kernel '%s': mma.sync needs all 32 lanes of the warp", S.kernel) end
  local A, Bm, Cm = {}, {}, {}
  for i = 0, m - 1 do
    A[i] = {}
    Cm[i] = {}
  end
  for i = 0, k - 1 do Bm[i] = {} end
  local dec = half[ta]
  for _, tt in ipairs(lanes) do
    local l = tt - base
    local g, t = floor(l / 4), l % 4
    local args = st.args[tt]
    local ra = 9
    if byte8 then -- 8-bit: four elements a register, A rows g (g + 8), B columns g
      local da, db = BYTE8[ta], BYTE8[tb]
      for r = 0, 3 do
        local reg = args[ra + r]
        local row, col = g + 8 * (r % 2), t * 4 + 16 * floor(r / 2)
        for e = 0, 3 do A[row][col + e] = da(band(rshift(reg, 8 * e), 0xff)) end
      end
      for r = 0, 1 do
        local reg = args[ra + na + r]
        for e = 0, 3 do Bm[t * 4 + 16 * r + e][g] = db(band(rshift(reg, 8 * e), 0xff)) end
      end
    elseif dec then
      for r, pos in ipairs(frag_a16(g, t, k)) do
        local lo, hi = unpack16(args[ra + r - 1], dec)
        A[pos[1]][pos[2]], A[pos[1]][pos[2] + 1] = lo, hi
      end
      for r, pos in ipairs(frag_b16(g, t, k)) do
        local lo, hi = unpack16(args[ra + na + r - 1], dec)
        Bm[pos[1]][pos[2]], Bm[pos[1] + 1][pos[2]] = lo, hi
      end
    else -- tf32: one element a register (its f32 bits; the tensor core reads the top 19, as tf32)
      local apos = k == 8 and { { g, t }, { g + 8, t }, { g, t + 4 }, { g + 8, t + 4 } } or { { g, t }, { g + 8, t } }
      for r, pos in ipairs(apos) do A[pos[1]][pos[2]] = N.bits_f32(band(args[ra + r - 1], -8192)) end
      local bpos = k == 8 and { { t, g }, { t + 4, g } } or { { t, g } }
      for r, pos in ipairs(bpos) do Bm[pos[1]][pos[2]] = N.bits_f32(band(args[ra + na + r - 1], -8192)) end
    end
    local rc = ra + na + nb
    if tc == "f32" or tc == "s32" then
      Cm[g][2 * t], Cm[g][2 * t + 1], Cm[g + 8][2 * t], Cm[g + 8][2 * t + 1] = args[rc], args[rc + 1], args[rc + 2],
        args[rc + 3]
    else
      Cm[g][2 * t], Cm[g][2 * t + 1] = unpack16(args[rc], N.F16)
      Cm[g + 8][2 * t], Cm[g + 8][2 * t + 1] = unpack16(args[rc + 1], N.F16)
    end
  end
  local D = {}
  for i = 0, m - 1 do
    D[i] = {}
    local Ai = A[i]
    for j = 0, n - 1 do
      local s = Cm[i][j]
      for kk = 0, k - 1 do s = s + Ai[kk] * Bm[kk][j] end
      if td == "f32" then D[i][j] = N.f32(s) elseif td == "s32" then D[i][j] = tobit(s) else D[i][j] = N.to_f16(s) end
    end
  end
  for _, tt in ipairs(lanes) do
    local l = tt - base
    local g, t = floor(l / 4), l % 4
    if td == "f32" or td == "s32" then
      st.res[tt] = { D[g][2 * t], D[g][2 * t + 1], D[g + 8][2 * t], D[g + 8][2 * t + 1] }
    else
      st.res[tt] = { tobit(N.enc_f16(D[g][2 * t]) + N.enc_f16(D[g][2 * t + 1]) * 65536),
        tobit(N.enc_f16(D[g + 8][2 * t]) + N.enc_f16(D[g + 8][2 * t + 1]) * 65536) }
    end
  end
end

-- elect.sync: the lowest lane of the mask's lanes is the leader
local function elect(st, lanes, base)
  local leader = lanes[1]
  for _, t in ipairs(lanes) do
    local nres = st.args[t][2]
    if nres == 2 then st.res[t] = { leader - base, t == leader } else st.res[t] = { t == leader } end
  end
end

local COLLECTIVE = { [Y.SYNCWARP] = "syncwarp", [Y.SHFL] = "shfl", [Y.VOTE] = "vote", [Y.REDUX] = "redux",
  [Y.LDMATRIX] = "ldmatrix", [Y.MMA] = "mma.sync", [Y.STMATRIX] = "stmatrix", [Y.ELECT] = "elect.sync" }

local function site_text(id)
  local s = machine.site_of(id)
  return s.where .. " (" .. s.what .. ")"
end

-- Resolves the warp collectives that every lane of their mask has reached.
local function resolve_warps(st, n)
  local progress = false
  for base = 0, n - 1, 32 do
    local first
    for t = base, math.min(base + 31, n - 1) do
      if st.state[t] == WAITING and COLLECTIVE[st.kind[t]] then
        first = t
        break
      end
    end
    if first then
      local mask = st.args[first][1]
      if st.kind[first] == Y.LDMATRIX or st.kind[first] == Y.MMA or st.kind[first] == Y.STMATRIX then
        mask = -1
      end
      local lanes, ready = {}, true
      for _, t in ipairs(lanes_of(mask, base, n)) do
        if st.state[t] == WAITING and (st.kind[t] == Y.MBWAIT or st.kind[t] == Y.CLWAIT) then
          ready = false -- blocked on an mbarrier or the cluster barrier: it comes here once released
        elseif st.state[t] == WAITING then
          if st.site[t] ~= st.site[first] then
            fail("kernel '%s': warp divergence in %s warp %d: lane %d waits at %s and lane %d at %s; a " ..
              "warp-synchronous op needs every lane of its mask at the same op (on the GPU: a hang or undefined " ..
              "results)", S.kernel, machine.where_block(), floor(base / 32), first - base, site_text(st.site[first]),
              t - base, site_text(st.site[t]))
          end
          lanes[#lanes + 1] = t
        elseif st.state[t] ~= DONE then
          ready = false
        end
      end
      if ready then
        local kind = st.kind[first]
        if kind == Y.SYNCWARP then
          S.wepoch[floor(base / 32)] = S.wepoch[floor(base / 32)] + 1
          for _, t in ipairs(lanes) do st.res[t] = {} end
        elseif kind == Y.SHFL then
          shfl(st, lanes, base)
        elseif kind == Y.VOTE then
          vote(st, lanes, base)
        elseif kind == Y.REDUX then
          redux(st, lanes)
        elseif kind == Y.LDMATRIX then
          ldmatrix(st, lanes, base)
        elseif kind == Y.STMATRIX then
          stmatrix(st, lanes, base)
        elseif kind == Y.ELECT then
          elect(st, lanes, base)
        else
          mma(st, lanes, base)
        end
        for _, t in ipairs(lanes) do st.state[t] = READY end
        progress = true
      end
    end
  end
  return progress
end

-- Resolves the wgmma that all 128 threads of a warpgroup reached, the
-- mbarrier waits whose phase completed and the cluster barrier's waits.
local function resolve_hopper(st, n, B)
  local progress = false
  for base = 0, n - 1, 128 do
    local first
    for t = base, math.min(base + 127, n - 1) do
      if st.state[t] == WAITING and st.kind[t] == Y.WGMMA then
        first = t
        break
      end
    end
    if first then
      local ready = true
      for t = base, base + 127 do
        if t >= n or st.state[t] == DONE then
          fail("kernel '%s': wgmma at %s in %s: thread %d of the warpgroup (threads %d-%d) has exited or does not " ..
            "exist; all 128 threads of a warpgroup execute a wgmma", S.kernel, site_text(st.site[first]),
            machine.where_block(), t, base, base + 127)
        end
        if st.state[t] == WAITING and st.kind[t] == Y.WGMMA and st.site[t] ~= st.site[first] then
          fail("kernel '%s': warpgroup divergence in %s: thread %d waits at the wgmma at %s and thread %d at the " ..
            "one at %s", S.kernel, machine.where_block(), first, site_text(st.site[first]), t, site_text(st.site[t]))
        end
        if st.state[t] ~= WAITING or st.kind[t] ~= Y.WGMMA then ready = false end
      end
      if ready then
        hopper.wgmma(st, base, st.site[first])
        for t = base, base + 127 do st.state[t] = READY end
        progress = true
      end
    end
  end
  if B.cl.arrived > 0 and hopper.cl_check(B.cl) then progress = true end
  for t = 0, n - 1 do
    if st.state[t] == WAITING then
      local kind = st.kind[t]
      if kind == Y.MBWAIT then
        local a = st.args[t]
        if hopper.mb_done(a[1], a[2]) then
          st.state[t], st.res[t] = READY, { true }
          progress = true
        end
      elseif kind == Y.CLWAIT and st.args[t][1] < B.cl.gen then
        st.state[t], st.res[t] = READY, {}
        progress = true
      end
    end
  end
  return progress
end

-- Releases a block-wide barrier every live thread waits at (the same one),
-- and named barriers whose count is reached.
local function resolve_barriers(st, n)
  local waiting, first = 0, nil
  local live = 0
  for t = 0, n - 1 do
    if st.state[t] ~= DONE then live = live + 1 end
    if st.state[t] == WAITING and st.kind[t] == Y.BAR then
      waiting = waiting + 1
      if not first then first = t end
      if st.site[t] ~= st.site[first] then
        fail("kernel '%s': barrier divergence in %s: thread %s waits at the barrier at %s and thread %s at the " ..
          "one at %s; every thread of a block must reach the same barrier (on the GPU: a hang)", S.kernel,
          machine.where_block(), machine.coords(first), machine.site_of(st.site[first]).where, machine.coords(t),
          machine.site_of(st.site[t]).where)
      end
    end
  end
  -- named barriers: sync waiters are released once their count has arrived
  for id, b in pairs(st.named) do
    local need = b.count < 0 and live or b.count
    if b.arrived >= need and need > 0 then
      for _, t in ipairs(b.waiters) do
        st.state[t] = READY
        st.res[t] = {}
      end
      st.named[id] = nil
      machine.end_epoch()
      return true
    end
  end
  if waiting > 0 and waiting == live then
    for t = 0, n - 1 do
      if st.state[t] == WAITING then
        st.state[t] = READY
        st.res[t] = {}
      end
    end
    machine.end_epoch()
    return true
  end
  return false
end

local function deadlock(st, n)
  for t = 0, n - 1 do
    if st.state[t] == WAITING and st.kind[t] == Y.MBWAIT then
      local a = st.args[t]
      fail("kernel '%s': deadlock in %s: thread %s waits at %s for the phase of parity %d of %s, and no running " ..
        "thread or copy in flight can complete it (on the GPU: a hang)", S.kernel, machine.where_block(),
        machine.coords(t), site_text(st.site[t]), a[2], hopper.describe(a[1]))
    end
  end
  local at, other
  for t = 0, n - 1 do
    if st.state[t] == WAITING then
      if not at then at = t elseif st.site[t] ~= st.site[at] and not other then other = t end
    end
  end
  local exited = 0
  for t = 0, n - 1 do if st.state[t] == DONE then exited = exited + 1 end end
  local msg = string.format("kernel '%s': deadlock in %s: thread %s waits at %s", S.kernel, machine.where_block(),
    machine.coords(at), site_text(st.site[at]))
  if other then
    msg = msg .. string.format(" while thread %s waits at %s (barrier divergence: on the GPU, a hang)",
      machine.coords(other), site_text(st.site[other]))
  elseif exited > 0 then
    msg = msg .. string.format(", which %d exited threads never reach", exited)
  else
    msg = msg .. ", which never completes"
  end
  fail("%s", msg)
end

-- ---------------------------------------------------------------------------
-- A block

local function thread_records(bdim)
  local n = bdim[1] * bdim[2] * bdim[3]
  local T = {}
  for t = 0, n - 1 do
    local lane = t % 32
    T[t] = { tx = t % bdim[1], ty = floor(t / bdim[1]) % bdim[2], tz = floor(t / (bdim[1] * bdim[2])), lane = lane,
      warp = floor(t / 32), lm_eq = tobit(2 ^ lane), lm_lt = tobit(2 ^ lane - 1), lm_le = tobit(2 ^ (lane + 1) - 1),
      lm_gt = tobit(-(2 ^ (lane + 1))), lm_ge = tobit(-(2 ^ lane)) }
  end
  return T, n
end

local function run_plain(fn, P, B, T, n)
  B.cl = { arrived = 0, gen = 0, ndone = 0, nthreads = n }
  for t = 0, n - 1 do
    S.tid = t
    local th = T[t]
    th.cpq = nil
    fn(P, B, th)
  end
end

-- A thread's coroutine runs the kernel once per block and yields EXIT
-- between blocks, so that one coroutine a thread serves the whole launch.
local EXIT = 0
local function thread_loop(fn)
  return function(P, B, T)
    while true do
      fn(P, B, T)
      P, B, T = coroutine.yield(EXIT)
    end
  end
end

local function record(st, t, co, ok, kind, site, ...)
  if not ok then
    if type(kind) ~= "table" then -- where in the generated code (for a simulator bug report)
      local where = debug.traceback(co, "", 0):match("%(simulated kernel [^%)]*%):%d+")
      if where and not tostring(kind):find(where, 1, true) then kind = tostring(kind) .. " (at " .. where .. ")" end
    end
    error(kind, 0)
  end
  if kind == EXIT or coroutine.status(co) == "dead" then
    st.state[t] = DONE
    st.B.cl.ndone = st.B.cl.ndone + 1
    return
  end
  st.state[t], st.kind[t], st.site[t] = WAITING, kind, site
  if kind == Y.NAMED then
    local id, count, arrive = ...
    local b = st.named[id]
    if not b then
      b = { count = count, arrived = 0, waiters = {} }
      st.named[id] = b
    end
    b.arrived = b.arrived + 1
    if arrive == 1 then
      st.state[t], st.res[t] = READY, {}
    else
      b.waiters[#b.waiters + 1] = t
    end
    return
  end
  st.args[t] = { ... }
end

-- Runs the threads of a cluster's CTAs (csize of them, one without
-- clusters) as coroutines: Bs, Ts, coss per CTA (context i = rank i - 1).
local function run_cluster(fn, P, Bs, Ts, n, coss, csize)
  local cl = { arrived = 0, gen = 0, ndone = 0, nthreads = n * csize }
  local sts = {}
  for i = 1, csize do
    local B, T, cos = Bs[i], Ts[i], coss[i]
    B.cl = cl
    local st = { state = {}, kind = {}, site = {}, args = {}, res = {}, named = {}, B = B }
    sts[i] = st
    machine.switch(i)
    for t = 0, n - 1 do
      T[t].cpq = nil
      T[t].cl_gen = nil
      local co = cos[t]
      if not co then
        co = coroutine.create(thread_loop(fn))
        cos[t] = co
      end
      S.tid = t
      record(st, t, co, coroutine.resume(co, P, B, T[t]))
    end
  end
  while true do
    local any_ready = false
    for i = 1, csize do
      local st, cos = sts[i], coss[i]
      for t = 0, n - 1 do
        if st.state[t] == READY then
          if not any_ready or csize > 1 then machine.switch(i) end
          any_ready = true
          S.tid = t
          local co = cos[t]
          local res = st.res[t]
          st.res[t] = nil
          record(st, t, co, coroutine.resume(co, unpack(res)))
        end
      end
    end
    if not any_ready then
      local alldone = true
      for i = 1, csize do
        local st = sts[i]
        for t = 0, n - 1 do if st.state[t] ~= DONE then alldone = false break end end
      end
      if alldone then return end
      local progress = false
      for i = 1, csize do
        machine.switch(i)
        local st = sts[i]
        if resolve_warps(st, n) or resolve_barriers(st, n) or resolve_hopper(st, n, st.B) then progress = true end
      end
      if not progress then
        for i = 1, csize do
          local st = sts[i]
          for t = 0, n - 1 do
            if st.state[t] == WAITING then
              machine.switch(i)
              deadlock(st, n)
            end
          end
        end
      end
    end
  end
end

-- ---------------------------------------------------------------------------
-- A launch

-- A parameter's value as the generated code holds it.
local function param_value(d, raw)
  local s = d.slots[1]
  if s == "ptr" then return tonumber(raw) end
  if s == "i64" then return N.I64(raw) end
  if s == "i1" then return raw ~= 0 end
  if s == "f16" then return N.F16[tonumber(raw)] end
  if s == "bf16" then return N.BF16[tonumber(raw)] end
  if s == "i32" or s == "i16" or s == "i8" then return tonumber(raw) end
  return tonumber(raw)
end

E.checks_default = os.getenv("CUTELUA_SIM_CHECKS") ~= "0"

--- Runs a launch of kernel `name` compiled as `c` (cute.sim.compile) with
-- parameters P (the generated code's values), grid and block {x, y, z},
-- dynamic shared memory bytes, the global regions its tensor arguments
-- span ({lo, hi, name}) and the cluster {x, y, z} (default {1, 1, 1}): the
-- CTAs of a cluster run together, each with its shared memory.
function E.run(c, name, P, grid, block, dyn_smem, regions, cluster)
  S.kernel, S.sites, S.regions, S.checks = name, c.sites, regions, E.checks_default
  S.bdim = block
  machine.reset_regions()
  hopper.reset()
  cluster = cluster or { 1, 1, 1 }
  local cx, cy, cz = cluster[1], cluster[2], cluster[3]
  local csize = cx * cy * cz
  for d = 1, 3 do
    if grid[d] % cluster[d] ~= 0 then
      err.raise("launch of %s: the grid {%d, %d, %d} is not a whole number of clusters {%d, %d, %d}", name, grid[1],
        grid[2], grid[3], cx, cy, cz)
    end
  end
  S.csize = csize
  local dyn_base = math.ceil(c.smem / c.dyn_align) * c.dyn_align
  local smem = dyn_base + dyn_smem
  local n = block[1] * block[2] * block[3]
  if n == 0 then return end
  local Bs, Ts, coss = {}, {}, {}
  for i = 1, csize do
    Ts[i] = thread_records(block)
    Bs[i] = { nx = block[1], ny = block[2], nz = block[3], gx = grid[1], gy = grid[2], gz = grid[3],
      nwarps = math.ceil(n / 32), dsmem = dyn_smem, smem = smem, dyn_base = dyn_base, cnx = cx, cny = cy, cnz = cz,
      cn = csize, ncx = grid[1] / cx, ncy = grid[2] / cy, ncz = grid[3] / cz }
    coss[i] = {}
  end
  local fn = c.fn
  local ok, e = pcall(function()
    for z = 0, grid[3] / cz - 1 do
      for y = 0, grid[2] / cy - 1 do
        for x = 0, grid[1] / cx - 1 do
          for r = 0, csize - 1 do
            local ccx, ccy, ccz = r % cx, floor(r / cx) % cy, floor(r / (cx * cy))
            local B = Bs[r + 1]
            B.cx, B.cy, B.cz = x * cx + ccx, y * cy + ccy, z * cz + ccz
            B.ccx, B.ccy, B.ccz, B.crank, B.clx, B.cly, B.clz = ccx, ccy, ccz, r, x, y, z
            machine.begin_block(smem, r + 1, { B.cx, B.cy, B.cz })
          end
          if c.sync then
            run_cluster(fn, P, Bs, Ts, n, coss, csize)
          else
            for r = 1, csize do
              machine.switch(r)
              run_plain(fn, P, Bs[r], Ts[r], n)
            end
          end
          for r = 1, csize do
            machine.switch(r)
            machine.end_epoch()
          end
        end
      end
    end
  end)
  if not ok then
    if type(e) == "table" and e.sim then err.raise("%s", e.msg) end
    err.raise("kernel '%s' on the simulator: in %s thread %s: %s", name, machine.where_block(),
      machine.coords(S.tid), tostring(e))
  end
end

E.param_value = param_value
return E
