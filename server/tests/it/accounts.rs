//! Accounts and sessions on real SQLite and PostgreSQL databases.

use std::sync::Arc;

use crate::common::TestDb;
use app::error::AppError;
use app::models::{Role, SignInForm, SignUpForm};
use app::ports::{Accounts, Credential};
use server::accounts::SqlAccounts;

fn form(account: &str, email: &str, password: &str) -> SignUpForm {
    SignUpForm {
        account: account.into(),
        email: email.into(),
        password: password.into(),
    }
}

fn login(account: &str, email: &str, password: &str) -> SignInForm {
    SignInForm {
        account: account.into(),
        email: email.into(),
        password: password.into(),
    }
}

fn accounts(db: &TestDb) -> Arc<SqlAccounts> {
    crate::common::accounts(db)
}

async fn the_creator_of_an_account_owns_it_and_can_sign_in(db: TestDb) {
    let accounts = accounts(&db);
    let me = accounts
        .create_account(form(" Vision ", "Ann@Example.com", "a long password"))
        .await
        .unwrap();
    assert_eq!(me.account.name, "vision");
    assert_eq!(me.account.namespace, "pc-vision");
    assert_eq!(me.email, "ann@example.com");
    assert_eq!(me.role, Role::Owner);

    let again = accounts
        .authenticate(login("VISION", "ann@example.COM", "a long password"))
        .await
        .unwrap();
    assert_eq!(again, me);
}
on_both_databases!(
    the_creator_of_an_account_owns_it_and_can_sign_in,
    super::the_creator_of_an_account_owns_it_and_can_sign_in
);

async fn a_taken_account_name_is_a_conflict_on_the_account_field(db: TestDb) {
    let accounts = accounts(&db);
    accounts
        .create_account(form("vision", "ann@example.com", "a long password"))
        .await
        .unwrap();
    let err = accounts
        .create_account(form("Vision", "bob@example.com", "another password"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 409);
    assert_eq!(err.field(), Some("account"));
    assert!(err.to_string().contains("“vision” is taken"), "{err}");
    // Bob was not half-created: he cannot sign in anywhere.
    assert_eq!(
        accounts
            .authenticate(login("vision", "bob@example.com", "another password"))
            .await
            .unwrap_err(),
        AppError::BadCredentials
    );
}
on_both_databases!(
    a_taken_account_name_is_a_conflict_on_the_account_field,
    super::a_taken_account_name_is_a_conflict_on_the_account_field
);

async fn a_short_password_is_refused_and_nothing_is_stored(db: TestDb) {
    let accounts = accounts(&db);
    let err = accounts
        .create_account(form("nlp", "ann@example.com", "short"))
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("password"));
    assert_eq!(err.status(), 400);
    // The name is still free.
    accounts
        .create_account(form("nlp", "ann@example.com", "long enough now"))
        .await
        .unwrap();
}
on_both_databases!(
    a_short_password_is_refused_and_nothing_is_stored,
    super::a_short_password_is_refused_and_nothing_is_stored
);

async fn wrong_password_unknown_email_and_unknown_account_fail_alike(db: TestDb) {
    let accounts = accounts(&db);
    accounts
        .create_account(form("speech", "ann@example.com", "a long password"))
        .await
        .unwrap();
    for attempt in [
        login("speech", "ann@example.com", "wrong password"),
        login("speech", "eve@example.com", "a long password"),
        login("nobody", "ann@example.com", "a long password"),
    ] {
        let err = accounts.authenticate(attempt).await.unwrap_err();
        assert_eq!(err, AppError::BadCredentials);
        assert_eq!(err.status(), 401);
    }
}
on_both_databases!(
    wrong_password_unknown_email_and_unknown_account_fail_alike,
    super::wrong_password_unknown_email_and_unknown_account_fail_alike
);

async fn secrets_are_stored_only_as_hashes(db: TestDb) {
    let accounts = accounts(&db);
    let me = accounts
        .create_account(form("ocr", "ann@example.com", "a long password"))
        .await
        .unwrap();
    let session = accounts.create_session(&me, "test").await.unwrap();
    let hash: String = sqlx::query_scalar("SELECT password_hash FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains("a long password"));
    let stored: String = sqlx::query_scalar("SELECT token_hash FROM sessions")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_ne!(stored, session.token);
    assert_eq!(stored.len(), 64);
}
on_both_databases!(
    secrets_are_stored_only_as_hashes,
    super::secrets_are_stored_only_as_hashes
);

async fn a_session_signs_in_until_it_is_ended(db: TestDb) {
    let accounts = accounts(&db);
    let me = accounts
        .create_account(form("rec", "ann@example.com", "a long password"))
        .await
        .unwrap();
    let session = accounts.create_session(&me, "Firefox").await.unwrap();
    assert_eq!(session.max_age_secs, 30 * 24 * 3600);
    let who = accounts
        .resolve_session(&session.token)
        .await
        .unwrap()
        .expect("session resolves");
    assert_eq!(who.me, me);
    assert!(accounts
        .resolve_session("not-a-token")
        .await
        .unwrap()
        .is_none());
    assert!(accounts
        .resolve_session(&"0".repeat(64))
        .await
        .unwrap()
        .is_none());

    accounts.end_session(&session.token).await.unwrap();
    assert!(accounts
        .resolve_session(&session.token)
        .await
        .unwrap()
        .is_none());
}
on_both_databases!(
    a_session_signs_in_until_it_is_ended,
    super::a_session_signs_in_until_it_is_ended
);

async fn an_expired_session_no_longer_signs_in(db: TestDb) {
    let accounts = accounts(&db);
    let me = accounts
        .create_account(form("old", "ann@example.com", "a long password"))
        .await
        .unwrap();
    let session = accounts.create_session(&me, "Firefox").await.unwrap();
    sqlx::query("UPDATE sessions SET expires_at = $1")
        .bind(server::time::now_ms() - 1)
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(accounts
        .resolve_session(&session.token)
        .await
        .unwrap()
        .is_none());
}
on_both_databases!(
    an_expired_session_no_longer_signs_in,
    super::an_expired_session_no_longer_signs_in
);

async fn a_user_revokes_their_other_sessions_but_never_someone_elses(db: TestDb) {
    let accounts = accounts(&db);
    let ann = accounts
        .create_account(form("team-a", "ann@example.com", "a long password"))
        .await
        .unwrap();
    let eve = accounts
        .create_account(form("team-b", "eve@example.com", "a long password"))
        .await
        .unwrap();
    let desk = accounts.create_session(&ann, "Desk").await.unwrap();
    let laptop = accounts.create_session(&ann, "Laptop").await.unwrap();
    let eves = accounts.create_session(&eve, "Eve").await.unwrap();

    let ann_desk = accounts
        .resolve_session(&desk.token)
        .await
        .unwrap()
        .unwrap();
    let listed = accounts.sessions(&ann_desk).await.unwrap();
    assert_eq!(listed.len(), 2, "Eve's session is not Ann's business");
    assert_eq!(
        listed
            .iter()
            .filter(|s| s.current)
            .map(|s| s.user_agent.as_str())
            .collect::<Vec<_>>(),
        ["Desk"]
    );

    let Credential::Session(eve_id) = accounts
        .resolve_session(&eves.token)
        .await
        .unwrap()
        .unwrap()
        .credential
    else {
        panic!("a cookie resolves to a session")
    };
    assert_eq!(
        accounts
            .revoke_session(&ann_desk, eve_id)
            .await
            .unwrap_err()
            .status(),
        404
    );
    assert!(accounts
        .resolve_session(&eves.token)
        .await
        .unwrap()
        .is_some());

    let laptop_id = listed.iter().find(|s| s.user_agent == "Laptop").unwrap().id;
    accounts.revoke_session(&ann_desk, laptop_id).await.unwrap();
    assert!(accounts
        .resolve_session(&laptop.token)
        .await
        .unwrap()
        .is_none());
    assert!(accounts
        .resolve_session(&desk.token)
        .await
        .unwrap()
        .is_some());
}
on_both_databases!(
    a_user_revokes_their_other_sessions_but_never_someone_elses,
    super::a_user_revokes_their_other_sessions_but_never_someone_elses
);

async fn members_are_listed_only_for_the_callers_account(db: TestDb) {
    let accounts = accounts(&db);
    let ann = accounts
        .create_account(form("alpha", "ann@example.com", "a long password"))
        .await
        .unwrap();
    accounts
        .create_account(form("beta", "bob@example.com", "a long password"))
        .await
        .unwrap();
    let s = accounts.create_session(&ann, "x").await.unwrap();
    let who = accounts.resolve_session(&s.token).await.unwrap().unwrap();
    let members = app::ports::Members::members(accounts.as_ref(), &who)
        .await
        .unwrap()
        .members;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].email, "ann@example.com");
    assert_eq!(members[0].role, Role::Owner);
}
on_both_databases!(
    members_are_listed_only_for_the_callers_account,
    super::members_are_listed_only_for_the_callers_account
);
