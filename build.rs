//! Compiles the small C helpers that need `long double` (INCRBYFLOAT), and
//! tells the code whether it is built under a sanitizer.
fn main() {
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    cc::Build::new()
        .file("csrc/ldouble.c")
        .opt_level(2)
        .compile("ferrokv_ldouble");
    // `-Zsanitizer=...` (scripts/asan.sh, the fuzz targets): the binary
    // then allocates through the system allocator, which the sanitizer
    // replaces, so that every heap access is checked.
    println!("cargo::rustc-check-cfg=cfg(ferrokv_sanitize)");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let sanitized = flags.split('\x1f').any(|f| f.contains("sanitizer="));
    if sanitized {
        println!("cargo:rustc-cfg=ferrokv_sanitize");
    }
    // jemalloc is the allocator except on MSVC and under a sanitizer, whose
    // allocator does the checking (Cargo.toml then leaves it out).
    println!("cargo::rustc-check-cfg=cfg(ferrokv_jemalloc)");
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if env != "msvc" && !sanitized {
        println!("cargo:rustc-cfg=ferrokv_jemalloc");
    }
}
