fn main() {
  napi_build::setup();
  // The addon looks for its worker executable under target/<triple>/<profile> in a source checkout.
  println!("cargo:rustc-env=CODECALL_TARGET={}", std::env::var("TARGET").unwrap_or_default());
  // macOS: without this the addon's install name is the build machine's path to the dylib.
  if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
      Ok("aarch64") => "arm64",
      _ => "x64",
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/codecall.darwin-{arch}.node");
  }
}
