--- The attention bench scripts' config strings (bench/attention_sm90_probe.lua's
-- ATTN_CFG and AB, bench/ncu_target.lua's ATTN_CFG): "bm=64,bn=96,pingpong=0" ->
-- opts.config fields for cute.lib.attention_sm90, numbers as numbers and the
-- boolean fields as 1 or 0.
local M = {}

local BOOLEAN = { pingpong = true, persistent = true, o_vec = true, uniform_desc = true,
  lazy_rescale = true, sum_mma = true, tile_overlap = true, o_tma = true, unmasked_loop = true,
  late_k = true, early_p = true }

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
