-- Where ptxas puts the Hopper attention kernel's waits (not a test; needs a
-- disassembler: nvdisasm or cuobjdump, which the GPU machine has). In the main
-- loop each key block waits for its S = Q K^T (WARPGROUP.DEPBAR.LE gsb0, 0x1)
-- and, after the softmax, for the previous block's P V (DEPBAR.LE gsb0, 0x0):
-- the softmax's exponentials (MUFU.EX2) between the two are the work that
-- overlaps the P V. For each of the suite's short rows, the default plan and
-- the plan with opts.config fields from AB (default "unmasked_loop=1"), the
-- exponentials between each DEPBAR 0x1 and the next DEPBAR 0x0, a section a loop:
--   cutelua bench/attention_sass_waits.lua
local cute = require "cute"
package.path = "bench/?.lua;" .. package.path
local ab = require("attention_config").parse(os.getenv("AB") or "unmasked_loop=1")

local function sections(sass)
  local out, open, ex2 = {}, false, 0
  for line in sass:gmatch("[^\n]+") do
    if line:find("DEPBAR.LE gsb0, 0x1", 1, true) then
      open, ex2 = true, 0
    elseif open and line:find("MUFU.EX2", 1, true) then
      ex2 = ex2 + 1
    elseif open and line:find("DEPBAR.LE gsb0, 0x0", 1, true) then
      out[#out + 1], open = ex2, false
    end
  end
  return out
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
    print(string.format("d %d %s S %d %-70s MUFU.EX2 between the S and P V waits: %s", d,
      causal and "causal" or "      ", s, p.kernel.name, table.concat(sections(sass), " / ")))
  end
end
