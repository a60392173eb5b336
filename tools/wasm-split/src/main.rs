//! `paddlecloud-wasm-split IN.wasm PKG_DIR MAIN_OUT.wasm OUTPUT_NAME`
//!
//! Splits the raw (pre-wasm-bindgen) bundle at its `#[lazy]` split points:
//! writes the main module to MAIN_OUT.wasm (for wasm-bindgen), the split
//! and shared chunks and their loader into PKG_DIR, and the prefetch map
//! Leptos reads on the server (`PKG_DIR/__wasm_split_manifest.json`), with
//! the module names Leptos's hydration script expects.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--version") {
        println!("paddlecloud-wasm-split {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let [input, pkg, main_out, name] = args.as_slice() else {
        eprintln!("usage: paddlecloud-wasm-split IN.wasm PKG_DIR MAIN_OUT.wasm OUTPUT_NAME");
        return ExitCode::from(2);
    };
    match split(Path::new(input), Path::new(pkg), Path::new(main_out), name) {
        Ok(count) => {
            println!("split {input} into the main module and {count} lazily loaded modules");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("paddlecloud-wasm-split: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn split(input: &Path, pkg: &Path, main_out: &Path, name: &str) -> Result<usize, String> {
    let wasm = std::fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let main_module = format!("/pkg/{name}.js");
    let mut options = wasm_split_cli_support::Options::new(&wasm);
    options.output_dir = pkg;
    options.main_out_path = main_out;
    options.main_module = &main_module;
    // The loader name Leptos's <HydrationScripts> preloads.
    options.link_name = "./__wasm_split.______________________.js";
    let split = wasm_split_cli_support::transform(options).map_err(|e| format!("{e:#}"))?;
    let manifest: BTreeMap<_, _> = split.prefetch_map.into_iter().collect();
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    let path = pkg.join("__wasm_split_manifest.json");
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(split.split_modules.len())
}
