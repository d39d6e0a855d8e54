//! The shape of the crate: its top-level modules form layers, and a module
//! may name only modules of lower layers (`crate::x` paths, anywhere in its
//! files, tests included). This keeps the engine (`exec`) on top, the
//! server model (`server`) below the command families, persistence and the
//! script engine below the model, and the keyspace (`store`) on utilities
//! alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules, lowest layer first; a module may import those of a
/// strictly lower layer.
const LAYERS: &[&[&str]] = &[
    &["util", "error"],
    &["config", "store"],
    &["net"],
    &["script", "persist"],
    &["server"],
    &["cmd"],
    &["exec"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level modules each module's files name as `crate::<module>`.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let first = rel.components().next().expect("a component");
            let module = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read file");
            let names = map.entry(module.clone()).or_default();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // Crate-root items (REDIS_VERSION, Server) are not modules.
                let is_module = name.starts_with(|c: char| c.is_ascii_lowercase());
                if is_module && name != module {
                    names.insert(name);
                }
            }
        }
    }
    map
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let map = imports(&src);
    let mut wrong = Vec::new();
    for (module, names) in &map {
        let Some(own) = layer_of(module) else {
            wrong.push(format!("{module} is in no layer: add it to LAYERS"));
            continue;
        };
        for name in names {
            match layer_of(name) {
                Some(l) if l < own => {}
                _ => wrong.push(format!("{module} imports {name}")),
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken: {wrong:#?}");
    // The keyspace stands on utilities alone.
    assert!(
        map.get("store")
            .is_some_and(|n| n.iter().all(|m| m == "util")),
        "store imports {:?}",
        map.get("store")
    );
}
