//! Single sign-on through a real OpenID Connect provider: npm's certified
//! `oidc-provider` (scripts/oidc-provider/provider.mjs), started by the
//! test. A browser (cookies, one redirect at a time) signs in at the
//! console, is sent to the provider's login form, and comes back signed in
//! with the memberships its groups map to; refusals are pages that say why.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use app::models::sign_in::{GroupMapping, SignInMapping};
use http::StatusCode;
use serde_json::json;
use server::accounts::oidc::OidcSettings;
use tokio::io::AsyncBufReadExt;

use crate::common::site::{on_socket, text, Site};

const CLIENT_ID: &str = "paddlecloud-console";
// Characters HTTP Basic needs form-encoded (RFC 6749 §2.3.1).
const CLIENT_SECRET: &str = "s3cret:with/odd+chars%";

/// The provider, running until dropped.
struct Provider {
    _child: tokio::process::Child,
    _users: tempfile::NamedTempFile,
}

fn provider_dir() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/oidc-provider");
    if dir.join("node_modules/oidc-provider").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("PADDLECLOUD_REQUIRE_OIDC").is_none(),
        "no oidc-provider: run scripts/setup.sh test"
    );
    eprintln!("skipping: no oidc-provider (run scripts/setup.sh test)");
    None
}

/// A free port on loopback, for the provider (its issuer URL goes into
/// the console's settings before either starts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Provider {
    async fn start(dir: &Path, port: u16, redirect: &str) -> Self {
        let users = tempfile::NamedTempFile::new().unwrap();
        let person = |sub: &str, groups: &[&str], verified: bool| {
            json!({"sub": sub, "password": format!("{sub}-pw"), "email": format!("{sub}@example.org"),
                   "email_verified": verified, "name": sub, "groups": groups})
        };
        let list = json!([
            person("alice", &["ml-team", "ml-team-owners"], true),
            person("bob", &["ml-team"], true),
            person("carol", &[], true),
            person("dave", &["ml-team"], false),
        ]);
        std::fs::write(users.path(), list.to_string()).unwrap();
        let mut child = tokio::process::Command::new("node")
            .arg(dir.join("provider.mjs"))
            .env("OIDC_PORT", port.to_string())
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_REDIRECT_URIS", redirect)
            .env("OIDC_USERS", users.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the provider");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .unwrap()
            .unwrap_or_default();
        assert!(ready.starts_with("oidc-provider listening on"), "{ready}");
        Self {
            _child: child,
            _users: users,
        }
    }
}

/// A browser: cookies by name, redirects followed by hand.
struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, String>,
}

/// Where a walk through redirects ended.
struct Landed {
    status: StatusCode,
    location: Option<String>,
    body: String,
}

impl Browser {
    fn new() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: HashMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn send(&mut self, url: &str, form: Option<Vec<(String, String)>>) -> Landed {
        let mut req = match &form {
            Some(f) => {
                let body = form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(f.iter())
                    .finish();
                self.http
                    .post(url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body)
            }
            None => self.http.get(url),
        };
        if !self.cookies.is_empty() {
            req = req.header("cookie", self.cookie_header());
        }
        let res = req.send().await.unwrap();
        for c in res.headers().get_all("set-cookie") {
            let c = c.to_str().unwrap();
            let pair = c.split(';').next().unwrap();
            let (k, v) = pair.split_once('=').unwrap();
            if c.to_ascii_lowercase().contains("max-age=0") || v.is_empty() {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_owned(), v.to_owned());
            }
        }
        let status = res.status();
        let location = res
            .headers()
            .get("location")
            .map(|l| res.url().join(l.to_str().unwrap()).unwrap().to_string());
        Landed {
            status,
            location,
            body: res.text().await.unwrap_or_default(),
        }
    }

    /// Signs in at `console` as `user` (password `<user>-pw`): through the
    /// provider's login form, back to the console. Ends at the console's
    /// last answer (its redirect to `next`, or a refusal).
    async fn sign_in(&mut self, console: &str, user: &str) -> Landed {
        let mut at = self
            .send(&format!("{console}/auth/oidc/login?next=%2Fjobs"), None)
            .await;
        let mut url = String::new();
        for _ in 0..20 {
            if let Some(next) = at.location.clone() {
                if url.starts_with(&format!("{console}/auth/oidc/callback")) {
                    return at;
                }
                url = next;
                at = self.send(&url, None).await;
                continue;
            }
            if url.starts_with(console) {
                return at;
            }
            // The provider's login form.
            let action = at
                .body
                .split("action=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("no form at {url}: {}", at.body));
            let post = reqwest::Url::parse(&url)
                .unwrap()
                .join(action)
                .unwrap()
                .to_string();
            let form = vec![
                ("login".to_owned(), user.to_owned()),
                ("password".to_owned(), format!("{user}-pw")),
            ];
            at = self.send(&post, Some(form)).await;
            url = post;
        }
        panic!("the sign-in went round in circles at {url}");
    }
}

fn settings(issuer: &str) -> OidcSettings {
    OidcSettings {
        issuer: issuer.to_owned(),
        client_id: CLIENT_ID.to_owned(),
        client_secret: CLIENT_SECRET.to_owned(),
        label: "Example IdP".to_owned(),
        groups_claim: "groups".to_owned(),
        account_claim: None,
        role_claim: None,
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

async fn console_and_provider(password_sign_in: bool) -> Option<(Site, String, Provider)> {
    let dir = provider_dir()?;
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let (site, url) = on_socket(|config, _, _| server::console::Config {
        oidc: Some(settings(&issuer)),
        password_sign_in,
        ..config
    })
    .await;
    let provider = Provider::start(&dir, port, &format!("{url}/auth/oidc/callback")).await;
    Some((site, url, provider))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_through_the_identity_provider_as_its_groups_map_them() {
    let Some((site, url, _provider)) = console_and_provider(true).await else {
        return;
    };
    // The sign-in page offers the provider beside the password form.
    let page = text(site.get("/login", None).await).await;
    assert!(page.contains("Sign in with Example IdP"), "{page}");
    assert!(page.contains("/auth/oidc/login?next="), "{page}");
    assert!(page.contains("id=\"password\""), "{page}");

    // Alice is in ml-team and ml-team-owners: an owner of vision, which
    // her first sign-in makes.
    let mut alice = Browser::new();
    let back = alice.sign_in(&url, "alice").await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.body);
    assert_eq!(
        back.location.as_deref(),
        Some(format!("{url}/jobs").as_str())
    );
    let session = format!("pc_session={}", alice.cookies["pc_session"]);
    assert!(
        !alice.cookies.contains_key("pc_oidc"),
        "the sign-in's cookie is spent"
    );
    let who = crate::common::rest::me_of_session(&site, &session).await;
    assert_eq!(who["email"], "alice@example.org", "{who}");
    assert_eq!(who["account"]["name"], "vision", "{who}");
    assert_eq!(who["role"], "owner", "{who}");
    let jobs = site.get("/jobs", Some(&session)).await;
    assert_eq!(jobs.status(), StatusCode::OK);

    // Bob is in ml-team only: a member; his user is made once.
    let mut bob = Browser::new();
    assert_eq!(bob.sign_in(&url, "bob").await.status, StatusCode::SEE_OTHER);
    let bob_me = crate::common::rest::me_of_session(
        &site,
        &format!("pc_session={}", bob.cookies["pc_session"]),
    )
    .await;
    assert_eq!(
        (bob_me["role"].as_str(), bob_me["account"]["name"].as_str()),
        (Some("member"), Some("vision"))
    );
    let mut again = Browser::new();
    assert_eq!(
        again.sign_in(&url, "bob").await.status,
        StatusCode::SEE_OTHER
    );
    let again_me = crate::common::rest::me_of_session(
        &site,
        &format!("pc_session={}", again.cookies["pc_session"]),
    )
    .await;
    assert_eq!(
        again_me["user_id"], bob_me["user_id"],
        "the same user the second time"
    );
    let rows: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE email = 'bob@example.org'")
            .fetch_one(&site.db.pool)
            .await
            .unwrap();
    assert_eq!(rows, 1);
    // A user made by single sign-on has no password to sign in with.
    for password in ["", "bob-pw"] {
        let body = format!("account=vision&email=bob%40example.org&password={password}");
        let refused = site.fetch_post("/api/sign_in", &body, None).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{password}");
    }

    // The owners see who joined, and how.
    let audit = text(site.get("/api/v1/audit", Some(&session)).await).await;
    assert!(
        audit.contains("account.created") && audit.contains("member.joined"),
        "{audit}"
    );
    assert!(
        audit.contains("bob@example.org as member, through the identity provider"),
        "{audit}"
    );

    // Carol is in no mapped group; Dave's address is not verified.
    let carol = Browser::new().sign_in(&url, "carol").await;
    assert_eq!(carol.status, StatusCode::FORBIDDEN, "{}", carol.body);
    assert!(
        carol
            .body
            .contains("none of your groups gives you an account"),
        "{}",
        carol.body
    );
    let dave = Browser::new().sign_in(&url, "dave").await;
    assert_eq!(dave.status, StatusCode::FORBIDDEN, "{}", dave.body);
    assert!(
        dave.body.contains("has not verified your email address"),
        "{}",
        dave.body
    );

    // A callback that is not the end of a sign-in this browser began.
    let mut stranger = Browser::new();
    let forged = stranger
        .send(&format!("{url}/auth/oidc/callback?code=x&state=y"), None)
        .await;
    assert_eq!(forged.status, StatusCode::BAD_REQUEST, "{}", forged.body);
    assert!(
        forged
            .body
            .contains("expired or was begun in another browser"),
        "{}",
        forged.body
    );
    let denied = stranger
        .send(
            &format!("{url}/auth/oidc/callback?error=access_denied&error_description=No+thanks"),
            None,
        )
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert!(denied.body.contains("No thanks"), "{}", denied.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_passwords_switched_off_only_the_identity_provider_signs_in() {
    let Some((site, url, _provider)) = console_and_provider(false).await else {
        return;
    };
    let page = text(site.get("/login", None).await).await;
    assert!(page.contains("Sign in with Example IdP"), "{page}");
    assert!(
        !page.contains("id=\"password\""),
        "no password form: {page}"
    );
    let refused = site
        .fetch_post(
            "/api/sign_in",
            "account=a&email=a%40b.c&password=xxxxxxxxxxx",
            None,
        )
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let said = text(refused).await;
    assert!(
        said.contains("switched off here: sign in with Example IdP"),
        "{said}"
    );
    let signup = site
        .fetch_post(
            "/api/sign_up",
            "account=new&email=a%40b.c&password=a+long+password",
            None,
        )
        .await;
    assert_eq!(signup.status(), StatusCode::FORBIDDEN);
    let mut alice = Browser::new();
    assert_eq!(
        alice.sign_in(&url, "alice").await.status,
        StatusCode::SEE_OTHER
    );
}

/// The users and memberships an identity provider's sign-ins make, on
/// both databases: made once, found again by the provider's id, the
/// mapped role following the provider at each sign-in.
async fn an_external_sign_in_makes_its_user_once_and_follows_the_mapped_role(
    db: crate::common::TestDb,
) {
    use app::models::sign_in::{ExternalIdentity, Memberships};
    use app::models::Role;
    use app::ports::Accounts;
    let accounts = crate::common::accounts(&db);
    let who = ExternalIdentity {
        provider: "http://idp.example".into(),
        subject: "u-42".into(),
        email: "erin@example.org".into(),
        name: None,
        groups: vec![],
        account: None,
        role: None,
    };
    let as_role = |role: Role| Memberships {
        accounts: vec![("speech".into(), role), ("vision".into(), Role::Viewer)],
        site_admin: false,
    };
    let first = accounts
        .sign_in_external(&who, &as_role(Role::Member))
        .await
        .unwrap();
    assert_eq!(
        (first.account.name.as_str(), first.role),
        ("speech", Role::Member)
    );
    let again = accounts
        .sign_in_external(&who, &as_role(Role::Owner))
        .await
        .unwrap();
    assert_eq!(again.user_id, first.user_id);
    assert_eq!(
        again.role,
        Role::Owner,
        "the provider's groups changed her role"
    );
    let memberships: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE user_id = $1")
            .bind(first.user_id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(memberships, 2);
    // A new subject with the same address is the same person.
    let other = ExternalIdentity {
        subject: "u-43".into(),
        ..who.clone()
    };
    let same = accounts
        .sign_in_external(&other, &as_role(Role::Owner))
        .await
        .unwrap();
    assert_eq!(same.user_id, first.user_id);
}
on_both_databases!(
    an_external_sign_in_makes_its_user_once_and_follows_the_mapped_role,
    super::an_external_sign_in_makes_its_user_once_and_follows_the_mapped_role
);
