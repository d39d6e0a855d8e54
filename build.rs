//! Compiles the small C helpers that need `long double` (INCRBYFLOAT).
fn main() {
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    cc::Build::new()
        .file("csrc/ldouble.c")
        .opt_level(2)
        .compile("ferrokv_ldouble");
}
