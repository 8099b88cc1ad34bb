//! Compiles the one C file: INCRBYFLOAT's `long double` arithmetic (see csrc/longdouble.c).
fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .warnings(true)
        .compile("rialto_longdouble");
}
