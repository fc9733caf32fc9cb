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

return M
