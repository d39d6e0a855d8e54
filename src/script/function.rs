//! Redis 7.0 functions (function_lua.c, functions.c): libraries loaded with
//! FUNCTION LOAD register named callbacks with `redis.register_function`,
//! and FCALL runs them. Libraries share the engine's Lua state; their code
//! sees only the load-time API while it loads.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value, Variadic};

use super::lua::{error_text, raise};
use super::{sflag, Engine};
use crate::error::Error;

/// One registered function.
#[derive(Clone)]
pub struct Func {
    /// Its name.
    pub name: String,
    /// The Lua callback, called with KEYS and ARGV, held in the Lua
    /// registry (a `Function` handle would take a slot of mlua's reference
    /// stack, which Lua 5.1 caps near 8,000).
    pub callback: std::rc::Rc<mlua::RegistryKey>,
    /// Flags (`sflag`).
    pub flags: u32,
    /// The description, if given.
    pub description: Option<Vec<u8>>,
}

/// A loaded library.
#[derive(Clone)]
pub struct Library {
    /// Its name.
    pub name: String,
    /// The code it was loaded from.
    pub code: Vec<u8>,
    /// Its functions by name.
    pub functions: BTreeMap<String, Func>,
}

/// All libraries, and which library holds each function.
#[derive(Default, Clone)]
pub struct Libraries {
    /// Libraries by name.
    pub libs: BTreeMap<String, Library>,
    /// Function name, lowercase (Redis looks functions up ignoring case),
    /// to library name.
    pub index: HashMap<String, String>,
}

impl Libraries {
    /// Number of functions over all libraries.
    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    /// What the libraries take outside the Lua state (INFO
    /// `used_memory_functions`): their names and code, their functions'
    /// names, descriptions and records, and the name index.
    pub fn memory(&self) -> usize {
        use std::mem::size_of;
        let function = |f: &Func| {
            size_of::<(String, Func)>() + f.name.len() + f.description.as_ref().map_or(0, Vec::len)
        };
        let library = |l: &Library| {
            size_of::<(String, Library)>()
                + 2 * l.name.len()
                + l.code.len()
                + l.functions.values().map(function).sum::<usize>()
        };
        let index: usize = self
            .index
            .iter()
            .map(|(f, l)| size_of::<(String, String)>() + f.len() + l.len())
            .sum();
        self.libs.values().map(library).sum::<usize>() + index
    }

    fn remove(&mut self, name: &str) -> Option<Library> {
        let lib = self.libs.remove(name)?;
        for f in lib.functions.keys() {
            self.index.remove(&f.to_ascii_lowercase());
        }
        Some(lib)
    }

    fn insert(&mut self, lib: Library) {
        for f in lib.functions.keys() {
            self.index.insert(f.to_ascii_lowercase(), lib.name.clone());
        }
        self.libs.insert(lib.name.clone(), lib);
    }
}

/// FCALL of a function no library registered.
pub const FUNCTION_NOT_FOUND: Error = Error::err("Function not found");

/// How long library code may run at load (Redis's LOAD_TIMEOUT_MS).
const LOAD_TIMEOUT_MS: u64 = 500;

/// Functions registered by the library being loaded (None outside a load).
pub type Pending = Rc<RefCell<Option<BTreeMap<String, Func>>>>;

/// Flag names as FUNCTION LIST shows them.
pub const FLAG_NAMES: &[(&str, u32)] = &[
    ("no-writes", sflag::NO_WRITES),
    ("allow-oom", sflag::ALLOW_OOM),
    ("allow-stale", sflag::ALLOW_STALE),
    ("no-cluster", sflag::NO_CLUSTER),
    ("allow-cross-slot-keys", sflag::ALLOW_CROSS_SLOT),
];

const BAD_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The `redis` table libraries see while they load.
pub fn load_api(lua: &Lua, prims: &Table, pending: Pending) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let register = lua.create_function(move |lua, args: Variadic<Value>| {
        let func = read_register_args(lua, &args)?;
        let mut guard = pending.borrow_mut();
        let Some(map) = guard.as_mut() else {
            return raise(
                "ERR redis.register_function can only be called on FUNCTION LOAD command",
            );
        };
        if map.contains_key(&func.name) {
            return raise("ERR Function already exists in the library");
        }
        map.insert(func.name.clone(), func);
        Ok(())
    })?;
    t.raw_set("register_function", register)?;
    t.raw_set("log", prims.raw_get::<Value>("log")?)?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        t.raw_set(name, v)?;
    }
    t.raw_set("REDIS_VERSION", prims.raw_get::<Value>("version")?)?;
    t.raw_set("REDIS_VERSION_NUM", prims.raw_get::<Value>("version_num")?)?;
    Ok(t)
}

fn parse_flags(v: &Value) -> mlua::Result<u32> {
    let Value::Table(t) = v else {
        return raise(
            "ERR flags argument to redis.register_function must be a table representing function flags",
        );
    };
    let mut flags = 0;
    for pair in t.clone().pairs::<Value, Value>() {
        let (_, f) = pair?;
        let Value::String(s) = f else {
            return raise("ERR unknown flag given");
        };
        let s = s.as_bytes();
        match FLAG_NAMES.iter().find(|(n, _)| n.as_bytes() == s.as_ref()) {
            Some((_, bit)) => flags |= bit,
            None => return raise("ERR unknown flag given"),
        }
    }
    Ok(flags)
}

fn read_register_args(lua: &Lua, args: &[Value]) -> mlua::Result<Func> {
    let (name, callback, flags, description) = match args {
        [Value::Table(t)] => {
            let (mut name, mut callback, mut flags, mut description) = (None, None, 0, None);
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair?;
                let Value::String(k) = k else {
                    return raise("ERR named argument key given to redis.register_function is not a string");
                };
                match k.as_bytes().as_ref() {
                    b"function_name" => match v {
                        Value::String(s) => name = Some(s.as_bytes().to_vec()),
                        _ => return raise("ERR function_name argument given to redis.register_function must be a string"),
                    },
                    b"description" => match v {
                        Value::String(s) => description = Some(s.as_bytes().to_vec()),
                        _ => return raise("ERR description argument given to redis.register_function must be a string"),
                    },
                    b"callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => return raise("ERR callback argument given to redis.register_function must be a function"),
                    },
                    b"flags" => flags = parse_flags(&v)?,
                    _ => return raise("ERR unknown argument given to redis.register_function"),
                }
            }
            let Some(name) = name else {
                return raise("ERR redis.register_function must get a function name argument");
            };
            let Some(callback) = callback else {
                return raise("ERR redis.register_function must get a callback argument");
            };
            (name, callback, flags, description)
        }
        [_] => return raise("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
        [name, callback] => {
            let Value::String(name) = name else {
                return raise("ERR first argument to redis.register_function must be a string");
            };
            let Value::Function(callback) = callback else {
                return raise("ERR second argument to redis.register_function must be a function");
            };
            (name.as_bytes().to_vec(), callback.clone(), 0, None)
        }
        _ => return raise("ERR wrong number of arguments to redis.register_function"),
    };
    if !valid_name(&name) {
        return raise(BAD_NAME);
    }
    Ok(Func {
        name: String::from_utf8_lossy(&name).into_owned(),
        callback: std::rc::Rc::new(lua.create_registry_value(callback)?),
        flags,
        description,
    })
}

/// Parses `#!lua name=<lib>` as Redis's functionExtractLibMetaData and
/// functionsCreateWithLibraryCtx check it: the shebang split with
/// `sdssplitargs`, `name=` in any case and once, a valid name, a known
/// engine. Returns the library name and the shebang length.
pub fn parse_metadata(code: &[u8]) -> Result<(String, usize), Error> {
    if !code.starts_with(b"#!") {
        return Err(Error::err("Missing library metadata"));
    }
    let invalid = || Error::err("Invalid library metadata");
    let end = code.iter().position(|&b| b == b'\n').ok_or_else(invalid)?;
    let (mut buf, mut lens) = (Vec::new(), Vec::new());
    crate::util::splitargs::split_args(&code[..end], &mut buf, &mut lens).map_err(|_| invalid())?;
    let mut parts = Vec::with_capacity(lens.len());
    let mut at = 0;
    for len in lens {
        parts.push(String::from_utf8_lossy(&buf[at..at + len]).into_owned());
        at += len;
    }
    let Some(first) = parts.first() else {
        return Err(invalid());
    };
    let engine = first.get(2..).unwrap_or("").to_string();
    let mut name: Option<String> = None;
    for p in &parts[1..] {
        match p.get(..5).filter(|k| k.eq_ignore_ascii_case("name=")) {
            Some(_) if name.is_some() => {
                return Err(Error::err(
                    "Invalid metadata value, name argument was given multiple times",
                ))
            }
            Some(_) => name = Some(p[5..].to_string()),
            None => {
                return Err(Error::err_owned(format!(
                    "Invalid metadata value given: {p}"
                )))
            }
        }
    }
    let Some(name) = name else {
        return Err(Error::err("Library name was not given"));
    };
    if !valid_name(name.as_bytes()) {
        return Err(Error::raw(BAD_NAME));
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(Error::err_owned(format!("Engine '{engine}' not found")));
    }
    Ok((name, end))
}

impl Engine {
    /// FUNCTION LOAD: compiles and runs the library code, registers its
    /// functions. Returns the library name.
    pub fn load_library(&mut self, code: &[u8], replace: bool) -> Result<String, Error> {
        let (name, skip) = parse_metadata(code)?;
        if self.libraries.libs.contains_key(&name) && !replace {
            return Err(Error::err_owned(format!("Library '{name}' already exists")));
        }
        let func = self
            .lua
            .load(&code[skip..])
            .set_name("@user_function")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(self.parts.fn_env.clone())
            .into_function()
            .map_err(|e| {
                Error::err_owned(format!("Error compiling function: {}", error_text(&e)))
            })?;
        *self.parts.pending.borrow_mut() = Some(BTreeMap::new());
        let _ = self.parts.set_loading.call::<()>(true);
        let _ = self.lua.set_memory_limit(self.run.mem_limit.get());
        self.run.load_deadline.set(Some(
            std::time::Instant::now() + std::time::Duration::from_millis(LOAD_TIMEOUT_MS),
        ));
        let result = self.parts.run_load.call::<(bool, Value)>(func);
        self.run.load_deadline.set(None);
        if self.run.hook_every_line.get() {
            super::lua::arm_hook(&self.lua, self.run.clone(), false);
        }
        let _ = self.lua.set_memory_limit(0);
        let _ = self.parts.set_loading.call::<()>(false);
        let functions = self.parts.pending.borrow_mut().take().unwrap_or_default();
        match result {
            Ok((true, _)) => {}
            Ok((false, err)) => {
                let msg = match &err {
                    Value::Table(t) => match t.raw_get::<Value>("err") {
                        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                        _ => "ERR unknown error".into(),
                    },
                    other => other.to_string().unwrap_or_default(),
                };
                return Err(Error::err_owned(format!(
                    "Error registering functions: {msg}"
                )));
            }
            Err(e) => {
                return Err(Error::err_owned(format!(
                    "Error registering functions: {}",
                    error_text(&e)
                )))
            }
        }
        if functions.is_empty() {
            return Err(Error::err("No functions registered"));
        }
        for f in functions.keys() {
            if let Some(owner) = self.libraries.index.get(&f.to_ascii_lowercase()) {
                if *owner != name {
                    return Err(Error::err_owned(format!("Function {f} already exists")));
                }
            }
        }
        self.libraries.remove(&name);
        self.libraries.insert(Library {
            name: name.clone(),
            code: code.to_vec(),
            functions,
        });
        Ok(name)
    }

    /// Removes a library; false when there is none by that name.
    pub fn delete_library(&mut self, name: &str) -> bool {
        self.libraries.remove(name).is_some()
    }

    /// Every library's code, in name order (what an RDB file saves).
    pub fn library_codes(&self) -> Vec<Vec<u8>> {
        self.libraries
            .libs
            .values()
            .map(|l| l.code.clone())
            .collect()
    }

    /// Whether the libraries are exactly `codes` (in name order), without
    /// copying them.
    pub fn has_library_codes(&self, codes: &[Vec<u8>]) -> bool {
        self.libraries.libs.len() == codes.len()
            && self
                .libraries
                .libs
                .values()
                .zip(codes)
                .all(|(l, c)| l.code == *c)
    }

    /// FUNCTION FLUSH.
    pub fn flush_libraries(&mut self) {
        self.libraries = Libraries::default();
        let _ = self.lua.gc_collect();
    }

    /// The function called `name`, in any case.
    pub fn function(&self, name: &str) -> Option<&Func> {
        let lib = self.libraries.index.get(&name.to_ascii_lowercase())?;
        let lib = self.libraries.libs.get(lib)?;
        lib.functions
            .iter()
            .find(|(f, _)| f.eq_ignore_ascii_case(name))
            .map(|(_, f)| f)
    }

    /// FCALL / FCALL_RO.
    pub fn fcall(
        &mut self,
        run: super::Run<'_, '_>,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        ro: bool,
    ) -> Result<(), Error> {
        let name = String::from_utf8_lossy(name).into_owned();
        let Some(func) = self.function(&name) else {
            return Err(FUNCTION_NOT_FOUND);
        };
        let callback: Function = self
            .lua
            .registry_value(&func.callback)
            .map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
        let table = |items: &[&[u8]]| -> Result<Table, Error> {
            let t = self
                .lua
                .create_table_with_capacity(items.len(), 0)
                .map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
            for (i, a) in items.iter().enumerate() {
                let s = self
                    .lua
                    .create_string(a)
                    .map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
                t.raw_set(i + 1, s)
                    .map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
            }
            Ok(t)
        };
        let (k, a) = (table(keys)?, table(args)?);
        let run_fn = self.parts.run_fn.clone();
        let flags = func.flags;
        self.call(run, &name, ro, true, flags, || {
            run_fn.call::<(bool, Value)>((callback, k, a))
        })
    }
}
