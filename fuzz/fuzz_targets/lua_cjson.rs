//! Scripts decode bytes from keys and arguments: cjson.decode (Redis's lua_cjson, strict parser), and cjson.encode of what decoded. Errors are Lua
//! errors; nothing else may happen.

#![no_main]

use ferrokv::script::lib::cjson;
use libfuzzer_sys::fuzz_target;
use mlua::{Function, Lua, Value};

thread_local! {
    static LUA: (Lua, Function, Function) = {
        let lua = Lua::new();
        let lib = cjson::open(&lua).expect("opens in a fresh state");
        let f: Function = lib.get("decode").expect("the library has decode");
        let other: Function = lib.get("encode").expect("the library has encode");
        (lua, f, other)
    };
}

fuzz_target!(|data: &[u8]| {
    LUA.with(|(lua, f, other)| {
        let s = lua.create_string(data).expect("strings of any bytes");
        if let Ok(v) = f.call::<Value>(s) {
            let _ = other.call::<Value>(v);
        }
        // Lua's collector would otherwise run at its own pace.
        let _ = lua.gc_collect();
    });
});
