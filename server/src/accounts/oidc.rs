//! OpenID Connect sign-in: the authorization code flow with PKCE (S256),
//! a `state` and a `nonce`, against any certified provider found by
//! discovery. What the browser carries between the redirect and the
//! callback (state, nonce, verifier, where to go next) is sealed into a
//! short-lived cookie with the console's key, so any replica can finish
//! a sign-in another began. The ID token's signature, issuer, audience,
//! expiry and nonce are checked by `jsonwebtoken` against the provider's
//! published keys; then its claims say who signed in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::error::AppError;
use app::models::sign_in::{ExternalIdentity, SignInMapping};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::secrets::seal::Sealer;
use crate::storage::tokens::random_token;
use crate::time::now_ms;

/// How long a sign-in may take between the redirect and the callback.
pub const LOGIN_SECONDS: i64 = 600;

/// How long the provider's discovery document and keys are kept.
const PROVIDER_TTL: Duration = Duration::from_secs(600);

/// The OpenID Connect settings (`--oidc-*`).
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// The issuer URL; `<issuer>/.well-known/openid-configuration` is read.
    pub issuer: String,
    /// The console's client id at the provider.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
    /// What the sign-in button says after "Sign in with".
    pub label: String,
    /// The claim that lists the person's groups (default `groups`).
    pub groups_claim: String,
    /// The claim that names their account, if one does.
    pub account_claim: Option<String>,
    /// The claim that names their role in it, if one does.
    pub role_claim: Option<String>,
    /// How groups and claims become memberships.
    pub mapping: SignInMapping,
}

/// The provider's endpoints, from its discovery document.
#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    userinfo_endpoint: Option<String>,
}

/// The provider as last read: its endpoints and signing keys.
struct Provider {
    discovery: Discovery,
    keys: jsonwebtoken::jwk::JwkSet,
    read_at: Instant,
}

/// What the sealed cookie holds between the redirect and the callback.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    next: String,
    expires_at: i64,
}

/// Sign-in with one OpenID Connect provider.
pub struct Oidc {
    settings: OidcSettings,
    http: reqwest::Client,
    sealer: Arc<Sealer>,
    provider: Mutex<Option<Arc<Provider>>>,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A refusal that names the provider's side of it.
fn provider_error(what: &str, detail: impl std::fmt::Display) -> AppError {
    tracing::warn!(%detail, "OpenID Connect: {what}");
    AppError::invalid(
        "oidc",
        format!("Signing in with the identity provider failed: {what}."),
    )
}

impl Oidc {
    /// With `settings`, sealing its cookie with `sealer`.
    pub fn new(settings: OidcSettings, sealer: Arc<Sealer>) -> anyhow::Result<Self> {
        // The TLS stack's one provider, for a provider reached over https.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // Redirects are not followed: a provider's answer is its own.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()?;
        Ok(Self {
            settings,
            http,
            sealer,
            provider: Mutex::new(None),
        })
    }

    /// What the sign-in button says after "Sign in with".
    pub fn label(&self) -> &str {
        &self.settings.label
    }

    /// The provider's endpoints and keys, read at most every ten minutes
    /// (or at once when `fresh`, for a key it did not have).
    async fn provider(&self, fresh: bool) -> Result<Arc<Provider>, AppError> {
        let mut held = self.provider.lock().await;
        if let Some(p) = held.as_ref() {
            if !fresh && p.read_at.elapsed() < PROVIDER_TTL {
                return Ok(p.clone());
            }
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer.trim_end_matches('/')
        );
        let discovery: Discovery = self.get_json(&url).await?;
        if discovery.issuer.trim_end_matches('/') != self.settings.issuer.trim_end_matches('/') {
            return Err(provider_error(
                "its discovery document names another issuer",
                &discovery.issuer,
            ));
        }
        let keys = self.get_json(&discovery.jwks_uri).await?;
        let provider = Arc::new(Provider {
            discovery,
            keys,
            read_at: Instant::now(),
        });
        *held = Some(provider.clone());
        Ok(provider)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, AppError> {
        let res = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| provider_error("it could not be reached", e))?;
        if !res.status().is_success() {
            return Err(provider_error(
                "it answered with an error",
                format!("{url}: {}", res.status()),
            ));
        }
        let bytes = res
            .bytes()
            .await
            .map_err(|e| provider_error("it could not be reached", e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| provider_error("its answer was not understood", e))
    }

    /// Where to send the browser to sign in (the provider's authorization
    /// URL), and the sealed cookie value to set meanwhile; back at
    /// `redirect_uri`, then on to `next`.
    pub async fn begin(
        &self,
        redirect_uri: &str,
        next: &str,
    ) -> Result<(String, String), AppError> {
        let provider = self.provider(false).await?;
        let pending = Pending {
            state: random_token(),
            nonce: random_token(),
            verifier: random_token(),
            next: next.to_owned(),
            expires_at: now_ms() + LOGIN_SECONDS * 1000,
        };
        let challenge = b64url(&Sha256::digest(pending.verifier.as_bytes()));
        let mut scopes = vec!["openid", "email", "profile"];
        if self.settings.groups_claim == "groups" {
            scopes.push("groups");
        }
        let scope = scopes.join(" ");
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", &scope)
            .append_pair("state", &pending.state)
            .append_pair("nonce", &pending.nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let endpoint = &provider.discovery.authorization_endpoint;
        let sep = if endpoint.contains('?') { '&' } else { '?' };
        let json = serde_json::to_vec(&pending).map_err(|_| AppError::Internal)?;
        let cookie = self.sealer.seal(0, "oidc-login", &json);
        Ok((format!("{endpoint}{sep}{query}"), cookie))
    }

    /// Finishes a sign-in at the callback: checks `state` against the
    /// sealed `cookie`, exchanges `code` (with the PKCE verifier) for the
    /// ID token, checks it, and says who signed in and where they go next.
    pub async fn finish(
        &self,
        redirect_uri: &str,
        cookie: Option<&str>,
        code: &str,
        state: &str,
    ) -> Result<(ExternalIdentity, String), AppError> {
        let expired = || {
            AppError::invalid(
                "oidc",
                "This sign-in expired or was begun in another browser: sign in again.",
            )
        };
        let pending: Pending = cookie
            .and_then(|c| self.sealer.open(0, "oidc-login", c))
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(expired)?;
        if pending.expires_at < now_ms() || pending.state != state {
            return Err(expired());
        }
        let provider = self.provider(false).await?;
        let secret = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_verifier", &pending.verifier)
            .finish();
        let res = self
            .http
            .post(&provider.discovery.token_endpoint)
            // RFC 6749 §2.3.1: the id and secret are form-encoded first.
            .basic_auth(
                secret(&self.settings.client_id),
                Some(secret(&self.settings.client_secret)),
            )
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .map_err(|e| provider_error("it could not be reached", e))?;
        let status = res.status();
        let body: serde_json::Value = res
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| provider_error("its answer was not understood", status))?;
        if !status.is_success() {
            return Err(provider_error("it refused the sign-in", &body));
        }
        let id_token = body["id_token"]
            .as_str()
            .ok_or_else(|| provider_error("it sent no ID token", &body))?;
        let mut claims = self.verify(id_token, &pending.nonce).await?;
        // Claims the ID token leaves out may be in the user info.
        let wanted = [Some(&self.settings.groups_claim), Some(&"email".to_owned())];
        if wanted
            .iter()
            .flatten()
            .any(|c| claims.get(c.as_str()).is_none())
        {
            if let (Some(url), Some(token)) = (
                &provider.discovery.userinfo_endpoint,
                body["access_token"].as_str(),
            ) {
                if let Ok(res) = self.http.get(url).bearer_auth(token).send().await {
                    let info = res
                        .bytes()
                        .await
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                    if let Some(serde_json::Value::Object(info)) = info {
                        if info.get("sub") == claims.get("sub") {
                            for (k, v) in info {
                                claims.entry(k).or_insert(v);
                            }
                        }
                    }
                }
            }
        }
        Ok((self.identity(&claims)?, pending.next))
    }

    /// The ID token's claims, once its signature (by one of the provider's
    /// keys, with an asymmetric algorithm), issuer, audience, times and
    /// nonce check out.
    async fn verify(
        &self,
        token: &str,
        nonce: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, AppError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| provider_error("its ID token is malformed", e))?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(provider_error(
                "its ID token is signed with an algorithm not accepted",
                format!("{:?}", header.alg),
            ));
        }
        let mut provider = self.provider(false).await?;
        let find = |p: &Provider| match &header.kid {
            Some(kid) => p.keys.find(kid).cloned(),
            None => p.keys.keys.first().cloned(),
        };
        let jwk = match find(&provider) {
            Some(k) => k,
            None => {
                // The provider may have rotated its keys since.
                provider = self.provider(true).await?;
                find(&provider).ok_or_else(|| {
                    provider_error("its ID token is signed by a key it does not publish", "")
                })?
            }
        };
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|e| provider_error("its signing key was not understood", e))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[provider.discovery.issuer.as_str()]);
        validation.set_audience(&[self.settings.client_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 60;
        let data = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            &key,
            &validation,
        )
        .map_err(|e| provider_error("its ID token did not check out", e))?;
        let claims = data.claims;
        if claims.get("nonce").and_then(|n| n.as_str()) != Some(nonce) {
            return Err(provider_error(
                "its ID token is for another sign-in",
                "nonce",
            ));
        }
        // With several audiences, the token must be meant for this client.
        if claims
            .get("aud")
            .is_some_and(|a| a.as_array().is_some_and(|a| a.len() > 1))
            && claims.get("azp").and_then(|a| a.as_str()) != Some(self.settings.client_id.as_str())
        {
            return Err(provider_error(
                "its ID token is meant for another client",
                "azp",
            ));
        }
        Ok(claims)
    }

    /// Who the claims say signed in.
    fn identity(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<ExternalIdentity, AppError> {
        let text = |name: &str| claims.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let subject =
            text("sub").ok_or_else(|| provider_error("its ID token names nobody", "sub"))?;
        let groups = match claims.get(&self.settings.groups_claim) {
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|g| g.as_str().map(str::to_owned))
                .collect(),
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        if claims.get("email_verified").and_then(|v| v.as_bool()) == Some(false) {
            return Err(AppError::forbidden(
                "The identity provider has not verified your email address: confirm it there first.",
            ));
        }
        Ok(ExternalIdentity {
            provider: self.settings.issuer.clone(),
            subject,
            email: text("email").unwrap_or_default().to_lowercase(),
            name: text("name"),
            groups,
            account: self.settings.account_claim.as_deref().and_then(text),
            role: self.settings.role_claim.as_deref().and_then(text),
        })
    }

    /// How its people become members.
    pub fn mapping(&self) -> &SignInMapping {
        &self.settings.mapping
    }
}
