--- The benchmark harness: runs suites of GPU benchmarks, measures the peers
-- and physical limits they are compared with in the same run, checks every
-- kernel's result, and writes the table (markdown), raw numbers (CSV, JSON)
-- and an SVG bar chart of the ratios.
--
-- A suite is bench/suites/<name>.lua returning function(h). It declares
-- cases with h:case{...}:
--   name, shape, dtype        what is measured (for the table)
--   bytes or flops            work per repetition (GB/s or TFLOP/s)
--   peer                      what the ratio is taken against: "copy" (the
--                             cuMemcpyDtoD bandwidth, bytes read + written) or
--                             a function(h) returning {name=, value=, unit=}
--                             measured in this run, or a runner {name=, run=,
--                             free=} (h:cublas) that run_case measures in
--                             turns with the kernel
--   also                      optional function(h) returning a list of more
--                             peers {name=, value=, unit=} measured in this run
--                             (torch.matmul): the report lists the ratio to each
--                             below the table; the row's ratio stays the peer's
--   goal                      the ratio the project aims for (for the record)
--   settle_ms                 untimed run-in of each turn with a runner peer, and
--                             of the kernel alone otherwise (SETTLE_MS below; 5
--                             in quick mode)
--   setup() -> state          allocate and fill inputs (fresh random data)
--   run(state, rep)           the timed work (one repetition)
--   check(state) -> ok, msg   the result against a CPU reference
--   teardown(state)           free (optional)
--   skip                      a reason (or function(h) -> reason or nil) not to
--                             run the case: what the kernel cannot do yet; the
--                             row says "skipped: <reason>" and is not a failure
-- The copy bandwidth is measured once per run. A runner peer (cuBLAS) is
-- measured with each case, in turns with it: ROUNDS rounds of the kernel
-- then the peer, each ~1/ROUNDS of the time, and the medians taken over all
-- the repetitions of each, so that slow drift (temperature) touches both
-- alike. Each turn first runs its work for SETTLE_MS (a case's settle_ms),
-- untimed: under sustained tensor-core load the board's power limit sets
-- the clock, differently for different work, and it takes some 50-100 ms to
-- move from where the other kernel left it (bench/clock_drift.lua shows
-- it). Timed at once, each kernel ran at the other's clock: cuBLAS at the
-- higher one the lighter mma.sync kernel left, that kernel at the lower one
-- cuBLAS left, and the ratio came out ~15% below the one either kernel
-- sustains on its own (docs/benchmarks.md).
local ROUNDS = 5
local SETTLE_MS = 200
local cute = require "cute"
local ffi = require "ffi"

local H = {}
H.__index = H

function H.new(opts)
  return setmetatable({ opts = opts or {}, cases = {}, results = {}, peers = {}, suite = "?" }, H)
end

function H:case(c)
  c.suite = self.suite
  -- (bench/run.lua --only PATTERN: the cases whose "name shape" matches it)
  if self.only and not (c.name .. " " .. tostring(c.shape)):find(self.only) then return end
  self.cases[#self.cases + 1] = c
end

--- True in quick mode (CUTELUA_BENCH_QUICK=1): small sizes, short timings.
function H.quick() return cute.bench.quick() end

--- Picks the full-size or quick-mode value.
function H.size(_, full, quick) return cute.bench.quick() and quick or full end

-- ---------------------------------------------------------------------------
-- Peers and limits, measured in this run

-- cute.bench of cuMemcpyDtoD copying `half` bytes (2 half moved: read + written)
local function time_copy(half, flush_l2)
  local a, b = cute.alloc(half), cute.alloc(half)
  a:memset(0x3f800000, 4, half / 4)
  local r = cute.bench(function() b:copy_from(a, half) end, { bytes = 2 * half, flush_l2 = flush_l2 })
  a:free()
  b:free()
  return r
end

--- The device-to-device copy bandwidth of cuMemcpyDtoD on a large buffer,
-- counting bytes read plus bytes written (GB/s).
function H:copy_bandwidth()
  if self.peers.copy then return self.peers.copy end
  local bytes = self:size(1024 ^ 3, 64 * 1024 ^ 2)
  local r = time_copy(bytes, false)
  self.peers.copy = { name = "cuMemcpyDtoD", value = r.gbps, unit = "GB/s", result = r,
    shape = string.format("%.0f MiB", bytes / 1024 ^ 2) }
  return self.peers.copy
end

--- The copy bandwidth at a kernel's own size: cuMemcpyDtoD moving `bytes` (half
-- read, half written), the L2 flushed before each copy (GB/s). A kernel that
-- streams 128 MiB in 40 us pays its ramp-up and tail where the 1 GiB copy
-- (copy_bandwidth) hides them; this is the same cost for a copy.
function H:copy_bandwidth_of(bytes)
  local key = "copy " .. bytes
  if self.peers[key] then return self.peers[key] end
  local half = math.floor(bytes / 2 / 256) * 256
  local r = time_copy(half, true)
  self.peers[key] = { name = string.format("cuMemcpyDtoD moving %.0f MiB (the same bytes)", 2 * half / 1024 ^ 2),
    value = r.gbps, unit = "GB/s", result = r, shape = string.format("%.0f MiB", 2 * half / 1024 ^ 2) }
  return self.peers[key]
end

--- cuBLAS GEMM for row-major M x K @ K x N (TFLOP/s): a runner, measured by
-- run_case in turns with the case's kernel. opts: tf32, b_trans (B stored N x K,
-- K-major), label (added to the runner's name).
function H.cublas(_, m, n, k, dt, c_dt, opts)
  opts = opts or {}
  dt = cute.dtype.get(dt)
  c_dt = cute.dtype.get(c_dt or dt)
  local key = string.format("cublas %s/%s %dx%dx%d%s%s", dt.name, c_dt.name, m, n, k, opts.tf32 and " tf32" or "",
    opts.label and (" " .. opts.label) or "")
  local A, B, C = cute.alloc(m * k * dt.bytes), cute.alloc(k * n * dt.bytes), cute.alloc(m * n * c_dt.bytes)
  H.fill_random(A, dt, m * k, 1)
  H.fill_random(B, dt, k * n, 2)
  local spec = { a = A, b = B, c = C, m = m, n = n, k = k, dtype = dt, c_dtype = c_dt, tf32 = opts.tf32,
    b_trans = opts.b_trans }
  return {
    name = key, unit = "TFLOP/s", flops = 2 * m * n * k,
    run = function() cute.cublas.gemm_rowmajor(spec) end,
    free = function()
      A:free()
      B:free()
      C:free()
    end,
  }
end

-- The kernel and a runner peer measured in turns; returns both results.
local function interleaved(c, state, peer)
  local mine, theirs = {}, {}
  local total = c.min_time_ms or (H.quick() and 20 or 300)
  local settle = c.settle_ms or (H.quick() and 5 or SETTLE_MS)
  local each = { min_time_ms = total / ROUNDS, warmup_ms = settle, keep_times = true, flush_l2 = c.flush_l2 }
  for _ = 1, ROUNDS do
    for _, t in ipairs(cute.bench(function(rep) c.run(state, rep) end, each).times) do mine[#mine + 1] = t end
    for _, t in ipairs(cute.bench(peer.run, each).times) do theirs[#theirs + 1] = t end
  end
  return cute.bench.summarise(mine, { bytes = c.bytes, flops = c.flops }),
    cute.bench.summarise(theirs, { flops = peer.flops })
end

-- ---------------------------------------------------------------------------
-- Helpers for suites

--- Fills a device buffer with n uniform random values of dtype dt in [-1, 1)
-- (generated on the host, deterministic in seed) and returns the host copy.
function H.fill_random(buf, dt, n, seed, lo, hi)
  dt = cute.dtype.get(dt)
  local host = ffi.new(dt.storage_array, n)
  require("cute._c").rt.host_random(host, dt.code, n, 0, lo or -1, hi or 1, seed or 1)
  buf:copy_from_host(host, n * dt.bytes)
  return host
end

--- Reads n elements of dtype dt from a device buffer as a double array.
function H.download(buf, dt, n, offset)
  dt = cute.dtype.get(dt)
  local raw = ffi.new(dt.storage_array, n)
  buf:copy_to_host(raw, n * dt.bytes, offset)
  local d = ffi.new("double[?]", n)
  require("cute._c").rt.to_doubles(d, raw, dt.code, n)
  return d
end

--- Checks C = A @ B (device tensors, m x k and k x n; C as written by a GEMM)
-- against float64: every entry in quick mode, else `samples` entries spread
-- over C. The error of an entry is relative to the sum of |products|; an
-- entry left NaN (the poison) was not written. Returns ok, message.
function H.check_gemm(A, B, C, m, n, k, samples, tol)
  local c = C:to_host():doubles()
  local a, b = A:to_host():doubles(), B:to_host():doubles()
  local worst = 0
  local count = H.quick() and m * n or samples
  for t = 0, count - 1 do
    local i, j
    if H.quick() then i, j = t % m, math.floor(t / m) else i, j = (t * 7919) % m, (t * 104729) % n end
    local ref, mag = 0, 0
    for kk = 0, k - 1 do
      local p = a[i + kk * m] * b[kk + j * k]
      ref, mag = ref + p, mag + math.abs(p)
    end
    local got = c[i + j * m]
    if got ~= got then return false, string.format("(%d,%d) not written", i, j) end
    worst = math.max(worst, math.abs(got - ref) / math.max(mag, 1e-30))
  end
  return worst < tol, string.format("worst relative error %.3g", worst)
end

--- Relative error ||x - y|| / ||y|| over n doubles (NaN if any x is NaN).
function H.rel_error(x, y, n)
  local num, den = 0, 0
  for i = 0, n - 1 do
    local d = x[i] - y[i]
    if x[i] ~= x[i] then return 0 / 0 end
    num = num + d * d
    den = den + y[i] * y[i]
  end
  return math.sqrt(num / math.max(den, 1e-300))
end

-- ---------------------------------------------------------------------------
-- Running

local function fmt_value(v, unit)
  if not v then return "-" end
  if unit == "GB/s" and v >= 1000 then return string.format("%.3f TB/s", v / 1000) end
  return string.format("%.4g %s", v, unit)
end

--- True in check-only mode (CUTELUA_BENCH_CHECK=1, or bench/run.lua --check):
-- each case runs once and is checked; nothing is timed and no peer runs (for
-- running every kernel under compute-sanitizer: scripts/gpu-test --sanitize).
function H.check_only() return os.getenv("CUTELUA_BENCH_CHECK") == "1" end

function H:run_case(c)
  local row = { suite = c.suite, name = c.name, shape = c.shape or "", dtype = c.dtype or "", goal = c.goal }
  -- CUTELUA_TRACEBACK=full: an error's traceback goes to stderr as well
  local handler = os.getenv("CUTELUA_TRACEBACK") == "full"
    and function(m) io.stderr:write(debug.traceback(tostring(m), 2), "\n") return m end
    or function(m) return m end
  local ok, e = xpcall(function()
    local why = c.skip
    if type(why) == "function" then why = why(self) end
    if why then
      row.check = "skipped: " .. tostring(why)
      return
    end
    local state = c.setup and c.setup(self) or {}
    if H.check_only() then
      c.run(state, 1)
      cute.synchronize()
      local good, msg = true, nil
      if c.check then good, msg = c.check(state) end
      row.check = c.check and (good and "ok" or ("WRONG: " .. tostring(msg))) or "no check"
      if c.teardown then c.teardown(state) end
      return
    end
    local runner = type(c.peer) == "function" and c.peer(self)
    local r, peer
    if runner and runner.run then
      local ok, a, b = pcall(interleaved, c, state, runner)
      runner.free()
      if not ok then error(a, 0) end
      r = a
      peer = { name = runner.name, value = b.tflops, unit = runner.unit, result = b }
      self.peers[runner.name] = peer -- the report lists the last measurement of each
    else
      peer = runner or nil
      -- (settled as a runner peer's turns are, and as bench/torch_timing.py times the torch
      -- peers: SETTLE_MS untimed, then min_time_ms timed)
      r = cute.bench(function(rep) c.run(state, rep) end,
        { bytes = c.bytes, flops = c.flops, flush_l2 = c.flush_l2, min_time_ms = c.min_time_ms,
          warmup_ms = c.settle_ms or (H.quick() and 5 or SETTLE_MS) })
    end
    row.median_ms, row.p10_ms, row.p90_ms, row.reps = r.median_ms, r.p10_ms, r.p90_ms, r.reps
    row.spread = r.spread
    if c.bytes then row.value, row.unit = r.gbps, "GB/s" end
    if c.flops then row.value, row.unit = r.tflops, "TFLOP/s" end
    if c.check then
      local good, msg = c.check(state)
      row.check = good and "ok" or ("WRONG: " .. tostring(msg))
    else
      row.check = "no check"
    end
    if c.teardown then c.teardown(state) end
    if c.peer == "copy" then peer = self:copy_bandwidth() end
    if peer then
      row.peer, row.peer_value, row.peer_unit = peer.name, peer.value, peer.unit
      row.ratio = row.value / peer.value
    end
    for _, p in ipairs(c.also and c.also(self) or {}) do
      if p.unit == row.unit and p.value and p.value > 0 then
        row.also = row.also or {}
        row.also[#row.also + 1] = { name = p.name, value = p.value, unit = p.unit, ratio = row.value / p.value }
      end
    end
  end, handler)
  if not ok then row.check = "ERROR: " .. tostring(e) end
  collectgarbage()
  self.results[#self.results + 1] = row
  io.stdout:write(string.format("  %-38s %-16s %-6s %10s  %-14s ratio %s  %s\n", row.name, row.shape, row.dtype,
    row.median_ms and string.format("%.4g ms", row.median_ms) or "-", fmt_value(row.value, row.unit),
    row.ratio and string.format("%.3f", row.ratio) or "-", row.check))
  for _, a in ipairs(row.also or {}) do
    io.stdout:write(string.format("  %-38s ratio %.3f to %s %s\n", "", a.ratio, a.name, fmt_value(a.value, a.unit)))
  end
  io.stdout:flush()
  return row
end

function H:run_suite(name)
  self.suite = name
  local path = "bench/suites/" .. name .. ".lua"
  local chunk, e = loadfile(path)
  if not chunk then error("bench: cannot load suite " .. name .. ": " .. e, 0) end
  local first = #self.cases + 1
  chunk()(self)
  print(string.format("== suite %s (%d cases)", name, #self.cases - first + 1))
  for i = first, #self.cases do self:run_case(self.cases[i]) end
end

-- ---------------------------------------------------------------------------
-- Metadata and reports

local function shell(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local s = p:read("*a")
  p:close()
  s = s and s:gsub("%s+$", "")
  return (s ~= "" and s) or nil
end

function H:metadata()
  local info = cute.device_info()
  -- the bundle's commit first: it is the one the binary was built from (a
  -- checkout on the GPU machine may carry an older .git)
  local commit = os.getenv("CUTELUA_COMMIT")
  if not commit then
    local f = io.open(".gpu/commit")
    if f then
      commit = f:read("*l")
      f:close()
    end
  end
  commit = commit or shell("git rev-parse --short HEAD")
  return {
    gpu = info.name,
    sm_count = info.sm_count,
    compute_capability = info.compute_capability[1] .. "." .. info.compute_capability[2],
    memory_gb = string.format("%.0f", info.total_memory / 1e9),
    driver = info.driver_version,
    cuda = info.cuda_version,
    clocks = shell("nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader") or "n/a",
    date = os.date("!%Y-%m-%d %H:%M UTC"),
    commit = commit or "unknown",
    cutelua = cute.version(),
    quick = self:quick(),
  }
end

local function csv_field(v)
  v = v == nil and "" or tostring(v)
  if v:find('[,"\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
  return v
end

local COLUMNS = { "suite", "name", "shape", "dtype", "median_ms", "p10_ms", "p90_ms", "reps", "value", "unit",
  "peer", "peer_value", "peer_unit", "ratio", "goal", "check" }

local function json_value(v)
  local t = type(v)
  if t == "number" then return (v ~= v or v == math.huge or v == -math.huge) and "null" or string.format("%.17g", v) end
  if t == "boolean" then return tostring(v) end
  if t == "nil" then return "null" end
  return '"' .. tostring(v):gsub('[%c"\\]', function(ch) return string.format("\\u%04x", ch:byte()) end) .. '"'
end

local function json_object(t, keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = json_value(k) .. ": " .. json_value(t[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function H:markdown(meta)
  local out = {}
  out[#out + 1] = string.format("GPU: %s (%s SMs, CC %s, %s GB), driver %s, CUDA %s, clocks (sm, max sm, mem): %s",
    meta.gpu, meta.sm_count, meta.compute_capability, meta.memory_gb, meta.driver, meta.cuda, meta.clocks)
  out[#out + 1] = string.format("Date %s, commit %s, cutelua %s%s.", meta.date, meta.commit, meta.cutelua,
    meta.quick and " (QUICK MODE: not figures to quote)" or "")
  out[#out + 1] = ""
  out[#out + 1] = "| suite | kernel | shape | dtype | median | spread (p10-p90) | achieved | peer (same run) "
    .. "| ratio | goal | check |"
  out[#out + 1] = "|---|---|---|---|---|---|---|---|---|---|---|"
  for _, r in ipairs(self.results) do
    out[#out + 1] = string.format("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.suite, r.name, r.shape,
      r.dtype, r.median_ms and string.format("%.4g ms", r.median_ms) or "-",
      r.spread and string.format("%.1f%%", 100 * r.spread) or "-", fmt_value(r.value, r.unit),
      r.peer and (r.peer .. " " .. fmt_value(r.peer_value, r.peer_unit)) or "-",
      r.ratio and string.format("%.3f", r.ratio) or "-", r.goal and string.format(">= %.2f", r.goal) or "-",
      r.check or "-")
  end
  local also = {}
  for _, r in ipairs(self.results) do
    for _, a in ipairs(r.also or {}) do
      also[#also + 1] = string.format("| %s | %s | %s | %s | %s | %s | %.3f |", r.suite, r.name, r.shape, r.dtype,
        fmt_value(r.value, r.unit), a.name .. " " .. fmt_value(a.value, a.unit), a.ratio)
    end
  end
  if #also > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "Against other peers measured in this run:"
    out[#out + 1] = ""
    out[#out + 1] = "| suite | kernel | shape | dtype | achieved | peer | ratio |"
    out[#out + 1] = "|---|---|---|---|---|---|---|"
    for _, l in ipairs(also) do out[#out + 1] = l end
  end
  local names = {}
  for name in pairs(self.peers) do names[#names + 1] = name end
  table.sort(names)
  if #names > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "Peers and limits measured in this run:"
    out[#out + 1] = ""
    for _, name in ipairs(names) do
      local p = self.peers[name]
      out[#out + 1] = string.format("- %s%s: %s (median %.4g ms)", p.name, p.shape and (" " .. p.shape) or "",
        fmt_value(p.value, p.unit), p.result.median_ms)
    end
  end
  return table.concat(out, "\n") .. "\n"
end

function H:csv()
  local out = { table.concat(COLUMNS, ",") }
  for _, r in ipairs(self.results) do
    local f = {}
    for i, k in ipairs(COLUMNS) do f[i] = csv_field(r[k]) end
    out[#out + 1] = table.concat(f, ",")
  end
  return table.concat(out, "\n") .. "\n"
end

function H:json(meta)
  local keys = {}
  for k in pairs(meta) do keys[#keys + 1] = k end
  table.sort(keys)
  local rows = {}
  for _, r in ipairs(self.results) do rows[#rows + 1] = "  " .. json_object(r, COLUMNS) end
  local peers, names = {}, {}
  for name in pairs(self.peers) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local p = self.peers[name]
    peers[#peers + 1] = "  " .. json_object({ name = p.name, value = p.value, unit = p.unit,
      median_ms = p.result.median_ms }, { "name", "value", "unit", "median_ms" })
  end
  return "{\n\"meta\": " .. json_object(meta, keys) .. ",\n\"results\": [\n" .. table.concat(rows, ",\n")
    .. "\n],\n\"peers\": [\n" .. table.concat(peers, ",\n") .. "\n]\n}\n"
end

local function xml_escape(s) return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end

--- A horizontal bar chart of the ratios, with the goal of each case marked.
function H:svg(meta)
  local rows = {}
  for _, r in ipairs(self.results) do
    if r.ratio then rows[#rows + 1] = r end
  end
  local bar_h, gap, left, width, top = 22, 8, 330, 480, 56
  local h = top + #rows * (bar_h + gap) + 40
  local maxr = 1.2
  for _, r in ipairs(rows) do maxr = math.max(maxr, r.ratio * 1.05) end
  local function x(v) return left + width * v / maxr end
  local o = {}
  o[#o + 1] = string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">',
    left + width + 80, h)
  o[#o + 1] = string.format('<rect width="100%%" height="100%%" fill="white"/>')
  o[#o + 1] = '<text x="10" y="22" font-size="15">cutelua benchmarks: ratio to the peer measured in the same run</text>'
  o[#o + 1] = string.format('<text x="10" y="42" font-size="11" fill="#555">%s, driver %s, %s, commit %s%s</text>',
    xml_escape(meta.gpu), meta.driver, meta.date, xml_escape(meta.commit), meta.quick and " (quick mode)" or "")
  for i, r in ipairs(rows) do
    local y = top + (i - 1) * (bar_h + gap)
    local met = not r.goal or r.ratio >= r.goal
    local color = (r.check or ""):match("^ok") and (met and "#4c9a2a" or "#e0a030") or "#c0392b"
    o[#o + 1] = string.format('<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>', left - 8,
      y + bar_h * 0.7, xml_escape(r.name .. " " .. r.shape .. " " .. r.dtype))
    o[#o + 1] = string.format('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>', left, y,
      x(r.ratio) - left, bar_h, color)
    o[#o + 1] = string.format('<text x="%.1f" y="%d" font-size="12">%.3f</text>', x(r.ratio) + 4, y + bar_h * 0.7,
      r.ratio)
    if r.goal then
      o[#o + 1] = string.format('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black" stroke-dasharray="3,2"/>',
        x(r.goal), x(r.goal), y - 2, y + bar_h + 2)
    end
  end
  local base = top + #rows * (bar_h + gap)
  o[#o + 1] = string.format('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#333"/>', x(1), x(1), top - 6, base)
  o[#o + 1] = string.format('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">1.0 = peer</text>', x(1),
    base + 16)
  o[#o + 1] = string.format('<text x="%d" y="%d" font-size="11" fill="#555">dashed: goal; green: goal met, '
    .. 'orange: missed, red: wrong result</text>', left, base + 32)
  o[#o + 1] = "</svg>"
  return table.concat(o, "\n") .. "\n"
end

local function write(path, s)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
end

--- Writes results.md, results.csv, results.json and ratios.svg into dir.
function H:report(dir)
  local meta = self:metadata()
  local md = self:markdown(meta)
  print("")
  io.stdout:write(md)
  if dir then
    os.execute("mkdir -p '" .. dir .. "'")
    write(dir .. "/results.md", md)
    write(dir .. "/results.csv", self:csv())
    write(dir .. "/results.json", self:json(meta))
    write(dir .. "/ratios.svg", self:svg(meta))
    print("written: " .. dir .. "/results.{md,csv,json} and ratios.svg")
  end
end

--- True when every case ran and was checked right.
function H:all_correct()
  for _, r in ipairs(self.results) do
    local ch = r.check or ""
    if not ch:match("^ok") and not ch:match("^skipped: ") and ch ~= "no check" then return false end
  end
  return true
end

return H
