//! The Lua libraries Redis bundles, written in Rust with Redis's behaviour:
//! `bit` (LuaBitOp), `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and
//! `struct` (Roberto Ierusalimschy's struct library).

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;
