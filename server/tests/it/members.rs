//! Members of accounts end to end, with invitation mail through a real SMTP
//! server: invite, accept (new user, existing user, one click), the link's
//! single use and expiry, roles and the last owner, a user in two accounts
//! switching between them, and what a removed member keeps (nothing).

use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;
use server::console::Config;
use server::mail::MailChoice;

use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::{config, cookie_pair, site_from, text, Site};
use crate::common::smtp::SmtpServer;
use crate::common::TestDb;

const BOB: &str = "bob@example.com";
const BOB_PASSWORD: &str = "bob's long password";

/// A console on `db` whose mail goes to `smtp`.
pub async fn site_mailing(db: TestDb, smtp: &SmtpServer) -> Site {
    let cfg = Config {
        mail: MailChoice::Smtp(smtp.url.clone()),
        public_url: Some("http://console.test".to_owned()),
        ..config(&db)
    };
    site_from(db, cfg).await
}

/// `POST /api/v1/invitations` as `key`.
pub async fn invite(site: &Site, key: &str, email: &str, role: &str) -> Answer {
    let body = json!({"email": email, "role": role});
    call(
        site,
        Method::POST,
        "/api/v1/invitations",
        Some(key),
        Some(body),
    )
    .await
}

/// The token of the `count`th invitation mailed to `email`.
pub async fn invitation_token(smtp: &SmtpServer, email: &str, count: usize) -> String {
    let mails = smtp.wait_for_link(email, "/join", count).await;
    mails[count - 1].token("/join").expect("an invitation link")
}

/// Accepts an invitation as the accept form sends it; the answer and the
/// session cookie it set (empty if none).
pub async fn accept(
    site: &Site,
    token: &str,
    password: Option<&str>,
    cookie: Option<&str>,
) -> (StatusCode, String, String) {
    let mut body = format!("token={token}");
    if let Some(p) = password {
        body.push_str(&format!(
            "&password={}",
            p.replace(' ', "+").replace('\'', "%27")
        ));
    }
    let res = site
        .fetch_post("/api/accept_invitation", &body, cookie)
        .await;
    let status = res.status();
    let cookie = res
        .headers()
        .get(header::SET_COOKIE)
        .map(|_| cookie_pair(&res))
        .unwrap_or_default();
    (status, cookie, text(res).await)
}

/// `GET path` with a session cookie, as JSON.
pub async fn get_with_cookie(site: &Site, path: &str, cookie: &str) -> (StatusCode, Value) {
    let res = site
        .send(
            Request::get(path)
                .header(header::COOKIE, cookie)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    let status = res.status();
    let body = text(res).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Signs up `account` with `email` as its owner; their session cookie.
async fn sign_up_as(site: &Site, account: &str, email: &str, password: &str) -> String {
    let body = format!(
        "account={account}&email={}&password={}",
        email.replace('@', "%40"),
        password.replace(' ', "+").replace('\'', "%27")
    );
    let res = site.form_post("/api/sign_up", &body, "/signup").await;
    assert_eq!(res.status(), StatusCode::FOUND);
    cookie_pair(&res)
}

/// Brings `email` into the owner's account with `role` (a new user with
/// [`BOB_PASSWORD`] if there is none); their session cookie there.
pub async fn join(
    site: &Site,
    smtp: &SmtpServer,
    owner_key: &str,
    email: &str,
    role: &str,
) -> String {
    let sent = smtp
        .mail_to(email)
        .iter()
        .filter(|m| m.link("/join").is_some())
        .count();
    let invited = invite(site, owner_key, email, role).await;
    assert_eq!(invited.status, StatusCode::CREATED, "{}", invited.body);
    let token = invitation_token(smtp, email, sent + 1).await;
    let (status, cookie, body) = accept(site, &token, Some(BOB_PASSWORD), None).await;
    assert!(status.is_success(), "{status}: {body}");
    cookie
}

fn audit_actions(audit: &Value) -> Vec<String> {
    audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect()
}

async fn an_invited_teammate_joins_by_the_mailed_link_once(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (owner, _) = key_and_cookie(&site, "team").await;

    let invited = invite(&site, &owner, " Bob@Example.com ", "member").await;
    assert_eq!(invited.status, StatusCode::CREATED, "{}", invited.body);
    assert_eq!(invited.json()["email"], BOB);
    let mail = smtp.wait_for(BOB, 1).await.remove(0);
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Invitation to join team on PaddleCloud")
    );
    let readable = mail.readable();
    assert!(
        readable
            .contains("ann@example.com invited you to the PaddleCloud account “team” as member"),
        "{readable}"
    );
    let link = mail.link("/join").unwrap();
    assert!(
        link.starts_with("http://console.test/join?token="),
        "{link}"
    );
    let token = mail.token("/join").unwrap();

    // The owner sees it waiting; the link's page says what it offers.
    let members = call(&site, Method::GET, "/api/v1/members", Some(&owner), None).await;
    assert_eq!(members.json()["invitations"][0]["email"], BOB);
    let page = text(site.get(&format!("/join?token={token}"), None).await).await;
    assert!(
        page.contains("ann@example.com invited bob@example.com to the account “team” as member."),
        "{page}"
    );
    assert!(page.contains("Choose a password"), "{page}");

    // A new user chooses a password and is signed in to the account.
    let (status, cookie, body) = accept(&site, &token, Some(BOB_PASSWORD), None).await;
    assert!(status.is_success(), "{status}: {body}");
    let (status, me) = get_with_cookie(&site, "/api/v1/me", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["account"]["name"], "team");
    assert_eq!(me["role"], "member");
    assert_eq!(
        me["email_confirmed"], true,
        "the mailed link proves the address"
    );

    // The link works once.
    let (status, _, body) = accept(&site, &token, Some("another password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("invitations work once"), "{body}");

    // Bob signs in like anyone; the owner sees him and the audit log says how.
    let signed_in = site
        .fetch_post(
            "/api/sign_in",
            "account=team&email=bob%40example.com&password=bob%27s+long+password",
            None,
        )
        .await;
    assert!(signed_in.headers().contains_key(header::SET_COOKIE));
    let members = call(&site, Method::GET, "/api/v1/members", Some(&owner), None).await;
    let listed = members.json();
    let emails: Vec<&str> = listed["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["ann@example.com", BOB]);
    assert_eq!(members.json()["invitations"], json!([]));
    let audit = call(&site, Method::GET, "/api/v1/audit", Some(&owner), None).await;
    let actions = audit_actions(&audit.json());
    assert!(
        actions.contains(&"member.invited".to_owned()),
        "{actions:?}"
    );
    assert!(actions.contains(&"member.joined".to_owned()), "{actions:?}");
}
on_both_databases!(
    an_invited_teammate_joins_by_the_mailed_link_once,
    super::an_invited_teammate_joins_by_the_mailed_link_once
);

async fn expired_withdrawn_and_bad_invitations_are_refused(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (owner, _) = key_and_cookie(&site, "team").await;

    // Expired.
    invite(&site, &owner, "carol@example.com", "viewer").await;
    let token = invitation_token(&smtp, "carol@example.com", 1).await;
    sqlx::query("UPDATE invitations SET expires_at = 0")
        .execute(&site.db.pool)
        .await
        .unwrap();
    let (status, _, body) = accept(&site, &token, Some("a long password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let page = text(site.get(&format!("/join?token={token}"), None).await).await;
    assert!(page.contains("invitations work once, for 7 days"), "{page}");

    // Withdrawn by the owner.
    let invited = invite(&site, &owner, "dave@example.com", "member").await;
    let id = invited.json()["id"].as_i64().unwrap();
    let token = invitation_token(&smtp, "dave@example.com", 1).await;
    let gone = call(
        &site,
        Method::DELETE,
        &format!("/api/v1/invitations/{id}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let (status, _, _) = accept(&site, &token, Some("a long password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A second invitation replaces the first.
    invite(&site, &owner, "erin@example.com", "member").await;
    invite(&site, &owner, "erin@example.com", "viewer").await;
    let first = invitation_token(&smtp, "erin@example.com", 1).await;
    let second = invitation_token(&smtp, "erin@example.com", 2).await;
    let (status, _, _) = accept(&site, &first, Some("a long password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A new user's password follows the same rules as sign-up's.
    let (status, _, body) = accept(&site, &second, Some("short"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("at least 8"), "{body}");
    let (status, cookie, _) = accept(&site, &second, Some("a long password"), None).await;
    assert!(status.is_success());
    let (_, me) = get_with_cookie(&site, "/api/v1/me", &cookie).await;
    assert_eq!(me["role"], "viewer");

    // Bad forms, a member again, and a token that is not one.
    let bad = invite(&site, &owner, "nobody", "member").await;
    assert_eq!(bad.error(), ("invalid".into(), Some("email".into())));
    let bad = invite(&site, &owner, "frank@example.com", "admin").await;
    assert_eq!(bad.error(), ("invalid".into(), Some("role".into())));
    let again = invite(&site, &owner, "erin@example.com", "member").await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let (status, _, _) = accept(&site, "not-a-token", Some("a long password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
on_both_databases!(
    expired_withdrawn_and_bad_invitations_are_refused,
    super::expired_withdrawn_and_bad_invitations_are_refused
);

async fn a_user_of_two_accounts_switches_between_them_and_keys_stay_put(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (alpha_owner, _) = key_and_cookie(&site, "alpha").await;
    let bob_beta = sign_up_as(&site, "beta", BOB, BOB_PASSWORD).await;
    let bob_key_beta = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("beta", BOB, "bob's laptop", Default::default())
        .await
        .unwrap()
        .key;

    // Signed in as the invited address: one click, no password.
    invite(&site, &alpha_owner, BOB, "viewer").await;
    let token = invitation_token(&smtp, BOB, 1).await;
    let page = text(
        site.get(&format!("/join?token={token}"), Some(&bob_beta))
            .await,
    )
    .await;
    assert!(!page.contains("Your password for"), "{page}");
    let (status, bob_alpha, body) = accept(&site, &token, None, Some(&bob_beta)).await;
    assert!(status.is_success(), "{status}: {body}");
    let (_, me) = get_with_cookie(&site, "/api/v1/me", &bob_alpha).await;
    assert_eq!(me["account"]["name"], "alpha");
    assert_eq!(me["role"], "viewer");

    // Both accounts are his; the key stays in the account it was made in.
    let mine = call(
        &site,
        Method::GET,
        "/api/v1/me/accounts",
        Some(&bob_key_beta),
        None,
    )
    .await;
    assert_eq!(
        mine.json(),
        json!([{"account": "alpha", "role": "viewer"}, {"account": "beta", "role": "owner"}])
    );
    let me = call(&site, Method::GET, "/api/v1/me", Some(&bob_key_beta), None).await;
    assert_eq!(me.json()["account"]["name"], "beta");

    // The header's switcher lists the other account, and moves the session.
    let page = text(site.get("/jobs", Some(&bob_beta)).await).await;
    assert!(page.contains("alpha (viewer)"), "{page}");
    let switched = site
        .fetch_post("/api/switch_account", "account=alpha", Some(&bob_beta))
        .await;
    assert!(
        switched.status().is_success() || switched.status().is_redirection(),
        "{}",
        switched.status()
    );
    let (_, me) = get_with_cookie(&site, "/api/v1/me", &bob_beta).await;
    assert_eq!(me["account"]["name"], "alpha");
    let page = text(site.get("/jobs", Some(&bob_beta)).await).await;
    assert!(page.contains("You are a viewer of alpha"), "{page}");

    // Not his: not there. And a key cannot switch.
    let refused = site
        .fetch_post("/api/switch_account", "account=gamma", Some(&bob_beta))
        .await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    // Existing users who are not signed in give their password; a wrong one
    // is refused without using the link up.
    let (dave_key, _) = key_and_cookie(&site, "delta").await;
    invite(&site, &dave_key, BOB, "member").await;
    let token = invitation_token(&smtp, BOB, 2).await;
    let page = text(site.get(&format!("/join?token={token}"), None).await).await;
    assert!(page.contains("Your password for bob@example.com"), "{page}");
    let (status, _, body) = accept(&site, &token, Some("not his password"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("not the password of bob@example.com"),
        "{body}"
    );
    let (status, cookie, _) = accept(&site, &token, Some(BOB_PASSWORD), None).await;
    assert!(status.is_success());
    let (_, me) = get_with_cookie(&site, "/api/v1/me", &cookie).await;
    assert_eq!(me["account"]["name"], "delta");
}
on_both_databases!(
    a_user_of_two_accounts_switches_between_them_and_keys_stay_put,
    super::a_user_of_two_accounts_switches_between_them_and_keys_stay_put
);

async fn the_last_owner_stays_and_a_removed_member_keeps_nothing(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (ann_key, ann_cookie) = key_and_cookie(&site, "team").await;
    let bob_cookie = join(&site, &smtp, &ann_key, BOB, "member").await;
    let bob_key = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("team", BOB, "bob's laptop", Default::default())
        .await
        .unwrap()
        .key;
    let ids = call(&site, Method::GET, "/api/v1/members", Some(&ann_key), None).await;
    let id_of = |email: &str| {
        ids.json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["email"] == email)
            .unwrap()["user_id"]
            .as_i64()
            .unwrap()
    };
    let (ann, bob) = (id_of("ann@example.com"), id_of(BOB));
    let role = |id: i64, role: &str| {
        let (site, key) = (&site, &ann_key);
        let body = json!({ "role": role });
        async move {
            call(
                site,
                Method::PUT,
                &format!("/api/v1/members/{id}/role"),
                Some(key),
                Some(body),
            )
            .await
        }
    };

    // Ann is the only owner: she can neither step down nor leave.
    let refused = role(ann, "member").await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(refused.body.contains("last owner"), "{}", refused.body);
    let refused = call(
        &site,
        Method::DELETE,
        &format!("/api/v1/members/{ann}"),
        Some(&ann_key),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);

    // A member manages nobody.
    let refused = call(
        &site,
        Method::DELETE,
        &format!("/api/v1/members/{ann}"),
        Some(&bob_key),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let refused = invite(&site, &bob_key, "carol@example.com", "owner").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    // With Bob an owner too, Ann may step down; then Bob removes her.
    assert_eq!(role(bob, "owner").await.status, StatusCode::NO_CONTENT);
    assert_eq!(role(ann, "viewer").await.status, StatusCode::NO_CONTENT);
    let removed = call(
        &site,
        Method::DELETE,
        &format!("/api/v1/members/{ann}"),
        Some(&bob_key),
        None,
    )
    .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.body);

    // Her session and key in the account end; Bob's go on.
    let (status, _) = get_with_cookie(&site, "/api/v1/me", &ann_cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let me = call(&site, Method::GET, "/api/v1/me", Some(&ann_key), None).await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED);
    let (status, me) = get_with_cookie(&site, "/api/v1/me", &bob_cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["role"], "owner");
    let audit = call(&site, Method::GET, "/api/v1/audit", Some(&bob_key), None).await;
    let actions = audit_actions(&audit.json());
    for wanted in ["member.role_changed", "member.removed", "member.joined"] {
        assert!(
            actions.contains(&wanted.to_owned()),
            "{wanted}: {actions:?}"
        );
    }
    // Unknown members and ids that are not numbers are 4xx.
    let missing = call(
        &site,
        Method::DELETE,
        "/api/v1/members/999999",
        Some(&bob_key),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let bad = call(
        &site,
        Method::DELETE,
        "/api/v1/members/ann",
        Some(&bob_key),
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}
on_both_databases!(
    the_last_owner_stays_and_a_removed_member_keeps_nothing,
    super::the_last_owner_stays_and_a_removed_member_keeps_nothing
);

async fn two_owners_stepping_down_at_once_leave_one_owner(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (ann_key, _) = key_and_cookie(&site, "team").await;
    join(&site, &smtp, &ann_key, BOB, "owner").await;
    let bob_key = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("team", BOB, "laptop", Default::default())
        .await
        .unwrap()
        .key;
    let members = call(&site, Method::GET, "/api/v1/members", Some(&ann_key), None).await;
    let ids: Vec<i64> = members.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user_id"].as_i64().unwrap())
        .collect();
    let demote = |key: String, id: i64| {
        let site = &site;
        async move {
            call(
                site,
                Method::PUT,
                &format!("/api/v1/members/{id}/role"),
                Some(&key),
                Some(json!({"role": "member"})),
            )
            .await
            .status
        }
    };
    let (a, b) = tokio::join!(demote(ann_key.clone(), ids[0]), demote(bob_key, ids[1]));
    let mut statuses = [a, b];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::NO_CONTENT, StatusCode::CONFLICT]);
    let (owners,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM memberships WHERE role = 'owner' AND account_id = (SELECT id FROM accounts WHERE name = 'team')")
            .fetch_one(&site.db.pool)
            .await
            .unwrap();
    assert_eq!(owners, 1);
}
on_both_databases!(
    two_owners_stepping_down_at_once_leave_one_owner,
    super::two_owners_stepping_down_at_once_leave_one_owner
);

async fn signing_up_again_with_ones_address_adds_an_account_to_the_same_user(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let first = sign_up_as(&site, "alpha", BOB, BOB_PASSWORD).await;

    // Someone else's password for the address is refused, saying what to do.
    let body = "account=beta&email=bob%40example.com&password=not+his+password";
    let res = site.fetch_post("/api/sign_up", body, None).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let said = text(res).await;
    assert!(said.contains("already has a PaddleCloud user"), "{said}");

    // His own password: the same user owns both accounts.
    let second = sign_up_as(&site, "beta", BOB, BOB_PASSWORD).await;
    let (_, a) = get_with_cookie(&site, "/api/v1/me", &first).await;
    let (_, b) = get_with_cookie(&site, "/api/v1/me", &second).await;
    assert_eq!(a["user_id"], b["user_id"]);
    assert_eq!(b["account"]["name"], "beta");
    let page = text(site.get("/jobs", Some(&second)).await).await;
    assert!(
        page.contains("alpha (owner)"),
        "the switcher offers the other: {page}"
    );
}
on_both_databases!(
    signing_up_again_with_ones_address_adds_an_account_to_the_same_user,
    super::signing_up_again_with_ones_address_adds_an_account_to_the_same_user
);

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_password_must_be_changed_before_anything_else() {
    let site = crate::common::site::site().await;
    let accounts = crate::common::accounts(&site.db);
    let me = accounts
        .create_confirmed(
            app::models::SignUpForm {
                account: "fresh".into(),
                email: "cy@example.com".into(),
                password: "generated 1234".into(),
            },
            false,
            true,
        )
        .await
        .unwrap();
    assert!(me.must_change_password);
    let res = site
        .fetch_post(
            "/api/sign_in",
            "account=fresh&email=cy%40example.com&password=generated+1234",
            None,
        )
        .await;
    let cookie = cookie_pair(&res);

    // Every page sends them to the password form, which says why.
    let jobs = site.get("/jobs", Some(&cookie)).await;
    assert_eq!(jobs.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        crate::common::site::location(&jobs),
        "/account?password=required#password-section"
    );
    let page = text(site.get("/account?password=required", Some(&cookie)).await).await;
    assert!(page.contains("was generated for you"), "{page}");

    let changed = site
        .fetch_post(
            "/api/change_password",
            "current=generated+1234&password=my+own+password",
            Some(&cookie),
        )
        .await;
    assert!(changed.status().is_success() || changed.status().is_redirection());
    let jobs = site.get("/jobs", Some(&cookie)).await;
    assert_eq!(jobs.status(), StatusCode::OK);
    let (_, me) = get_with_cookie(&site, "/api/v1/me", &cookie).await;
    assert_eq!(me["must_change_password"], false);
}

async fn an_owner_caps_what_a_member_holds_inside_the_accounts_quota(db: TestDb) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(db, &smtp).await;
    let (ann, _) = key_and_cookie(&site, "team").await;
    join(&site, &smtp, &ann, BOB, "member").await;
    let bob = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("team", BOB, "laptop", Default::default())
        .await
        .unwrap()
        .key;
    let listed = call(&site, Method::GET, "/api/v1/members", Some(&ann), None).await;
    let bob_id = listed.json()["members"][1]["user_id"].as_i64().unwrap();
    let caps = |key: &str, body: Value| {
        let (site, key) = (&site, key.to_owned());
        async move {
            let path = format!("/api/v1/members/{bob_id}/caps");
            call(site, Method::PUT, &path, Some(&key), Some(body)).await
        }
    };

    // Only owners set caps, and a bad quantity names its field.
    let one_cpu = json!({"cpu": "1", "memory": "", "gpu": "", "max_jobs": "1"});
    assert_eq!(
        caps(&bob, one_cpu.clone()).await.status,
        StatusCode::FORBIDDEN
    );
    let bad = caps(
        &ann,
        json!({"cpu": "lots", "memory": "", "gpu": "", "max_jobs": ""}),
    )
    .await;
    assert_eq!(bad.error(), ("invalid".into(), Some("cpu".into())));
    assert_eq!(caps(&ann, one_cpu).await.status, StatusCode::NO_CONTENT);
    let listed = call(&site, Method::GET, "/api/v1/members", Some(&ann), None).await;
    assert_eq!(listed.json()["members"][1]["caps"]["cpu_millis"], 1000);

    // Bob's jobs fit in his cap or are refused saying so; Ann's are not his.
    let small = json!({
        "name": "small", "command": ["sleep", "30"], "num_ps": 0, "num_trainers": 1,
        "ps": {"cpu": "1", "memory": "256Mi"},
        "trainer": {"cpu": "1", "memory": "256Mi", "gpu": 0}
    });
    let big = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&bob),
        Some(crate::common::rest::spec("big", "sleep 30")),
    )
    .await;
    assert_eq!(big.status, StatusCode::FORBIDDEN, "{}", big.body);
    assert!(
        big.body.contains("Over your cap in this account"),
        "{}",
        big.body
    );
    let fits = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&bob),
        Some(small.clone()),
    )
    .await;
    assert_eq!(fits.status, StatusCode::CREATED, "{}", fits.body);
    let mut second = small.clone();
    second["name"] = json!("second");
    let refused = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&bob),
        Some(second),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("Jobs"), "{}", refused.body);
    let owners = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(crate::common::rest::spec("owners", "sleep 30")),
    )
    .await;
    assert_eq!(owners.status, StatusCode::CREATED, "{}", owners.body);

    // Lifting the caps lets Bob go on; the audit log has both changes.
    let none = json!({"cpu": "", "memory": "", "gpu": "", "max_jobs": ""});
    assert_eq!(caps(&ann, none).await.status, StatusCode::NO_CONTENT);
    let mut third = small.clone();
    third["name"] = json!("third");
    let lifted = call(&site, Method::POST, "/api/v1/jobs", Some(&bob), Some(third)).await;
    assert_eq!(lifted.status, StatusCode::CREATED, "{}", lifted.body);
    let audit = call(&site, Method::GET, "/api/v1/audit", Some(&ann), None).await;
    let set = audit_actions(&audit.json())
        .into_iter()
        .filter(|a| a == "member.caps_set")
        .count();
    assert_eq!(set, 2);
    for job in ["small", "owners", "third"] {
        call(
            &site,
            Method::POST,
            &format!("/api/v1/jobs/{job}/stop"),
            Some(&ann),
            None,
        )
        .await;
    }
}
on_both_databases!(
    an_owner_caps_what_a_member_holds_inside_the_accounts_quota,
    super::an_owner_caps_what_a_member_holds_inside_the_accounts_quota
);
