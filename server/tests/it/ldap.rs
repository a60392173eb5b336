//! Signing in against a real LDAP directory: Debian's `slapd`, started by
//! the test (scripts/ldap-test-server.sh: people alice, bob and carol;
//! groups ml-team with alice and bob, ml-team-owners with alice). The
//! console binds as the user, reads their address and groups, and makes
//! them members as the groups map them.

use std::path::{Path, PathBuf};

use app::models::sign_in::{GroupMapping, SignInMapping};
use http::StatusCode;
use server::accounts::ldap::LdapSettings;

use crate::common::site::{site_configured, text, Site};

/// The directory, stopped when dropped.
struct Slapd {
    script: PathBuf,
    dir: tempfile::TempDir,
    url: String,
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

impl Slapd {
    /// `None` (skipped) without slapd, unless `PADDLECLOUD_REQUIRE_LDAP`.
    fn start() -> Option<Self> {
        if !Path::new("/usr/sbin/slapd").exists() {
            assert!(
                std::env::var_os("PADDLECLOUD_REQUIRE_LDAP").is_none(),
                "no slapd: run scripts/setup.sh test"
            );
            eprintln!("skipping: no slapd (run scripts/setup.sh test)");
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ldap-test-server.sh");
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = std::process::Command::new(&script)
            .arg("start")
            .arg(dir.path())
            .arg(port.to_string())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("slapd listening on"),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Self {
            script,
            dir,
            url: format!("ldap://127.0.0.1:{port}"),
        })
    }
}

fn settings(url: &str) -> LdapSettings {
    LdapSettings {
        url: url.to_owned(),
        start_tls: false,
        user_dn: "uid={username},ou=people,dc=example,dc=org".to_owned(),
        group_base: "ou=groups,dc=example,dc=org".to_owned(),
        group_filter: "(&(objectClass=groupOfNames)(member={dn}))".to_owned(),
        group_name: "cn".to_owned(),
        mail: "mail".to_owned(),
        label: "Example LDAP".to_owned(),
        mapping: SignInMapping {
            groups: ["ml-team=vision:member", "ml-team-owners=vision:owner"]
                .iter()
                .map(|g| GroupMapping::parse(g).unwrap())
                .collect(),
            account_claim: false,
            admin_group: None,
        },
    }
}

/// Posts the directory form as a browser without JavaScript would; the
/// answer's status, where it sends the browser, and the session cookie.
async fn sign_in(
    site: &Site,
    username: &str,
    password: &str,
) -> (StatusCode, String, Option<String>) {
    let body = format!("username={username}&password={password}&next=%2Fjobs");
    let res = site
        .form_post("/api/sign_in_directory", &body, "/login")
        .await;
    let status = res.status();
    let location = res
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|c| c.to_str().ok())
        .find(|c| c.starts_with("pc_session=") && !c.starts_with("pc_session=;"))
        .map(|c| c.split(';').next().unwrap().to_owned());
    (status, location, cookie)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_with_their_directory_password_as_its_groups_map_them() {
    let Some(slapd) = Slapd::start() else {
        return;
    };
    let site = site_configured(|config, _| server::console::Config {
        ldap: Some(settings(&slapd.url)),
        ..config
    })
    .await;
    let page = text(site.get("/login", None).await).await;
    assert!(page.contains("Sign in with Example LDAP"), "{page}");
    assert!(page.contains("id=\"directory-username\""), "{page}");

    let (status, location, cookie) = sign_in(&site, "alice", "alice-pass").await;
    assert_eq!((status, location.as_str()), (StatusCode::FOUND, "/jobs"));
    let alice = crate::common::rest::me_of_session(&site, &cookie.expect("a session")).await;
    assert_eq!(alice["email"], "alice@example.org", "{alice}");
    assert_eq!(
        (alice["account"]["name"].as_str(), alice["role"].as_str()),
        (Some("vision"), Some("owner"))
    );

    let (_, _, cookie) = sign_in(&site, "bob", "bob-pass").await;
    let bob = crate::common::rest::me_of_session(&site, &cookie.expect("a session")).await;
    assert_eq!(bob["role"], "member", "{bob}");

    // A wrong password, an unknown user, an empty password (which LDAP
    // would take as an anonymous bind), and a name that tries to change
    // the DN: none signs in.
    for (user, password) in [
        ("alice", "wrong"),
        ("nobody", "x"),
        ("alice", ""),
        ("alice,ou=people,dc=example,dc=org", "alice-pass"),
        ("*", "alice-pass"),
    ] {
        let (status, location, cookie) = sign_in(&site, user, password).await;
        assert!(cookie.is_none(), "{user}: signed in");
        assert!(
            status == StatusCode::FOUND && location.contains("/login?") || status.is_client_error(),
            "{user}: {status} {location}"
        );
    }
    let res = site
        .fetch_post(
            "/api/sign_in_directory",
            "username=alice&password=wrong",
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // Carol is in no mapped group.
    let res = site
        .fetch_post(
            "/api/sign_in_directory",
            "username=carol&password=carol-pass",
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let said = text(res).await;
    assert!(
        said.contains("none of your groups gives you an account"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_that_is_down_is_a_clear_refusal() {
    let site = site_configured(|config, _| server::console::Config {
        ldap: Some(settings("ldap://127.0.0.1:9")),
        ..config
    })
    .await;
    let res = site
        .fetch_post(
            "/api/sign_in_directory",
            "username=alice&password=alice-pass",
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let said = text(res).await;
    assert!(
        said.contains("The directory could not be reached"),
        "{said}"
    );
}
