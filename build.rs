fn main() {
  napi_build::setup();
  // The addon looks for its worker executable under target/<triple>/<profile> in a source checkout.
  println!("cargo:rustc-env=CODECALL_TARGET={}", std::env::var("TARGET").unwrap_or_default());
}
