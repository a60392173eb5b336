//! The `paddlecloud` binary as an operator scripts it.

use crate::common::cli::paddlecloud;

#[test]
fn create_account_reads_the_password_from_stdin_and_applies_the_sign_up_rules() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let args = |name: &'static str| {
        vec![
            "admin",
            "create-account",
            "--name",
            name,
            "--email",
            "ops@example.com",
            "--password-stdin",
            "--data-dir",
            data,
        ]
    };

    let (ok, out, err) = paddlecloud(&args("research"), "a long password\n");
    assert!(ok, "{err}");
    assert!(
        out.contains("created account research (namespace pc-research)"),
        "{out}"
    );
    assert!(dir.path().join("paddlecloud.db").exists());

    let (ok, _, err) = paddlecloud(&args("research"), "a long password\n");
    assert!(!ok);
    assert!(
        err.contains("account: The account name “research” is taken"),
        "{err}"
    );

    let (ok, _, err) = paddlecloud(&args("other"), "short\n");
    assert!(!ok);
    assert!(
        err.contains("password: Password must be at least 8 characters."),
        "{err}"
    );
}

#[test]
fn serve_help_explains_every_setting_and_its_environment_variable() {
    let (ok, out, _) = paddlecloud(&["serve", "--help"], "");
    assert!(ok);
    for needle in [
        "--addr",
        "PADDLECLOUD_ADDR",
        "--data-dir",
        "PADDLECLOUD_DATA_DIR",
        "--database-url",
        "DATABASE_URL",
        "--secure-cookies",
    ] {
        assert!(out.contains(needle), "{needle} missing from:\n{out}");
    }
}

#[test]
fn a_bad_database_url_is_a_clear_error_not_a_panic() {
    let (ok, _, err) = paddlecloud(
        &[
            "admin",
            "create-account",
            "--name",
            "x-team",
            "--email",
            "a@b.io",
            "--password-stdin",
            "--database-url",
            "mysql://nowhere/db",
        ],
        "a long password\n",
    );
    assert!(!ok);
    assert!(err.contains("unsupported database URL"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
