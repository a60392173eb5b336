//! Rebuilds the server when a migration is added or edited: `sqlx::migrate!`
//! embeds the files at compile time, and cargo would not notice them.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
