//! The whole app in-process, as a browser or a script reaches it over HTTP.

use app::ports::Services;
use axum::body::Body;
use axum::Router;
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;
use server::access_keys::SqlAccessKeys;
use server::accounts::SqlAccounts;
use server::http::{router, AppState};
use server::jobs::JobStore;
use server::local::LocalCluster;
use server::paddleboard::SqlMetrics;
use tower::ServiceExt;

use super::TestDb;

pub struct Site {
    /// The whole app's router, driven without a socket.
    pub router: Router,
    /// The ports behind it, for tests that act as the server does.
    pub services: Services,
    /// The database (and data directory) behind it.
    pub db: TestDb,
    /// Serving, as the endpoint reaches it (to flush its traffic counts).
    pub serving: server::serving::ServingService,
}

pub async fn site_with(secure_cookies: bool) -> Site {
    site_on(secure_cookies, |_| None).await
}

/// The app with the cluster `cluster` makes from the test database, or the
/// local executor when it makes none.
pub async fn site_on(
    secure_cookies: bool,
    cluster: impl FnOnce(&TestDb) -> Option<std::sync::Arc<dyn app::ports::Cluster>>,
) -> Site {
    site_serving_on(secure_cookies, cluster, |_| None).await
}

/// The app with the cluster and the serving backend the closures make from
/// the test database (the local executor and local serving where they make
/// none).
pub async fn site_serving_on(
    secure_cookies: bool,
    cluster: impl FnOnce(&TestDb) -> Option<std::sync::Arc<dyn app::ports::Cluster>>,
    serving: impl FnOnce(&TestDb) -> Option<std::sync::Arc<dyn server::serving::Backend>>,
) -> Site {
    let db = super::sqlite().await;
    let other = cluster(&db);
    let serving_backend = serving(&db);
    let conf = leptos_config::get_configuration(Some(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../Leptos.toml"
    )))
    .unwrap();
    let cluster = LocalCluster::start(
        JobStore::new(db.pool.clone()),
        db.dir(),
        std::time::Duration::from_secs(1),
    )
    .await
    .unwrap();
    let metrics = std::sync::Arc::new(SqlMetrics::new(db.pool.clone(), 1_000_000));
    cluster.set_metrics(metrics.clone());
    let objects =
        server::assets::objects::Objects::local(db.dir().join("objects"), 1 << 30).unwrap();
    let assets = std::sync::Arc::new(server::assets::SqlAssets::new(
        db.pool.clone(),
        objects,
        db.dir().join("dataset-cache"),
    ));
    cluster.set_assets(assets.clone());
    let samples = std::sync::Arc::new(server::resources::ResourceStore::new(db.pool.clone()));
    cluster.set_sampler(samples.clone(), std::time::Duration::from_secs(1));
    let (resources, quotas) = server::resources::SqlResources::embedded(&db.pool, samples, 1);
    let serving = match serving_backend {
        Some(backend) => server::serving::ServingService::new(
            db.pool.clone(),
            backend,
            assets.clone(),
            std::time::Duration::from_secs(86_400),
        ),
        None => server::serving::ServingService::embedded(&db.pool, db.dir(), assets.clone()),
    };
    let services = Services {
        accounts: SqlAccounts::new(db.pool.clone()),
        access_keys: SqlAccessKeys::new(db.pool.clone()),
        cluster: other.unwrap_or_else(|| std::sync::Arc::new(cluster)),
        metrics,
        assets,
        resources,
        quotas,
        serving: std::sync::Arc::new(serving.clone()),
        secure_cookies,
    };
    Site {
        router: router(AppState {
            leptos: conf.leptos_options,
            services: services.clone(),
            mlflow: server::mlflow::store::MlflowStore::new(db.pool.clone()),
            serving: serving.clone(),
        }),
        services,
        db,
        serving,
    }
}

pub async fn site() -> Site {
    site_with(false).await
}

impl Site {
    /// The owner of `account` (signed up with [`Site::sign_up`]).
    pub async fn owner(&self, account: &str) -> app::models::Me {
        let (user_id, email, account_id, created_at): (i64, String, i64, i64) = sqlx::query_as(
            "SELECT u.id, u.email, a.id, a.created_at FROM users u \
             JOIN accounts a ON a.id = u.account_id WHERE a.name = $1 AND u.role = 'owner'",
        )
        .bind(account)
        .fetch_one(&self.db.pool)
        .await
        .unwrap();
        app::models::Me {
            user_id,
            email,
            role: app::models::Role::Owner,
            account: app::models::Account {
                id: account_id,
                name: account.to_owned(),
                namespace: format!("pc-{account}"),
                created_at,
            },
        }
    }

    pub async fn send(&self, req: Request<Body>) -> Response<Body> {
        self.router.clone().oneshot(req).await.unwrap()
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Response<Body> {
        let mut req = Request::get(path).header(header::ACCEPT, "text/html");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        self.send(req.body(Body::empty()).unwrap()).await
    }

    /// A plain HTML form post, as a browser without JavaScript sends it.
    pub async fn form_post(&self, path: &str, body: &str, referer: &str) -> Response<Body> {
        self.send(
            Request::post(path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html,application/xhtml+xml")
                .header(header::REFERER, format!("http://localhost{referer}"))
                .header(header::USER_AGENT, "TestBrowser/1.0")
                .body(Body::from(body.to_owned()))
                .unwrap(),
        )
        .await
    }

    /// A server-function call as the hydrated app makes it.
    pub async fn fetch_post(&self, path: &str, body: &str, cookie: Option<&str>) -> Response<Body> {
        let mut req = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        self.send(req.body(Body::from(body.to_owned())).unwrap())
            .await
    }

    /// Signs up a new account and returns the `name=value` session cookie.
    pub async fn sign_up(&self, account: &str) -> String {
        let res = self
            .form_post(
                "/api/sign_up",
                &format!("account={account}&email=ann%40example.com&password=a+long+password"),
                "/signup",
            )
            .await;
        assert_eq!(res.status(), StatusCode::FOUND);
        cookie_pair(&res)
    }
}

pub fn set_cookie(res: &Response<Body>) -> String {
    res.headers()
        .get(header::SET_COOKIE)
        .expect("a Set-Cookie header")
        .to_str()
        .unwrap()
        .to_owned()
}

pub fn cookie_pair(res: &Response<Body>) -> String {
    set_cookie(res).split(';').next().unwrap().to_owned()
}

pub fn location(res: &Response<Body>) -> String {
    res.headers()
        .get(header::LOCATION)
        .expect("a Location header")
        .to_str()
        .unwrap()
        .to_owned()
}

pub async fn text(res: Response<Body>) -> String {
    String::from_utf8(res.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}
