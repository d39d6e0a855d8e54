-- ferrokv's Lua environment setup, run once per Lua state with the real
-- globals as its environment. It builds what Redis 7.0 gets from its patched
-- Lua: read-only globals and library tables, the nonexistent-global error,
-- the redis.* API around the Rust primitives in R, the error handler that
-- records where a script failed, and pcall that unwraps error tables
-- (loadstring, rawget, rawset, next, pairs and the metatable functions are
-- in sandbox.rs).
local R, dbg = ...
local G = _G
local error, type, tostring, next, pairs, ipairs = error, type, tostring, next, pairs, ipairs
local rawget, rawset, setmetatable, getmetatable = rawget, rawset, setmetatable, getmetatable
local pcall, xpcall = pcall, xpcall
local getinfo = dbg.getinfo
local unpack = unpack
local error_value = R.error_value

-- Proxy tables stand for the read-only tables: every write lands on the
-- empty proxy and raises; reads go through __index to the real table.
local real_of = setmetatable({}, { __mode = "k" })
local meta_view = setmetatable({}, { __mode = "k" })
local function ro_newindex()
  error("Attempt to modify a readonly table", 2)
end
local function readonly(t)
  local p = {}
  real_of[p] = t
  setmetatable(p, { __index = t, __newindex = ro_newindex, __metatable = false })
  return p
end

-- redis.* API --------------------------------------------------------------
local redis = {}
redis.call = R.call
redis.pcall = R.pcall
redis.error_reply = R.error_reply
redis.status_reply = R.status_reply
redis.sha1hex = R.sha1hex
redis.log = R.log
redis.setresp = R.setresp
redis.set_repl = R.set_repl
redis.acl_check_cmd = R.acl_check_cmd
redis.replicate_commands = function()
  return true
end
redis.breakpoint = R.breakpoint
redis.debug = R.debug
redis.LOG_DEBUG = 0
redis.LOG_VERBOSE = 1
redis.LOG_NOTICE = 2
redis.LOG_WARNING = 3
redis.REPL_NONE = 0
redis.REPL_AOF = 1
redis.REPL_SLAVE = 2
redis.REPL_REPLICA = 2
redis.REPL_ALL = 3
redis.REDIS_VERSION = R.version
redis.REDIS_VERSION_NUM = R.version_num
G.redis = redis

-- Error handler: remembers the script position of the failure.
local function err_handler(err)
  local level = 2
  local i = getinfo(level, "nSl")
  while i and (i.what == "C" or i.what == "tail" or i.source == "=ferrokv") do
    level = level + 1
    i = getinfo(level, "nSl")
  end
  if type(err) == "userdata" then
    err = error_value(err)
  end
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring(err) }
  end
  if i then
    err["source"] = i.source
    err["line"] = i.currentline
  end
  return err
end
G.__redis__err__handler = err_handler

-- Base library replacements (more in sandbox.rs) ----------------------------
local PG -- the proxy of _G, set below

-- Redis's pcall hands back the message of an error table, not the table.
local function pcall_result(ok, ...)
  if ok then
    return true, ...
  end
  local e = ...
  if type(e) == "userdata" then
    e = error_value(e)
  end
  if type(e) == "table" then
    local m = rawget(e, "err")
    if type(m) == "string" then
      return false, m
    end
  end
  return false, e
end
G.pcall = function(f, ...)
  return pcall_result(pcall(f, ...))
end

-- Remove what Redis does not expose.
for _, name in ipairs({ "print", "dofile", "loadfile", "module", "require", "newproxy", "getfenv", "setfenv", "debug" }) do
  rawset(G, name, nil)
end

-- Freeze the libraries.
for _, name in ipairs({ "redis", "string", "math", "table", "coroutine", "cjson", "bit", "struct", "cmsgpack" }) do
  local lib = rawget(G, name)
  if lib ~= nil then
    rawset(G, name, readonly(lib))
  end
end

-- String methods resolve through the frozen `string`, so that
-- getmetatable('').__index == string holds as in Redis.
getmetatable("").__index = rawget(G, "string")

-- Globals: reads of missing names fail, every write fails.
local gmeta = {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
}
setmetatable(G, gmeta)
PG = readonly(G)
meta_view[PG] = readonly(gmeta)
rawset(G, "_G", PG)

-- The runner: calls a compiled script under the error handler.
local function run(f)
  local ok, r = xpcall(f, err_handler)
  return ok, r
end

-- Functions (FUNCTION LOAD): library code runs in LP. While a library
-- loads, LP sees only the load-time API (`redis.register_function`,
-- `redis.log`...); afterwards it sees the script globals, as Redis 7.0
-- swaps the __index of its globals.
local missing = gmeta.__index
local load_api = R.load_api
setmetatable(load_api, { __index = missing, __newindex = ro_newindex, __metatable = false })
local LT = setmetatable({ redis = load_api }, { __index = missing, __newindex = ro_newindex, __metatable = false })
local lp_meta = { __index = G, __newindex = ro_newindex, __metatable = false }
local LP = setmetatable({}, lp_meta)
local function set_loading(on)
  if on then
    lp_meta.__index = LT
  else
    lp_meta.__index = G
  end
end
local function run_fn(f, keys, args)
  local ok, r = xpcall(function()
    return f(keys, args)
  end, err_handler)
  return ok, r
end
-- Runs library code while loading: plain errors are reported as they are.
local function run_load(f)
  local ok, r = xpcall(f, function(e)
    if type(e) == "userdata" then
      e = error_value(e)
    end
    if type(e) ~= "table" then
      e = { err = "ERR " .. tostring(e) }
    end
    return e
  end)
  return ok, r
end

return PG, run, LP, set_loading, run_fn, run_load, real_of, meta_view
