//! The whole app in-process, as a browser or a script reaches it over HTTP.

use app::ports::Services;
use axum::body::Body;
use axum::Router;
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;
use server::console::{Config, Console};
use server::local::capacity::{CapacitySettings, GpuSetting};
use tower::ServiceExt;

use super::TestDb;

/// The site admin every test console starts with: account, email, password.
pub const ADMIN_ACCOUNT: &str = "site-admin";
pub const ADMIN_EMAIL: &str = "admin@example.com";
pub const ADMIN_PASSWORD: &str = "the site admin password";

pub struct Site {
    /// The whole app's router, driven without a socket.
    pub router: Router,
    /// The ports behind it, for tests that act as the server does.
    pub services: Services,
    /// The database (and data directory) behind it.
    pub db: TestDb,
    /// Serving, as the endpoint reaches it (to flush its traffic counts).
    pub serving: server::serving::ServingService,
    /// Notebooks, as the proxy reaches them (to run an idle check now).
    pub notebooks: server::notebooks::NotebookService,
}

/// The site settings of the repository's `Leptos.toml`.
pub fn site_options() -> leptos::prelude::LeptosOptions {
    leptos_config::get_configuration(Some(concat!(env!("CARGO_MANIFEST_DIR"), "/../Leptos.toml")))
        .unwrap()
        .leptos_options
}

/// What every test console starts from: the embedded defaults on `db` and
/// its data directory, replicas inheriting this process's `PATH` and the
/// rest, a stop grace and a sampling period of 1 s, 1M metric points cached,
/// and [`roomy`] room for the local executor.
pub fn config(db: &TestDb) -> Config {
    Config {
        stop_grace: std::time::Duration::from_secs(1),
        sample_secs: 1,
        metrics_cache_points: 1_000_000,
        inherited_env: server::cli::inherited_env(),
        local_capacity: roomy(),
        ..Config::embedded(site_options(), db.dir().to_owned(), db.url.clone())
    }
}

/// The room test consoles claim: their jobs ask for more than a 2-core CI
/// machine has (a dialog's default job alone asks for 5 CPUs), and tests of
/// anything but scheduling must not wait for it. 64 CPUs, 256 GiB and 8
/// simulated GPUs; the scheduling tests set a small machine instead.
pub fn roomy() -> CapacitySettings {
    CapacitySettings {
        cpu_millis: Some(64_000),
        memory_bytes: Some(256 << 30),
        gpus: GpuSetting::Count(8),
    }
}

/// The whole app on `db`, built from `config` as `paddlecloud serve` builds
/// it. What the server logs (errors, or `RUST_LOG`) shows in a failing
/// test's output.
pub async fn site_from(db: TestDb, config: Config) -> Site {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_test_writer()
        .try_init();
    let console = Console::build(config).await.unwrap();
    // Like a real deployment, the console has a site admin before anyone
    // signs up, so that the accounts tests make are ordinary ones (the first
    // sign-up on an empty database would be a site admin).
    let _ = super::accounts(&db)
        .create_confirmed(
            app::models::SignUpForm {
                account: ADMIN_ACCOUNT.to_owned(),
                email: ADMIN_EMAIL.to_owned(),
                password: ADMIN_PASSWORD.to_owned(),
            },
            true,
            false,
        )
        .await;
    Site {
        router: console.router(),
        services: console.services.clone(),
        serving: console.serving().clone(),
        notebooks: console.notebooks().clone(),
        db,
    }
}

/// The app on a fresh SQLite database, with [`config`] as `change` leaves it.
pub async fn site_configured(change: impl FnOnce(Config, &TestDb) -> Config) -> Site {
    let db = super::sqlite().await;
    let config = change(config(&db), &db);
    site_from(db, config).await
}

/// The app served on a loopback socket (for what calls the console back:
/// jobs, kernels, pods, browsers' WebSockets), with `change` given the
/// config and the console's URL (its `public_url` is that URL already);
/// the site and its URL.
pub async fn on_socket(change: impl FnOnce(Config, &TestDb, &str) -> Config) -> (Site, String) {
    on_socket_at("127.0.0.1", change).await
}

/// [`on_socket`] on `address` (a real node's, where its pods reach it).
pub async fn on_socket_at(
    address: &str,
    change: impl FnOnce(Config, &TestDb, &str) -> Config,
) -> (Site, String) {
    let listener = std::net::TcpListener::bind((address, 0)).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let site = site_configured(|config, db| {
        let config = Config {
            public_url: Some(url.clone()),
            ..config
        };
        change(config, db, &url)
    })
    .await;
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let router = site.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (site, url)
}

/// The app on the embedded defaults; cookies `Secure` if `secure_cookies`.
pub async fn site_with(secure_cookies: bool) -> Site {
    site_configured(|config, _| Config {
        secure_cookies,
        ..config
    })
    .await
}

pub async fn site() -> Site {
    site_with(false).await
}

impl Site {
    /// The owner of `account` (signed up with [`Site::sign_up`]).
    pub async fn owner(&self, account: &str) -> app::models::Me {
        let (user_id, email, account_id, created_at): (i64, String, i64, i64) = sqlx::query_as(
            "SELECT u.id, u.email, a.id, a.created_at FROM users u \
             JOIN memberships m ON m.user_id = u.id JOIN accounts a ON a.id = m.account_id \
             WHERE a.name = $1 AND m.role = 'owner' ORDER BY m.created_at LIMIT 1",
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
            email_confirmed: true,
            must_change_password: false,
            site_admin: false,
        }
    }

    /// A new access key of the site admin.
    /// The Kubernetes namespace the console gave account `account` (read
    /// back from its record, not assumed).
    pub async fn namespace_of(&self, account: &str) -> String {
        sqlx::query_scalar("SELECT namespace FROM accounts WHERE name = $1")
            .bind(account)
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    /// A signed-in session of the tests' site admin, as a cookie pair.
    pub async fn admin_cookie(&self) -> String {
        let res = self
            .fetch_post(
                "/api/sign_in",
                "account=site-admin&email=admin%40example.com&password=the+site+admin+password",
                None,
            )
            .await;
        cookie_pair(&res)
    }

    pub async fn admin_key(&self) -> String {
        server::access_keys::SqlAccessKeys::new(self.db.pool.clone())
            .create_for(ADMIN_ACCOUNT, ADMIN_EMAIL, "tests", Default::default())
            .await
            .unwrap()
            .key
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

    /// The page at `path` as the signed-in `cookie` sees it; it must be
    /// there (200).
    pub async fn page_ok(&self, cookie: &str, path: &str) -> String {
        let res = self.get(path, Some(cookie)).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        text(res).await
    }

    /// A plain HTML form post by a signed-in browser without JavaScript,
    /// from the page at `referer`.
    pub async fn form_post_as(
        &self,
        cookie: &str,
        path: &str,
        body: &str,
        referer: &str,
    ) -> Response<Body> {
        self.send(
            Request::post(path)
                .header(header::COOKIE, cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, format!("http://localhost{referer}"))
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

/// The body as text (bytes that are not UTF-8, as in a zip, replaced).
pub async fn text(res: Response<Body>) -> String {
    String::from_utf8_lossy(&res.into_body().collect().await.unwrap().to_bytes()).into_owned()
}
