//! Scripts decode bytes from keys and arguments: struct.unpack (Redis's lua_struct): the input is a format, a NUL, then the data. Errors are Lua
//! errors; nothing else may happen.

#![no_main]

use ferrokv::script::lib::structlib;
use libfuzzer_sys::fuzz_target;
use mlua::{Function, Lua, Value};

thread_local! {
    static LUA: (Lua, Function, Function) = {
        let lua = Lua::new();
        let lib = structlib::open(&lua).expect("opens in a fresh state");
        let f: Function = lib.get("unpack").expect("the library has unpack");
        let other: Function = lib.get("size").expect("the library has size");
        (lua, f, other)
    };
}

fuzz_target!(|data: &[u8]| {
    LUA.with(|(lua, f, other)| {
        let (fmt, bytes) = match data.iter().position(|&b| b == 0) {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (data, &b""[..]),
        };
        let fmt = lua.create_string(fmt).expect("strings of any bytes");
        let bytes = lua.create_string(bytes).expect("strings of any bytes");
        let _ = f.call::<mlua::MultiValue>((fmt.clone(), bytes));
        let _ = other.call::<Value>(fmt);
        // Lua's collector would otherwise run at its own pace.
        let _ = lua.gc_collect();
    });
});
