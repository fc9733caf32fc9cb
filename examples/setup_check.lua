-- setup_check: what this machine offers cutelua (runs anywhere).
--   cutelua examples/setup_check.lua
local cute = require "cute"

print("cutelua " .. cute.version() .. " on " .. jit.version .. " (" .. jit.os .. "/" .. jit.arch .. ")")
local libs = cute.libraries()
for _, key in ipairs { "cuda", "nvvm", "nvjitlink", "cublas", "cublaslt" } do
  local l = libs[key]
  print(string.format("  %-10s %s", key, l.ok and ("found: " .. l.path) or ("missing: " .. l.error:match("^[^\n]*"))))
end
