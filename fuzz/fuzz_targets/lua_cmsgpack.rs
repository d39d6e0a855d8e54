//! Scripts decode bytes from keys and arguments: cmsgpack.unpack (Redis's lua_cmsgpack), and cmsgpack.pack of what unpacked. Errors are Lua
//! errors; nothing else may happen.

#![no_main]

use ferrokv::script::lib::cmsgpack;
use libfuzzer_sys::fuzz_target;
use mlua::{Function, Lua, Value};

thread_local! {
    static LUA: (Lua, Function, Function) = {
        let lua = Lua::new();
        let lib = cmsgpack::open(&lua).expect("opens in a fresh state");
        let f: Function = lib.get("unpack").expect("the library has unpack");
        let other: Function = lib.get("pack").expect("the library has pack");
        (lua, f, other)
    };
}

fuzz_target!(|data: &[u8]| {
    LUA.with(|(lua, f, other)| {
        let s = lua.create_string(data).expect("strings of any bytes");
        if let Ok(vals) = f.call::<mlua::MultiValue>(s) {
            let _ = other.call::<Value>(vals);
        }
        // Lua's collector would otherwise run at its own pace.
        let _ = lua.gc_collect();
    });
});
