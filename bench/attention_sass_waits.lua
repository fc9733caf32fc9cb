-- Where ptxas puts the Hopper attention kernel's waits (not a test; needs a
-- disassembler: nvdisasm or cuobjdump, which the GPU machine has). In the main
-- loop each key block waits for its S = Q K^T (WARPGROUP.DEPBAR.LE gsb0, 0x1)
-- and, after the softmax, for the previous block's P V (DEPBAR.LE gsb0, 0x0):
-- the softmax's exponentials (MUFU.EX2) between the two are the work that
-- overlaps the P V. For each of the suite's short rows, the default plan and
-- the plan with opts.config fields from AB (default "unmasked_loop=1"), the
-- exponentials between each DEPBAR 0x1 and the next DEPBAR 0x0, a section a loop
-- (SASS_HIST=1: also each section's most frequent opcodes, and those of the
-- first section's part after its last MUFU.EX2; SASS_DUMP=PATTERN: the text of the
-- first section and the 120 lines after it of each kernel whose name matches the
-- Lua pattern):
--   cutelua bench/attention_sass_waits.lua
local cute = require "cute"
package.path = "bench/?.lua;" .. package.path
local ab = require("attention_config").parse(os.getenv("AB") or "unmasked_loop=1")

local HIST = os.getenv("SASS_HIST") == "1"
local DUMP = os.getenv("SASS_DUMP")

-- The first section's lines (from the S wait) and the 120 after it.
local function first_section(sass)
  local out, state, after = {}, 0, 0
  for line in sass:gmatch("[^\n]+") do
    if state == 0 and line:find("DEPBAR.LE gsb0, 0x1", 1, true) then state = 1 end
    if state > 0 then out[#out + 1] = line end
    if state == 1 and line:find("DEPBAR.LE gsb0, 0x0", 1, true) then state = 2 end
    if state == 2 then
      after = after + 1
      if after > 120 then break end
    end
  end
  return table.concat(out, "\n")
end

-- An instruction's opcode (its predicate left out), nil for a line with none.
local function opcode(line)
  local text = line:gsub("/%*.-%*/", "")
  for word in text:gmatch("%S+") do
    if not word:find("^@") then return word:match("^[%u%d%._]+") end
  end
end

-- The most frequent opcodes of a list, as "OP xN" by count.
local function histogram(ops)
  local n, keys = {}, {}
  for _, op in ipairs(ops) do
    if not n[op] then keys[#keys + 1] = op end
    n[op] = (n[op] or 0) + 1
  end
  table.sort(keys, function(a, b) return n[a] > n[b] or (n[a] == n[b] and a < b) end)
  local out = {}
  for i = 1, math.min(#keys, 10) do out[i] = keys[i] .. " x" .. n[keys[i]] end
  return table.concat(out, ", ")
end

local function sections(sass)
  local out, hist, open, ex2, ops = {}, {}, false, 0, {}
  for line in sass:gmatch("[^\n]+") do
    if line:find("DEPBAR.LE gsb0, 0x1", 1, true) then
      open, ex2, ops = true, 0, {}
    elseif open and line:find("DEPBAR.LE gsb0, 0x0", 1, true) then
      out[#out + 1], open = ex2, false
      local tail = {}
      for i = #ops, 1, -1 do
        if ops[i] == "MUFU.EX2" then break end
        table.insert(tail, 1, ops[i])
      end
      hist[#hist + 1] = string.format("  section %d (%d instructions): %s\n  after its last MUFU.EX2 (%d): %s",
        #out, #ops, histogram(ops), #tail, histogram(tail))
    elseif open then
      local op = opcode(line)
      if op then
        ops[#ops + 1] = op
        if op == "MUFU.EX2" then ex2 = ex2 + 1 end
      end
    end
  end
  return out, hist
end

local rows = { { 64, false, 512 }, { 64, true, 512 }, { 64, false, 2048 }, { 64, true, 2048 }, { 128, false, 512 },
  { 128, true, 512 }, { 128, true, 2048 }, { 256, false, 512 }, { 256, true, 512 } }
for _, r in ipairs(rows) do
  local d, causal, s = r[1], r[2], r[3]
  local Q = cute.fake_tensor(cute.bf16, { math.floor(16384 / s), s, d == 64 and 32 or 16, d }, "row")
  for _, cfg in ipairs { {}, ab } do
    local p = cute.lib.attention.plan(Q, Q, Q, nil, { arch = "sm_90a", causal = causal, config = cfg })
    local h = p.kernel:compile(unpack(p.args))
    local ok, sass = pcall(h.sass, h)
    if not ok then
      print("no disassembler (nvdisasm or cuobjdump): " .. tostring(sass))
      return
    end
    local counts, hist = sections(sass)
    print(string.format("d %d %s S %d %-70s MUFU.EX2 between the S and P V waits: %s", d,
      causal and "causal" or "      ", s, p.kernel.name, table.concat(counts, " / ")))
    if HIST then print(table.concat(hist, "\n")) end
    if DUMP and p.kernel.name:find(DUMP) then print(first_section(sass)) end
  end
end
