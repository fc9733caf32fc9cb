-- The Lua side of examples/embed: functions the C program calls.
local ffi = require "ffi"
local cute = require "cute"

--- Fills n floats at ptr with i * scale; returns their sum.
function fill_ramp(ptr, n, scale)
  if n < 0 then error("fill_ramp: n must be >= 0, got " .. n, 2) end
  local p = ffi.cast("float *", ptr)
  local sum = 0
  for i = 0, n - 1 do
    p[i] = i * scale
    sum = sum + i * scale
  end
  return sum
end

function describe()
  return "cutelua " .. cute.version() .. " embedded"
end
