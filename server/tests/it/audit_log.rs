//! The audit log after a busy day: hundreds of events, read a page at a
//! time through `/api/v1/audit` and on its own page (`/account/audit`),
//! filtered by actor, action or kind, and day; the Account page shows the
//! latest ten with a link to the rest. On SQLite and PostgreSQL.

use std::collections::HashSet;

use http::{Method, StatusCode};
use serde_json::Value;

use crate::common::rest::{call, key_and_cookie};
use crate::common::site::{config, site_from, text, Site};
use crate::common::TestDb;

/// 2026-11-28 00:00 UTC, Unix milliseconds.
const DAY: i64 = 1_795_824_000_000;

/// 300 events over two days (the 27th and the 28th), two actors, four
/// actions; 150 on each day. Some share a millisecond, as a burst does.
async fn busy_day(site: &Site, account_id: i64) {
    let actions = [
        "key.created",
        "key.revoked",
        "member.joined",
        "password.changed",
    ];
    for i in 0..300_i64 {
        let day = if i < 150 { DAY - 86_400_000 } else { DAY };
        let at = day + (i % 150 / 2) * 60_000;
        let actor = if i % 3 == 0 {
            "bob@example.com"
        } else {
            "ann@example.com"
        };
        sqlx::query(
            "INSERT INTO audit_log (account_id, at, actor, action, detail) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(account_id)
        .bind(at)
        .bind(actor)
        .bind(actions[(i % 4) as usize])
        .bind(format!("event {i}"))
        .execute(&site.db.pool)
        .await
        .unwrap();
    }
}

async fn audit(site: &Site, key: &str, query: &str) -> Value {
    let got = call(
        site,
        Method::GET,
        &format!("/api/v1/audit{query}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{query}: {}", got.body);
    got.json()
}

fn keys(events: &Value) -> Vec<(i64, i64)> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["at"].as_i64().unwrap(), e["id"].as_i64().unwrap()))
        .collect()
}

async fn owner_pages_and_filters_hundreds_of_events(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "busy").await;
    let account_id = site.owner("busy").await.account.id;
    busy_day(&site, account_id).await;
    let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM audit_log WHERE account_id = $1")
        .bind(account_id)
        .fetch_one(&site.db.pool)
        .await
        .unwrap();
    assert!(total >= 300, "{total}");

    // Older and older, 50 a page, until there is no older page: every event
    // once, newest first.
    let mut seen: Vec<(i64, i64)> = Vec::new();
    let mut pages = Vec::new();
    let mut query = String::new();
    loop {
        let page = audit(&site, &key, &query).await;
        let got = keys(&page["events"]);
        assert!(got.len() <= 50, "{}", got.len());
        pages.push((query.clone(), page.clone()));
        seen.extend(got);
        match page["older"].as_str() {
            Some(cursor) => query = format!("?before={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen.len() as i64, total, "every event, each once");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), seen.len());
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first across pages");
    assert_eq!(
        pages[0].1["newer"],
        Value::Null,
        "the first page is the newest"
    );

    // From the third page, "newer" is the second page again.
    let third = &pages[2].1;
    let back = audit(
        &site,
        &key,
        &format!("?after={}", third["newer"].as_str().unwrap()),
    )
    .await;
    assert_eq!(keys(&back["events"]), keys(&pages[1].1["events"]));

    // Filters: an actor (any case, part of the address), an action, a kind,
    // a day; and together.
    let bob = audit(&site, &key, "?actor=BOB%40&limit=1000").await;
    let bobs = bob["events"].as_array().unwrap();
    assert_eq!(bobs.len(), 100);
    assert!(bobs.iter().all(|e| e["actor"] == "bob@example.com"));
    let revoked = audit(&site, &key, "?action=key.revoked&limit=1000").await;
    assert_eq!(revoked["events"].as_array().unwrap().len(), 75);
    // (The key the test made is a `key.created` of today's.)
    let keys_kind = audit(
        &site,
        &key,
        "?action=key&from=2026-11-27&to=2026-11-28&limit=1000",
    )
    .await;
    let kinds = keys_kind["events"].as_array().unwrap();
    assert_eq!(kinds.len(), 150);
    assert!(kinds
        .iter()
        .all(|e| e["action"].as_str().unwrap().starts_with("key.")));
    let day = audit(&site, &key, "?from=2026-11-27&to=2026-11-27&limit=1000").await;
    let on_27th = day["events"].as_array().unwrap();
    assert_eq!(on_27th.len(), 150);
    assert!(on_27th
        .iter()
        .all(|e| (DAY - 86_400_000..DAY).contains(&e["at"].as_i64().unwrap())));
    let both = audit(
        &site,
        &key,
        "?actor=bob&action=key&from=2026-11-28&to=2026-11-28&limit=1000",
    )
    .await;
    assert_eq!(both["events"].as_array().unwrap().len(), 25);
    let actions = both["actions"].as_array().unwrap();
    for action in [
        "key.created",
        "key.revoked",
        "member.joined",
        "password.changed",
    ] {
        assert!(actions.contains(&Value::from(action)), "{actions:?}");
    }
    // The CSV takes the same filters.
    let csv = call(
        &site,
        Method::GET,
        "/api/v1/audit.csv?actor=bob&action=key.revoked",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(csv.body.lines().count(), 1 + 25, "{}", csv.body);

    // Bad filters and pages are 400s naming the parameter.
    for (query, field) in [
        ("?from=yesterday", "from"),
        ("?to=2026-02-30", "to"),
        ("?before=12", "before"),
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?actor=a%01b", "actor"),
    ] {
        let got = call(
            &site,
            Method::GET,
            &format!("/api/v1/audit{query}"),
            Some(&key),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{query}: {}", got.body);
        assert_eq!(got.json()["error"]["field"], field, "{query}");
    }

    // The Account page: the latest ten, and a link to the whole log.
    let account = text(site.get("/account", Some(&cookie)).await).await;
    let table = account.split("data-testid=\"audit\"").nth(1).unwrap();
    assert_eq!(
        table
            .split("</table>")
            .next()
            .unwrap()
            .matches("<tr data-event")
            .count(),
        10
    );
    assert!(account.contains("href=\"/account/audit\""), "{account}");
    assert!(
        account.contains("data-testid=\"audit-more\""),
        "older events are a link away"
    );

    // The log's own page, as a browser without JavaScript gets it: the
    // filters in the form as the URL has them, the rows, the pages.
    let page = text(
        site.get(
            "/account/audit?actor=bob&action=key&from=2026-11-28&to=2026-11-28",
            Some(&cookie),
        )
        .await,
    )
    .await;
    assert_eq!(page.matches("<tr data-event").count(), 25, "{page}");
    assert!(page.contains("value=\"bob\""), "{page}");
    assert!(page.contains("value=\"2026-11-28\""), "{page}");
    assert!(page.contains("<option value=\"key\" selected"), "{page}");
    assert!(
        !page.contains("data-testid=\"audit-older\""),
        "one page holds them all"
    );
    let first = text(site.get("/account/audit", Some(&cookie)).await).await;
    assert_eq!(first.matches("<tr data-event").count(), 50);
    let older = first
        .split("data-testid=\"audit-older\"")
        .next()
        .and_then(|before| before.rsplit("href=\"").next())
        .and_then(|href| href.split('"').next())
        .unwrap()
        .replace("&amp;", "&");
    assert!(older.starts_with("/account/audit?before="), "{older}");
    let second = text(site.get(&older, Some(&cookie)).await).await;
    assert_eq!(second.matches("<tr data-event").count(), 50);
    let second_ids: Vec<String> = second
        .split("<tr data-event=\"")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().to_owned())
        .collect();
    let want: Vec<String> = keys(&pages[1].1["events"])
        .iter()
        .map(|(_, id)| id.to_string())
        .collect();
    assert_eq!(second_ids, want, "the page's second page is the API's");
    assert!(second.contains("data-testid=\"audit-newer\""), "{second}");
    assert!(second.contains("data-testid=\"audit-newest\""), "{second}");
}

on_both_databases!(
    an_owner_pages_through_hundreds_of_audit_events_and_filters_them_by_actor_action_and_day,
    super::owner_pages_and_filters_hundreds_of_events
);

#[tokio::test(flavor = "multi_thread")]
async fn a_member_neither_reads_the_audit_log_nor_sees_it_on_the_account_page() {
    let smtp = crate::common::smtp::SmtpServer::start().await;
    let site = crate::members::site_mailing(crate::common::sqlite().await, &smtp).await;
    let (owner, _) = key_and_cookie(&site, "team").await;
    let member = crate::members::join(&site, &smtp, &owner, "bob@example.com", "member").await;
    let account = text(site.get("/account", Some(&member)).await).await;
    assert!(!account.contains("data-testid=\"audit\""), "{account}");
    let page = text(site.get("/account/audit", Some(&member)).await).await;
    assert!(
        page.contains("Only the account's owners and site admins read its audit log."),
        "{page}"
    );
    assert!(!page.contains("<tr data-event"), "{page}");
}
