--- The attention bench scripts' config strings (bench/attention_sm90_probe.lua's
-- ATTN_CFG and AB, bench/ncu_target.lua's ATTN_CFG): "bm=64,bn=96,pingpong=0" ->
-- opts.config fields for cute.lib.attention_sm90, numbers as numbers and the
-- boolean fields as 1 or 0.
local M = {}

-- (the kernel's boolean fields, and pingpong and persistent)
local BOOLEAN = { pingpong = true, persistent = true }
for _, key in ipairs(require("cute.lib.attention_sm90").BOOLEAN_CONFIG_KEYS) do BOOLEAN[key] = true end

--- The config table of a string of key=value pairs.
-- @param text the string ("" or nil: an empty table)
-- @return the table
-- @usage local c = require("attention_config").parse("bm=64,pingpong=0") -- {bm = 64, pingpong = false}
function M.parse(text)
  local c = {}
  for k, v in (text or ""):gmatch("([%w_]+)=([%w.]+)") do
    if BOOLEAN[k] then c[k] = v == "1" else c[k] = tonumber(v) end
  end
  return c
end

--- A forward problem of the attention suite's kind from "D:CAUSAL:B:H:S": bf16 Q, K and V
-- (B, S, H, D) uniform in [-1, 1], O (undefined) and the LSE (B, H, S) as f32.
-- @param spec the string, e.g. "64:0:32:32:512"
-- @return {d, causal, b, h, s, Q, K, V, O, LSE, flops (of one call)}
-- @usage local p = require("attention_config").problem("64:1:32:32:512")
function M.problem(spec)
  local d, c, b, h, s = spec:match("^(%d+):([01]):(%d+):(%d+):(%d+)$")
  assert(d, "a shape is D:CAUSAL:B:H:S, e.g. 64:0:32:32:512, got " .. tostring(spec))
  local cute = require "cute"
  local p = { d = tonumber(d), causal = c == "1", b = tonumber(b), h = tonumber(h), s = tonumber(s) }
  local shape = { p.b, p.s, p.h, p.d }
  p.Q = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 1)
  p.K = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 2)
  p.V = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 3)
  p.O = cute.tensor(cute.bf16, shape, "row")
  p.LSE = cute.tensor(cute.f32, { p.b, p.h, p.s }, "row")
  p.flops = 4 * p.b * p.h * p.s * p.s * p.d * (p.causal and 0.5 or 1)
  return p
end

return M
