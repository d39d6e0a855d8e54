//! The `cmsgpack` library.

use mlua::{Lua, Table};

/// Builds the library table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    lua.create_table()
}
